//! Timers: [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`],
//! [`interval`] and [`interval_at`], named and behaving as tokio's.
//!
//! Each pool has a hierarchical timer wheel (O(1) to add and to cancel a
//! timer, one-millisecond ticks) that its own workers drive: a worker that
//! falls asleep fires the due timers and one sleeping worker sleeps only
//! until the next deadline (in the I/O driver's poll when it holds it);
//! busy workers look every 61 tasks. There is no timer thread. A timer
//! belongs to the current pool when it is created: the calling worker's,
//! else the pool the thread entered (a `block_on` poll, a blocking thread,
//! an [`EnterGuard`](crate::EnterGuard)), else the global pool (as
//! [`task::spawn`](crate::task::spawn)).
//!
//! Timers never fire early: a deadline is rounded up to the next
//! millisecond. Dropping a [`Sleep`] (or a [`Timeout`], or an
//! [`Interval`]) cancels its timer.
//!
//! Time is read from the pool's clock, through [`Instant`]. With the
//! `test-util` feature that clock can be paused and moved by hand for
//! tests (`pause`, `resume`, `advance`, tokio's test utilities): a
//! paused pool that has nothing to do but wait for a timer jumps to its
//! deadline at once.
//!
//! ```
//! use std::time::Duration;
//! use bwos::time;
//!
//! let start = time::Instant::now();
//! bwos::block_on(async {
//!     time::sleep(Duration::from_millis(20)).await;
//!     let slow = time::timeout(Duration::from_millis(10), time::sleep(Duration::from_secs(60)));
//!     assert!(slow.await.is_err(), "the sleep outlasts the timeout");
//! });
//! assert!(start.elapsed() >= Duration::from_millis(30));
//! ```

pub mod error;
mod instant;
mod interval;
#[cfg(feature = "test-util")]
mod pause;
mod sleep;
mod timeout;

pub use instant::Instant;
pub use interval::{Interval, MissedTickBehavior, interval, interval_at};
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub use pause::{advance, pause, resume};
pub use sleep::{Sleep, sleep, sleep_until};
pub use timeout::{Timeout, timeout, timeout_at};

use std::time::Duration;

/// `now + duration`, or a deadline so far away that it never comes if that
/// overflows `Instant` (about 30 years out, as tokio's "far future").
pub(crate) fn deadline_after(now: Instant, duration: Duration) -> Instant {
    now.checked_add(duration).unwrap_or_else(|| far_future(now))
}

/// About 30 years after `now`, or the latest instant the clock can express
/// before that.
fn far_future(now: Instant) -> Instant {
    const THIRTY_YEARS: Duration = Duration::from_secs(86_400 * 365 * 30);
    let mut step = THIRTY_YEARS;
    loop {
        if let Some(deadline) = now.checked_add(step) {
            return deadline;
        }
        step /= 2;
    }
}
