//! Thread pools: [`ThreadPool`], its builder, the registry its workers
//! share, and the global pool.

pub(crate) mod builder;
pub(crate) mod global;
pub(crate) mod registry;

use std::fmt;
use std::sync::Arc;

use registry::Registry;

use crate::broadcast::BroadcastContext;
use crate::scope::{Scope, ScopeFifo};
use crate::stats::PoolStats;
use crate::task::JoinHandle;

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

    /// [`worklist::run`](crate::worklist::run) in this pool: processes
    /// `seeds` and every item `f` pushes, each exactly once, on this
    /// pool's workers.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let processed = AtomicUsize::new(0);
    /// // A complete binary tree of depth 10, one item per node.
    /// pool.worklist([0u32], |depth, sink| {
    ///     processed.fetch_add(1, Ordering::Relaxed);
    ///     if depth < 10 {
    ///         sink.push(depth + 1);
    ///         sink.push(depth + 1);
    ///     }
    /// });
    /// assert_eq!(processed.into_inner(), 2047);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn worklist<T, F>(&self, seeds: impl IntoIterator<Item = T>, f: F)
    where
        T: Send,
        F: Fn(T, &crate::worklist::Sink<'_, T>) + Sync,
    {
        crate::worklist::run_in(&self.registry, seeds, f);
    }

    /// [`join`](crate::join) in this pool.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(|| crate::join(a, b))
    }

    /// [`scope`](crate::scope) in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope(op))
    }

    /// [`scope_fifo`](crate::scope_fifo) in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope_fifo(op))
    }

    /// [`in_place_scope`](crate::in_place_scope) with this pool: the body
    /// runs on the calling thread, spawned closures in this pool.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        crate::scope::in_place_scope_in(&self.registry, op)
    }

    /// [`in_place_scope_fifo`](crate::in_place_scope_fifo) with this pool.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        self.in_place_scope(|base| op(ScopeFifo::from_base(base)))
    }

    /// [`spawn_fifo`](crate::spawn_fifo) in this pool.
    pub fn spawn_fifo<F>(&self, func: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.registry.spawn_fifo(func);
    }

    /// [`broadcast`](crate::broadcast) in this pool: runs `op` once on each
    /// of its workers and returns the results by worker index.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        crate::broadcast::broadcast_in(&self.registry, op)
    }

    /// [`spawn_broadcast`](crate::spawn_broadcast) in this pool.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        crate::broadcast::spawn_broadcast_in(&self.registry, op);
    }

    /// [`yield_now`](crate::yield_now) if the calling thread is a worker of
    /// this pool, else `None`.
    pub fn yield_now(&self) -> Option<crate::Yield> {
        self.registry.current_worker()?;
        crate::yield_now()
    }

    /// [`yield_local`](crate::yield_local) if the calling thread is a
    /// worker of this pool, else `None`.
    pub fn yield_local(&self) -> Option<crate::Yield> {
        self.registry.current_worker()?;
        crate::yield_local()
    }

    /// Whether the calling worker of this pool has queued jobs; `None` if
    /// the calling thread is not one of its workers.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        Some(self.registry.current_worker()?.has_pending_jobs())
    }

    /// [`spawn`](crate::spawn) in this pool: runs `func` detached. The pool
    /// stays alive until it has run.
    pub fn spawn<F>(&self, func: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.registry.spawn(func);
    }

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
        crate::task::executor::spawn_in(&self.registry, future)
    }

    /// Runs `future` as a task of this pool and returns its output (see
    /// [`block_on`](crate::block_on)): a thread outside the pool blocks, a
    /// worker keeps running its pool's work meanwhile. A panic in the
    /// future resumes here.
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
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        crate::task::block_on::block_on_in(&self.registry, future)
    }

    /// The number of worker threads.
    pub fn current_num_threads(&self) -> usize {
        self.registry.num_threads()
    }

    /// What the workers did while they looked for work, summed over all
    /// workers since the pool was built: steals, failed attempts, sleeps,
    /// wake-ups, BWS credits and yields (see [`PoolStats`]).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// pool.install(|| bwos::join(|| (), || ()));
    /// let stats: bwos::PoolStats = pool.stats();
    /// assert!(stats.wakeups <= stats.sleeps);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.registry.stats()
    }

    /// The index of the calling thread in this pool, or `None` if it is not
    /// one of this pool's workers.
    pub fn current_thread_index(&self) -> Option<usize> {
        if self.registry.is_current() {
            crate::current_thread_index()
        } else {
            None
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.registry.decrement_terminate_count();
        if self.registry.join_on_drop && !self.registry.is_current() {
            self.registry.join_threads();
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
