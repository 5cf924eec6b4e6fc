//! [`Instant`]: a point in time on the current pool's clock.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

#[cfg(feature = "test-util")]
use crate::sched::current::with_clock_of_current_pool;

/// A point in time, as [`std::time::Instant`], read from the current
/// pool's clock: tokio's `time::Instant`.
///
/// Without the `test-util` feature the pool's clock is the system's
/// monotonic clock and [`Instant::now`] is `std::time::Instant::now()`.
/// With it, a pool's clock can be paused and moved by hand
/// (`bwos::time::pause`, `bwos::time::advance`), and
/// `Instant::now()` reads that clock on the threads that work for the
/// pool (its workers, its blocking threads, a `block_on` of the pool), so
/// that [`sleep`](super::sleep), [`timeout`](super::timeout) and
/// [`interval`](super::interval) see the same time as the code that
/// measures them. Elsewhere it reads the global pool's clock if that pool
/// runs, else the system clock.
///
/// It converts to and from `std::time::Instant` (the same timeline: a
/// paused clock's instants are the system clock's, shifted by the time
/// it was advanced) and compares with it, so code written against the
/// std type keeps working: every function that takes a deadline takes
/// either.
///
/// ```
/// use std::time::Duration;
/// use bwos::time::Instant;
///
/// let start = Instant::now();
/// bwos::block_on(bwos::time::sleep(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// let std_start: std::time::Instant = start.into();
/// assert_eq!(start, std_start);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(std::time::Instant);

impl Instant {
    /// Now, on the current pool's clock (see the type's docs).
    #[inline]
    pub fn now() -> Instant {
        #[cfg(not(feature = "test-util"))]
        {
            Instant(std::time::Instant::now())
        }
        #[cfg(feature = "test-util")]
        {
            Instant(with_clock_of_current_pool(|timers| match timers {
                Some(timers) => timers.now(),
                None => std::time::Instant::now(),
            }))
        }
    }

    /// The same instant as a `std::time::Instant`.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant(std)
    }

    /// This instant as a `std::time::Instant`.
    pub fn into_std(self) -> std::time::Instant {
        self.0
    }

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// The time from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.0.checked_duration_since(earlier.0)
    }

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// The time since this instant, on the current pool's clock (zero if
    /// it lies in the future).
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + duration`, or `None` if the clock cannot express it.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_add(duration).map(Instant)
    }

    /// `self - duration`, or `None` if the clock cannot express it.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.0.checked_sub(duration).map(Instant)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(instant: Instant) -> std::time::Instant {
        instant.0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// If the result overflows the clock, as `std::time::Instant`'s.
    fn add(self, duration: Duration) -> Instant {
        Instant(self.0 + duration)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, duration: Duration) {
        self.0 += duration;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// If the result underflows the clock, as `std::time::Instant`'s.
    fn sub(self, duration: Duration) -> Instant {
        Instant(self.0 - duration)
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, duration: Duration) {
        self.0 -= duration;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    fn sub(self, earlier: Instant) -> Duration {
        self.duration_since(earlier)
    }
}

impl Sub<std::time::Instant> for Instant {
    type Output = Duration;

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    fn sub(self, earlier: std::time::Instant) -> Duration {
        self.0.saturating_duration_since(earlier)
    }
}

impl Sub<Instant> for std::time::Instant {
    type Output = Duration;

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier.0)
    }
}

impl PartialEq<std::time::Instant> for Instant {
    fn eq(&self, other: &std::time::Instant) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Instant> for std::time::Instant {
    fn eq(&self, other: &Instant) -> bool {
        *self == other.0
    }
}

impl PartialOrd<std::time::Instant> for Instant {
    fn partial_cmp(&self, other: &std::time::Instant) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

impl PartialOrd<Instant> for std::time::Instant {
    fn partial_cmp(&self, other: &Instant) -> Option<std::cmp::Ordering> {
        self.partial_cmp(&other.0)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
