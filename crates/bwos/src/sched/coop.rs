//! The cooperative budget: how many ready operations a task may complete
//! in one poll before it has to give its worker back.
//!
//! A future that loops over operations that are always ready (a socket a
//! peer keeps readable, a channel that is never empty, handles of tasks
//! that finished) never returns `Pending` on its own, and its worker runs
//! nothing else meanwhile: the other tasks of that worker starve. So each
//! task poll (and each poll of a [`block_on`](crate::block_on) future)
//! gets [`POLL_BUDGET`] units, every ready operation of the front ends
//! spends one, and an operation that finds the budget spent wakes its task
//! and returns `Pending` once: the task goes to the back of the worker's
//! queue and continues, with a fresh budget, after the tasks queued before
//! it. tokio's `coop` does the same, with the same number.
//!
//! The budget is a thread-local. Whoever runs a task's entry (the
//! scheduler loop, `yield_now` and the serving of tasks between fork/join
//! jobs in `sched/worker.rs`, a blocking thread) sets a fresh one as the
//! poll starts ([`start_poll`]) and takes it away as it ends
//! ([`end_poll`]): two stores per poll, nothing kept across it. A poll
//! nested in another (a task polled while its worker waits for stolen
//! work inside another task's poll, or polled by `yield_now`) has its own
//! budget, and the outer one continues where it stopped: whatever runs
//! task polls inside a poll (the scheduler loop, the places that poll a
//! task outside it) sets the outer budget aside first ([`set_aside`]) and
//! puts it back afterwards ([`put_back`]), once per nested loop rather
//! than once per poll. [`budget`] (`block_on`'s polls) saves and restores
//! around each poll instead: a `block_on` may run anywhere. Outside any
//! poll (a plain thread, or a worker between tasks) the budget is
//! unconstrained and operations never yield for it.
//!
//! The front ends spend it through [`poll_budgeted`] (or
//! [`poll_proceed`] and [`made_progress`] when the check and the spending
//! sit apart); `crate::task::coop` exposes it to users as tokio does
//! (`consume_budget`, `unconstrained`).
//!
//! # Cost
//! A check and a spend are each an access to a `const` thread-local
//! `Cell` (no lazy initialization, no destructor), a few instructions.
//! Every task poll pays for setting the byte and clearing it.
//! Measured with callgrind on the `spawn_wake` example (10,000 tasks x 3
//! yields, 40,000 polls of about 870 instructions each, scheduler
//! included: the worst case, as each instruction per poll is 0.12% of its
//! total): 34.62 M instructions before, 35.06 M with the budget saved,
//! set and restored around each poll (+1.3%: about 8 instructions per
//! poll, and 10 per awaited `JoinHandle`). Most of that was the saving:
//! the saved byte lives across the poll in a register, which the task
//! cell's `run` then had to push and pop, with the thread-local's address
//! in another one. The scheduler loop has that address at hand in a
//! register for the whole loop, and the outer budget is set aside once
//! per loop: two stores per poll are left (`spawn_wake`, per task of 4
//! polls: 3,551 instructions before, 3,525 after).
//! Layouts measured and dropped: a guard restoring the budget inside
//! `catch_unwind` (+3 per poll), the bookkeeping around the whole entry in
//! `Notified::run` (+1.4 M in all: it undoes the tail call of the job into
//! the task). Polls are not timed here: `sched/long_polls.rs` times them
//! in groups, in the scheduler loop.

use std::cell::Cell;
use std::task::{Context, Poll};

/// The units a poll starts with: tokio's number, large enough that a busy
/// task pays for a yield once per 128 operations, small enough that the
/// others wait for 128 operations at most.
pub(crate) const POLL_BUDGET: u8 = 128;

/// The units left in the current poll, stored one above their number so
/// that 0, the thread-local's initial value, is "unconstrained": a fresh
/// budget is 129, a spent one 1. One byte rather than an `Option`: the
/// check is one load and one compare, the spend three instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget(u8);

