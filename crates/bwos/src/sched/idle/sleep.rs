//! [`Sleepers`]: which idle workers search for work and which sleep, and
//! waking sleepers without losing a wake-up.
//!
//! An idle worker (the scheduler's one word for a worker without work)
//! either searches (spins or yields, looking for work) or sleeps (parked).
//! One word counts both. Producers of work read it: a local push reads it
//! with a plain load to learn whether any worker is idle (the owner then
//! shares its private block), and whoever makes work visible wakes a
//! sleeper when nobody searches.
//!
//! A worker falls asleep in three steps: announce (its state becomes
//! `ASLEEP` and it moves from the searching to the sleeping count, a SeqCst
//! read-modify-write), then look once more for work, then park. A producer
//! makes its work visible, issues a SeqCst fence and then reads the counts.
//! Of the sleeper's final look and the producer's read, one is ordered
//! after the other in the single SeqCst order, so either the sleeper sees
//! the work or the producer sees the sleeper and wakes it (the loom model
//! `sleep_no_lost_wakeup` checks this).

use crossbeam_utils::CachePadded;

use crate::sched::latch::CoreLatch;

/// How a call to [`Sleepers::sleep_parking_with`] (or the loom models'
/// `Sleepers::sleep`) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SleepOutcome {
    /// The latch was set, the final look found work, or a waker came
    /// first: no park.
    DidNotPark,
    /// Parked, then left because the latch was set.
    Parked,
    /// Parked, then woken by another thread that moved it back to
    /// searching.
    Woken,
}
#[cfg(bwos_loom)]
use crate::sched::sync::park;
use crate::sched::sync::{AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};

/// One searching worker in the counts word.
const SEARCHER: u64 = 1;
/// One sleeping worker in the counts word.
const SLEEPER: u64 = 1 << 32;
/// From searching to sleeping: `+ SLEEPER - SEARCHER` (no borrow: the
/// worker was counted as searching).
const FALL_ASLEEP: u64 = SLEEPER - SEARCHER;

const AWAKE: u8 = 0;
const ASLEEP: u8 = 1;

/// A direct pointer to the counts word, kept by each worker so that the
/// push fast path reads it with one load (going through the registry's
/// `Arc` costs a dependent load, measurably slower in fork/join).
#[derive(Clone, Copy)]
pub(crate) struct IdleHint(*const AtomicU64);

impl IdleHint {
    /// A hint that always says some worker is idle: pools without lazy
    /// queueing give it to their workers, so every `join` takes the cold
    /// path that queues `b`.
    #[cfg(not(bwos_loom))]
    pub(crate) fn always_idle() -> IdleHint {
        /// Never written: one searcher, forever.
        static ALWAYS_IDLE: AtomicU64 = AtomicU64::new(SEARCHER);
        IdleHint(&ALWAYS_IDLE)
    }

    /// Whether any worker searches or sleeps: the push fast path's one
    /// extra load.
    ///
    /// The `Sleepers` this hint came from must be alive (workers hold its
    /// registry).
    #[inline]
    pub(crate) fn anyone_idle(self) -> bool {
        // SAFETY: the hint's owner keeps the `Sleepers` alive (see above).
        let counts = unsafe { &*self.0 };
        // Relaxed: a hint about whether to share work; the decision to
        // wake a sleeper is taken again after a fence (`notify`).
        counts.load(Ordering::Relaxed) != 0
    }
}

/// The pool's idle workers: how many search, how many sleep, and which.
pub(crate) struct Sleepers {
    /// Searching workers in the low half, sleeping ones in the high half.
    counts: CachePadded<AtomicU64>,
    /// Per worker: `ASLEEP` from its announcement until it or a waker
    /// flips it back (exactly one of them does, with a read-modify-write).
    states: Box<[CachePadded<AtomicU8>]>,
    /// Where the next search for a sleeper starts, so wake-ups rotate.
    next_wake: AtomicUsize,
}

impl Sleepers {
    pub(crate) fn new(num_workers: usize) -> Self {
        Sleepers {
            counts: CachePadded::new(AtomicU64::new(0)),
            states: (0..num_workers)
                .map(|_| CachePadded::new(AtomicU8::new(AWAKE)))
                .collect(),
            next_wake: AtomicUsize::new(0),
        }
    }

