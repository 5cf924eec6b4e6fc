//! Scheduler counters: what the workers of a pool did while looking for
//! work, and how many task polls ran long, summed into a [`PoolStats`] by
//! [`ThreadPool::stats`].
//!
//! Each worker counts into its own cache line, and only that worker writes
//! it (a relaxed load and store, no read-modify-write), so counting costs
//! the idle paths a few plain instructions and never touches the `join`
//! fast path. Readers sum the lines with relaxed loads: a snapshot taken
//! while the pool runs is a consistent-enough sum of monotonic counters,
//! not an atomic picture.
//!
//! [`ThreadPool::stats`]: crate::ThreadPool::stats

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the workers of a pool did while they looked for work, and the
/// task polls that ran long, summed over all workers since the pool was
/// built. Returned by
/// [`ThreadPool::stats`](crate::ThreadPool::stats). With the `serde`
/// feature it is `Serialize + Deserialize`.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
/// pool.install(|| bwos::join(|| (), || ()));
/// let stats = pool.stats();
/// assert!(stats.credits_spent <= stats.credits_earned);
/// println!("{stats}");
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
}

impl fmt::Display for PoolStats {
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
        )
    }
}

/// One worker's counters; written only by that worker.
#[derive(Default)]
pub(crate) struct WorkerCounters {
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
}

/// Adds `n` to a counter that only the calling worker writes.
fn bump(counter: &AtomicU64, n: u64) {
    // Relaxed load and store: the owner is the only writer, so no update
    // is lost; readers only need some recent value of a monotonic count.
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

impl WorkerCounters {
    pub(crate) fn steal(&self) {
        bump(&self.steals, 1);
    }

    pub(crate) fn failed_steals(&self, n: u64) {
        bump(&self.failed_steals, n);
    }

    pub(crate) fn sleep(&self) {
        bump(&self.sleeps, 1);
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

    /// Adds this worker's counts to `sum`.
    pub(crate) fn add_to(&self, sum: &mut PoolStats) {
        // Relaxed: see `bump`.
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        sum.steals += get(&self.steals);
        sum.failed_steals += get(&self.failed_steals);
        sum.sleeps += get(&self.sleeps);
        sum.wakeups += get(&self.wakeups);
        sum.credits_earned += get(&self.credits_earned);
        sum.credits_spent += get(&self.credits_spent);
        sum.yields_to_victim += get(&self.yields_to_victim);
        sum.worklist_steals += get(&self.worklist_steals);
        sum.worklist_items_stolen += get(&self.worklist_items_stolen);
        sum.worklist_spilled += get(&self.worklist_spilled);
        sum.long_polls += get(&self.long_polls);
    }
}
