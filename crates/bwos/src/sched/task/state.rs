//! The state word of an async task.
//!
//! One atomic word says who may touch the task's future, whether a wake-up
//! is pending, whether the task finished, whether a `JoinHandle` waits for
//! the output, and how many references keep the allocation alive. Every
//! transition is one compare-and-swap loop on that word, so each decides
//! atomically against all the others (the loom models in
//! `loom_models/task_state.rs` check the races between them).
//!
//! # Flags
//! - `RUNNING`: a worker polls the future. It alone touches the future
//!   until it clears the flag.
//! - `COMPLETE`: the future is gone. The output (or the cancellation) is
//!   stored, and the future is never polled again.
//! - `NOTIFIED`: a wake-up is pending. Either exactly one run-queue entry
//!   for the task exists, or the worker that polls it now will make one
//!   when it stops polling.
//! - `CANCELLED`: `abort` was called. The next worker that would poll the
//!   task drops the future instead.
//! - `JOIN_INTEREST`: a `JoinHandle` exists and will take the output. Once
//!   it is gone, whoever completes the task drops the output.
//! - `JOIN_WAKER`: the `JoinHandle`'s waker slot holds a waker and belongs
//!   to the task side, which reads it once the task completes. While the
//!   flag is clear the slot belongs to the handle, which may write it.
//!
//! # References
//! The high bits count references, one per owner of a pointer to the
//! allocation: each run-queue entry, the `JoinHandle`, each waker. The
//! owner of the last one frees the task. A new task starts with two: its
//! first run-queue entry (it is `NOTIFIED`) and its `JoinHandle`.
//!
//! # Orderings
//! Every transition is AcqRel. The state word hands the future from one
//! worker to the next (a poll's end releases it, the next poll's start
//! acquires it), publishes the output (completion releases, the handle's
//! read acquires) and the waker slot (set and clear of `JOIN_WAKER`).

use crate::sched::sync::{AtomicUsize, Ordering};

const RUNNING: usize = 1 << 0;
const COMPLETE: usize = 1 << 1;
const NOTIFIED: usize = 1 << 2;
const CANCELLED: usize = 1 << 3;
const JOIN_INTEREST: usize = 1 << 4;
const JOIN_WAKER: usize = 1 << 5;
const REF_SHIFT: u32 = 6;
const REF_ONE: usize = 1 << REF_SHIFT;
/// Above this many references the count could overflow into nothing.
const MAX_REFS: usize = usize::MAX >> (REF_SHIFT + 1);

/// A copy of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    pub(crate) fn is_running(self) -> bool {
        self.0 & RUNNING != 0
    }

    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }

    pub(crate) fn is_notified(self) -> bool {
        self.0 & NOTIFIED != 0
    }

    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }

    pub(crate) fn has_join_interest(self) -> bool {
        self.0 & JOIN_INTEREST != 0
    }

    pub(crate) fn has_join_waker(self) -> bool {
        self.0 & JOIN_WAKER != 0
    }

    pub(crate) fn refs(self) -> usize {
        self.0 >> REF_SHIFT
    }

    /// Neither running, complete nor notified: only a wake-up or an abort
    /// can make it run again.
    fn is_idle(self) -> bool {
        self.0 & (RUNNING | COMPLETE | NOTIFIED) == 0
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("running", &self.is_running())
            .field("complete", &self.is_complete())
            .field("notified", &self.is_notified())
            .field("cancelled", &self.is_cancelled())
            .field("join_interest", &self.has_join_interest())
            .field("join_waker", &self.has_join_waker())
            .field("refs", &self.refs())
            .finish()
    }
}

/// What the holder of a run-queue entry does with the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartPoll {
    /// Poll the future.
    Poll,
    /// The task was aborted: drop the future and complete it as
    /// cancelled.
    Cancel,
}

