//! Async tasks on the pool: exactly-once execution, join handles, abort,
//! panics, shutdown, fairness, and the wake-up paths from outside.

#![cfg(not(bwos_loom))]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::task::{Context, Poll, Waker};

use bwos::task::{self, JoinError, JoinHandle};
use bwos_testkit::{panic_message, watchdog};
use common::pool;

mod common;

/// A one-shot signal a task can wait on and any thread can fire: the
/// future is pending until `fire`, which wakes the waiting task.
#[derive(Clone, Default)]
struct Signal(Arc<Mutex<(bool, Option<Waker>)>>);

impl Signal {
    fn fire(&self) {
        let waker = {
            let mut state = self.0.lock().unwrap();
            state.0 = true;
            state.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let signal = self.clone();
        std::future::poll_fn(move |cx| {
            let mut state = signal.0.lock().unwrap();
            if state.0 {
                Poll::Ready(())
            } else {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// Counts its drops.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The handle's outcome if it is ready (polled once with a no-op waker).
fn ready_outcome<T>(handle: &mut JoinHandle<T>) -> Option<Result<T, JoinError>> {
    match Pin::new(handle).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => Some(outcome),
        Poll::Pending => None,
    }
}

#[test]
fn the_public_types_have_the_promised_traits() {
    fn send_sync<T: Send + Sync>() {}
    fn error<T: std::error::Error + Send + Sync + 'static>() {}
    fn future<T: Future<Output = Result<u8, JoinError>> + Send + Unpin>() {}
    send_sync::<JoinHandle<u8>>();
    future::<JoinHandle<u8>>();
    error::<JoinError>();
}

#[test]
fn block_on_polls_on_the_calling_thread_for_the_pool() {
    watchdog("block_on_polls_on_the_calling_thread_for_the_pool", || {
        let pool = pool(2);
        let borrowed = String::from("abc");
        // Not `Send`: it never leaves this thread.
        let not_send = std::rc::Rc::new(7);
        let caller = std::thread::current().id();
        let (sum, polled_on, spawned_index) = pool.block_on(async {
            let spawned = task::spawn(async { bwos::current_thread_index() });
            let index = spawned.await.unwrap();
            (
                borrowed.len() + *not_send,
                std::thread::current().id(),
                index,
            )
        });
        assert_eq!(sum, 10);
        assert_eq!(
            polled_on, caller,
            "the future was polled on the calling thread"
        );
        assert!(
            spawned_index.is_some_and(|index| index < 2),
            "the future's tasks run on the pool's workers"
        );
        // The free function outside pools uses the global pool.
        assert_eq!(bwos::block_on(async { 5 }), 5);
    });
}

#[test]
fn block_on_on_a_worker_runs_the_pools_work_while_it_waits() {
    watchdog("block_on_on_a_worker", || {
        // One worker: the nested block_on's future waits for a task that
        // only this worker can run.
        let pool = pool(1);
        let outer = pool.spawn_task(async {
            let inner = bwos::block_on(async {
                let other = task::spawn(async { 21 });
                other.await.unwrap() * 2
            });
            (inner, bwos::current_thread_index())
        });
        assert_eq!(pool.block_on(outer).unwrap(), (42, Some(0)));
    });
}

#[test]
fn spawn_inside_a_worker_uses_that_pool() {
    watchdog("spawn_inside_a_worker_uses_that_pool", || {
        let pool = Arc::new(pool(2));
        let inner = Arc::clone(&pool);
        let on_pool = pool.block_on(async move {
            task::spawn(async move { inner.current_thread_index().is_some() })
                .await
                .unwrap()
        });
        assert!(on_pool, "a task spawned from a worker ran on its pool");
    });
}

#[test]
fn a_task_can_fork_join_on_its_pool() {
    watchdog("a_task_can_fork_join_on_its_pool", || {
        fn fib(n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
            a + b
        }
        let pool = pool(2);
        let handles: Vec<_> = (0..8).map(|_| pool.spawn_task(async { fib(18) })).collect();
        let results = pool.block_on(async {
            let mut results = Vec::new();
            for handle in handles {
                results.push(handle.await.unwrap());
            }
            results
        });
        assert_eq!(results, vec![2584; 8]);
    });
}

#[test]
fn block_on_resumes_the_futures_panic() {
    watchdog("block_on_resumes_the_futures_panic", || {
        let pool = pool(2);
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.block_on(async { panic!("boom in block_on") })
        }))
        .expect_err("the panic reaches the caller");
        assert_eq!(panic_message(&payload), "boom in block_on");
        assert_eq!(pool.block_on(async { 1 }), 1, "the pool goes on");
    });
}

#[test]
fn a_panicking_task_reports_through_its_handle_and_the_pool_goes_on() {
    watchdog(
        "a_panicking_task_reports_through_its_handle_and_the_pool_goes_on",
        || {
            let pool = pool(2);
            let handles: Vec<JoinHandle<u32>> = (0..50)
                .map(|i| {
                    pool.spawn_task(async move {
                        if i % 2 == 0 {
                            panic!("task {i} failed");
                        }
                        i
                    })
                })
                .collect();
            let outcomes = pool.block_on(async {
                let mut outcomes = Vec::new();
                for handle in handles {
                    outcomes.push(handle.await);
                }
                outcomes
            });
            for (i, outcome) in outcomes.into_iter().enumerate() {
                match outcome {
                    Ok(value) => assert_eq!(value as usize, i),
                    Err(error) => {
                        assert!(i % 2 == 0 && error.is_panic() && !error.is_cancelled());
                        assert_eq!(error.to_string(), "task panicked");
                        let payload = error.into_panic();
                        assert_eq!(panic_message(&payload), format!("task {i} failed"));
                    }
                }
            }
            assert_eq!(pool.block_on(pool.spawn_task(async { 7 })).unwrap(), 7);
        },
    );
}

/// A 1-thread pool whose worker is held in a job until the returned
/// sender sends (or is dropped).
fn held_pool() -> (bwos::ThreadPool, mpsc::Sender<()>) {
    let pool = pool(1);
    let (release, held) = mpsc::channel::<()>();
    let started = Arc::new(Barrier::new(2));
    let worker_started = Arc::clone(&started);
    pool.spawn(move || {
        worker_started.wait();
        let _ = held.recv();
    });
    started.wait();
    (pool, release)
}

#[test]
fn abort_before_the_first_poll_drops_the_future_unpolled() {
    watchdog(
        "abort_before_the_first_poll_drops_the_future_unpolled",
        || {
            let (pool, release) = held_pool();
            let polled = Arc::new(AtomicBool::new(false));
            let drops = Arc::new(AtomicUsize::new(0));
            let guard = DropCounter(Arc::clone(&drops));
            let mut handle = pool.spawn_task({
                let polled = Arc::clone(&polled);
                async move {
                    let _guard = guard;
                    polled.store(true, Ordering::SeqCst);
                }
            });
            handle.abort();
            drop(release);
            let outcome = bwos::block_on(&mut handle);
            assert!(outcome.expect_err("aborted").is_cancelled());
            assert!(!polled.load(Ordering::SeqCst), "never polled");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            assert!(handle.is_finished());
        },
    );
}

#[test]
fn abort_while_waiting_cancels_and_abort_after_completion_changes_nothing() {
    watchdog(
        "abort_while_waiting_cancels_and_abort_after_completion_changes_nothing",
        || {
            let pool = pool(2);
            let signal = Signal::default();
            let drops = Arc::new(AtomicUsize::new(0));
            let guard = DropCounter(Arc::clone(&drops));
            let (polled_tx, polled_rx) = mpsc::channel();
            let waiting = pool.spawn_task({
                let wait = signal.wait();
                async move {
                    let _guard = guard;
                    polled_tx.send(()).unwrap();
                    wait.await;
                    "finished"
                }
            });
            polled_rx.recv().unwrap();
            waiting.abort();
            let error = pool.block_on(waiting).expect_err("aborted while waiting");
            assert!(error.is_cancelled() && !error.is_panic());
            assert_eq!(error.to_string(), "task was cancelled");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            // A late wake-up of the cancelled task does nothing.
            signal.fire();

            let done = pool.spawn_task(async { 3 });
            while !done.is_finished() {
                std::thread::yield_now();
            }
            done.abort();
            assert_eq!(pool.block_on(done).unwrap(), 3, "the output wins");
        },
    );
}

#[test]
fn abort_during_a_poll_cancels_when_the_poll_returns_pending() {
    watchdog(
        "abort_during_a_poll_cancels_when_the_poll_returns_pending",
        || {
            let pool = pool(2);
            let (in_poll_tx, in_poll_rx) = mpsc::channel::<()>();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let go_rx = Mutex::new(go_rx);
            let handle = pool.spawn_task(std::future::poll_fn(move |_cx| {
                in_poll_tx.send(()).unwrap();
                go_rx.lock().unwrap().recv().unwrap();
                // Pending without registering a waker: only the abort can
                // end this task.
                Poll::<()>::Pending
            }));
            in_poll_rx.recv().unwrap();
            handle.abort();
            go_tx.send(()).unwrap();
            let error = pool.block_on(handle).expect_err("aborted during its poll");
            assert!(error.is_cancelled());
        },
    );
}

#[test]
fn a_dropped_handle_detaches_the_task() {
    watchdog("a_dropped_handle_detaches_the_task", || {
        let pool = pool(2);
        let (done_tx, done_rx) = mpsc::channel();
        let signal = Signal::default();
        drop(pool.spawn_task({
            let wait = signal.wait();
            async move {
                wait.await;
                done_tx.send(42).unwrap();
            }
        }));
        signal.fire();
        assert_eq!(done_rx.recv().unwrap(), 42);
    });
}

#[test]
fn dropping_the_pool_cancels_pending_tasks() {
    watchdog("dropping_the_pool_cancels_pending_tasks", || {
        let (pool, release) = held_pool();
        let drops = Arc::new(AtomicUsize::new(0));
        let signal = Signal::default();
        // Queued behind the held job, never run.
        let mut queued: Vec<_> = (0..100)
            .map(|_| {
                let guard = DropCounter(Arc::clone(&drops));
                pool.spawn_task(async move {
                    let _guard = guard;
                })
            })
            .collect();
        drop(release);
        // Waiting for a wake-up nobody sends.
        let (waiting_tx, waiting_rx) = mpsc::channel();
        let mut waiting: Vec<_> = (0..100)
            .map(|_| {
                let guard = DropCounter(Arc::clone(&drops));
                let wait = signal.wait();
                let waiting_tx = waiting_tx.clone();
                pool.spawn_task(async move {
                    let _guard = guard;
                    waiting_tx.send(()).unwrap();
                    wait.await;
                })
            })
            .collect();
        for _ in 0..100 {
            waiting_rx.recv().unwrap();
        }
        drop(pool);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            200,
            "every future was dropped"
        );
        let mut completed = 0;
        for handle in queued.iter_mut() {
            match ready_outcome(handle).expect("resolved by the shutdown") {
                Ok(()) => completed += 1,
                Err(error) => assert!(error.is_cancelled()),
            }
        }
        assert!(completed <= 100);
        for handle in waiting.iter_mut() {
            let outcome = ready_outcome(handle).expect("resolved by the shutdown");
            assert!(outcome.expect_err("cancelled").is_cancelled());
        }
        // A stale wake-up after the shutdown is harmless.
        signal.fire();
    });
}

#[test]
fn a_task_that_always_yields_does_not_starve_its_worker() {
    watchdog(
        "a_task_that_always_yields_does_not_starve_its_worker",
        || {
            let pool = pool(1);
            let stop = Arc::new(AtomicBool::new(false));
            let spinner = pool.spawn_task({
                let stop = Arc::clone(&stop);
                async move {
                    let mut yields = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        task::yield_now().await;
                        yields += 1;
                    }
                    yields
                }
            });
            // Spawned on the worker (behind the spinner in its queue) and
            // from outside (the injector): both must run.
            let inner_stop = Arc::clone(&stop);
            let from_worker = pool.spawn_task(async move {
                task::spawn(async move { inner_stop.store(true, Ordering::SeqCst) })
                    .await
                    .unwrap();
            });
            pool.block_on(from_worker).unwrap();
            assert!(pool.block_on(spinner).unwrap() > 0);

            stop.store(false, Ordering::SeqCst);
            let spinner = pool.spawn_task({
                let stop = Arc::clone(&stop);
                async move {
                    while !stop.load(Ordering::SeqCst) {
                        task::yield_now().await;
                    }
                }
            });
            let outside_stop = Arc::clone(&stop);
            let from_outside =
                pool.spawn_task(async move { outside_stop.store(true, Ordering::SeqCst) });
            pool.block_on(from_outside).unwrap();
            pool.block_on(spinner).unwrap();
        },
    );
}

