//! Latches: one-shot completion signals a waiting thread can sleep on.
//!
//! A [`CoreLatch`] is a three-state word. Exactly one thread waits on a
//! latch; the waiter may announce that it is about to sleep, and the setter
//! then wakes it. Both sides use a read-modify-write on the same word, so a
//! wake-up cannot be lost: either the setter sees `SLEEPING` and unparks
//! the waiter, or the waiter's announcement fails because the latch is set.
//!
//! How the setter wakes the waiter depends on who waits, hence three
//! wrappers: [`WorkerLatch`] (the waiter is a worker of the pool whose
//! worker sets it: joins and scopes), [`ThreadLatch`] (any thread: work
//! injected from outside a pool or from another pool, `block_on`) and
//! [`WaiterLatch`] (one of the two, chosen for the calling thread: scopes
//! run in place, broadcasts).

use super::sync::{AtomicU8, Ordering, Thread, park};
#[cfg(not(bwos_loom))]
use super::{registry::Registry, worker::WorkerThread};

const UNSET: u8 = 0;
const SLEEPING: u8 = 1;
const SET: u8 = 2;

/// How often a thread outside the pools yields its core, looking at the
/// latch after each, before it parks (see [`CoreLatch::wait_blocking`]).
#[cfg(not(bwos_loom))]
const YIELDS_BEFORE_PARKING: u32 = 64;

/// The state word of a latch.
#[derive(Debug)]
pub(crate) struct CoreLatch {
    state: AtomicU8,
}

impl CoreLatch {
    pub(crate) fn new() -> Self {
        CoreLatch {
            state: AtomicU8::new(UNSET),
        }
    }

