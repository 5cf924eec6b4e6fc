//! The registry: what the workers of one pool share. Their stealers and
//! thread handles, the injectors for work from outside (jobs, tasks), the
//! per-worker spawn-FIFO and broadcast queues, the sleepers and BWS state,
//! the counters, the driver slot, the timers, the blocking pool's state,
//! the panic handler, and the shutdown state; and the operations on that
//! state alone (inject, take, notify and unpark a sleeper, read the
//! stats). It does not know which worker the calling thread is: queueing
//! on the calling worker is `inject.rs`'s, parking `idle/park.rs`'s, the
//! shutdown's steps `shutdown.rs`'s.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use bwos_queue::{fifo, lifo};
use crossbeam_deque::Injector;
use crossbeam_utils::CachePadded;

use super::blocking::BlockingPool;
use super::driver::DriverSlot;
use super::handover::Handover;
use super::idle::balance::Balance;
use super::idle::sleep::Sleepers;
use super::idle::spread::WakeSpread;
use super::job::JobRef;
use super::latch::CoreLatch;
use super::queues::take_oldest;
use super::quietly;
use super::spare_threads::SpareThreads;
use super::stats::{PoolStats, WorkerCounters, WorkerStats};
use super::steal::WhereWorkersRun;
use super::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::task::pool_tasks::PoolTasks;
use super::task::raw::Notified;
use super::time::Timers;
#[cfg(feature = "test-util")]
use super::time::auto_advance::AutoAdvance;

/// The handler of panics in `spawn`ed jobs.
pub(crate) type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;

/// A handler a worker calls with its index when it starts or exits.
pub(crate) type ThreadHandler = dyn Fn(usize) + Send + Sync;

/// What a registry holds besides its queues: the builder's handlers and
/// scheduling options.
pub(crate) struct RegistryOptions {
    pub(crate) panic_handler: Option<Box<PanicHandler>>,
    pub(crate) start_handler: Option<Box<ThreadHandler>>,
    pub(crate) exit_handler: Option<Box<ThreadHandler>>,
    /// `spawn` and `Scope::spawn` queue like their FIFO versions.
    pub(crate) breadth_first: bool,
    /// Worker 0 is the thread that built the pool, which does not run the
    /// scheduler loop.
    pub(crate) uses_building_thread: bool,
    /// The blocking pool's bounds (see `blocking/mod.rs`).
    pub(crate) max_blocking_threads: usize,
    pub(crate) blocking_keep_alive: Duration,
    /// `ThreadPoolBuilder::stack_size`, which `block_in_place`'s
    /// replacement threads get too (they run the workers' jobs).
    pub(crate) worker_stack_size: Option<usize>,
    /// A task poll longer than this counts in `PoolStats::long_polls`.
    pub(crate) long_poll_threshold: Duration,
}

