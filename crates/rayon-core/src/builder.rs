//! `ThreadPoolBuilder`, its error type and the deprecated `Configuration`,
//! with rayon-core's signatures, over `bwos::ThreadPoolBuilder`.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::io;

use crate::ThreadPool;
use bwos::ThreadBuilder;

/// Configures and builds a [`ThreadPool`], or the global pool.
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("worker-{i}"))
///     .build()?;
/// assert_eq!(pool.join(|| 1, || 2), (1, 2));
/// # Ok::<(), rayon_core::ThreadPoolBuildError>(())
/// ```
pub struct ThreadPoolBuilder<S = DefaultSpawn> {
    inner: bwos::ThreadPoolBuilder,
    spawn_handler: S,
}

/// Starts threads with `std::thread` (bwos's own spawning: names and
/// stack sizes as bwos sets them).
#[derive(Debug, Default)]
pub struct DefaultSpawn;

/// Starts threads with a user's spawn handler
/// ([`ThreadPoolBuilder::spawn_handler`]).
#[derive(Debug)]
pub struct CustomSpawn<F>(F);

mod sealed {
    /// How a builder starts its threads.
    pub trait ThreadSpawn {
        /// Builds a pool from `builder`.
        fn build(
            self,
            builder: bwos::ThreadPoolBuilder,
        ) -> Result<bwos::ThreadPool, bwos::ThreadPoolBuildError>;
        /// Builds the global pool from `builder`.
        fn build_global(
            self,
            builder: bwos::ThreadPoolBuilder,
        ) -> Result<(), bwos::ThreadPoolBuildError>;
    }
}
use sealed::ThreadSpawn;

impl ThreadSpawn for DefaultSpawn {
    fn build(
        self,
        builder: bwos::ThreadPoolBuilder,
    ) -> Result<bwos::ThreadPool, bwos::ThreadPoolBuildError> {
        builder.build()
    }

    fn build_global(
        self,
        builder: bwos::ThreadPoolBuilder,
    ) -> Result<(), bwos::ThreadPoolBuildError> {
        builder.build_global()
    }
}

impl<F> ThreadSpawn for CustomSpawn<F>
where
    F: FnMut(ThreadBuilder) -> io::Result<()>,
{
    fn build(
        self,
        builder: bwos::ThreadPoolBuilder,
    ) -> Result<bwos::ThreadPool, bwos::ThreadPoolBuildError> {
        builder.build_with_spawn_handler(self.0)
    }

    fn build_global(
        self,
        builder: bwos::ThreadPoolBuilder,
    ) -> Result<(), bwos::ThreadPoolBuildError> {
        builder.build_global_with_spawn_handler(self.0)
    }
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder {
            // rayon's pools return from drop at once.
            inner: bwos::ThreadPoolBuilder::new().detach_threads_on_drop(true),
            spawn_handler: DefaultSpawn,
        }
    }
}

impl ThreadPoolBuilder {
    /// A builder with the defaults: as many threads as `BWOS_NUM_THREADS`,
    /// else `RAYON_NUM_THREADS`, else the available parallelism.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a pool whose threads are scoped threads of this call, runs
    /// `with_pool` with it and returns once its threads have exited; each
    /// thread runs `wrapper(thread)`, which must call `thread.run()`.
    pub fn build_scoped<W, F, R>(self, wrapper: W, with_pool: F) -> Result<R, ThreadPoolBuildError>
    where
        W: Fn(ThreadBuilder) + Sync,
        F: FnOnce(&ThreadPool) -> R,
    {
        std::thread::scope(|scope| {
            let wrapper = &wrapper;
            let pool = self
                .spawn_handler(|thread| {
                    let mut builder = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        builder = builder.name(name.to_owned());
                    }
                    if let Some(bytes) = thread.stack_size() {
                        builder = builder.stack_size(bytes);
                    }
                    builder.spawn_scoped(scope, move || wrapper(thread))?;
                    Ok(())
                })
                .build()?;
            Ok(with_pool(&pool))
        })
    }
}

impl<S: ThreadSpawn> ThreadPoolBuilder<S> {
    /// Builds the pool.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        self.spawn_handler
            .build(self.inner)
            .map(|inner| ThreadPool { inner })
            .map_err(ThreadPoolBuildError)
    }

    /// Builds the global pool, which the free functions use outside pools.
    /// Fails if it exists already (it is created on first use).
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        self.spawn_handler
            .build_global(self.inner)
            .map_err(ThreadPoolBuildError)
    }
}