    /// Whether the latch is set. After `true`, everything the setter did
    /// before setting it is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release half of the setter's swap.
        self.state.load(Ordering::Acquire) == SET
    }

    /// Sets the latch; returns `true` if the waiter announced it sleeps and
    /// must be unparked. The latch may be freed by its waiter as soon as
    /// this returns: callers copy whatever they need to wake it first.
    #[inline]
    pub(crate) fn set(&self) -> bool {
        // AcqRel: Release publishes the setter's work (the job's result) to
        // the waiter's Acquire `probe`; Acquire orders the waiter's
        // announcement before the unpark that follows.
        self.state.swap(SET, Ordering::AcqRel) == SLEEPING
    }

    /// Announces that the waiter is about to park. `false` means the latch
    /// is already set and the waiter must not park.
    pub(crate) fn get_sleepy(&self) -> bool {
        // Relaxed on success: the announcement carries no data; the setter's
        // swap reads it as part of the single modification order. Acquire on
        // failure: the latch is set, the waiter goes on to use the result.
        self.state
            .compare_exchange(UNSET, SLEEPING, Ordering::Relaxed, Ordering::Acquire)
            .is_ok()
    }

    /// Withdraws an announcement after waking up for another reason (new
    /// work). A failure means the latch was set meanwhile, which is fine.
    pub(crate) fn wake_up(&self) {
        // Relaxed: as for `get_sleepy`; if the latch is set the next
        // `probe` acquires it.
        let _ = self
            .state
            .compare_exchange(SLEEPING, UNSET, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether the waiter's announcement still stands (not set, not
    /// withdrawn): parking again after a spurious wake-up is safe.
    pub(crate) fn is_sleeping(&self) -> bool {
        // Relaxed: only decides whether to park again; `probe` acquires.
        self.state.load(Ordering::Relaxed) == SLEEPING
    }

    /// Blocks the calling thread, which is not a pool worker, until the
    /// latch is set. The setter must unpark this thread when `set` returns
    /// `true` (a [`ThreadLatch`] created on this thread does).
    pub(crate) fn wait_blocking(&self) {
        // Yield before parking: a parked thread's wake-up cost 20-25 us on
        // the 2-core VM measured (the unpark, then the scheduler bringing
        // the thread back onto a core), more than a short parallel call
        // takes. A yielding waiter stays runnable and sees the latch at its
        // next turn. `pool.install` of a 14 us loop from the main thread
        // took 37-43 us parking at once, 17-22 us after 64 yields; a rayon
        // `par_iter_mut().for_each` over 100K items (1024 per piece) 29-35
        // us, then 15-20 us (stock rayon: 17-19 us). Where the pool's work
        // runs long, the waiter parks after these few yields (each returns
        // at once on an idle core, or lets a worker run). Not in loom
        // builds: the yields only delay the parking protocol below, which
        // the models check.
        #[cfg(not(bwos_loom))]
        for _ in 0..YIELDS_BEFORE_PARKING {
            if self.probe() {
                return;
            }
            std::thread::yield_now();
        }
        while !self.probe() {
            if self.get_sleepy() {
                // `park` may return spuriously or for a stale token; the
                // announcement stands until the setter replaces it.
                while self.is_sleeping() {
                    park();
                }
            }
        }
    }

    /// Waits until the latch is set, the one way every front end waits: a
    /// worker (of any pool) runs its pool's work meanwhile
    /// ([`WorkerThread::wait_until`]), any other thread blocks
    /// ([`wait_blocking`](Self::wait_blocking)). The setter must wake the
    /// calling thread as the latch it belongs to was made for it (a
    /// [`ThreadLatch`] or [`WaiterLatch`] created on this thread does).
    #[cfg(not(bwos_loom))]
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
    #[cfg(not(bwos_loom))]
    fn wait_off_the_pools(&self) {
        WorkerThread::with_own(|worker| match worker {
            Some(worker) => {
                super::context::enter(worker.registry(), || worker.wait_until(self));
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
#[cfg(not(bwos_loom))]
pub(crate) struct WorkerLatch {
    core: CoreLatch,
    owner: *const WorkerThread,
}

#[cfg(not(bwos_loom))]
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

/// Something a job sets when it completes.
pub(crate) trait Latch {
    /// Sets the latch and wakes its waiter.
    ///
    /// # Safety
    /// `this` points to a live latch; it may be freed as soon as its core
    /// is set, so the implementation must not touch it afterwards.
    unsafe fn set(this: *const Self);
}

#[cfg(not(bwos_loom))]
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
/// work, or runs `block_on`) keeps running its own pool's work meanwhile
/// and, when that runs out, sleeps where its pool's workers sleep: on its
/// park token, or in its pool's I/O driver, which a thread unpark does not
/// interrupt. Such a waiter is woken through its pool's registry, as its
/// pool's own producers would wake it.
pub(crate) struct ThreadLatch {
    core: CoreLatch,
    waiter: Waiter,
}

/// How to wake the thread waiting on a [`ThreadLatch`].
#[derive(Clone)]
enum Waiter {
    /// A thread outside every pool: it parks on its token.
    Thread(Thread),
    /// Worker `index` of a pool: it sleeps the way its pool's workers do.
    /// The `Arc` keeps the registry alive for the setter's wake-up, which
    /// may come after the waiter has returned.
    #[cfg(not(bwos_loom))]
    Worker(std::sync::Arc<Registry>, usize),
}

impl Waiter {
    fn wake(self) {
        match self {
            Waiter::Thread(thread) => thread.unpark(),
            #[cfg(not(bwos_loom))]
            Waiter::Worker(registry, index) => registry.unpark(index),
        }
    }
}

impl ThreadLatch {
    /// A latch the current thread will wait on. A worker hidden by an
    /// entered pool (`context.rs`) is woken as a worker too: it may wait
    /// as one, once the pool is left, and waking it through its registry
    /// also unparks its thread if it waits as a plain thread.
    pub(crate) fn for_current_thread() -> Self {
        #[cfg(not(bwos_loom))]
        let waiter = WorkerThread::with_own(|worker| match worker {
            Some(worker) => Waiter::Worker(worker.registry().clone(), worker.index()),
            None => Waiter::Thread(super::sync::current_thread()),
        });
        #[cfg(bwos_loom)]
        let waiter = Waiter::Thread(super::sync::current_thread());
        ThreadLatch {
            core: CoreLatch::new(),
            waiter,
        }
    }

    pub(crate) fn core(&self) -> &CoreLatch {
        &self.core
    }
}

impl Latch for ThreadLatch {
    unsafe fn set(this: *const Self) {
        // The waiter may free the latch once it is set: take what wakes it
        // first.
        // SAFETY: the caller guarantees `this` is live until the core is set.
        let waiter = unsafe { (*this).waiter.clone() };
        // SAFETY: as above; after this line `this` is not used.
        if unsafe { (*this).core.set() } {
            waiter.wake();
        }
    }
}

/// The latch of a waiter that may or may not be a worker of the pool whose
/// workers set it (scopes run in place, broadcasts): a [`WorkerLatch`] for
/// a worker of that pool, else a [`ThreadLatch`].
#[cfg(not(bwos_loom))]
pub(crate) enum WaiterLatch {
    Worker(WorkerLatch),
    Thread(ThreadLatch),
}

#[cfg(not(bwos_loom))]
impl WaiterLatch {
    /// A latch the calling thread will wait on, set by workers of
    /// `registry`.
    pub(crate) fn for_current_thread(registry: &Registry) -> Self {
        registry.with_current_worker(|worker| match worker {
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

#[cfg(not(bwos_loom))]
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
