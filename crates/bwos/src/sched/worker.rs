//! A worker thread: its BWoS queue, and the loop that runs work until a
//! latch is set: pop local work, else steal, else take injected work, else
//! idle.
//!
//! # Sharing the owner's block
//! In a BWoS LIFO queue thieves only reach blocks the owner has left; the
//! block the owner works in is private, which is what makes its push and
//! pop plain loads and stores. A fork/join queue stays shallow (a few
//! entries on the current path), so waiting for a block to fill would keep
//! the oldest, biggest jobs away from idle workers. At each `join` (both
//! before deciding whether to queue `b` and right after queueing it) and
//! after each spawn the worker therefore reads one shared word (relaxed):
//! if any worker is searching or sleeping, it offers its private jobs
//! ([`WorkerThread::offer`]: `lifo::Worker::share`, then, if nobody is
//! searching, wake a sleeper). While everybody is busy that word does not
//! change and the check costs one load and branch.
//!
//! An offer is not repeated while the jobs offered last are still in the
//! queue: a thief is on its way to them. Sharing again at every `join`
//! until it arrives would leave one job per block, and each block costs
//! the owner a takeover and cache misses on the words thieves read.
//!
//! # Tasks are never stranded
//! The task queue is a FIFO BWoS queue, whose owner pops from a block
//! thieves never enter (its consumer block): up to a block of tasks, and
//! every task pushed while the consumer sits in the producer's block, are
//! the owner's alone. While the owner polls a task that blocks or runs
//! long, those would wait for the poll. So before each job or task poll,
//! and at each task push, the worker reads the idle hint (one load): if
//! some worker searches or sleeps, it gives the rest of its consumer block
//! back to thieves (`fifo::Worker::share`) and wakes a sleeper if nobody
//! searches: before a poll if a task waits behind it, at a push once two
//! wait. A single task spawned or woken by the running one stays on this
//! worker (tokio's LIFO slot keeps one too), so a chain of tasks that each
//! spawn the next does not bounce between workers (sharing at every spawn
//! made chained spawns much slower: `docs/benchmarks.md`). The owner's next
//! pop takes a shared block back (two read-modify-writes, only after a
//! share). A batch of tasks stolen into the consumer block, or moved
//! there from the injector, is shared at once, idle workers or not: the
//! victim (or any other worker) typically becomes idle right after this
//! one started the first of them. While every worker is busy
//! nothing else is shared and the fast paths stay free of
//! read-modify-writes, which leaves three windows: the one task a poll
//! queued last, if the poll then blocks; tasks queued on a worker (not
//! by a steal) that started a long poll while no other worker was idle,
//! which become stealable at its next push once a worker is idle; and
//! tasks a poll pushed into the consumer block while every other worker
//! was busy, if the poll then blocks (on a loaded machine "busy" includes
//! a worker the kernel descheduled just before it would have marked itself
//! idle). Closing the last two at every push or poll would cost the owner
//! a share and a retake (three read-modify-writes) per poll whenever its
//! consumer block holds a task behind the running one. A task
//! that knows it blocks should say so with `task::block_in_place`, which
//! moves the whole worker to another thread.
//!
//! # Backing off
//! While a worker is idle and the jobs offered last are still queued, an
//! offer cannot share, and every `join` would find that out again: reading
//! the idle hint, a word that idle workers change at each start and end
//! of a search (a cache miss each time), and the offered block's steal
//! word. With more workers than cores, some worker is always idle and that
//! cost was a large part of fib's run time (`docs/benchmarks.md`). So
//! after an offer that could not share the worker skips the next 1, 3, 7,
//! ... up to [`MAX_OFFER_BACKOFF`] offers without looking, and starts
//! again from zero once an offer shares. The delay this adds is counted in
//! `join`s, so it scales with the grain: fine-grained work skips a few
//! hundred nanoseconds; coarse-grained work rarely finds its last offer
//! still pending at the next `join`, since an awake thief takes it in
//! about a microsecond.
//!
//! # One job in sight
//! A worker that became idle after the owner's last `join` would see the
//! owner's private jobs only at its next `join` or spawn, and a job that
//! waits for another one of the same queue (a `join` whose `a` waits for
//! `b` to start, spawned jobs meeting at a barrier, a caller blocked in a
//! channel receive until its spawned jobs finish) would wait forever
//! while the owner runs it. So a queue that holds jobs always shows
//! thieves one, and two when it can: a push that starts a fresh block
//! (the jobs before it were shared or taken back) shares it unless the
//! two blocks just below the owner's, the ones it granted last, both
//! still hold a job ([`JOBS_IN_SIGHT`]), and a job the scheduler loop
//! pops from the queue shares the private jobs left under it on the same
//! condition. Two, not one: with one, a thief
//! that takes the job in sight leaves the next one private until the
//! owner pushes or pops again, which an owner in a long stretch of plain
//! code (or blocked, waiting for that very job) does not do soon. oxipng
//! lost 7% of its wall time so with four files on two workers (a file's
//! job sat private under another file's long serial work). The cost is
//! small: in a recursion the oldest job changes only when the owner
//! returns to it (fib(25) alone on a worker ran 0.8% more instructions
//! with two in sight than with one, callgrind). What stays private is the
//! jobs above the visible ones while the owner runs without joining: a
//! program whose jobs wait for each other needs as many visible jobs as
//! waiters, which child stealing with private blocks does not promise
//! beyond two.

use std::cell::Cell;
use std::io;
use std::ptr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bwos_queue::{fifo, lifo};

use super::coop;
use super::handover::Handover;
use super::idle::park;
use super::idle::sleep::IdleHint;
use super::idle::spread;
use super::idle::{Idle, IdleConfig, IdlePolicy, IdleWorker};
use super::job::{AbortOnUnwind, JobRef};
use super::latch::CoreLatch;
use super::long_polls::{self, PollTiming};
use super::queues::{
    INJECTOR_BATCH, INJECTOR_INTERVAL, MAX_JOINS_PER_CLOCK_LOOK, MIN_JOINS_PER_CLOCK_LOOK,
    TASK_SLICE,
};
use super::registry::Registry;
use super::replacement;
use super::stats::WorkerCounters;
use super::steal::topology::{Topology, current_cpu, pin_current_thread};
use super::steal::{StealConfig, StealPolicy, Victims};
use super::steal_view::StealView;
use super::task::raw::Notified;

/// The most task-serving turns between jobs nested on one stack. A task
/// served between jobs may compute with fork/join itself (a heavy request
/// served in the middle of another): it serves the ready tasks in turn,
/// so light tasks never wait for a whole nested computation, while the
/// stack grows by at most this many computations.
const MAX_SERVING_DEPTH: u8 = 3;

/// Blocks just below the owner's that [`WorkerThread::show_oldest`] keeps
/// in sight of thieves (see "One job in sight" in the module docs): one
/// for a thief on its way, one for the next hungry worker.
const JOBS_IN_SIGHT: usize = 2;

