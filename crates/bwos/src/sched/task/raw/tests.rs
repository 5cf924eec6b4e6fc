//! The task allocation, wakers and `JoinHandle` with a test scheduler (a
//! locked `VecDeque`), single-threaded and with wakes from other threads.
//! These run under Miri too (`cargo +nightly miri test -p bwos --lib
//! task::`), which checks the unsafe code for leaks, double frees and
//! aliasing.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::{JoinError, JoinHandle, Notified, Schedule, spawn};

#[derive(Default)]
struct Queue(Mutex<VecDeque<Notified>>);

impl Schedule for Arc<Queue> {
    fn schedule(&self, task: Notified) {
        self.0.lock().unwrap().push_back(task);
    }
}

impl Queue {
    fn pop(&self) -> Option<Notified> {
        self.0.lock().unwrap().pop_front()
    }

    fn run_all(&self) -> usize {
        let mut ran = 0;
        while let Some(task) = self.pop() {
            task.run();
            ran += 1;
        }
        ran
    }
}

/// A waker that records that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn poll_handle<T>(handle: &mut JoinHandle<T>, flag: &Arc<Flag>) -> Poll<Result<T, JoinError>> {
    let waker = Waker::from(flag.clone());
    Pin::new(handle).poll(&mut Context::from_waker(&waker))
}

/// The handle's outcome, which must be ready.
fn outcome<T>(handle: &mut JoinHandle<T>) -> Result<T, JoinError> {
    match poll_handle(handle, &Arc::new(Flag::default())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => panic!("the task has not finished"),
    }
}

/// A task whose future holds a drop counter and returns 1; the counter
/// counts the future's drop.
fn guarded_task(queue: &Arc<Queue>) -> (Notified, JoinHandle<u32>, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(drops.clone());
    let (task, handle) = spawn(
        async move {
            let _guard = guard;
            1
        },
        queue.clone(),
    );
    (task, handle, drops)
}

/// Counts its drops.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Pending until `wakes` wake-ups came, each through a waker it handed to
/// `park` (which decides who calls it and when).
struct CountDown<P: FnMut(Waker)> {
    left: usize,
    park: P,
    _guard: DropCounter,
}

impl<P: FnMut(Waker) + Unpin> Future for CountDown<P> {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        if self.left == 0 {
            return Poll::Ready(42);
        }
        self.left -= 1;
        let waker = cx.waker().clone();
        (self.park)(waker);
        Poll::Pending
    }
}

#[test]
fn a_ready_task_delivers_its_output_to_the_handle() {
    let queue = Arc::new(Queue::default());
    let (task, mut handle) = spawn(async { 7 }, queue.clone());
    let flag = Arc::new(Flag::default());
    assert!(poll_handle(&mut handle, &flag).is_pending());
    task.run();
    assert!(flag.0.load(Ordering::SeqCst), "completion wakes the handle");
    assert!(handle.is_finished());
    assert_eq!(
        poll_handle(&mut handle, &flag).map(Result::unwrap),
        Poll::Ready(7)
    );
}

#[test]
fn a_task_that_wakes_itself_is_requeued_until_it_finishes() {
    let queue = Arc::new(Queue::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let future = CountDown {
        left: 3,
        park: Waker::wake,
        _guard: DropCounter(drops.clone()),
    };
    let (task, mut handle) = spawn(future, queue.clone());
    queue.schedule(task);
    assert_eq!(queue.run_all(), 4, "one run per poll");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the future is dropped once"
    );
    let flag = Arc::new(Flag::default());
    assert!(matches!(
        poll_handle(&mut handle, &flag),
        Poll::Ready(Ok(42))
    ));
}

#[test]
fn a_panic_in_poll_reaches_the_handle() {
    let queue = Arc::new(Queue::default());
    let (task, mut handle) = spawn(
        async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
        },
        queue.clone(),
    );
    task.run();
    let error = outcome(&mut handle).expect_err("the task panicked");
    assert!(error.is_panic() && !error.is_cancelled());
    assert_eq!(error.to_string(), "task panicked");
    assert_eq!(*error.into_panic().downcast::<&str>().unwrap(), "boom");
}

#[test]
fn abort_before_the_first_poll_cancels() {
    let queue = Arc::new(Queue::default());
    let (task, mut handle, drops) = guarded_task(&queue);
    handle.abort();
    task.run();
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the future was dropped");
    let error = outcome(&mut handle).expect_err("cancelled");
    assert!(error.is_cancelled());
    assert_eq!(format!("{error:?}"), "JoinError::Cancelled");
}

/// A task's future that parks its waker in `parked` on its first poll and
/// counts its drop in `drops`, with the queue to spawn it on.
#[allow(clippy::type_complexity)]
fn waiting_task() -> (
    Arc<Queue>,
    Arc<Mutex<Option<Waker>>>,
    Arc<AtomicUsize>,
    impl Future<Output = usize> + Send + 'static,
) {
    let queue = Arc::new(Queue::default());
    let parked = Arc::new(Mutex::new(None));
    let drops = Arc::new(AtomicUsize::new(0));
    let future = CountDown {
        left: 1,
        park: {
            let parked = parked.clone();
            move |waker| *parked.lock().unwrap() = Some(waker)
        },
        _guard: DropCounter(drops.clone()),
    };
    (queue, parked, drops, future)
}

