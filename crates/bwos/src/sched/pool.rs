//! [`ThreadPool`], the handle of a pool: what every front end runs on.
//! The front ends add their own methods (`impl ThreadPool` blocks in
//! `join/`, `scope/`, `task/`, `worklist/`), and so does `handle.rs`
//! (`ThreadPool::handle`).

use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::inject::in_worker_of;
use super::registry::Registry;
use super::shutdown::{self, Wait};
use super::stats::PoolStats;
use super::worker::{WorkerThread, Yield};

/// A pool of worker threads, each with a BWoS queue.
///
/// Work started in the pool (`install`, `join`, `scope`, `spawn`) runs on
/// its threads; `join`s and scopes nested in that work stay in the pool.
/// Dropping the pool lets queued and spawned work finish, then stops and
/// joins its threads (when dropped on one of its own threads, the threads
/// stop on their own instead of being joined). Async tasks do not keep
/// it alive: those still pending are cancelled. See
/// [`shutdown_timeout`](Self::shutdown_timeout) for what happens to each
/// kind of work, and for a bounded wait.
///
/// [`handle`](Self::handle) gives a [`Handle`](crate::Handle): a cheap,
/// cloneable reference to the pool that libraries can keep and threads can
/// [`enter`](crate::Handle::enter).
///
/// A `ThreadPool` is `UnwindSafe` and `RefUnwindSafe`: a panic caught
/// around one of its calls leaves the pool consistent (a panic in user
/// code is caught where it runs and handed to the caller, the pool's
/// locks tolerate poisoning), so it can be used afterwards.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(4).build()?;
/// let sum: u64 = pool.install(|| {
///     let (a, b) = bwos::join(|| (0..500u64).sum::<u64>(), || (500..1000u64).sum::<u64>());
///     a + b
/// });
/// assert_eq!(sum, 499_500);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub struct ThreadPool {
    pub(crate) registry: Arc<Registry>,
}

