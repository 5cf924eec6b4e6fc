//! `ThreadPoolBuilder`: configuration, validation, and starting threads.

use std::any::Any;
use std::fmt;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use bwos_queue::{Config, fifo, lifo};

use super::ThreadPool;
use super::registry::{PanicHandler, Registry};
use crate::idle::{DEFAULT_SLEEP_THRESHOLD, IdleConfig, IdlePolicy};
use crate::steal::topology::Topology;
use crate::steal::{StealBatch, StealConfig, StealPolicy};
use crate::task::executor::task_queue_config;
use crate::worker::{WorkerSettings, WorkerThread, default_queue_config};

/// The environment variable that sets the default number of threads.
pub const NUM_THREADS_ENV: &str = "BWOS_NUM_THREADS";

/// The largest number of threads a pool may have.
pub const MAX_THREADS: usize = 1 << 16;

/// Configures and builds a [`ThreadPool`], or the global pool.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("solver-{i}"))
///     .build()?;
/// assert_eq!(pool.current_num_threads(), 2);
/// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Default)]
pub struct ThreadPoolBuilder {
    num_threads: usize,
    thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    stack_size: Option<usize>,
    panic_handler: Option<Box<PanicHandler>>,
    queue_config: Option<Config>,
    eager_join: bool,
    steal_policy: StealPolicy,
    probabilistic_steal: bool,
    steal_batch: StealBatch,
    idle_policy: IdlePolicy,
    sleep_threshold: Option<u32>,
    pin_threads: bool,
    yield_to_victim: bool,
}

