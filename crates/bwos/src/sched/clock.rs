//! A cheap clock for short intervals measured on one thread, such as the
//! length of a group of task polls (`PoolStats::long_polls`,
//! `long_polls.rs`): [`ticks`] on the fast path, [`duration`] to turn the
//! few long intervals into time.
//!
//! # Why not `Instant`
//! Under callgrind (`valgrind --tool=callgrind`, which counts every
//! instruction, the vDSO's included) one `Instant::now()` is about 63
//! instructions and one `clock_gettime(CLOCK_MONOTONIC_COARSE)` about 20
//! (and the coarse clock moves in steps of 1 to 4 ms). On x86_64 the clock
//! here is the time-stamp counter instead: one `rdtsc`, a few
//! instructions per read, though 7 to 15 ns of time on the machines we
//! measure: too much to read twice per poll (see `long_polls.rs`), cheap
//! per group of polls. It counts at a constant rate on the CPUs of the
//! last fifteen years ("invariant TSC") and is synchronized between cores.
//!
//! Ticks become time only for intervals that may matter: the caller first
//! compares the ticks with [`ticks_in_at_least`] of its shortest threshold,
//! a bound that assumes the slowest counter we expect ([`MIN_TICKS_PER_SEC`]),
//! so that no interval that long in time is taken for a short one. Then
//! [`duration`] measures the counter's rate against `Instant` over the
//! time since [`init`] (at least that interval's length: the pool was
//! built before), which needs no calibration loop at start-up.
//!
//! Elsewhere (other architectures, and Miri, which has no `rdtsc`) the
//! ticks are nanoseconds of `Instant`: correct, and as costly as
//! `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The slowest tick rate expected: 250 MHz. TSCs tick at the CPU's
/// nominal frequency, 1 GHz or more on current hardware, and the fallback
/// at 1 GHz (nanoseconds). A slower counter would make [`ticks_in_at_least`]
/// too large, and intervals just above the threshold would go unnoticed.
pub(crate) const MIN_TICKS_PER_SEC: u64 = 250_000_000;

/// Where ticks and time were read together, for [`duration`].
struct Anchor {
    ticks: u64,
    instant: Instant,
}

static ANCHOR: OnceLock<Anchor> = OnceLock::new();

/// Reads the ticks and `Instant` together (the tightest of three tries:
/// a thread preempted between the two reads would shift the pair).
fn read_pair() -> (u64, Instant) {
    let mut best: Option<(u64, u64, Instant)> = None;
    for _ in 0..3 {
        let before = ticks();
        let instant = Instant::now();
        let after = ticks();
        let spread = after.saturating_sub(before);
        if best.is_none_or(|(best_spread, _, _)| spread < best_spread) {
            best = Some((spread, before + spread / 2, instant));
        }
    }
    let (_, ticks, instant) = best.expect("three tries");
    (ticks, instant)
}

fn anchor() -> &'static Anchor {
    ANCHOR.get_or_init(|| {
        let (ticks, instant) = read_pair();
        Anchor { ticks, instant }
    })
}

/// Fixes the time [`duration`] measures the tick rate from. Called when a pool is built, before any of its
/// polls; later calls do nothing.
pub(crate) fn init() {
    anchor();
}

