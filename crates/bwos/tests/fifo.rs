//! FIFO spawns, in-place scopes, `yield_now`/`yield_local` and
//! `breadth_first`: order where it is promised, exactly-once delivery
//! everywhere, panics to the caller.
#![cfg(not(bwos_loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use bwos::{ThreadPoolBuilder, Yield};
use bwos_testkit::{panic_message, watchdog};
use common::pool;
use proptest::prelude::*;

mod common;

#[test]
fn jobs_spawned_from_outside_start_oldest_first() {
    watchdog("jobs_spawned_from_outside_start_oldest_first", || {
        // One worker, held busy while the main thread injects: it then
        // takes the injected jobs in batches, which must keep their order.
        let pool = pool(1);
        let (release, held) = mpsc::channel::<()>();
        let (started, is_busy) = mpsc::channel::<()>();
        pool.spawn(move || {
            started.send(()).unwrap();
            held.recv().unwrap();
        });
        is_busy.recv().unwrap();
        let (sender, order) = mpsc::channel();
        for i in 0..200 {
            let sender = sender.clone();
            pool.spawn(move || sender.send(i).unwrap());
        }
        drop(sender);
        release.send(()).unwrap();
        let order: Vec<i32> = order.iter().collect();
        assert_eq!(order, (0..200).collect::<Vec<_>>());
    });
}

#[test]
fn fifo_spawns_of_one_worker_start_oldest_first() {
    watchdog("fifo_spawns_of_one_worker_start_oldest_first", || {
        // One worker: nobody steals, so the order is the FIFO's.
        let pool = pool(1);
        let order = Mutex::new(Vec::new());
        pool.scope_fifo(|s| {
            for i in 0..100 {
                let order = &order;
                s.spawn_fifo(move |_| order.lock().unwrap().push(i));
            }
        });
        assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());

        // The LIFO scope runs the newest first, for contrast.
        let order = Mutex::new(Vec::new());
        pool.scope(|s| {
            for i in 0..4 {
                let order = &order;
                s.spawn(move |_| order.lock().unwrap().push(i));
            }
        });
        assert_eq!(*order.lock().unwrap(), [3, 2, 1, 0]);

        // Detached FIFO spawns from a worker.
        let (sender, receiver) = mpsc::channel();
        pool.install(|| {
            for i in 0..50 {
                let sender = sender.clone();
                bwos::spawn_fifo(move || sender.send(i).unwrap());
            }
        });
        drop(sender);
        assert_eq!(
            receiver.iter().collect::<Vec<_>>(),
            (0..50).collect::<Vec<_>>()
        );
    });
}