pub(crate) struct Registry {
    stealers: Box<[lifo::Stealer<JobRef>]>,
    threads: Box<[OnceLock<Thread>]>,
    /// Per worker: the thread other than its own that runs it now (a
    /// replacement, or a thread that lent it and took it back: see
    /// `handover.rs`), which unparks reach too.
    replacements: Box<[Mutex<Option<Thread>>]>,
    /// Per worker: whether `replacements` holds a thread (the unpark
    /// path's one extra load).
    replaced: Box<[AtomicBool]>,
    /// Per worker: the baton its threads take turns with while one of them
    /// is in `block_in_place` (`handover.rs`).
    handovers: Box<[Handover]>,
    injector: Injector<JobRef>,
    /// Per worker: its spawn-FIFO queue, the jobs spawned FIFO on it
    /// (`spawn_fifo`, `ScopeFifo`), oldest first. Each has a trampoline
    /// job on the worker's job queue that runs the oldest one here,
    /// wherever the trampoline is stolen to (`inject::push_spawn_fifo`).
    pub(crate) spawn_fifos: Box<[Injector<JobRef>]>,
    /// Per worker: broadcast jobs only that worker may run.
    broadcasts: Box<[Injector<JobRef>]>,
    pub(crate) sleepers: Sleepers,
    /// Wake-up credits, heartbeats and the watchdog role (BWS).
    pub(crate) balance: Balance,
    /// Woken workers off their wakers' CPUs (`idle/spread.rs`).
    pub(crate) spread: WakeSpread,
    counters: Box<[CachePadded<WorkerCounters>]>,
    options: RegistryOptions,
    /// The async side: task queues' stealers, task injector, live tasks.
    pub(crate) tasks: PoolTasks,
    /// What shutting the pool down counts and waits on (`shutdown.rs`).
    pub(crate) shutdown: Shutdown,
    /// The driver the workers park in (the I/O driver, created by the
    /// pool's first socket; see `driver.rs`).
    pub(crate) driver: DriverSlot,
    /// The threads of `task::spawn_blocking`.
    pub(crate) blocking: BlockingPool,
    /// Replacement threads waiting for the next `block_in_place`
    /// (`spare_threads.rs`); an `Arc`, so that they do not hold the pool.
    pub(crate) spare_threads: Arc<SpareThreads>,
    /// The pool's timers, driven by its workers (see `time/mod.rs`).
    pub(crate) timers: Timers,
    /// When the paused clock may jump (`time/auto_advance.rs`).
    #[cfg(feature = "test-util")]
    pub(crate) auto_advance: AutoAdvance,
    /// Panics of detached jobs that no handler took
    /// ([`PoolStats::unhandled_panics`]).
    unhandled_panics: AtomicU64,
    /// When the registry was made: what the workers' busy times are
    /// measured from (see `stats.rs`).
    epoch: Instant,
}

impl Registry {
    /// A registry for workers with these stealers; the pool is held open
    /// by the `ThreadPool` being built.
    pub(crate) fn new(
        stealers: Vec<lifo::Stealer<JobRef>>,
        task_stealers: Vec<fifo::Stealer<Notified>>,
        options: RegistryOptions,
        join_on_drop: bool,
    ) -> Self {
        let n = stealers.len();
        debug_assert_eq!(task_stealers.len(), n);
        // Every worker thread counts as searching until it first finds
        // work (see `Idle::at_start`). The building thread adopted as
        // worker 0 does not: it runs no scheduler loop, so it would count
        // as searching forever, and producers, trusting a searcher to come
        // by, would never wake a sleeper.
        let sleepers = Sleepers::new(n);
        for _ in 0..n - usize::from(options.uses_building_thread) {
            sleepers.start_searching();
        }
        Registry {
            stealers: stealers.into(),
            threads: (0..n).map(|_| OnceLock::new()).collect(),
            replacements: (0..n).map(|_| Mutex::new(None)).collect(),
            replaced: (0..n).map(|_| AtomicBool::new(false)).collect(),
            handovers: (0..n).map(|_| Handover::new()).collect(),
            injector: Injector::new(),
            spawn_fifos: (0..n).map(|_| Injector::new()).collect(),
            broadcasts: (0..n).map(|_| Injector::new()).collect(),
            sleepers,
            balance: Balance::new(n),
            spread: WakeSpread::new(n),
            counters: (0..n).map(|_| CachePadded::default()).collect(),
            tasks: PoolTasks::new(task_stealers),
            shutdown: Shutdown::new(n, options.uses_building_thread, join_on_drop),
            blocking: BlockingPool::new(options.max_blocking_threads, options.blocking_keep_alive),
            spare_threads: Arc::new(SpareThreads::new(options.blocking_keep_alive)),
            timers: Timers::new(),
            #[cfg(feature = "test-util")]
            auto_advance: AutoAdvance::new(n, usize::from(options.uses_building_thread)),
            unhandled_panics: AtomicU64::new(0),
            epoch: Instant::now(),
            options,
            driver: DriverSlot::default(),
        }
    }

    pub(crate) fn num_threads(&self) -> usize {
        self.stealers.len()
    }

    pub(crate) fn stealers(&self) -> &[lifo::Stealer<JobRef>] {
        &self.stealers
    }

    /// See `RegistryOptions::long_poll_threshold`.
    pub(crate) fn long_poll_threshold(&self) -> Duration {
        self.options.long_poll_threshold
    }

    /// Worker `index`'s scheduler counters.
    pub(crate) fn counters(&self, index: usize) -> &WorkerCounters {
        &self.counters[index]
    }

