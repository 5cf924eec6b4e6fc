//! The builder's thread options: start and exit handlers, spawn handlers
//! (including one that fails), scoped pools, the building thread as
//! worker 0, and pools whose drop does not wait for their threads.
#![cfg(not(bwos_loom))]

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use bwos::{ThreadPoolBuildError, ThreadPoolBuilder};
use bwos_testkit::watchdog;

mod common;

#[test]
fn start_and_exit_handlers_run_once_per_worker() {
    watchdog("start_and_exit_handlers_run_once_per_worker", || {
        let started = Arc::new(Mutex::new(Vec::new()));
        let exited = Arc::new(Mutex::new(Vec::new()));
        let (s, e) = (Arc::clone(&started), Arc::clone(&exited));
        let pool = ThreadPoolBuilder::new()
            .num_threads(3)
            .start_handler(move |index| s.lock().unwrap().push(index))
            .exit_handler(move |index| e.lock().unwrap().push(index))
            .build()
            .unwrap();
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
        drop(pool); // joins the threads: every exit handler has run
        let mut started = started.lock().unwrap().clone();
        let mut exited = exited.lock().unwrap().clone();
        started.sort_unstable();
        exited.sort_unstable();
        assert_eq!(started, [0, 1, 2]);
        assert_eq!(exited, [0, 1, 2]);
    });
}

#[test]
fn a_panicking_start_handler_goes_to_the_panic_handler() {
    watchdog(
        "a_panicking_start_handler_goes_to_the_panic_handler",
        || {
            let (sender, receiver) = mpsc::channel();
            let sender = Mutex::new(sender);
            let pool = ThreadPoolBuilder::new()
                .num_threads(2)
                .start_handler(|index| panic!("start {index}"))
                .panic_handler(move |payload| {
                    let message = bwos_testkit::panic_message(&payload).to_owned();
                    sender.lock().unwrap().send(message).unwrap();
                })
                .build()
                .unwrap();
            // The workers still serve the pool.
            assert_eq!(pool.install(|| bwos::join(|| 3, || 4)), (3, 4));
            drop(pool);
            let mut messages: Vec<String> = receiver.iter().collect();
            messages.sort();
            assert_eq!(messages, ["start 0", "start 1"]);
        },
    );
}

#[test]
fn a_spawn_handler_starts_the_threads() {
    watchdog("a_spawn_handler_starts_the_threads", || {
        let handles = Mutex::new(Vec::new());
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|index| format!("custom-{index}"))
            .build_with_spawn_handler(|thread| {
                assert_eq!(
                    thread.name(),
                    Some(format!("custom-{}", thread.index()).as_str())
                );
                assert_eq!(thread.stack_size(), None);
                let name = thread.name().unwrap().to_owned();
                let handle = std::thread::Builder::new()
                    .name(name)
                    .spawn(move || thread.run())?;
                handles.lock().unwrap().push(handle);
                Ok(())
            })
            .unwrap();
        let names = pool.broadcast(|_| std::thread::current().name().unwrap().to_owned());
        assert_eq!(names, ["custom-0", "custom-1"]);
        drop(pool);
        for handle in handles.into_inner().unwrap() {
            handle.join().unwrap();
        }
    });
}

#[test]
fn a_failing_spawn_handler_stops_the_threads_it_started_and_reports_the_error() {
    watchdog(
        "a_failing_spawn_handler_stops_the_threads_it_started_and_reports_the_error",
        || {
            let exited = Arc::new(AtomicUsize::new(0));
            let exits = Arc::clone(&exited);
            let handles = Mutex::new(Vec::new());
            let error = ThreadPoolBuilder::new()
                .num_threads(3)
                .exit_handler(move |_| {
                    exits.fetch_add(1, Ordering::Relaxed);
                })
                .build_with_spawn_handler(|thread| {
                    if thread.index() == 2 {
                        return Err(io::Error::other("no more threads today"));
                    }
                    handles
                        .lock()
                        .unwrap()
                        .push(std::thread::spawn(move || thread.run()));
                    Ok(())
                })
                .unwrap_err();
            assert!(
                matches!(&error, ThreadPoolBuildError::Spawn(e) if e.to_string() == "no more threads today")
            );
            assert!(
                error.to_string().contains("no more threads today"),
                "{error}"
            );
            // The two threads it started have stopped.
            for handle in handles.into_inner().unwrap() {
                handle.join().unwrap();
            }
            assert_eq!(exited.load(Ordering::Relaxed), 2);
        },
    );
}