/// The most calls of `offer_to_idle` skipped after offers that could not
/// share (see "Backing off" in the module docs).
const MAX_OFFER_BACKOFF: u32 = 63;

/// Jobs [`WorkerThread::push_or_inject`] injects without trying the local
/// queue after finding it full: a block's worth, about what one steal by a
/// thief frees.
const FULL_QUEUE_SKIP: u32 = super::queues::QUEUE_BLOCK_SIZE as u32;

thread_local! {
    /// The worker running on this thread, or null.
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
    /// The worker of this thread while the pool the thread entered last
    /// is another pool (`context.rs`), else null: `CURRENT` is null
    /// meanwhile, so the thread works for the entered pool as a thread
    /// outside the pools does. At most one of the two is non-null.
    static HIDDEN: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// What a thread restores when it runs a worker again after another
/// thread ran it (`WorkerThread::leave_for_a_turn`).
#[derive(Clone, Copy)]
pub(crate) struct Turn {
    /// The stack limit of this thread's stack, which the worker keeps for
    /// `fork` while this thread runs it.
    #[cfg(feature = "fork")]
    stack_limit: usize,
}

impl Turn {
    /// The turn of a thread that runs the worker for the first time.
    pub(crate) fn here() -> Self {
        Turn {
            #[cfg(feature = "fork")]
            stack_limit: super::stack_limit::stack_limit_here(),
        }
    }
}

/// What [`yield_now`](crate::yield_now) or [`yield_local`](crate::yield_local)
/// did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Yield {
    /// It ran one job.
    Executed,
    /// It found no job to run.
    Idle,
}

/// How the builder configured the workers of a pool.
#[derive(Clone)]
pub(crate) struct WorkerSettings {
    pub(crate) lazy_queueing: bool,
    pub(crate) steal: StealConfig,
    pub(crate) idle: IdleConfig,
    /// The machine's layout, for `StealPolicy::Topology`.
    pub(crate) topology: Option<Arc<Topology>>,
    /// Pin worker `i` to the `i`-th allowed CPU.
    pub(crate) pin_threads: bool,
}

/// The state of one worker thread; lives on that thread's stack.
pub(crate) struct WorkerThread {
    queue: lifo::Worker<JobRef>,
    /// Runnable async tasks, oldest first (`task/pool_tasks.rs`).
    tasks: fifo::Worker<Notified>,
    /// Tasks taken so far, for the injector interval.
    task_ticks: Cell<u32>,
    /// Jobs left to run before the next look at the clock (see "Ready
    /// tasks between fork/join jobs" in `queues.rs`).
    jobs_until_clock: Cell<u32>,
    /// The countdown's length, adapted to the jobs' grain.
    jobs_per_clock_look: Cell<u32>,
    /// When this worker last looked at the clock between jobs.
    last_clock_look: Cell<Instant>,
    /// When it serves ready tasks between jobs next.
    next_task_look: Cell<Instant>,
    /// Whether tasks came to this worker's queue in a batch (moved from
    /// the injector, or stolen) since it last announced work to idle
    /// workers (see `share_tasks`).
    unannounced_batch: Cell<bool>,
    /// How many task-serving turns between jobs are on this thread's
    /// stack now (at most [`MAX_SERVING_DEPTH`]).
    serving_depth: Cell<u8>,
    /// How this worker times its task polls (`long_polls.rs`).
    poll_timing: PollTiming,
    index: usize,
    registry: Arc<Registry>,
    /// This worker's counters in `registry` (which this worker keeps
    /// alive), reached without a lookup: a task poll and a job each count
    /// through it.
    counters: *const WorkerCounters,
    victims: Victims,
    /// The idle hint `join` reads: the pool's, which points into
    /// `registry` (kept alive by this worker), or one that always reads
    /// "idle" when lazy queueing is off
    /// (`ThreadPoolBuilder::lazy_queueing(false)`), so that every `join`
    /// calls the cold [`offer`](Self::offer), which queues `b` and
    /// consults the real one. That keeps the option off the default fast
    /// path.
    idle_hint: IdleHint,
    /// The pool's idle hint, whether lazy queueing is on or off: a field
    /// of its own rather than chosen from the two at each use, which cost
    /// four instructions on every task poll and wake-up.
    real_idle_hint: IdleHint,
    /// `ThreadPoolBuilder::lazy_queueing`.
    lazy_queueing: bool,
    idle_config: IdleConfig,
    /// Whether to publish the heartbeat and CPU between jobs (for
    /// topology-aware stealing and yielding to a preempted victim).
    publish_cpu: bool,
    /// Calls of [`offer_to_idle`](Self::offer_to_idle) left to skip.
    offer_skip: Cell<u32>,
    /// The current skip length: doubles (plus one) with every offer in a
    /// row that could not share, up to [`MAX_OFFER_BACKOFF`].
    offer_backoff: Cell<u32>,
    /// Jobs `push_or_inject` still sends to the injector without trying the
    /// local queue, which it last found full.
    full_queue_skip: Cell<u32>,
    /// The lowest stack address `fork` lets a nested poll reach before it
    /// moves to a fresh stack segment (`fork/mod.rs`): one comparison per
    /// fork instead of a thread-local lookup (see `stack_limit::stack_limit_here`
    /// for the values it takes where the stack bounds are unknown).
    #[cfg(feature = "fork")]
    stack_limit: Cell<usize>,
    /// `registry.handover(index)`, the baton the loop looks at between
    /// jobs, without the registry's bounds check. Points into `registry`,
    /// which this worker keeps alive.
    handover: *const Handover,
    /// This thread took the worker back at a boundary and has not run a
    /// turn of its loop since (`wanted_at_a_boundary`).
    just_took_turn: Cell<bool>,
    /// The latch of the loop the worker's own thread runs after its main
    /// loop until the threads that lent the worker are back
    /// (`wait_for_borrowers`), else null.
    borrowers_back: Cell<*const CoreLatch>,
    /// Whether this is the thread that built the pool
    /// (`ThreadPoolBuilder::use_current_thread`): it runs pool work only
    /// while it waits for some, never the scheduler loop.
    building_thread: bool,
}

