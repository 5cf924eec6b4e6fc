//! The calling thread's place in the pools: which pool is current (the
//! one way to find it, [`with_current_pool`]; the calling worker is
//! `WorkerThread::with_current`'s), the free functions' way into it
//! ([`in_worker`]), and the free functions that ask about it or act on it
//! (rayon-core's `current_num_threads`, `current_thread_index`,
//! `yield_now`, ...). Outside every pool they answer `None`, or use the
//! global pool, built here on first use.

use std::sync::Arc;

use super::builder::ThreadPoolBuilder;
use super::context;
use super::global;
use super::inject::in_worker_of;
use super::num_threads::MAX_THREADS;
use super::registry::Registry;
#[cfg(feature = "test-util")]
use super::time::Timers;
use super::worker::{WorkerThread, Yield};

/// Calls `f` with the current pool's registry: the calling worker's, the
/// one the calling thread entered last (in `block_on`, on a blocking
/// thread, with an `EnterGuard`: see `context.rs`; a worker that entered
/// another pool is hidden meanwhile), or the global pool's.
#[inline]
pub(crate) fn with_current_pool<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    with_current_pool_if_any(|registry| match registry {
        Some(registry) => f(registry),
        None => f(global_registry()),
    })
}

/// Calls `f` with the pool the calling thread works for: its worker's, or
/// the one it entered (`context.rs`); `None` elsewhere. Unlike
/// [`with_current_pool`] it never falls back to the global pool (the
/// paused clock's `pause`, `resume` and `advance` need a pool of the
/// caller's, as tokio's need a runtime).
#[inline]
pub(crate) fn with_current_pool_if_any<R>(f: impl FnOnce(Option<&Arc<Registry>>) -> R) -> R {
    WorkerThread::with_current(|worker| match worker {
        Some(worker) => f(Some(worker.registry())),
        None => f(context::current().as_ref()),
    })
}

/// Calls `f` with the timers (and so the clock) of the current pool as
/// [`with_current_pool`] finds it, except that the global pool is not
/// started for it: `None` if the calling thread works for no pool and the
/// global pool has not started.
#[cfg(feature = "test-util")]
pub(crate) fn with_clock_of_current_pool<R>(f: impl FnOnce(Option<&Timers>) -> R) -> R {
    with_current_pool_if_any(|registry| match registry {
        Some(registry) => f(Some(&registry.timers)),
        None => f(global::registry_if_started().map(|registry| &registry.timers)),
    })
}

/// The global pool's registry, built with the default configuration on
/// first use (see `global.rs`).
fn global_registry() -> &'static Arc<Registry> {
    global::registry(|| ThreadPoolBuilder::new().build())
}

/// Runs `op` on the calling worker, or, from a thread outside every pool,
/// on a worker of the pool the thread entered, else of the global pool,
/// while the caller blocks; `op` learns which (`true`: it was injected).
/// The entry of the free functions (`join`, `scope`, ...) into the pools,
/// as rayon-core's `registry::in_worker`.
#[inline]
pub(crate) fn in_worker<OP, R>(op: OP) -> R
where
    OP: FnOnce(&WorkerThread, bool) -> R + Send,
    R: Send,
{
    WorkerThread::with_current(|worker| match worker {
        Some(worker) => op(worker, false),
        None => in_current_pool(op),
    })
}

/// [`in_worker`] from a thread that is no worker: runs `op` on a worker of
/// the current pool (the one the thread entered, else the global pool),
/// with `true` (injected), while the caller blocks.
#[cold]
#[inline(never)]
pub(crate) fn in_current_pool<OP, R>(op: OP) -> R
where
    OP: FnOnce(&WorkerThread, bool) -> R + Send,
    R: Send,
{
    with_current_pool(|registry| in_worker_of(registry, |worker| op(worker, true)))
}

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
    with_current_pool(|registry| registry.num_threads())
}

/// The index of the calling thread in its pool, or `None` outside pools.
pub fn current_thread_index() -> Option<usize> {
    WorkerThread::with_current(|worker| Some(worker?.index()))
}
