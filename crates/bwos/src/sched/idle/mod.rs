//! What a worker does when it finds no work: the idle policy.
//!
//! A worker that finds nothing runs *steal rounds* (every other worker
//! once, then the injector; see `steal`) and counts its failed steal
//! attempts, one per victim found empty (one per round in a pool of one).
//! Between rounds it waits according to [`IdlePolicy`]; once the count
//! passes the pool's sleep threshold it may sleep (`sleep.rs`: parked on
//! the futex until a producer, a thief with a wake-up credit, the
//! watchdog's hand-off, its latch or the shutdown wakes it).
//!
//! # Balanced work stealing (BWS, EuroSys'12, Algorithm 2)
//! - A successful steal earns two wake-up *credits* and resets the count.
//! - A failed attempt on a *busy* victim takes over one of the victim's
//!   credits (the thief will do the wake-up the victim owes: busy workers
//!   never pay for wake-ups, the work-first principle); on a *sleeping*
//!   victim, a thief holding credits spends one to wake it.
//! - Past the threshold a thief spends a credit to stay awake, or sleeps
//!   when it holds none.
//! - One thief, the *watchdog*, never sleeps while any worker is busy: the
//!   first thief that would sleep while nobody holds the role takes it. A
//!   watchdog that steals wakes up to two sleepers itself (with the
//!   credits it just earned) and hands the role to the first; if there is
//!   none it gives the role up, and the next thief that would sleep takes
//!   it. Past the threshold the watchdog yields its core after every
//!   failed round, and when every worker is idle (the pool has nothing to
//!   do) it sleeps too, so an idle pool uses no CPU.
//! - Yielding to a preempted victim without kernel support: each worker
//!   bumps a heartbeat between jobs and publishes the CPU it last ran on.
//!   A thief that finds the same busy victim twice in a row with the same
//!   heartbeat, last seen on the thief's own CPU, concludes that the
//!   victim waits for this CPU and yields it (`sched_yield`). It rarely
//!   fired in `bwos-bench corun` and changed neither fairness nor
//!   throughput beyond the noise (`docs/benchmarks.md`), so it is off by
//!   default (`ThreadPoolBuilder::yield_to_victim` turns it on).
//!
//! # No lost wake-up
//! None of the above is needed for correctness. Any sleep goes through
//! the protocol of `sleep.rs`: a worker announces itself asleep, fences,
//! and looks for visible work once more; a producer that makes work
//! visible fences and, if it sees no searching worker and a sleeping one,
//! wakes one. So work made visible while the last thief falls asleep is
//! found by the thief's final look or by the producer's wake-up. The
//! watchdog's purpose is to keep that producer-side wake-up rare: while
//! it searches, producers see a searcher and make no futex call. The loom
//! models `sleep_no_lost_wakeup` and `balanced_watchdog_hand_off_loses_no_work`
//! check both halves.

pub(crate) mod balance;
pub(crate) mod driver_seat;
pub(crate) mod park;
pub(crate) mod sleep;
pub(crate) mod spread;

use crate::sched::latch::CoreLatch;
use crate::sched::registry::Registry;
use crate::sched::stats::WorkerCounters;
use crate::sched::steal::topology::current_cpu;
use sleep::SleepOutcome;