/// The clock now, in ticks of a counter that only one thread's differences
/// are taken of. Cheap: see the module docs.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline]
pub(crate) fn ticks() -> u64 {
    // SAFETY: `rdtsc` exists on every x86_64 CPU, reads a register and
    // has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The clock now, in nanoseconds since the first read (this target has
/// no counter we read directly).
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[inline]
pub(crate) fn ticks() -> u64 {
    // Its own epoch: `anchor` reads the ticks while it is initialized.
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A number of ticks that `time` lasts at least, whatever the counter's
/// rate (down to [`MIN_TICKS_PER_SEC`]): an interval of fewer ticks is
/// shorter than `time`.
pub(crate) const fn ticks_in_at_least(time: Duration) -> u64 {
    let ticks = time.as_nanos() * MIN_TICKS_PER_SEC as u128 / 1_000_000_000;
    if ticks > u64::MAX as u128 {
        u64::MAX
    } else {
        ticks as u64
    }
}

/// The time `ticks` took, at the counter's rate measured since [`init`].
/// Slow (an `Instant` read and a division): for the rare intervals that
/// passed [`ticks_in_at_least`].
pub(crate) fn duration(ticks: u64) -> Duration {
    let anchor = anchor();
    let (now_ticks, now) = read_pair();
    let span_ticks = now_ticks.saturating_sub(anchor.ticks);
    let span_nanos = now.duration_since(anchor.instant).as_nanos();
    if span_ticks == 0 {
        // Nothing measured yet (`init` came right before): the slowest
        // rate we expect makes the interval as long as it can be.
        return Duration::from_nanos(
            u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(MIN_TICKS_PER_SEC))
                .unwrap_or(u64::MAX),
        );
    }
    let nanos = u128::from(ticks) * span_nanos / u128::from(span_ticks);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The ticks `time` lasts at the counter's rate measured since [`init`],
/// once the counter has run at least [`CALIBRATION`] since (at the
/// slowest rate expected; a few milliseconds on a GHz counter, over
/// which `Instant`'s reads measure the rate to a hundredth of a percent);
/// `None` before. Slow (an `Instant` read and a division): for the cold
/// paths that tune how often the clock is read.
pub(crate) fn ticks_in(time: Duration) -> Option<u64> {
    let anchor = anchor();
    if ticks().wrapping_sub(anchor.ticks) < ticks_in_at_least(CALIBRATION) {
        return None;
    }
    let (now_ticks, now) = read_pair();
    let span_ticks = now_ticks.saturating_sub(anchor.ticks);
    let span_nanos = now.duration_since(anchor.instant).as_nanos().max(1);
    let ticks = time.as_nanos() * u128::from(span_ticks) / span_nanos;
    Some(u64::try_from(ticks).unwrap_or(u64::MAX))
}

/// See [`ticks_in`].
pub(crate) const CALIBRATION: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;

    // Mutation caught: `duration` without the rate (ticks taken for
    // nanoseconds: a 3 GHz counter's interval reads three times too long),
    // with the ratio upside down, or off by a constant factor.
    #[test]
    #[cfg_attr(miri, ignore = "spins for milliseconds")]
    fn ticks_convert_to_the_time_instant_measures_around_them() {
        init();
        // Instant reads enclose the tick reads, which enclose the spin:
        // the interval's time lies between the inner and the outer span,
        // however long the thread is preempted meanwhile.
        let outer_start = Instant::now();
        let start_ticks = ticks();
        let inner_start = Instant::now();
        while inner_start.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let inner = inner_start.elapsed();
        let spun = ticks() - start_ticks;
        let outer = outer_start.elapsed();
        let measured = duration(spun);
        // 1% for the rate's measurement (its reads are a few hundred
        // nanoseconds apart at worst, over at least 20 ms).
        assert!(measured >= inner.mul_f64(0.99), "{measured:?} < {inner:?}");
        assert!(measured <= outer.mul_f64(1.01), "{measured:?} > {outer:?}");
        // An interval of fewer ticks than the bound is shorter than 20 ms.
        assert!(spun >= ticks_in_at_least(Duration::from_millis(20)));
    }

    // Mutation caught: the ratio upside down, or `None` forever.
    #[test]
    #[cfg_attr(miri, ignore = "spins for milliseconds")]
    fn ticks_in_is_the_measured_rate_once_calibrated() {
        init();
        let start = Instant::now();
        while start.elapsed() < CALIBRATION {
            std::hint::spin_loop();
        }
        let second = loop {
            if let Some(second) = ticks_in(Duration::from_secs(1)) {
                break second;
            }
            std::hint::spin_loop();
        };
        // An interval of that many ticks lasts a second, give or take the
        // rate's error (see the test above).
        let as_time = duration(second);
        assert!(as_time > Duration::from_millis(990), "{as_time:?}");
        assert!(as_time < Duration::from_millis(1010), "{as_time:?}");
    }

    #[test]
    fn the_bound_is_the_slowest_rate() {
        assert_eq!(ticks_in_at_least(Duration::from_millis(1)), 250_000);
        assert_eq!(ticks_in_at_least(Duration::MAX), u64::MAX);
    }
}
