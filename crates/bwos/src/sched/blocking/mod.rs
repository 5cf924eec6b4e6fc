//! The blocking pool: the threads that run `task::spawn_blocking`'s
//! closures, apart from the workers.
//!
//! A closure that blocks (a file read, a DNS lookup, a lock held for long)
//! would stall a worker and every task queued behind it; here it blocks a
//! thread of its own. The pool starts threads on demand, up to
//! `max_blocking_threads` (beyond that, closures queue until a thread is
//! free), and a thread that has been idle for `blocking_keep_alive` exits.
//! Blocking threads never run pool work: they take entries only from this
//! pool's queue.
//!
//! The entries are task-cell entries (`Notified`): a blocking closure is a
//! task whose future runs the closure in its one poll, so its
//! `JoinHandle`, its `JoinError` on a panic and its abort before it starts
//! are the task cell's.
//!
//! Where a closure goes and how threads wait and exit: `queue.rs`.
//!
//! # Shutdown
//! When the pool's last worker stops, [`BlockingPool::shut_down`] cancels
//! the entries that have not started (their handles report cancellation)
//! and tells idle threads to exit; closures already running finish on
//! their threads, which then exit. Dropping a pool does not wait for them
//! (a closure may never return); `ThreadPool::shutdown_timeout` waits for
//! them up to its timeout (`BlockingQueue::wait_for_threads`).

pub(crate) mod queue;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use super::context;
use super::registry::Registry;
use super::task::raw::Notified;
pub(crate) use queue::BlockingGauges;
use queue::{BlockingQueue, Pushed, Waiter};

thread_local! {
    /// On a blocking thread: its pool's queue and its identity there,
    /// through which the closure's task announces that the thread comes
    /// back ([`closure_returned`]).
    static THIS_THREAD: RefCell<Option<(Arc<Shared>, Rc<Waiter>)>> = const { RefCell::new(None) };
}

/// The closure of a blocking task returned on this blocking thread, and
/// its output is about to be published: the thread counts as coming back
/// for the next entry (`BlockingQueue::returning`), so entries that the
/// output's waiter pushes at once wait for it rather than start threads.
/// Does nothing on any other thread (blocking tasks run only on their own
/// pool's blocking threads).
pub(crate) fn closure_returned() {
    THIS_THREAD.with(|this| {
        if let Some((shared, waiter)) = &*this.borrow() {
            shared.queue.returning(waiter);
        }
    });
}

/// The default of `ThreadPoolBuilder::max_blocking_threads` (tokio's).
pub(crate) const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// The default of `ThreadPoolBuilder::blocking_keep_alive` (tokio's).
pub(crate) const DEFAULT_BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A pool's blocking threads and their queue.
pub(crate) struct BlockingPool {
    shared: Arc<Shared>,
}

struct Shared {
    queue: BlockingQueue<Notified>,
    keep_alive: Duration,
    /// The pool the threads belong to: what `Registry::with_current` means
    /// while they run a closure. Set once the registry exists; weak,
    /// because the registry owns this pool.
    registry: OnceLock<Weak<Registry>>,
    /// Numbers the threads' names.
    next_thread: std::sync::atomic::AtomicUsize,
}

