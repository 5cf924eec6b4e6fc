//! Waiting on a latch: [`CoreLatch::wait`], the one way every front end
//! waits, and the latches that know how to wake their waiter.
//!
//! The latch word and its protocol are `latch.rs`'s. How the setter wakes
//! the waiter depends on who waits, hence three latches: [`WorkerLatch`]
//! (the waiter is a worker of the pool whose worker sets it: joins and
//! scopes), [`ThreadLatch`] (any thread: work injected from outside a pool
//! or from another pool, `block_on`) and [`WaiterLatch`] (one of the two,
//! chosen for the calling thread: scopes run in place, broadcasts).

use std::sync::Arc;

use super::context;
use super::latch::{CoreLatch, Latch, Waiter, WakingLatch};
use super::registry::Registry;
use super::sync::Thread;
use super::worker::WorkerThread;

impl CoreLatch {
    /// Waits until the latch is set, the one way every front end waits: a
    /// worker (of any pool) runs its pool's work meanwhile
    /// ([`WorkerThread::wait_until`]), any other thread blocks
    /// ([`wait_blocking`](Self::wait_blocking)). The setter must wake the
    /// calling thread as the latch it belongs to was made for it (a
    /// [`ThreadLatch`] or [`WaiterLatch`] created on this thread does).
    pub(crate) fn wait(&self) {
        WorkerThread::with_current(|worker| match worker {
            Some(worker) => worker.wait_until(self),
            None => self.wait_off_the_pools(),
        });
    }

    /// [`wait`](Self::wait) on a thread that no pool sees as a worker: it
    /// blocks, unless it is a worker hidden by another pool it entered
    /// (`context.rs`). Such a worker waits as workers do, running its own
    /// pool's work (its queues hold work only it may run: its private jobs,
    /// the tasks it queued while it polled for its own pool), shown for
    /// that while: its own pool is entered on top of the others until the
    /// latch is set, so the work it runs finds its worker.
    #[cold]
    fn wait_off_the_pools(&self) {
        WorkerThread::with_own(|worker| match worker {
            Some(worker) => {
                context::enter(worker.registry(), || worker.wait_until(self));
            }
            None => self.wait_blocking(),
        });
    }
}

/// A latch whose waiter is a worker of a pool and whose setter is a worker
/// of the same pool (it ran a job the waiter pushed).
///
/// Creating one costs two plain stores: the join fast path builds one for
/// every call and never touches it unless the job was stolen.
pub(crate) struct WorkerLatch {
    core: CoreLatch,
    owner: *const WorkerThread,
}

impl WorkerLatch {
    pub(crate) fn new(owner: &WorkerThread) -> Self {
        WorkerLatch {
            core: CoreLatch::new(),
            owner,
        }
    }

    pub(crate) fn core(&self) -> &CoreLatch {
        &self.core
    }
}

impl Latch for WorkerLatch {
    unsafe fn set(this: *const Self) {
        // The waiter, and so its worker, is alive until the core is set:
        // find out how to wake it first.
        // SAFETY: the caller guarantees `this` is live until the core is
        // set; the owner worker lives as long as its thread runs pool work,
        // which includes waiting for this latch.
        let (registry, index) = unsafe {
            let owner = &*(*this).owner;
            (owner.registry_ptr(), owner.index())
        };
        // SAFETY: as above; after this line `this` is not used.
        if unsafe { (*this).core.set() } {
            // SAFETY: the setter is a worker of the same registry and holds
            // an `Arc` of it for its lifetime, so the registry outlives this
            // call even if the waiter is gone.
            unsafe { (*registry).unpark(index) };
        }
    }
}

/// A latch whose waiter is any thread: it keeps what it takes to wake the
/// waiter.
///
/// A waiter that is a worker of some pool (it waits for another pool's
/// work, or in a `block_on` while another pool's `EnterGuard` hides it)
/// keeps running its own pool's work meanwhile
/// and, when that runs out, sleeps where its pool's workers sleep: on its
/// park token, or in its pool's I/O driver, which a thread unpark does not
/// interrupt. Such a waiter is woken through its pool's registry, as its
/// pool's own producers would wake it.
pub(crate) type ThreadLatch = WakingLatch<ThreadWaiter>;

/// How to wake the thread waiting on a [`ThreadLatch`].
#[derive(Clone)]
pub(crate) enum ThreadWaiter {
    /// A thread outside every pool: it parks on its token.
    Thread(Thread),
    /// Worker `index` of a pool: it sleeps the way its pool's workers do.
    /// The `Arc` keeps the registry alive for the setter's wake-up, which
    /// may come after the waiter has returned.
    Worker(Arc<Registry>, usize),
}

impl Waiter for ThreadWaiter {
    fn wake(self) {
        match self {
            ThreadWaiter::Thread(thread) => thread.wake(),
            ThreadWaiter::Worker(registry, index) => registry.unpark(index),
        }
    }
}

impl ThreadLatch {
    /// A latch the current thread will wait on. A worker hidden by an
    /// entered pool (`context.rs`) is woken as a worker too: it may wait
    /// as one, once the pool is left, and waking it through its registry
    /// also unparks its thread if it waits as a plain thread.
    pub(crate) fn for_current_thread() -> Self {
        WakingLatch::new(WorkerThread::with_own(|worker| match worker {
            Some(worker) => ThreadWaiter::Worker(worker.registry().clone(), worker.index()),
            None => ThreadWaiter::Thread(super::sync::current_thread()),
        }))
    }
}

/// The latch of a waiter that may or may not be a worker of the pool whose
/// workers set it (scopes run in place, broadcasts): a [`WorkerLatch`] for
/// a worker of that pool, else a [`ThreadLatch`].
pub(crate) enum WaiterLatch {
    Worker(WorkerLatch),
    Thread(ThreadLatch),
}

impl WaiterLatch {
    /// A latch the calling thread will wait on, set by workers of
    /// `registry`.
    pub(crate) fn for_current_thread(registry: &Registry) -> Self {
        WorkerThread::with_current_in(registry, |worker| match worker {
            Some(worker) => WaiterLatch::Worker(WorkerLatch::new(worker)),
            None => WaiterLatch::Thread(ThreadLatch::for_current_thread()),
        })
    }

    pub(crate) fn core(&self) -> &CoreLatch {
        match self {
            WaiterLatch::Worker(latch) => latch.core(),
            WaiterLatch::Thread(latch) => latch.core(),
        }
    }

    /// Waits until the latch is set, on the thread that created it (see
    /// [`CoreLatch::wait`]).
    pub(crate) fn wait(&self) {
        self.core().wait();
    }
}

impl Latch for WaiterLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: forwarded from the caller: `this` is live until the core
        // is set, and each arm touches nothing after setting it.
        unsafe {
            match &*this {
                WaiterLatch::Worker(latch) => Latch::set(latch),
                WaiterLatch::Thread(latch) => Latch::set(latch),
            }
        }
    }
}
