//! A pool's clock: what "now" means for its timers and for
//! `bwos::time::Instant::now()` on its threads.
//!
//! Without the `test-util` feature it is the system's monotonic clock and
//! costs exactly an `Instant::now()`. With it, the clock can be paused
//! (tokio's test-util semantics, per pool): while paused, time moves only
//! when `bwos::time::advance` moves it or when the pool has nothing left
//! to do but wait for a timer, and then it jumps to that timer's deadline
//! (`auto_advance.rs` decides when). Resumed, it runs at the system
//! clock's rate again from where it stood, so it stays ahead of the system
//! clock by what it was advanced.
//!
//! (Not to be confused with `sched/clock.rs`, the cheap tick counter that
//! measures task polls.)

use std::time::Instant;

#[cfg(any(feature = "test-util", bwos_loom))]
use std::time::Duration;

#[cfg(any(feature = "test-util", bwos_loom))]
use crate::sched::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

/// A pool's clock (see the module docs).
pub(crate) struct PoolClock {
    /// The instant the clock was made: the timer wheel's tick 0, and the
    /// grid that pausing aligns to.
    epoch: Instant,
    #[cfg(any(feature = "test-util", bwos_loom))]
    paused: Pausable,
}

/// The pausable part of the clock.
#[cfg(any(feature = "test-util", bwos_loom))]
struct Pausable {
    /// The clock has been paused at least once, so it may differ from the
    /// system clock: until then [`PoolClock::now`] reads the system clock
    /// without the lock. Set once, under the lock.
    diverged: AtomicBool,
    state: Mutex<ClockState>,
}

#[cfg(any(feature = "test-util", bwos_loom))]
struct ClockState {
    /// The clock's reading when it last stopped or started.
    base: Instant,
    /// When (by the system clock) it started running from `base`; `None`
    /// while paused.
    running_since: Option<Instant>,
}

/// Why a pause, resume or advance was refused (the public functions turn
/// these into panics, as tokio does).
#[cfg(any(feature = "test-util", bwos_loom))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClockError {
    /// `pause` on a paused clock.
    AlreadyPaused,
    /// `resume` or `advance` on a running clock.
    NotPaused,
}

#[cfg(any(feature = "test-util", bwos_loom))]
impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClockError::AlreadyPaused => "the pool's clock is already paused",
            ClockError::NotPaused => "the pool's clock is not paused",
        })
    }
}

impl PoolClock {
    pub(crate) fn new() -> Self {
        let epoch = Instant::now();
        PoolClock {
            epoch,
            #[cfg(any(feature = "test-util", bwos_loom))]
            paused: Pausable {
                diverged: AtomicBool::new(false),
                state: Mutex::new(ClockState {
                    base: epoch,
                    running_since: Some(epoch),
                }),
            },
        }
    }

    /// The instant the clock was made.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// The clock's reading.
    #[cfg(not(any(feature = "test-util", bwos_loom)))]
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        Instant::now()
    }

    /// The clock's reading: the system clock's until the first pause.
    #[cfg(any(feature = "test-util", bwos_loom))]
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        // Acquire: pairs with the Release store in `pause`, after which
        // the state under the lock is what counts.
        if !self.paused.diverged.load(Ordering::Acquire) {
            return Instant::now();
        }
        let state = self.lock();
        match state.running_since {
            Some(since) => state.base + since.elapsed(),
            None => state.base,
        }
    }
}

#[cfg(any(feature = "test-util", bwos_loom))]
impl PoolClock {
    fn lock(&self) -> MutexGuard<'_, ClockState> {
        // Nothing panics under the lock but arithmetic on instants the
        // clock made itself; a poisoned state is still a consistent one.
        self.paused
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Whether the clock is paused.
    pub(crate) fn is_paused(&self) -> bool {
        // Relaxed: until the first pause nothing can be paused; after it,
        // the lock decides.
        self.paused.diverged.load(Ordering::Relaxed) && self.lock().running_since.is_none()
    }

    /// Stops the clock. It stops at the next whole millisecond after the
    /// epoch (less than a millisecond ahead of now: a clock may jump
    /// forward, never back), so that a deadline a whole number of
    /// milliseconds after a paused `now` falls on a tick of the timer
    /// wheel and the clock reaches it exactly.
    pub(crate) fn pause(&self) -> Result<(), ClockError> {
        let mut state = self.lock();
        let Some(since) = state.running_since else {
            return Err(ClockError::AlreadyPaused);
        };
        let now = state.base + since.elapsed();
        let into_epoch = now.saturating_duration_since(self.epoch);
        let millis = into_epoch.as_nanos().div_ceil(1_000_000);
        let aligned = u64::try_from(millis)
            .ok()
            .and_then(|millis| self.epoch.checked_add(Duration::from_millis(millis)))
            .unwrap_or(now);
        state.base = aligned.max(now);
        state.running_since = None;
        // Release: a reader that sees the flag (Acquire in `now`) then
        // takes the lock, which orders it after this section anyway; the
        // flag only has to be seen after the state it announces.
        self.paused.diverged.store(true, Ordering::Release);
        Ok(())
    }

