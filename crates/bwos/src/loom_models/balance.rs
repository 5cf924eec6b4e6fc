//! loom model: Balanced work stealing's wake-ups on top of the sleep protocol (`sched/idle/balance.rs`): the watchdog's hand-off, credit wake-ups.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::{builder, handoff, thread_latch};
use crate::sched::idle::balance::Balance;
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::{CoreLatch, Latch};

/// Balanced work stealing: worker 0 is the watchdog, steals a job and
/// hands its role on (waking worker 1 if it sleeps), then produces work
/// as a busy worker does (make it visible, `notify`). Worker 1 is a thief
/// that sleeps whenever BWS lets it (it is not the watchdog, or takes the
/// vacant role instead of sleeping). Whatever the interleaving, worker 1
/// must end up taking the work, and nobody may stay parked: work pushed
/// while the last thief falls asleep is always found.
#[test]
fn balanced_watchdog_hand_off_loses_no_work() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(2));
        let balance = Arc::new(Balance::new(2));
        let work = Arc::new(AtomicUsize::new(0));
        assert!(!balance.may_sleep(0), "worker 0 takes the vacant role");
        let thief = {
            let (sleep, balance, work) = (sleep.clone(), balance.clone(), work.clone());
            thread::spawn(move || {
                let never_set = CoreLatch::new();
                sleep.start_searching();
                let mut watchdog_looks = 0;
                // Relaxed: the sleep protocol's fences do the ordering. A
                // load, not a swap: loom 0.7 lets a relaxed swap read a
                // stale value (checked with a two-thread model), and the
                // thief is the only consumer anyway.
                while work.load(Ordering::Relaxed) == 0 {
                    if balance.may_sleep(1) {
                        sleep.sleep(1, &never_set, || work.load(Ordering::Relaxed) != 0, || ());
                    } else if watchdog_looks < 2 {
                        // The watchdog does not sleep; it looks again.
                        watchdog_looks += 1;
                        thread::yield_now();
                    } else {
                        // A watchdog that finds every worker idle gives the
                        // role up and sleeps (loom cannot explore an
                        // unbounded look loop; sleeping is the harder case).
                        balance.appoint(1, None);
                        sleep.sleep(1, &never_set, || work.load(Ordering::Relaxed) != 0, || ());
                    }
                }
                work.store(0, Ordering::Relaxed);
                sleep.stop_searching();
            })
        };
        let thief_thread = thief.thread().clone();
        // Worker 0 steals: two credits, then the watchdog's hand-off.
        sleep.start_searching();
        sleep.stop_searching();
        balance.earn(0, 2);
        let unpark = |index: usize| {
            assert_eq!(index, 1, "only worker 1 sleeps");
            thief_thread.unpark();
        };
        let woken = balance.hand_off(0, &sleep, unpark);
        // Twice at most: the same thief, if it fell asleep again in between.
        assert!(woken <= 2);
        assert!(
            !balance.is_watchdog(0),
            "the role was handed on or given up"
        );
        // Busy worker 0 creates work; producers never pay while a
        // searcher exists, else wake a sleeper.
        work.store(1, Ordering::Relaxed);
        sleep.notify(unpark);
        thief.join().unwrap();
        assert_eq!(work.load(Ordering::Relaxed), 0, "the work was taken");
        assert!(!sleep.anyone_idle(), "the counts are back to zero");
    });
}

/// Credits never go negative and a credit wake-up races with the sleeper
/// waking itself (its latch is set): exactly one of them moves it back to
/// searching, and the thief keeps its credit when it did not wake anyone.
#[test]
fn credit_wake_up_races_with_the_latch() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleepers::new(2));
        let balance = Arc::new(Balance::new(2));
        let (latch_sender, latch_receiver) = handoff();
        let sleeper = {
            let sleep = sleep.clone();
            thread::spawn(move || {
                let latch = Arc::new(thread_latch());
                latch_sender.send(latch.clone());
                sleep.start_searching();
                while !latch.core().probe() {
                    sleep.sleep(1, latch.core(), || false, || ());
                }
                sleep.stop_searching();
            })
        };
        let sleeper_thread = sleeper.thread().clone();
        balance.earn(0, 1);
        let latch = latch_receiver.recv();
        let woke = balance.credits(0) > 0
            && sleep.is_asleep(1)
            && sleep.wake(1, |_| sleeper_thread.unpark())
            && balance.take_credit(0);
        // SAFETY: the latch is alive (the `Arc`).
        unsafe { Latch::set(&*latch) };
        sleeper.join().unwrap();
        assert_eq!(balance.credits(0), u32::from(!woke));
        assert!(!balance.take_over_credit(0, 1) || !woke);
        assert!(!sleep.anyone_idle(), "the counts are back to zero");
    });
}