    /// The counts word, for [`IdleHint`]s.
    pub(crate) fn hint(&self) -> IdleHint {
        IdleHint(&*self.counts)
    }

    /// Whether any worker searches or sleeps.
    #[cfg(bwos_loom)]
    pub(crate) fn anyone_idle(&self) -> bool {
        self.hint().anyone_idle()
    }

    /// Whether any worker has announced that it sleeps (a racy snapshot:
    /// `park::wake_for_timer` says why its use there loses nothing).
    pub(crate) fn anyone_sleeping(&self) -> bool {
        // Relaxed: see above; the caller's decision relies on a lock, not
        // on this load's ordering.
        self.counts.load(Ordering::Relaxed) >> 32 != 0
    }

    /// The calling worker starts searching.
    pub(crate) fn start_searching(&self) {
        // Relaxed: the searching count is a hint for producers.
        self.counts.fetch_add(SEARCHER, Ordering::Relaxed);
    }

    /// The calling worker found work or stops waiting.
    pub(crate) fn stop_searching(&self) {
        // Relaxed: as for `start_searching`.
        self.counts.fetch_sub(SEARCHER, Ordering::Relaxed);
    }

    /// Puts searching worker `index` to sleep until a producer wakes it,
    /// `latch` is set, or it finds `has_work()` true in its final look. On
    /// return the worker counts as searching again. `on_park` runs once,
    /// just before the worker parks for the first time.
    #[cfg(bwos_loom)]
    pub(crate) fn sleep(
        &self,
        index: usize,
        latch: &CoreLatch,
        has_work: impl Fn() -> bool,
        on_park: impl FnOnce(),
    ) -> SleepOutcome {
        self.sleep_parking_with(index, latch, has_work, on_park, |_, _| {
            park();
            false
        })
    }

    /// `sleep` (the loom models' entry point), parking with `park_here` instead of the
    /// thread's park token. `park_here(still_asleep, wake_early)` blocks
    /// until the thread is unparked (it may return early, as `park` may);
    /// it may look at `still_asleep()` after announcing where it blocks,
    /// may call `wake_early()` to count as searching again before it makes
    /// work (so that producers' wake-ups go to other sleepers), and
    /// returns `true` if it made work for this worker meanwhile (the I/O
    /// driver woke tasks into its queue), which ends the sleep.
    pub(crate) fn sleep_parking_with(
        &self,
        index: usize,
        latch: &CoreLatch,
        has_work: impl Fn() -> bool,
        on_park: impl FnOnce(),
        mut park_here: impl FnMut(&dyn Fn() -> bool, &dyn Fn()) -> bool,
    ) -> SleepOutcome {
        if !latch.get_sleepy() {
            return SleepOutcome::DidNotPark;
        }
        // SeqCst store and RMW: a waker that reads the new counts (SeqCst)
        // also sees the state.
        self.states[index].store(ASLEEP, Ordering::SeqCst);
        self.counts.fetch_add(FALL_ASLEEP, Ordering::SeqCst);
        // The sleeper's half of the Dekker pair with `notify`.
        fence(Ordering::SeqCst);
        let mut parked = false;
        let mut on_park = Some(on_park);
        if !has_work() {
            // Spurious and stale unparks make `park` return early; the
            // announcements stand until a waker or the latch's setter
            // replaces them.
            // Acquire: pairs with the waker's AcqRel CAS.
            let still_asleep =
                || self.states[index].load(Ordering::Acquire) == ASLEEP && latch.is_sleeping();
            let woke_early = std::cell::Cell::new(false);
            let wake_early = || {
                if self.wake_self(index) {
                    woke_early.set(true);
                }
            };
            while still_asleep() {
                parked = true;
                if let Some(on_park) = on_park.take() {
                    on_park();
                }
                if park_here(&still_asleep, &wake_early) {
                    break;
                }
            }
            if woke_early.get() {
                // Already back to searching, by its own hand.
                latch.wake_up();
                return SleepOutcome::Parked;
            }
        }
        let woken_by_other = !self.wake_self(index);
        latch.wake_up();
        match (parked, woken_by_other) {
            (true, true) => SleepOutcome::Woken,
            (true, false) => SleepOutcome::Parked,
            (false, _) => SleepOutcome::DidNotPark,
        }
    }

