//! Scheduler counters and gauges: what each worker of a pool did (task
//! polls, jobs, steals, parks, busy time, long polls) and has queued, and
//! the pool's gauges, gathered into a [`PoolStats`] by
//! [`ThreadPool::stats`].
//!
//! # Counting off the shared lines
//! Each worker counts into its own cache line, and only that worker writes
//! it (a relaxed load and store, no read-modify-write: [`bump`]), so
//! counting never contends. Most counts are on the idle paths. Two are on
//! busy ones: one add per task poll and one per job the scheduler loop
//! runs, into a line no other thread writes, which the worker reaches
//! through a pointer it keeps. A `join` whose second half its own worker
//! takes back runs that half inline and counts nothing, so the `join`
//! fast path is untouched. Readers sum the lines with relaxed loads: a
//! snapshot taken while the pool runs is a consistent-enough picture of
//! monotonic counters, not an atomic one; each counter is loaded once, so
//! the sums of a snapshot are exactly the sums of its per-worker values.
//!
//! # What other workers stole from a worker
//! Only the thief knows what it took, but the count belongs to the victim.
//! Kept on the thief's own line, per victim, it would cost a row of
//! counters per thief, `n²` in all for `n` workers (the builder allows
//! [`MAX_THREADS`](crate::MAX_THREADS) = 65 536). So the thief adds it,
//! with one relaxed `fetch_add` per successful steal, to a line of the
//! victim's that the victim itself never reads or writes ([`StolenFrom`],
//! padded apart from its counters): the victim's counters and queue words
//! see nothing of it. The thieves of one victim share that line, but they
//! are idle workers, and a steal already writes the victim's block words.
//!
//! # Busy time
//! A worker is busy from the moment it starts or wakes until it parks:
//! searching for work counts as busy, and so does a task or job that
//! blocks its thread. The clock is read where a park happens anyway, once
//! before the worker parks and once after it wakes: never per poll or per
//! job. One word, written by the worker alone, holds it all, so a reader
//! needs one load and no protocol: while parked, the busy nanoseconds so
//! far; while busy, [`BUSY`] plus the nanoseconds since the pool's epoch
//! that were not busy, so that the time busy is now minus that.
//!
//! # Depths and gauges
//! Queue depths and the pool's gauges are read when [`ThreadPool::stats`]
//! is called, racily. A worker's queue depth is its stealer's length: the
//! entries other workers could take. Entries in the block the worker holds
//! to itself (at most one block, 32 entries in the default geometries)
//! are not counted: their positions are the owner's plain cells, and
//! publishing them would cost every push and pop. The injectors' depths,
//! the blocking pool's threads and queue, the pending timers and the live
//! tasks are read under their own locks (the task list's shard locks, the
//! blocking queue's, the timer wheel's) for the moment of the call.
//!
//! [`ThreadPool::stats`]: crate::ThreadPool::stats

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// What the workers of a pool did and have queued, and the pool's gauges.
///
/// The counters (`steals` to `long_polls`) are summed over all workers
/// since the pool was built; [`workers`](Self::workers) has them, and
/// more, per worker. The depths and gauges are read when the snapshot is
/// taken. Returned by [`ThreadPool::stats`](crate::ThreadPool::stats).
/// With the `serde` feature it is `Serialize + Deserialize` (fields
/// missing from the input take their default).
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
/// pool.install(|| bwos::join(|| (), || ()));
/// let stats = pool.stats();
/// assert!(stats.credits_spent <= stats.credits_earned);
/// assert_eq!(stats.workers.len(), 2);
/// assert_eq!(stats.steals, stats.workers.iter().map(|w| w.steals).sum::<u64>());
/// println!("{stats}");
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct PoolStats {
    /// Jobs taken from another worker's queue (a block counts once).
    pub steals: u64,
    /// Steal attempts on one victim that found nothing to take.
    pub failed_steals: u64,
    /// Times a worker fell asleep (parked until woken).
    pub sleeps: u64,
    /// Times a sleeping worker was woken by another thread (a thief with
    /// wake-up credits, a producer of new work, or the pool's shutdown).
    pub wakeups: u64,
    /// Wake-up credits earned ([`IdlePolicy::Balanced`]): two per
    /// successful steal, plus those taken over from busy victims.
    ///
    /// [`IdlePolicy::Balanced`]: crate::IdlePolicy::Balanced
    pub credits_earned: u64,
    /// Wake-up credits spent: on waking a sleeping worker, or on staying
    /// awake past the sleep threshold. A credit a thief takes over from a
    /// busy victim counts as spent (the victim's) and earned (the
    /// thief's), so `credits_earned - credits_spent` is what the workers
    /// hold.
    pub credits_spent: u64,
    /// Times a thief gave its core up to a busy victim that seemed
    /// preempted on that core ([`IdlePolicy::Balanced`]).
    ///
    /// [`IdlePolicy::Balanced`]: crate::IdlePolicy::Balanced
    pub yields_to_victim: u64,
    /// Blocks of items stolen by participants of work-list runs
    /// ([`worklist`](crate::worklist)).
    pub worklist_steals: u64,
    /// Items those steals moved (a block holds up to a few hundred).
    pub worklist_items_stolen: u64,
    /// Items of work-list runs that went to the shared spill because
    /// their participant's queue was full.
    pub worklist_spilled: u64,
    /// Detached jobs ([`spawn`](crate::spawn), `spawn_broadcast`) whose
    /// panic no [panic handler](crate::ThreadPoolBuilder::panic_handler)
    /// took: each was reported on stderr and dropped, and the pool carried
    /// on (rayon aborts the process instead).
    pub unhandled_panics: u64,
    /// Task polls that ran longer than the pool's
    /// [`long_poll_threshold`](crate::ThreadPoolBuilder::long_poll_threshold)
    /// (default 10 ms). Each held up the tasks queued behind it on its
    /// worker; `docs/usage.md` ("Long polls") tells how to find the task.
    pub long_polls: u64,
    /// Each worker's counters and queue depths, by
    /// [`current_thread_index`](crate::current_thread_index). The sums
    /// above are the sums of these (for the counters both have).
    pub workers: Vec<WorkerStats>,
    /// Tasks in the pool's task injector: woken or spawned outside the
    /// pool's workers (or overflowing a worker's full queue), waiting for
    /// a worker to take them (tokio's `global_queue_depth`).
    pub injection_queue_depth: usize,
    /// Fork/join jobs in the pool's job injector: `install`, `join`,
    /// `scope` and `spawn` called from outside the pool (or overflowing a
    /// worker's full queue), waiting for a worker.
    pub job_injection_queue_depth: usize,
    /// Async tasks of the pool spawned and not yet completed or cancelled
    /// (tokio's `num_alive_tasks`). Blocking closures
    /// ([`spawn_blocking`](crate::task::spawn_blocking)) are not tasks
    /// here: see the blocking gauges.
    pub num_alive_tasks: usize,
    /// Threads of the pool's blocking pool alive now, busy or idle
    /// (tokio's `num_blocking_threads`). The busy ones are
    /// `num_blocking_threads - num_idle_blocking_threads`.
    pub num_blocking_threads: usize,
    /// Blocking threads waiting for a closure to run (tokio's
    /// `num_idle_blocking_threads`); an idle thread exits after
    /// [`blocking_keep_alive`](crate::ThreadPoolBuilder::blocking_keep_alive).
    pub num_idle_blocking_threads: usize,
    /// Blocking closures waiting for a thread: every thread is busy and
    /// [`max_blocking_threads`](crate::ThreadPoolBuilder::max_blocking_threads)
    /// run (tokio's `blocking_queue_depth`).
    pub blocking_queue_depth: usize,
    /// Timers of the pool (a `time::sleep`, `timeout` or `interval`
    /// waiting) that have not fired yet.
    pub num_pending_timers: usize,
    /// Socket readiness events the pool's I/O driver has handled since it
    /// was created by the pool's first socket (tokio's
    /// `io_driver_ready_count`): one per socket per poll that reported it.
    pub io_driver_ready_count: u64,
}