    /// What the workers' busy times are measured from.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// The workers' counters and queue depths, their sums, and the pool's
    /// gauges, read now (racily: see "Depths and gauges" in `stats.rs`).
    pub(crate) fn stats(&self) -> PoolStats {
        let mut stats = PoolStats::default();
        let workers: Vec<WorkerStats> = (0..self.num_threads())
            .map(|index| WorkerStats {
                job_queue_depth: self.stealers[index].len(),
                task_queue_depth: self.tasks.stealers()[index].len(),
                ..self.counters[index].read_into(self.epoch, &mut stats)
            })
            .collect();
        stats.workers = workers;
        // Relaxed: a count; it publishes nothing.
        stats.unhandled_panics = self.unhandled_panics.load(Ordering::Relaxed);
        stats.injection_queue_depth = self.tasks.injected_len();
        stats.job_injection_queue_depth = self.injector.len();
        stats.num_alive_tasks = self.tasks.live_tasks();
        let blocking = self.blocking.gauges();
        stats.num_blocking_threads = blocking.threads;
        stats.num_idle_blocking_threads = blocking.idle;
        stats.blocking_queue_depth = blocking.queued;
        stats.num_pending_timers = self.timers.pending();
        stats.io_driver_ready_count = self.driver.get().map_or(0, |driver| driver.ready_count());
        stats
    }

    /// Records the calling thread as worker `index`, before it takes work.
    pub(crate) fn register_thread(&self, index: usize) {
        let _ = self.threads[index].set(std::thread::current());
    }

    /// The name of worker `index`'s own thread, if it has one.
    pub(crate) fn worker_thread_name(&self, index: usize) -> Option<String> {
        self.threads[index].get()?.name().map(str::to_owned)
    }

    /// Whether the calling thread is worker `index`'s own thread.
    pub(crate) fn is_own_thread(&self, index: usize) -> bool {
        self.threads[index]
            .get()
            .is_some_and(|thread| thread.id() == std::thread::current().id())
    }

    /// Records the calling thread as the one that runs worker `index` in
    /// place of its own thread (`replacement.rs`), before it takes work.
    pub(crate) fn register_replacement(&self, index: usize) {
        *lock(&self.replacements[index]) = Some(std::thread::current());
        // Release: a waker that changed the replacement's sleep state
        // (after this store, which precedes the replacement's announcement
        // in its program order) reads `true` with Acquire and unparks it.
        self.replaced[index].store(true, Ordering::Release);
    }

    /// Worker `index`'s own thread runs it again (`WorkerThread::take_turn`):
    /// unparks reach that thread alone.
    pub(crate) fn unregister_replacement(&self, index: usize) {
        // Relaxed: a late unpark of the old replacement is harmless.
        self.replaced[index].store(false, Ordering::Relaxed);
        lock(&self.replacements[index]).take();
    }

    /// The stack size the builder asked for the workers.
    pub(crate) fn worker_stack_size(&self) -> Option<usize> {
        self.options.worker_stack_size
    }

    /// Worker `index`'s baton (`handover.rs`).
    pub(crate) fn handover(&self, index: usize) -> &Handover {
        &self.handovers[index]
    }

    /// A thread waits for worker `index` (`Handover::wait_for_turn`): the
    /// thread running it reaches a boundary soon, also if it sleeps.
    pub(crate) fn wake_runner(&self, index: usize) {
        super::handover::wake_runner(&self.sleepers, index, |index| self.unpark(index));
    }

    /// Wakes worker `index` if it is parked.
    pub(crate) fn unpark(&self, index: usize) {
        // Before the wake-up: whoever woke it (for work, a latch, a look)
        // must not leave the pool looking idle to the paused clock.
        #[cfg(feature = "test-util")]
        self.auto_advance.worker_busy(index);
        self.spread.waking(index);
        // Every worker registers before the builder returns the pool, so
        // nobody can have work for an unregistered worker.
        if let Some(thread) = self.threads[index].get() {
            thread.unpark();
        }
        // Acquire: pairs with `register_replacement`'s Release store.
        if self.replaced[index].load(Ordering::Acquire)
            && let Some(thread) = &*lock(&self.replacements[index])
        {
            thread.unpark();
        }
        if let Some(driver) = self.driver.get() {
            driver.unpark(index);
        }
    }