impl BlockingPool {
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> Self {
        BlockingPool {
            shared: Arc::new(Shared {
                queue: BlockingQueue::new(max_threads),
                keep_alive,
                registry: OnceLock::new(),
                next_thread: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Tells the pool which registry owns it (once, after the registry is
    /// built).
    pub(crate) fn set_registry(&self, registry: Weak<Registry>) {
        let _ = self.shared.registry.set(registry);
    }

    /// Queues `task` for a blocking thread: an idle one, a new one if
    /// fewer than the maximum run, else the next one to finish. After
    /// shutdown, or if no thread runs and the OS refuses to start one, the
    /// task is cancelled (its handle reports it), never lost.
    pub(crate) fn push(&self, task: Notified) {
        self.shared.entry_queued();
        match self.shared.queue.push(task) {
            Pushed::Queued => {}
            Pushed::Refused(task) => self.shared.cancel(task),
            Pushed::StartThread => {
                // Relaxed: only numbers the names.
                let number = self
                    .shared
                    .next_thread
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let shared = Arc::clone(&self.shared);
                let started = std::thread::Builder::new()
                    .name(format!("bwos-blocking-{number}"))
                    .spawn(move || shared.run());
                if started.is_err() {
                    // Nobody will take them if no thread is left: cancel
                    // rather than lose them.
                    let orphans = self.shared.queue.start_failed();
                    orphans
                        .into_iter()
                        .for_each(|task| self.shared.cancel(task));
                }
            }
        }
    }

    /// Cancels the entries not started yet and lets the threads exit once
    /// they are done (see "Shutdown").
    pub(crate) fn shut_down(&self) {
        let orphans = self.shared.queue.shut_down();
        orphans
            .into_iter()
            .for_each(|task| self.shared.cancel(task));
    }

    /// The threads' and queue's gauges now, for `PoolStats`.
    pub(crate) fn gauges(&self) -> BlockingGauges {
        self.shared.queue.gauges()
    }

    /// Blocking threads alive now.
    #[cfg(test)]
    pub(crate) fn threads(&self) -> usize {
        self.shared.queue.threads()
    }

    /// After [`shut_down`](Self::shut_down): waits until every blocking
    /// thread has finished its closure and left, but the calling thread if
    /// it is one of them, or until `deadline` (`None`: no deadline).
    /// Whether they left.
    pub(crate) fn wait_for_threads(&self, deadline: Option<std::time::Instant>) -> bool {
        let own = THIS_THREAD
            .try_with(|this| {
                this.borrow()
                    .as_ref()
                    .is_some_and(|(shared, _)| Arc::ptr_eq(shared, &self.shared))
            })
            .unwrap_or(false);
        self.shared
            .queue
            .wait_for_threads(usize::from(own), deadline)
    }
}

impl Shared {
    /// A blocking thread's body: run entries until idle for `keep_alive`
    /// or shut down.
    fn run(self: Arc<Self>) {
        #[cfg(feature = "tokio-compat")]
        let _tokio = super::tokio_compat::enter();
        let waiter = Rc::new(self.queue.waiter());
        THIS_THREAD.with(|this| *this.borrow_mut() = Some((Arc::clone(&self), Rc::clone(&waiter))));
        while let Some(task) = self.queue.next(&waiter, self.keep_alive) {
            // Panics are caught by the task cell (the handle gets a
            // `JoinError`), so the thread survives its closures. The
            // closure's tasks, timers and joins go to this pool.
            match self.registry.get().and_then(Weak::upgrade) {
                Some(registry) => {
                    context::enter(&registry, || task.run());
                    // After the run: its handle's waiter has been woken.
                    #[cfg(feature = "test-util")]
                    registry.outside_work_finished();
                }
                None => task.run(),
            }
        }
        THIS_THREAD.with(|this| this.borrow_mut().take());
    }
}

impl Shared {
    /// An entry was queued: for the paused clock it is the pool's work
    /// running outside its workers until it has run or been cancelled
    /// (tokio does not advance a paused clock while a blocking closure is
    /// in flight).
    fn entry_queued(&self) {
        #[cfg(feature = "test-util")]
        if let Some(registry) = self.registry.get().and_then(Weak::upgrade) {
            registry.outside_work_started();
        }
    }

    /// Cancels an entry that will never run (its handle reports it).
    fn cancel(&self, task: Notified) {
        task.cancel();
        #[cfg(feature = "test-util")]
        if let Some(registry) = self.registry.get().and_then(Weak::upgrade) {
            registry.outside_work_finished();
        }
    }
}

impl std::fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingPool")
            .field("threads", &self.shared.queue.threads())
            .finish()
    }
}