impl<S> ThreadPoolBuilder<S> {
    /// Starts the pool's threads with `spawn`, which gets a
    /// [`ThreadBuilder`] per thread and must start a thread that calls its
    /// `run()` without waiting for `build` to return.
    pub fn spawn_handler<F>(self, spawn: F) -> ThreadPoolBuilder<CustomSpawn<F>>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        ThreadPoolBuilder {
            inner: self.inner,
            spawn_handler: CustomSpawn(spawn),
        }
    }

    fn map(self, f: impl FnOnce(bwos::ThreadPoolBuilder) -> bwos::ThreadPoolBuilder) -> Self {
        ThreadPoolBuilder {
            inner: f(self.inner),
            spawn_handler: self.spawn_handler,
        }
    }

    /// Names thread `i` with `closure(i)`.
    pub fn thread_name<F>(self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.map(|inner| inner.thread_name(closure))
    }

    /// The number of threads; `0` means `BWOS_NUM_THREADS`, else
    /// `RAYON_NUM_THREADS`, else the available parallelism. More than
    /// [`max_num_threads`](crate::max_num_threads) is reduced to it.
    pub fn num_threads(self, num_threads: usize) -> Self {
        self.map(|inner| inner.num_threads(num_threads.min(bwos::MAX_THREADS)))
    }

    /// Makes the building thread worker 0 of the pool; see
    /// [`bwos::ThreadPoolBuilder::use_current_thread`].
    pub fn use_current_thread(self) -> Self {
        self.map(bwos::ThreadPoolBuilder::use_current_thread)
    }

    /// Handles panics of spawned work that nobody waits for. Without one,
    /// such a panic is reported on stderr and the pool carries on: **unlike
    /// rayon, which aborts the process** (see
    /// [`bwos::PoolStats::unhandled_panics`]).
    pub fn panic_handler<H>(self, panic_handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.map(|inner| inner.panic_handler(panic_handler))
    }

    /// The stack size of the threads, in bytes.
    pub fn stack_size(self, stack_size: usize) -> Self {
        self.map(|inner| inner.stack_size(stack_size))
    }

    /// Makes spawned jobs start oldest first; see
    /// [`bwos::ThreadPoolBuilder::breadth_first`].
    #[deprecated(note = "use `scope_fifo` and `spawn_fifo` for similar effect")]
    pub fn breadth_first(self) -> Self {
        self.map(bwos::ThreadPoolBuilder::breadth_first)
    }

    /// Called with its index on each thread when it starts.
    pub fn start_handler<H>(self, start_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.map(|inner| inner.start_handler(start_handler))
    }

    /// Called with its index on each thread when it exits.
    pub fn exit_handler<H>(self, exit_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.map(|inner| inner.exit_handler(exit_handler))
    }
}

impl<S> fmt::Debug for ThreadPoolBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// Why a pool could not be built.
#[derive(Debug)]
pub struct ThreadPoolBuildError(bwos::ThreadPoolBuildError);

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            // rayon-core's texts, which programs may compare against.
            bwos::ThreadPoolBuildError::GlobalPoolAlreadyInitialized => {
                f.write_str("The global thread pool has already been initialized.")
            }
            bwos::ThreadPoolBuildError::CurrentThreadAlreadyInPool => {
                f.write_str("The current thread is already part of another thread pool.")
            }
            bwos::ThreadPoolBuildError::Spawn(error) => error.fmt(f),
            other => other.fmt(f),
        }
    }
}

impl Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.0 {
            bwos::ThreadPoolBuildError::Spawn(error) => Some(error),
            _ => None,
        }
    }
}

/// rayon-core's old configuration type. Use [`ThreadPoolBuilder`] instead.
#[deprecated(note = "Use `ThreadPoolBuilder`")]
#[derive(Default)]
pub struct Configuration {
    builder: ThreadPoolBuilder,
}

#[allow(deprecated)]
impl Configuration {
    /// A configuration with the defaults.
    pub fn new() -> Configuration {
        Configuration::default()
    }

    /// Builds a pool.
    pub fn build(self) -> Result<ThreadPool, Box<dyn Error + 'static>> {
        self.builder.build().map_err(Box::from)
    }

    /// See [`ThreadPoolBuilder::thread_name`].
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.builder = self.builder.thread_name(closure);
        self
    }

    /// See [`ThreadPoolBuilder::num_threads`].
    pub fn num_threads(mut self, num_threads: usize) -> Configuration {
        self.builder = self.builder.num_threads(num_threads);
        self
    }

    /// See [`ThreadPoolBuilder::panic_handler`].
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Configuration
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.builder = self.builder.panic_handler(panic_handler);
        self
    }

    /// See [`ThreadPoolBuilder::stack_size`].
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.builder = self.builder.stack_size(stack_size);
        self
    }

    /// See [`ThreadPoolBuilder::breadth_first`].
    pub fn breadth_first(mut self) -> Self {
        self.builder = self.builder.breadth_first();
        self
    }

    /// See [`ThreadPoolBuilder::start_handler`].
    pub fn start_handler<H>(mut self, start_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.start_handler(start_handler);
        self
    }

    /// See [`ThreadPoolBuilder::exit_handler`].
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.exit_handler(exit_handler);
        self
    }

    pub(crate) fn into_builder(self) -> ThreadPoolBuilder {
        self.builder
    }
}

#[allow(deprecated)]
impl fmt::Debug for Configuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.builder.fmt(f)
    }
}

/// Builds the global pool from `config`. Deprecated in favour of
/// [`ThreadPoolBuilder::build_global`].
#[deprecated(note = "use `ThreadPoolBuilder::build_global`")]
#[allow(deprecated)]
pub fn initialize(config: Configuration) -> Result<(), Box<dyn Error>> {
    config.into_builder().build_global().map_err(Box::from)
}