impl ThreadPool {
    /// Runs `op` on a thread of this pool and returns its result. From a
    /// thread outside any pool the caller blocks; from a thread of another
    /// pool that thread keeps running its own pool's work meanwhile; from
    /// this pool's threads `op` runs at once. A panic in `op` resumes here.
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        in_worker_of(&self.registry, |_| op())
    }

    /// [`yield_now`](crate::yield_now) if the calling thread is a worker of
    /// this pool, else `None`.
    pub fn yield_now(&self) -> Option<Yield> {
        WorkerThread::with_current_in(&self.registry, |worker| Some(worker?.yield_now(false)))
    }

    /// [`yield_local`](crate::yield_local) if the calling thread is a
    /// worker of this pool, else `None`.
    pub fn yield_local(&self) -> Option<Yield> {
        WorkerThread::with_current_in(&self.registry, |worker| Some(worker?.yield_now(true)))
    }

    /// Whether the calling worker of this pool has queued jobs; `None` if
    /// the calling thread is not one of its workers.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        WorkerThread::with_current_in(&self.registry, |worker| Some(worker?.has_pending_jobs()))
    }

    /// The number of worker threads.
    pub fn current_num_threads(&self) -> usize {
        self.registry.num_threads()
    }

    /// The pool's metrics now: the workers' counters summed since the
    /// pool was built (steals, failed attempts, sleeps, wake-ups, BWS
    /// credits, long polls, ...), each worker's counters and queue depths
    /// ([`PoolStats::workers`]), and the pool's gauges (injector depths,
    /// alive tasks, blocking threads, pending timers, I/O events); see
    /// [`PoolStats`]. Counting costs the workers a plain add per task
    /// poll and per job their scheduler loop runs; this call reads the
    /// counters and takes the locks of the gauges it reads (the task
    /// list's shards, the blocking pool's, the timers').
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// pool.install(|| bwos::join(|| (), || ()));
    /// let stats: bwos::PoolStats = pool.stats();
    /// assert!(stats.wakeups <= stats.sleeps);
    /// assert_eq!(stats.workers.len(), 2);
    /// assert_eq!(stats.num_alive_tasks, 0);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.registry.stats()
    }

    /// The index of the calling thread in this pool, or `None` if it is not
    /// one of this pool's workers.
    pub fn current_thread_index(&self) -> Option<usize> {
        WorkerThread::with_current_in(&self.registry, |worker| Some(worker?.index()))
    }

    /// Shuts the pool down and waits at most `timeout` for its work to stop
    /// (tokio's `Runtime::shutdown_timeout`); the threads still busy after
    /// that are left to finish on their own. What happens to each kind of
    /// work, here and when the pool is dropped:
    ///
    /// - **async tasks** ([`spawn_task`](Self::spawn_task),
    ///   [`task::spawn`](crate::task::spawn)) do not keep the pool alive:
    ///   those not running are cancelled as the workers stop (their futures
    ///   dropped, their [`JoinHandle`](crate::task::JoinHandle)s report
    ///   [`is_cancelled`](crate::task::JoinError::is_cancelled)); a poll
    ///   that is running finishes first. Once the workers have stopped, a
    ///   task spawned or woken (through a [`Handle`](crate::Handle), a waker) is cancelled
    ///   at once.
    /// - **detached jobs** ([`spawn`](Self::spawn), `spawn_fifo`,
    ///   `spawn_broadcast`) keep the workers running until they have run,
    ///   as when the pool is dropped.
    /// - **blocking closures** ([`spawn_blocking`](Self::spawn_blocking))
    ///   not started yet are cancelled; those running cannot be interrupted
    ///   and run to their end on their threads.
    /// - **timers and sockets** of the pool: a timer polled after the
    ///   workers stopped panics (nobody would fire it); socket operations
    ///   fail with an I/O error.
    ///
    /// The call waits for the workers to stop and for the blocking threads
    /// to finish their closures, together at most `timeout`; then it joins
    /// the workers if they stopped (as dropping the pool does). Whatever is
    /// still running after `timeout` (a worker in a long job or task poll,
    /// a blocking closure) goes on without anyone waiting: its thread exits
    /// when it is done, and nothing of the pool is leaked beyond that.
    /// Dropping the pool instead waits for the workers however long they
    /// take, and never for blocking closures.
    ///
    /// Called on one of the pool's own workers, it cannot wait for them (it
    /// runs on one): it returns at once, as
    /// [`shutdown_background`](Self::shutdown_background). Called on one of
    /// the pool's blocking threads, it does not wait for that thread.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
    /// let (release, wait) = std::sync::mpsc::channel::<()>();
    /// let (started, has_started) = std::sync::mpsc::channel::<()>();
    /// let stuck = pool.spawn_blocking(move || {
    ///     started.send(()).unwrap();
    ///     wait.recv().ok()
    /// });
    /// // Running: it will not be cancelled (a queued closure would be).
    /// has_started.recv().unwrap();
    /// // Returns after about 10 ms: the closure is still blocked.
    /// pool.shutdown_timeout(Duration::from_millis(10));
    /// release.send(()).unwrap();
    /// assert_eq!(bwos::block_on(stuck).unwrap(), Some(()));
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn shutdown_timeout(self, timeout: Duration) {
        shutdown::shut_down(&self.registry, Wait::AtMost(timeout));
    }

    /// Shuts the pool down without waiting for its work to stop (tokio's
    /// `Runtime::shutdown_background`): the same as
    /// [`shutdown_timeout`](Self::shutdown_timeout) with a zero timeout.
    /// Useful where the caller must not block, on a worker of another
    /// pool for example. The workers and blocking threads stop as they do
    /// after `shutdown_timeout` (pending tasks cancelled, running closures
    /// finishing) and exit when done; nobody joins them.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let pending = pool.spawn_task(std::future::pending::<()>());
    /// pool.shutdown_background();
    /// assert!(bwos::block_on(pending).unwrap_err().is_cancelled());
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn shutdown_background(self) {
        self.shutdown_timeout(Duration::ZERO);
    }
}

// A panic caught around a call leaves the pool consistent: user code runs
// under `catch_unwind` wherever bwos holds state across it, and the pool's
// locks tolerate poisoning.
impl UnwindSafe for ThreadPool {}
impl RefUnwindSafe for ThreadPool {}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        shutdown::shut_down(&self.registry, Wait::AsBuilt);
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.current_num_threads())
            .finish_non_exhaustive()
    }
}
