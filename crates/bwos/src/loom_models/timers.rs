//! loom model: the pool's timers (`sched/time/`): a task registers a
//! timer and its waker while a worker fires it, cancels it, or falls
//! asleep as the watcher.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

use loom::sync::Arc;
use loom::thread;

use super::builder;
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::CoreLatch;
use crate::sched::time::{Registered, Timers, WakeFor, Watch};

/// Counts its wake-ups.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (std::sync::Arc<Counter>, Waker) {
    let counter = std::sync::Arc::new(Counter::default());
    let waker = Waker::from(std::sync::Arc::clone(&counter));
    (counter, waker)
}

/// A task polls its sleep twice (the second poll with a new waker) while
/// a worker fires the timer: either the second poll sees it fired, or the
/// new waker is woken, once. No wake-up is lost, none comes twice.
#[test]
fn timers_registration_vs_firing_loses_no_wakeup() {
    builder(3).check(|| {
        let timers = Arc::new(Timers::new());
        let worker = {
            let timers = timers.clone();
            thread::spawn(move || timers.fire_until(10))
        };
        let (first, first_waker) = counting();
        let (second, second_waker) = counting();
        // The first poll: `Fired` means the worker processed past the
        // deadline first, and the sleep is ready without a wake-up.
        let inserted = timers.insert_at_tick(5, &first_waker);
        let key = inserted.key;
        let registered = match inserted.registered {
            Registered::Fired => Registered::Fired,
            // The second poll, as `Sleep::poll` makes it.
            Registered::Pending => timers.register(key, &second_waker),
        };
        worker.join().unwrap();
        let (first, second) = (
            first.0.load(Ordering::SeqCst),
            second.0.load(Ordering::SeqCst),
        );
        assert!(first + second <= 1, "woken twice");
        if registered == Registered::Pending {
            assert_eq!(second, 1, "the waker registered last was not woken");
        }
        timers.remove(key);
        assert_eq!(timers.len(), 0);
    });
}

/// A task's first poll of its sleep races with a worker that fires the
/// timers past its deadline: the poll either sees the timer fired (and
/// does not wait) or its waker is woken. (The first `Sleep::poll` once
/// returned `Pending` unconditionally: the worker's firing could come
/// between the poll's look at the clock and its insertion, and the task
/// slept forever.)
#[test]
fn timers_first_poll_vs_firing_loses_no_wakeup() {
    builder(3).check(|| {
        let timers = Arc::new(Timers::new());
        let worker = {
            let timers = timers.clone();
            thread::spawn(move || timers.fire_until(10))
        };
        let (counter, waker) = counting();
        let inserted = timers.insert_at_tick(5, &waker);
        worker.join().unwrap();
        let woken = counter.0.load(Ordering::SeqCst);
        match inserted.registered {
            Registered::Pending => assert_eq!(woken, 1, "a waiting sleep was never woken"),
            Registered::Fired => assert_eq!(woken, 0),
        }
    });
}

/// A task drops its sleep while a worker fires timers: the waker is woken
/// at most once, and the wheel keeps nothing of the cancelled timer.
#[test]
fn timers_cancellation_vs_firing_leaves_nothing() {
    builder(3).check(|| {
        let timers = Arc::new(Timers::new());
        let worker = {
            let timers = timers.clone();
            thread::spawn(move || timers.fire_until(10))
        };
        let (counter, waker) = counting();
        let key = timers.insert_at_tick(5, &waker).key;
        timers.remove(key);
        worker.join().unwrap();
        assert!(counter.0.load(Ordering::SeqCst) <= 1);
        assert_eq!(timers.len(), 0);
        // Firing later finds nothing either.
        assert_eq!(timers.fire_until(20), 0);
    });
}

/// A worker falls asleep as the watcher while a task adds a timer: if the
/// watcher saw no timer, the task is told to interrupt it, so the new
/// deadline is never slept through.
#[test]
fn timers_watcher_never_sleeps_through_a_new_deadline() {
    builder(3).check(|| {
        let timers = Arc::new(Timers::new());
        let task = {
            let timers = timers.clone();
            thread::spawn(move || {
                let (_, waker) = counting();
                timers.insert_at_tick(3, &waker).wake
            })
        };
        let watch = timers.watch(0);
        let wake = task.join().unwrap();
        match watch {
            Watch::Until(None) => {
                assert_eq!(wake, WakeFor::Watcher(0), "the watcher slept through");
            }
            Watch::Until(Some(_)) => {}
            Watch::Elsewhere => panic!("nobody else watches"),
        }
        timers.unwatch(0);
    });
}

