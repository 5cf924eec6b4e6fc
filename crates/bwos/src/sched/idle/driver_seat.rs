//! Which sleeping worker blocks in the I/O driver, and waking it there.
//!
//! A sleeping worker blocks either on its park token or, if it took the
//! I/O driver, in the driver's poll (`epoll_wait`), which an unpark of
//! the thread does not interrupt: a waker must also write the driver's
//! eventfd. Writing it for every wake-up would cost a syscall each, so
//! the seat records which worker blocks in the poll and wakers write
//! only for that one.
//!
//! The worker takes the seat, fences, then looks at its sleep state
//! (`still_asleep`) once more; a waker changes the sleep state, fences,
//! then reads the seat. In the single order of the two SeqCst fences one
//! comes first: either the worker sees the new state and does not block,
//! or the waker sees the worker in the seat and writes the eventfd (the
//! loom model `driver_seat_no_lost_wakeup` checks the real code). A
//! timer's interrupt of the watcher changes no sleep state: the watcher's
//! `still_asleep` also looks at `Timers::watcher_interrupted`, raised by
//! the interrupter before it reads the seat (`sched/time/mod.rs`; loom
//! model `driver_seat_timer_interrupt_is_not_lost`).

// Only the I/O driver (`net/`, feature `io`) takes the seat.
#![cfg_attr(not(any(feature = "io", bwos_loom)), allow(dead_code))]

use crate::sched::sync::{AtomicUsize, Ordering, fence};

/// No worker blocks in the driver.
const EMPTY: usize = usize::MAX;

/// The index of the worker blocked in the I/O driver, if any.
pub(crate) struct DriverSeat {
    occupant: AtomicUsize,
}

impl Default for DriverSeat {
    fn default() -> Self {
        DriverSeat {
            occupant: AtomicUsize::new(EMPTY),
        }
    }
}

impl DriverSeat {
    /// Worker `index` (holding the driver) blocks with `block` unless
    /// `still_asleep` says, after the seat is taken, that it has been
    /// woken already. Returns `block`'s result, or `None` if it did not
    /// block.
    pub(crate) fn block_in_driver<R>(
        &self,
        index: usize,
        still_asleep: &dyn Fn() -> bool,
        block: impl FnOnce() -> R,
    ) -> Option<R> {
        // SeqCst store and fence: the worker's half of the Dekker pair
        // with `wake`.
        self.occupant.store(index, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let result = still_asleep().then(block);
        // Relaxed: only this worker put `index` here; a waker that still
        // reads it afterwards writes the eventfd once too often, which the
        // next poll swallows.
        self.occupant.store(EMPTY, Ordering::Relaxed);
        result
    }

    /// Worker `index`'s sleep state was just changed by a waker: if it
    /// blocks in the driver, `interrupt` the poll.
    pub(crate) fn wake(&self, index: usize, interrupt: impl FnOnce()) {
        // The waker's half of the Dekker pair with `block_in_driver`.
        fence(Ordering::SeqCst);
        if self.occupant.load(Ordering::SeqCst) == index {
            interrupt();
        }
    }
}
