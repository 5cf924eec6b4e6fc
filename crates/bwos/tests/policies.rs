//! Stealing and idle policies: every combination computes correct
//! results, the counters count, and bad configurations are typed errors.
#![cfg(not(bwos_loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bwos::{
    IdlePolicy, StealBatch, StealPolicy, ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder,
};
use bwos_testkit::watchdog;
use common::{fib, fib_serial};

mod common;

const STEAL_POLICIES: [StealPolicy; 6] = [
    StealPolicy::Random,
    StealPolicy::Sequential,
    StealPolicy::LastVictim,
    StealPolicy::BestOfTwo,
    StealPolicy::BestOfMany { candidates: 3 },
    StealPolicy::Topology,
];
const IDLE_POLICIES: [IdlePolicy; 4] = [
    IdlePolicy::Spin,
    IdlePolicy::Yield,
    IdlePolicy::Park,
    IdlePolicy::Balanced,
];

fn quicksort(values: &mut [u64]) {
    if values.len() <= 16 {
        values.sort_unstable();
        return;
    }
    let pivot = values[values.len() / 2];
    let mut low = 0;
    let mut high = values.len() - 1;
    loop {
        while values[low] < pivot {
            low += 1;
        }
        while values[high] > pivot {
            high -= 1;
        }
        if low >= high {
            break;
        }
        values.swap(low, high);
        low += 1;
        high -= 1;
    }
    let (left, right) = values.split_at_mut(high + 1);
    bwos::join(|| quicksort(left), || quicksort(right));
}