    /// Undoes a sleep announcement unless a waker already did; returns
    /// whether it did (`false`: a waker moved the worker back).
    fn wake_self(&self, index: usize) -> bool {
        // AcqRel: the swap decides against a concurrent waker's CAS who
        // moves the worker back to the searching count.
        if self.states[index].swap(AWAKE, Ordering::AcqRel) == ASLEEP {
            self.counts.fetch_sub(FALL_ASLEEP, Ordering::SeqCst);
            true
        } else {
            false
        }
    }

    /// Whether worker `index` has announced that it sleeps (a racy
    /// snapshot, for thieves deciding whom to wake).
    pub(crate) fn is_asleep(&self, index: usize) -> bool {
        // Relaxed: a filter; `wake` decides with a CAS.
        self.states[index].load(Ordering::Relaxed) == ASLEEP
    }

    /// Whether no worker is busy: all `num_workers` search or sleep (a racy
    /// snapshot). Nothing can create work in the pool then but an
    /// injection, which wakes a sleeper itself.
    pub(crate) fn all_idle(&self, num_workers: usize) -> bool {
        // Relaxed: a hint for the decision to sleep, which is always safe
        // (the Dekker pair with `notify`).
        let counts = self.counts.load(Ordering::Relaxed);
        (counts & (SLEEPER - 1)) + (counts >> 32) >= num_workers as u64
    }

    /// Whether no worker searches and at least `num_workers` sleep: the
    /// paused clock's look at the sleep states (`time/auto_advance.rs`),
    /// taken under its lock by a worker that marked itself idle.
    #[cfg(any(feature = "test-util", bwos_loom))]
    pub(crate) fn all_asleep(&self, num_workers: usize) -> bool {
        // SeqCst: a waker's SeqCst update of the counts (`wake`) that came
        // before this look in the single order is seen, so a worker moved
        // back to searching is not taken for a sleeper.
        let counts = self.counts.load(Ordering::SeqCst);
        counts & (SLEEPER - 1) == 0 && counts >> 32 >= num_workers as u64
    }

    /// Wakes worker `index` if it sleeps: a thief spending a wake-up
    /// credit. Returns whether this call woke it. `unpark` unparks it.
    pub(crate) fn wake(&self, index: usize, unpark: impl FnOnce(usize)) -> bool {
        let state = &self.states[index];
        // Relaxed load: a filter; the CAS decides. AcqRel CAS: pairs with
        // the sleeper's swap and Acquire load of its state.
        if state.load(Ordering::Relaxed) == ASLEEP
            && state
                .compare_exchange(ASLEEP, AWAKE, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.counts.fetch_sub(FALL_ASLEEP, Ordering::SeqCst);
            unpark(index);
            true
        } else {
            false
        }
    }

    /// Called after making work visible to other workers (an injection, a
    /// shared block): wakes a sleeper if nobody is searching. `unpark`
    /// unparks worker `i`.
    pub(crate) fn notify(&self, unpark: impl Fn(usize)) {
        // The producer's half of the Dekker pair with `sleep`.
        fence(Ordering::SeqCst);
        let counts = self.counts.load(Ordering::SeqCst);
        let searching = counts & (SLEEPER - 1);
        let sleeping = counts >> 32;
        if searching == 0 && sleeping > 0 {
            self.wake_one(unpark);
        }
    }

    /// Wakes one sleeping worker, if there is one; returns its index.
    /// `unpark` unparks it (after the worker was moved back to the
    /// searching count, so the caller may hand it a role first).
    pub(crate) fn wake_one(&self, unpark: impl Fn(usize)) -> Option<usize> {
        let n = self.states.len();
        // Relaxed: only spreads wake-ups over the workers.
        let start = self.next_wake.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|offset| (start + offset) % n)
            .find(|&index| self.wake(index, &unpark))
    }
}