impl ThreadPoolBuilder {
    /// A builder with the defaults: threads from `BWOS_NUM_THREADS` or the
    /// available parallelism, names `bwos-worker-{i}`, the main thread's
    /// stack size (see [`stack_size`](Self::stack_size)), no panic handler.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of worker threads. `0` (the default) means: the value of
    /// `BWOS_NUM_THREADS` if set (and not `0`), else
    /// [`std::thread::available_parallelism`]. At most [`MAX_THREADS`].
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = num_threads;
        self
    }

    /// Names worker `i` with `name(i)`.
    pub fn thread_name<F>(mut self, name: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.thread_name = Some(Box::new(name));
        self
    }

    /// The stack size of the worker threads, in bytes. Waiting joins run
    /// other jobs on top of their frame, so deep recursions may need more
    /// than a plain thread would.
    ///
    /// Without this call the workers get the main thread's stack size (the
    /// soft `RLIMIT_STACK`, 8 MiB on most Linux systems, at least 2 MiB and
    /// at most 64 MiB), not std's 2 MiB for spawned threads: a recursion
    /// that runs serially on the main thread then also runs on the pool.
    /// The fork/join suite's binomial UTS tree (deep and lopsided) overflowed
    /// 2 MiB worker stacks on bwos and on rayon, and ran on the main
    /// thread. The stack is reserved address space; only the pages a
    /// recursion touches become resident. If `RUST_MIN_STACK` is set, std's
    /// setting applies instead, as for any thread.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .stack_size(16 << 20)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.install(|| 1 + 1), 2);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Handles panics of jobs started with [`spawn`](crate::spawn), which
    /// nobody waits for. Without a handler such a panic aborts the process
    /// (after the panic message is printed), so it cannot go unnoticed.
    /// Panics in `join`, `scope` and `install` always reach their caller.
    pub fn panic_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Box::new(handler));
        self
    }

    /// The geometry of each worker's BWoS job queue. The default, 32 blocks
    /// of 32 jobs, suits fork/join: a worker's queue holds one job per
    /// pending `join` on its current path and per queued scope spawn. When
    /// a worker's queue is full, `join` runs both closures itself and
    /// spawned jobs go to the pool's shared injector queue: nothing is
    /// lost, only less work is stealable. Tiny geometries are useful in
    /// tests, to make that full-queue path run.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .queue_config(bwos::QueueConfig::new(2, 1)?) // room for two jobs
    ///     .build()?;
    /// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn queue_config(mut self, config: Config) -> Self {
        self.queue_config = Some(config);
        self
    }

    /// Whether `join` queues `b` lazily (the default, `true`): once a
    /// worker holds a private job and no other worker is hungry, a deeper
    /// `join` runs `a` and then `b` directly instead of queueing `b` for
    /// thieves that are not looking (see `join`'s docs; on the fork/join
    /// benchmarks this makes fine-grained joins several times cheaper).
    /// With `false` every `join` queues `b`, as rayon does: very
    /// unbalanced recursions expose more parallelism, at a higher cost per
    /// join.
    pub fn lazy_queueing(mut self, lazy: bool) -> Self {
        self.eager_join = !lazy;
        self
    }

    /// How a hungry worker picks its first victim (default:
    /// [`StealPolicy::Random`]). `BestOfMany { candidates: 0 }` makes
    /// [`build`](Self::build) fail with
    /// [`ThreadPoolBuildError::InvalidOption`].
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .steal_policy(bwos::StealPolicy::LastVictim)
    ///     .build()?;
    /// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn steal_policy(mut self, policy: StealPolicy) -> Self {
        self.steal_policy = policy;
        self
    }

    /// Whether the selector's proposals pass the BWoS paper's
    /// probabilistic acceptance (`P_accept`, section 3.4): a proposed
    /// victim is accepted with the probability that a randomly sampled
    /// block of its queue holds stealable jobs, otherwise another is
    /// proposed (up to once per worker). Default `false` (see the README's
    /// policy table).
    pub fn probabilistic_steal(mut self, probabilistic: bool) -> Self {
        self.probabilistic_steal = probabilistic;
        self
    }

    /// How much a steal takes: one job (the default) or the victim's
    /// oldest block of jobs.
    pub fn steal_batch(mut self, batch: StealBatch) -> Self {
        self.steal_batch = batch;
        self
    }

    /// What idle workers do (default: [`IdlePolicy::Park`]). See
    /// [`IdlePolicy`].
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .idle_policy(bwos::IdlePolicy::Balanced)
    ///     .build()?;
    /// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn idle_policy(mut self, policy: IdlePolicy) -> Self {
        self.idle_policy = policy;
        self
    }

    /// Failed steal attempts (one per victim found empty, one per round in
    /// a pool of one thread) before a thief may sleep: BWS's
    /// `SleepThreshold`. Default [`DEFAULT_SLEEP_THRESHOLD`]. `0` makes
    /// [`build`](Self::build) fail with
    /// [`ThreadPoolBuildError::InvalidOption`].
    ///
    /// [`DEFAULT_SLEEP_THRESHOLD`]: crate::DEFAULT_SLEEP_THRESHOLD
    pub fn sleep_threshold(mut self, attempts: u32) -> Self {
        self.sleep_threshold = Some(attempts);
        self
    }

    /// Pins worker `i` to the `i`-th CPU the process may run on (modulo
    /// their number), so that [`StealPolicy::Topology`] knows where each
    /// worker runs. Linux only: elsewhere, or if the kernel refuses,
    /// [`build`](Self::build) fails with [`ThreadPoolBuildError::Pin`].
    /// Default `false`: workers go where the OS puts them, and publish the
    /// CPU they last ran on.
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin_threads = pin;
        self
    }

    /// Whether [`IdlePolicy::Balanced`] thieves yield their core to a busy
    /// victim that seems preempted on it (default `false`: measured with
    /// `bwos-bench corun`, it fired a handful of times per run and its
    /// effect was within noise; see the README). For measuring the
    /// heuristic; not part of the stable API.
    #[doc(hidden)]
    pub fn yield_to_victim(mut self, enabled: bool) -> Self {
        self.yield_to_victim = enabled;
        self
    }

    /// Checks the options that have constraints.
    fn validate(&self) -> Result<(), ThreadPoolBuildError> {
        if let StealPolicy::BestOfMany { candidates: 0 } = self.steal_policy {
            return Err(ThreadPoolBuildError::InvalidOption {
                option: "steal_policy",
                value: "BestOfMany { candidates: 0 }".into(),
                allowed: "BestOfMany needs at least 1 candidate (more than the other \
                          workers samples each of them once)",
            });
        }
        if self.sleep_threshold == Some(0) {
            return Err(ThreadPoolBuildError::InvalidOption {
                option: "sleep_threshold",
                value: "0".into(),
                allowed: "a thief needs at least 1 failed steal attempt before it sleeps: \
                          use 1 to 4294967295",
            });
        }
        Ok(())
    }

    /// The number of threads the pool will have, or why the configuration
    /// is invalid.
    pub fn resolved_num_threads(&self) -> Result<usize, ThreadPoolBuildError> {
        let requested = if self.num_threads > 0 {
            self.num_threads
        } else {
            match std::env::var(NUM_THREADS_ENV) {
                Ok(value) => match value.trim().parse::<usize>() {
                    Ok(0) => default_parallelism(),
                    Ok(n) => n,
                    Err(_) => return Err(ThreadPoolBuildError::InvalidEnvironment { value }),
                },
                Err(std::env::VarError::NotPresent) => default_parallelism(),
                Err(std::env::VarError::NotUnicode(value)) => {
                    return Err(ThreadPoolBuildError::InvalidEnvironment {
                        value: value.to_string_lossy().into_owned(),
                    });
                }
            }
        };
        if requested > MAX_THREADS {
            return Err(ThreadPoolBuildError::TooManyThreads { requested });
        }
        Ok(requested)
    }

    /// Starts the threads. Returns once every worker is running.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        self.validate()?;
        let num_threads = self.resolved_num_threads()?;
        let mut name = self.thread_name;
        let (queues, stealers): (Vec<_>, Vec<_>) = (0..num_threads)
            .map(|_| lifo::new(self.queue_config.unwrap_or_else(default_queue_config)))
            .unzip();
        let settings = WorkerSettings {
            lazy_queueing: !self.eager_join,
            topology: (self.steal_policy == StealPolicy::Topology)
                .then(|| Arc::new(Topology::detect())),
            steal: StealConfig {
                policy: self.steal_policy,
                probabilistic: self.probabilistic_steal,
                batch: self.steal_batch,
            },
            idle: IdleConfig {
                policy: self.idle_policy,
                sleep_threshold: self.sleep_threshold.unwrap_or(DEFAULT_SLEEP_THRESHOLD),
                yield_to_victim: self.yield_to_victim,
                oversubscribed: num_threads > default_parallelism(),
            },
            pin_threads: self.pin_threads,
        };
        let (task_queues, task_stealers): (Vec<_>, Vec<_>) = (0..num_threads)
            .map(|_| fifo::new(task_queue_config()))
            .unzip();
        let registry = Arc::new(Registry::new(stealers, task_stealers, self.panic_handler));
        let started = Arc::new(Started::default());
        let mut handles = Vec::with_capacity(num_threads);
        for (index, (queue, tasks)) in queues.into_iter().zip(task_queues).enumerate() {
            let mut thread = thread::Builder::new().name(match &mut name {
                Some(name) => name(index),
                None => format!("bwos-worker-{index}"),
            });
            if let Some(bytes) = self.stack_size.or_else(main_thread_stack_size) {
                thread = thread.stack_size(bytes);
            }
            let worker_registry = Arc::clone(&registry);
            let worker_started = Arc::clone(&started);
            let worker_settings = settings.clone();
            match thread.spawn(move || {
                WorkerThread::main(
                    worker_registry,
                    index,
                    queue,
                    tasks,
                    worker_settings,
                    worker_started,
                )
            }) {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    // Stop and join the workers started so far.
                    started.wait_for(handles.len());
                    registry.add_handles(handles);
                    drop(ThreadPool { registry });
                    return Err(ThreadPoolBuildError::Spawn(error));
                }
            }
        }
        started.wait_for(num_threads);
        registry.add_handles(handles);
        let pool = ThreadPool { registry };
        if let Some((worker, error)) = started.take_failure() {
            drop(pool);
            return Err(ThreadPoolBuildError::Pin { worker, error });
        }
        Ok(pool)
    }

    /// Builds the global pool used by the free functions outside any pool.
    ///
    /// # Errors
    /// [`ThreadPoolBuildError::GlobalPoolAlreadyInitialized`] if it exists
    /// already (the free functions create it on first use),
    /// [`ThreadPoolBuildError::GlobalPoolBuildFailed`] if that first-use
    /// build failed (it is not retried), or the error of this build, in
    /// which case nothing is stored and the call may be repeated.
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        super::global::set(self)
    }
}