/// What an idle worker does between two failed steal rounds, and when it
/// sleeps. Set with
/// [`ThreadPoolBuilder::idle_policy`](crate::ThreadPoolBuilder::idle_policy);
/// the number of failed steal attempts before sleeping is
/// [`ThreadPoolBuilder::sleep_threshold`](crate::ThreadPoolBuilder::sleep_threshold).
///
/// Under every policy a pool with nothing to do at all (every worker idle)
/// falls asleep once the threshold is passed, so an idle pool uses no CPU;
/// the policies differ in what thieves do while other workers are busy.
///
/// The default is [`Park`](IdlePolicy::Park). Measured with `bwos-bench
/// corun` (2-core VM, 5 repetitions, revision 83f154f): alone on the
/// machine it is within noise of `Spin` with 2 workers (fib 0.96x, tree
/// 0.97x of `Spin`'s time) and 0.52x-0.80x of it with 4 workers. In
/// co-runs `Balanced` is the fairest bwos policy (average unfairness 32%
/// with 2 workers per program against `Park`'s 61%, 51% against 101% with
/// 4), but its throughput is within noise of the others and the spread
/// between repetitions is wide, so the default stays the policy that costs
/// nothing alone. The README's "Scheduling policies" section has the
/// tables.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .idle_policy(bwos::IdlePolicy::Balanced)
///     .sleep_threshold(64)
///     .build()?;
/// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdlePolicy {
    /// Never give the core up while another worker is busy: thieves spin
    /// (with a short backoff) until they find work. The BWS paper's "no
    /// yielding" baseline; the fastest reaction on a dedicated machine,
    /// the worst neighbour on a shared one.
    Spin,
    /// `sched_yield` after every failed round, never sleep while another
    /// worker is busy: the ABP / Cilk++ behaviour BWS measures against.
    Yield,
    /// Spin for a few rounds, then yield after each round, then sleep
    /// once the sleep threshold is passed (rayon's approach). A pool with
    /// more workers than the machine has cores skips the spinning rounds:
    /// there a spinning thief holds a core that a preempted worker with
    /// work is waiting for (fib(30) on 8 workers over 2 cores: median
    /// 1.03x the time of 2 workers with, 1.15x without, 8 interleaved runs).
    #[default]
    Park,
    /// Balanced work stealing (BWS Algorithm 2): wake-up credits, a
    /// watchdog thief, sleeping past the threshold, and yielding to a
    /// preempted victim; see the module documentation of `idle` in the
    /// sources and the README's co-run section.
    Balanced,
}

/// The idle configuration of one pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdleConfig {
    pub(crate) policy: IdlePolicy,
    pub(crate) sleep_threshold: u32,
    /// Whether `Balanced` thieves yield to a seemingly preempted victim.
    pub(crate) yield_to_victim: bool,
    /// More workers than available cores: `Park` does not spin.
    pub(crate) oversubscribed: bool,
}

/// The default [`ThreadPoolBuilder::sleep_threshold`](crate::ThreadPoolBuilder::sleep_threshold)
/// of a pool of two workers: failed steal attempts before a thief may
/// sleep. Under `Spin`, `Yield` and `Park` a pool of `n` workers defaults
/// to this many attempts per other worker, `32 * (n - 1)`: 32 failed
/// rounds over all victims, whatever the pool's size (rayon also counts
/// 32 rounds before sleeping). `Balanced` keeps 32 attempts at any size,
/// as in the BWS paper (its credits decide who sleeps).
///
/// 32 keeps `Park` where it was before the policies existed (a two-worker
/// pool spins 10 rounds, yields 22, then sleeps), which measured within
/// noise of `Spin` alone on the machine; the BWS paper used 64 for 32
/// workers and found 32 to 256 best. A flat 32 attempts made a pool of 8
/// workers on 2 cores fall asleep after 5 rounds, between two parallel
/// calls and whenever work ran short for a moment, and pay a wake-up each
/// time: fib(30) on 8 workers took 1.25-1.32x the time of 2 workers under
/// `Park` and `Yield` (`bwos-bench corun-child`, 2-core VM); with 32
/// rounds, 1.01-1.11x. A pool of two workers is unchanged. The cost falls
/// on programs with less parallelism than workers: their idle thieves
/// yield for longer, in turns with the workers that have work (the
/// binomial UTS tree on 8 workers over 2 cores: 0.12-0.17 s before,
/// 0.15-0.20 s after); an explicit
/// [`sleep_threshold`](crate::ThreadPoolBuilder::sleep_threshold) of 32
/// restores the old behaviour.
pub const DEFAULT_SLEEP_THRESHOLD: u32 = 32;

/// The sleep threshold of a pool of `workers` under `policy`, built
/// without [`ThreadPoolBuilder::sleep_threshold`](crate::ThreadPoolBuilder::sleep_threshold):
/// [`DEFAULT_SLEEP_THRESHOLD`] attempts per victim (a pool of one counts
/// one attempt per round), except under `Balanced`, whose wake-up credits
/// decide when a thief sleeps and which keeps the BWS paper's flat count
/// (fib(30), 8 workers over 2: 1.06-1.09x the time of 2 workers with 32
/// attempts, 1.10-1.30x with 224).
pub(crate) fn default_sleep_threshold(policy: IdlePolicy, workers: usize) -> u32 {
    if policy == IdlePolicy::Balanced {
        return DEFAULT_SLEEP_THRESHOLD;
    }
    let victims = u32::try_from(workers.saturating_sub(1).max(1)).unwrap_or(u32::MAX);
    DEFAULT_SLEEP_THRESHOLD.saturating_mul(victims)
}