#[test]
fn a_scoped_pool_borrows_from_its_caller() {
    watchdog("a_scoped_pool_borrows_from_its_caller", || {
        let data: Vec<u64> = (1..=100).collect();
        let wrapped = AtomicUsize::new(0);
        let sum = ThreadPoolBuilder::new()
            .num_threads(2)
            .build_scoped(
                |thread| {
                    wrapped.fetch_add(1, Ordering::Relaxed);
                    thread.run();
                },
                |pool| {
                    pool.install(|| {
                        let (a, b) = data.split_at(50);
                        let (x, y) = bwos::join(|| a.iter().sum::<u64>(), || b.iter().sum::<u64>());
                        x + y
                    })
                },
            )
            .unwrap();
        assert_eq!(sum, 5050);
        assert_eq!(wrapped.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn the_building_thread_becomes_worker_zero() {
    watchdog("the_building_thread_becomes_worker_zero", || {
        // On a thread of its own: the thread stays a worker for life.
        std::thread::spawn(|| {
            let pool = ThreadPoolBuilder::new()
                .num_threads(2)
                .use_current_thread()
                .build()
                .unwrap();
            assert_eq!(bwos::current_thread_index(), Some(0));
            assert_eq!(pool.current_thread_index(), Some(0));
            // A second pool cannot adopt a worker.
            let error = ThreadPoolBuilder::new()
                .num_threads(2)
                .use_current_thread()
                .build()
                .unwrap_err();
            assert!(matches!(
                error,
                ThreadPoolBuildError::CurrentThreadAlreadyInPool
            ));
            assert!(error.to_string().contains("already a worker"), "{error}");
            // Detached spawns from worker 0 reach worker 1 while worker 0
            // blocks outside the pool.
            let (sender, receiver) = mpsc::channel();
            pool.spawn(move || sender.send(bwos::current_thread_index()).unwrap());
            assert_eq!(receiver.recv().unwrap(), Some(1));
            // Work from worker 0 runs on both workers.
            assert_eq!(pool.install(|| common::fib(20)), common::fib_serial(20));
            let indices = pool.broadcast(|context| context.index());
            assert_eq!(indices, [0, 1]);
        })
        .join()
        .unwrap();
    });
}

/// Waits until `pool`'s workers have fallen asleep at least `sleeps` times
/// in all (the watchdog fails the test if they never do).
fn wait_for_sleeps(pool: &bwos::ThreadPool, sleeps: u64) {
    while pool.stats().sleeps < sleeps {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Worker 0 adopted from the building thread runs no scheduler loop: it
/// must count neither as a searcher (producers would then never wake a
/// sleeper, trusting the searcher to come by) nor against "every worker
/// idles" (with the spinning policies the other workers would then never
/// sleep). Each policy's worker 1 falls asleep first, then work from
/// worker 0 and from outside must still reach it.
#[test]
fn a_sleeping_worker_wakes_for_work_from_an_adopted_worker_zero() {
    watchdog(
        "a_sleeping_worker_wakes_for_work_from_an_adopted_worker_zero",
        || {
            for policy in [
                bwos::IdlePolicy::Park,
                bwos::IdlePolicy::Spin,
                bwos::IdlePolicy::Yield,
                bwos::IdlePolicy::Balanced,
            ] {
                std::thread::spawn(move || {
                    let pool = ThreadPoolBuilder::new()
                        .num_threads(2)
                        .use_current_thread()
                        .idle_policy(policy)
                        .build()
                        .unwrap();
                    let (sender, receiver) = mpsc::channel();
                    for round in 1..=3 {
                        wait_for_sleeps(&pool, round);
                        let sender = sender.clone();
                        // Worker 0 blocks in `recv` outside the pool: only
                        // worker 1, asleep, can run the job.
                        pool.spawn(move || sender.send(bwos::current_thread_index()).unwrap());
                        assert_eq!(receiver.recv().unwrap(), Some(1), "{policy:?}");
                    }
                    // A join on worker 0 shares its other half with the
                    // sleeper, which must wake to take it.
                    wait_for_sleeps(&pool, 4);
                    let (a, b) = pool.join(
                        move || receiver.recv().unwrap(),
                        move || {
                            sender.send(bwos::current_thread_index()).unwrap();
                            bwos::current_thread_index()
                        },
                    );
                    assert_eq!((a, b), (Some(1), Some(1)), "{policy:?}");
                })
                .join()
                .unwrap();
            }
        },
    );
}

#[test]
fn a_detaching_pool_returns_from_drop_and_still_runs_its_spawns() {
    watchdog(
        "a_detaching_pool_returns_from_drop_and_still_runs_its_spawns",
        || {
            let (release, released) = mpsc::channel::<()>();
            let (sender, receiver) = mpsc::channel();
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .detach_threads_on_drop(true)
                .build()
                .unwrap();
            pool.spawn(move || {
                // Blocks until the test has returned from `drop`.
                released.recv().unwrap();
                sender.send(42).unwrap();
            });
            drop(pool);
            release.send(()).unwrap();
            assert_eq!(receiver.recv().unwrap(), 42);
        },
    );
}

/// A detached job's panic with no handler, or with a handler that panics
/// too, is reported and counted; the process and the pool carry on (rayon
/// aborts here).
#[test]
fn unhandled_spawn_panics_are_counted_and_the_pool_carries_on() {
    watchdog("unhandled_spawn_panics", || {
        for with_handler in [false, true] {
            let mut builder = ThreadPoolBuilder::new().num_threads(2);
            if with_handler {
                builder = builder.panic_handler(|_| panic!("the handler panics too"));
            }
            let pool = builder.build().unwrap();
            let (sender, receiver) = mpsc::channel();
            for i in 0..3 {
                let sender = sender.clone();
                pool.spawn(move || {
                    sender.send(i).unwrap();
                    panic!("spawned job {i}");
                });
            }
            drop(sender);
            let mut ran: Vec<i32> = receiver.iter().collect();
            ran.sort_unstable();
            assert_eq!(ran, [0, 1, 2]);
            // Once the count shows all three, the pool still serves work.
            while pool.stats().unhandled_panics < 3 {
                std::thread::yield_now();
            }
            assert_eq!(pool.stats().unhandled_panics, 3);
            assert_eq!(pool.install(|| bwos::join(|| 5, || 6)), (5, 6));
        }
    });
}
