//! `ThreadPool::shutdown_timeout` and `shutdown_background`: what each
//! returns after, what happens to pending tasks, queued and running
//! blocking closures and detached jobs, and that nothing is left behind
//! (the workers' and blocking threads' thread-local destructors run, and
//! the pool's registry is freed: a witness `Arc` its start handler holds
//! is released). No timing is asserted: a call that should return "after
//! the timeout" is one that returns at all while work is stuck, under the
//! watchdog.

#![cfg(not(bwos_loom))]

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use bwos::{ThreadPool, ThreadPoolBuilder};
use bwos_testkit::watchdog;
use common::wait_until;

mod common;

/// Counts an end when the thread it was put on exits (its thread-local
/// destructor runs after everything else the thread did).
struct EndMark(Arc<AtomicUsize>);

impl Drop for EndMark {
    fn drop(&mut self) {
        // Late on purpose: a caller that says it joined the thread but
        // did not would see the count before this.
        std::thread::sleep(Duration::from_millis(5));
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

thread_local! {
    static END_MARK: RefCell<Option<EndMark>> = const { RefCell::new(None) };
}

/// Marks the calling thread: `ends` counts one when it exits.
fn mark_thread(ends: &Arc<AtomicUsize>) {
    END_MARK.with(|mark| *mark.borrow_mut() = Some(EndMark(Arc::clone(ends))));
}

/// What a pool built by [`watched_pool`] reports.
struct Watch {
    /// Workers that have exited.
    workers_ended: Arc<AtomicUsize>,
    /// Held by the pool's start handler, so by its registry: the count
    /// falls to one when the registry is freed.
    witness: Arc<()>,
}

impl Watch {
    fn registry_freed(&self) -> bool {
        Arc::strong_count(&self.witness) == 1
    }
}

/// A pool of `threads` workers whose exits and registry can be watched.
fn watched_pool(threads: usize, max_blocking: usize) -> (ThreadPool, Watch) {
    let watch = Watch {
        workers_ended: Arc::new(AtomicUsize::new(0)),
        witness: Arc::new(()),
    };
    let (ends, witness) = (Arc::clone(&watch.workers_ended), Arc::clone(&watch.witness));
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .max_blocking_threads(max_blocking)
        .start_handler(move |_| {
            let _held = &witness;
            mark_thread(&ends);
        })
        .build()
        .expect("a pool");
    (pool, watch)
}

// Mutation caught: the blocking threads waited for without the deadline
// (`wait_for_threads(None)`: the call never returns, the watchdog fails
// the test).
/// A closure blocked in `spawn_blocking` does not hold the call past its
/// timeout; the workers are joined, pending tasks and queued closures
/// cancelled; once the closure is let go, its thread exits and the
/// registry is freed.
#[test]
fn shutdown_timeout_returns_while_a_blocking_closure_is_stuck() {
    watchdog(
        "shutdown_timeout_returns_while_a_blocking_closure_is_stuck",
        || {
            let (pool, watch) = watched_pool(2, 1);
            let pending = pool.spawn_task(std::future::pending::<()>());
            let (release, gate) = mpsc::channel::<()>();
            let (started, has_started) = mpsc::channel::<()>();
            let blocking_ended = Arc::new(AtomicUsize::new(0));
            let stuck = pool.spawn_blocking({
                let blocking_ended = Arc::clone(&blocking_ended);
                move || {
                    mark_thread(&blocking_ended);
                    started.send(()).unwrap();
                    gate.recv().unwrap();
                    "finished"
                }
            });
            // The one blocking thread is busy: this one waits in the queue.
            let queued = pool.spawn_blocking(|| "queued");
            has_started.recv().unwrap();
            pool.shutdown_timeout(Duration::from_millis(20));
            assert_eq!(
                watch.workers_ended.load(Ordering::SeqCst),
                2,
                "shutdown_timeout returned before its stopped workers were joined"
            );
            assert!(bwos::block_on(pending).unwrap_err().is_cancelled());
            assert!(bwos::block_on(queued).unwrap_err().is_cancelled());
            assert_eq!(blocking_ended.load(Ordering::SeqCst), 0, "still stuck");
            release.send(()).unwrap();
            assert_eq!(bwos::block_on(stuck).unwrap(), "finished");
            assert!(
                wait_until(|| blocking_ended.load(Ordering::SeqCst) == 1),
                "the blocking thread did not exit after its closure"
            );
            assert!(
                wait_until(|| watch.registry_freed()),
                "the registry is leaked"
            );
        },
    );
}

// Mutation caught: `shutdown_timeout` without its wait for the blocking
// threads (it returns before the closure, released 10 ms later, ended).
/// With a timeout long enough, the call waits for a running closure to
/// finish and its thread to exit.
#[test]
fn shutdown_timeout_waits_for_a_blocking_closure_that_finishes_in_time() {
    watchdog(
        "shutdown_timeout_waits_for_a_blocking_closure_that_finishes_in_time",
        || {
            let (pool, watch) = watched_pool(1, 2);
            let finished = Arc::new(AtomicBool::new(false));
            let (release, gate) = mpsc::channel::<()>();
            let (started, has_started) = mpsc::channel::<()>();
            let closure = pool.spawn_blocking({
                let finished = Arc::clone(&finished);
                move || {
                    started.send(()).unwrap();
                    gate.recv().unwrap();
                    finished.store(true, Ordering::SeqCst);
                }
            });
            has_started.recv().unwrap();
            let releaser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                release.send(()).unwrap();
            });
            pool.shutdown_timeout(Duration::from_secs(3600));
            assert!(
                finished.load(Ordering::SeqCst),
                "returned before the running closure finished"
            );
            assert_eq!(watch.workers_ended.load(Ordering::SeqCst), 1);
            releaser.join().unwrap();
            bwos::block_on(closure).unwrap();
            assert!(
                wait_until(|| watch.registry_freed()),
                "the registry is leaked"
            );
        },
    );
}