    /// Starts the clock again from where it stands.
    pub(crate) fn resume(&self) -> Result<(), ClockError> {
        let mut state = self.lock();
        if state.running_since.is_some() {
            return Err(ClockError::NotPaused);
        }
        state.running_since = Some(Instant::now());
        Ok(())
    }

    /// Moves a paused clock forward by `duration` (to the latest instant
    /// the clock can express if that overflows).
    pub(crate) fn advance(&self, duration: Duration) -> Result<(), ClockError> {
        let mut state = self.lock();
        if state.running_since.is_some() {
            return Err(ClockError::NotPaused);
        }
        state.base = add_saturating(state.base, duration);
        Ok(())
    }

    /// Moves a paused clock forward to `instant` if it is behind it (an
    /// automatic advance to a timer's deadline); does nothing to a
    /// running clock.
    pub(crate) fn advance_to(&self, instant: Instant) {
        let mut state = self.lock();
        if state.running_since.is_none() && instant > state.base {
            state.base = instant;
        }
    }
}

/// `instant + duration`, or the latest instant that addition can reach.
#[cfg(any(feature = "test-util", bwos_loom))]
pub(crate) fn add_saturating(instant: Instant, duration: Duration) -> Instant {
    if let Some(sum) = instant.checked_add(duration) {
        return sum;
    }
    let mut reached = instant;
    let mut step = duration;
    while !step.is_zero() {
        match reached.checked_add(step) {
            Some(next) => reached = next,
            None => step /= 2,
        }
    }
    reached
}

#[cfg(all(test, any(feature = "test-util", bwos_loom), not(bwos_loom)))]
mod tests {
    use super::*;

    // Mutation caught: `now` ignoring the paused state (reading the system
    // clock), or `advance` not adding.
    #[test]
    fn a_paused_clock_moves_only_when_advanced() {
        let clock = PoolClock::new();
        clock.pause().unwrap();
        let stopped = clock.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now(), stopped);
        clock.advance(Duration::from_secs(3600)).unwrap();
        assert_eq!(clock.now(), stopped + Duration::from_secs(3600));
        clock.advance_to(stopped);
        assert_eq!(
            clock.now(),
            stopped + Duration::from_secs(3600),
            "never back"
        );
    }

    // Mutation caught: pausing at the raw reading instead of a whole
    // millisecond after the epoch.
    #[test]
    fn pausing_stops_on_a_whole_millisecond_after_the_epoch() {
        let clock = PoolClock::new();
        std::thread::sleep(Duration::from_micros(1500));
        clock.pause().unwrap();
        let since = clock.now() - clock.epoch();
        assert_eq!(since.as_nanos() % 1_000_000, 0, "{since:?}");
    }

    #[test]
    fn pause_twice_resume_or_advance_a_running_clock_are_refused() {
        let clock = PoolClock::new();
        assert_eq!(clock.resume(), Err(ClockError::NotPaused));
        assert_eq!(
            clock.advance(Duration::from_secs(1)),
            Err(ClockError::NotPaused)
        );
        clock.pause().unwrap();
        assert_eq!(clock.pause(), Err(ClockError::AlreadyPaused));
        clock.resume().unwrap();
        assert!(!clock.is_paused());
    }

    // Mutation caught: `resume` restarting from the system clock (the
    // advanced time lost).
    #[test]
    fn a_resumed_clock_runs_on_from_where_it_stood() {
        let clock = PoolClock::new();
        clock.pause().unwrap();
        clock.advance(Duration::from_secs(60)).unwrap();
        let stood = clock.now();
        clock.resume().unwrap();
        let later = clock.now();
        assert!(later >= stood);
        assert!(later >= Instant::now() + Duration::from_secs(59));
    }

    #[test]
    fn advancing_past_the_end_of_time_saturates() {
        let clock = PoolClock::new();
        clock.pause().unwrap();
        clock.advance(Duration::MAX).unwrap();
        let end = clock.now();
        clock.advance(Duration::from_secs(1)).unwrap();
        assert_eq!(clock.now(), end);
        assert!(end > Instant::now() + Duration::from_secs(86_400 * 365));
    }
}
