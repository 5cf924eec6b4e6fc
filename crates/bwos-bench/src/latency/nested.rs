//! **nested block_on**: a task that calls `block_on` (user code that
//! should have `.await`ed), the way each runtime allows it inside a task:
//! `bwos::block_on`, and tokio's `block_in_place` around
//! `Handle::block_on` (tokio's `Handle::block_on` panics inside a task).
//! Two measurements:
//! - **call cost**: a task calls it [`CALLS`] times on a spawned task that
//!   returns at once, on 2 workers: the median of [`BATCHES`] batches'
//!   time per call. Each call moves the worker to another thread and back.
//! - **no deadlock**: on one worker, task 1 queues task 2, then waits in a
//!   `block_on` for a flag set from outside once task 2 runs; task 2 waits
//!   in a `block_on` for task 1 to finish. A runtime that runs queued tasks
//!   on top of a waiting `block_on` deadlocks here (bwos did: the executor
//!   fuzzer found it). 1 if both finished within [`DEADLINE`], else 0 (the
//!   hung runtime is leaked).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use super::runtimes::LatencyRuntime;
use super::{Metrics, SETTLE, percentile};

/// Calls per batch.
pub const CALLS: u32 = 100;
/// Batches per measurement.
pub const BATCHES: u32 = 10;
/// How long the deadlock scenario may take.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// One measurement on fresh runtimes `R`.
pub fn run<R: LatencyRuntime>() -> Metrics {
    vec![
        ("call_us", call_cost::<R>()),
        ("finished", if finishes::<R>() { 1.0 } else { 0.0 }),
    ]
}

fn call_cost<R: LatencyRuntime>() -> f64 {
    let rt = R::start(2);
    std::thread::sleep(SETTLE);
    let mut per_call = rt.block_on(async {
        let mut per_call = Vec::new();
        for _ in 0..BATCHES {
            let start = Instant::now();
            for i in 0..CALLS {
                let value = R::block_on_here(R::spawn_here(async move { i }));
                assert_eq!(value, i, "a nested block_on returned the wrong value");
            }
            per_call.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS));
        }
        per_call
    });
    drop(rt);
    percentile(&mut per_call, 0.5)
}

fn finishes<R: LatencyRuntime>() -> bool {
    let (done, finished) = mpsc::channel();
    // On a thread of its own, so that a deadlocked runtime can be left
    // behind.
    std::thread::spawn(move || {
        let rt = R::start(1);
        let (outside, first_done, second_waits) =
            (Flag::default(), Flag::default(), Flag::default());
        let setter = std::thread::spawn({
            let (outside, second_waits) = (outside.clone(), second_waits.clone());
            move || {
                let end = Instant::now() + DEADLINE;
                while !second_waits.is_set() && Instant::now() < end {
                    std::thread::sleep(Duration::from_millis(1));
                }
                // Task 2 is then (about to be) parked in its `block_on`.
                std::thread::sleep(Duration::from_millis(5));
                outside.set();
            }
        });
        rt.block_on(async move {
            let second = R::spawn_here({
                let first_done = first_done.clone();
                async move {
                    second_waits.set();
                    R::block_on_here(first_done.wait());
                }
            });
            R::block_on_here(outside.wait());
            first_done.set();
            second.await;
        });
        let _ = setter.join();
        let _ = done.send(());
        drop(rt);
    });
    finished.recv_timeout(DEADLINE).is_ok()
}

/// A flag a future can wait for: set once, from any thread.
#[derive(Clone, Default)]
struct Flag(Arc<(AtomicBool, Mutex<Vec<Waker>>)>);

impl Flag {
    fn set(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        for waker in self.0.1.lock().expect("flag wakers").drain(..) {
            waker.wake();
        }
    }

    fn is_set(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let flag = self.clone();
        std::future::poll_fn(move |cx| {
            flag.0
                .1
                .lock()
                .expect("flag wakers")
                .push(cx.waker().clone());
            if flag.is_set() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}
