//! [`ThreadPool`], the handle of a pool: what every front end runs on.
//! The front ends add their own methods (`impl ThreadPool` blocks in
//! `join/`, `scope/`, `task/`, `worklist/`).

use std::fmt;
use std::sync::Arc;

use super::current::Yield;
use super::registry::Registry;
use super::stats::PoolStats;

/// A pool of worker threads, each with a BWoS queue.
///
/// Work started in the pool (`install`, `join`, `scope`, `spawn`) runs on
/// its threads; `join`s and scopes nested in that work stay in the pool.
/// Dropping the pool lets queued and spawned work finish, then stops and
/// joins its threads (when dropped on one of its own threads, the threads
/// stop on their own instead of being joined).
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
        self.registry.in_worker(|_| op())
    }

    /// [`yield_now`](crate::yield_now) if the calling thread is a worker of
    /// this pool, else `None`.
    pub fn yield_now(&self) -> Option<Yield> {
        self.registry
            .with_current_worker(|worker| Some(worker?.yield_now(false)))
    }

    /// [`yield_local`](crate::yield_local) if the calling thread is a
    /// worker of this pool, else `None`.
    pub fn yield_local(&self) -> Option<Yield> {
        self.registry
            .with_current_worker(|worker| Some(worker?.yield_now(true)))
    }

    /// Whether the calling worker of this pool has queued jobs; `None` if
    /// the calling thread is not one of its workers.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        self.registry
            .with_current_worker(|worker| Some(worker?.has_pending_jobs()))
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
        self.registry
            .with_current_worker(|worker| Some(worker?.index()))
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.registry.decrement_terminate_count();
        if self.registry.join_on_drop
            && self.registry.with_current_worker(|worker| worker.is_none())
        {
            self.registry.join_threads();
        } else {
            // Not joined here (a detaching pool, or dropped on one of its
            // own workers): detach the threads now rather than when the
            // registry goes. A pool built with `use_current_thread` never
            // frees its registry (the adopted thread's worker state holds
            // it for the rest of the process), and handles kept there
            // would keep every exited worker's stack mapped for good.
            self.registry.detach_threads();
        }
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.current_num_threads())
            .finish_non_exhaustive()
    }
}
