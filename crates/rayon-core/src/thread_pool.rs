//! `ThreadPool`: rayon-core's pool type over a `bwos::ThreadPool`.

use std::error::Error;
use std::fmt;

use bwos::{BroadcastContext, Scope, ScopeFifo, Yield};

/// A thread pool; see [`ThreadPoolBuilder`](crate::ThreadPoolBuilder).
///
/// Dropping it returns at once: the threads run the work queued or
/// spawned in the pool, then exit in the background (rayon's behaviour).
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(2).build()?;
/// assert_eq!(pool.install(|| rayon_core::current_num_threads()), 2);
/// # Ok::<(), rayon_core::ThreadPoolBuildError>(())
/// ```
pub struct ThreadPool {
    pub(crate) inner: bwos::ThreadPool,
}

impl ThreadPool {
    /// Deprecated in favour of [`ThreadPoolBuilder::build`](crate::ThreadPoolBuilder::build).
    #[deprecated(note = "Use `ThreadPoolBuilder::build`")]
    #[allow(deprecated)]
    pub fn new(configuration: crate::Configuration) -> Result<ThreadPool, Box<dyn Error>> {
        configuration.into_builder().build().map_err(Box::from)
    }

    /// Runs `op` in the pool and returns its result; see
    /// [`bwos::ThreadPool::install`].
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.inner.install(op)
    }

    /// Runs `op` once on every thread of the pool; see
    /// [`bwos::ThreadPool::broadcast`].
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        self.inner.broadcast(op)
    }

    /// The number of threads of the pool.
    pub fn current_num_threads(&self) -> usize {
        self.inner.current_num_threads()
    }

    /// The calling thread's index in this pool, or `None`.
    pub fn current_thread_index(&self) -> Option<usize> {
        self.inner.current_thread_index()
    }

    /// Whether the calling worker of this pool has queued jobs; `None`
    /// outside the pool.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        self.inner.current_thread_has_pending_tasks()
    }

    /// [`join`](crate::join) in this pool.
    pub fn join<A, B, RA, RB>(&self, oper_a: A, oper_b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.inner.join(oper_a, oper_b)
    }

    /// [`scope`](crate::scope) in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.inner.scope(op)
    }

    /// [`scope_fifo`](crate::scope_fifo) in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.inner.scope_fifo(op)
    }

    /// [`in_place_scope`](crate::in_place_scope) with this pool.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        self.inner.in_place_scope(op)
    }

    /// [`in_place_scope_fifo`](crate::in_place_scope_fifo) with this pool.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        self.inner.in_place_scope_fifo(op)
    }

    /// [`spawn`](crate::spawn) in this pool.
    pub fn spawn<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner.spawn(op);
    }

    /// [`spawn_fifo`](crate::spawn_fifo) in this pool.
    pub fn spawn_fifo<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner.spawn_fifo(op);
    }

    /// [`spawn_broadcast`](crate::spawn_broadcast) in this pool.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        self.inner.spawn_broadcast(op);
    }

    /// [`yield_now`](crate::yield_now) on a worker of this pool; `None`
    /// elsewhere.
    pub fn yield_now(&self) -> Option<Yield> {
        self.inner.yield_now()
    }

    /// [`yield_local`](crate::yield_local) on a worker of this pool;
    /// `None` elsewhere.
    pub fn yield_local(&self) -> Option<Yield> {
        self.inner.yield_local()
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.current_num_threads())
            .finish_non_exhaustive()
    }
}