/// One worker's counters and queue depths, in
/// [`PoolStats::workers`]. The counters count since the pool was built;
/// the depths are read when the snapshot is taken. With the `serde`
/// feature it is `Serialize + Deserialize` (fields missing from the input
/// take their default).
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let task = pool.spawn_task(async {
///     bwos::task::yield_now().await;
/// });
/// pool.block_on(task).unwrap();
/// let worker: &bwos::WorkerStats = &pool.stats().workers[0];
/// assert_eq!(worker.poll_count, 2);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct WorkerStats {
    /// Task polls the worker ran (tokio's `worker_poll_count`); a task
    /// that yields or waits is polled once per wake-up.
    pub poll_count: u64,
    /// Fork/join jobs the worker's scheduler loop ran: stolen, injected,
    /// spawned, or taken from its own queue while it waited for a `join`
    /// or `install`. The second half of a `join` that its own worker takes
    /// back runs inline and is not counted (that path counts nothing).
    pub job_count: u64,
    /// Steals by this worker (a block counts once; tokio's
    /// `worker_steal_operations`). Summed in [`PoolStats::steals`].
    pub steals: u64,
    /// Steal attempts by this worker on one victim that found nothing.
    /// Summed in [`PoolStats::failed_steals`].
    pub failed_steals: u64,
    /// Async tasks other workers stole from this worker's queue.
    pub tasks_stolen_from: u64,
    /// Fork/join jobs other workers stole from this worker's queue.
    pub jobs_stolen_from: u64,
    /// Times this worker parked, sleeping until woken (tokio's
    /// `worker_park_count`). Summed in [`PoolStats::sleeps`].
    pub sleeps: u64,
    /// Times another thread woke this worker from a park. Summed in
    /// [`PoolStats::wakeups`].
    pub wakeups: u64,
    /// How long this worker was busy: running work or searching for it,
    /// from its start to now, less the time it was parked (tokio's
    /// `worker_total_busy_duration`).
    pub busy_duration: Duration,
    /// Task polls on this worker longer than the pool's long-poll
    /// threshold. Summed in [`PoolStats::long_polls`].
    pub long_polls: u64,
    /// Tasks queued on this worker (tokio's `worker_local_queue_depth`):
    /// those other workers could steal, which leaves out at most the one
    /// block of the queue the worker holds to itself (32 tasks).
    pub task_queue_depth: usize,
    /// Fork/join jobs queued on this worker: those other workers could
    /// steal, which leaves out at most the one block the worker holds to
    /// itself (32 jobs in the default
    /// [`queue_config`](crate::ThreadPoolBuilder::queue_config)).
    pub job_queue_depth: usize,
}

impl fmt::Display for PoolStats {
    /// The sums on the first line, the pool's gauges on the second, then
    /// one line per worker.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "steals {} (failed attempts {}), sleeps {}, wake-ups {}, credits earned {} / spent {}, \
             yields to victim {}, work-list steals {} ({} items), spilled {}, unhandled panics {}, \
             long polls {}",
            self.steals,
            self.failed_steals,
            self.sleeps,
            self.wakeups,
            self.credits_earned,
            self.credits_spent,
            self.yields_to_victim,
            self.worklist_steals,
            self.worklist_items_stolen,
            self.worklist_spilled,
            self.unhandled_panics,
            self.long_polls
        )?;
        write!(
            f,
            "\ninjected: {} tasks, {} jobs; alive tasks {}; blocking threads {} ({} idle), \
             {} closures queued; pending timers {}; I/O events {}",
            self.injection_queue_depth,
            self.job_injection_queue_depth,
            self.num_alive_tasks,
            self.num_blocking_threads,
            self.num_idle_blocking_threads,
            self.blocking_queue_depth,
            self.num_pending_timers,
            self.io_driver_ready_count
        )?;
        for (index, worker) in self.workers.iter().enumerate() {
            write!(f, "\nworker {index}: {worker}")?;
        }
        Ok(())
    }
}