impl Budget {
    /// No limit: spending leaves it alone.
    const UNCONSTRAINED: Budget = Budget(0);

    /// A poll's fresh budget.
    const INITIAL: Budget = Budget(POLL_BUDGET + 1);

    #[inline]
    fn is_spent(self) -> bool {
        self.0 == 1
    }

    /// One unit less; unconstrained and spent stay as they are.
    #[inline]
    fn spend(self) -> Budget {
        Budget(self.0 - u8::from(self.0 >= 2))
    }
}

// A fresh budget fits the byte.
const _: () = assert!(POLL_BUDGET < u8::MAX);

thread_local! {
    /// The budget of the poll running on this thread (unconstrained
    /// outside any poll). `const` and without a destructor: an access is a
    /// plain load or store at a fixed offset of the thread's block, never
    /// a lazy initialization.
    static CURRENT: Cell<Budget> = const { Cell::new(Budget::UNCONSTRAINED) };
}

/// A task's poll starts: a fresh budget.
///
/// Whoever runs a task's entry uses this pair rather than [`budget`]: the
/// task cell runs the poll inside `catch_unwind`, so the pair around it
/// needs no unwinding path, which measured 3 instructions per poll less
/// than a guard. The pair saves nothing: whoever polls tasks inside
/// another poll sets that poll's budget aside itself ([`set_aside`]).
#[inline]
pub(crate) fn start_poll() {
    CURRENT.with(|current| current.set(Budget::INITIAL));
}

/// The task poll begun by [`start_poll`] ended: no budget from here on.
#[inline]
pub(crate) fn end_poll() {
    CURRENT.with(|current| current.set(Budget::UNCONSTRAINED));
}

/// Task polls are about to run on this thread, maybe inside another poll
/// (a scheduler loop nested in a poll, a task polled by `yield_now`):
/// returns that poll's budget, which [`put_back`] restores once they are
/// done, and leaves the thread unconstrained meanwhile, as between polls.
#[inline]
pub(crate) fn set_aside() -> Budget {
    CURRENT.with(|current| current.replace(Budget::UNCONSTRAINED))
}

/// The polls after [`set_aside`], which returned `outer`, are done.
#[inline]
pub(crate) fn put_back(outer: Budget) {
    CURRENT.with(|current| current.set(outer));
}

/// Runs `poll` (one poll of a `block_on` future) with a fresh budget; the
/// previous budget is back afterwards, also if `poll` panics.
#[inline]
pub(crate) fn budget<R>(poll: impl FnOnce() -> R) -> R {
    with_budget(Budget::INITIAL, poll)
}

/// Runs `f` without a budget limit (`task::unconstrained`, and a timeout's
/// look at its deadline after its future spent the budget); the previous
/// budget is back afterwards, what `f` spent of it not subtracted.
#[inline]
pub(crate) fn with_unconstrained<R>(f: impl FnOnce() -> R) -> R {
    with_budget(Budget::UNCONSTRAINED, f)
}

#[inline]
fn with_budget<R>(budget: Budget, f: impl FnOnce() -> R) -> R {
    /// Puts the previous budget back, on return or unwind.
    struct Restore(Budget);

    impl Drop for Restore {
        #[inline]
        fn drop(&mut self) {
            CURRENT.with(|current| current.set(self.0));
        }
    }

    let _restore = Restore(CURRENT.with(|current| current.replace(budget)));
    f()
}

/// Whether an operation may proceed: `Ready` if the budget has a unit
/// left (or is unconstrained); if it is spent, wakes `cx`'s task and
/// returns `Pending`, so that the task is queued again and runs on after
/// the others. Spends nothing: call [`made_progress`] once the operation
/// completed.
#[inline]
pub(crate) fn poll_proceed(cx: &Context<'_>) -> Poll<()> {
    if CURRENT.with(Cell::get).is_spent() {
        cx.waker().wake_by_ref();
        Poll::Pending
    } else {
        Poll::Ready(())
    }
}

/// Spends one unit of the budget, if it is constrained: an operation
/// completed.
#[inline]
pub(crate) fn made_progress() {
    CURRENT.with(|current| current.set(current.get().spend()));
}

