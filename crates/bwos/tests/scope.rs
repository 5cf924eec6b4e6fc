//! `scope`: thousands of borrowing spawns, spawns from spawned tasks on
//! other threads (the atomic side of the Nowa counter), and panics in the
//! body and in spawned closures.
#![cfg(not(bwos_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use bwos_testkit::{panic_message as message, watchdog};
use common::pool;

mod common;

#[test]
fn thousands_of_borrowing_spawns_each_run_once() {
    watchdog("thousands_of_borrowing_spawns_each_run_once", || {
        for threads in [1, 2, 8] {
            let pool = pool(threads);
            let mut slots = vec![0u32; 10_000];
            pool.scope(|s| {
                for (i, slot) in slots.iter_mut().enumerate() {
                    s.spawn(move |_| *slot += i as u32 + 1);
                }
            });
            for (i, slot) in slots.iter().enumerate() {
                assert_eq!(*slot, i as u32 + 1, "slot {i}, {threads} threads");
            }
        }
    });
}

/// Spawns far past a tiny queue's capacity (four jobs), on the owner and
/// from spawned jobs: after a push finds the queue full, the next jobs go
/// to the injector without trying the queue (`push_or_inject`), and every
/// one of them must still run once. Catches: the skipping branch of
/// `WorkerThread::push_or_inject` returning without injecting the job
/// (the scope then waits forever, and the watchdog fails the test).
#[test]
fn spawns_past_a_full_queue_each_run_once() {
    watchdog("spawns_past_a_full_queue_each_run_once", || {
        for threads in [1, 2] {
            let pool = bwos::ThreadPoolBuilder::new()
                .num_threads(threads)
                .queue_config(bwos::QueueConfig::new(2, 2).unwrap())
                .build()
                .unwrap();
            let runs: Vec<AtomicUsize> = (0..5_000).map(|_| AtomicUsize::new(0)).collect();
            let runs = &runs[..];
            pool.scope(|s| {
                for chunk in runs.chunks(100) {
                    s.spawn(move |s| {
                        for run in chunk {
                            s.spawn(move |_| {
                                run.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    });
                }
            });
            for (i, run) in runs.iter().enumerate() {
                assert_eq!(run.load(Ordering::Relaxed), 1, "job {i}, {threads} threads");
            }
        }
    });
}

/// A spawn tree: every task spawns two more down to a depth, from whatever
/// thread it runs on, so most spawns happen off the owner's thread or
/// after the body ended.
#[test]
fn recursive_spawns_from_other_threads_are_all_awaited() {
    watchdog(
        "recursive_spawns_from_other_threads_are_all_awaited",
        || {
            fn tree<'scope>(s: &bwos::Scope<'scope>, depth: u32, count: &'scope AtomicUsize) {
                count.fetch_add(1, Ordering::Relaxed);
                if depth > 0 {
                    s.spawn(move |s| tree(s, depth - 1, count));
                    s.spawn(move |s| tree(s, depth - 1, count));
                }
            }
            for threads in [1, 2, 8] {
                let pool = pool(threads);
                for _ in 0..10 {
                    let count = AtomicUsize::new(0);
                    pool.scope(|s| tree(s, 12, &count));
                    assert_eq!(count.into_inner(), (1 << 13) - 1, "{threads} threads");
                }
            }
        },
    );
}

#[test]
fn scope_outside_any_pool_uses_the_global_pool() {
    watchdog("scope_outside_any_pool_uses_the_global_pool", || {
        assert_eq!(
            bwos::current_thread_index(),
            None,
            "the test thread is no worker"
        );
        let global_threads = bwos::current_num_threads();
        let on_global_workers = AtomicUsize::new(0);
        let mut values = vec![1u64; 100];
        let body_on_worker = bwos::scope(|s| {
            for value in values.iter_mut() {
                let on_global_workers = &on_global_workers;
                s.spawn(move |_| {
                    *value *= 2;
                    // A worker of the global pool: an index below its size.
                    if bwos::current_thread_index().is_some_and(|i| i < global_threads)
                        && bwos::current_num_threads() == global_threads
                    {
                        on_global_workers.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            bwos::current_thread_index().is_some()
        });
        assert!(
            body_on_worker,
            "the body ran on a worker of the global pool"
        );
        assert_eq!(
            on_global_workers.into_inner(),
            100,
            "every job ran on a global worker"
        );
        assert_eq!(values.iter().sum::<u64>(), 200);
    });
}

#[test]
fn nested_scopes_with_joins() {
    watchdog("nested_scopes_with_joins", || {
        let pool = pool(4);
        let total = AtomicUsize::new(0);
        pool.scope(|outer| {
            for _ in 0..8 {
                let total = &total;
                outer.spawn(move |_| {
                    bwos::scope(|inner| {
                        for _ in 0..8 {
                            inner.spawn(move |_| {
                                let (a, b) = bwos::join(|| 1, || 2);
                                total.fetch_add(a + b, Ordering::Relaxed);
                            });
                        }
                    });
                });
            }
        });
        assert_eq!(total.into_inner(), 8 * 8 * 3);
    });
}

#[test]
fn panics_in_body_and_spawns_reach_the_caller_after_all_work() {
    watchdog(
        "panics_in_body_and_spawns_reach_the_caller_after_all_work",
        || {
            let pool = pool(2);
            // (body panics, which spawned task panics)
            for (body_panics, panicking_task) in [
                (true, None),
                (false, Some(0)),
                (false, Some(63)),
                (true, Some(7)),
            ] {
                let ran = AtomicUsize::new(0);
                let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.scope(|s| {
                        for i in 0..64 {
                            let ran = &ran;
                            s.spawn(move |_| {
                                ran.fetch_add(1, Ordering::Relaxed);
                                if panicking_task == Some(i) {
                                    panic!("task");
                                }
                            });
                        }
                        if body_panics {
                            panic!("body");
                        }
                    })
                }));
                let payload = outcome.expect_err("the panic must propagate");
                // The first panic recorded wins; with both, which one comes
                // first depends on timing (`panics.rs` checks the order).
                let possible: &[&str] = match (body_panics, panicking_task) {
                    (true, None) => &["body"],
                    (false, _) => &["task"],
                    (true, Some(_)) => &["body", "task"],
                };
                assert!(
                    possible.contains(&message(&payload)),
                    "{}",
                    message(&payload)
                );
                assert_eq!(ran.into_inner(), 64, "every spawned task ran");
            }
            let mut sum = 0;
            pool.scope(|s| s.spawn(|_| sum = 5));
            assert_eq!(sum, 5, "the pool still works");
        },
    );
}

/// 500 spawned closures panic: the caller gets exactly one of their
/// payloads and the other 499 are dropped before the scope returns.
#[test]
fn many_panicking_spawns_report_one_panic() {
    /// A payload that counts its drops.
    struct Payload<'a> {
        index: usize,
        dropped: &'a AtomicUsize,
    }
    impl Drop for Payload<'_> {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
    watchdog("many_panicking_spawns_report_one_panic", || {
        // 'static, as panic payloads must be.
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        let pool = pool(8);
        let ran = AtomicUsize::new(0);
        let payload = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                for index in 0..500 {
                    let ran = &ran;
                    s.spawn(move |_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                        panic::panic_any(Payload {
                            index,
                            dropped: &DROPPED,
                        })
                    });
                }
            })
        }))
        .expect_err("the panic must propagate");
        assert_eq!(ran.into_inner(), 500, "every spawned closure ran");
        assert_eq!(
            DROPPED.load(Ordering::Relaxed),
            499,
            "all panics but one were dropped"
        );
        let payload = payload
            .downcast::<Payload<'static>>()
            .expect("one of the spawned payloads");
        assert!(payload.index < 500);
        drop(payload);
        assert_eq!(DROPPED.load(Ordering::Relaxed), 500);
    });
}
