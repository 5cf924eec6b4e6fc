//! `task::block_in_place`: the worker (its queued tasks and jobs, its
//! timers) moves to a replacement thread while the closure blocks, inside
//! a task, a `join` and a `scope`; outside a worker it just runs the
//! closure; a panic comes back out; the worker is back afterwards.

#![cfg(not(bwos_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bwos::task::block_in_place;
use bwos_testkit::watchdog;

mod common;
use common::{pool, wait_until};

/// On a one-worker pool, a task queues ten tasks and then blocks in
/// `block_in_place` until they ran: they run meanwhile, on the
/// replacement. (Blocking without it, they would wait for the block.)
#[test]
fn queued_tasks_run_while_a_task_blocks_in_place() {
    watchdog("block_in_place_task", || {
        let pool = pool(1);
        for _ in 0..20 {
            let ran = Arc::new(AtomicUsize::new(0));
            let all_ran = pool.block_on(pool.spawn_task({
                let ran = ran.clone();
                async move {
                    for _ in 0..10 {
                        let ran = ran.clone();
                        bwos::task::spawn(async move {
                            ran.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    block_in_place(|| wait_until(|| ran.load(Ordering::SeqCst) == 10))
                }
            }));
            assert!(
                all_ran.unwrap(),
                "the queued tasks waited for the blocking closure"
            );
        }
        // The worker is back and runs tasks as before.
        assert_eq!(pool.block_on(pool.spawn_task(async { 7 })).unwrap(), 7);
    });
}

/// Inside `join`'s first closure on a one-worker pool: the second closure,
/// queued on the worker, runs on the replacement while the first blocks.
#[test]
fn a_join_runs_its_other_half_while_one_half_blocks_in_place() {
    watchdog("block_in_place_join", || {
        let pool = pool(1);
        for _ in 0..20 {
            let b_ran = AtomicBool::new(false);
            let (a_saw_b, ()) = pool.install(|| {
                bwos::join(
                    || block_in_place(|| wait_until(|| b_ran.load(Ordering::SeqCst))),
                    || b_ran.store(true, Ordering::SeqCst),
                )
            });
            assert!(a_saw_b, "b waited for a's blocking closure");
        }
    });
}

/// Inside a `scope` on a one-worker pool: a spawned job runs while the
/// scope's body blocks in place.
#[test]
fn a_scope_runs_its_spawns_while_its_body_blocks_in_place() {
    watchdog("block_in_place_scope", || {
        let pool = pool(1);
        let spawned_ran = AtomicBool::new(false);
        let body_saw_it = pool.install(|| {
            bwos::scope(|scope| {
                scope.spawn(|_| spawned_ran.store(true, Ordering::SeqCst));
                block_in_place(|| wait_until(|| spawned_ran.load(Ordering::SeqCst)))
            })
        });
        assert!(
            body_saw_it,
            "the spawned job waited for the blocking closure"
        );
    });
}

/// A timer keeps firing on a one-worker pool while a task blocks in place:
/// the replacement watches the timers.
#[test]
fn timers_fire_while_a_task_blocks_in_place() {
    watchdog("block_in_place_timers", || {
        let pool = pool(1);
        let ticks = Arc::new(AtomicUsize::new(0));
        let ticker = pool.spawn_task({
            let ticks = ticks.clone();
            async move {
                let mut interval = bwos::time::interval(Duration::from_millis(2));
                loop {
                    interval.tick().await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let ticked = pool.block_on(pool.spawn_task({
            let ticks = ticks.clone();
            async move {
                let before = ticks.load(Ordering::SeqCst);
                block_in_place(|| wait_until(|| ticks.load(Ordering::SeqCst) >= before + 5))
            }
        }));
        ticker.abort();
        assert!(
            ticked.unwrap(),
            "the interval stalled during the blocking closure"
        );
    });
}

/// Outside every worker it runs the closure in place; inside the closure
/// the thread is no worker, so a nested call runs in place too, and the
/// pool's free functions still reach the pool.
#[test]
fn outside_a_worker_and_nested_it_runs_the_closure() {
    watchdog("block_in_place_outside", || {
        assert_eq!(block_in_place(|| 6 * 7), 42);
        let pool = pool(2);
        let (nested, joined, index) = pool.install(|| {
            block_in_place(|| {
                (
                    block_in_place(|| 1),
                    bwos::join(|| 2, || 3),
                    bwos::current_thread_index(),
                )
            })
        });
        assert_eq!((nested, joined), (1, (2, 3)));
        assert_eq!(index, None, "the blocking thread is no worker meanwhile");
        // The worker is back afterwards.
        assert!(pool.install(bwos::current_thread_index).is_some());
    });
}

/// A panic in the closure comes back out of `block_in_place` once the
/// worker is back; the pool goes on.
#[test]
fn a_panic_in_the_closure_comes_back_out() {
    watchdog("block_in_place_panic", || {
        let pool = pool(1);
        let caught = pool.install(|| {
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                block_in_place(|| panic!("blocked and failed"))
            }));
            (result.is_err(), bwos::current_thread_index())
        });
        assert_eq!(caught, (true, Some(0)));
        assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    });
}
