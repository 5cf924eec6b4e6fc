//! loom models of the runtime's protocol cores: the latch (a waiter that
//! parks, a setter that wakes it), the Nowa scope counter, falling asleep
//! without losing a wake-up, balanced work stealing's wake-ups (the
//! watchdog's hand-off, credit wake-ups) on top of it, and the async task
//! state word (wake during a poll, completion against the `JoinHandle`'s
//! drop and waker, abort against a poll). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p bwos --release --lib`.
//!
//! loom explores every interleaving (up to a preemption bound) under the
//! C11 memory model: a lost wake-up shows up as a deadlock (every thread
//! parked), a missing happens-before edge as a causality violation on the
//! `UnsafeCell` results.
//!
//! The threads that park are spawned threads that never `join` anything:
//! loom lets a stale unpark token (one that arrives after the waiter saw
//! its condition and moved on, which the real code tolerates) unblock a
//! later `join` and then fails an internal assertion. The main thread only
//! produces and joins.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use crate::balance::Balance;
use crate::counter::NowaCounter;
use crate::latch::{CoreLatch, Latch, ThreadLatch};
use crate::sleep::Sleep;

/// A checker bounded to `preemptions` unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise.
fn builder(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder
}

/// Hands a value from a spawned thread to the main thread (a one-slot
/// channel built on a loom mutex and condition variable).
fn handoff<T>() -> (Handoff<T>, Handoff<T>) {
    let slot = Arc::new((loom::sync::Mutex::new(None), loom::sync::Condvar::new()));
    (Handoff(slot.clone()), Handoff(slot))
}

struct Handoff<T>(Arc<(loom::sync::Mutex<Option<T>>, loom::sync::Condvar)>);

impl<T> Handoff<T> {
    fn send(&self, value: T) {
        *self.0.0.lock().unwrap() = Some(value);
        self.0.1.notify_one();
    }

    fn recv(&self) -> T {
        let mut slot = self.0.0.lock().unwrap();
        loop {
            if let Some(value) = slot.take() {
                return value;
            }
            slot = self.0.1.wait(slot).unwrap();
        }
    }
}

/// A job's result slot written by one thread and read by the waiter.
struct Slot(UnsafeCell<u32>);

// SAFETY: accesses are ordered by the latch under test; loom checks that.
unsafe impl Sync for Slot {}

impl Slot {
    fn new() -> Self {
        Slot(UnsafeCell::new(0))
    }

    fn write(&self, value: u32) {
        // SAFETY: loom checks that no access is concurrent with this one.
        self.0.with_mut(|slot| unsafe { *slot = value });
    }

    fn read(&self) -> u32 {
        // SAFETY: as for `write`.
        self.0.with(|slot| unsafe { *slot })
    }
}

/// The join latch as `install` from outside a pool uses it: the waiter
/// parks, the setter publishes a result, sets the latch and unparks.
#[test]
fn latch_wakes_parked_waiter() {
    builder(3).check(|| {
        let result = Arc::new(Slot::new());
        let (latch_sender, latch_receiver) = handoff();
        let waiter = {
            let result = result.clone();
            thread::spawn(move || {
                let latch = Arc::new(ThreadLatch::for_current_thread());
                latch_sender.send(latch.clone());
                latch.core().wait_blocking();
                assert_eq!(result.read(), 42);
            })
        };
        result.write(42);
        let latch = latch_receiver.recv();
        // SAFETY: the latch is alive (the `Arc`).
        unsafe { Latch::set(&*latch) };
        waiter.join().unwrap();
    });
}

