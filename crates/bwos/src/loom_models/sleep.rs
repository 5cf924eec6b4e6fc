//! loom model: Falling asleep without losing a wake-up (`sched/idle/sleep.rs`), with the latch.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use super::{builder, handoff, thread_latch};
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::{CoreLatch, Latch};

/// A waiting worker's two reasons to wake up race: new work and its latch.
/// Whichever comes, the worker must not stay parked, and the latch must be
/// observed set in the end.
#[test]
fn sleeping_worker_wakes_for_latch_or_work() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(1));
        let work = Arc::new(AtomicBool::new(false));
        let (latch_sender, latch_receiver) = handoff();
        let worker = {
            let (sleep, work) = (sleep.clone(), work.clone());
            thread::spawn(move || {
                let latch = Arc::new(thread_latch());
                latch_sender.send(latch.clone());
                sleep.start_searching();
                while !latch.core().probe() {
                    // Take the work if there is some, as a worker would.
                    if !work.swap(false, Ordering::Relaxed) {
                        sleep.sleep(0, latch.core(), || work.load(Ordering::Relaxed), || ());
                    }
                }
                sleep.stop_searching();
            })
        };
        let worker_thread = worker.thread().clone();
        work.store(true, Ordering::Relaxed);
        sleep.notify(|_| worker_thread.unpark());
        let latch = latch_receiver.recv();
        // SAFETY: the latch is alive (the `Arc`).
        unsafe { Latch::set(&*latch) };
        worker.join().unwrap();
        assert!(!sleep.anyone_idle(), "the counts are back to zero");
    });
}

/// Falling asleep against a producer making work visible: the Dekker pair
/// of SeqCst fences. The worker's latch is never set, so only the
/// producer's wake-up (or the sleeper's final look) can end its wait.
#[test]
fn sleep_no_lost_wakeup() {
    builder(4).check(|| {
        let sleep = Arc::new(Sleepers::new(2));
        let work = Arc::new(AtomicUsize::new(0));
        let worker = {
            let (sleep, work) = (sleep.clone(), work.clone());
            thread::spawn(move || {
                let never_set = CoreLatch::new();
                sleep.start_searching();
                while work.load(Ordering::Relaxed) == 0 {
                    sleep.sleep(0, &never_set, || work.load(Ordering::Relaxed) != 0, || ());
                }
                sleep.stop_searching();
            })
        };
        let worker_thread = worker.thread().clone();
        // Relaxed: the fences in `notify` and `sleep` must do all the
        // ordering.
        work.store(1, Ordering::Relaxed);
        sleep.notify(|index| {
            assert_eq!(index, 0, "only worker 0 sleeps");
            worker_thread.unpark();
        });
        worker.join().unwrap();
        assert!(!sleep.anyone_idle(), "the counts are back to zero");
    });
}