/// Rounds spent spinning before `Park` starts yielding.
const SPIN_ROUNDS: u32 = 10;
/// The longest pause between two looks while spinning: `2^4` spin-loop
/// hints (a fraction of a microsecond on the machines measured, see
/// `docs/benchmarks.md`), so that an idle worker reacts to shared work
/// while a fine-grained job is still worth splitting.
const MAX_SPIN_SHIFT: u32 = 4;

/// The worker an [`Idle`] runs for, as much of it as the idle policies
/// use: the pool's shared state (sleep, balance, the wake-up of other
/// workers), the worker's index and counters, and the pool's idle
/// configuration. Made by `WorkerThread::idle_worker` at each call; three
/// words, passed by value.
#[derive(Clone, Copy)]
pub(crate) struct IdleWorker<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) index: usize,
    pub(crate) config: &'a IdleConfig,
}

impl IdleWorker<'_> {
    /// The worker's scheduler counters.
    #[inline(always)]
    fn counters(&self) -> &WorkerCounters {
        self.registry.counters(self.index)
    }
}

/// One worker's idle state between two pieces of work.
pub(crate) struct Idle {
    /// Failed rounds since the worker last found work.
    rounds: u32,
    /// Failed steal attempts since the last reset (BWS's steal counter).
    attempts: u32,
    /// Failed attempts in the current round.
    round_failures: u32,
    searching: bool,
    /// The last busy victim found empty and its heartbeat then.
    last_busy: Option<(usize, u64)>,
    /// A watchdog past the threshold yields after every round.
    watchdog_yields: bool,
}

impl Idle {
    pub(crate) fn new() -> Self {
        Idle {
            rounds: 0,
            attempts: 0,
            round_failures: 0,
            searching: false,
            last_busy: None,
            watchdog_yields: false,
        }
    }

    /// The idle state of a worker that has just started: it counts as
    /// searching from its creation (`Registry::new` counts every worker as
    /// a searcher), so that work pushed before its first look for work is
    /// offered to it. Otherwise a job pushed then stays private, and if the
    /// job that runs instead blocks until that one runs (a barrier across
    /// spawns), the pool deadlocks.
    pub(crate) fn at_start(worker: IdleWorker<'_>) -> Self {
        worker.registry.balance.set_busy(worker.index, false);
        Idle {
            searching: true,
            ..Idle::new()
        }
    }

    /// The worker starts a round: it counts as searching from now on.
    pub(crate) fn start_round(&mut self, worker: IdleWorker<'_>) {
        if !self.searching {
            let registry = worker.registry;
            registry.balance.set_busy(worker.index, false);
            registry.sleepers.start_searching();
            self.searching = true;
        }
    }

    /// A steal attempt on `victim` found nothing to take.
    pub(crate) fn failed_attempt(&mut self, worker: IdleWorker<'_>, victim: usize) {
        worker.counters().failed_steals(1);
        self.round_failures += 1;
        let config = worker.config;
        if config.policy != IdlePolicy::Balanced {
            return;
        }
        let registry = worker.registry;
        let (balance, me) = (&registry.balance, worker.index);
        let observed = balance.observe(victim);
        if observed.busy {
            let stalled = self.last_busy == Some((victim, observed.heartbeat));
            if config.yield_to_victim
                && stalled
                && observed.cpu.is_some()
                && observed.cpu == current_cpu()
            {
                // The victim has not moved on since we last looked and it
                // last ran here: it waits for this CPU.
                std::thread::yield_now();
                worker.counters().yield_to_victim();
                self.last_busy = None;
            } else {
                if balance.take_over_credit(victim, me) {
                    worker.counters().credits_earned(1);
                    worker.counters().credits_spent(1);
                }
                self.last_busy = Some((victim, observed.heartbeat));
            }
        } else if balance.credits(me) > 0
            && registry.sleepers.is_asleep(victim)
            && registry
                .sleepers
                .wake(victim, |index| registry.unpark(index))
            && balance.take_credit(me)
        {
            worker.counters().credits_spent(1);
        }
    }

