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
//! Where a closure goes and how threads wait and exit: `queue.rs`; how an
//! entry is queued and a thread started and run, inside its pool's
//! context: `threads.rs`. This file holds the state the registry keeps.
//!
//! # Shutdown
//! When the pool's last worker stops, [`threads::shut_down`] cancels
//! the entries that have not started (their handles report cancellation)
//! and tells idle threads to exit; closures already running finish on
//! their threads, which then exit. Dropping a pool does not wait for them
//! (a closure may never return); `ThreadPool::shutdown_timeout` waits for
//! them up to its timeout (`BlockingQueue::wait_for_threads`).

pub(crate) mod queue;
pub(crate) mod threads;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::task::raw::Notified;
pub(crate) use queue::BlockingGauges;
use queue::{BlockingQueue, Waiter};

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
    /// Numbers the threads' names.
    next_thread: std::sync::atomic::AtomicUsize,
}

impl BlockingPool {
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> Self {
        BlockingPool {
            shared: Arc::new(Shared {
                queue: BlockingQueue::new(max_threads),
                keep_alive,
                next_thread: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
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

    /// After [`threads::shut_down`]: waits until every blocking
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

impl std::fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingPool")
            .field("threads", &self.shared.queue.threads())
            .finish()
    }
}
