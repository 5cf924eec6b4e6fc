//! The Nowa scope counter (Schmaus et al., IPDPS 2021, section IV).
//!
//! A scope must know when every task spawned into it has finished. The
//! classic counter increments an atomic per spawn and decrements it per
//! completion. Nowa splits the count: `N = alpha - omega`, spawns (`alpha`)
//! minus completions (`omega`). While the scope body runs, completions
//! decrement an atomic that starts at a huge value `H`, so it holds
//! `H - omega` and cannot reach zero; spawns made by the scope's own thread
//! (the body, Nowa's main path) count `alpha` in plain memory. At the end
//! of the body one atomic subtraction of `H - alpha` turns the atomic into
//! the true number of unfinished tasks; from then on the completion that
//! brings it to zero is the last one.
//!
//! Spawns made on other threads (from tasks running elsewhere) increment
//! the atomic: their own completion cancels it out, and since they run
//! inside a task that has not completed yet, the count stays positive.
//! Spawns made on the owner's thread after the end of the body (by tasks it
//! runs while waiting) do the same.

use crossbeam_utils::CachePadded;

use crate::sched::sync::{AtomicUsize, Ordering};

/// The initial value `H`: larger than any number of spawns a scope makes
/// (each allocates a task), small enough that `H` plus the tasks spawned
/// elsewhere cannot overflow.
const HUGE: usize = usize::MAX / 2;

/// The owner's count after the end of the body: owner spawns go atomic.
const SYNCED: usize = usize::MAX;

/// Counts a scope's unfinished tasks.
#[derive(Debug)]
pub(crate) struct NowaCounter {
    /// `H - completions + spawns elsewhere`, then the true count. On a
    /// line of its own: the workers that complete tasks write it while the
    /// owner writes `owner_spawns` (and its stack around the scope) at
    /// every spawn; sharing the line cost a loop of tiny spawns a transfer
    /// of it per spawn and completion.
    pending: CachePadded<AtomicUsize>,
    /// Spawns by the owner's thread before the end of the body (`alpha`),
    /// then [`SYNCED`]. Written and read by the owner's thread only, with
    /// plain loads and stores: an atomic type only so the scope is `Sync`.
    owner_spawns: AtomicUsize,
}

impl NowaCounter {
    pub(crate) fn new() -> Self {
        NowaCounter {
            pending: CachePadded::new(AtomicUsize::new(HUGE)),
            owner_spawns: AtomicUsize::new(0),
        }
    }

    /// Counts a spawn made on the owner's thread: no read-modify-write
    /// before the end of the body.
    ///
    /// Must be called on the owner's thread only.
    #[inline]
    pub(crate) fn spawn_on_owner_thread(&self) {
        // Relaxed load and store: only the owner's thread accesses this
        // word, so it always reads its own last store (coherence).
        let spawns = self.owner_spawns.load(Ordering::Relaxed);
        if spawns != SYNCED {
            self.owner_spawns.store(spawns + 1, Ordering::Relaxed);
        } else {
            self.spawn_elsewhere();
        }
    }

    /// Counts a spawn made on any other thread, by a task of the scope that
    /// has not completed yet.
    pub(crate) fn spawn_elsewhere(&self) {
        // Relaxed: pure counting. The spawning task completes after this
        // (program order), so its decrement comes later in `pending`'s
        // modification order and the count cannot touch zero in between.
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a completed task; `true` for the last one after the end of
    /// the body, whose caller must then release the owner.
    #[inline]
    pub(crate) fn complete(&self) -> bool {
        // AcqRel: Release publishes the task's effects; the last completer
        // acquires every earlier one's (a release sequence on `pending`)
        // before it signals the owner.
        self.pending.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Ends the body: restores the true count. `true` means every task has
    /// completed already (their effects are visible); otherwise the last
    /// [`complete`](Self::complete) returns `true`.
    ///
    /// Must be called once, on the owner's thread.
    pub(crate) fn end_of_body(&self) -> bool {
        let spawns = self.owner_spawns.load(Ordering::Relaxed);
        debug_assert_ne!(spawns, SYNCED, "the body ends once");
        debug_assert!(spawns < HUGE, "more spawns than the counter holds");
        self.owner_spawns.store(SYNCED, Ordering::Relaxed);
        let offset = HUGE - spawns;
        // AcqRel: Acquire takes in the effects of the tasks completed so
        // far; Release orders the owner's work before the completions that
        // follow (the last one acquires it).
        self.pending.fetch_sub(offset, Ordering::AcqRel) == offset
    }
}