#[test]
fn abort_of_a_waiting_task_queues_its_cancellation() {
    let (queue, parked, drops, future) = waiting_task();
    let (task, mut handle) = spawn(future, queue.clone());
    task.run();
    assert_eq!(queue.run_all(), 0, "the task waits for its waker");
    handle.abort();
    assert_eq!(queue.run_all(), 1, "abort queued the cancellation");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // The stale waker wakes a complete task: nothing is queued.
    parked.lock().unwrap().take().unwrap().wake();
    assert_eq!(queue.run_all(), 0);
    assert!(outcome(&mut handle).is_err_and(|e| e.is_cancelled()));
}

// Mutation caught: `AbortHandle::clone` without its `ref_inc` (the clones
// then release a reference they never took: Miri reports the task freed
// while the handles still point to it, and the count check underflows).
#[test]
fn abort_handles_cancel_a_waiting_task_and_outlive_it() {
    let (queue, parked, drops, future) = waiting_task();
    let (task, mut handle) = spawn(future, queue.clone());
    let abort = handle.abort_handle();
    let clones: Vec<_> = (0..3).map(|_| abort.clone()).collect();
    task.run();
    assert!(!abort.is_finished());
    // Aborted from another thread, through a clone.
    let remote = clones[0].clone();
    std::thread::spawn(move || remote.abort()).join().unwrap();
    assert_eq!(queue.run_all(), 1, "the abort queued the cancellation");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the future was dropped");
    assert!(clones.iter().all(super::AbortHandle::is_finished));
    assert!(outcome(&mut handle).is_err_and(|e| e.is_cancelled()));
    drop(handle);
    drop(parked.lock().unwrap().take());
    // The abort handles hold the last references now: aborting a finished
    // task does nothing, and the last drop frees the cell.
    abort.abort();
    assert_eq!(queue.run_all(), 0);
    drop(clones);
    assert!(abort.is_finished());
    drop(abort);
}

