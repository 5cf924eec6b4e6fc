//! Async tasks on the pool's workers: [`spawn`], [`JoinHandle`],
//! [`yield_now`] and [`block_on`](crate::block_on).
//!
//! The workers that run `join` and `scope` also run async tasks, so one
//! pool serves both: a task can call [`join`](crate::join) or
//! [`scope`](crate::scope) directly (they run in the pool, with no
//! `spawn_blocking` and no second pool), and fork/join code can spawn
//! tasks.
//!
//! ```
//! let handle = bwos::task::spawn(async {
//!     let (a, b) = bwos::join(|| 6, || 7);
//!     a * b
//! });
//! assert_eq!(bwos::block_on(handle).unwrap(), 42);
//! ```
//!
//! # Scheduling
//! Each worker keeps its runnable tasks in a FIFO BWoS queue: a woken task
//! goes to the back of the queue of the worker that woke it, and idle
//! workers steal a whole block of another worker's queue at once. Tasks
//! woken from outside the pool (I/O, timers, other threads) go to an
//! injector and wake a sleeping worker if nobody is looking for work. A
//! worker runs its own fork/join jobs before its tasks, and takes a task
//! from the injector every 61 tasks, so neither a task that is always
//! ready nor a busy worker starves tasks woken from outside.
//!
//! Sockets come from [`crate::io`], whose readiness the pool's own
//! workers poll (no reactor thread; wake-ups land in the polling worker's
//! queue). Timers and other I/O come from any executor-independent
//! reactor, for example [`async-io`](https://docs.rs/async-io) (its
//! `Timer` and `Async` sockets work on bwos unchanged). The
//! `hello_server` example of `bwos-bench` serves HTTP with hyper on
//! `bwos::io`.
//!
//! # Panics and cancellation
//! A panic in a task is caught: the task ends and its [`JoinHandle`]
//! returns a [`JoinError`] with [`is_panic`](JoinError::is_panic); the
//! worker and the pool go on. [`JoinHandle::abort`] cancels a task, and
//! dropping a pool cancels the tasks it still has (their futures are
//! dropped, their handles return [`JoinError::is_cancelled`]): tasks do
//! not keep a pool alive, as in tokio. Dropping a `JoinHandle` detaches
//! its task, which keeps running.
//!
//! # Memory layout
//! A task is one allocation: a header (the state word: `RUNNING`,
//! `NOTIFIED`, `COMPLETE`, `CANCELLED`, join interest, join waker, and a
//! reference count; a vtable; the slot in the pool's task list), the pool
//! handle, the future (later its output) and the `JoinHandle`'s waker.
//! Run-queue entries, wakers and the `JoinHandle` are pointers to it that
//! each own one reference. See `task/raw.rs` and `task/state.rs` in the
//! sources; the state machine is model-checked with loom and the
//! allocation and waker code runs under Miri.

#[cfg(not(loom))]
pub(crate) mod block_on;
#[cfg(not(loom))]
pub(crate) mod executor;
pub(crate) mod inject;
#[cfg(not(loom))]
pub(crate) mod list;
#[cfg(not(loom))]
pub(crate) mod raw;
pub(crate) mod state;

#[cfg(not(loom))]
pub use raw::{JoinError, JoinHandle};

#[cfg(not(loom))]
use std::future::Future;
#[cfg(not(loom))]
use std::pin::Pin;
#[cfg(not(loom))]
use std::task::{Context, Poll};

/// Spawns `future` as a task on the current pool: the pool of the calling
/// worker, or the global pool outside pools. It starts running at once,
/// whether or not the returned [`JoinHandle`] is awaited; dropping the
/// handle detaches the task.
///
/// ```
/// let handles: Vec<_> = (0..10u64)
///     .map(|i| bwos::task::spawn(async move { i * i }))
///     .collect();
/// let sum: u64 = bwos::block_on(async {
///     let mut sum = 0;
///     for handle in handles {
///         sum += handle.await.unwrap();
///     }
///     sum
/// });
/// assert_eq!(sum, 285);
/// ```
#[cfg(not(loom))]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::with_current_registry(|registry| executor::spawn_in(registry, future))
}

/// Yields to the other tasks of the worker: the calling task goes to the
/// back of its worker's queue and runs again after the tasks queued before
/// it (or, when there are none, at once).
///
/// ```
/// let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// pool.block_on({
///     let order = order.clone();
///     async move {
///         let other = bwos::task::spawn({
///             let order = order.clone();
///             async move { order.lock().unwrap().push("other") }
///         });
///         bwos::task::yield_now().await;
///         order.lock().unwrap().push("yielder");
///         other.await.unwrap();
///     }
/// });
/// assert_eq!(*order.lock().unwrap(), ["other", "yielder"]);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[cfg(not(loom))]
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
#[cfg(not(loom))]
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

#[cfg(not(loom))]
impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // Woken during its poll, the task is queued again when the poll
        // ends: at the back of the worker's queue.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