impl fmt::Display for WorkerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "polls {}, jobs {}, steals {} (failed attempts {}), stolen from it {} tasks / {} jobs, \
             sleeps {}, wake-ups {}, busy {:?}, long polls {}, queued {} tasks / {} jobs",
            self.poll_count,
            self.job_count,
            self.steals,
            self.failed_steals,
            self.tasks_stolen_from,
            self.jobs_stolen_from,
            self.sleeps,
            self.wakeups,
            self.busy_duration,
            self.long_polls,
            self.task_queue_depth,
            self.job_queue_depth
        )
    }
}

/// In a worker's busy word: the worker is busy (see "Busy time").
const BUSY: u64 = 1 << 63;

/// One worker's counters; written only by that worker, except
/// [`stolen_from`](Self::stolen_from).
#[derive(Default)]
pub(crate) struct WorkerCounters {
    polls: AtomicU64,
    jobs: AtomicU64,
    steals: AtomicU64,
    failed_steals: AtomicU64,
    sleeps: AtomicU64,
    wakeups: AtomicU64,
    credits_earned: AtomicU64,
    credits_spent: AtomicU64,
    yields_to_victim: AtomicU64,
    worklist_steals: AtomicU64,
    worklist_items_stolen: AtomicU64,
    worklist_spilled: AtomicU64,
    long_polls: AtomicU64,
    /// See "Busy time" in the module docs; 0: parked (or not started),
    /// never busy so far.
    busy: AtomicU64,
    /// What thieves took from this worker: their line, not its own.
    stolen_from: CachePadded<StolenFrom>,
}