/// Counts the workers that registered their thread handle, so that the
/// pool is returned only when every worker can be woken.
#[derive(Default)]
pub(crate) struct Started {
    state: Mutex<StartState>,
    all: Condvar,
}

#[derive(Default)]
struct StartState {
    count: usize,
    /// The first worker that could not be set up as asked (pinning).
    failure: Option<(usize, io::Error)>,
}

impl Started {
    pub(crate) fn worker_started(&self) {
        self.lock().count += 1;
        self.all.notify_all();
    }

    /// Worker `index` could not be set up as configured; `build` stops the
    /// pool and returns the error.
    pub(crate) fn worker_failed(&self, index: usize, error: io::Error) {
        self.lock().failure.get_or_insert((index, error));
    }

    fn take_failure(&self) -> Option<(usize, io::Error)> {
        self.lock().failure.take()
    }

    fn wait_for(&self, workers: usize) {
        let mut state = self.lock();
        while state.count < workers {
            state = self
                .all
                .wait(state)
                .unwrap_or_else(|poison| poison.into_inner());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StartState> {
        // Nothing panics while holding this lock.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

fn default_parallelism() -> usize {
    thread::available_parallelism().map_or(1, usize::from)
}

impl fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("thread_name", &self.thread_name.is_some())
            .field("stack_size", &self.stack_size)
            .field("panic_handler", &self.panic_handler.is_some())
            .field("queue_config", &self.queue_config)
            .field("lazy_queueing", &!self.eager_join)
            .field("steal_policy", &self.steal_policy)
            .field("probabilistic_steal", &self.probabilistic_steal)
            .field("steal_batch", &self.steal_batch)
            .field("idle_policy", &self.idle_policy)
            .field("sleep_threshold", &self.sleep_threshold)
            .field("pin_threads", &self.pin_threads)
            .finish()
    }
}

/// Why a pool could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum ThreadPoolBuildError {
    /// `BWOS_NUM_THREADS` is not a number.
    InvalidEnvironment {
        /// The variable's value.
        value: String,
    },
    /// More threads than [`MAX_THREADS`] were asked for.
    TooManyThreads {
        /// The number asked for.
        requested: usize,
    },
    /// The global pool exists already.
    GlobalPoolAlreadyInitialized,
    /// Building the global pool on first use failed earlier; the failure is
    /// kept and the build not retried.
    GlobalPoolBuildFailed {
        /// The message of the original build error.
        reason: String,
    },
    /// The operating system refused to start a thread.
    Spawn(io::Error),
    /// An option has a value it does not allow.
    InvalidOption {
        /// The builder method.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// A worker could not be pinned to a CPU
    /// ([`ThreadPoolBuilder::pin_threads`]).
    Pin {
        /// The worker's index.
        worker: usize,
        /// Why the OS refused.
        error: io::Error,
    },
}

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadPoolBuildError::InvalidEnvironment { value } => write!(
                f,
                "{NUM_THREADS_ENV}={value:?} is not a number of threads: \
                 use a whole number from 1 to {MAX_THREADS}, or 0 for one thread per core"
            ),
            ThreadPoolBuildError::TooManyThreads { requested } => write!(
                f,
                "a pool of {requested} threads was requested; at most {MAX_THREADS} are allowed"
            ),
            ThreadPoolBuildError::GlobalPoolAlreadyInitialized => f.write_str(
                "the global thread pool exists already (build_global must come before \
                 the first use of the free functions)",
            ),
            ThreadPoolBuildError::GlobalPoolBuildFailed { reason } => write!(
                f,
                "the global thread pool failed to build on first use ({reason}); the \
                 failure is kept and the build is not retried: fix the cause and restart, \
                 or call build_global before the first use of the free functions"
            ),
            ThreadPoolBuildError::Spawn(error) => {
                write!(f, "could not start a worker thread: {error}")
            }
            ThreadPoolBuildError::InvalidOption {
                option,
                value,
                allowed,
            } => write!(
                f,
                "ThreadPoolBuilder::{option}({value}) is invalid: {allowed}"
            ),
            ThreadPoolBuildError::Pin { worker, error } => {
                write!(f, "could not pin worker {worker} to a CPU: {error}")
            }
        }
    }
}

impl std::error::Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ThreadPoolBuildError::Spawn(error) | ThreadPoolBuildError::Pin { error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }
}

/// The default worker stack size: the main thread's, that is the soft
/// `RLIMIT_STACK`, clamped to 2..=64 MiB (an unlimited limit gives 64 MiB).
/// `None` (std's choice) when `RUST_MIN_STACK` is set or the limit cannot
/// be read.
fn main_thread_stack_size() -> Option<usize> {
    const MIN: usize = 2 << 20;
    const MAX: usize = 64 << 20;
    // Miri does not model `getrlimit`: std's default there.
    if cfg!(miri) || std::env::var_os("RUST_MIN_STACK").is_some() {
        return None;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` only writes one `rlimit` into the struct it is
    // given, which lives on this frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur == libc::RLIM_INFINITY {
        return Some(MAX);
    }
    Some(usize::try_from(limit.rlim_cur).map_or(MAX, |bytes| bytes.clamp(MIN, MAX)))
}