/// Worker 1 falls asleep (the real `Sleepers` protocol around the sleep loop
/// of `park::park_worker`) while worker 0 sleeps as the watcher.
/// Worker 1 ends its sleep only by becoming the watcher with a deadline;
/// parking with no one to wake it is a loom deadlock. `Ok` when it parks
/// on its token; `is_interrupted` is the seat's look (`park_worker`).
fn sleep_as_worker_1(sleep: &Sleepers, timers: &Timers) {
    let never_set = CoreLatch::new();
    sleep.start_searching();
    sleep.sleep_parking_with(
        1,
        &never_set,
        || false,
        || (),
        |still_asleep, _| {
            match timers.watch(1) {
                // It sleeps until the deadline: it will wake for it.
                Watch::Until(Some(_)) => true,
                Watch::Until(None) | Watch::Elsewhere => {
                    if still_asleep() && !timers.is_interrupted(1) {
                        thread::park();
                    }
                    false
                }
            }
        },
    );
    sleep.stop_searching();
}

/// The watcher (worker 0) wakes for work while a deadline is pending and
/// worker 1 falls asleep: worker 0 leaves the watch as
/// `park::leave_timer_watch` does, handing it to a sleeper. Whatever
/// the interleaving, worker 1 ends up sleeping until the deadline: either
/// its `watch` comes after the hand-over and finds the watch vacant, or
/// it had announced its sleep, the hand-over sees it and interrupts it.
/// (Without the hand-over, worker 1 slept without a deadline and the
/// timer stalled until some worker slept again: loom reports a deadlock.)
#[test]
fn timers_watch_is_handed_over() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(2));
        let timers = Arc::new(Timers::new());
        let (_, waker) = counting();
        timers.insert_at_tick(5, &waker);
        assert!(matches!(timers.watch(0), Watch::Until(Some(_))));
        let worker_1 = {
            let (sleep, timers) = (sleep.clone(), timers.clone());
            thread::spawn(move || sleep_as_worker_1(&sleep, &timers))
        };
        let worker_1_thread = worker_1.thread().clone();
        // Worker 0's sleep ended: `park::leave_timer_watch`.
        if timers.unwatch(0)
            && let Some(chosen) = timers.assign_watch([1], |index| sleep.is_asleep(index))
        {
            assert_eq!(chosen, 1);
            worker_1_thread.unpark();
        }
        worker_1.join().unwrap();
    });
}

/// A timer is added while nobody watches (the watcher left with no
/// deadline pending) and worker 1 falls asleep: the insertion's
/// `VacantWatch` makes the inserter assign the watch to a sleeper
/// (`park::wake_for_timer`), unless worker 1's `watch` comes after the
/// insertion and sees the deadline itself.
#[test]
fn timers_vacant_watch_is_taken() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(2));
        let timers = Arc::new(Timers::new());
        assert_eq!(timers.watch(0), Watch::Until(None));
        let worker_1 = {
            let (sleep, timers) = (sleep.clone(), timers.clone());
            thread::spawn(move || sleep_as_worker_1(&sleep, &timers))
        };
        let worker_1_thread = worker_1.thread().clone();
        assert!(!timers.unwatch(0), "no deadline was pending");
        let (_, waker) = counting();
        match timers.insert_at_tick(3, &waker).wake {
            WakeFor::Nobody => {}
            WakeFor::Watcher(index) => {
                assert_eq!(index, 1);
                worker_1_thread.unpark();
            }
            WakeFor::VacantWatch => {
                if sleep.anyone_sleeping()
                    && let Some(chosen) =
                        timers.assign_watch([0, 1], |index| sleep.is_asleep(index))
                {
                    assert_eq!(chosen, 1);
                    worker_1_thread.unpark();
                }
            }
        }
        worker_1.join().unwrap();
    });
}
