//! Latches: one-shot completion signals a waiting thread can sleep on.
//!
//! A [`CoreLatch`] is a three-state word. Exactly one thread waits on a
//! latch; the waiter may announce that it is about to sleep, and the setter
//! then wakes it. Both sides use a read-modify-write on the same word, so a
//! wake-up cannot be lost: either the setter sees `SLEEPING` and unparks
//! the waiter, or the waiter's announcement fails because the latch is set.
//!
//! This file is the protocol alone, model-checked with loom: the word, the
//! [`Latch`] trait jobs set, and [`WakingLatch`], a latch that keeps what
//! wakes its waiter. Who waits and how a pool's worker is woken is
//! `wait.rs`'s, above the workers: like every loom-checked protocol file,
//! this one imports only `sync.rs`.

use super::sync::{AtomicU8, Ordering, Thread, park};

const UNSET: u8 = 0;
const SLEEPING: u8 = 1;
const SET: u8 = 2;

/// How often a thread outside the pools yields its core, looking at the
/// latch after each, before it parks (see [`CoreLatch::wait_blocking`]).
#[cfg(not(bwos_loom))]
const YIELDS_BEFORE_PARKING: u32 = 64;

/// How long a thread outside the pools keeps yielding before it parks,
/// however few yields that took: about twice what a park's wake-up costs
/// (see [`CoreLatch::wait_blocking`]).
#[cfg(not(bwos_loom))]
const YIELDING_AT_MOST: std::time::Duration = std::time::Duration::from_micros(50);

/// The state word of a latch.
#[derive(Debug)]
pub(crate) struct CoreLatch {
    state: AtomicU8,
}

impl CoreLatch {
    pub(crate) fn new() -> Self {
        CoreLatch {
            state: AtomicU8::new(UNSET),
        }
    }

    /// Whether the latch is set. After `true`, everything the setter did
    /// before setting it is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release half of the setter's swap.
        self.state.load(Ordering::Acquire) == SET
    }

    /// Sets the latch; returns `true` if the waiter announced it sleeps and
    /// must be unparked. The latch may be freed by its waiter as soon as
    /// this returns: callers copy whatever they need to wake it first.
    #[inline]
    pub(crate) fn set(&self) -> bool {
        // AcqRel: Release publishes the setter's work (the job's result) to
        // the waiter's Acquire `probe`; Acquire orders the waiter's
        // announcement before the unpark that follows.
        self.state.swap(SET, Ordering::AcqRel) == SLEEPING
    }

    /// Announces that the waiter is about to park. `false` means the latch
    /// is already set and the waiter must not park.
    pub(crate) fn get_sleepy(&self) -> bool {
        // Relaxed on success: the announcement carries no data; the setter's
        // swap reads it as part of the single modification order. Acquire on
        // failure: the latch is set, the waiter goes on to use the result.
        self.state
            .compare_exchange(UNSET, SLEEPING, Ordering::Relaxed, Ordering::Acquire)
            .is_ok()
    }

    /// Withdraws an announcement after waking up for another reason (new
    /// work). A failure means the latch was set meanwhile, which is fine.
    pub(crate) fn wake_up(&self) {
        // Relaxed: as for `get_sleepy`; if the latch is set the next
        // `probe` acquires it.
        let _ = self
            .state
            .compare_exchange(SLEEPING, UNSET, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether the waiter's announcement still stands (not set, not
    /// withdrawn): parking again after a spurious wake-up is safe.
    pub(crate) fn is_sleeping(&self) -> bool {
        // Relaxed: only decides whether to park again; `probe` acquires.
        self.state.load(Ordering::Relaxed) == SLEEPING
    }

    /// Blocks the calling thread, which is not a pool worker, until the
    /// latch is set. The setter must unpark this thread when `set` returns
    /// `true` (a [`WakingLatch`] made on this thread does).
    pub(crate) fn wait_blocking(&self) {
        // Yield before parking: a parked thread's wake-up costs more than a
        // short parallel call takes, and a yielding waiter stays runnable
        // and sees the latch at its next turn (the measurements are in
        // `docs/benchmarks.md`, "Measurements behind design choices").
        // Where the pool's work runs long, the waiter parks after a few
        // yields, and after `YIELDING_AT_MOST` however few: a yield returns
        // at once on an idle core, but when every core is busy (the pool's
        // workers, the program's other threads) each one takes a core from
        // a thread with work for a moment, and 64 of those made a long call
        // cost its workers 10x stock rayon's involuntary context switches.
        // Not in loom builds: the yields only delay the parking protocol
        // below, which the models check.
        #[cfg(not(bwos_loom))]
        {
            let start = std::time::Instant::now();
            for _ in 0..YIELDS_BEFORE_PARKING {
                if self.probe() {
                    return;
                }
                std::thread::yield_now();
                if start.elapsed() > YIELDING_AT_MOST {
                    break;
                }
            }
        }
        while !self.probe() {
            if self.get_sleepy() {
                // `park` may return spuriously or for a stale token; the
                // announcement stands until the setter replaces it.
                while self.is_sleeping() {
                    park();
                }
            }
        }
    }
}

/// Something a job sets when it completes.
pub(crate) trait Latch {
    /// Sets the latch and wakes its waiter.
    ///
    /// # Safety
    /// `this` points to a live latch; it may be freed as soon as its core
    /// is set, so the implementation must not touch it afterwards.
    unsafe fn set(this: *const Self);
}

/// How the setter of a [`WakingLatch`] wakes the thread that waits on it.
/// The setter takes a copy before it sets the latch: the waiter may free
/// the latch as soon as it is set.
pub(crate) trait Waiter: Clone {
    /// Wakes the waiter, which may have announced it sleeps.
    fn wake(self);
}

/// A thread that waits in [`CoreLatch::wait_blocking`]: it parks on its
/// token.
impl Waiter for Thread {
    fn wake(self) {
        self.unpark();
    }
}

/// A latch that keeps what it takes to wake its waiter, whoever sets it.
pub(crate) struct WakingLatch<W> {
    core: CoreLatch,
    waiter: W,
}

impl<W: Waiter> WakingLatch<W> {
    /// A latch `waiter` will wait on.
    pub(crate) fn new(waiter: W) -> Self {
        WakingLatch {
            core: CoreLatch::new(),
            waiter,
        }
    }

    pub(crate) fn core(&self) -> &CoreLatch {
        &self.core
    }
}

impl<W: Waiter> Latch for WakingLatch<W> {
    unsafe fn set(this: *const Self) {
        // The waiter may free the latch once it is set: take what wakes it
        // first.
        // SAFETY: the caller guarantees `this` is live until the core is set.
        let waiter = unsafe { (*this).waiter.clone() };
        // SAFETY: as above; after this line `this` is not used.
        if unsafe { (*this).core.set() } {
            waiter.wake();
        }
    }
}
