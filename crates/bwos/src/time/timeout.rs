//! [`Timeout`]: a future with a deadline.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Instant;
use super::error::Elapsed;
use super::sleep::{Sleep, sleep, sleep_until};
use crate::sched::coop;

/// Runs `future` for at most `duration`: its output in `Ok`, or
/// `Err(Elapsed)` if the time ran out first (the future is dropped with
/// the `Timeout`). The future is polled before the deadline is looked
/// at, so one that is ready wins even if the deadline passed.
///
/// ```
/// use std::time::Duration;
/// use bwos::time;
///
/// bwos::block_on(async {
///     let quick = time::timeout(Duration::from_secs(5), async { 7 }).await;
///     assert_eq!(quick, Ok(7));
///     let stuck = time::timeout(Duration::from_millis(5), std::future::pending::<()>()).await;
///     let error = stuck.expect_err("the deadline comes first");
///     assert_eq!(error.to_string(), "deadline has elapsed");
/// });
/// ```
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    Timeout::new(future.into_future(), sleep(duration))
}

/// Runs `future` until `deadline` at most: see [`timeout`]. The deadline
/// is a [`bwos::time::Instant`](Instant) or a `std::time::Instant`.
pub fn timeout_at<F: IntoFuture>(
    deadline: impl Into<Instant>,
    future: F,
) -> Timeout<F::IntoFuture> {
    Timeout::new(future.into_future(), sleep_until(deadline))
}

pin_project_lite::pin_project! {
    /// The future of [`timeout`] and [`timeout_at`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    fn new(future: F, sleep: Sleep) -> Self {
        Timeout { future, sleep }
    }

    /// The future inside.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The future inside, mutably.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The future inside, without its deadline.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    /// The deadline's sleep spends the cooperative budget as any sleep
    /// does (the future's own operations spend theirs). If the future
    /// spent the last unit in this poll, the deadline is looked at without
    /// the budget: else a future that always spends the whole budget would
    /// never see its timeout fire.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let mut poll_sleep = || match Pin::new(&mut *this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new())),
            Poll::Pending => Poll::Pending,
        };
        if had_budget && !coop::has_budget_remaining() {
            coop::with_unconstrained(poll_sleep)
        } else {
            poll_sleep()
        }
    }
}
