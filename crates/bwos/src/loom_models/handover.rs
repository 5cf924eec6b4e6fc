//! loom model: a worker's baton (`sched/handover.rs`): the worker is run by
//! one thread at a time, and a thread that waits for it gets it, also from
//! a runner that sleeps.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::builder;
use crate::sched::handover::{Handover, wake_runner};
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::CoreLatch;

/// A replacement runs the worker (a job, then sleep in the real sleep
/// protocol, until a thread waits at a boundary) while the worker's own
/// thread's closure returns and it waits for its turn (the real
/// `wait_for_turn` with the real `wake_runner`). The runner is never left
/// asleep with a thread waiting, and the two never touch the worker at
/// once.
#[test]
fn a_sleeping_runner_passes_the_worker_on() {
    builder(3).check(|| {
        let handover = Arc::new(Handover::new());
        let sleepers = Arc::new(Sleepers::new(1));
        let worker = Arc::new(UnsafeCell::new(0u32));
        let runner = {
            let (handover, sleepers, worker) = (handover.clone(), sleepers.clone(), worker.clone());
            thread::spawn(move || {
                let never_set = CoreLatch::new();
                sleepers.start_searching();
                loop {
                    // A boundary.
                    if handover.is_wanted() && handover.pass_on() {
                        break;
                    }
                    // SAFETY: the runner holds the worker; loom checks
                    // that no other thread touches it meanwhile.
                    worker.with_mut(|jobs| unsafe { *jobs += 1 });
                    sleepers.sleep_parking_with(
                        0,
                        &never_set,
                        || handover.is_wanted(),
                        || (),
                        |_still_asleep, _wake_early| {
                            thread::park();
                            false
                        },
                    );
                }
            })
        };
        let runner_thread = runner.thread().clone();
        handover.wait_for_turn(|| wake_runner(&sleepers, 0, |_| runner_thread.unpark()));
        // SAFETY: the worker was passed on to this thread (checked by loom).
        worker.with_mut(|jobs| unsafe { *jobs += 1 });
        runner.join().unwrap();
    });
}

/// The runner passes the worker on to two threads that wait for it; each
/// runs it in turn and passes it on to the other if it still waits. Every
/// waiter gets the worker exactly once, never two at a time.
#[test]
fn waiters_get_the_worker_in_turn() {
    builder(3).check(|| {
        let handover = Arc::new(Handover::new());
        let worker = Arc::new(UnsafeCell::new(0u32));
        let turns = Arc::new(AtomicUsize::new(0));
        let waiter = || {
            let (handover, worker, turns) = (handover.clone(), worker.clone(), turns.clone());
            thread::spawn(move || {
                handover.wait_for_turn(|| ());
                // SAFETY: the worker was passed on to this thread (checked
                // by loom).
                worker.with_mut(|runs| unsafe { *runs += 1 });
                // Relaxed: the baton's lock orders the turns.
                if turns.fetch_add(1, Ordering::Relaxed) == 0 {
                    // The other one has not had its turn: it gets it.
                    while !handover.pass_on() {
                        thread::yield_now();
                    }
                }
            })
        };
        let (first, second) = (waiter(), waiter());
        while !handover.pass_on() {
            thread::yield_now();
        }
        first.join().unwrap();
        second.join().unwrap();
        assert_eq!(turns.load(Ordering::Relaxed), 2);
        // SAFETY: every other thread was joined.
        worker.with(|runs| assert_eq!(unsafe { *runs }, 2));
    });
}

/// A runner whose loop needs the worker back (`take_a_turn_off`) passes it
/// to a waiter and queues for it in one step; the waiter, a replacement,
/// passes it back. The two never hold it at once, and once the runner has
/// it back nobody is left waiting: the worker's own thread may then end
/// it.
#[test]
fn passing_on_and_queueing_is_one_step() {
    builder(3).check(|| {
        let handover = Arc::new(Handover::new());
        let worker = Arc::new(UnsafeCell::new(0u32));
        let replacement = {
            let (handover, worker) = (handover.clone(), worker.clone());
            thread::spawn(move || {
                handover.wait_for_turn(|| ());
                // SAFETY: the worker was passed on to this thread (checked
                // by loom).
                worker.with_mut(|runs| unsafe { *runs += 1 });
                while !handover.pass_on() {
                    thread::yield_now();
                }
            })
        };
        while !handover.pass_on_and_wait(|| ()) {
            thread::yield_now();
        }
        // SAFETY: the worker came back to this thread (checked by loom).
        worker.with_mut(|runs| unsafe { *runs += 1 });
        assert!(!handover.is_wanted(), "a thread still waits for the worker");
        replacement.join().unwrap();
        // SAFETY: every other thread was joined.
        worker.with(|runs| assert_eq!(unsafe { *runs }, 2));
    });
}
