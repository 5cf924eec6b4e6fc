//! The boundary of a scoped fork region ([`fork::block_on`](super::block_on)
//! and [`Region`](super::Region)): after it closes, no child is polled any
//! more.
//!
//! Children of a scoped region may borrow anything that outlives the
//! blocking call, and a thief may poll a child after the child's parent
//! returned `Pending` (full suspension). So the blocking call must not
//! return while a thief is inside a child's poll, and no poll may start
//! afterwards, even for a child whose parent was forgotten. A thief
//! counts itself in (`enter`), fences, then looks at the closed flag; the
//! closer sets the flag, fences, then looks at the count. In the single
//! order of the two SeqCst fences one comes first: either the thief sees
//! the flag and does not poll, or the closer sees the thief and waits for
//! its `exit`. (Fences rather than SeqCst operations, as in
//! `sched/idle/driver_seat.rs`: the model checker orders fences, and the fences
//! say where the pair is.) The loom model
//! `fork_boundary_no_poll_after_close` checks the real code.

use crate::sched::sync::{AtomicBool, AtomicUsize, Ordering, fence};

/// Polls in flight in a scoped region, and whether it has closed.
#[derive(Debug, Default)]
pub(crate) struct Boundary {
    in_flight: AtomicUsize,
    closed: AtomicBool,
}

impl Boundary {
    /// A thread is about to poll a child of the region: `true` if it may
    /// (it must call [`exit`](Self::exit) when the poll is over), `false`
    /// if the region has closed (it must not touch the child).
    pub(crate) fn enter(&self) -> bool {
        // Relaxed increment, SeqCst fence, then the flag: the thread's half
        // of the Dekker pair with `close` and `busy`.
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.closed.load(Ordering::Relaxed) {
            self.exit();
            return false;
        }
        true
    }

    /// The poll that [`enter`](Self::enter) allowed is over.
    pub(crate) fn exit(&self) {
        // Release: the poll's accesses to borrowed data happen before the
        // closer's Acquire load that sees the count drop.
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Closes the region: no poll starts after this returns.
    pub(crate) fn close(&self) {
        // Relaxed store, then the SeqCst fence: the closer's half of the
        // Dekker pair with `enter` (its load is in `busy`).
        self.closed.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Whether a poll is still in flight. After [`close`](Self::close),
    /// `false` is final, and every poll's accesses happened before it.
    pub(crate) fn busy(&self) -> bool {
        // Acquire: pairs with `exit`'s Release. After `close`'s fence, a
        // count of zero means every later `enter` sees the flag.
        self.in_flight.load(Ordering::Acquire) != 0
    }
}
