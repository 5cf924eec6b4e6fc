//! Async tasks on the pool's workers: [`spawn`], [`JoinHandle`], [`JoinSet`],
//! [`yield_now`] and [`block_on`](crate::block_on); blocking closures on
//! threads of their own: [`spawn_blocking`]; the cooperative budget:
//! [`consume_budget`] and [`unconstrained`].
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
//! A task whose operations are always ready (a socket a peer keeps
//! readable, handles of finished tasks) would never return `Pending` and
//! so never let its worker run the others. Each poll therefore has a
//! cooperative budget of 128 ready operations, as in tokio: past it, the
//! next operation yields (see [`consume_budget`]).
//!
//! Sockets come from [`crate::net`] and timers from [`crate::time`]: the
//! pool's own workers poll the sockets' readiness and fire the timers (no
//! reactor or timer thread; wake-ups land in the polling worker's queue).
//! Closures that block run on separate threads with [`spawn_blocking`],
//! or in place with [`block_in_place`], which moves the worker to another
//! thread meanwhile.
//! The `http_server` example serves HTTP/1.1 and HTTP/2 with hyper on
//! `bwos::net`.
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
//! A task is one allocation, tasks are queued in FIFO BWoS queues per
//! worker: the task cell and the run queues are the scheduler core's
//! (`sched/task/` and `sched/queues.rs` in the sources).

mod block_in_place;
pub(crate) mod block_on;
mod blocking;
mod coop;
pub(crate) mod executor;
mod join_set;

pub use crate::sched::task::abort_handle::AbortHandle;
pub use crate::sched::task::raw::{JoinError, JoinHandle};
pub use block_in_place::block_in_place;
pub use blocking::spawn_blocking;
pub use coop::{Unconstrained, consume_budget, unconstrained};
pub use join_set::JoinSet;

use crate::sched::current::with_current_pool;
use crate::sched::handle::Handle;
use crate::sched::pool::ThreadPool;
use crate::sched::shutdown;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Spawns `future` as a task on the current pool: the pool of the calling
/// worker, else the pool the thread entered (a [`block_on`](crate::block_on)
/// polling, a blocking thread, a [`Handle::enter`] guard), else the global
/// pool. It starts running at once,
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
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current_pool(|registry| executor::spawn_in(registry, future))
}

/// Yields to the other tasks of the worker: the calling task goes to the
/// back of its worker's queue and runs again after the tasks queued before
/// it (or, when there are none, at once). In a [`block_on`](crate::block_on)
/// future, which is not a task, it returns after one more poll.
///
/// ```
/// let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let yielder = pool.spawn_task({
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
/// pool.block_on(yielder).unwrap();
/// assert_eq!(*order.lock().unwrap(), ["other", "yielder"]);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    yielded: bool,
}

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

impl ThreadPool {
    /// Spawns `future` as a task of this pool (see
    /// [`task::spawn`](crate::task::spawn)). Tasks do not keep the pool
    /// alive: dropping the pool cancels those still pending.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let handle = pool.spawn_task(async { 6 * 7 });
    /// assert_eq!(pool.block_on(handle).unwrap(), 42);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn spawn_task<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        executor::spawn_in(&self.registry, future)
    }

    /// Runs `future` to completion on the calling thread, for this pool
    /// (see [`block_on`](crate::block_on)): the tasks, timers and joins it
    /// starts go to this pool. Between polls the thread parks; a worker
    /// first moves to another thread, as in
    /// [`block_in_place`](crate::task::block_in_place), unless the first
    /// poll is ready. The future need not be `Send`; a panic in it unwinds
    /// out of `block_on`.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let data = vec![1u64, 2, 3, 4];
    /// let sum = pool.block_on(async {
    ///     // An async task can fork/join on the same pool.
    ///     let (a, b) = bwos::join(|| data[..2].iter().sum::<u64>(), || data[2..].iter().sum::<u64>());
    ///     a + b
    /// });
    /// assert_eq!(sum, 10);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        block_on::block_on_in(&self.registry, future)
    }
}

impl Handle {
    /// Spawns `future` as a task of this handle's pool, from any thread
    /// (see [`task::spawn`](crate::task::spawn)). Once the pool's workers
    /// have stopped (its `ThreadPool` dropped or shut down) the task is
    /// cancelled: its [`JoinHandle`] reports
    /// [`is_cancelled`](JoinError::is_cancelled) (see [`Handle`]).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let handle = pool.handle();
    /// let task = handle.spawn(async { 6 * 7 });
    /// assert_eq!(handle.block_on(task).unwrap(), 42);
    /// drop(pool);
    /// // The handle outlives its pool: its tasks are cancelled.
    /// let late = handle.spawn(async { 1 });
    /// assert!(bwos::block_on(late).unwrap_err().is_cancelled());
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        executor::spawn_in(&self.registry, future)
    }

    /// Runs `future` to completion on the calling thread, for this
    /// handle's pool, as [`ThreadPool::block_on`] does: the tasks, timers,
    /// sockets and joins it starts go to that pool.
    ///
    /// # Panics
    /// If the pool has shut down (its `ThreadPool` was dropped or shut
    /// down): nothing would run its tasks or fire its timers, so the call
    /// could wait forever. And as `ThreadPool::block_on`, if the future
    /// panics.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        assert!(
            !shutdown::is_shut_down(&self.registry),
            "bwos: Handle::block_on on a pool that has shut down (its ThreadPool was dropped \
             or shut down): nothing would run its tasks or fire its timers"
        );
        block_on::block_on_in(&self.registry, future)
    }
}