    /// Work of this pool starts on a thread that is not one of its workers
    /// (a blocking closure queued, a `block_on` poll, a `block_in_place`
    /// closure): the paused clock does not jump until it finishes.
    #[cfg(feature = "test-util")]
    pub(crate) fn outside_work_started(&self) {
        self.auto_advance.outside_started();
    }

    /// Work started by [`outside_work_started`](Self::outside_work_started)
    /// finished: if that leaves the pool idle with its clock paused, an
    /// idle worker looks again and the clock jumps.
    #[cfg(feature = "test-util")]
    pub(crate) fn outside_work_finished(&self) {
        if let Some(index) = self.auto_advance.outside_finished(&self.timers) {
            self.unpark(index);
        }
    }

    /// Whether worker 0 is the thread that built the pool, which does not
    /// run the scheduler loop (`ThreadPoolBuilder::use_current_thread`).
    pub(crate) fn uses_building_thread(&self) -> bool {
        self.options.uses_building_thread
    }

    /// Whether every worker that runs the scheduler loop searches or
    /// sleeps (a racy snapshot, see `Sleepers::all_idle`). A building thread
    /// adopted as worker 0 is left out: between its own waits it runs the
    /// user's code, and like any thread outside the pool it wakes a
    /// sleeper when it makes work.
    pub(crate) fn all_idle(&self) -> bool {
        self.sleepers
            .all_idle(self.num_threads() - usize::from(self.uses_building_thread()))
    }

    /// Wakes a sleeping worker if nobody searches: called after work
    /// became visible to thieves.
    pub(crate) fn notify_new_work(&self) {
        self.sleepers.notify(|index| self.unpark(index));
    }

    /// Queues a job from outside the pool (or from a full local queue).
    pub(crate) fn inject(&self, job: JobRef) {
        self.injector.push(job);
        self.notify_new_work();
    }

    pub(crate) fn take_injected(&self) -> Option<JobRef> {
        take_oldest(&self.injector)
    }

    /// Whether sleeping worker `index` would find work: injected or
    /// stealable jobs or tasks, a broadcast for it, or a thread waiting
    /// to take it over (`handover.rs`). Called once per
    /// fall-asleep, after the fence.
    pub(crate) fn has_visible_work(&self, index: usize) -> bool {
        !self.broadcasts[index].is_empty()
            || self.handovers[index].is_wanted()
            || !self.injector.is_empty()
            || self.stealers.iter().any(|s| !s.is_empty())
            || self.tasks.has_visible_work()
    }

    /// Queues a task from outside the pool (or from a full task queue).
    pub(crate) fn inject_task(&self, task: Notified) {
        if self.tasks.inject(task) {
            self.notify_new_work();
        }
    }

    /// The oldest job of worker `index`'s spawn-FIFO queue (see
    /// `inject::push_spawn_fifo`).
    pub(crate) fn take_spawn_fifo(&self, index: usize) -> Option<JobRef> {
        take_oldest(&self.spawn_fifos[index])
    }

    /// Queues `jobs[i]` for worker `i` alone and wakes the workers that
    /// sleep. Its caller waits for them (or they hold a count of the pool).
    pub(crate) fn broadcast_jobs(&self, jobs: Vec<JobRef>) {
        debug_assert_eq!(jobs.len(), self.num_threads());
        for (index, job) in jobs.into_iter().enumerate() {
            self.broadcasts[index].push(job);
        }
        // The producer's half of the Dekker pair with a sleeper's final
        // look (`has_visible_work`): the pushes above are ordered before
        // the reads of the sleep states in `wake`.
        super::sync::fence(Ordering::SeqCst);
        for index in 0..self.num_threads() {
            self.sleepers.wake(index, |index| self.unpark(index));
        }
    }

    /// The next broadcast job for worker `index`.
    pub(crate) fn take_broadcast(&self, index: usize) -> Option<JobRef> {
        // Every scheduler step looks here: a load when the inbox is empty.
        if self.broadcasts[index].is_empty() {
            return None;
        }
        take_oldest(&self.broadcasts[index])
    }

