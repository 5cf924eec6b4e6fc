//! loom model: the paused clock's automatic advance
//! (`sched/time/auto_advance.rs`): idle workers and outside work deciding
//! together when the clock jumps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};
use std::time::Duration;

use loom::sync::Arc;
use loom::thread;

use super::builder;
use crate::sched::time::auto_advance::AutoAdvance;
use crate::sched::time::{Registered, TimerKey, Timers};

/// Counts its wake-ups.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A timer at `tick` on `timers`, and its wake-up counter.
fn timer(timers: &Timers, tick: u64) -> (TimerKey, std::sync::Arc<Counter>) {
    let counter = std::sync::Arc::new(Counter::default());
    let waker = Waker::from(std::sync::Arc::clone(&counter));
    let inserted = timers.insert_at_tick(tick, &waker);
    assert_eq!(inserted.registered, Registered::Pending);
    (inserted.key, counter)
}

/// Timers whose clock is paused.
fn paused_timers() -> Arc<Timers> {
    let timers = Arc::new(Timers::new());
    timers.clock().pause().unwrap();
    timers
}

/// Two workers fall idle with timers at ticks 5 and 9 pending. The one
/// that jumps to 5 runs the woken task, which cancels the timer at 9, and
/// falls idle again. Whatever the interleaving, the clock jumps once, to
/// 5, and the timer at 9 never fires: a worker never sees the pool idle
/// while another's jump has work pending. (With the claim made after the
/// idleness lock is released, the other worker could jump again, to 9,
/// over the task the first jump woke.)
#[test]
fn paused_clock_jumps_once_per_idle_moment() {
    builder(3).check(|| {
        let timers = paused_timers();
        let (_, first) = timer(&timers, 5);
        let (later, second) = timer(&timers, 9);
        let idleness = Arc::new(AutoAdvance::new(2, 0));
        let jumps = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let (timers, idleness, jumps) = (timers.clone(), idleness.clone(), jumps.clone());
                thread::spawn(move || {
                    idleness.worker_idle(index);
                    if idleness.try_advance(index, &timers, || true, || {}) {
                        // The woken task runs (once): it cancels the later
                        // timer.
                        if jumps.fetch_add(1, Ordering::SeqCst) == 0 {
                            timers.remove(later);
                        }
                        idleness.worker_idle(index);
                        idleness.try_advance(index, &timers, || true, || {});
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(first.0.load(Ordering::SeqCst), 1, "the first timer fired");
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            0,
            "the clock jumped over the woken task"
        );
        assert_eq!(jumps.load(Ordering::SeqCst), 1);
        assert_eq!(
            timers.now(),
            timers.clock().epoch() + Duration::from_millis(5),
            "the clock stands at the deadline it jumped to"
        );
    });
}

/// A worker falls idle (marks itself, looks, parks until unparked) while
/// the pool's one piece of outside work (a blocking closure, a polling
/// `block_on`) finishes. Whatever the interleaving, the clock jumps: the
/// worker's look comes after the finish and sees the pool idle, or the
/// finish comes after the mark and names the worker to unpark, which
/// looks again (as `Registry::unpark` does, the unpark unmarks it first).
/// A lost look leaves the worker parked forever: a loom deadlock.
#[test]
fn paused_clock_outside_work_finishing_wakes_the_advance() {
    builder(3).check(|| {
        let timers = paused_timers();
        let (_, fired) = timer(&timers, 5);
        let idleness = Arc::new(AutoAdvance::new(1, 0));
        idleness.outside_started();
        let worker = {
            let (timers, idleness) = (timers.clone(), idleness.clone());
            thread::spawn(move || {
                loop {
                    idleness.worker_idle(0);
                    if idleness.try_advance(0, &timers, || true, || {}) {
                        return;
                    }
                    thread::park();
                    idleness.worker_busy(0);
                }
            })
        };
        let worker_thread = worker.thread().clone();
        if let Some(index) = idleness.outside_finished(&timers) {
            assert_eq!(index, 0);
            idleness.worker_busy(index);
            worker_thread.unpark();
        }
        worker.join().unwrap();
        assert_eq!(fired.0.load(Ordering::SeqCst), 1);
    });
}
