//! loom model: The closable task injector (`sched/task/inject.rs`): an entry injected while the pool closes, a task woken from outside reaching a sleeping worker.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::builder;
use super::task_state::ModelTask;
use crate::sched::idle::sleep::Sleepers;
use crate::sched::latch::CoreLatch;

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

impl crate::sched::task::inject::EntryQueue for ModelQueue {
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

    fn len(&self) -> usize {
        // Acquire: pairs with `push`'s Release store of the entry (a count
        // for the gauges; nothing is read through it).
        self.slots
            .iter()
            .filter(|slot| slot.load(Ordering::Acquire) != 0)
            .count()
    }
}

/// Two entries are injected while the pool closes its injector: each is
/// cancelled exactly once (by the closer's drain, by its injecting thread,
/// or refused at the door) and none is left in the queue, where nobody
/// would ever read it.
#[test]
fn task_injected_while_closing_is_never_stranded() {
    use crate::sched::task::inject::ClosableInjector;
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
    use crate::sched::task::inject::ClosableInjector;
    use crate::sched::task::state::Wake;
    builder(3).check(|| {
        let task = ModelTask::new();
        task.state.ref_inc(); // the waker's reference
        task.run_entry(); // the first poll: now idle, waiting for the waker
        let sleep = Arc::new(Sleepers::new(1));
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