/// What other workers stole from one worker, counted by the thieves (see
/// "What other workers stole from a worker" in the module docs).
#[derive(Default)]
pub(crate) struct StolenFrom {
    jobs: AtomicU64,
    tasks: AtomicU64,
}

impl StolenFrom {
    /// A thief took `n` jobs.
    pub(crate) fn jobs(&self, n: usize) {
        // Relaxed: a count; it publishes nothing. A read-modify-write:
        // any thief may write here.
        self.jobs.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A thief took `n` tasks.
    pub(crate) fn tasks(&self, n: usize) {
        // Relaxed: as for `jobs`.
        self.tasks.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Adds `n` to a counter that only the calling worker writes.
#[inline(always)]
fn bump(counter: &AtomicU64, n: u64) {
    // Relaxed load and store: the owner is the only writer, so no update
    // is lost; readers only need some recent value of a monotonic count.
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// Nanoseconds from `epoch` to now, below [`BUSY`] (which 292 years of
/// uptime would reach).
fn nanos_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).map_or(BUSY - 1, |nanos| nanos.min(BUSY - 1))
}

impl WorkerCounters {
    /// The worker is about to run a task's poll.
    #[inline(always)]
    pub(crate) fn poll(&self) {
        bump(&self.polls, 1);
    }

    /// The worker's scheduler loop is about to run a fork/join job.
    #[inline(always)]
    pub(crate) fn job(&self) {
        bump(&self.jobs, 1);
    }

    pub(crate) fn steal(&self) {
        bump(&self.steals, 1);
    }

    pub(crate) fn failed_steals(&self, n: u64) {
        bump(&self.failed_steals, n);
    }

    /// The worker is about to park; `epoch` is the pool's (busy time
    /// stops here).
    pub(crate) fn fell_asleep(&self, epoch: Instant) {
        bump(&self.sleeps, 1);
        self.stop_busy(epoch);
    }

    /// The worker is back from a park (busy time goes on).
    pub(crate) fn awake(&self, epoch: Instant) {
        self.start_busy(epoch);
    }

    pub(crate) fn wakeup(&self) {
        bump(&self.wakeups, 1);
    }

    pub(crate) fn credits_earned(&self, n: u64) {
        bump(&self.credits_earned, n);
    }

    pub(crate) fn credits_spent(&self, n: u64) {
        bump(&self.credits_spent, n);
    }

    pub(crate) fn yield_to_victim(&self) {
        bump(&self.yields_to_victim, 1);
    }

    /// A work-list participant stole a block of `items` items.
    pub(crate) fn worklist_steal(&self, items: u64) {
        bump(&self.worklist_steals, 1);
        bump(&self.worklist_items_stolen, items);
    }

    pub(crate) fn worklist_spilled(&self, items: u64) {
        bump(&self.worklist_spilled, items);
    }

    /// A task poll on this worker ran longer than the pool's threshold.
    pub(crate) fn long_poll(&self) {
        bump(&self.long_polls, 1);
    }

    /// Where thieves count what they took from this worker.
    pub(crate) fn stolen_from(&self) -> &StolenFrom {
        &self.stolen_from
    }

    /// The worker starts (or wakes) and is busy from now; `epoch` is the
    /// pool's. Nothing if it is busy already.
    pub(crate) fn start_busy(&self, epoch: Instant) {
        // Relaxed: only the owner writes the word (see `bump`).
        let word = self.busy.load(Ordering::Relaxed);
        if word & BUSY == 0 {
            let idle_before = nanos_since(epoch).saturating_sub(word);
            self.busy.store(BUSY | idle_before, Ordering::Relaxed);
        }
    }

    /// The worker parks (or stops) and is not busy from now. Nothing if
    /// it is not busy.
    pub(crate) fn stop_busy(&self, epoch: Instant) {
        // Relaxed: as in `start_busy`.
        let word = self.busy.load(Ordering::Relaxed);
        if word & BUSY != 0 {
            let busy = nanos_since(epoch).saturating_sub(word & !BUSY);
            self.busy.store(busy, Ordering::Relaxed);
        }
    }

    /// Reads this worker's counters into its [`WorkerStats`] (depths left
    /// at zero) and adds them to the sums in `sum`, loading each once, so
    /// that the sums are exactly the sums of the workers' values.
    pub(crate) fn read_into(&self, epoch: Instant, sum: &mut PoolStats) -> WorkerStats {
        // Relaxed: see `bump`.
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let busy = get(&self.busy);
        let busy_nanos = if busy & BUSY == 0 {
            busy
        } else {
            nanos_since(epoch).saturating_sub(busy & !BUSY)
        };
        let worker = WorkerStats {
            poll_count: get(&self.polls),
            job_count: get(&self.jobs),
            steals: get(&self.steals),
            failed_steals: get(&self.failed_steals),
            tasks_stolen_from: get(&self.stolen_from.tasks),
            jobs_stolen_from: get(&self.stolen_from.jobs),
            sleeps: get(&self.sleeps),
            wakeups: get(&self.wakeups),
            busy_duration: Duration::from_nanos(busy_nanos),
            long_polls: get(&self.long_polls),
            task_queue_depth: 0,
            job_queue_depth: 0,
        };
        sum.steals += worker.steals;
        sum.failed_steals += worker.failed_steals;
        sum.sleeps += worker.sleeps;
        sum.wakeups += worker.wakeups;
        sum.long_polls += worker.long_polls;
        sum.credits_earned += get(&self.credits_earned);
        sum.credits_spent += get(&self.credits_spent);
        sum.yields_to_victim += get(&self.yields_to_victim);
        sum.worklist_steals += get(&self.worklist_steals);
        sum.worklist_items_stolen += get(&self.worklist_items_stolen);
        sum.worklist_spilled += get(&self.worklist_spilled);
        worker
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(counters: &WorkerCounters, epoch: Instant) -> Duration {
        counters
            .read_into(epoch, &mut PoolStats::default())
            .busy_duration
    }

    fn spin(time: Duration) {
        let start = Instant::now();
        while start.elapsed() < time {
            std::hint::spin_loop();
        }
    }

    // Mutation caught: `stop_busy` keeping the busy bit (the parked time
    // counts), `start_busy` forgetting the busy time so far (right after
    // the wake-up the worker would have been busy for next to nothing).
    // The bounds are lower bounds only: a spin of 20 ms is at least 20 ms
    // of busy time, however the thread is scheduled.
    #[test]
    fn busy_time_stops_while_parked_and_adds_up_across_parks() {
        let epoch = Instant::now();
        let counters = WorkerCounters::default();
        spin(Duration::from_millis(2));
        assert_eq!(busy(&counters, epoch), Duration::ZERO, "not started");

        counters.start_busy(epoch);
        spin(Duration::from_millis(20));
        counters.fell_asleep(epoch);
        let first = busy(&counters, epoch);
        assert!(first >= Duration::from_millis(20), "{first:?}");
        spin(Duration::from_millis(3));
        assert_eq!(busy(&counters, epoch), first, "parked time is not busy");

        counters.awake(epoch);
        assert!(busy(&counters, epoch) >= first, "the time before the park");
        spin(Duration::from_millis(3));
        let running = busy(&counters, epoch);
        assert!(running >= first + Duration::from_millis(3), "{running:?}");
        counters.stop_busy(epoch);
        let second = busy(&counters, epoch);
        assert!(second >= running);
        // Twice in a row changes nothing.
        counters.stop_busy(epoch);
        assert_eq!(busy(&counters, epoch), second);
        counters.start_busy(epoch);
        counters.start_busy(epoch);
        assert!(busy(&counters, epoch) >= second);
    }

    #[test]
    fn sums_are_the_sums_of_the_workers() {
        let epoch = Instant::now();
        let workers: Vec<WorkerCounters> = (0..3).map(|_| WorkerCounters::default()).collect();
        for (i, worker) in workers.iter().enumerate() {
            for _ in 0..=i {
                worker.steal();
                worker.poll();
            }
            worker.failed_steals(10);
            worker.stolen_from().tasks(5);
        }
        let mut sum = PoolStats::default();
        let stats: Vec<WorkerStats> = workers
            .iter()
            .map(|w| w.read_into(epoch, &mut sum))
            .collect();
        assert_eq!(sum.steals, 6);
        assert_eq!(sum.failed_steals, 30);
        assert_eq!(stats[2].steals, 3);
        assert_eq!(stats[2].poll_count, 3);
        assert_eq!(stats[1].tasks_stolen_from, 5);
    }
}