// Mutation caught: `shutdown_background` joining the workers as a drop
// does (it waits for the detached job, which waits for this thread: the
// watchdog fails the test).
/// `shutdown_background` returns while a detached job and a blocking
/// closure are stuck; they finish once let go, the pending task is
/// cancelled as the worker stops, and the worker exits on its own.
#[test]
fn shutdown_background_returns_at_once_and_the_rest_stops_on_its_own() {
    watchdog(
        "shutdown_background_returns_at_once_and_the_rest_stops_on_its_own",
        || {
            let (pool, watch) = watched_pool(1, 1);
            let (release_job, job_gate) = mpsc::channel::<()>();
            let (job_started, job_has_started) = mpsc::channel::<()>();
            let job_done = Arc::new(AtomicBool::new(false));
            pool.spawn({
                let job_done = Arc::clone(&job_done);
                move || {
                    job_started.send(()).unwrap();
                    job_gate.recv().unwrap();
                    job_done.store(true, Ordering::SeqCst);
                }
            });
            job_has_started.recv().unwrap();
            let (release_closure, closure_gate) = mpsc::channel::<()>();
            let (closure_started, closure_has_started) = mpsc::channel::<()>();
            let closure = pool.spawn_blocking(move || {
                closure_started.send(()).unwrap();
                closure_gate.recv().is_ok()
            });
            // Running, not queued: shutdown cancels a queued closure.
            closure_has_started.recv().unwrap();
            let pending = pool.spawn_task(std::future::pending::<()>());
            let handle = pool.handle();
            pool.shutdown_background();
            assert!(!job_done.load(Ordering::SeqCst), "the job is still stuck");
            release_job.send(()).unwrap();
            // The detached job ran; the worker stops after it and cancels
            // the pending task.
            assert!(bwos::block_on(pending).unwrap_err().is_cancelled());
            assert!(job_done.load(Ordering::SeqCst));
            assert!(
                wait_until(|| watch.workers_ended.load(Ordering::SeqCst) == 1),
                "the worker did not exit"
            );
            // A handle's spawn after the workers stopped: cancelled.
            let late = handle.spawn(async {});
            assert!(bwos::block_on(late).unwrap_err().is_cancelled());
            drop(handle);
            release_closure.send(()).unwrap();
            assert!(bwos::block_on(closure).unwrap());
            assert!(
                wait_until(|| watch.registry_freed()),
                "the registry is leaked"
            );
        },
    );
}

/// The pool, reachable from its own work.
type Slot = Arc<Mutex<Option<ThreadPool>>>;

// Mutation caught: `shutdown_timeout` without its `runs_on_own_worker`
// check (the worker waits an hour for itself to stop: the watchdog fails
// the test).
/// On one of its own workers the call cannot wait for the workers: it
/// returns at once, and the pool stops after the task's poll.
#[test]
fn shutdown_timeout_on_its_own_worker_returns_at_once() {
    watchdog("shutdown_timeout_on_its_own_worker_returns_at_once", || {
        let (pool, watch) = watched_pool(2, 1);
        let slot: Slot = Arc::new(Mutex::new(None));
        let handle = pool.handle();
        *slot.lock().unwrap() = Some(pool);
        let task = handle.spawn({
            let slot = Arc::clone(&slot);
            async move {
                let pool = slot.lock().unwrap().take().expect("the pool");
                pool.shutdown_timeout(Duration::from_secs(3600));
                "returned"
            }
        });
        assert_eq!(bwos::block_on(task).unwrap(), "returned");
        drop(handle);
        assert!(wait_until(
            || watch.workers_ended.load(Ordering::SeqCst) == 2
        ));
        assert!(
            wait_until(|| watch.registry_freed()),
            "the registry is leaked"
        );
    });
}

// Mutations caught: `BlockingPool::wait_for_threads` counting the calling
// blocking thread (it waits an hour for itself: the watchdog fails the
// test), and the stopped workers detached instead of joined (their
// thread-local destructors, which `EndMark` makes slow, have not run when
// the call returns).
/// On one of its blocking threads the call waits for the workers but not
/// for that thread.
#[test]
fn shutdown_timeout_on_its_own_blocking_thread_does_not_wait_for_itself() {
    watchdog(
        "shutdown_timeout_on_its_own_blocking_thread_does_not_wait_for_itself",
        || {
            let (pool, watch) = watched_pool(2, 2);
            let slot: Slot = Arc::new(Mutex::new(None));
            let handle = pool.handle();
            *slot.lock().unwrap() = Some(pool);
            let closure = handle.spawn_blocking({
                let slot = Arc::clone(&slot);
                move || {
                    let pool = slot.lock().unwrap().take().expect("the pool");
                    pool.shutdown_timeout(Duration::from_secs(3600));
                    "returned"
                }
            });
            assert_eq!(bwos::block_on(closure).unwrap(), "returned");
            assert_eq!(
                watch.workers_ended.load(Ordering::SeqCst),
                2,
                "workers joined"
            );
            drop(handle);
            assert!(
                wait_until(|| watch.registry_freed()),
                "the registry is leaked"
            );
        },
    );
}
