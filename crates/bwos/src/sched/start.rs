//! Starting a pool's threads: the registry and the workers' queues are
//! made, each worker thread is started (by bwos, or by the user's spawn
//! handler through a [`ThreadBuilder`]) and registers itself, and the
//! pool is returned once every worker can be woken.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread;

use bwos_queue::{Config, fifo, lifo};

use super::clock;
use super::error::ThreadPoolBuildError;
use super::idle::IdleConfig;
use super::job::AbortOnUnwind;
use super::pool::ThreadPool;
use super::queues::task_queue_config;
use super::registry::{Registry, RegistryOptions};
use super::shutdown;
use super::steal::topology::{Topology, pin_current_thread};
use super::steal::{StealConfig, StealPolicy};
use super::worker::{Started, WorkerSettings, WorkerThread};

/// What [`start`] needs to start a pool: `ThreadPoolBuilder`'s options,
/// checked, with the defaults filled in.
pub(crate) struct StartOptions {
    pub(crate) num_threads: usize,
    /// Names worker `i`; without it, bwos's own threads are
    /// `bwos-worker-{i}` (a spawn handler names its threads itself).
    pub(crate) thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    pub(crate) queue_config: Config,
    pub(crate) lazy_queueing: bool,
    pub(crate) steal: StealConfig,
    pub(crate) idle: IdleConfig,
    /// Pin worker `i` to the `i`-th allowed CPU.
    pub(crate) pin_threads: bool,
    /// Whether dropping the last `ThreadPool` handle joins the threads.
    pub(crate) join_on_drop: bool,
    /// What the registry keeps: the handlers, the blocking pool's bounds,
    /// the stack size, whether the building thread is worker 0.
    pub(crate) registry: RegistryOptions,
}

/// Starts the threads of a pool with `spawn`, which returns the handle of
/// a thread the pool should join when it is dropped.
pub(crate) fn start(
    options: StartOptions,
    spawn: &mut dyn FnMut(ThreadBuilder) -> io::Result<Option<thread::JoinHandle<()>>>,
) -> Result<ThreadPool, ThreadPoolBuildError> {
    let StartOptions {
        num_threads,
        thread_name: mut name,
        queue_config,
        lazy_queueing,
        steal,
        idle,
        pin_threads,
        join_on_drop,
        registry: registry_options,
    } = options;
    let use_current_thread = registry_options.uses_building_thread;
    let stack_size = registry_options.worker_stack_size;
    if use_current_thread && WorkerThread::with_own(|worker| worker.is_some()) {
        return Err(ThreadPoolBuildError::CurrentThreadAlreadyInPool);
    }
    let (queues, stealers): (Vec<_>, Vec<_>) =
        (0..num_threads).map(|_| lifo::new(queue_config)).unzip();
    let settings = WorkerSettings {
        lazy_queueing,
        topology: (steal.policy == StealPolicy::Topology).then(|| Arc::new(Topology::detect())),
        steal,
        idle,
        pin_threads,
    };
    let (task_queues, task_stealers): (Vec<_>, Vec<_>) = (0..num_threads)
        .map(|_| fifo::new(task_queue_config()))
        .unzip();
    // The poll clock measures its rate from here, before any poll.
    clock::init();
    let registry = Arc::new(Registry::new(
        stealers,
        task_stealers,
        registry_options,
        join_on_drop,
    ));
    let started = Arc::new(Started::default());
    let mut handles = Vec::with_capacity(num_threads);
    let mut spawned = 0;
    let mut building_worker = None;
    for (index, (queue, tasks)) in queues.into_iter().zip(task_queues).enumerate() {
        if index == 0 && use_current_thread {
            building_worker = Some((queue, tasks));
            continue;
        }
        let worker_registry = Arc::clone(&registry);
        let worker_started = Arc::clone(&started);
        let worker_settings = settings.clone();
        let thread = ThreadBuilder {
            index,
            name: name.as_mut().map(|name| name(index)),
            stack_size,
            body: Box::new(move || {
                WorkerThread::main(
                    Arc::clone(&worker_registry),
                    index,
                    queue,
                    tasks,
                    worker_settings,
                    worker_started,
                );
                // The thread is no worker any more: it reports to the
                // pool's shutdown (step 3 in `shutdown.rs`).
                let guard = AbortOnUnwind::new("a worker thread's shutdown");
                shutdown::worker_shut_down(&worker_registry);
                guard.disarm();
            }),
        };
        match spawn(thread) {
            Ok(handle) => {
                spawned += 1;
                handles.extend(handle);
            }
            Err(error) => {
                // Stop and join the workers started so far.
                started.wait_for(spawned);
                shutdown::keep_threads(&registry, handles);
                drop(ThreadPool { registry });
                return Err(ThreadPoolBuildError::Spawn(error));
            }
        }
    }
    started.wait_for(spawned);
    shutdown::keep_threads(&registry, handles);
    if let Some((queue, tasks)) = building_worker {
        if settings.pin_threads
            && let Err(error) = pin_current_thread(0)
        {
            started.worker_failed(0, error);
        } else {
            WorkerThread::adopt_current_thread(Arc::clone(&registry), 0, queue, tasks, settings);
        }
    }
    let pool = ThreadPool { registry };
    if let Some((worker, error)) = started.take_failure() {
        drop(pool);
        return Err(ThreadPoolBuildError::Pin { worker, error });
    }
    Ok(pool)
}

/// A worker thread to start, as a spawn handler gets it
/// ([`ThreadPoolBuilder::build_with_spawn_handler`](crate::ThreadPoolBuilder::build_with_spawn_handler)): the handler starts a
/// thread that calls [`run`](Self::run).
pub struct ThreadBuilder {
    index: usize,
    name: Option<String>,
    stack_size: Option<usize>,
    body: Box<dyn FnOnce() + Send>,
}

impl ThreadBuilder {
    /// The worker's index in its pool.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The name [`ThreadPoolBuilder::thread_name`](crate::ThreadPoolBuilder::thread_name) gives this worker, if
    /// it was called.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The stack size [`ThreadPoolBuilder::stack_size`](crate::ThreadPoolBuilder::stack_size) asks for, if it
    /// was called (bwos's own threads otherwise get the main thread's
    /// stack size; a handler decides for itself).
    pub fn stack_size(&self) -> Option<usize> {
        self.stack_size
    }

    /// Runs the worker on the calling thread until the pool stops.
    pub fn run(self) {
        (self.body)();
    }
}

impl fmt::Debug for ThreadBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadBuilder")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("stack_size", &self.stack_size)
            .finish_non_exhaustive()
    }
}

/// The default worker stack size: the main thread's, that is the soft
/// `RLIMIT_STACK`, clamped to 2..=64 MiB (an unlimited limit gives 64 MiB).
/// `None` (std's choice) when `RUST_MIN_STACK` is set or the limit cannot
/// be read.
#[cfg(unix)]
pub(crate) fn main_thread_stack_size() -> Option<usize> {
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

/// The default worker stack size where there is no `RLIMIT_STACK`: std's
/// choice (2 MiB, or `RUST_MIN_STACK`).
#[cfg(not(unix))]
pub(crate) fn main_thread_stack_size() -> Option<usize> {
    None
}