/// What the poller does after the future returned `Pending`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndPoll {
    /// Nothing: the task waits for a wake-up. The run-queue entry's
    /// reference was dropped; `last` says whether it was the last one
    /// (then the poller frees the task).
    Idle { last: bool },
    /// A wake-up came during the poll: queue the task again. The new
    /// entry owns a reference added here; the poller keeps the reference
    /// of the entry just run until the scheduler has returned, then drops
    /// it (so the task outlives the scheduler's `&self`, which lives in
    /// the task, even if another thread runs the new entry at once).
    Requeue,
    /// `abort` came during the poll: drop the future and complete the
    /// task as cancelled (the task stays `RUNNING` until then).
    Cancel,
}

/// What a wake-up asks of the waker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Queue the task: the new run-queue entry owns a reference added by
    /// the transition. The waker keeps its own across the call to the
    /// scheduler, which borrows from the task, and a waker consumed by
    /// [`State::wake_by_val`] drops it afterwards.
    Submit,
    /// Nothing to queue: the task is queued, running (its poller requeues
    /// it) or complete. For `wake_by_val` the waker's reference was
    /// dropped; `last` says whether it was the last one.
    Nothing { last: bool },
}

/// The state word of one task.
pub(crate) struct State(AtomicUsize);

impl State {
    /// A new task: notified (its first run-queue entry is about to be
    /// made), with join interest, and two references (that entry and the
    /// `JoinHandle`).
    pub(crate) fn new() -> State {
        State(AtomicUsize::new(NOTIFIED | JOIN_INTEREST | (2 * REF_ONE)))
    }

