//! `AbortHandle` and the `JoinSet` additions (`spawn` returning an
//! `AbortHandle`, `try_join_next`, `join_all`, `spawn_blocking`), with
//! tokio's semantics.

#![cfg(not(bwos_loom))]

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Waker};
use std::time::Duration;

use bwos::ThreadPoolBuilder;
use bwos::task::{AbortHandle, JoinSet};
use bwos_testkit::{panic_message, watchdog};
use common::pool;

mod common;

/// Counts its drops.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A future that never finishes and counts its drop.
fn pending_guarded(drops: &Arc<AtomicUsize>) -> impl Future<Output = u32> + Send + 'static {
    let guard = DropCounter(Arc::clone(drops));
    async move {
        let _guard = guard;
        std::future::pending::<u32>().await
    }
}

// Mutation caught: `AbortHandle::abort` as a no-op (the task is never
// cancelled: the watchdog fails the test).
/// An `AbortHandle`, cloned and sent to another thread, cancels its task:
/// the future is dropped, the `JoinHandle` reports cancelled, every clone
/// sees it finished. It outlives the `JoinHandle` too.
#[test]
fn an_abort_handle_cancels_its_task_from_anywhere() {
    watchdog("an_abort_handle_cancels_its_task_from_anywhere", || {
        let pool = pool(2);
        let drops = Arc::new(AtomicUsize::new(0));
        let task = pool.spawn_task(pending_guarded(&drops));
        let abort: AbortHandle = task.abort_handle();
        let clone = abort.clone();
        assert!(!abort.is_finished());
        std::thread::spawn(move || clone.abort()).join().unwrap();
        let error = pool.block_on(task).expect_err("aborted");
        assert!(error.is_cancelled());
        assert!(abort.is_finished());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(format!("{abort:?}").contains("finished: true"));

        // The JoinHandle dropped first: the abort handle still cancels.
        let detached = pool.spawn_task(pending_guarded(&drops));
        let abort = detached.abort_handle();
        drop(detached);
        abort.abort();
        // The worker drops the future before it marks the task finished, so
        // wait for the mark and then expect the drop (not the other way
        // round: between the two, the task is dropped but not yet finished).
        while !abort.is_finished() {
            std::thread::yield_now();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    });
}

/// Aborting a task that finished changes nothing: its output stays.
#[test]
fn aborting_a_finished_task_keeps_its_output() {
    watchdog("aborting_a_finished_task_keeps_its_output", || {
        let pool = pool(1);
        let task = pool.spawn_task(async { 42 });
        let abort = task.abort_handle();
        while !abort.is_finished() {
            std::thread::yield_now();
        }
        abort.abort();
        assert_eq!(pool.block_on(task).unwrap(), 42);
    });
}

// Mutation caught: `JoinSet::spawn` returning the abort handle of another
// slot's task (the wrong task is cancelled, the pending one never is: the
// watchdog fails the test).
/// `JoinSet::spawn`'s `AbortHandle` cancels that task alone; it stays in
/// the set until `join_next` returns it.
#[test]
fn a_join_set_abort_handle_cancels_one_task() {
    watchdog("a_join_set_abort_handle_cancels_one_task", || {
        let pool = pool(2);
        pool.block_on(async {
            let mut set = JoinSet::new();
            let (sender, receiver) = mpsc::channel::<()>();
            let receiver = Arc::new(std::sync::Mutex::new(receiver));
            let mut aborts = Vec::new();
            for i in 0..4u32 {
                let receiver = Arc::clone(&receiver);
                aborts.push(set.spawn(async move {
                    if i == 2 {
                        std::future::pending::<()>().await;
                    }
                    // The others wait for the test's go, off the workers.
                    bwos::task::spawn_blocking(move || receiver.lock().unwrap().recv())
                        .await
                        .unwrap()
                        .unwrap();
                    i
                }));
            }
            aborts[2].abort();
            for _ in 0..3 {
                sender.send(()).unwrap();
            }
            let (mut outputs, mut cancelled) = (Vec::new(), 0);
            while let Some(outcome) = set.join_next().await {
                match outcome {
                    Ok(i) => outputs.push(i),
                    Err(error) => {
                        assert!(error.is_cancelled());
                        cancelled += 1;
                    }
                }
            }
            outputs.sort_unstable();
            assert_eq!(outputs, [0, 1, 3]);
            assert_eq!(cancelled, 1);
            assert!(aborts.iter().all(AbortHandle::is_finished));
        });
    });
}

/// Spends the calling poll's cooperative budget (128 ready operations)
/// without yielding: zero-length sleeps are ready and spend a unit each.
async fn spend_the_budget() {
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    for _ in 0..1000 {
        let mut sleep = pin!(bwos::time::sleep(Duration::ZERO));
        if sleep.as_mut().poll(&mut cx).is_pending() {
            // Spent: the sleep said so instead of being ready.
            return;
        }
    }
    panic!("the budget never ran out");
}

// Mutation caught: `try_join_next` without `with_unconstrained` (with the
// budget spent, a finished task's handle says `Pending` and wakes its slot
// again, and `try_join_next` spins on it: the watchdog fails the test).
/// `try_join_next` never waits: `None` for an empty set and while nothing
/// finished, each finished task's outcome once otherwise, even with the
/// poll's budget spent.
#[test]
fn try_join_next_returns_finished_tasks_without_waiting() {
    watchdog(
        "try_join_next_returns_finished_tasks_without_waiting",
        || {
            let pool = pool(2);
            pool.block_on(async {
                let mut set: JoinSet<u32> = JoinSet::new();
                assert!(set.try_join_next().is_none(), "empty");
                let (release, gate) = mpsc::channel::<()>();
                let blocked = set.spawn_blocking(move || gate.recv().map_or(0, |()| 1));
                assert!(set.try_join_next().is_none(), "nothing finished");
                let aborts: Vec<_> = (10..15).map(|i| set.spawn(async move { i })).collect();
                while !aborts.iter().all(AbortHandle::is_finished) {
                    bwos::task::yield_now().await;
                }
                spend_the_budget().await;
                let mut outputs = Vec::new();
                // A finished task's wake-up may still be on its way to the
                // set: a `None` then is not the end; no output comes twice.
                let mut attempts = 0;
                while outputs.len() < 5 {
                    match set.try_join_next() {
                        Some(outcome) => outputs.push(outcome.unwrap()),
                        None => {
                            attempts += 1;
                            assert!(attempts < 1_000_000, "finished tasks never came back");
                            std::thread::yield_now();
                        }
                    }
                }
                outputs.sort_unstable();
                assert_eq!(outputs, [10, 11, 12, 13, 14]);
                assert_eq!(set.len(), 1);
                assert!(set.try_join_next().is_none(), "the blocked closure runs on");
                release.send(()).unwrap();
                while !blocked.is_finished() {
                    bwos::task::yield_now().await;
                }
                let last = loop {
                    if let Some(outcome) = set.try_join_next() {
                        break outcome;
                    }
                    bwos::task::yield_now().await;
                };
                assert_eq!(last.unwrap(), 1);
                assert!(set.is_empty());
                assert!(set.try_join_next().is_none());
            });
        },
    );
}

/// `join_all` returns every output, in the order the tasks finished.
#[test]
fn join_all_returns_every_output() {
    watchdog("join_all_returns_every_output", || {
        let pool = pool(2);
        let outputs = pool.block_on(async {
            let mut set = JoinSet::new();
            for i in 0..100u64 {
                set.spawn(async move {
                    if i % 7 == 0 {
                        bwos::task::yield_now().await;
                    }
                    i
                });
            }
            set.join_all().await
        });
        let mut sorted = outputs.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        let empty: Vec<u8> = pool.block_on(JoinSet::new().join_all());
        assert!(empty.is_empty());
    });
}

// Mutation caught: `join_all` skipping a panicked task instead of
// resuming its panic (it then waits for the pending tasks forever: the
// watchdog fails the test).
/// A task's panic resumes in `join_all`; a cancelled task makes it panic
/// saying so; either way the tasks left in the set are aborted.
#[test]
fn join_all_propagates_a_panic_and_aborts_the_rest() {
    watchdog("join_all_propagates_a_panic_and_aborts_the_rest", || {
        let pool = pool(2);
        let drops = Arc::new(AtomicUsize::new(0));
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.block_on(async {
                let mut set = JoinSet::new();
                for _ in 0..3 {
                    set.spawn(pending_guarded(&drops));
                }
                set.spawn(async { panic!("a task failed") });
                set.join_all().await
            })
        }));
        assert_eq!(panic_message(&caught.unwrap_err()), "a task failed");
        // The set was dropped as the panic unwound: its pending tasks
        // were aborted, their futures dropped by the workers.
        while drops.load(Ordering::SeqCst) != 3 {
            std::thread::yield_now();
        }

        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.block_on(async {
                let mut set = JoinSet::new();
                set.spawn(std::future::pending::<u32>()).abort();
                set.join_all().await
            })
        }));
        let payload = caught.unwrap_err();
        let message = panic_message(&payload);
        assert!(message.contains("cancelled"), "{message}");
    });
}

