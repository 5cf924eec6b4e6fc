//! What a worker does when it finds no work: the idle policy.
//!
//! This policy: spin a little (work often shows up within
//! microseconds in fork/join), then yield the core a few times (the
//! machine may be oversubscribed), then sleep until woken. The balanced
//! policy of BWS (sleep thresholds, wake-up credits, a watchdog, yielding
//! to a preempted victim) replaces this module's [`Idle`] later.

pub(crate) mod sleep;

use crate::latch::CoreLatch;
use crate::worker::WorkerThread;

/// Rounds spent spinning before yielding.
const SPIN_ROUNDS: u32 = 10;
/// The longest pause between two looks while spinning: `2^4` spin-loop
/// hints, a quarter of a microsecond on the machines measured, so that a
/// hungry worker reacts to shared work while a fine-grained job is still
/// worth splitting.
const MAX_SPIN_SHIFT: u32 = 4;
/// Rounds after which the worker falls asleep.
const ROUNDS_BEFORE_SLEEP: u32 = 32;

/// One worker's idle state between two pieces of work.
pub(crate) struct Idle {
    rounds: u32,
    searching: bool,
}

impl Idle {
    pub(crate) fn new() -> Self {
        Idle {
            rounds: 0,
            searching: false,
        }
    }

    /// The worker found nothing: wait a little, or sleep, before it looks
    /// again. Returns early if `latch` is set.
    pub(crate) fn no_work_found(&mut self, worker: &WorkerThread, latch: &CoreLatch) {
        let registry = worker.registry();
        if !self.searching {
            registry.sleep.start_searching();
            self.searching = true;
        }
        if self.rounds < SPIN_ROUNDS {
            for _ in 0..1u32 << self.rounds.min(MAX_SPIN_SHIFT) {
                std::hint::spin_loop();
            }
            self.rounds += 1;
        } else if self.rounds < ROUNDS_BEFORE_SLEEP {
            std::thread::yield_now();
            self.rounds += 1;
        } else {
            registry
                .sleep
                .sleep(worker.index(), latch, || registry.has_visible_work());
            self.rounds = 0;
        }
    }

    /// The worker found work (or stops waiting): it no longer searches.
    pub(crate) fn work_found(&mut self, worker: &WorkerThread) {
        if self.searching {
            worker.registry().sleep.stop_searching();
            self.searching = false;
        }
        self.rounds = 0;
    }
}
