//! One forked future and what became of it: the unit that `join` and
//! `scope` poll, here or on a thief.

use std::any::Any;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::sched::quietly;

/// A forked future: still running, finished with its output, or finished
/// with a panic (its future already dropped).
pub(crate) enum Child<F: Future> {
    Running(F),
    Done(F::Output),
    Panicked(Box<dyn Any + Send>),
    /// The output or panic was taken by the parent.
    Taken,
}

impl<F: Future> Child<F> {
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        matches!(self, Child::Running(_))
    }

    /// Polls the future once if it still runs, with `waker` as its waker.
    /// Never unwinds: a panic is caught and kept, and the future is dropped
    /// at once (outside the unwinding, so its destructor runs as ordinary
    /// code). A panic of that destructor is caught too and becomes the
    /// child's outcome (as a task's does): a thief runs this in its
    /// scheduler loop, which must not unwind.
    ///
    /// # Safety
    /// `self` is pinned: the future inside never moves until it is dropped.
    #[inline]
    pub(crate) unsafe fn poll_once(&mut self, waker: &Waker) {
        let Child::Running(future) = self else {
            return;
        };
        // SAFETY: the caller guarantees that `self` (hence the future in
        // it) is pinned.
        let future = unsafe { Pin::new_unchecked(future) };
        let mut cx = Context::from_waker(waker);
        let next = match panic::catch_unwind(AssertUnwindSafe(|| future.poll(&mut cx))) {
            Ok(Poll::Pending) => return,
            Ok(Poll::Ready(output)) => Child::Done(output),
            Err(payload) => Child::Panicked(payload),
        };
        // SAFETY: `self` is pinned and `Running`; its future is dropped in
        // place (pinning allows it), once.
        if let Err(payload) = unsafe { self.replace_running(next) } {
            // The future's destructor panicked: that is the outcome now,
            // unless the poll panicked first, whose panic stands. What
            // loses is dropped, a panic of its own swallowed.
            if matches!(self, Child::Done(_)) {
                quietly::drop(std::mem::replace(self, Child::Panicked(payload)));
            } else {
                quietly::drop(payload);
            }
        }
    }

    /// Drops the running future in place and writes `next` over it; if the
    /// destructor panics, `next` is written all the same and the panic is
    /// returned.
    ///
    /// # Safety
    /// `self` is pinned, and it is `Running`.
    #[inline(always)]
    unsafe fn replace_running(&mut self, next: Child<F>) -> Result<(), Box<dyn Any + Send>> {
        let slot: *mut Child<F> = self;
        // SAFETY: `slot` comes from `&mut self`; the content is dropped
        // once, here (a drop that unwinds counts as done: the remaining
        // fields were dropped during the unwinding) and overwritten below
        // without a drop.
        let dropped = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
            std::ptr::drop_in_place(slot);
        }));
        // SAFETY: as above: the slot holds nothing live.
        unsafe { std::ptr::write(slot, next) };
        dropped
    }

    /// Drops the future of a child whose output the caller already took
    /// (it finished, outside of `poll_once`) and marks the child `Taken`:
    /// `*self = Child::Taken` with the future's own drop, which inlines,
    /// instead of the out-of-line drop of a `Child` that may hold anything.
    /// If the future's destructor panics, the child is `Taken` all the
    /// same, as with the assignment.
    ///
    /// # Safety
    /// `self` is pinned, and it is `Running`.
    #[inline(always)]
    pub(crate) unsafe fn retire(&mut self) {
        /// Writes `Taken` without dropping what is there (the future was
        /// dropped, or its drop unwound, which counts as dropped).
        struct MarkTaken<F: Future>(*mut Child<F>);
        impl<F: Future> Drop for MarkTaken<F> {
            #[inline(always)]
            fn drop(&mut self) {
                // SAFETY: the slot is valid (the pointer comes from the
                // `&mut` below) and its content is dropped already.
                unsafe { std::ptr::write(self.0, Child::Taken) };
            }
        }
        // Every access below goes through `slot`, so that the write of
        // `MarkTaken` stays valid under the aliasing rules.
        let slot: *mut Child<F> = self;
        // SAFETY: `slot` comes from `&mut self`, valid for this call.
        let Child::Running(future) = (unsafe { &mut *slot }) else {
            // SAFETY: the caller guarantees the child is running.
            unsafe { std::hint::unreachable_unchecked() }
        };
        let future: *mut F = future;
        let _mark = MarkTaken(slot);
        // SAFETY: the future is pinned (the caller's contract) and dropped
        // in place, once: `MarkTaken` overwrites the slot without a drop.
        unsafe { std::ptr::drop_in_place(future) };
    }

    /// The outcome of a finished child: its output, or its panic.
    pub(crate) fn take(&mut self) -> Result<F::Output, Box<dyn Any + Send>> {
        // Checked first: a running future is pinned and must not be moved
        // out, not even on the way to a panic.
        assert!(
            !self.is_running(),
            "bwos::fork: the outcome of a child that has not finished"
        );
        match std::mem::replace(self, Child::Taken) {
            Child::Done(output) => Ok(output),
            Child::Panicked(payload) => Err(payload),
            Child::Running(_) | Child::Taken => {
                unreachable!("bwos::fork: a child's outcome taken twice")
            }
        }
    }
}

/// A [`Child`] whose drop is a tag check when it is `Taken`, the state of
/// every child of a finished join: small enough to inline into the
/// enclosing future's drop, where the drop of a `Child` that may hold
/// anything is an out-of-line call.
pub(crate) struct ChildSlot<F: Future>(ManuallyDrop<Child<F>>);

impl<F: Future> ChildSlot<F> {
    #[inline]
    pub(crate) fn new(future: F) -> Self {
        ChildSlot(ManuallyDrop::new(Child::Running(future)))
    }
}

impl<F: Future> Deref for ChildSlot<F> {
    type Target = Child<F>;

    #[inline(always)]
    fn deref(&self) -> &Child<F> {
        &self.0
    }
}

impl<F: Future> DerefMut for ChildSlot<F> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Child<F> {
        &mut self.0
    }
}

impl<F: Future> Drop for ChildSlot<F> {
    // The unfinished case is out of line, so that a join's drop is two tag
    // checks that inline into the parent's poll: fib(25) on one worker
    // 1.57 -> 1.45 ms (`bwos-bench joinpath fork fib 1 300`). (Tried before
    // `fork::ready` and the stack-pointer read, the same change measured
    // 1.6x slower; measure again when the join's code changes.)
    #[inline(always)]
    fn drop(&mut self) {
        if !matches!(*self.0, Child::Taken) {
            drop_unfinished(&mut self.0);
        }
    }
}

/// Drops a child that still runs or holds an outcome: a join dropped part
/// way, or one whose outcome was never taken (a panic on the way).
#[cold]
#[inline(never)]
fn drop_unfinished<F: Future>(child: &mut ManuallyDrop<Child<F>>) {
    // SAFETY: dropped once, here; the slot is not used afterwards.
    unsafe { ManuallyDrop::drop(child) };
}