/// A waiting worker's two reasons to wake up race: new work and its latch.
/// Whichever comes, the worker must not stay parked, and the latch must be
/// observed set in the end.
#[test]
fn sleeping_worker_wakes_for_latch_or_work() {
    builder(3).check(|| {
        let sleep = Arc::new(Sleep::new(1));
        let work = Arc::new(AtomicBool::new(false));
        let (latch_sender, latch_receiver) = handoff();
        let worker = {
            let (sleep, work) = (sleep.clone(), work.clone());
            thread::spawn(move || {
                let latch = Arc::new(ThreadLatch::for_current_thread());
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
        let sleep = Arc::new(Sleep::new(2));
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
        let sleep = Arc::new(Sleep::new(2));
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
        let sleep = Arc::new(Sleep::new(2));
        let balance = Arc::new(Balance::new(2));
        let (latch_sender, latch_receiver) = handoff();
        let sleeper = {
            let sleep = sleep.clone();
            thread::spawn(move || {
                let latch = Arc::new(ThreadLatch::for_current_thread());
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

/// The Nowa counter: two spawns on the owner's path (plain counting), one
/// of whose tasks spawns a third from its own thread (atomic counting);
/// tasks complete in any order relative to the end of the body. The owner
/// must be released exactly once, after every task, and see their results.
#[test]
fn nowa_counter_releases_owner_once() {
    builder(3).check(|| {
        struct Shared {
            counter: NowaCounter,
            latch: ThreadLatch,
            results: [Slot; 3],
            releases: AtomicUsize,
        }
        fn complete(shared: &Shared) {
            if shared.counter.complete() {
                shared.releases.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the latch is alive (the `Arc`).
                unsafe { Latch::set(&shared.latch) };
            }
        }
        let owner = thread::spawn(|| {
            let shared = Arc::new(Shared {
                counter: NowaCounter::new(),
                latch: ThreadLatch::for_current_thread(),
                results: [Slot::new(), Slot::new(), Slot::new()],
                releases: AtomicUsize::new(0),
            });

            shared.counter.spawn_on_owner_thread();
            let first = {
                let shared = shared.clone();
                thread::spawn(move || {
                    shared.results[0].write(1);
                    complete(&shared);
                })
            };
            shared.counter.spawn_on_owner_thread();
            let second = {
                let shared = shared.clone();
                thread::spawn(move || {
                    shared.counter.spawn_elsewhere();
                    let nested = {
                        let shared = shared.clone();
                        thread::spawn(move || {
                            shared.results[2].write(3);
                            complete(&shared);
                        })
                    };
                    shared.results[1].write(2);
                    complete(&shared);
                    nested
                })
            };

            let all_done_at_end = shared.counter.end_of_body();
            if !all_done_at_end {
                shared.latch.core().wait_blocking();
            }
            let values: Vec<u32> = shared.results.iter().map(Slot::read).collect();
            assert_eq!(values, [1, 2, 3]);
            (shared, all_done_at_end, first, second)
        });
        // The main thread joins the task threads (see the module docs).
        let (shared, all_done_at_end, first, second) = owner.join().unwrap();
        first.join().unwrap();
        second.join().unwrap().join().unwrap();
        let releases = shared.releases.load(Ordering::Relaxed);
        assert_eq!(
            releases,
            usize::from(!all_done_at_end),
            "released {releases} times"
        );
    });
}

/// A task of the task-state models: the real state word, a future (a cell
/// that polls and the drop write, so loom checks that they never overlap),
/// the output slot, the `JoinHandle`'s waker slot, and counts of what must
/// happen exactly once.
struct ModelTask {
    state: crate::task::state::State,
    /// Polls so far; `u32::MAX` once dropped.
    future: UnsafeCell<u32>,
    output: UnsafeCell<Option<u32>>,
    /// The id of the waker the handle stored.
    join_waker: UnsafeCell<u32>,
    output_drops: AtomicUsize,
    frees: AtomicUsize,
    /// Set by a model's waker just before it wakes the task.
    wake_requested: AtomicBool,
    /// Whether the latest poll saw `wake_requested`.
    last_poll_saw_wake: AtomicBool,
}

// SAFETY: the cells are accessed as the state word allows; loom checks
// that no two accesses overlap.
unsafe impl Sync for ModelTask {}
// SAFETY: as above.
unsafe impl Send for ModelTask {}

impl ModelTask {
    fn new() -> Arc<ModelTask> {
        Arc::new(ModelTask {
            state: crate::task::state::State::new(),
            future: UnsafeCell::new(0),
            output: UnsafeCell::new(None),
            join_waker: UnsafeCell::new(0),
            output_drops: AtomicUsize::new(0),
            frees: AtomicUsize::new(0),
            wake_requested: AtomicBool::new(false),
            last_poll_saw_wake: AtomicBool::new(false),
        })
    }

    /// Polls the future once (it stays pending).
    fn poll_future(&self) {
        // SAFETY: only between `start_poll` and `end_poll` or `complete`.
        self.future.with_mut(|polls| unsafe {
            assert_ne!(*polls, u32::MAX, "polled after it was dropped");
            *polls += 1;
        });
        // Relaxed: only the state word may order the waker's store before
        // this poll; that is what the model checks.
        let saw = self.wake_requested.load(Ordering::Relaxed);
        self.last_poll_saw_wake.store(saw, Ordering::Relaxed);
    }

    /// Drops the future and stores the cancellation (as `0`), then
    /// completes.
    fn cancel(&self) {
        // SAFETY: the caller runs the task (`RUNNING`).
        self.future.with_mut(|polls| unsafe { *polls = u32::MAX });
        self.finish(0);
    }

    /// Stores `output` and completes; drops it if no handle will, wakes the
    /// handle's waker if it left one. Returns the woken waker's id.
    fn finish(&self, output: u32) -> Option<u32> {
        // SAFETY: the task is `RUNNING`: the output is the poller's.
        self.output.with_mut(|slot| unsafe { *slot = Some(output) });
        let before = self.state.complete();
        if !before.has_join_interest() {
            self.drop_output();
        }
        // SAFETY: `JOIN_WAKER` was set: the slot is the task side's now.
        before
            .has_join_waker()
            .then(|| self.join_waker.with(|id| unsafe { *id }))
    }

    fn drop_output(&self) {
        // SAFETY: called once, by whoever the state word made the owner.
        let output = self.output.with_mut(|slot| unsafe { (*slot).take() });
        assert!(output.is_some(), "the output was dropped before it existed");
        self.output_drops.fetch_add(1, Ordering::Relaxed);
    }

    fn release(&self, last: bool) {
        if last {
            self.frees.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The run-queue entry's holder runs the task until it is idle,
    /// complete or cancelled (the future never finishes by itself).
    fn run_entry(&self) {
        use crate::task::state::{EndPoll, StartPoll};
        loop {
            if self.state.start_poll() == StartPoll::Cancel {
                self.cancel();
                self.release(self.state.ref_dec());
                return;
            }
            self.poll_future();
            match self.state.end_poll() {
                EndPoll::Idle { last } => return self.release(last),
                // The new entry has its own reference; the poller drops
                // the old entry's once it is queued (run here at once).
                EndPoll::Requeue => self.release(self.state.ref_dec()),
                EndPoll::Cancel => {
                    self.cancel();
                    self.release(self.state.ref_dec());
                    return;
                }
            }
        }
    }

    /// Polls the task to completion (output 7) on another thread, which
    /// publishes the id of the join waker it woke in `woken` (0: none).
    fn complete_elsewhere(task: &Arc<Self>, woken: &Arc<AtomicUsize>) -> thread::JoinHandle<()> {
        let (task, woken) = (task.clone(), woken.clone());
        thread::spawn(move || {
            task.state.start_poll();
            if let Some(id) = task.finish(7) {
                // Release: the handle's Acquire in `join_output` sees the
                // output.
                woken.store(id as usize, Ordering::Release);
            }
            task.release(task.state.ref_dec());
        })
    }

    /// The handle's side after registering waker `waker` (`ready`: it saw
    /// the completion itself): waits for exactly that waker's wake-up
    /// unless ready, reads the output, and drops the handle.
    fn join_output(
        &self,
        ready: bool,
        waker: usize,
        woken: &AtomicUsize,
        completer: thread::JoinHandle<()>,
    ) {
        if !ready {
            while woken.load(Ordering::Acquire) == 0 {
                thread::yield_now();
            }
            assert_eq!(woken.load(Ordering::Acquire), waker, "woke another waker");
        }
        assert!(self.state.load().is_complete());
        // SAFETY: complete, with join interest: the output is the handle's.
        assert_eq!(self.output.with(|slot| unsafe { *slot }), Some(7));
        completer.join().unwrap();
        self.drop_handle();
        assert_eq!(self.output_drops.load(Ordering::Relaxed), 1);
        assert_eq!(self.frees.load(Ordering::Relaxed), 1);
    }

    fn drop_handle(&self) {
        if self.state.drop_join_interest().is_err() {
            self.drop_output();
        }
        self.release(self.state.ref_dec());
    }
}

/// A waker consumed on another thread while the task is polled: the task
/// is polled again after the wake-up (it is requeued by the poller or
/// submitted by the waker, never both), and freed exactly once.
#[test]
fn task_wake_during_a_poll_is_not_lost() {
    use crate::task::state::Wake;
    builder(3).check(|| {
        let task = ModelTask::new();
        task.state.ref_inc(); // the waker's reference
        let waker = {
            let task = task.clone();
            thread::spawn(move || {
                // Relaxed: see `poll_future`.
                task.wake_requested.store(true, Ordering::Relaxed);
                match task.state.wake_by_val() {
                    Wake::Submit => {
                        // The entry has its own reference; the waker's is
                        // dropped once the entry is queued.
                        task.release(task.state.ref_dec());
                        true
                    }
                    Wake::Nothing { last } => {
                        task.release(last);
                        false
                    }
                }
            })
        };
        task.run_entry();
        if waker.join().unwrap() {
            task.run_entry();
        }
        assert!(
            task.last_poll_saw_wake.load(Ordering::Relaxed),
            "a wake-up was lost: no poll followed it"
        );
        task.drop_handle();
        assert_eq!(task.frees.load(Ordering::Relaxed), 1);
    });
}

/// The task completes while its `JoinHandle` is dropped: the output is
/// dropped exactly once (by the completer, or by the handle) and the task
/// is freed exactly once.
#[test]
fn task_output_is_dropped_exactly_once() {
    builder(3).check(|| {
        let task = ModelTask::new();
        let poller = {
            let task = task.clone();
            thread::spawn(move || {
                task.state.start_poll();
                task.finish(7);
                task.release(task.state.ref_dec());
            })
        };
        task.drop_handle();
        poller.join().unwrap();
        assert_eq!(task.output_drops.load(Ordering::Relaxed), 1);
        assert_eq!(task.frees.load(Ordering::Relaxed), 1);
    });
}

/// The `JoinHandle` registers a waker while the task completes: either
/// the handle sees the completion at once, or the completer wakes exactly
/// the waker it registered; then the handle reads the output.
#[test]
fn task_join_waker_is_woken_or_sees_completion() {
    builder(3).check(|| {
        let task = ModelTask::new();
        let woken = Arc::new(AtomicUsize::new(0));
        let completer = ModelTask::complete_elsewhere(&task, &woken);
        // The handle's poll: register waker 42 unless complete.
        let ready = task.state.load().is_complete() || {
            // SAFETY: `JOIN_WAKER` is clear: the slot is the handle's.
            task.join_waker.with_mut(|id| unsafe { *id = 42 });
            task.state.set_join_waker().is_err()
        };
        task.join_output(ready, 42, &woken, completer);
    });
}

/// `abort` races a poll: the future is dropped exactly once, never polled
/// afterwards, the task ends complete and cancelled, and is freed once.
#[test]
fn task_abort_races_a_poll() {
    use crate::task::state::Wake;
    builder(3).check(|| {
        let task = ModelTask::new();
        let aborter = {
            let task = task.clone();
            thread::spawn(move || task.state.abort() == Wake::Submit)
        };
        task.run_entry();
        if aborter.join().unwrap() {
            task.run_entry();
        }
        let state = task.state.load();
        assert!(state.is_complete() && state.is_cancelled(), "{state:?}");
        // SAFETY: complete: nobody touches the future any more.
        task.future
            .with(|polls| unsafe { assert_eq!(*polls, u32::MAX) });
        task.drop_handle();
        assert_eq!(task.output_drops.load(Ordering::Relaxed), 1);
        assert_eq!(task.frees.load(Ordering::Relaxed), 1);
    });
}

/// The `JoinHandle` replaces its waker (polled again from another task)
/// while the task completes: the slot is never written while the task side
/// reads it, and the completer wakes the new waker, or the handle sees the
/// completion itself.
#[test]
fn task_join_waker_replaced_during_completion() {
    builder(3).check(|| {
        let task = ModelTask::new();
        // First poll of the handle: waker 1 registered before the race.
        // SAFETY: `JOIN_WAKER` is clear: the slot is the handle's.
        task.join_waker.with_mut(|id| unsafe { *id = 1 });
        assert!(task.state.set_join_waker().is_ok());
        let woken = Arc::new(AtomicUsize::new(0));
        let completer = ModelTask::complete_elsewhere(&task, &woken);
        // Second poll, with waker 2: take the slot back, write, hand over.
        let ready = task.state.unset_join_waker().is_err() || {
            // SAFETY: `JOIN_WAKER` is clear again: the slot is the handle's.
            task.join_waker.with_mut(|id| unsafe { *id = 2 });
            task.state.set_join_waker().is_err()
        };
        task.join_output(ready, 2, &woken, completer);
    });
}

/// A lock-free queue of entry ids for the injector models: pushing is a
/// Release store, popping an Acquire load and CAS, and nothing else orders them
/// (a mutex would order the injector and the closer by itself and hide a
/// missing fence). Order is not kept; the models do not need it.
#[derive(Default)]
struct ModelQueue {
    /// Entry id plus one; zero when empty.
    slots: [AtomicUsize; 4],
    next: AtomicUsize,
}

impl crate::task::inject::EntryQueue for ModelQueue {
    type Entry = usize;

    fn push(&self, entry: usize) {
        let slot = self.next.fetch_add(1, Ordering::Relaxed);
        self.slots[slot].store(entry + 1, Ordering::Release);
    }

    fn pop(&self) -> Option<usize> {
        self.slots.iter().find_map(|slot| {
            // A load, then a CAS from what it saw: loom 0.7 lets a
            // non-SeqCst swap read a stale value, and a swap that read a
            // stale zero would erase an entry.
            let entry = slot.load(Ordering::Acquire);
            (entry != 0
                && slot
                    .compare_exchange(entry, 0, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok())
            .then(|| entry - 1)
        })
    }

    fn is_empty(&self) -> bool {
        self.slots
            .iter()
            .all(|slot| slot.load(Ordering::Acquire) == 0)
    }
}

/// Two entries are injected while the pool closes its injector: each is
/// cancelled exactly once (by the closer's drain, by its injecting thread,
/// or refused at the door) and none is left in the queue, where nobody
/// would ever read it.
#[test]
fn task_injected_while_closing_is_never_stranded() {
    use crate::task::inject::ClosableInjector;
    builder(3).check(|| {
        let injector = Arc::new(ClosableInjector::new(ModelQueue::default()));
        let cancelled: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let cancel = {
            let cancelled = cancelled.clone();
            move |entry: usize| {
                cancelled[entry].fetch_add(1, Ordering::Relaxed);
            }
        };
        let injecting = {
            let (injector, cancel) = (injector.clone(), cancel.clone());
            thread::spawn(move || {
                injector.inject(0, &cancel);
                injector.inject(1, &cancel);
            })
        };
        injector.close(&cancel);
        injecting.join().unwrap();
        assert!(injector.is_empty(), "an entry was stranded in the injector");
        for (entry, count) in cancelled.iter().enumerate() {
            assert_eq!(
                count.load(Ordering::Relaxed),
                1,
                "entry {entry} was not cancelled exactly once"
            );
        }
    });
}

/// The wake-up path from outside the pool: a thread wakes an idle task
/// (the real state word), injects its entry and notifies (the real sleep
/// protocol) while the only worker looks for work and falls asleep. The
/// worker must take the entry and poll the task after the wake-up.
#[test]
fn task_woken_from_outside_reaches_a_sleeping_worker() {
    use crate::task::inject::ClosableInjector;
    use crate::task::state::Wake;
    builder(3).check(|| {
        let task = ModelTask::new();
        task.state.ref_inc(); // the waker's reference
        task.run_entry(); // the first poll: now idle, waiting for the waker
        let sleep = Arc::new(Sleep::new(1));
        let injector = Arc::new(ClosableInjector::new(ModelQueue::default()));
        let worker = {
            let (task, sleep, injector) = (task.clone(), sleep.clone(), injector.clone());
            thread::spawn(move || {
                let never_set = CoreLatch::new();
                sleep.start_searching();
                loop {
                    if injector.take().is_some() {
                        task.run_entry();
                        break;
                    }
                    sleep.sleep(0, &never_set, || !injector.is_empty(), || ());
                }
                sleep.stop_searching();
            })
        };
        let worker_thread = worker.thread().clone();
        // Relaxed: see `poll_future`.
        task.wake_requested.store(true, Ordering::Relaxed);
        match task.state.wake_by_val() {
            Wake::Submit => {
                assert!(injector.inject(0, |_| panic!("the injector is open")));
                sleep.notify(|_| worker_thread.unpark());
                // The waker's reference, after queueing the entry.
                task.release(task.state.ref_dec());
            }
            Wake::Nothing { .. } => panic!("an idle task's wake-up submits it"),
        }
        worker.join().unwrap();
        assert!(
            task.last_poll_saw_wake.load(Ordering::Relaxed),
            "the wake-up was lost: no poll followed it"
        );
        task.drop_handle();
        assert_eq!(task.frees.load(Ordering::Relaxed), 1);
    });
}

/// A worker falls asleep blocked in the I/O driver's poll (the real
/// `DriverSeat`; the eventfd modeled as a flag under a mutex with a
/// condvar, which a thread unpark does not reach) while a producer makes
/// work visible and wakes a sleeper. Either the worker's look after
/// taking the seat sees that it was woken, or the waker sees it in the
/// seat and writes the eventfd: it never blocks forever.
#[test]
fn driver_seat_no_lost_wakeup() {
    use crate::driver_seat::DriverSeat;
    use loom::sync::{Condvar, Mutex};

    builder(3).check(|| {
        let sleep = Arc::new(Sleep::new(1));
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

/// `fork::join`'s protocol: the parent's worker polls `a` while `b`'s poll
/// waits in its queue; a thief takes it (or the parent takes it back: the
/// queue hands each entry out once, modeled by a swap), polls `b` with the
/// parent task's waker, and sets the job's latch (the real `CoreLatch`);
/// `b` waits on a channel that a third thread fills and wakes the parent
/// task through the real task state word. The parent's poll returns only
/// after `b`'s poll is over (the latch), so `b` is never polled twice at
/// once (loom checks the accesses to its cell); the join suspends
/// (`Pending`) and the channel's wake-up resumes the task exactly once
/// more: it completes with the sent value, with no lost and no double
/// resumption.
#[test]
fn fork_join_suspends_and_resumes_exactly_once() {
    use crate::task::state::{EndPoll, StartPoll, State, Wake};
    use loom::sync::Mutex;

    /// `b`: not started, waiting for the channel, or done with its value.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum B {
        Start,
        Waiting,
        Done(u32),
    }

    struct Join {
        task: State,
        /// The queue entry of `b`'s first poll exists (pushed during the
        /// parent's first poll), and was taken, once, by the parent or by
        /// the thief.
        pushed: AtomicBool,
        taken: AtomicBool,
        latch: CoreLatch,
        b: UnsafeCell<B>,
        /// The channel: its value, and whether a waker (the task's) waits.
        channel: Mutex<(Option<u32>, bool)>,
        /// Run-queue entries made by wake-ups (`Wake::Submit`).
        submitted: AtomicUsize,
        completed: AtomicUsize,
    }

    impl Join {
        /// One poll of `b` (by whoever holds it).
        fn poll_b(&self) {
            // SAFETY: the caller holds `b` (it took the queue entry, or it
            // is the parent after the latch); loom checks it.
            self.b.with_mut(|b| unsafe {
                if let B::Done(_) = *b {
                    return;
                }
                let mut channel = self.channel.lock().unwrap();
                *b = match channel.0 {
                    Some(value) => B::Done(value),
                    None => {
                        channel.1 = true;
                        B::Waiting
                    }
                };
            });
        }

        /// The parent task's poll of the join: `true` when it completed.
        fn poll_join(&self, first: bool) -> bool {
            // `b`'s first poll goes to the queue; `a` is ready at once;
            // then `b`'s poll is taken back, or it was stolen and the
            // parent waits for the thief's poll.
            if first {
                // Release: a push publishes the entry (the queue's own
                // Release); the thief's Acquire pairs with it.
                self.pushed.store(true, Ordering::Release);
            }
            if first && self.taken.swap(true, Ordering::Relaxed) {
                while !self.latch.probe() {
                    thread::yield_now();
                }
            } else {
                self.poll_b();
            }
            // SAFETY: `b`'s poll is over (inline, or the latch was seen
            // set): the parent holds it.
            self.b.with(|b| unsafe { matches!(*b, B::Done(_)) })
        }

        /// Runs the task from one run-queue entry until it is idle or
        /// complete.
        fn run(&self, first: &mut bool) {
            assert_eq!(self.task.start_poll(), StartPoll::Poll);
            loop {
                let done = self.poll_join(std::mem::take(first));
                if done {
                    self.task.complete();
                    self.completed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                match self.task.end_poll() {
                    EndPoll::Idle { .. } => return,
                    EndPoll::Requeue => assert_eq!(self.task.start_poll(), StartPoll::Poll),
                    EndPoll::Cancel => unreachable!("nobody aborts"),
                }
            }
        }
    }

    builder(3).check(|| {
        let join = Arc::new(Join {
            task: State::new(),
            pushed: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            latch: CoreLatch::new(),
            b: UnsafeCell::new(B::Start),
            channel: Mutex::new((None, false)),
            submitted: AtomicUsize::new(0),
            completed: AtomicUsize::new(0),
        });
        let thief = {
            let join = join.clone();
            thread::spawn(move || {
                // Acquire: pairs with the push. The swap is Relaxed: the
                // queue's exactly-once hand-off is the model's assumption
                // (checked by bwos-queue's own models).
                while !join.pushed.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                if !join.taken.swap(true, Ordering::Relaxed) {
                    join.poll_b();
                    join.latch.set();
                }
            })
        };
        let sender = {
            let join = join.clone();
            thread::spawn(move || {
                let waiting = {
                    let mut channel = join.channel.lock().unwrap();
                    channel.0 = Some(5);
                    std::mem::take(&mut channel.1)
                };
                if waiting && join.task.wake_by_ref() == Wake::Submit {
                    join.submitted.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let mut first = true;
        join.run(&mut first);
        thief.join().unwrap();
        sender.join().unwrap();
        let mut runs = 0;
        while runs < join.submitted.load(Ordering::Relaxed) {
            runs += 1;
            join.run(&mut first);
        }
        assert_eq!(
            join.completed.load(Ordering::Relaxed),
            1,
            "the join completes exactly once: no lost or double resumption"
        );
        assert!(join.submitted.load(Ordering::Relaxed) <= 1, "resumed twice");
        // SAFETY: every thread is done.
        assert_eq!(join.b.with(|b| unsafe { *b }), B::Done(5));
    });
}

/// The boundary of a scoped fork region: a thief that wants to poll a
/// child races the closer. Either the thief polls and the closer waits
/// for it, or the thief finds the region closed and does not touch the
/// child: the child's borrowed data (a loom cell, written by the poll) is
/// never accessed by the thief after the closer went on to free it.
#[test]
fn fork_boundary_no_poll_after_close() {
    use crate::fork_boundary::Boundary;

    builder(3).check(|| {
        let boundary = Arc::new(Boundary::default());
        let borrowed = Arc::new(UnsafeCell::new(0u32));
        let thief = {
            let (boundary, borrowed) = (boundary.clone(), borrowed.clone());
            thread::spawn(move || {
                if boundary.enter() {
                    // SAFETY: the boundary lets this poll run only while
                    // the closer waits; loom checks it.
                    borrowed.with_mut(|value| unsafe { *value += 1 });
                    boundary.exit();
                }
            })
        };
        boundary.close();
        while boundary.busy() {
            thread::yield_now();
        }
        // The closer frees what the children borrowed.
        // SAFETY: no poll is in flight or can start (the model checks it).
        borrowed.with_mut(|value| unsafe { *value = u32::MAX });
        thief.join().unwrap();
    });
}

/// Work lists (`worklist/core.rs`): two participants, each with its own
/// LIFO queue of two one-item blocks (so pushes grant blocks at once and
/// the third item overflows to the spill); the owner seeds three items,
/// item 1 makes item 4, and each participant takes items (own queue, then
/// the spill, then one steal attempt on the other) until a look finds
/// nothing, then leaves — the thief possibly while the owner still pushes
/// or spills. Every item must have been processed exactly once when both
/// have left: none is stranded in a queue or in the spill.
#[test]
fn worklist_no_item_is_lost_when_a_participant_leaves() {
    use bwos_queue::{Config, Steal, lifo};

    use crate::worklist_core::{Spill, next_item, push_or_spill};

    type Counts = Arc<[AtomicUsize; 5]>;

    fn process(item: u32, queue: &lifo::Worker<u32>, spill: &Spill<u32>, counts: &Counts) {
        counts[item as usize].fetch_add(1, Ordering::Relaxed);
        if item == 1 {
            push_or_spill(queue, spill, 4);
        }
    }

    fn participate(
        queue: &lifo::Worker<u32>,
        victim: &lifo::Stealer<u32>,
        spill: &Spill<u32>,
        counts: &Counts,
    ) {
        // A lost race counts as finding nothing: leaving then is allowed.
        let steal = |thief: &lifo::Worker<u32>| match victim.steal_batch_and_pop(thief) {
            Steal::Success(item) => Some(item),
            Steal::Empty | Steal::Retry => None,
        };
        while let Some(item) = next_item(queue, spill, steal) {
            process(item, queue, spill, counts);
        }
    }

    builder(3).check(|| {
        let config = Config::new(2, 1).unwrap();
        let (owner_queue, owner_stealer) = lifo::new::<u32>(config);
        let (thief_queue, thief_stealer) = lifo::new::<u32>(config);
        let spill = Arc::new(Spill::new());
        let counts: Counts = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
        for seed in 1..=3 {
            push_or_spill(&owner_queue, &spill, seed);
        }
        let thief = {
            let (spill, counts) = (spill.clone(), counts.clone());
            thread::spawn(move || participate(&thief_queue, &owner_stealer, &spill, &counts))
        };
        participate(&owner_queue, &thief_stealer, &spill, &counts);
        thief.join().unwrap();
        for item in 1..=4 {
            assert_eq!(
                counts[item].load(Ordering::Relaxed),
                1,
                "item {item} processed a wrong number of times"
            );
        }
        assert!(spill.is_empty());
        assert_eq!(owner_queue.pop(), None);
    });
}