    /// Runs the start handler on worker `index`, if there is one; its
    /// panic goes to the panic handler.
    pub(crate) fn thread_started(&self, index: usize) {
        self.run_thread_handler(self.options.start_handler.as_deref(), index);
    }

    /// Runs the exit handler on worker `index`, if there is one; its panic
    /// goes to the panic handler.
    pub(crate) fn thread_exiting(&self, index: usize) {
        self.run_thread_handler(self.options.exit_handler.as_deref(), index);
    }

    fn run_thread_handler(&self, handler: Option<&ThreadHandler>, index: usize) {
        if let Some(handler) = handler
            && let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| handler(index)))
        {
            self.handle_panic(payload);
        }
    }

    /// Whether `spawn` and `Scope::spawn` queue FIFO.
    pub(crate) fn breadth_first(&self) -> bool {
        self.options.breadth_first
    }

    /// A panic nobody waits for: the handler gets it; without a handler
    /// (or when the handler panics too) it is reported on stderr, after
    /// the panic hook's own message, counted in
    /// [`PoolStats::unhandled_panics`] and dropped, and the pool carries on.
    /// Never an abort: the panic is the user's.
    pub(crate) fn handle_panic(&self, payload: Box<dyn Any + Send>) {
        let reason = match &self.options.panic_handler {
            Some(handler) => match panic::catch_unwind(AssertUnwindSafe(|| handler(payload))) {
                Ok(()) => return,
                Err(handler_panic) => {
                    quietly::drop(handler_panic);
                    "the pool's panic handler panicked on it"
                }
            },
            None => {
                quietly::drop(payload);
                "the pool has no panic handler (ThreadPoolBuilder::panic_handler)"
            }
        };
        // Relaxed: a count; it publishes nothing.
        self.unhandled_panics.fetch_add(1, Ordering::Relaxed);
        eprintln!("bwos: a spawned job panicked and {reason}; the pool carries on");
    }
}

/// What shutting a pool down keeps; `shutdown.rs` has the steps, which
/// these fields' documentation numbers.
pub(crate) struct Shutdown {
    /// The holds that keep the pool open: its `ThreadPool` and each
    /// detached job not run yet (step 2).
    pub(crate) holds: AtomicUsize,
    /// Per worker: set when the worker is to shut down, which ends its
    /// scheduler loop (steps 2 and 3).
    pub(crate) latches: Box<[CoreLatch]>,
    /// The `ThreadPool` was dropped or shut down (step 1).
    pub(crate) begun: AtomicBool,
    /// Workers that have not shut down yet; the last one shuts the pool's
    /// services down (step 4).
    pub(crate) running_workers: AtomicUsize,
    /// Whether every worker has shut down (`running_workers` reached
    /// zero), for `ThreadPool::shutdown_timeout` to wait on with a timeout
    /// (step 5).
    pub(crate) workers_gone: Mutex<bool>,
    pub(crate) workers_gone_signal: Condvar,
    /// The worker threads step 5 joins (those the pool started itself).
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    /// Whether dropping the `ThreadPool` joins the threads (step 5).
    pub(crate) join_on_drop: bool,
}

impl Shutdown {
    /// The shutdown state of a pool of `workers` workers, held open by its
    /// `ThreadPool`.
    fn new(workers: usize, uses_building_thread: bool, join_on_drop: bool) -> Self {
        // The building thread, if it is worker 0, never shuts down.
        let loop_workers = workers - usize::from(uses_building_thread);
        Shutdown {
            holds: AtomicUsize::new(1),
            latches: (0..workers).map(|_| CoreLatch::new()).collect(),
            begun: AtomicBool::new(false),
            running_workers: AtomicUsize::new(loop_workers),
            workers_gone: Mutex::new(loop_workers == 0),
            workers_gone_signal: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            join_on_drop,
        }
    }
}

impl WhereWorkersRun for Registry {
    fn cpu_of(&self, index: usize) -> Option<u32> {
        self.balance.cpu_of(index)
    }
}

/// Locks `mutex`, taking a poisoned lock as it is: the registry's locks
/// guard lists and handles that no user code touches while it holds them.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
