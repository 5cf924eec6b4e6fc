//! loom model: The I/O driver's seat (`sched/idle/driver_seat.rs`): a worker blocked in the driver is always woken.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::builder;
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::CoreLatch;

/// A worker falls asleep blocked in the I/O driver's poll (the real
/// `DriverSeat`; the eventfd modeled as a flag under a mutex with a
/// condvar, which a thread unpark does not reach) while a producer makes
/// work visible and wakes a sleeper. Either the worker's look after
/// taking the seat sees that it was woken, or the waker sees it in the
/// seat and writes the eventfd: it never blocks forever.
#[test]
fn driver_seat_no_lost_wakeup() {
    use crate::sched::idle::driver_seat::DriverSeat;
    use loom::sync::{Condvar, Mutex};

    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(1));
        let seat = Arc::new(DriverSeat::default());
        let eventfd = Arc::new((Mutex::new(false), Condvar::new()));
        let work = Arc::new(AtomicUsize::new(0));
        let worker = {
            let (sleep, seat, eventfd, work) =
                (sleep.clone(), seat.clone(), eventfd.clone(), work.clone());
            thread::spawn(move || {
                let never_set = CoreLatch::new();
                sleep.start_searching();
                while work.load(Ordering::Relaxed) == 0 {
                    sleep.sleep_parking_with(
                        0,
                        &never_set,
                        || work.load(Ordering::Relaxed) != 0,
                        || (),
                        |still_asleep, _wake_early| {
                            seat.block_in_driver(0, still_asleep, || {
                                let (written, signal) = &*eventfd;
                                let mut written = written.lock().unwrap();
                                while !*written {
                                    written = signal.wait(written).unwrap();
                                }
                                *written = false;
                            });
                            false
                        },
                    );
                }
                sleep.stop_searching();
            })
        };
        // Relaxed: the fences of `notify`, `sleep` and the seat must do
        // all the ordering.
        work.store(1, Ordering::Relaxed);
        sleep.notify(|index| {
            seat.wake(index, || {
                let (written, signal) = &*eventfd;
                *written.lock().unwrap() = true;
                signal.notify_one();
            });
        });
        worker.join().unwrap();
        assert!(!sleep.anyone_idle(), "the counts are back to zero");
    });
}

/// The timers' watcher falls asleep blocked in the I/O driver's poll (the
/// real `Timers` and `DriverSeat`; the eventfd modeled as above) while a
/// task adds a timer due before the watcher's deadline and interrupts it.
/// The interrupt does not change the watcher's sleep state, so the seat's
/// look at `still_asleep` cannot see it: the watcher also looks at
/// `Timers::is_interrupted` after taking the seat, as
/// `park::park_worker` does. Either that look sees the interrupt and
/// the watcher does not block (it looks at the wheel again), or the
/// interrupter sees it in the seat and writes the eventfd. Without the
/// look, an interrupt between `watch` and taking the seat left the
/// watcher blocked with no deadline (loom: deadlock).
#[test]
fn driver_seat_timer_interrupt_is_not_lost() {
    use crate::sched::idle::driver_seat::DriverSeat;
    use crate::sched::time::{Timers, WakeFor, Watch};
    use loom::sync::{Condvar, Mutex};

    builder(3).check(|| {
        let timers = Arc::new(Timers::new());
        let seat = Arc::new(DriverSeat::default());
        let eventfd = Arc::new((Mutex::new(false), Condvar::new()));
        let watcher = {
            let (timers, seat, eventfd) = (timers.clone(), seat.clone(), eventfd.clone());
            thread::spawn(move || {
                // The sleep loop around `park_worker`: the sleep state
                // never changes here; only the timer's deadline ends it.
                loop {
                    let Watch::Until(timeout) = timers.watch(0) else {
                        panic!("nobody else watches");
                    };
                    if timeout.is_some() {
                        timers.unwatch(0);
                        return;
                    }
                    seat.block_in_driver(0, &|| !timers.is_interrupted(0), || {
                        let (written, signal) = &*eventfd;
                        let mut written = written.lock().unwrap();
                        while !*written {
                            written = signal.wait(written).unwrap();
                        }
                        *written = false;
                    });
                    timers.unwatch(0);
                }
            })
        };
        let inserted = timers.insert_at_tick(3, std::task::Waker::noop());
        // `VacantWatch`: the watcher has not looked yet; its `watch` sees
        // the deadline.
        if let WakeFor::Watcher(index) = inserted.wake {
            // `Registry::unpark`'s driver half.
            seat.wake(index, || {
                let (written, signal) = &*eventfd;
                *written.lock().unwrap() = true;
                signal.notify_one();
            });
        }
        watcher.join().unwrap();
        assert_eq!(timers.len(), 1, "the timer waits in the wheel");
    });
}