    pub(crate) fn load(&self) -> Snapshot {
        // Acquire: pairs with the AcqRel transitions, so that a snapshot
        // showing `COMPLETE` also shows the output.
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// One CAS loop: `f` returns the next state and a result, or `None`
    /// to leave the word unchanged with `keep`'s result.
    fn update<R>(&self, mut f: impl FnMut(Snapshot) -> (Option<usize>, R)) -> R {
        // Acquire: the first look pairs with the AcqRel CAS of the last
        // transition, like every failed CAS below.
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let (next, result) = f(Snapshot(current));
            let Some(next) = next else {
                return result;
            };
            // AcqRel: see "Orderings" in the module docs.
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return result,
                Err(actual) => current = actual,
            }
        }
    }

    /// The holder of a run-queue entry starts to run the task.
    pub(crate) fn start_poll(&self) -> StartPoll {
        self.update(|s| {
            debug_assert!(
                s.is_notified() && !s.is_running() && !s.is_complete(),
                "a queued task is notified, idle and not complete: {s:?}"
            );
            let next = (s.0 & !NOTIFIED) | RUNNING;
            let action = if s.is_cancelled() {
                StartPoll::Cancel
            } else {
                StartPoll::Poll
            };
            (Some(next), action)
        })
    }

    /// The future returned `Pending`.
    pub(crate) fn end_poll(&self) -> EndPoll {
        self.update(|s| {
            debug_assert!(s.is_running() && !s.is_complete(), "{s:?}");
            if s.is_cancelled() {
                (None, EndPoll::Cancel)
            } else if s.is_notified() {
                check_refs(s);
                (Some((s.0 & !RUNNING) + REF_ONE), EndPoll::Requeue)
            } else {
                debug_assert!(s.refs() > 0);
                let next = (s.0 & !RUNNING) - REF_ONE;
                (
                    Some(next),
                    EndPoll::Idle {
                        last: Snapshot(next).refs() == 0,
                    },
                )
            }
        })
    }

    /// The future finished, or was dropped as cancelled, and its outcome is
    /// stored. Returns the state before: without join interest the caller
    /// drops the outcome itself (no handle will); with a join waker it
    /// wakes that waker. The caller keeps its run-queue reference.
    pub(crate) fn complete(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(s.is_running() && !s.is_complete(), "{s:?}");
            (Some((s.0 & !RUNNING) | COMPLETE), s)
        })
    }

    /// A waker that stays alive wakes the task.
    pub(crate) fn wake_by_ref(&self) -> Wake {
        self.update(|s| {
            if s.is_complete() || s.is_notified() {
                (None, Wake::Nothing { last: false })
            } else if s.is_running() {
                (Some(s.0 | NOTIFIED), Wake::Nothing { last: false })
            } else {
                check_refs(s);
                (Some((s.0 | NOTIFIED) + REF_ONE), Wake::Submit)
            }
        })
    }

    /// A waker wakes the task and is consumed: its reference is dropped,
    /// at once, or after the scheduler has queued the new entry
    /// (`Submit`, whose entry owns a reference of its own).
    pub(crate) fn wake_by_val(&self) -> Wake {
        self.update(|s| {
            debug_assert!(s.refs() > 0);
            if s.is_complete() || s.is_notified() {
                let next = s.0 - REF_ONE;
                (
                    Some(next),
                    Wake::Nothing {
                        last: Snapshot(next).refs() == 0,
                    },
                )
            } else if s.is_running() {
                // The poller holds a reference: this is not the last.
                (
                    Some((s.0 | NOTIFIED) - REF_ONE),
                    Wake::Nothing { last: false },
                )
            } else {
                check_refs(s);
                (Some((s.0 | NOTIFIED) + REF_ONE), Wake::Submit)
            }
        })
    }

    /// `JoinHandle::abort`: the task is cancelled the next time a worker
    /// would poll it. An idle task is queued for that (`Submit`: the new
    /// entry owns the reference added here).
    pub(crate) fn abort(&self) -> Wake {
        self.update(|s| {
            if s.is_complete() || s.is_cancelled() {
                (None, Wake::Nothing { last: false })
            } else if s.is_idle() {
                check_refs(s);
                (Some((s.0 | CANCELLED | NOTIFIED) + REF_ONE), Wake::Submit)
            } else {
                (Some(s.0 | CANCELLED), Wake::Nothing { last: false })
            }
        })
    }

    /// The handle hands its freshly written waker slot to the task side.
    /// `Err` with the state if the task completed meanwhile: the slot stays
    /// the handle's and the output is ready.
    pub(crate) fn set_join_waker(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| {
            debug_assert!(s.has_join_interest() && !s.has_join_waker(), "{s:?}");
            if s.is_complete() {
                (None, Err(s))
            } else {
                (Some(s.0 | JOIN_WAKER), Ok(s))
            }
        })
    }

    /// The handle takes its waker slot back to write another waker. `Err`
    /// if the task completed meanwhile: the slot stays the task side's
    /// (it may be waking it) and the output is ready.
    pub(crate) fn unset_join_waker(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| {
            debug_assert!(s.has_join_interest() && s.has_join_waker(), "{s:?}");
            if s.is_complete() {
                (None, Err(s))
            } else {
                (Some(s.0 & !JOIN_WAKER), Ok(s))
            }
        })
    }

    /// The `JoinHandle` goes away. `Ok`: the task side will drop the
    /// output, and the waker slot is the handle's again (the caller drops
    /// its content). `Err`: the task is complete and nobody else will drop
    /// the output, so the caller does. Either way the caller then drops its
    /// reference.
    pub(crate) fn drop_join_interest(&self) -> Result<(), Snapshot> {
        self.update(|s| {
            debug_assert!(s.has_join_interest(), "{s:?}");
            if s.is_complete() {
                (None, Err(s))
            } else {
                (Some(s.0 & !(JOIN_INTEREST | JOIN_WAKER)), Ok(()))
            }
        })
    }

    /// A new owner of a pointer to the task (a cloned waker).
    pub(crate) fn ref_inc(&self) {
        // Relaxed: like `Arc::clone`, the new reference is made from an
        // existing one, whose owner already synchronized with the task.
        let previous = self.0.fetch_add(REF_ONE, Ordering::Relaxed);
        check_refs(Snapshot(previous));
    }

    /// An owner drops its reference; returns whether it was the last (the
    /// caller then frees the task).
    pub(crate) fn ref_dec(&self) -> bool {
        // AcqRel: the last owner's free must see every other owner's
        // accesses (Release on their decrement, Acquire on the last one).
        let previous = Snapshot(self.0.fetch_sub(REF_ONE, Ordering::AcqRel));
        debug_assert!(previous.refs() > 0, "a task reference dropped twice");
        previous.refs() == 1
    }
}

