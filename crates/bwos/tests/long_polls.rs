//! `PoolStats::long_polls`: a task poll that holds its worker past the
//! pool's threshold is counted, short ones are not, and the threshold's
//! bounds are checked when the pool is built.
//!
//! No assertion depends on how fast the machine is: the long poll spins
//! until `Instant` says 30 ms passed (a loaded machine only makes it
//! longer), against a 10 ms threshold; the short ones are trivial tasks
//! against a 1 s threshold.

#![cfg(not(bwos_loom))]

use std::time::{Duration, Instant};

use bwos::{ThreadPoolBuildError, ThreadPoolBuilder};
use bwos_testkit::watchdog;

// Mutation caught: `Cell::run` never calling `Schedule::long_poll`, the
// registry comparing with `<` (a long poll not counted), or `add_to` not
// summing the counter.
#[test]
fn a_poll_that_spins_past_the_threshold_counts() {
    watchdog("a_poll_that_spins_past_the_threshold_counts", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .long_poll_threshold(Duration::from_millis(10))
            .build()
            .unwrap();
        assert_eq!(pool.stats().long_polls, 0);
        let spinner = pool.spawn_task(async {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(30) {
                std::hint::spin_loop();
            }
        });
        pool.block_on(spinner).unwrap();
        // Counted on the worker before the task completes, so before the
        // handle returns.
        assert_eq!(pool.stats().long_polls, 1);
    });
}

// Mutation caught: every poll counted (the ticks not compared with a
// threshold, or the registry's comparison dropped).
#[test]
fn short_polls_do_not_count() {
    watchdog("short_polls_do_not_count", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .long_poll_threshold(Duration::from_secs(1))
            .build()
            .unwrap();
        let handles: Vec<_> = (0..1000u64)
            .map(|i| {
                pool.spawn_task(async move {
                    bwos::task::yield_now().await;
                    i
                })
            })
            .collect();
        let sum: u64 = pool.block_on(async {
            let mut sum = 0;
            for handle in handles {
                sum += handle.await.unwrap();
            }
            sum
        });
        assert_eq!(sum, 499_500);
        assert_eq!(pool.stats().long_polls, 0);
    });
}

// Mutation caught: a bound of the validation dropped or off by one unit.
#[test]
fn thresholds_outside_1_ms_to_1_hour_are_refused() {
    // Building and dropping the accepted pools waits for their threads.
    watchdog("thresholds_outside_1_ms_to_1_hour_are_refused", || {
        let build = |threshold| {
            ThreadPoolBuilder::new()
                .num_threads(1)
                .long_poll_threshold(threshold)
                .build()
        };
        for refused in [
            Duration::ZERO,
            Duration::from_micros(999),
            Duration::from_secs(3600) + Duration::from_nanos(1),
            Duration::MAX,
        ] {
            match build(refused) {
                Err(ThreadPoolBuildError::InvalidOption { option, .. }) => {
                    assert_eq!(option, "long_poll_threshold");
                }
                other => panic!("{refused:?}: {other:?}"),
            }
        }
        for allowed in [Duration::from_millis(1), Duration::from_secs(3600)] {
            assert!(build(allowed).is_ok(), "{allowed:?}");
        }
    });
}
