//! `fork::join`: two futures, the second one stealable while the first
//! runs.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::child::{Child, ChildSlot};
use crate::join::{join_in_worker, runs_sequentially};
use crate::sched::stack::{stack_is_low, with_worker_room};
use crate::sched::worker::WorkerThread;

/// Runs `fa` and `fb` concurrently, potentially in parallel, and returns
/// both outputs.
///
/// Work-first: each poll of the returned future polls `fa` at once on the
/// calling worker, while the rest of the step (polling `fb`) waits in the
/// worker's LIFO BWoS queue, where an idle worker can steal it; in the
/// common case nobody does and the worker polls `fb` itself right after,
/// with no atomic read-modify-write on the way. A child that waits
/// (`Pending`) does not block anything: the join returns `Pending` once
/// neither child can make progress, and the worker goes on with other work
/// (other children, other tasks) until a child's waker wakes the task.
///
/// The futures may borrow from the caller (see "Borrowing and
/// cancellation" in the [module docs](crate::fork)). Outside a pool (say,
/// in another executor) both are polled on the calling thread.
///
/// # Panics
/// A panic in either child is caught; the other child still runs to
/// completion, then the panic resumes in the task that awaits the join
/// (`fa`'s if both panic).
///
/// ```
/// use bwos::fork::{self, Boxed};
///
/// // Recursive: the calls are boxed (`fork::boxed_with`, a frame from the
/// // worker's cache), and the function returns the box.
/// fn sum(values: &[u64]) -> Boxed<'_, u64> {
///     fork::boxed_with(move || async move {
///         if values.len() <= 1024 {
///             return values.iter().sum();
///         }
///         let (left, right) = values.split_at(values.len() / 2);
///         let (a, b) = fork::join(sum(left), sum(right)).await;
///         a + b
///     })
/// }
/// let values: Vec<u64> = (0..100_000).collect();
/// assert_eq!(bwos::block_on(sum(&values)), 4_999_950_000);
/// ```
pub fn join<FA, FB>(fa: FA, fb: FB) -> Join<FA, FB>
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    Join {
        a: ChildSlot::new(fa),
        b: ChildSlot::new(fb),
    }
}

/// The future of [`join`]: both outputs, once both children finished.
///
/// Dropping it drops the children that have not finished; at that point no
/// thread polls them (see the [module docs](crate::fork)).
#[must_use = "futures do nothing unless polled"]
pub struct Join<FA: Future, FB: Future> {
    a: ChildSlot<FA>,
    b: ChildSlot<FB>,
}

impl<FA, FB> Future for Join<FA, FB>
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    type Output = (FA::Output, FB::Output);

    // Always inlined into the parent's poll: a recursion reaches the next
    // level through `Boxed`'s indirect call anyway, and a join of its own
    // cost a call, a second set of register saves and the moves of its
    // outcome, 26 instructions per join of fib (callgrind, `bwos-bench
    // joinpath fork fib`: 28.1M -> 24.9M).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the children are structurally pinned: they are polled in
        // place and dropped in place, never moved while running
        // (`Child::take` moves only finished outcomes).
        let this = unsafe { self.get_unchecked_mut() };
        let waker = cx.waker();
        // SAFETY: the children are pinned (above).
        match unsafe { poll_sequential_fast(&mut this.a, &mut this.b, cx) } {
            Fast::Finished(poll) => return poll,
            // SAFETY: `b` is pinned (above).
            Fast::PollSecond => unsafe { this.b.poll_once(waker) },
            Fast::NotTaken => match (this.a.is_running(), this.b.is_running()) {
                // SAFETY: both children are pinned (above).
                (true, true) => unsafe { poll_both(&mut this.a, &mut this.b, waker) },
                // SAFETY: as above.
                (true, false) => unsafe { this.a.poll_once(waker) },
                // SAFETY: as above.
                (false, true) => unsafe { this.b.poll_once(waker) },
                (false, false) => {}
            },
        }
        if this.a.is_running() || this.b.is_running() {
            return Poll::Pending;
        }
        let a = this.a.take();
        let b = this.b.take();
        match (a, b) {
            (Ok(a), Ok(b)) => Poll::Ready((a, b)),
            (Err(payload), _) | (Ok(_), Err(payload)) => std::panic::resume_unwind(payload),
        }
    }
}