    /// The worker stole a job: BWS credits and the watchdog's hand-off.
    pub(crate) fn stole(&mut self, worker: IdleWorker<'_>) {
        worker.counters().steal();
        self.attempts = 0;
        if worker.config.policy != IdlePolicy::Balanced {
            return;
        }
        let registry = worker.registry;
        let (balance, me) = (&registry.balance, worker.index);
        balance.earn(me, 2);
        worker.counters().credits_earned(2);
        let woken = balance.hand_off(me, &registry.sleepers, |index| registry.unpark(index));
        worker.counters().credits_spent(u64::from(woken));
    }

    /// A whole round found nothing: wait a little, or sleep, before the
    /// worker looks again. Returns early if `latch` is set.
    pub(crate) fn no_work_found(&mut self, worker: IdleWorker<'_>, latch: &CoreLatch) {
        // A pool of one has no victims: its rounds count one attempt.
        self.attempts = self.attempts.saturating_add(self.round_failures.max(1));
        self.round_failures = 0;
        let config = worker.config;
        let over = self.attempts > config.sleep_threshold;
        let registry = worker.registry;
        let all_idle = || registry.all_idle();
        match config.policy {
            IdlePolicy::Spin => {
                spin(self.rounds);
                if over {
                    self.attempts = 0;
                    if all_idle() {
                        self.sleep(worker, latch);
                    }
                }
            }
            IdlePolicy::Yield => {
                std::thread::yield_now();
                if over {
                    self.attempts = 0;
                    if all_idle() {
                        self.sleep(worker, latch);
                    }
                }
            }
            IdlePolicy::Park => {
                if self.rounds < SPIN_ROUNDS && !config.oversubscribed {
                    spin(self.rounds);
                } else {
                    std::thread::yield_now();
                    if over {
                        self.attempts = 0;
                        self.sleep(worker, latch);
                    }
                }
            }
            IdlePolicy::Balanced => {
                if self.watchdog_yields {
                    std::thread::yield_now();
                } else {
                    spin(self.rounds);
                }
                if over {
                    self.attempts = 0;
                    let (balance, me) = (&registry.balance, worker.index);
                    if !balance.may_sleep(me) {
                        if all_idle() {
                            balance.appoint(me, None);
                            self.sleep(worker, latch);
                        } else {
                            self.watchdog_yields = true;
                        }
                    } else if balance.take_credit(me) {
                        worker.counters().credits_spent(1);
                    } else {
                        self.sleep(worker, latch);
                    }
                }
            }
        }
        self.rounds = self.rounds.saturating_add(1);
    }

    fn sleep(&mut self, worker: IdleWorker<'_>, latch: &CoreLatch) {
        let registry = worker.registry;
        // The clock is read here, around a park, for the worker's busy
        // time (`stats.rs`), never on the way to a job or a poll.
        let outcome = registry.sleepers.sleep_parking_with(
            worker.index,
            latch,
            || registry.has_visible_work(worker.index),
            || worker.counters().fell_asleep(registry.epoch()),
            |still_asleep, wake_early| {
                park::park_worker(registry, worker.index, still_asleep, wake_early)
            },
        );
        if outcome != SleepOutcome::DidNotPark {
            worker.counters().awake(registry.epoch());
        }
        // Before the worker runs anything: if it watched the timers (or
        // was just handed the watch), another sleeper takes the watch.
        park::leave_timer_watch(registry, worker.index);
        if outcome != SleepOutcome::DidNotPark {
            // Before it looks for work: off its waker's CPU (`spread.rs`).
            let may_move = outcome == SleepOutcome::Woken
                && !worker.config.oversubscribed
                && worker.config.policy != IdlePolicy::Balanced;
            registry.spread.resumed(worker.index, may_move);
        }
        if outcome == SleepOutcome::Woken {
            worker.counters().wakeup();
        }
        self.rounds = 0;
        self.watchdog_yields = false;
        self.last_busy = None;
    }

    /// The worker found work (or stops waiting): it no longer searches.
    pub(crate) fn work_found(&mut self, worker: IdleWorker<'_>) {
        if self.searching {
            let registry = worker.registry;
            registry.sleepers.stop_searching();
            registry.balance.set_busy(worker.index, true);
            self.searching = false;
        }
        self.rounds = 0;
        self.attempts = 0;
        self.round_failures = 0;
        self.watchdog_yields = false;
        self.last_busy = None;
    }
}

/// Pauses for `2^min(rounds, MAX_SPIN_SHIFT)` spin-loop hints.
fn spin(rounds: u32) {
    for _ in 0..1u32 << rounds.min(MAX_SPIN_SHIFT) {
        std::hint::spin_loop();
    }
}
