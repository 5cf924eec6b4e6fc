//! [`Interval`]: ticks at a fixed period.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Instant;
use super::sleep::{Sleep, sleep_until};

/// Ticks are this much late at most before they count as missed.
const LATE: Duration = Duration::from_millis(5);

/// An [`Interval`] whose first tick is now and whose ticks come every
/// `period` after it. A zero period is taken as one millisecond, the
/// timers' resolution (tokio panics instead).
///
/// ```
/// use std::time::Duration;
///
/// bwos::block_on(async {
///     let mut interval = bwos::time::interval(Duration::from_millis(10));
///     let first = interval.tick().await; // at once
///     let second = interval.tick().await;
///     assert_eq!(second - first, Duration::from_millis(10));
/// });
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// An [`Interval`] whose first tick is at `start`, then every `period`.
/// `start` is a [`bwos::time::Instant`](Instant) or a `std::time::Instant`.
pub fn interval_at(start: impl Into<Instant>, period: Duration) -> Interval {
    Interval {
        sleep: sleep_until(start),
        period: period.max(Duration::from_millis(1)),
        missed_tick_behavior: MissedTickBehavior::default(),
    }
}

/// What an [`Interval`] does after ticks were missed (the task did not
/// call [`tick`](Interval::tick) for longer than a period), as tokio's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// The missed ticks come at once, one per call, until the schedule is
    /// caught up; later ticks keep the original schedule (the default).
    #[default]
    Burst,
    /// The next tick comes a whole period after the late one: the
    /// schedule shifts.
    Delay,
    /// The missed ticks are dropped: the next tick is the next one of the
    /// original schedule after now.
    Skip,
}

impl MissedTickBehavior {
    /// The deadline after a tick scheduled for `scheduled` was taken at
    /// `now`, late.
    fn next(self, scheduled: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => scheduled + period,
            MissedTickBehavior::Delay => now + period,
            MissedTickBehavior::Skip => {
                let behind = now.saturating_duration_since(scheduled).as_nanos();
                let periods = behind / period.as_nanos() + 1;
                let skip = u32::try_from(periods).unwrap_or(u32::MAX);
                scheduled
                    .checked_add(period.saturating_mul(skip))
                    .unwrap_or(now + period)
            }
        }
    }
}

/// Ticks at a fixed period: made by [`interval`] and [`interval_at`].
#[derive(Debug)]
pub struct Interval {
    sleep: Sleep,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns the instant it was scheduled
    /// for (not when it came: a late task gets the schedule's instant).
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// The poll behind [`tick`](Self::tick).
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let scheduled = self.sleep.deadline();
        let now = self.sleep.now();
        let next = if now > scheduled + LATE {
            self.missed_tick_behavior.next(scheduled, now, self.period)
        } else {
            scheduled + self.period
        };
        Pin::new(&mut self.sleep).reset(next);
        Poll::Ready(scheduled)
    }

    /// Restarts the schedule: the next tick comes a period from now.
    pub fn reset(&mut self) {
        let now = self.sleep.now();
        Pin::new(&mut self.sleep).reset(now + self.period);
    }

    /// The period between ticks.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does after missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what the interval does after missed ticks.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }
}