/// A reference count this large can only come from leaked wakers
/// (`mem::forget` in a loop); going on would let the count wrap and free a
/// live task, so stop as `Arc` does.
fn check_refs(s: Snapshot) {
    if s.refs() >= MAX_REFS {
        std::process::abort();
    }
}

#[cfg(all(test, not(bwos_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_task_polled_to_completion_without_wakers() {
        let state = State::new();
        assert_eq!(state.start_poll(), StartPoll::Poll);
        let before = state.complete();
        assert!(before.has_join_interest() && !before.has_join_waker());
        // The run-queue entry's reference, then the handle's.
        assert!(
            state.drop_join_interest().is_err(),
            "complete: the handle drops the output"
        );
        assert!(!state.ref_dec());
        assert!(state.ref_dec());
    }

    #[test]
    fn a_wake_during_the_poll_requeues_once() {
        let state = State::new();
        state.ref_inc(); // a waker
        assert_eq!(state.start_poll(), StartPoll::Poll);
        assert_eq!(state.wake_by_val(), Wake::Nothing { last: false });
        assert_eq!(state.wake_by_ref(), Wake::Nothing { last: false });
        assert_eq!(state.end_poll(), EndPoll::Requeue);
        assert!(!state.ref_dec(), "the poller's reference, after requeueing");
        assert_eq!(state.start_poll(), StartPoll::Poll);
        assert_eq!(state.end_poll(), EndPoll::Idle { last: false });
        assert_eq!(state.load().refs(), 1, "only the handle is left");
    }

    #[test]
    fn an_idle_task_is_submitted_by_one_wake_only() {
        let state = State::new();
        state.start_poll();
        state.end_poll();
        assert_eq!(state.wake_by_ref(), Wake::Submit);
        assert_eq!(state.wake_by_ref(), Wake::Nothing { last: false });
        assert_eq!(state.load().refs(), 2, "handle and the new entry");
    }

    #[test]
    fn a_wake_by_value_keeps_the_wakers_reference_until_it_is_dropped() {
        let state = State::new();
        state.start_poll();
        state.end_poll();
        state.ref_inc(); // a waker
        assert_eq!(state.wake_by_val(), Wake::Submit);
        assert_eq!(state.load().refs(), 3, "handle, waker and the new entry");
        assert!(!state.ref_dec(), "the waker, after scheduling");
        assert_eq!(state.load().refs(), 2);
    }

    #[test]
    fn abort_cancels_an_idle_task_through_the_queue() {
        let state = State::new();
        state.start_poll();
        state.end_poll();
        assert_eq!(state.abort(), Wake::Submit);
        assert_eq!(state.abort(), Wake::Nothing { last: false });
        assert_eq!(state.wake_by_ref(), Wake::Nothing { last: false });
        assert_eq!(state.start_poll(), StartPoll::Cancel);
        assert!(state.complete().is_cancelled());
    }

    #[test]
    fn abort_during_a_poll_cancels_at_its_end() {
        let state = State::new();
        state.start_poll();
        assert_eq!(state.abort(), Wake::Nothing { last: false });
        assert_eq!(state.end_poll(), EndPoll::Cancel);
        assert!(
            state.load().is_running(),
            "the poller still owns the future"
        );
    }

    #[test]
    fn the_join_waker_slot_changes_hands_until_completion() {
        let state = State::new();
        assert!(state.set_join_waker().is_ok());
        assert!(state.unset_join_waker().is_ok());
        assert!(state.set_join_waker().is_ok());
        state.start_poll();
        assert!(state.complete().has_join_waker());
        assert!(
            state.unset_join_waker().is_err(),
            "the task side owns the slot"
        );
    }

    #[test]
    fn the_last_reference_is_reported_once() {
        let state = State::new();
        state.start_poll();
        state.end_poll(); // drops the entry's reference
        assert!(state.drop_join_interest().is_ok());
        assert!(state.ref_dec(), "the handle held the last reference");
    }
}