#[test]
fn a_detached_task_runs_and_drops_its_output() {
    let queue = Arc::new(Queue::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let output = DropCounter(drops.clone());
    let (task, handle) = spawn(async move { output }, queue.clone());
    drop(handle);
    task.run();
    assert_eq!(drops.load(Ordering::SeqCst), 1, "nobody reads it: dropped");
}

#[test]
fn a_handle_dropped_after_completion_drops_the_output() {
    let queue = Arc::new(Queue::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let output = DropCounter(drops.clone());
    let (task, handle) = spawn(async move { output }, queue.clone());
    task.run();
    assert_eq!(drops.load(Ordering::SeqCst), 0, "kept for the handle");
    drop(handle);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn dropping_a_queued_entry_cancels_the_task() {
    let queue = Arc::new(Queue::default());
    let (task, mut handle, drops) = guarded_task(&queue);
    queue.schedule(task);
    drop(queue.pop());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(outcome(&mut handle).is_err_and(|e| e.is_cancelled()));
}

#[test]
fn a_handle_polled_with_another_waker_is_woken_through_the_new_one() {
    let queue = Arc::new(Queue::default());
    let (task, mut handle) = spawn(async { 3 }, queue.clone());
    let (first, second) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    assert!(poll_handle(&mut handle, &first).is_pending());
    assert!(poll_handle(&mut handle, &second).is_pending());
    task.run();
    assert!(second.0.load(Ordering::SeqCst));
    assert!(
        !first.0.load(Ordering::SeqCst),
        "the replaced waker is not woken"
    );
    assert!(matches!(
        poll_handle(&mut handle, &second),
        Poll::Ready(Ok(3))
    ));
}

/// A handle's waker whose drop panics: it is dropped with the task's
/// last reference, here the task's own waker, kept past the end by
/// whoever it gave it to (a timer entry on a worker, say).
struct PanicsOnDrop(Arc<AtomicUsize>);

impl Wake for PanicsOnDrop {
    fn wake(self: Arc<Self>) {}
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("the join waker's drop panics");
    }
}

// Mutation caught: `dealloc` dropping the cell with its join waker in it
// (the panic leaves the last reference's drop, here the test's).
#[test]
fn a_join_waker_whose_drop_panics_is_dropped_quietly_with_the_task() {
    let queue = Arc::new(Queue::default());
    let kept = Arc::new(Mutex::new(None::<Waker>));
    let drops = Arc::new(AtomicUsize::new(0));
    let future = CountDown {
        left: 1,
        park: {
            let kept = kept.clone();
            move |waker| *kept.lock().unwrap() = Some(waker)
        },
        _guard: DropCounter(drops.clone()),
    };
    let (task, mut handle) = spawn(future, queue.clone());
    let waker_drops = Arc::new(AtomicUsize::new(0));
    let join_waker = Waker::from(Arc::new(PanicsOnDrop(waker_drops.clone())));
    assert!(
        Pin::new(&mut handle)
            .poll(&mut Context::from_waker(&join_waker))
            .is_pending()
    );
    drop(join_waker);
    task.run();
    let task_waker = kept.lock().unwrap().take().expect("the first poll parks");
    task_waker.wake_by_ref();
    assert_eq!(queue.run_all(), 1);
    assert!(matches!(outcome(&mut handle), Ok(42)));
    drop(handle);
    assert_eq!(waker_drops.load(Ordering::SeqCst), 0, "the task is alive");
    drop(task_waker);
    assert_eq!(waker_drops.load(Ordering::SeqCst), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// Tasks woken from other threads while two threads run the queue: every
/// task finishes exactly once with its own value, and every future is
/// dropped once. Small under Miri, which is slow.
#[test]
fn wakes_from_other_threads_lose_nothing() {
    bwos_testkit::watchdog(
        "wakes_from_other_threads_lose_nothing",
        wakes_from_other_threads,
    );
}

fn wakes_from_other_threads() {
    let (tasks, wakes) = if cfg!(miri) { (4, 2) } else { (200, 5) };
    let queue = Arc::new(Queue::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let (send, receive) = std::sync::mpsc::channel::<Waker>();
    let mut handles = Vec::new();
    for value in 0..tasks {
        let send = send.clone();
        let future = CountDown {
            left: wakes,
            park: move |waker| send.send(waker).unwrap(),
            _guard: DropCounter(drops.clone()),
        };
        let (task, handle) = spawn(
            async move {
                assert_eq!(future.await, 42);
                value
            },
            queue.clone(),
        );
        queue.schedule(task);
        handles.push(handle);
    }
    drop(send);
    let done = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        // The wakers' thread: wakes every parked task, by value.
        let waker_thread = s.spawn(move || {
            for waker in receive {
                waker.wake();
            }
        });
        let runners: Vec<_> = (0..2)
            .map(|_| {
                let (queue, done) = (&queue, &done);
                s.spawn(move || {
                    while !done.load(Ordering::SeqCst) {
                        if queue.pop().map(Notified::run).is_none() {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let flag = Arc::new(Flag::default());
        for (value, handle) in handles.iter_mut().enumerate() {
            loop {
                match poll_handle(handle, &flag) {
                    Poll::Ready(result) => {
                        assert_eq!(result.unwrap(), value);
                        break;
                    }
                    Poll::Pending => std::thread::yield_now(),
                }
            }
        }
        done.store(true, Ordering::SeqCst);
        for runner in runners {
            runner.join().unwrap();
        }
        drop(waker_thread);
    });
    drop(handles);
    assert_eq!(drops.load(Ordering::SeqCst), tasks);
    assert_eq!(queue.run_all(), 0);
}

/// A scheduler that runs each entry before `schedule` returns, the extreme
/// of "another thread ran it at once", and then reads its own field (which
/// lives in the task): the task must outlive the call. Miri reports a use
/// after free (or a free under the protected `&self`) if the waker or the
/// poller hands its only reference to the entry.
struct RunAtOnce(Arc<AtomicUsize>);

impl Schedule for RunAtOnce {
    fn schedule(&self, task: Notified) {
        task.run();
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Spawns a detached `CountDown` of one wake-up on `RunAtOnce`; returns
/// the entry, the schedule counter and the drop counter.
fn run_at_once_task(
    park: impl FnMut(Waker) + Unpin + Send + 'static,
) -> (Notified, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (schedules, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let future = CountDown {
        left: 1,
        park,
        _guard: DropCounter(drops.clone()),
    };
    let (task, handle) = spawn(future, RunAtOnce(schedules.clone()));
    drop(handle);
    (task, schedules, drops)
}

/// The task of [`run_at_once_task`] was scheduled once, its future
/// dropped once, and its memory freed (it held the last clone of
/// `schedules` besides the test's).
fn assert_scheduled_once_and_freed(schedules: &Arc<AtomicUsize>, drops: &AtomicUsize) {
    assert_eq!(schedules.load(Ordering::SeqCst), 1);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the future is dropped once"
    );
    assert_eq!(Arc::strong_count(schedules), 1, "the task was freed");
}

#[test]
fn a_waker_woken_by_value_keeps_the_task_alive_while_it_is_scheduled() {
    let parked = Arc::new(Mutex::new(None));
    let slot = parked.clone();
    let (task, schedules, drops) =
        run_at_once_task(move |waker| *slot.lock().unwrap() = Some(waker));
    task.run();
    let waker = parked
        .lock()
        .unwrap()
        .take()
        .expect("the first poll parks a waker");
    // The waker holds the task's only reference; its entry runs the task
    // to completion inside `schedule`.
    waker.wake();
    assert_scheduled_once_and_freed(&schedules, &drops);
}

#[test]
fn a_task_requeued_by_its_own_poll_stays_alive_while_it_is_scheduled() {
    // The poll wakes the task by value while it runs, so the poller
    // requeues it; the requeued entry completes it inside `schedule`.
    let (task, schedules, drops) = run_at_once_task(Waker::wake);
    task.run();
    assert_scheduled_once_and_freed(&schedules, &drops);
}
