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

/// A flag a future can wait for: set once, from any thread.
#[derive(Clone, Default)]
struct Flag(Arc<(AtomicBool, std::sync::Mutex<Vec<std::task::Waker>>)>);

impl Flag {
    fn set(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        for waker in self.0.1.lock().unwrap().drain(..) {
            waker.wake();
        }
    }

    fn is_set(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Sets this flag from a thread of its own, 5 ms after `trigger` is
    /// set (by then the task that set `trigger` waits for what it waits
    /// for next).
    fn set_soon_after(&self, trigger: &Flag) -> std::thread::JoinHandle<()> {
        let (flag, trigger) = (self.clone(), trigger.clone());
        std::thread::spawn(move || {
            assert!(wait_until(|| trigger.is_set()), "task 2 never ran");
            std::thread::sleep(Duration::from_millis(5));
            flag.set();
        })
    }

    async fn wait(&self) {
        std::future::poll_fn(|cx| {
            self.0.1.lock().unwrap().push(cx.waker().clone());
            if self.is_set() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
    }
}

/// On a one-worker pool, task 1 queues task 2 and then waits in
/// `block_on` for a flag set from outside; task 2 waits in `block_on` for
/// task 1 to finish. A `block_on` that ran the worker's other tasks while
/// it waited would poll task 2 on top of task 1's `block_on`, which then
/// could not return before task 2 did: a deadlock. The fuzzer
/// (`executor_fuzz.rs`) found this shape with a chain through the blocking
/// pool.
#[test]
fn a_block_on_in_a_task_never_waits_under_another_task() {
    watchdog("block_on_never_under_another_task", || {
        let pool = pool(1);
        for _ in 0..10 {
            let (outside, first_done, second_waits) =
                (Flag::default(), Flag::default(), Flag::default());
            // Task 2 is then (about to be) parked in its `block_on`.
            let setter = outside.set_soon_after(&second_waits);
            let second = pool.block_on(pool.spawn_task(async move {
                let second = bwos::task::spawn({
                    let (first_done, second_waits) = (first_done.clone(), second_waits.clone());
                    async move {
                        second_waits.set();
                        bwos::block_on(first_done.wait());
                        2
                    }
                });
                bwos::block_on(outside.wait());
                first_done.set();
                second.await.unwrap()
            }));
            assert_eq!(second.unwrap(), 2);
            setter.join().unwrap();
        }
        // The worker is back on its thread and runs tasks and timers.
        let late = pool.block_on(pool.spawn_task(async {
            bwos::time::sleep(Duration::from_millis(2)).await;
            3
        }));
        assert_eq!(late.unwrap(), 3);
    });
}

/// `block_in_place` inside a task that the replacement runs: the thread
/// that lent the worker first gets it back first when its closure returns,
/// although the replacement's own closure still blocks; that closure
/// waits for what the first thread does next. Giving the worker back only
/// in the order it was lent (the replacement's closure first) deadlocks.
#[test]
fn the_worker_comes_back_to_whichever_closure_returns_first() {
    watchdog("block_in_place_any_order", || {
        let pool = pool(1);
        for _ in 0..10 {
            let (outside, first_back, second_blocks) =
                (Flag::default(), Flag::default(), Flag::default());
            let setter = outside.set_soon_after(&second_blocks);
            let second = pool.block_on(pool.spawn_task(async move {
                let second = bwos::task::spawn({
                    let (first_back, second_blocks) = (first_back.clone(), second_blocks.clone());
                    async move {
                        second_blocks.set();
                        block_in_place(|| wait_until(|| first_back.is_set()))
                    }
                });
                block_in_place(|| assert!(wait_until(|| outside.is_set())));
                first_back.set();
                second.await.unwrap()
            }));
            assert!(second.unwrap(), "task 2's closure gave up waiting");
            setter.join().unwrap();
        }
        let late = pool.block_on(pool.spawn_task(async {
            bwos::time::sleep(Duration::from_millis(2)).await;
            3
        }));
        assert_eq!(late.unwrap(), 3);
    });
}

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Three tasks each `block_on` a task that `block_on`s a third, and the
/// pool is dropped meanwhile: the workers move to replacement threads
/// (one per `block_on`), a worker's own thread may get it back and reach
/// its shutdown while a replacement's `block_on` still waits for tasks
/// queued on that worker. Every task's future is dropped (run to its end
/// or cancelled): the worker's own thread runs the worker on until the
/// threads that lent it have it back. (Stopping to run it then, it waited
/// for them forever, and they for tasks nobody ran.)
#[test]
fn a_pool_dropped_under_nested_block_ons_drops_every_task() {
    watchdog("dropped_under_nested_block_ons", || {
        for round in 0..50u64 {
            let pool = bwos::ThreadPoolBuilder::new()
                .num_threads(3)
                .detach_threads_on_drop(true)
                .build()
                .unwrap();
            let dropped = Arc::new(AtomicUsize::new(0));
            for _ in 0..3 {
                let guard = DropCount(dropped.clone());
                drop(pool.spawn_task(async move {
                    let _guard = guard;
                    bwos::block_on(async {
                        let inner = bwos::task::spawn(async {
                            bwos::block_on(async {
                                let leaf = bwos::task::spawn(async {
                                    std::thread::sleep(Duration::from_micros(200));
                                    bwos::task::yield_now().await;
                                });
                                let _ = leaf.await;
                            })
                        });
                        let _ = inner.await;
                    });
                }));
            }
            std::thread::sleep(Duration::from_micros(100 * (round % 5)));
            drop(pool);
            assert!(
                wait_until(|| dropped.load(Ordering::SeqCst) == 3),
                "round {round}: {} of 3 tasks dropped",
                dropped.load(Ordering::SeqCst)
            );
        }
    });
}
