//! Broadcasts: every worker runs the closure exactly once, from inside and
//! outside the pool, while workers sleep or are busy; panics reach the
//! caller (blocking) or the panic handler (detached); scope broadcasts are
//! awaited by their scope.
#![cfg(not(bwos_loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use bwos::ThreadPoolBuilder;
use bwos_testkit::{panic_message, watchdog};
use common::pool;

mod common;

#[test]
fn broadcast_runs_once_on_every_worker_in_index_order() {
    watchdog("broadcast_runs_once_on_every_worker_in_index_order", || {
        for threads in [1, 2, 5] {
            let pool = pool(threads);
            for round in 0..50 {
                // From outside the pool and from one of its workers.
                let outside = pool.broadcast(|context| {
                    assert_eq!(context.num_threads(), threads);
                    assert_eq!(bwos::current_thread_index(), Some(context.index()));
                    context.index()
                });
                assert_eq!(outside, (0..threads).collect::<Vec<_>>(), "round {round}");
                let inside = pool.install(|| bwos::broadcast(|context| context.index() * 10));
                assert_eq!(
                    inside,
                    (0..threads).map(|i| i * 10).collect::<Vec<_>>(),
                    "round {round}"
                );
            }
        }
    });
}

#[test]
fn broadcast_reaches_workers_busy_in_joins() {
    watchdog("broadcast_reaches_workers_busy_in_joins", || {
        let pool = pool(3);
        let seen = pool.install(|| {
            // The caller's worker waits in `join` while `b` broadcasts: it
            // runs its broadcast job in that wait.
            let ((), seen) = bwos::join(
                || {
                    let _ = common::fib(18);
                },
                || bwos::broadcast(|context| context.index()),
            );
            seen
        });
        assert_eq!(seen, [0, 1, 2]);
    });
}

#[test]
fn a_broadcast_panic_resumes_in_the_caller_after_all_calls_ran() {
    watchdog(
        "a_broadcast_panic_resumes_in_the_caller_after_all_calls_ran",
        || {
            let pool = pool(3);
            let ran = AtomicUsize::new(0);
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.broadcast(|context| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    if context.index() == 1 {
                        panic!("worker one fails");
                    }
                })
            }))
            .unwrap_err();
            assert_eq!(panic_message(&payload), "worker one fails");
            assert_eq!(ran.load(Ordering::Relaxed), 3);
            // The pool still works.
            assert_eq!(pool.broadcast(|context| context.index()).len(), 3);
        },
    );
}

#[test]
fn spawn_broadcast_runs_everywhere_and_keeps_the_pool_alive() {
    watchdog(
        "spawn_broadcast_runs_everywhere_and_keeps_the_pool_alive",
        || {
            let (sender, receiver) = mpsc::channel();
            let pool = pool(4);
            let sender = Mutex::new(sender);
            pool.spawn_broadcast(move |context| {
                sender.lock().unwrap().send(context.index()).unwrap();
            });
            // Dropping the handle right away: the spawned calls still run.
            drop(pool);
            let mut seen: Vec<usize> = receiver.iter().collect();
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3]);
        },
    );
}

#[test]
fn spawn_broadcast_panics_go_to_the_panic_handler() {
    watchdog("spawn_broadcast_panics_go_to_the_panic_handler", || {
        let (sender, receiver) = mpsc::channel();
        let sender = Mutex::new(sender);
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .panic_handler(move |payload| {
                let message = panic_message(&payload).to_owned();
                sender.lock().unwrap().send(message).unwrap();
            })
            .build()
            .unwrap();
        pool.spawn_broadcast(|context| panic!("broadcast {}", context.index()));
        drop(pool);
        let mut messages: Vec<String> = receiver.iter().collect();
        messages.sort();
        assert_eq!(messages, ["broadcast 0", "broadcast 1"]);
    });
}

#[test]
fn scope_broadcasts_are_awaited_by_their_scope() {
    watchdog("scope_broadcasts_are_awaited_by_their_scope", || {
        let pool = pool(3);
        let per_worker: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        pool.scope(|s| {
            for _ in 0..20 {
                s.spawn_broadcast(|s, context| {
                    per_worker[context.index()].fetch_add(1, Ordering::Relaxed);
                    // Broadcast bodies may spawn into the scope.
                    s.spawn(|_| {
                        per_worker[0].fetch_add(0, Ordering::Relaxed);
                    });
                });
            }
        });
        for (index, count) in per_worker.iter().enumerate() {
            assert_eq!(count.load(Ordering::Relaxed), 20, "worker {index}");
        }
        let fifo_runs = Arc::new(AtomicUsize::new(0));
        pool.scope_fifo(|s| {
            let runs = Arc::clone(&fifo_runs);
            s.spawn_broadcast(move |_, _| {
                runs.fetch_add(1, Ordering::Relaxed);
            });
        });
        assert_eq!(fifo_runs.load(Ordering::Relaxed), 3);
    });
}
