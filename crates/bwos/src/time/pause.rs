//! The paused clock (feature `test-util`): [`pause`], [`resume`],
//! [`advance`], tokio's test utilities, per pool.

use std::sync::Arc;
use std::time::Duration;

use crate::sched::current::with_current_pool_if_any;
use crate::sched::idle::park;
use crate::sched::registry::Registry;

/// Calls `f` with the pool the calling thread works for, or panics with a
/// message naming `function`.
#[track_caller]
fn with_pool<R>(function: &str, f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    with_current_pool_if_any(|registry| match registry {
        Some(registry) => f(registry),
        None => panic!(
            "bwos::time::{function}() was called outside a bwos pool: call it from a task, \
             in `block_on` or on a blocking thread of the pool whose clock it controls \
             (each pool has its own clock)"
        ),
    })
}

/// Pauses the clock of the current pool: [`Instant::now`](super::Instant::now)
/// stops, and the pool's timers see no time pass, except
/// - when [`advance`] moves the clock by hand, and
/// - when the pool has nothing to do but wait for a timer (*auto-advance*):
///   the clock then jumps to the next timer's deadline at once, so that a
///   test of a one-hour timeout takes no time.
///
/// tokio's `time::pause`, per pool: the current pool is the calling
/// worker's, or the one a `block_on` or blocking thread works for. Other
/// pools' clocks, and `std::time::Instant`, are not affected. Pausing
/// moves the clock forward to the next whole millisecond of the pool's
/// timers (less than a millisecond), so that deadlines a whole number of
/// milliseconds after a paused `now` are reached exactly.
///
/// # Auto-advance
/// The clock jumps when all of these hold (then, as in tokio, the timers
/// due at the new time fire together):
/// - every worker of the pool sleeps with nothing to do;
/// - no [`spawn_blocking`](crate::task::spawn_blocking) closure of the pool
///   is queued or running (as in tokio: a test can keep the clock still
///   while real I/O happens by running it there), and no
///   [`block_in_place`](crate::task::block_in_place) closure runs;
/// - no thread outside the workers is polling a
///   [`block_on`](crate::block_on) future of the pool (a `block_on` that
///   waits for a wake-up does not hold the clock);
/// - no socket of the pool is ready.
///
/// Threads the pool cannot see are not counted: a plain thread that is
/// about to hand work to the pool does not hold the clock.
///
/// # Panics
/// As tokio's, this test utility panics (with a message that says which)
/// if the calling thread works for no pool, or if the pool's clock is
/// already paused.
///
/// ```
/// use std::time::Duration;
/// use bwos::time::{self, Instant};
///
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let real_start = std::time::Instant::now();
/// pool.block_on(async {
///     time::pause();
///     let start = Instant::now();
///     let slow = time::timeout(Duration::from_secs(3600), std::future::pending::<()>());
///     assert!(slow.await.is_err(), "the hour passed at once");
///     assert_eq!(start.elapsed(), Duration::from_secs(3600));
/// });
/// assert!(real_start.elapsed() < Duration::from_secs(3600));
/// ```
#[track_caller]
pub fn pause() {
    with_pool("pause", |registry| {
        if let Err(error) = registry.timers.clock().pause() {
            panic!("bwos::time::pause(): {error}");
        }
    });
}

/// Resumes the current pool's paused clock: it runs at the system clock's
/// rate again, from where it stands (ahead of the system clock by the
/// time it was advanced). tokio's `time::resume`.
///
/// # Panics
/// As tokio's, if the calling thread works for no pool, or if the pool's
/// clock is not paused.
#[track_caller]
pub fn resume() {
    with_pool("resume", |registry| {
        if let Err(error) = registry.timers.clock().resume() {
            panic!("bwos::time::resume(): {error}");
        }
        park::clock_resumed(registry);
    });
}

/// Moves the current pool's paused clock forward by `duration` in one
/// jump, fires the pool's timers that are due then (their tasks wake in
/// deadline order; the pool may poll them in any order, as tokio's
/// runtime may), and yields once. A duration beyond the clock's range
/// moves it to the end of time instead of overflowing. tokio's
/// `time::advance`.
///
/// To let timers fire one after another at their own deadlines, sleep
/// instead: the auto-advance (see [`pause`]) takes the clock from one
/// deadline to the next as each woken task finishes.
///
/// # Panics
/// As tokio's, when first polled: if the calling thread works for no
/// pool, or if the pool's clock is not paused.
///
/// ```
/// use std::time::Duration;
/// use bwos::time::{self, Instant};
///
/// bwos::block_on(async {
///     time::pause();
///     let start = Instant::now();
///     let mut interval = time::interval(Duration::from_secs(10));
///     assert_eq!(interval.tick().await, start);
///     time::advance(Duration::from_secs(10)).await;
///     assert_eq!(interval.tick().await, start + Duration::from_secs(10));
///     assert_eq!(start.elapsed(), Duration::from_secs(10));
///     time::resume();
/// });
/// ```
pub async fn advance(duration: Duration) {
    with_pool("advance", |registry| {
        if let Err(error) = registry.timers.clock().advance(duration) {
            panic!("bwos::time::advance(): {error}");
        }
        registry.timers.fire_due();
    });
    crate::task::yield_now().await;
}
