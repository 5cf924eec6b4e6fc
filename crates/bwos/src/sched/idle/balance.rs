//! The shared state of balanced work stealing (BWS, EuroSys'12, Algorithm
//! 2 and section 4): per worker its wake-up credits, whether it is busy,
//! a heartbeat and the CPU it last ran on; per pool the watchdog role.
//!
//! Everything here is a scheduling heuristic, not a correctness protocol:
//! a credit lost to a race or a stale heartbeat costs at most a late
//! wake-up or a needless yield. That no work is ever left with every
//! worker asleep rests on the sleep protocol (`sleep.rs`): a producer that
//! finds no searching worker wakes a sleeper itself. The watchdog is what
//! keeps that fallback rare (it searches, so producers see a searcher and
//! skip the futex call), and the loom model
//! `balanced_watchdog_hand_off_loses_no_work` checks that the hand-off and
//! credit wake-ups compose with the sleep protocol without losing work.

use std::cell::Cell;

use crossbeam_utils::CachePadded;

use super::sleep::Sleepers;
use crate::sched::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The watchdog word when no worker holds the role.
const NO_WATCHDOG: usize = usize::MAX;
/// The CPU word before a worker has published one.
const UNKNOWN_CPU: u32 = u32::MAX;

/// What one worker publishes to thieves.
struct Signals {
    /// Running a job (not searching, not asleep).
    busy: AtomicBool,
    /// Bumped by the worker between jobs: a busy worker whose heartbeat
    /// does not move is not making progress through its queue.
    heartbeat: AtomicU64,
    /// The CPU the worker last ran on, as `sched_getcpu` said.
    cpu: AtomicU32,
    /// Wake-up credits: wake-ups this worker owes the pool (BWS's wake-up
    /// counter). Thieves take credits over from busy workers.
    credits: AtomicU32,
}

/// A snapshot of another worker's signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Observed {
    pub(crate) busy: bool,
    pub(crate) heartbeat: u64,
    pub(crate) cpu: Option<u32>,
}

/// The pool's BWS state.
pub(crate) struct Balance {
    workers: Box<[CachePadded<Signals>]>,
    watchdog: CachePadded<AtomicUsize>,
}

impl Balance {
    pub(crate) fn new(num_workers: usize) -> Self {
        Balance {
            workers: (0..num_workers)
                .map(|_| {
                    CachePadded::new(Signals {
                        busy: AtomicBool::new(true),
                        heartbeat: AtomicU64::new(0),
                        cpu: AtomicU32::new(UNKNOWN_CPU),
                        credits: AtomicU32::new(0),
                    })
                })
                .collect(),
            watchdog: CachePadded::new(AtomicUsize::new(NO_WATCHDOG)),
        }
    }

    /// Worker `me` starts or stops running jobs.
    pub(crate) fn set_busy(&self, me: usize, busy: bool) {
        // Relaxed: a hint for thieves (see the module docs).
        self.workers[me].busy.store(busy, Ordering::Relaxed);
    }

    /// Worker `me` passes between two jobs, on `cpu`.
    pub(crate) fn beat(&self, me: usize, cpu: Option<u32>) {
        let signals = &self.workers[me];
        // Relaxed load and store: only `me` writes its heartbeat and CPU,
        // and thieves only compare snapshots.
        let beat = signals.heartbeat.load(Ordering::Relaxed);
        signals
            .heartbeat
            .store(beat.wrapping_add(1), Ordering::Relaxed);
        signals
            .cpu
            .store(cpu.unwrap_or(UNKNOWN_CPU), Ordering::Relaxed);
    }

    /// The last CPU worker `index` published.
    pub(crate) fn cpu_of(&self, index: usize) -> Option<u32> {
        // Relaxed: a hint.
        let cpu = self.workers[index].cpu.load(Ordering::Relaxed);
        (cpu != UNKNOWN_CPU).then_some(cpu)
    }

    /// A snapshot of worker `index`'s signals.
    pub(crate) fn observe(&self, index: usize) -> Observed {
        let signals = &self.workers[index];
        // Relaxed: a hint.
        Observed {
            busy: signals.busy.load(Ordering::Relaxed),
            heartbeat: signals.heartbeat.load(Ordering::Relaxed),
            cpu: self.cpu_of(index),
        }
    }

    /// The credits worker `me` holds.
    pub(crate) fn credits(&self, me: usize) -> u32 {
        // Relaxed: counters; the read-modify-writes below keep them exact.
        self.workers[me].credits.load(Ordering::Relaxed)
    }

    /// Worker `me` earns `n` credits (a successful steal earns two).
    pub(crate) fn earn(&self, me: usize, n: u32) {
        // Relaxed: a counter (see `credits`).
        self.workers[me].credits.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes one credit from worker `from` if it holds any; returns
    /// whether it did.
    pub(crate) fn take_credit(&self, from: usize) -> bool {
        // Relaxed: a counter (see `credits`); the update keeps it from
        // going below zero.
        self.workers[from]
            .credits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1))
            .is_ok()
    }

    /// Worker `thief` takes over one credit of busy worker `victim` (BWS:
    /// the thief will do the wake-up the victim owes). Returns whether a
    /// credit moved.
    pub(crate) fn take_over_credit(&self, victim: usize, thief: usize) -> bool {
        if self.take_credit(victim) {
            self.earn(thief, 1);
            true
        } else {
            false
        }
    }

    /// Whether worker `me` is the watchdog.
    pub(crate) fn is_watchdog(&self, me: usize) -> bool {
        // Acquire: pairs with the Release of `appoint`, so an appointed
        // worker that was woken sees its role.
        self.watchdog.load(Ordering::Acquire) == me
    }

    /// Worker `me` would like to sleep. It may not while it is the
    /// watchdog, and it takes the role instead of sleeping when nobody
    /// holds it: one thief always stays awake while the pool has work, so
    /// new parallelism is found without the producer's help. Returns
    /// whether `me` may sleep.
    pub(crate) fn may_sleep(&self, me: usize) -> bool {
        // AcqRel on success: the claim is ordered with the previous
        // holder's release; Acquire on failure: as in `is_watchdog`.
        match self
            .watchdog
            .compare_exchange(NO_WATCHDOG, me, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => false,
            Err(holder) => holder != me,
        }
    }

    /// Watchdog `me` hands its role to worker `to` (one it just woke), or
    /// gives it up (`None`). Does nothing if `me` is not the watchdog.
    pub(crate) fn appoint(&self, me: usize, to: Option<usize>) {
        // Release: pairs with `is_watchdog`'s Acquire (see there).
        let _ = self.watchdog.compare_exchange(
            me,
            to.unwrap_or(NO_WATCHDOG),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Watchdog `me` just stole a job: it wakes up to two sleepers itself,
    /// paying with its credits, and hands its role to the first one it
    /// wakes; with nobody asleep it gives the role up. `unpark(i)` unparks
    /// worker `i`. Returns how many it woke (0 if `me` is not the
    /// watchdog).
    pub(crate) fn hand_off(&self, me: usize, sleepers: &Sleepers, unpark: impl Fn(usize)) -> u32 {
        if !self.is_watchdog(me) {
            return 0;
        }
        let appointed = Cell::new(false);
        let mut woken = 0;
        for _ in 0..2 {
            if !self.take_credit(me) {
                break;
            }
            let found = sleepers.wake_one(|index| {
                if !appointed.replace(true) {
                    self.appoint(me, Some(index));
                }
                unpark(index);
            });
            if found.is_none() {
                self.earn(me, 1);
                break;
            }
            woken += 1;
        }
        if !appointed.get() {
            self.appoint(me, None);
        }
        woken
    }
}
