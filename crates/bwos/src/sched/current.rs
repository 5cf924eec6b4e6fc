//! The calling thread's place in the pools: the free functions that ask
//! about it or act on it (rayon-core's `current_num_threads`,
//! `current_thread_index`, `yield_now`, ...). Outside every pool they
//! answer `None`, or use the global pool.

use super::num_threads::MAX_THREADS;
use super::registry::Registry;
use super::worker::{WorkerThread, Yield};

/// Runs one pending job of the current pool, if there is one, in the
/// order a worker looks for work: a job of the calling worker's queue, a
/// broadcast job for it, one of its tasks, a stolen job or task, an
/// injected one. Returns `None` outside the pools. A loop that waits for
/// something other work produces can call it to help instead of spinning.
///
/// ```
/// assert_eq!(bwos::yield_now(), None); // not a worker
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let outcome = pool.install(|| bwos::yield_now());
/// assert_eq!(outcome, Some(bwos::Yield::Idle));
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn yield_now() -> Option<Yield> {
    WorkerThread::with_current(|worker| Some(worker?.yield_now(false)))
}

/// As [`yield_now`], but runs only a job of the calling worker's own
/// queue.
pub fn yield_local() -> Option<Yield> {
    WorkerThread::with_current(|worker| Some(worker?.yield_now(true)))
}

/// The largest number of threads a pool may have: [`MAX_THREADS`].
pub fn max_num_threads() -> usize {
    MAX_THREADS
}

/// Whether the calling worker's queue holds jobs (`None` outside the
/// pools). A racy snapshot: thieves may take them at any moment.
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    WorkerThread::with_current(|worker| Some(worker?.has_pending_jobs()))
}

/// The number of threads of the current pool: the pool of the calling
/// worker, else the pool the thread entered (a `block_on` poll, a blocking
/// thread, an `EnterGuard`), else the global pool (created if needed).
pub fn current_num_threads() -> usize {
    Registry::with_current(|registry| registry.num_threads())
}

/// The index of the calling thread in its pool, or `None` outside pools.
pub fn current_thread_index() -> Option<usize> {
    WorkerThread::with_current(|worker| Some(worker?.index()))
}