// Mutation caught: `JoinSet::spawn_blocking` running the closure as an
// async task (`spawn(async move { f() })`: the closures then run on the
// pool's one worker, and the barrier of two never opens).
/// `JoinSet::spawn_blocking` runs closures on blocking threads; aborting
/// one that has not started cancels it, and dropping the set cancels the
/// queued ones.
#[test]
fn a_join_set_runs_blocking_closures_and_cancels_queued_ones() {
    watchdog(
        "a_join_set_runs_blocking_closures_and_cancels_queued_ones",
        || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .max_blocking_threads(2)
                .build()
                .unwrap();
            pool.block_on(async {
                let mut set = JoinSet::new();
                // Two closures that wait for each other: they need two
                // threads at once, neither of them the one worker.
                let barrier = Arc::new(std::sync::Barrier::new(2));
                for i in 0..2u32 {
                    let barrier = Arc::clone(&barrier);
                    set.spawn_blocking(move || {
                        assert_eq!(bwos::current_thread_index(), None);
                        barrier.wait();
                        i
                    });
                }
                let mut outputs = set.join_all().await;
                outputs.sort_unstable();
                assert_eq!(outputs, [0, 1]);

                // Both blocking threads busy: the third closure queues.
                let mut set = JoinSet::new();
                let (release, gate) = mpsc::channel::<()>();
                let gate = Arc::new(std::sync::Mutex::new(gate));
                let (started, has_started) = mpsc::channel::<()>();
                for _ in 0..2 {
                    let (gate, started) = (Arc::clone(&gate), started.clone());
                    set.spawn_blocking(move || {
                        started.send(()).unwrap();
                        gate.lock().unwrap().recv().unwrap();
                        1
                    });
                }
                has_started.recv().unwrap();
                has_started.recv().unwrap();
                let queued = set.spawn_blocking(|| 2);
                queued.abort();
                release.send(()).unwrap();
                release.send(()).unwrap();
                let (mut sum, mut cancelled) = (0, 0);
                while let Some(outcome) = set.join_next().await {
                    match outcome {
                        Ok(value) => sum += value,
                        Err(error) => {
                            assert!(error.is_cancelled());
                            cancelled += 1;
                        }
                    }
                }
                assert_eq!((sum, cancelled), (2, 1));
            });
        },
    );
}

/// `JoinSet::spawn` still works as a statement (its `AbortHandle` may be
/// ignored), so code written for the old signature compiles.
#[test]
fn join_set_spawn_can_ignore_its_abort_handle() {
    watchdog("join_set_spawn_can_ignore_its_abort_handle", || {
        let pool = pool(1);
        let total: u32 = pool.block_on(async {
            let mut set = JoinSet::new();
            for i in 0..4 {
                set.spawn(async move { i });
            }
            let mut total = 0;
            while let Some(outcome) = set.join_next().await {
                total += outcome.unwrap();
            }
            total
        });
        assert_eq!(total, 6);
    });
}