/// What the sequential fast path did.
pub(super) enum Fast<T> {
    /// The join's poll is over, with this outcome.
    Finished(Poll<T>),
    /// `a` was polled (it waits, or it panicked); `b` must be polled.
    PollSecond,
    /// The fast path does not apply.
    NotTaken,
}

/// What the sequential fast path saw.
enum Sequential<A, B> {
    /// Both children finished.
    Both(A, B),
    /// `a` finished, `b` waits.
    First(A),
    /// `a` waits; `b` was not polled.
    Neither,
}

/// The common case of a fine-grained recursion, with nothing of the
/// slower path's generality: both children still run, the worker runs
/// joins without queueing (lazy queueing, as in `crate::join`) and its
/// stack is not low. Polls `a`, then `b` (if `a` finished), with the
/// caller's context, under one `catch_unwind`, and writes the children's
/// states only when they do not both finish. Shared by `fork::join` and
/// `Region::join` (whose `fb` must be the parent's, no step queued).
///
/// # Safety
/// Both children are pinned.
#[inline(always)]
pub(super) unsafe fn poll_sequential_fast<FA, FB>(
    a: &mut Child<FA>,
    b: &mut Child<FB>,
    cx: &mut Context<'_>,
) -> Fast<(FA::Output, FB::Output)>
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    let (Child::Running(fa), Child::Running(fb)) = (&mut *a, &mut *b) else {
        return Fast::NotTaken;
    };
    let sequential = WorkerThread::with_current(|worker| {
        worker.is_some_and(|worker| runs_sequentially(worker) && !stack_is_low(worker))
    });
    if !sequential {
        return Fast::NotTaken;
    }
    // SAFETY: the children are pinned (the caller's contract).
    let (fa, fb) = unsafe { (Pin::new_unchecked(fa), Pin::new_unchecked(fb)) };
    let a_finished = std::cell::Cell::new(false);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match fa.poll(cx) {
        Poll::Ready(a) => {
            a_finished.set(true);
            match fb.poll(cx) {
                Poll::Ready(b) => Sequential::Both(a, b),
                Poll::Pending => Sequential::First(a),
            }
        }
        Poll::Pending => Sequential::Neither,
    }));
    match outcome {
        Ok(Sequential::Both(output_a, output_b)) => {
            // SAFETY: both children are pinned (the caller's contract) and
            // running, their futures finished and their outputs are here.
            unsafe {
                a.retire();
                b.retire();
            }
            Fast::Finished(Poll::Ready((output_a, output_b)))
        }
        Ok(Sequential::First(output_a)) => {
            *a = Child::Done(output_a);
            Fast::Finished(Poll::Pending)
        }
        Ok(Sequential::Neither) => Fast::PollSecond,
        Err(payload) if a_finished.get() => {
            // `b` panicked after `a` finished: the join's outcome is `b`'s
            // panic (`a`'s output went with the unwinding), and nothing is
            // left to wait for.
            *a = Child::Taken;
            *b = Child::Taken;
            std::panic::resume_unwind(payload)
        }
        Err(payload) => {
            // `a` panicked: `b` still runs to completion first.
            *a = Child::Panicked(payload);
            Fast::PollSecond
        }
    }
}

/// Polls `a` here and `b` wherever it gets to: `b`'s poll is a stack job
/// on the worker's queue while `a` is polled (a thief may take it), and the
/// worker runs it itself if it is still there afterwards. Both polls are
/// over when this returns, which is what makes borrowing children sound.
///
/// # Safety
/// Both children are pinned.
#[inline]
unsafe fn poll_both<FA, FB>(a: &mut Child<FA>, b: &mut Child<FB>, waker: &Waker)
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    with_worker_room(|worker| match worker {
        Some(worker) => {
            join_in_worker(
                worker,
                // SAFETY: `a` is pinned (the caller's contract).
                || unsafe { a.poll_once(waker) },
                // SAFETY: `b` is pinned (the caller's contract); whether a
                // thief or this worker polls it, `join_in_worker` returns
                // only after that poll is over.
                || unsafe { b.poll_once(waker) },
            );
        }
        // SAFETY: forwarded from the caller.
        None => unsafe {
            a.poll_once(waker);
            b.poll_once(waker);
        },
    });
}