#[test]
fn yield_now_lets_the_tasks_queued_before_run_first() {
    watchdog("yield_now_lets_the_tasks_queued_before_run_first", || {
        let pool = pool(1);
        let order = Arc::new(Mutex::new(Vec::new()));
        // A task of the pool's one worker (block_on's own future is polled
        // on this thread, not queued).
        let yielder = pool.spawn_task({
            let order = Arc::clone(&order);
            async move {
                let others: Vec<_> = (0..3)
                    .map(|i| {
                        let order = Arc::clone(&order);
                        task::spawn(async move { order.lock().unwrap().push(i) })
                    })
                    .collect();
                task::yield_now().await;
                order.lock().unwrap().push(99);
                for other in others {
                    other.await.unwrap();
                }
            }
        });
        pool.block_on(yielder).unwrap();
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 99]);
    });
}

/// Tasks spawned from inside tasks and from outside, each waiting for a
/// wake-up sent by one of several outside threads at a random moment:
/// every task runs to completion exactly once and every handle resolves.
fn stress(pool_threads: usize, tasks: usize) {
    let pool = Arc::new(pool(pool_threads));
    let runs: Arc<Vec<AtomicU64>> = Arc::new((0..tasks).map(|_| AtomicU64::new(0)).collect());
    let (signal_tx, signal_rx) = mpsc::channel::<Signal>();
    let signal_rx = Arc::new(Mutex::new(signal_rx));
    let wakers: Vec<_> = (0..3)
        .map(|_| {
            let signal_rx = Arc::clone(&signal_rx);
            std::thread::spawn(move || {
                loop {
                    let next = signal_rx.lock().unwrap().recv();
                    match next {
                        Ok(signal) => signal.fire(),
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    let make = {
        let runs = Arc::clone(&runs);
        move |i: usize, signal_tx: &mpsc::Sender<Signal>| {
            let runs = Arc::clone(&runs);
            // One task in four waits for a wake-up from an outside thread.
            let signal = i.is_multiple_of(4).then(|| {
                let signal = Signal::default();
                signal_tx.send(signal.clone()).unwrap();
                signal
            });
            async move {
                if let Some(signal) = signal {
                    signal.wait().await;
                }
                if i.is_multiple_of(7) {
                    task::yield_now().await;
                }
                runs[i].fetch_add(1, Ordering::Relaxed);
                i as u64
            }
        }
    };
    // Half spawned from outside, in one go.
    let half = tasks / 2;
    let mut outside: Vec<JoinHandle<u64>> = (0..half)
        .map(|i| pool.spawn_task(make(i, &signal_tx)))
        .collect();
    // The other half from inside tasks, 1000 per spawner.
    let spawners: Vec<JoinHandle<Vec<JoinHandle<u64>>>> = (half..tasks)
        .step_by(1000)
        .map(|start| {
            let make = make.clone();
            let signal_tx = signal_tx.clone();
            pool.spawn_task(async move {
                (start..(start + 1000).min(tasks))
                    .map(|i| task::spawn(make(i, &signal_tx)))
                    .collect()
            })
        })
        .collect();
    drop(signal_tx);
    let sum = pool.block_on(async move {
        let mut sum = 0u64;
        for handle in outside.drain(..) {
            sum += handle.await.unwrap();
        }
        for spawner in spawners {
            for handle in spawner.await.unwrap() {
                sum += handle.await.unwrap();
            }
        }
        sum
    });
    let n = tasks as u64;
    assert_eq!(sum, n * (n - 1) / 2, "every handle returned its own value");
    for (i, count) in runs.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "task {i} ran once");
    }
    for waker in wakers {
        waker.join().unwrap();
    }
}

#[test]
fn a_million_tasks_run_exactly_once() {
    // Debug builds are some 20x slower; the full million runs in release
    // (`cargo test --release`) and a tenth of it otherwise.
    let tasks = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    watchdog("a_million_tasks_run_exactly_once", || stress(2, tasks));
}

#[test]
fn tasks_run_exactly_once_with_more_workers_than_cores() {
    watchdog(
        "tasks_run_exactly_once_with_more_workers_than_cores",
        || stress(6, 20_000),
    );
}

#[test]
fn block_on_from_a_worker_keeps_the_worker_busy() {
    watchdog("block_on_from_a_worker_keeps_the_worker_busy", || {
        let pool = pool(1);
        // The only worker blocks on a task of its own pool: it must run
        // that task itself while it waits.
        let value =
            pool.install(|| bwos::block_on(async { task::spawn(async { 9 }).await.unwrap() }));
        assert_eq!(value, 9);
    });
}