/// fib, quicksort and a scope of nested spawns on `pool`, checked.
fn workloads_are_correct(pool: &ThreadPool, what: &str) {
    assert_eq!(pool.install(|| fib(18)), fib_serial(18), "fib, {what}");
    let mut values: Vec<u64> = (0..20_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40)
        .collect();
    let mut expected = values.clone();
    expected.sort_unstable();
    pool.install(|| quicksort(&mut values));
    assert_eq!(values, expected, "quicksort, {what}");
    let ran: Vec<AtomicUsize> = (0..300).map(|_| AtomicUsize::new(0)).collect();
    pool.scope(|s| {
        for chunk in ran.chunks(30) {
            s.spawn(move |s| {
                for slot in chunk {
                    s.spawn(move |_| {
                        slot.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
        }
    });
    assert!(
        ran.iter().all(|slot| slot.load(Ordering::Relaxed) == 1),
        "every spawned closure ran exactly once, {what}"
    );
}

#[test]
fn every_policy_combination_runs_the_stress_workloads_correctly() {
    watchdog(
        "every_policy_combination_runs_the_stress_workloads_correctly",
        || {
            for steal in STEAL_POLICIES {
                for probabilistic in [false, true] {
                    for batch in [StealBatch::One, StealBatch::Block] {
                        for idle in IDLE_POLICIES {
                            // 2 workers, and 3 (more than the cores of CI).
                            for threads in [2, 3] {
                                let what = format!(
                                    "{steal:?} probabilistic={probabilistic} {batch:?} \
                                     {idle:?} {threads} threads"
                                );
                                let pool = ThreadPoolBuilder::new()
                                    .num_threads(threads)
                                    .steal_policy(steal.clone())
                                    .probabilistic_steal(probabilistic)
                                    .steal_batch(batch)
                                    .idle_policy(idle)
                                    .sleep_threshold(8)
                                    .build()
                                    .unwrap();
                                workloads_are_correct(&pool, &what);
                            }
                        }
                    }
                }
            }
        },
    );
}

#[test]
fn block_steals_with_a_tiny_queue_lose_nothing() {
    watchdog("block_steals_with_a_tiny_queue_lose_nothing", || {
        for idle in IDLE_POLICIES {
            let pool = ThreadPoolBuilder::new()
                .num_threads(3)
                .queue_config(bwos::QueueConfig::new(2, 2).unwrap())
                .lazy_queueing(false)
                .steal_batch(StealBatch::Block)
                .idle_policy(idle)
                .build()
                .unwrap();
            workloads_are_correct(&pool, &format!("tiny queue, {idle:?}"));
        }
    });
}

/// `rounds` joins in a row on one worker, each of whose `a` waits until
/// its `b` ran elsewhere: each `b` must be stolen, so the worker must share
/// again after each steal. `a` keeps joining while it waits: a worker
/// shares its queued jobs with hungry workers only at a `join` (see the
/// `worker` module), and the other worker may become hungry after any
/// given one of them (a single join before waiting made this test hang
/// whenever the other worker had not started searching yet).
fn forced_steals(pool: &ThreadPool, rounds: usize) {
    pool.install(|| {
        for _ in 0..rounds {
            let b_ran = AtomicBool::new(false);
            bwos::join(
                || {
                    while !b_ran.load(Ordering::Acquire) {
                        bwos::join(std::thread::yield_now, || ());
                    }
                },
                || b_ran.store(true, Ordering::Release),
            );
        }
    });
}

#[test]
fn stats_count_steals_credits_and_sleeps() {
    watchdog("stats_count_steals_credits_and_sleeps", || {
        for idle in IDLE_POLICIES {
            let pool = ThreadPoolBuilder::new()
                .num_threads(2)
                .idle_policy(idle)
                .build()
                .unwrap();
            forced_steals(&pool, 3);
            let stats = pool.stats();
            assert!(stats.steals >= 3, "{idle:?}: every b was stolen: {stats}");
            if idle == IdlePolicy::Balanced {
                assert!(
                    stats.credits_earned >= 2,
                    "{idle:?}: a steal earns two credits: {stats}"
                );
            } else {
                assert_eq!(
                    stats.credits_earned, 0,
                    "{idle:?}: credits are BWS only: {stats}"
                );
            }
            // With nothing to do, every policy lets the pool fall asleep.
            while pool.stats().sleeps < 2 {
                std::thread::sleep(Duration::from_millis(5));
            }
            let stats = pool.stats();
            assert!(stats.credits_spent <= stats.credits_earned, "{stats}");
            assert!(stats.wakeups <= stats.sleeps, "{stats}");
            // Sleepers wake for new work.
            assert_eq!(pool.install(|| fib(15)), fib_serial(15));
            let text = stats.to_string();
            assert!(
                text.contains("steals") && text.contains("credits"),
                "{text}"
            );
        }
    });
}

#[test]
fn bad_steal_and_idle_options_are_typed_errors() {
    let error = ThreadPoolBuilder::new()
        .steal_policy(StealPolicy::BestOfMany { candidates: 0 })
        .build()
        .unwrap_err();
    assert!(
        matches!(
            error,
            ThreadPoolBuildError::InvalidOption {
                option: "steal_policy",
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("BestOfMany { candidates: 0 }"),
        "{message}"
    );
    assert!(message.contains("at least 1 candidate"), "{message}");

    let error = ThreadPoolBuilder::new()
        .sleep_threshold(0)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            error,
            ThreadPoolBuildError::InvalidOption {
                option: "sleep_threshold",
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("sleep_threshold(0)"), "{message}");
    assert!(message.contains("1 to 4294967295"), "{message}");

    // Candidates beyond the other workers are allowed (each is sampled).
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .steal_policy(StealPolicy::BestOfMany { candidates: 100 })
        .build()
        .unwrap();
    assert_eq!(pool.install(|| fib(10)), 55);
}

#[test]
fn defaults_are_documented_values() {
    assert_eq!(StealPolicy::default(), StealPolicy::Random);
    assert_eq!(StealBatch::default(), StealBatch::One);
    assert_eq!(IdlePolicy::default(), IdlePolicy::Park);
    let text = format!("{:?}", ThreadPoolBuilder::new());
    assert!(text.contains("steal_policy: Random"), "{text}");
}

#[cfg(target_os = "linux")]
#[test]
fn pinned_workers_run_where_they_were_pinned() {
    watchdog("pinned_workers_run_where_they_were_pinned", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .pin_threads(true)
            .steal_policy(StealPolicy::Topology)
            .build()
            .unwrap();
        let cpus: Vec<i32> = (0..2)
            .map(|_| {
                let (a, b) = pool.install(|| {
                    // SAFETY: sched_getcpu has no preconditions.
                    let cpu = || unsafe { libc::sched_getcpu() };
                    bwos::join(cpu, cpu)
                });
                a.max(b)
            })
            .collect();
        assert!(cpus.iter().all(|&cpu| cpu >= 0), "{cpus:?}");
        workloads_are_correct(&pool, "pinned, topology");
    });
}
