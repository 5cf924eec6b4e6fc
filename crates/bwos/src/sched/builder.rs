//! `ThreadPoolBuilder`: the options of a pool and their validation. The
//! threads are started in `start.rs`; the errors are `error.rs`'s.

use std::any::Any;
use std::fmt;
use std::io;
use std::thread;
use std::time::Duration;

use bwos_queue::Config;

use super::blocking::{DEFAULT_BLOCKING_KEEP_ALIVE, DEFAULT_MAX_BLOCKING_THREADS};
use super::error::ThreadPoolBuildError;
use super::idle::{IdleConfig, IdlePolicy, default_sleep_threshold};
use super::long_polls::{
    DEFAULT_LONG_POLL_THRESHOLD, MAX_LONG_POLL_THRESHOLD, MIN_LONG_POLL_THRESHOLD,
};
use super::num_threads::{
    MAX_THREADS, NUM_THREADS_ENV, RAYON_NUM_THREADS_ENV, default_parallelism,
};
use super::pool::ThreadPool;
use super::queues::default_queue_config;
use super::registry::{PanicHandler, RegistryOptions, ThreadHandler};
use super::start::{StartOptions, ThreadBuilder, main_thread_stack_size, start};
use super::steal::{StealBatch, StealConfig, StealPolicy};

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
///
/// # Tasks next to long polls and parallel computations
/// Not options, but what every pool does (see `docs/usage.md`): a worker
/// running fork/join jobs (a `join`, `scope` or parallel iterator, inside
/// a task or not) polls the sockets, fires due timers and runs ready tasks
/// every 100 µs of such work, on top of the job's frame, for at most
/// 50 µs at a time: a light task waits about one such slice while a
/// computation occupies every worker, and the computation gives up about
/// 1% when nothing is ready. Before each poll, a worker that sees an idle
/// worker lets it take the tasks queued behind that poll; the timers'
/// watch passes to a sleeping worker whenever its holder wakes; and
/// [`task::block_in_place`](crate::task::block_in_place) moves a worker
/// to another thread while a call blocks.
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
    start_handler: Option<Box<ThreadHandler>>,
    exit_handler: Option<Box<ThreadHandler>>,
    use_current_thread: bool,
    breadth_first: bool,
    detach_threads_on_drop: bool,
    max_blocking_threads: Option<usize>,
    blocking_keep_alive: Option<Duration>,
    long_poll_threshold: Option<Duration>,
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

    /// Calls `handler(index)` on each worker thread when it starts, before
    /// it runs any work. A panic in it goes to the
    /// [`panic_handler`](Self::panic_handler) (reported and counted without
    /// one).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// static STARTED: AtomicUsize = AtomicUsize::new(0);
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .start_handler(|_index| { STARTED.fetch_add(1, Ordering::Relaxed); })
    ///     .build()?;
    /// drop(pool); // joins the workers
    /// assert_eq!(STARTED.load(Ordering::Relaxed), 2);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn start_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.start_handler = Some(Box::new(handler));
        self
    }

    /// Calls `handler(index)` on each worker thread when it exits, after
    /// its last job. A panic in it goes to the
    /// [`panic_handler`](Self::panic_handler) (reported and counted without
    /// one). The
    /// thread that built the pool with
    /// [`use_current_thread`](Self::use_current_thread) never exits the
    /// pool, so it never calls it.
    pub fn exit_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.exit_handler = Some(Box::new(handler));
        self
    }

    /// Makes the thread that calls [`build`](Self::build) worker 0 of the
    /// pool, for the rest of its life; one thread fewer is started. That
    /// thread does not run the scheduler loop: it runs pool work only
    /// while it waits for some (`join`, `scope`, `install` or `broadcast`
    /// from it, [`yield_now`](crate::yield_now)). Its detached spawns go to
    /// the pool's injector, where the other workers find them. `build`
    /// fails with [`ThreadPoolBuildError::CurrentThreadAlreadyInPool`] on
    /// a thread that is already a worker of some pool.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .use_current_thread()
    ///     .build()?;
    /// assert_eq!(bwos::current_thread_index(), Some(0));
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn use_current_thread(mut self) -> Self {
        self.use_current_thread = true;
        self
    }

    /// Queues [`spawn`](crate::spawn) and [`Scope::spawn`](crate::Scope::spawn)
    /// jobs as their FIFO versions do ([`spawn_fifo`](crate::spawn_fifo),
    /// [`ScopeFifo::spawn_fifo`](crate::ScopeFifo::spawn_fifo)), so that a
    /// worker starts its spawns oldest first. `join` stays depth-first
    /// (rayon's `breadth_first` also made joins FIFO, which bwos's queue
    /// does not do; rayon itself discourages the option).
    pub fn breadth_first(mut self) -> Self {
        self.breadth_first = true;
        self
    }

    /// Whether dropping the pool returns at once (`true`) or waits for its
    /// threads to exit (`false`, the default). Either way the threads run
    /// the queued and spawned work before they stop; `true` is rayon's
    /// behaviour.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .detach_threads_on_drop(true)
    ///     .build()?;
    /// let (sender, receiver) = std::sync::mpsc::channel();
    /// pool.spawn(move || sender.send(42).unwrap());
    /// drop(pool); // returns at once; the spawned job still runs
    /// assert_eq!(receiver.recv().unwrap(), 42);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn detach_threads_on_drop(mut self, detach: bool) -> Self {
        self.detach_threads_on_drop = detach;
        self
    }

    /// The most threads that run [`spawn_blocking`](crate::task::spawn_blocking)
    /// closures at once (default 512, as tokio). They are started on
    /// demand, apart from the workers; a closure that finds them all busy
    /// waits in a queue for the first to finish. `0` makes
    /// [`build`](Self::build) fail with
    /// [`ThreadPoolBuildError::InvalidOption`].
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .max_blocking_threads(4)
    ///     .build()?;
    /// let handle = pool.spawn_blocking(|| std::fs::read_to_string("/nonexistent").is_err());
    /// assert!(pool.block_on(handle).unwrap());
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn max_blocking_threads(mut self, threads: usize) -> Self {
        self.max_blocking_threads = Some(threads);
        self
    }

    /// How long a blocking thread waits for another closure before it
    /// exits (default 10 s, as tokio). A pool that stopped calling
    /// [`spawn_blocking`](crate::task::spawn_blocking) holds no blocking
    /// threads after this long. The threads that run a worker during a
    /// [`block_in_place`](crate::task::block_in_place) (or a `block_on` on
    /// a worker) wait as long for the next one.
    pub fn blocking_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.blocking_keep_alive = Some(keep_alive);
        self
    }

    /// How long a task's poll may run before it counts as long, in
    /// [`PoolStats::long_polls`](crate::PoolStats::long_polls) (default
    /// 10 ms). A poll that long holds up every task queued behind it on its
    /// worker; see `docs/usage.md` ("Long polls") for finding the culprit.
    ///
    /// Allowed: from 1 ms to 1 hour; anything else makes
    /// [`build`](Self::build) fail with
    /// [`ThreadPoolBuildError::InvalidOption`].
    ///
    /// Polls run back to back are timed in groups (on x86_64 by the CPU's
    /// time-stamp counter, which is assumed to tick at 250 MHz or more),
    /// so that short polls pay for no clock read: a group grows while its
    /// polls take well under a 64th of the threshold, up to 128 polls, and
    /// falls to one poll as soon as a poll is long. A group longer than the
    /// threshold counts once: right after a run of short polls, two long
    /// polls in a row may count as one, and a group of many polls that all
    /// became 64 times longer at once counts as one long poll. A poll that
    /// completes its task is counted before its
    /// [`JoinHandle`](crate::task::JoinHandle) resolves.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .long_poll_threshold(Duration::from_millis(5))
    ///     .build()?;
    /// let busy = pool.spawn_task(async {
    ///     // Holds the worker for 20 ms without yielding.
    ///     let start = Instant::now();
    ///     while start.elapsed() < Duration::from_millis(20) {}
    /// });
    /// pool.block_on(busy).unwrap();
    /// assert_eq!(pool.stats().long_polls, 1);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn long_poll_threshold(mut self, threshold: Duration) -> Self {
        self.long_poll_threshold = Some(threshold);
        self
    }

    /// Handles panics nobody waits for: of jobs started with
    /// [`spawn`](crate::spawn), [`spawn_fifo`](crate::spawn_fifo) and
    /// [`spawn_broadcast`](crate::spawn_broadcast), and of the
    /// [`start_handler`](Self::start_handler) and
    /// [`exit_handler`](Self::exit_handler). Without a handler (or when the
    /// handler itself panics) such a panic is not lost and never aborts the
    /// process: after the panic hook's own message it is reported on
    /// stderr, counted in [`PoolStats::unhandled_panics`](crate::PoolStats::unhandled_panics)
    /// and dropped, and the pool carries on. Panics in `join`, `scope` and
    /// `install` always reach their caller, and a task's panic its
    /// [`JoinHandle`](crate::task::JoinHandle).
    ///
    /// ```
    /// use std::sync::mpsc;
    ///
    /// let (sender, panics) = mpsc::channel();
    /// let sender = std::sync::Mutex::new(sender);
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .panic_handler(move |payload| {
    ///         let message = payload.downcast_ref::<&str>().copied().unwrap_or("?");
    ///         sender.lock().unwrap().send(message.to_string()).unwrap();
    ///     })
    ///     .build()?;
    /// pool.spawn(|| panic!("detached"));
    /// assert_eq!(panics.recv().unwrap(), "detached");
    /// assert_eq!(pool.stats().unhandled_panics, 0);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
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
    /// worker holds a private job and no other worker is idle, a deeper
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

    /// How an idle worker picks its first victim (default:
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
    /// `SleepThreshold`. Default: [`DEFAULT_SLEEP_THRESHOLD`] per other
    /// worker (32 failed rounds; 32 attempts with 2 workers, 224 with 8),
    /// except under [`IdlePolicy::Balanced`], which keeps 32 attempts.
    /// `0` makes [`build`](Self::build) fail with
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
    /// CPU they last ran on. One exception, on Linux, in pools with no more
    /// workers than CPUs and an idle policy other than
    /// [`IdlePolicy::Balanced`]: a worker woken onto the CPU of the worker that
    /// woke it moves to another CPU at once (its affinity briefly excludes
    /// that CPU, then is set back to exactly what it was), since a kernel
    /// that keeps both on one CPU while another idles makes the work
    /// shared with the wakee wait for the waker.
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin_threads = pin;
        self
    }

    /// Whether [`IdlePolicy::Balanced`] thieves yield their core to a busy
    /// victim that seems preempted on it: BWS's second heuristic (the
    /// paper's `yield_to` of the victim's thread, approximated by a
    /// `sched_yield` when the victim last ran on the thief's CPU, which
    /// only Linux reports: elsewhere it never fires). Default `false`: measured with `bwos-bench
    /// corun`, it fired a handful of times per run and its effect was
    /// within noise (`docs/policies.md`). No effect with other idle
    /// policies; [`PoolStats::yields_to_victim`](crate::PoolStats) counts
    /// the yields.
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .idle_policy(bwos::IdlePolicy::Balanced)
    ///     .yield_to_victim(true)
    ///     .build()?;
    /// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn yield_to_victim(mut self, enabled: bool) -> Self {
        self.yield_to_victim = enabled;
        self
    }

    /// The options checked, with their defaults filled in, as `start` takes
    /// them.
    fn start_options(self) -> Result<StartOptions, ThreadPoolBuildError> {
        self.validate()?;
        let num_threads = self.resolved_num_threads()?;
        let idle = self.idle_config(num_threads);
        Ok(StartOptions {
            num_threads,
            thread_name: self.thread_name,
            queue_config: self.queue_config.unwrap_or_else(default_queue_config),
            lazy_queueing: !self.eager_join,
            steal: StealConfig {
                policy: self.steal_policy,
                probabilistic: self.probabilistic_steal,
                batch: self.steal_batch,
            },
            idle,
            pin_threads: self.pin_threads,
            join_on_drop: !self.detach_threads_on_drop,
            registry: RegistryOptions {
                panic_handler: self.panic_handler,
                start_handler: self.start_handler,
                exit_handler: self.exit_handler,
                breadth_first: self.breadth_first,
                uses_building_thread: self.use_current_thread,
                max_blocking_threads: self
                    .max_blocking_threads
                    .unwrap_or(DEFAULT_MAX_BLOCKING_THREADS),
                blocking_keep_alive: self
                    .blocking_keep_alive
                    .unwrap_or(DEFAULT_BLOCKING_KEEP_ALIVE),
                worker_stack_size: self.stack_size,
                long_poll_threshold: self
                    .long_poll_threshold
                    .unwrap_or(DEFAULT_LONG_POLL_THRESHOLD),
            },
        })
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
        if self.max_blocking_threads == Some(0) {
            return Err(ThreadPoolBuildError::InvalidOption {
                option: "max_blocking_threads",
                value: "0".into(),
                allowed: "spawn_blocking needs at least 1 thread: use 1 or more \
                          (the default is 512)",
            });
        }
        if let Some(threshold) = self.long_poll_threshold
            && !(MIN_LONG_POLL_THRESHOLD..=MAX_LONG_POLL_THRESHOLD).contains(&threshold)
        {
            return Err(ThreadPoolBuildError::InvalidOption {
                option: "long_poll_threshold",
                value: format!("{threshold:?}"),
                allowed: "a poll counts as long after 1 ms to 1 hour (the default is 10 ms)",
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
                Err(std::env::VarError::NotPresent) => match std::env::var(RAYON_NUM_THREADS_ENV)
                    .ok()
                    .and_then(|value| value.trim().parse::<usize>().ok())
                {
                    Some(n) if n > 0 => n,
                    _ => default_parallelism(),
                },
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

    /// The idle settings of a pool of `num_threads` workers.
    fn idle_config(&self, num_threads: usize) -> IdleConfig {
        IdleConfig {
            policy: self.idle_policy,
            sleep_threshold: self
                .sleep_threshold
                .unwrap_or_else(|| default_sleep_threshold(self.idle_policy, num_threads)),
            yield_to_victim: self.yield_to_victim,
            oversubscribed: num_threads > default_parallelism(),
        }
    }

    /// Starts the threads. Returns once every worker is running.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        start(self.start_options()?, &mut |thread| {
            let mut builder = thread::Builder::new().name(match thread.name() {
                Some(name) => name.to_owned(),
                None => format!("bwos-worker-{}", thread.index()),
            });
            if let Some(bytes) = thread.stack_size().or_else(main_thread_stack_size) {
                builder = builder.stack_size(bytes);
            }
            builder.spawn(move || thread.run()).map(Some)
        })
    }

    /// Builds the pool with `spawn` starting its threads: `spawn` gets a
    /// [`ThreadBuilder`] per worker and must start a thread that calls its
    /// [`run`](ThreadBuilder::run), without waiting for this call to
    /// return (it waits until every worker runs). An error from `spawn`
    /// stops the workers started so far and is returned as
    /// [`ThreadPoolBuildError::Spawn`].
    ///
    /// The pool does not join threads it did not start: dropping it stops
    /// them, and whoever started them joins them if that matters.
    ///
    /// ```
    /// let mut handles = Vec::new();
    /// let pool = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .build_with_spawn_handler(|thread| {
    ///         handles.push(std::thread::Builder::new().spawn(move || thread.run())?);
    ///         Ok(())
    ///     })?;
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// drop(pool);
    /// for handle in handles {
    ///     handle.join().unwrap();
    /// }
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn build_with_spawn_handler<F>(
        self,
        mut spawn: F,
    ) -> Result<ThreadPool, ThreadPoolBuildError>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        start(self.start_options()?, &mut |thread| {
            spawn(thread).map(|()| None)
        })
    }

    /// Builds a pool whose threads are scoped threads of this call, runs
    /// `with_pool` with it, drops it and returns once its threads have
    /// exited. Each thread runs `wrapper(thread)`, which must call
    /// [`thread.run()`](ThreadBuilder::run): the wrapper may set up state
    /// that borrows from the caller (scoped thread-locals, for instance).
    ///
    /// ```
    /// let data = vec![1, 2, 3];
    /// let sum = bwos::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .build_scoped(
    ///         |thread| thread.run(),
    ///         |pool| pool.install(|| data.iter().sum::<i32>()),
    ///     )?;
    /// assert_eq!(sum, 6);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn build_scoped<W, F, R>(self, wrapper: W, with_pool: F) -> Result<R, ThreadPoolBuildError>
    where
        W: Fn(ThreadBuilder) + Sync,
        F: FnOnce(&ThreadPool) -> R,
    {
        thread::scope(|scope| {
            let wrapper = &wrapper;
            let pool = self.build_with_spawn_handler(|thread| {
                let mut builder = thread::Builder::new();
                if let Some(name) = thread.name() {
                    builder = builder.name(name.to_owned());
                }
                if let Some(bytes) = thread.stack_size().or_else(main_thread_stack_size) {
                    builder = builder.stack_size(bytes);
                }
                builder.spawn_scoped(scope, move || wrapper(thread))?;
                Ok(())
            })?;
            Ok(with_pool(&pool))
        })
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
        super::global::set(|| self.build())
    }

    /// [`build_global`](Self::build_global) with threads started by
    /// `spawn`, as in [`build_with_spawn_handler`](Self::build_with_spawn_handler).
    pub fn build_global_with_spawn_handler<F>(self, spawn: F) -> Result<(), ThreadPoolBuildError>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        super::global::set(|| self.build_with_spawn_handler(spawn))
    }
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
            .field("start_handler", &self.start_handler.is_some())
            .field("exit_handler", &self.exit_handler.is_some())
            .field("use_current_thread", &self.use_current_thread)
            .field("breadth_first", &self.breadth_first)
            .field("detach_threads_on_drop", &self.detach_threads_on_drop)
            .field("max_blocking_threads", &self.max_blocking_threads)
            .field("blocking_keep_alive", &self.blocking_keep_alive)
            .field("long_poll_threshold", &self.long_poll_threshold)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_sleep_threshold_is_32_failed_rounds_except_under_balanced() {
        for policy in [IdlePolicy::Spin, IdlePolicy::Yield, IdlePolicy::Park] {
            let builder = ThreadPoolBuilder::new().idle_policy(policy);
            for (workers, attempts) in [(1, 32), (2, 32), (4, 96), (8, 224)] {
                assert_eq!(
                    builder.idle_config(workers).sleep_threshold,
                    attempts,
                    "default sleep threshold of a pool of {workers} under {policy:?}"
                );
            }
        }
        let balanced = ThreadPoolBuilder::new().idle_policy(IdlePolicy::Balanced);
        assert_eq!(balanced.idle_config(8).sleep_threshold, 32);
        let explicit = ThreadPoolBuilder::new().sleep_threshold(5);
        assert_eq!(explicit.idle_config(8).sleep_threshold, 5);
    }
}