impl WorkerThread {
    /// Calls `f` with the worker running on the calling thread, or `None`
    /// outside pools: the safe form of [`current_ptr`](Self::current_ptr),
    /// the one way to find the calling worker. Every front end finds its
    /// worker this way (`join` reads the pointer itself).
    #[inline]
    pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
        let worker = Self::current_ptr();
        // SAFETY: `CURRENT` is non-null only while the thread runs pool
        // work: `main` sets it after building the worker on its own stack
        // and clears it before the worker goes, and an adopted building
        // thread's worker is leaked. `f` cannot keep the borrow past this
        // call, which returns before either happens.
        f(unsafe { worker.as_ref() })
    }

    /// [`with_current`](Self::with_current), narrowed to the workers of
    /// `registry`: `None` on a worker of another pool.
    #[inline(always)]
    pub(crate) fn with_current_in<R>(
        registry: &Registry,
        f: impl FnOnce(Option<&WorkerThread>) -> R,
    ) -> R {
        Self::with_current(|worker| {
            f(worker.filter(|worker| ptr::eq(Arc::as_ptr(&worker.registry), registry)))
        })
    }

    /// The worker running on the calling thread, or null: the lookup
    /// itself. `join` uses it directly, since the closure of
    /// [`with_current`] costs its recursion an instruction per call
    /// (`docs/benchmarks.md`).
    ///
    /// [`with_current`]: Self::with_current
    #[inline(always)]
    pub(crate) fn current_ptr() -> *const WorkerThread {
        CURRENT.with(Cell::get)
    }

    /// Hides the calling thread's worker while `entered`, the pool the
    /// thread entered last (`context.rs`; null if none), is not the
    /// worker's pool, and shows it again otherwise: called whenever the
    /// thread enters or leaves a pool. Hidden, the worker is nobody's
    /// current worker (`with_current` answers `None`), so `join`, `spawn`
    /// and the rest use the entered pool, as on a thread outside the
    /// pools. Costs nothing on the paths that look for the worker.
    pub(crate) fn hide_unless_in(entered: *const Registry) {
        Self::with_own(|worker| {
            let Some(worker) = worker else {
                return;
            };
            let own_pool = Arc::as_ptr(&worker.registry);
            if entered.is_null() || ptr::eq(entered, own_pool) {
                HIDDEN.with(|hidden| hidden.set(ptr::null()));
                CURRENT.with(|current| current.set(worker));
            } else {
                CURRENT.with(|current| current.set(ptr::null()));
                HIDDEN.with(|hidden| hidden.set(worker));
            }
        });
    }

    /// Calls `f` with the calling thread's worker, shown or hidden by an
    /// entered pool (see [`hide_unless_in`](Self::hide_unless_in)): for
    /// what concerns the thread itself (how to wake it, whether it may
    /// wait for its own pool), not where its work goes.
    pub(crate) fn with_own<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
        let worker = match CURRENT.with(Cell::get) {
            shown if !shown.is_null() => shown,
            _ => HIDDEN.with(Cell::get),
        };
        // SAFETY: a non-null `CURRENT` is live (see `with_current`), and so
        // is a non-null `HIDDEN`: it is only set by `hide_unless_in`, from a
        // live worker of this thread, and cleared where the thread stops
        // being that worker (`forget_hidden`), before the worker goes. `f`
        // cannot keep the borrow.
        f(unsafe { worker.as_ref() })
    }

    /// The calling thread stops being a worker for good (its scheduler
    /// loop ended): a worker hidden by an entered pool that was never
    /// left (a leaked `EnterGuard`) must not be shown again.
    fn forget_hidden() {
        HIDDEN.with(|hidden| hidden.set(ptr::null()));
    }

    /// The pool's idle hint, the real one even without lazy queueing.
    #[inline(always)]
    fn real_idle_hint(&self) -> IdleHint {
        self.real_idle_hint
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// See the field.
    pub(crate) fn is_building_thread(&self) -> bool {
        self.building_thread
    }

    /// Whether the local queue holds jobs.
    pub(crate) fn has_pending_jobs(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Runs one job other than the caller's own frames, if there is one:
    /// a local job if `local_only`, else the first job [`find_work`]'s
    /// order finds (without counting idle rounds). Says whether it ran
    /// one.
    ///
    /// [`find_work`]: Self::find_work
    pub(crate) fn yield_now(&self, local_only: bool) -> Yield {
        let job = if local_only {
            self.take_local()
        } else {
            self.find_work(None)
        };
        match job {
            Some(job) => {
                self.share_tasks_if_idle();
                if Notified::is_entry(job) {
                    // SAFETY: as in `run_until`: a job taken out of the
                    // pool's queues is executed once, by its taker.
                    unsafe { self.poll_task_alone(job) };
                } else {
                    self.counters().job();
                    // SAFETY: as above.
                    unsafe { job.execute() };
                }
                Yield::Executed
            }
            None => Yield::Idle,
        }
    }

    /// Runs the task entry `entry` outside the scheduler loop (`yield_now`,
    /// tasks served between jobs), maybe inside another task's poll: the
    /// poll is counted, timed alone (`long_polls.rs`) and has its own
    /// budget (`coop.rs`), the outer poll's set aside meanwhile.
    ///
    /// # Safety
    /// `entry` is a task entry the caller took out of the pool's queues
    /// (so that this is its only execution).
    unsafe fn poll_task_alone(&self, entry: JobRef) {
        self.counters().poll();
        let outer_budget = coop::set_aside();
        long_polls::time_one(
            &self.poll_timing,
            || self.counters(),
            || {
                coop::start_poll();
                // SAFETY: forwarded from the caller.
                unsafe { entry.execute() };
                coop::end_poll();
            },
        );
        coop::put_back(outer_budget);
    }

    /// See the field: the stack address below which `fork` switches to a
    /// fresh segment. `fork` sets it while it runs on such a segment.
    #[cfg(feature = "fork")]
    #[inline]
    pub(crate) fn stack_limit(&self) -> &Cell<usize> {
        &self.stack_limit
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// This worker's scheduler counters.
    #[inline(always)]
    pub(crate) fn counters(&self) -> &WorkerCounters {
        // SAFETY: `counters` points into `self.registry`, which lives at
        // least as long as `self`.
        unsafe { &*self.counters }
    }

    /// The pool's idle configuration (policy, threshold), as this worker
    /// keeps it.
    pub(crate) fn idle_config(&self) -> IdleConfig {
        self.idle_config
    }

    /// This worker as its idle policy sees it (see [`IdleWorker`]).
    #[inline(always)]
    fn idle_worker(&self) -> IdleWorker<'_> {
        IdleWorker {
            registry: &self.registry,
            index: self.index,
            config: &self.idle_config,
        }
    }

    pub(crate) fn registry_ptr(&self) -> *const Registry {
        Arc::as_ptr(&self.registry)
    }

    /// Pushes `job` on the local queue; `false` if the queue is full (the
    /// caller keeps the job).
    #[inline]
    pub(crate) fn push(&self, job: JobRef) -> bool {
        if self.queue.push(job).is_err() {
            return false;
        }
        if self.queue.private_len() == 1 {
            // The first job of a fresh block: the older ones, if any, were
            // shared or taken back (see "One job in sight").
            self.show_oldest();
        } else {
            self.offer_to_idle();
        }
        true
    }

    /// Shares the private jobs unless the [`JOBS_IN_SIGHT`] blocks just
    /// below the owner's (the ones it granted last) all hold jobs a thief
    /// could take, so that a non-empty queue always shows thieves a job,
    /// and two when it can (see "One job in sight" in the module docs);
    /// wakes a sleeper if some worker is idle.
    ///
    /// Out of line: `push` is inlined into every `join`, and a recursion
    /// that carries this body in its own frame ran slower, though the call
    /// is rare (`docs/benchmarks.md`).
    #[inline(never)]
    fn show_oldest(&self) {
        if self.queue.granted_pending_blocks(JOBS_IN_SIGHT) == JOBS_IN_SIGHT || !self.queue.share()
        {
            return;
        }
        if self.real_idle_hint().anyone_idle() {
            self.beat();
            self.registry.notify_new_work();
        }
    }

    /// The other workers' queues as this worker's steal round sees them.
    #[inline(always)]
    fn steal_view(&self) -> StealView<'_> {
        StealView {
            registry: &self.registry,
            jobs: &self.queue,
            tasks: &self.tasks,
        }
    }

    /// One steal round over `queues` with this worker's victim selection
    /// (the pool's stealing policy): what a work-list participant runs
    /// when its own queue is empty.
    pub(crate) fn steal_round<Q: super::steal::VictimQueues>(&self, queues: &Q) -> Option<Q::Item> {
        self.victims
            .steal(self.index, queues, &*self.registry, |_| {})
    }

    /// Whether some worker of the pool searches for work or sleeps (a racy
    /// hint, the real one even without lazy queueing).
    #[inline]
    pub(crate) fn pool_has_idle_workers(&self) -> bool {
        self.real_idle_hint().anyone_idle()
    }

    /// Jobs in the worker's current block, which thieves cannot see until
    /// it is shared.
    #[inline]
    pub(crate) fn private_jobs(&self) -> usize {
        self.queue.private_len()
    }

    /// If some worker is idle, offers it the private jobs
    /// ([`offer`](Self::offer)); returns whether they were shared. After an
    /// offer that could not share, the next few calls return `false`
    /// without looking (see "Backing off" in the module docs).
    #[inline]
    pub(crate) fn offer_to_idle(&self) -> bool {
        if !self.idle_hint.anyone_idle() {
            return false;
        }
        let skip = self.offer_skip.get();
        if skip != 0 {
            self.offer_skip.set(skip - 1);
            return false;
        }
        self.offer_or_back_off()
    }

    #[cold]
    fn offer_or_back_off(&self) -> bool {
        if self.offer() {
            self.offer_backoff.set(0);
            true
        } else {
            let backoff = (self.offer_backoff.get() * 2 + 1).min(MAX_OFFER_BACKOFF);
            self.offer_backoff.set(backoff);
            self.offer_skip.set(backoff);
            false
        }
    }

    /// Called when some worker is idle: opens the worker's private jobs
    /// to thieves and wakes a sleeper if nobody is searching. Returns
    /// whether it shared.
    ///
    /// It does not share while the jobs it shared last are still there: a
    /// thief is on its way to them (or asleep, and was woken), and sharing
    /// at every push until it arrives would leave one job per block, each
    /// costing a block move, a takeover and a fence.
    ///
    /// Without lazy queueing it always returns `true` (queue `b`), and
    /// shares only if a worker really is idle.
    #[cold]
    pub(crate) fn offer(&self) -> bool {
        if self.lazy_queueing {
            return self.share_with_idle();
        }
        if self.real_idle_hint.anyone_idle() {
            self.share_with_idle();
        }
        true
    }

    fn share_with_idle(&self) -> bool {
        if self.queue.granted_pending() || !self.queue.share() {
            return false;
        }
        self.beat();
        self.registry.notify_new_work();
        true
    }

    /// Between two jobs: bump the heartbeat and publish where this worker
    /// runs, when the pool's policies read them.
    fn beat(&self) {
        if self.publish_cpu {
            self.registry.balance.beat(self.index, current_cpu());
        }
    }

    /// Pushes `job` locally, or injects it into the pool when the local
    /// queue is full: the job is never lost.
    ///
    /// A full queue stays full while thieves drain the blocks below (a
    /// loop of spawns outruns them): after a push that found it full, the
    /// next [`FULL_QUEUE_SKIP`] jobs go to the injector without trying.
    /// Each try walks the owner's slow path up to the block it cannot
    /// reuse and reads that block's counter, which thieves write: dozens
    /// of instructions and often a cache miss per spawn
    /// (`docs/benchmarks.md`).
    #[inline]
    pub(crate) fn push_or_inject(&self, job: JobRef) {
        let skip = self.full_queue_skip.get();
        if skip > 0 {
            self.full_queue_skip.set(skip - 1);
        } else if self.push(job) {
            return;
        } else {
            self.full_queue_skip.set(FULL_QUEUE_SKIP);
        }
        self.registry.inject(job);
    }

    /// Counts one fork/join job (a `join`, a job taken from a queue): every
    /// so many, a look at the clock, and every [`TASK_SLICE`] the ready
    /// tasks get their turn (see "Ready tasks between fork/join jobs" in
    /// `queues.rs`). A decrement and a branch while the countdown runs.
    #[inline(always)]
    pub(crate) fn count_job(&self) {
        // Written so that it compiles to a decrement in memory and a branch.
        let left = self.jobs_until_clock.get().wrapping_sub(1);
        self.jobs_until_clock.set(left);
        if left == 0 {
            self.look_at_clock();
        }
    }

    /// The countdown ran out: adapts its length so that the clock is read
    /// a few times per slice, and serves tasks if a slice has passed.
    #[cold]
    #[inline(never)]
    fn look_at_clock(&self) {
        if self.building_thread {
            // Between its waits the building thread runs the user's code,
            // where a task must not run on top of it.
            self.jobs_until_clock.set(u32::MAX);
            return;
        }
        let now = Instant::now();
        let since = now.saturating_duration_since(self.last_clock_look.get());
        self.last_clock_look.set(now);
        let per_look = self.jobs_per_clock_look.get();
        let per_look = if since < TASK_SLICE / 4 {
            (per_look * 2).min(MAX_JOINS_PER_CLOCK_LOOK)
        } else if since > TASK_SLICE {
            (per_look / 2).max(MIN_JOINS_PER_CLOCK_LOOK)
        } else {
            per_look
        };
        self.jobs_per_clock_look.set(per_look);
        self.jobs_until_clock.set(per_look);
        if now >= self.next_task_look.get() && self.serving_depth.get() < MAX_SERVING_DEPTH {
            self.next_task_look.set(now + TASK_SLICE);
            self.serve_tasks_between_jobs(now + TASK_SLICE / 2);
        }
    }

    /// Polls the driver and fires due timers, then runs ready tasks (local,
    /// then injected) until none is left or `until` has passed.
    fn serve_tasks_between_jobs(&self, until: Instant) {
        // Runs between the halves of a `join` whose `b` may be queued or
        // running on a thief: unwinding from here would leave that stack
        // job behind, as out of a nested loop (`wait_until_cold`).
        let guard = AbortOnUnwind::new("serving tasks between the jobs of a join");
        self.serving_depth.set(self.serving_depth.get() + 1);
        park::poll_driver_now(&self.registry);
        while let Some(task) = self
            .take_local_task()
            .or_else(|| self.take_injected_tasks())
        {
            self.share_tasks_if_idle();
            // SAFETY: as in `run_until`: a task taken out of the pool's
            // queues is run once, by its taker.
            unsafe { self.poll_task_alone(task.into_job_ref()) };
            if Instant::now() >= until {
                break;
            }
        }
        self.serving_depth.set(self.serving_depth.get() - 1);
        guard.disarm();
    }

    /// A task of `registry`'s pool completed on the calling thread after
    /// its group of polls took `ticks` (see `Schedule::long_poll`): the
    /// calling worker counts a long poll if that was longer than the
    /// threshold. Tasks of a pool are polled by its workers (and their
    /// replacements) only.
    #[cold]
    pub(crate) fn count_long_poll(registry: &Registry, ticks: u64) {
        Self::with_current_in(registry, |worker| {
            if let Some(worker) = worker {
                worker.poll_completed(ticks);
            }
        });
    }

    /// A task's poll completed it after its group of polls took `ticks`
    /// (`long_polls::poll_completing`): counts a long poll if that was
    /// longer than the threshold.
    #[cold]
    pub(crate) fn poll_completed(&self, ticks: u64) {
        self.poll_timing.completed(ticks, self.counters());
    }

    /// The newest local job.
    #[inline]
    pub(crate) fn take_local(&self) -> Option<JobRef> {
        self.queue.pop()
    }

    /// Queues a woken task at the back of this worker's task queue (the
    /// injector's when it is full) and, if some worker is idle, makes
    /// sure one is awake to steal it.
    ///
    /// Inlined into the wake-ups (yield, schedule) with the idle case out
    /// of line: out of line as a whole it cost instructions on every
    /// wake-up (`docs/benchmarks.md`).
    #[inline(always)]
    pub(crate) fn push_task(&self, task: Notified) {
        if let Err(task) = self.tasks.push(task) {
            self.registry.inject_task(task);
            return;
        }
        // The real hint even without lazy queueing.
        if self.real_idle_hint().anyone_idle() {
            self.offer_pushed_task();
        }
    }

    /// A task was pushed while some worker is idle. A task pushed outside
    /// the owner's consumer block is stealable at once; one pushed into it
    /// (the consumer has caught up with the producer's block) is not until
    /// the block is shared (see "Tasks are never stranded"), which a
    /// second private task triggers: a lone one is what the running task
    /// spawned or woke last, which it usually waits for.
    ///
    /// A lone private task wakes nobody: no thief could take it. A worker
    /// woken for it searched in vain and had started to yield (or gone
    /// back to sleep) by the time the running task queued a second one and
    /// shared them, and a yielding worker still counts as searching, so
    /// that share woke nobody; on a loaded machine a yield can cost a
    /// time slice. The tasks then waited for the poll after them (one
    /// task spawned a 2 ms task and then 15 short ones: the short ones
    /// started 2 ms late in most rounds). Waking at the share instead
    /// brings the thief when there is something to take, and spares the
    /// futex wake-up of a chain of tasks that each wake the next.
    #[cold]
    #[inline(never)]
    fn offer_pushed_task(&self) {
        // Two tasks wait once two sit in the consumer block, or one does
        // and this one landed after it, in a later block (had it landed in
        // the consumer block, the queue would hold nothing else: the
        // consumer block holds the oldest entries).
        let private = self.tasks.private_len();
        if private >= 2 || (private == 1 && self.tasks.len() >= 2) {
            self.tasks.share();
        } else if private == 1 {
            // This task alone, in the consumer block.
            return;
        }
        self.registry.notify_new_work();
    }

    /// Before running a job or a task: if some worker is idle, opens the
    /// tasks queued privately on this worker to thieves and makes sure a
    /// worker is awake to take them, so none waits for the coming poll
    /// (see "Tasks are never stranded" in the module docs). One load and
    /// a branch while nobody is idle.
    #[inline(always)]
    fn share_tasks_if_idle(&self) {
        if self.real_idle_hint().anyone_idle() {
            self.share_tasks();
        }
    }

    /// A batch of tasks (stolen, or moved from the injector) just came
    /// to this worker's queue and it is about to run the first: the part
    /// that landed in its consumer block is shared at once, idle workers
    /// or not (the victim, or any other worker, may become idle before
    /// that poll ends), and the batch is announced to idle workers before
    /// the poll (`share_tasks`: this worker still counts as searching
    /// here, so a wake-up now would go nowhere). A batch is rare and
    /// costly already; the share adds a read-modify-write, and the next
    /// pop one more to take the block back.
    #[cold]
    #[inline(never)]
    fn batch_landed(&self) {
        if self.tasks.private_len() > 0 {
            self.tasks.share();
        }
        self.unannounced_batch.set(true);
    }

    /// Shares the tasks queued privately behind the coming poll, if any,
    /// and makes sure a worker is awake to take them. An empty consumer
    /// block stays private: what the poll then spawns stays on this
    /// worker unless it spawns more than one (see `push_task`), so a chain
    /// of tasks that each spawn the next does not bounce between workers.
    ///
    /// A batch that came to this worker's queue is stealable but nobody
    /// announced it (see `batch_landed`): it is announced here, once, as
    /// the worker starts on the first of its tasks.
    #[cold]
    #[inline(never)]
    fn share_tasks(&self) {
        // A worker this one woke may be queued behind it on its CPU: let it
        // run (and move off) before this poll (`idle/spread.rs`).
        self.registry.spread.let_wakee_run();
        let private = self.tasks.private_len() > 0;
        if private {
            self.tasks.share();
        }
        // Tasks injected while this worker still searched (the injector's
        // wake-ups then went to it) wait in the injector: tokio's "last
        // searcher" rule, a worker that starts working wakes another for
        // the work it leaves behind.
        if private
            || (self.unannounced_batch.replace(false) && !self.tasks.is_empty())
            || self.registry.tasks.has_injected()
        {
            self.registry.notify_new_work();
        }
    }

    /// The next local task: the oldest queued one, or every
    /// [`INJECTOR_INTERVAL`]th time an injected one if there is any (see
    /// "Fairness" in `queues.rs`).
    ///
    /// Inlined into the scheduler loop, with the every-61st-task look out
    /// of line: the look at the driver and the timers made the function
    /// too big to inline, which cost instructions on every task taken
    /// (`docs/benchmarks.md`).
    #[inline(always)]
    fn take_local_task(&self) -> Option<Notified> {
        let ticks = self.task_ticks.get().wrapping_add(1);
        self.task_ticks.set(ticks);
        if ticks.is_multiple_of(INJECTOR_INTERVAL)
            && let Some(task) = self.look_outside()
        {
            return Some(task);
        }
        self.tasks.pop()
    }

    /// Every [`INJECTOR_INTERVAL`]th task: serves I/O and timers while
    /// every worker is busy (the tasks they wake queue behind the ones
    /// already here), then takes an injected task if there is one.
    #[cold]
    #[inline(never)]
    fn look_outside(&self) -> Option<Notified> {
        park::poll_driver_now(&self.registry);
        self.take_injected_tasks()
    }

    /// The oldest injected task, after moving up to [`INJECTOR_BATCH`] more
    /// to this worker's queue. The injector is looked at (one load) before
    /// it is taken from: an empty one's take costs dozens of instructions,
    /// and most callers find it empty (every slice of fork/join work,
    /// every [`INJECTOR_INTERVAL`]th task, every idle round).
    fn take_injected_tasks(&self) -> Option<Notified> {
        if !self.registry.tasks.has_injected() {
            return None;
        }
        let first = self.registry.tasks.take_injected()?;
        self.move_injected_tasks();
        self.batch_landed();
        Some(first)
    }

    /// Moves up to [`INJECTOR_BATCH`] injected tasks to this worker's queue
    /// (stealable at once unless they land in its consumer block, which is
    /// shared before the next poll if some worker is idle).
    pub(crate) fn move_injected_tasks(&self) {
        for _ in 0..INJECTOR_BATCH {
            let Some(task) = self.registry.tasks.take_injected() else {
                break;
            };
            self.unannounced_batch.set(true);
            if let Err(task) = self.tasks.push(task) {
                // Full: the injector keeps it.
                self.registry.inject_task(task);
                break;
            }
        }
    }

    /// The one order in which a worker looks for work: its own newest job
    /// (the fork/join path its current frames wait for), a broadcast job
    /// for it, its oldest task (or, every [`INJECTOR_INTERVAL`]th time, an
    /// injected one), a steal round over the other workers' jobs and tasks,
    /// injected jobs, injected tasks. The scheduler loop passes its `idle`
    /// state, which counts the steal round; `yield_now` passes `None`.
    /// Ready sockets are not polled here: a worker that finds nothing
    /// blocks in the pool's driver when it sleeps (see `driver.rs`).
    ///
    /// Always inlined: each caller's `idle` is then a constant, and the
    /// scheduler loop keeps the body in its own frame (out of line it cost
    /// instructions on every turn of the loop: `docs/benchmarks.md`).
    #[inline(always)]
    fn find_work(&self, mut idle: Option<&mut Idle>) -> Option<JobRef> {
        if let Some(job) = self.take_local() {
            self.count_job();
            if self.queue.private_len() > 0 {
                // The job may run long without a `join`: the rest of the
                // queue stays in sight of thieves meanwhile.
                self.show_oldest();
            }
            return Some(job);
        }
        if let Some(job) = self.registry.take_broadcast(self.index) {
            return Some(job);
        }
        if let Some(task) = self.take_local_task() {
            return Some(task.into_job_ref());
        }
        if let Some(idle) = idle.as_deref_mut() {
            idle.start_round(self.idle_worker());
        }
        let stolen =
            self.victims
                .steal(self.index, &self.steal_view(), &*self.registry, |victim| {
                    if let Some(idle) = idle.as_deref_mut() {
                        idle.failed_attempt(self.idle_worker(), victim);
                    }
                });
        if let Some(job) = stolen {
            if let Some(idle) = idle {
                idle.stole(self.idle_worker());
            }
            // A stolen batch of tasks may have come with it.
            self.batch_landed();
            return Some(job);
        }
        self.take_injected_jobs()
            .or_else(|| Some(self.take_injected_tasks()?.into_job_ref()))
    }

    /// The oldest injected job, after moving up to [`INJECTOR_BATCH`] more
    /// to this worker's queue, which is empty here (`find_work` looked at
    /// it first). They are pushed newest first, so they still start
    /// oldest first, as from the injector.
    ///
    /// A loop of spawns overflows its worker's queue into the injector;
    /// taking those one at a time cost the other worker a failed steal
    /// round and a contended take per job, a large share of a tiny job's
    /// cost (`docs/benchmarks.md`).
    fn take_injected_jobs(&self) -> Option<JobRef> {
        let first = self.registry.take_injected()?;
        let mut batch = [None; INJECTOR_BATCH];
        for slot in &mut batch {
            *slot = self.registry.take_injected();
            if slot.is_none() {
                break;
            }
        }
        for job in batch.iter().rev().flatten() {
            // A full queue cannot happen (it was empty and a batch is far
            // smaller), but the job is never lost: `push_or_inject`.
            self.push_or_inject(*job);
        }
        Some(first)
    }

    /// Runs work until `latch` is set. The worker does not block while it
    /// waits: it runs local, stolen or injected jobs, and sleeps only when
    /// there is none.
    ///
    /// Consequences of child stealing (`fork`'s async children avoid them
    /// while they wait, not while a thief polls them: see `fork/mod.rs`):
    /// the jobs run here sit on top of the waiting frame, so the stack
    /// grows with every nested wait, and a job may run in the middle of
    /// another job of the same thread (reentrancy: thread-locals and locks
    /// held across `join` can be observed or re-entered).
    #[inline]
    pub(crate) fn wait_until(&self, latch: &CoreLatch) {
        if !latch.probe() {
            self.wait_until_cold(latch);
        }
    }

    #[cold]
    fn wait_until_cold(&self, latch: &CoreLatch) {
        // What this waits for may live in a frame below (a stack job, its
        // latch) while another thread runs it: unwinding out of here would
        // free it under that thread, or leave the waiter's caller waiting
        // for a job nobody finishes (the CI hang of stop 55). Every job
        // and task catches its user's panics (and every waker bwos calls,
        // `quietly.rs`), so a panic here is a bug in bwos: abort with a
        // message, as the worker's own loop does.
        let guard = AbortOnUnwind::new("a worker's scheduler loop, waiting for a latch");
        self.run_until(latch, Idle::new());
        guard.disarm();
    }

    /// The scheduler loop: runs work until `latch` is set, idling in
    /// `idle` between jobs.
    ///
    /// Task polls run back to back are timed in groups for
    /// `PoolStats::long_polls` (`long_polls.rs`); a group ends before
    /// anything else runs here.
    fn run_until(&self, latch: &CoreLatch, mut idle: Idle) {
        // This loop may run inside a task's poll (a `join` there waiting
        // for a thief): that poll's budget and open group of polls wait
        // until the loop returns.
        let outer_budget = coop::set_aside();
        let outer = long_polls::enter_loop();
        while !latch.probe() {
            // A boundary: another thread may wait to take the worker
            // (`handover.rs`). One load while nobody does.
            if self.handover().is_wanted() && self.wanted_at_a_boundary(latch, &mut idle) {
                break;
            }
            match self.find_work(Some(&mut idle)) {
                Some(job) => {
                    idle.work_found(self.idle_worker());
                    self.share_tasks_if_idle();
                    self.beat();
                    // Counted before the run: whoever sees the task's or
                    // job's outcome sees the count.
                    if Notified::is_entry(job) {
                        self.counters().poll();
                        long_polls::before_poll(&self.poll_timing);
                        coop::start_poll();
                        // SAFETY: every `JobRef` in the pool's queues and
                        // injector is executed exactly once, by whoever
                        // takes it out; its job is alive until then (stack
                        // jobs' frames wait for their latch, heap jobs and
                        // task entries own themselves).
                        unsafe { job.execute() };
                        coop::end_poll();
                        long_polls::after_poll(&self.poll_timing, || self.counters());
                    } else {
                        self.counters().job();
                        long_polls::close(&self.poll_timing, || self.counters());
                        // SAFETY: as above.
                        unsafe { job.execute() };
                    }
                }
                None => {
                    long_polls::close(&self.poll_timing, || self.counters());
                    idle.no_work_found(self.idle_worker(), latch);
                }
            }
        }
        long_polls::leave_loop(outer, &self.poll_timing, || self.counters());
        coop::put_back(outer_budget);
        idle.work_found(self.idle_worker());
    }

    /// The body of worker thread `index`: it works until the pool shuts
    /// down (step 3 in `shutdown.rs`; the thread then reports with
    /// `shutdown::worker_shut_down`, see `start.rs`).
    pub(crate) fn main(
        registry: Arc<Registry>,
        index: usize,
        queue: lifo::Worker<JobRef>,
        tasks: fifo::Worker<Notified>,
        settings: WorkerSettings,
        started: Arc<Started>,
    ) {
        let guard = AbortOnUnwind::new("a worker thread's scheduler loop");
        spread::mark_worker_thread();
        #[cfg(feature = "tokio-compat")]
        let _tokio = super::tokio_compat::enter();
        if settings.pin_threads
            && let Err(error) = pin_current_thread(index)
        {
            started.worker_failed(index, error);
        }
        let worker = Self::new(registry, index, queue, tasks, settings, false);
        worker.registry.balance.beat(index, current_cpu());
        CURRENT.with(|current| current.set(&worker));
        worker.registry.register_thread(index);
        worker.counters().start_busy(worker.registry.epoch());
        started.worker_started();
        drop(started);
        worker.registry.thread_started(index);
        worker.run_until(
            &worker.registry.shutdown.latches[index],
            Idle::at_start(worker.idle_worker()),
        );
        worker.wait_for_borrowers();
        debug_assert!(
            worker.queue.is_empty(),
            "a worker that shut down left jobs behind"
        );
        // This worker may have been the timers' watcher (`time/mod.rs`),
        // and a worker that fell asleep while it watched sleeps without a
        // deadline. Those that still run (in a `block_on` or `install`
        // nested in a task, waiting for work of this pool) would then miss
        // every timer: wake one, which takes the watch when it sleeps again.
        worker
            .registry
            .sleepers
            .wake_one(|other| worker.registry.unpark(other));
        // Tasks do not keep the pool alive: cancel the queued ones. A
        // cancelled future's destructor may wake other tasks; they come
        // back to this queue, so drain until it stays empty.
        while let Some(task) = worker.tasks.pop() {
            task.cancel();
        }
        worker.registry.thread_exiting(index);
        worker.counters().stop_busy(worker.registry.epoch());
        CURRENT.with(|current| current.set(ptr::null()));
        Self::forget_hidden();
        guard.disarm();
    }

    /// This worker's baton (`handover.rs`).
    #[inline(always)]
    fn handover(&self) -> &Handover {
        // SAFETY: `handover` points into `registry`, which this worker
        // keeps alive (see the field).
        unsafe { &*self.handover }
    }

    /// The calling thread stops being this worker's thread for a while
    /// (`replacement.rs`, `handover.rs`): nothing on it finds the worker
    /// until [`take_turn`](Self::take_turn), so another thread can run it
    /// meanwhile. What the thread must restore then is in the `Turn`.
    pub(crate) fn leave_for_a_turn(&self) -> Turn {
        debug_assert!(ptr::eq(CURRENT.with(Cell::get), self));
        CURRENT.with(|current| current.set(ptr::null()));
        Turn {
            #[cfg(feature = "fork")]
            stack_limit: self.stack_limit.get(),
        }
    }

    /// The calling thread, which left this worker with `turn` (or starts a
    /// replacement's turn with [`Turn::here`]), runs it again: the worker
    /// is passed on to it (`Handover`) or it never passed it on.
    pub(crate) fn take_turn(&self, turn: Turn) {
        CURRENT.with(|current| current.set(self));
        #[cfg(feature = "fork")]
        self.stack_limit.set(turn.stack_limit);
        #[cfg(not(feature = "fork"))]
        let _ = turn;
        // Unparks of the worker reach its own thread always, and the
        // thread running it in its place, if any.
        if self.registry.is_own_thread(self.index) {
            self.registry.unregister_replacement(self.index);
        } else {
            self.registry.register_replacement(self.index);
        }
    }

    /// At a boundary of the loop waiting on `latch`, another thread waits
    /// for the worker. Returns whether the loop ends: on a replacement's
    /// own loop, which passes the worker on once the loop has left it
    /// (`run_as_replacement`). Any other loop passes it on here and goes
    /// on once it has it back, for at least one job or poll before it
    /// passes it on again: two threads that both wait for the worker then
    /// make progress in turn.
    #[cold]
    #[inline(never)]
    fn wanted_at_a_boundary(&self, latch: &CoreLatch, idle: &mut Idle) -> bool {
        if self.just_took_turn.replace(false) {
            return false;
        }
        if replacement::is_replacement_loop(latch) {
            return true;
        }
        self.take_a_turn_off(idle);
        self.just_took_turn.set(true);
        false
    }

    /// Another thread waits for the worker: passes it on, waits for it to
    /// come back and takes it.
    #[cold]
    #[inline(never)]
    fn take_a_turn_off(&self, idle: &mut Idle) {
        // Out of the sleep protocol's searchers (the worker counts as
        // busy while another thread runs the frames that wanted it), and
        // the polls timed so far are a group of their own.
        idle.work_found(self.idle_worker());
        long_polls::close(&self.poll_timing, || self.counters());
        let turn = self.leave_for_a_turn();
        // One step: in between, this thread would be neither holding the
        // worker nor waiting for it, and the worker's own thread could end
        // it (`wait_for_borrowers`).
        self.handover()
            .pass_on_and_wait(|| self.registry.wake_runner(self.index));
        self.take_turn(turn);
    }

    /// The worker's own thread left its loop for good, but other threads
    /// may still have frames that use the worker: threads that lent it (a
    /// `block_in_place` on a replacement, whose closure has not returned),
    /// and threads waiting for it back (a nested loop that passed it on).
    /// What they wait for may be queued on the worker: this thread runs
    /// the loop on until none of them is left. Only the thread running the
    /// worker lends it, and a thread gives it back only once it is passed
    /// the worker, so with the worker here and none of them left, none
    /// comes later.
    #[cold]
    fn wait_for_borrowers(&self) {
        loop {
            if self.handover().is_wanted() {
                self.take_a_turn_off(&mut Idle::new());
            } else if self.handover().has_borrowers() {
                // Set by the last borrower to take its turn back
                // (`borrower_returned`), which holds the worker then: this
                // thread sees it at its next boundary. A thread may lend
                // the worker again afterwards: hence the loop.
                let borrowers_back = CoreLatch::new();
                self.borrowers_back.set(&borrowers_back);
                self.run_until(&borrowers_back, Idle::new());
                self.borrowers_back.set(ptr::null());
            } else {
                return;
            }
        }
    }

    /// The calling thread lent this worker (`block_in_place`) and has
    /// taken its turn back: if it was the last such thread and the worker's
    /// own thread waits for that to leave for good, its loop ends.
    pub(crate) fn borrower_returned(&self) {
        if self.handover().returned() {
            let latch = self.borrowers_back.get();
            // SAFETY: non-null, it is the latch of the loop the worker's
            // own thread runs in `wait_for_borrowers`, which returns only
            // once it is set; that thread does not run the worker now
            // (this one does), so it is still in that loop.
            if let Some(latch) = unsafe { latch.as_ref() } {
                latch.set();
            }
        }
    }

    /// Runs this worker's scheduler loop on the calling thread, which is
    /// not the worker's own, until a thread waits to take the worker; then
    /// passes it on (`replacement.rs`, `handover.rs`).
    ///
    /// # Safety
    /// The calling thread may run the worker: the thread that ran it last
    /// [left](Self::leave_for_a_turn) it, found nobody waiting to take it
    /// and started this thread, which orders their accesses. The worker
    /// outlives this call: its own thread takes it back before its frame
    /// goes, which needs this call to pass it on.
    pub(crate) unsafe fn run_as_replacement(&self) {
        let guard = AbortOnUnwind::new("a replacement worker's scheduler loop");
        let turn = Turn::here();
        loop {
            self.take_turn(turn);
            // Never set: the loop ends at a boundary where a thread waits
            // for the worker.
            let end = CoreLatch::new();
            replacement::run_replacement_loop(&end, || {
                // Not `Idle::at_start`: the thread that left the worker was
                // running (it did not count as searching), and so does this
                // one.
                self.run_until(&end, Idle::new());
            });
            self.leave_for_a_turn();
            if self.handover().pass_on() {
                break;
            }
        }
        Self::forget_hidden();
        guard.disarm();
    }

    /// Makes the calling thread, which is no worker, worker `index` of
    /// `registry` for the rest of its life, without running the scheduler
    /// loop (`ThreadPoolBuilder::use_current_thread`). The worker state is
    /// leaked: other threads may point to it as long as the process runs.
    pub(crate) fn adopt_current_thread(
        registry: Arc<Registry>,
        index: usize,
        queue: lifo::Worker<JobRef>,
        tasks: fifo::Worker<Notified>,
        settings: WorkerSettings,
    ) {
        debug_assert!(Self::with_current(|worker| worker.is_none()));
        #[cfg(feature = "tokio-compat")]
        super::tokio_compat::enter_for_life();
        let worker: &'static WorkerThread = Box::leak(Box::new(Self::new(
            registry, index, queue, tasks, settings, true,
        )));
        CURRENT.with(|current| current.set(worker));
        worker.registry.register_thread(index);
        worker.counters().start_busy(worker.registry.epoch());
        worker.registry.thread_started(index);
    }

    fn new(
        registry: Arc<Registry>,
        index: usize,
        queue: lifo::Worker<JobRef>,
        tasks: fifo::Worker<Notified>,
        settings: WorkerSettings,
        building_thread: bool,
    ) -> Self {
        let real_idle_hint = registry.sleepers.hint();
        let idle_hint = if settings.lazy_queueing {
            real_idle_hint
        } else {
            IdleHint::always_idle()
        };
        let counters: *const WorkerCounters = registry.counters(index);
        let handover: *const Handover = registry.handover(index);
        WorkerThread {
            counters,
            idle_hint,
            real_idle_hint,
            lazy_queueing: settings.lazy_queueing,
            queue,
            tasks,
            task_ticks: Cell::new(0),
            jobs_until_clock: Cell::new(MIN_JOINS_PER_CLOCK_LOOK),
            jobs_per_clock_look: Cell::new(MIN_JOINS_PER_CLOCK_LOOK),
            last_clock_look: Cell::new(Instant::now()),
            next_task_look: Cell::new(Instant::now()),
            serving_depth: Cell::new(0),
            poll_timing: PollTiming::new(registry.long_poll_threshold()),
            unannounced_batch: Cell::new(false),
            index,
            registry,
            victims: Victims::new(index, settings.steal.clone(), settings.topology.clone()),
            idle_config: settings.idle,
            // Only these read heartbeats and CPUs: elsewhere a
            // `sched_getcpu` per job would be wasted.
            publish_cpu: (settings.idle.policy == IdlePolicy::Balanced
                && settings.idle.yield_to_victim)
                || settings.steal.policy == StealPolicy::Topology,
            offer_skip: Cell::new(0),
            offer_backoff: Cell::new(0),
            full_queue_skip: Cell::new(0),
            #[cfg(feature = "fork")]
            stack_limit: Cell::new(super::stack_limit::stack_limit_here()),
            handover,
            just_took_turn: Cell::new(false),
            borrowers_back: Cell::new(ptr::null()),
            building_thread,
        }
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
    /// The calling worker registered its thread: it can be woken.
    pub(crate) fn worker_started(&self) {
        self.lock().count += 1;
        self.all.notify_all();
    }

    /// Worker `index` could not be set up as configured; `build` stops the
    /// pool and returns the error.
    pub(crate) fn worker_failed(&self, index: usize, error: io::Error) {
        self.lock().failure.get_or_insert((index, error));
    }

    /// The first worker that could not be set up, and why.
    pub(crate) fn take_failure(&self) -> Option<(usize, io::Error)> {
        self.lock().failure.take()
    }

    /// Waits until `workers` workers have started.
    pub(crate) fn wait_for(&self, workers: usize) {
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