#[test]
fn breadth_first_pools_start_spawns_oldest_first() {
    watchdog("breadth_first_pools_start_spawns_oldest_first", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .breadth_first()
            .build()
            .unwrap();
        let order = Mutex::new(Vec::new());
        pool.scope(|s| {
            for i in 0..10 {
                let order = &order;
                s.spawn(move |_| order.lock().unwrap().push(i));
            }
        });
        assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn in_place_scopes_run_their_body_on_the_caller() {
    watchdog("in_place_scopes_run_their_body_on_the_caller", || {
        let pool = pool(2);
        let caller = std::thread::current().id();
        let count = AtomicUsize::new(0);
        let returned = pool.in_place_scope(|s| {
            assert_eq!(std::thread::current().id(), caller);
            for _ in 0..1000 {
                s.spawn(|s| {
                    count.fetch_add(1, Ordering::Relaxed);
                    s.spawn(|_| {
                        count.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
            7
        });
        assert_eq!(returned, 7);
        assert_eq!(count.load(Ordering::Relaxed), 2000);

        // A body that is not `Send` is fine: it stays on this thread.
        let not_send = std::rc::Rc::new(5);
        let doubled = pool.in_place_scope_fifo(|s| {
            s.spawn_fifo(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            });
            *not_send * 2
        });
        assert_eq!(doubled, 10);
        assert_eq!(count.load(Ordering::Relaxed), 2001);

        // The free function outside pools uses the global pool.
        let total = AtomicUsize::new(0);
        bwos::in_place_scope(|s| {
            for i in 0..10 {
                let total = &total;
                s.spawn(move |_| {
                    total.fetch_add(i, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 45);
    });
}

#[test]
fn an_in_place_scope_waits_for_its_spawns_then_resumes_the_first_panic() {
    watchdog(
        "an_in_place_scope_waits_for_its_spawns_then_resumes_the_first_panic",
        || {
            let pool = pool(2);
            let finished = AtomicUsize::new(0);
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.in_place_scope(|s| {
                    for _ in 0..100 {
                        s.spawn(|_| {
                            finished.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                    panic!("body fails");
                })
            }))
            .unwrap_err();
            assert_eq!(panic_message(&payload), "body fails");
            assert_eq!(finished.load(Ordering::Relaxed), 100);
        },
    );
}

#[test]
fn yield_runs_queued_work_and_reports_idle_outside_or_without_work() {
    watchdog(
        "yield_runs_queued_work_and_reports_idle_outside_or_without_work",
        || {
            assert_eq!(bwos::yield_now(), None);
            assert_eq!(bwos::yield_local(), None);
            assert_eq!(bwos::current_thread_has_pending_tasks(), None);
            let pool = pool(1);
            assert_eq!(pool.yield_now(), None, "not a worker of this pool");
            let ran = AtomicUsize::new(0);
            pool.scope(|s| {
                s.spawn(|_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
                assert_eq!(bwos::current_thread_has_pending_tasks(), Some(true));
                assert_eq!(bwos::yield_local(), Some(Yield::Executed));
                assert_eq!(ran.load(Ordering::Relaxed), 1);
                assert_eq!(bwos::current_thread_has_pending_tasks(), Some(false));
                assert_eq!(bwos::yield_local(), Some(Yield::Idle));
                s.spawn(|_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
                assert_eq!(bwos::yield_now(), Some(Yield::Executed));
                assert_eq!(bwos::yield_now(), Some(Yield::Idle));
            });
            assert_eq!(ran.load(Ordering::Relaxed), 2);
        },
    );
}

/// How a spawn is made in a randomized scope tree.
#[derive(Clone, Copy, Debug)]
enum Spawn {
    Lifo,
    Fifo,
    Broadcast,
    InPlace,
}

fn arb_spawns() -> impl Strategy<Value = Vec<(Spawn, u8)>> {
    prop::collection::vec(
        (
            prop_oneof![
                Just(Spawn::Lifo),
                Just(Spawn::Fifo),
                Just(Spawn::Broadcast),
                Just(Spawn::InPlace)
            ],
            0u8..3,
        ),
        1..12,
    )
}

/// Runs `plan` in a FIFO scope (whose spawns use both LIFO and FIFO
/// queues), nesting `depth` levels; records every leaf value.
fn run_plan(plan: &[(Spawn, u8)], prefix: u64, seen: &Mutex<Vec<u64>>) {
    bwos::scope_fifo(|s| {
        for (i, &(kind, depth)) in plan.iter().enumerate() {
            let value = prefix * 16 + i as u64;
            let rest = &plan[i + 1..];
            let leaf = move |value: u64| {
                if depth == 0 || rest.is_empty() {
                    seen.lock().unwrap().push(value);
                } else {
                    run_plan(&rest[..rest.len().min(3)], value, seen);
                }
            };
            match kind {
                Spawn::Lifo => bwos::scope(|inner| inner.spawn(move |_| leaf(value))),
                Spawn::Fifo => s.spawn_fifo(move |_| leaf(value)),
                Spawn::Broadcast => s.spawn_broadcast(move |_, context| {
                    if context.index() == 0 {
                        leaf(value);
                    }
                }),
                Spawn::InPlace => bwos::in_place_scope(|inner| inner.spawn(move |_| leaf(value))),
            }
        }
    });
}

/// The same plan run serially: the multiset of values it must produce.
fn expected(plan: &[(Spawn, u8)], prefix: u64, out: &mut Vec<u64>) {
    for (i, &(_, depth)) in plan.iter().enumerate() {
        let value = prefix * 16 + i as u64;
        let rest = &plan[i + 1..];
        if depth == 0 || rest.is_empty() {
            out.push(value);
        } else {
            expected(&rest[..rest.len().min(3)], value, out);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random nestings of LIFO, FIFO, broadcast and in-place spawns: every
    /// leaf runs exactly once and every scope waits for its own.
    #[test]
    fn mixed_spawn_trees_deliver_every_leaf_exactly_once(
        plan in arb_spawns(),
        threads in 1usize..4,
    ) {
        let seen = watchdog("mixed_spawn_trees_deliver_every_leaf_exactly_once", || {
            let pool = pool(threads);
            let seen = Mutex::new(Vec::new());
            pool.install(|| run_plan(&plan, 1, &seen));
            seen.into_inner().unwrap()
        });
        let mut want = Vec::new();
        expected(&plan, 1, &mut want);
        let mut got = seen.clone();
        got.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(&got, &want);
        let unique: HashSet<u64> = seen.iter().copied().collect();
        prop_assert_eq!(unique.len(), seen.len(), "a leaf ran twice");
    }
}
