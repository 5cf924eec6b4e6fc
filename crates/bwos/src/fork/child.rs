//! One forked future and what became of it: the unit that `join` and
//! `scope` poll, here or on a thief.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

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
    /// code).
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
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(&mut cx))) {
            Ok(Poll::Pending) => {}
            // Replacing the variant drops the future in place, which
            // pinning allows.
            Ok(Poll::Ready(output)) => *self = Child::Done(output),
            Err(payload) => *self = Child::Panicked(payload),
        }
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
