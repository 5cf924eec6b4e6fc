//! loom model: The async task state word (`sched/task/state.rs`): wake during a poll, completion against the `JoinHandle`'s drop and waker, abort against a poll.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use super::builder;

/// A task of the task-state models: the real state word, a future (a cell
/// that polls and the drop write, so loom checks that they never overlap),
/// the output slot, the `JoinHandle`'s waker slot, and counts of what must
/// happen exactly once.
pub(super) struct ModelTask {
    pub(super) state: crate::sched::task::state::State,
    /// Polls so far; `u32::MAX` once dropped.
    pub(super) future: UnsafeCell<u32>,
    pub(super) output: UnsafeCell<Option<u32>>,
    /// The id of the waker the handle stored.
    pub(super) join_waker: UnsafeCell<u32>,
    pub(super) output_drops: AtomicUsize,
    pub(super) frees: AtomicUsize,
    /// Set by a model's waker just before it wakes the task.
    pub(super) wake_requested: AtomicBool,
    /// Whether the latest poll saw `wake_requested`.
    pub(super) last_poll_saw_wake: AtomicBool,
}

// SAFETY: the cells are accessed as the state word allows; loom checks
// that no two accesses overlap.
unsafe impl Sync for ModelTask {}
// SAFETY: as above.
unsafe impl Send for ModelTask {}

impl ModelTask {
    pub(super) fn new() -> Arc<ModelTask> {
        Arc::new(ModelTask {
            state: crate::sched::task::state::State::new(),
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

    pub(super) fn release(&self, last: bool) {
        if last {
            self.frees.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The run-queue entry's holder runs the task until it is idle,
    /// complete or cancelled (the future never finishes by itself).
    pub(super) fn run_entry(&self) {
        use crate::sched::task::state::{EndPoll, StartPoll};
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

    pub(super) fn drop_handle(&self) {
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
    use crate::sched::task::state::Wake;
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
    use crate::sched::task::state::Wake;
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