/// Whether the current budget has a unit left (an unconstrained one
/// always has).
#[inline]
pub(crate) fn has_budget_remaining() -> bool {
    !CURRENT.with(Cell::get).is_spent()
}

/// Polls a ready operation under the budget: `Pending` (with `cx` woken)
/// if the budget is spent, else `poll`'s answer, spending one unit if it
/// is `Ready`. A `Pending` answer spends nothing: the task waits anyway.
#[inline]
pub(crate) fn poll_budgeted<T>(
    cx: &mut Context<'_>,
    poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
) -> Poll<T> {
    if poll_proceed(cx).is_pending() {
        return Poll::Pending;
    }
    let polled = poll(cx);
    if polled.is_ready() {
        made_progress();
    }
    polled
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    /// Counts its wake-ups.
    struct CountWakes(AtomicUsize);

    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn current_budget() -> Budget {
        CURRENT.with(Cell::get)
    }

    fn ready_op(cx: &mut Context<'_>) -> Poll<()> {
        poll_budgeted(cx, |_| Poll::Ready(()))
    }

    // Mutation caught: `is_spent` one unit late (`self.0 == 0`: never
    // spent), `poll_proceed` not waking the task.
    #[test]
    fn a_budget_lets_exactly_its_units_through_then_wakes_once_per_refusal() {
        let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        budget(|| {
            for _ in 0..POLL_BUDGET {
                assert!(ready_op(&mut cx).is_ready());
            }
            assert_eq!(wakes.0.load(Ordering::Relaxed), 0);
            assert!(!has_budget_remaining());
            assert!(ready_op(&mut cx).is_pending());
            assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
        });
        // Outside the poll: unconstrained again.
        assert!(has_budget_remaining());
        for _ in 0..1000 {
            assert!(ready_op(&mut cx).is_ready());
        }
        assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
    }

    // Mutation caught: `poll_budgeted` spending on `Pending`.
    #[test]
    fn pending_operations_spend_nothing() {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        budget(|| {
            for _ in 0..1000 {
                assert!(poll_budgeted(&mut cx, |_| Poll::<()>::Pending).is_pending());
            }
            assert_eq!(current_budget(), Budget::INITIAL);
        });
    }

    // Mutation caught: `put_back`, or the guard of `with_budget`, putting
    // back "unconstrained" instead of the outer budget.
    #[test]
    fn nested_budgets_and_unconstrained_restore_the_outer_one() {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        budget(|| {
            assert!(ready_op(&mut cx).is_ready());
            budget(|| {
                for _ in 0..POLL_BUDGET {
                    assert!(ready_op(&mut cx).is_ready());
                }
                assert!(!has_budget_remaining());
            });
            with_unconstrained(|| {
                for _ in 0..1000 {
                    assert!(ready_op(&mut cx).is_ready());
                }
            });
            assert_eq!(current_budget(), Budget(POLL_BUDGET));
            // A task poll nested in this one, as a nested scheduler loop
            // runs it.
            let outer = set_aside();
            assert_eq!(current_budget(), Budget::UNCONSTRAINED, "between polls");
            start_poll();
            for _ in 0..POLL_BUDGET {
                assert!(ready_op(&mut cx).is_ready());
            }
            assert!(!has_budget_remaining());
            end_poll();
            assert_eq!(current_budget(), Budget::UNCONSTRAINED, "between polls");
            put_back(outer);
            assert_eq!(current_budget(), Budget(POLL_BUDGET));
        });
        assert_eq!(current_budget(), Budget::UNCONSTRAINED);
    }

    // Mutation caught: `with_budget` restoring after `f` returns instead of
    // in a guard (an unwind skips it).
    #[test]
    fn a_panicking_poll_restores_the_budget() {
        let caught = std::panic::catch_unwind(|| budget(|| panic!("in the poll")));
        assert!(caught.is_err());
        assert_eq!(current_budget(), Budget::UNCONSTRAINED);
    }
}
