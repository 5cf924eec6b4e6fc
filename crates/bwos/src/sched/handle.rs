//! [`Handle`]: a reference to a pool that code can keep, clone, send to
//! other threads and enter (tokio's `runtime::Handle`); [`EnterGuard`]:
//! a pool entered by the calling thread until the guard drops.
//!
//! A handle holds the pool's registry, not its threads: it does not keep
//! the pool running (dropping the [`ThreadPool`] shuts the pool down
//! whatever handles exist), and it stays valid after that;
//! [`ThreadPool::handle`] makes one. Its task front-end methods (`spawn`, `spawn_blocking`,
//! `block_on`) live in `task/`, as `ThreadPool`'s do.

use std::fmt;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::Arc;

use super::context;
use super::current::with_current_pool;
use super::pool::ThreadPool;
use super::registry::Registry;
use super::shutdown;
use super::stats::PoolStats;

/// A handle to a pool: cheap to clone, `Send + Sync`, usable from any
/// thread. Get one with [`ThreadPool::handle`](crate::ThreadPool::handle)
/// or [`Handle::current`].
///
/// With it, code outside the pool can spawn tasks on that pool
/// ([`spawn`](Self::spawn), [`spawn_blocking`](Self::spawn_blocking)), run
/// a future for it ([`block_on`](Self::block_on)), read its counters
/// ([`stats`](Self::stats)), or [`enter`](Self::enter) it so that the free
/// functions (`task::spawn`, `time::sleep`, `net`, `join`, `scope`, ...)
/// called on the thread use that pool.
///
/// # After the pool shut down
/// A handle does not keep its pool running: once the pool's `ThreadPool`
/// is dropped or shut down, the handle is still valid, and
/// - [`spawn`](Self::spawn) and [`spawn_blocking`](Self::spawn_blocking)
///   return a [`JoinHandle`](crate::task::JoinHandle) that reports
///   [`is_cancelled`](crate::task::JoinError::is_cancelled) once the
///   workers have stopped (a task spawned while they are still finishing
///   their last jobs may run first); they never hang;
/// - [`block_on`](Self::block_on) panics, saying so: nothing would run the
///   pool's tasks or fire its timers;
/// - [`stats`](Self::stats) returns the counters as the workers left them;
/// - [`enter`](Self::enter) works; what the thread then starts is
///   cancelled (tasks), fails with an I/O error (sockets) or panics when
///   polled (timers), as with any other use of a pool that shut down.
///
/// ```
/// use bwos::Handle;
///
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
/// let handle: Handle = pool.handle();
/// let worker = std::thread::spawn(move || {
///     // A plain thread: without the handle, its tasks would go to the
///     // global pool.
///     let task = handle.spawn(async { bwos::current_num_threads() });
///     handle.block_on(task).unwrap()
/// });
/// assert_eq!(worker.join().unwrap(), 2);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) registry: Arc<Registry>,
}

impl ThreadPool {
    /// A [`Handle`] to this pool: cloneable, `Send + Sync`, and usable
    /// after the pool is gone (see [`Handle`] for what it does then).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let handle = pool.handle();
    /// let task = std::thread::spawn(move || handle.spawn(async { 6 * 7 }))
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(pool.block_on(task).unwrap(), 42);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn handle(&self) -> Handle {
        Handle::new(Arc::clone(&self.registry))
    }
}

// A panic caught around a call leaves the pool consistent (see
// `ThreadPool`'s impls).
impl UnwindSafe for Handle {}
impl RefUnwindSafe for Handle {}

impl Handle {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Handle { registry }
    }

    /// The current pool's handle: the pool of the calling worker; else the
    /// pool the calling thread entered last (a [`block_on`](crate::block_on)
    /// polling on it, a blocking thread running its closure,
    /// [`block_in_place`](crate::task::block_in_place)'s closure, an
    /// [`EnterGuard`]); else the global pool, started if needed. The pool
    /// that [`task::spawn`](crate::task::spawn) would use.
    ///
    /// # Panics
    /// If the global pool is needed and could not be built (see
    /// [`ThreadPoolBuilder::build_global`](crate::ThreadPoolBuilder::build_global)).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(3).build()?;
    /// let handle = pool.install(bwos::Handle::current);
    /// assert_eq!(handle.block_on(async { bwos::current_num_threads() }), 3);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn current() -> Handle {
        with_current_pool(|registry| Handle::new(Arc::clone(registry)))
    }

    /// Enters the pool on the calling thread until the returned guard
    /// drops: meanwhile [`task::spawn`](crate::task::spawn),
    /// [`task::spawn_blocking`](crate::task::spawn_blocking), the
    /// [`time`](crate::time) functions, [`net`](crate::net)'s sockets,
    /// [`block_on`](crate::block_on), [`Handle::current`] and the free
    /// fork/join functions ([`join`](crate::join), [`scope`](crate::scope),
    /// [`spawn`](crate::spawn), ...) called on this thread use this pool.
    ///
    /// Guards nest: the pool entered last is the current one, and dropping
    /// its guard makes the one entered before current again. Guards are
    /// meant to drop in the reverse order they were made (they are not
    /// `Send`, so each drops on its thread). One dropped out of order
    /// leaves only its own pool: the current pool is then the one of the
    /// newest guard still alive. Nothing panics either way. A guard that
    /// is leaked (`mem::forget`) leaves its pool entered for the rest of
    /// the thread's life.
    ///
    /// On a worker of another pool the thread works for the entered pool
    /// as a thread outside the pools does: [`current_thread_index`](crate::current_thread_index)
    /// is `None`, and a `join` runs on the entered pool's workers. While
    /// it waits for them (or for anything else), the thread runs its own
    /// pool's work, as a worker waiting for another pool always does.
    /// Entering the worker's own pool changes nothing.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .thread_name(|index| format!("entered-{index}"))
    ///     .build()?;
    /// let handle = pool.handle();
    /// let guard = handle.enter();
    /// // The free functions now use `pool`, not the global pool.
    /// let name = bwos::task::spawn(async {
    ///     std::thread::current().name().map(str::to_owned)
    /// });
    /// let (a, b) = bwos::join(|| bwos::current_num_threads(), || 0);
    /// drop(guard);
    /// assert!(bwos::block_on(name).unwrap().unwrap().starts_with("entered-"));
    /// assert_eq!(a + b, 2);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            entry: Some(context::push(&self.registry)),
            _handle: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// The pool's counters (see [`ThreadPool::stats`](crate::ThreadPool::stats)).
    /// With `Handle::current()` outside the pools, the global pool's.
    ///
    /// ```
    /// let stats = bwos::Handle::current().stats();
    /// assert!(stats.wakeups <= stats.sleeps);
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.registry.stats()
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("num_threads", &self.registry.num_threads())
            .field("shut_down", &shutdown::is_shut_down(&self.registry))
            .finish_non_exhaustive()
    }
}

/// A pool entered by the calling thread, until this guard drops: see
/// [`Handle::enter`]. Not `Send`: it is dropped on the thread that made
/// it.
///
/// ```compile_fail
/// let handle = bwos::Handle::current();
/// let guard = handle.enter();
/// // error: the guard cannot leave its thread.
/// std::thread::scope(|scope| {
///     scope.spawn(move || drop(guard));
/// });
/// ```
#[must_use = "the pool is entered only while the guard lives"]
pub struct EnterGuard<'a> {
    entry: Option<context::Entry>,
    _handle: PhantomData<&'a Handle>,
    /// The entry belongs to this thread's stack of entered pools.
    _not_send: PhantomData<*const ()>,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            context::leave(entry);
        }
    }
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}
