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

// Mutation caught: `group_took` comparing with `<` (a long poll not
// counted), or `add_to` not summing the counter. (Without the count at
// completion, `poll_completing`, the count would come a few instructions
// after the handle resolved: a race this test loses too rarely to catch;
// `sched::long_polls`' unit tests check it.)
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

fn spin(time: Duration) {
    let start = Instant::now();
    while start.elapsed() < time {
        std::hint::spin_loop();
    }
}

/// The threshold of the tests that also run thousands of short polls: a
/// preemption of the worker's thread by the OS is a poll's time too, and on
/// a loaded machine one of 10 ms happens; one of 100 ms does not.
const THRESHOLD: Duration = Duration::from_millis(100);

// Polls are timed in groups that grow while polls are short
// (`sched/long_polls.rs`): after thousands of short polls a long one still
// counts, once, and before its handle resolves; the next long ones too.
// Mutation caught: groups never falling back to one poll (the two
// spinners would share a group: 2 instead of 3).
#[test]
fn long_polls_after_many_short_ones_count_one_by_one() {
    watchdog("long_polls_after_many_short_ones_count_one_by_one", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .long_poll_threshold(THRESHOLD)
            .build()
            .unwrap();
        let yielder = pool.spawn_task(async {
            for _ in 0..20_000 {
                bwos::task::yield_now().await;
            }
        });
        pool.block_on(yielder).unwrap();
        assert_eq!(pool.stats().long_polls, 0);
        let spinner = pool.spawn_task(async { spin(3 * THRESHOLD) });
        pool.block_on(spinner).unwrap();
        assert_eq!(pool.stats().long_polls, 1);
        // Two long polls back to back, each yielding once in between.
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                pool.spawn_task(async {
                    spin(THRESHOLD + THRESHOLD / 2);
                    bwos::task::yield_now().await;
                })
            })
            .collect();
        for spinner in spinners {
            pool.block_on(spinner).unwrap();
        }
        assert_eq!(pool.stats().long_polls, 3);
    });
}

// A group of polls ends before the worker runs a fork/join job or idles:
// neither is a poll's time. Mutation caught: the scheduler loop not
// closing the group before a job (the 30 ms job counts), or before it
// idles (the 30 ms sleep counts).
#[test]
fn jobs_and_sleeps_between_short_polls_do_not_count() {
    watchdog("jobs_and_sleeps_between_short_polls_do_not_count", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .long_poll_threshold(THRESHOLD)
            .build()
            .unwrap();
        let task = pool.spawn_task(async {
            for round in 0..3_000 {
                bwos::task::yield_now().await;
                if round == 1_000 {
                    // Runs on this worker between two of this task's polls.
                    bwos::spawn(|| spin(3 * THRESHOLD));
                }
                if round == 2_000 {
                    bwos::time::sleep(3 * THRESHOLD).await;
                }
            }
        });
        pool.block_on(task).unwrap();
        assert_eq!(pool.stats().long_polls, 0);
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
