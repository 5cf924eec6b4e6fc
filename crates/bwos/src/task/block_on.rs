//! `block_on`: runs a future as a task of a pool and waits for it.
//!
//! The future may borrow from the caller's frame (it need not be
//! `'static`): the task is made from it with its lifetime erased, which is
//! sound because `block_on` does not return before the task has completed,
//! and a task drops its future before it completes (`Cell::finish` in
//! `raw.rs`), on every path: output, panic, cancellation. Nothing between
//! spawning and completion can unwind out of `block_on` (the wait runs
//! jobs that catch their panics; a guard aborts if bwos itself unwinds
//! there), so the borrowed frame outlives the future.
//!
//! The waiting thread is woken through the `JoinHandle`'s waker, which
//! sets a latch: a thread outside the pool parks on it; a worker (of this
//! pool or another) keeps running its pool's work until it is set, as
//! `install` does.

use std::future::Future;
use std::panic;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::executor::spawn_in;
use crate::sched::job::AbortOnUnwind;
use crate::sched::latch::{Latch, ThreadLatch};
use crate::sched::registry::Registry;

/// Runs `future` as a task of the current pool (the calling worker's pool,
/// the global pool outside pools) and returns its output; the calling
/// thread waits. A thread outside the pool blocks; a worker keeps running
/// its pool's work meanwhile. A panic in the future resumes here.
///
/// The future may borrow from the caller; it must be `Send`, since the
/// pool's workers poll it.
///
/// ```
/// let words = vec!["fork", "join"];
/// let total = bwos::block_on(async {
///     let length = bwos::task::spawn(async { 4 }).await.unwrap();
///     words.len() * length
/// });
/// assert_eq!(total, 8);
/// ```
///
/// # Panics
/// If the future panics (with its panic), or if the pool shut down before
/// the future completed (possible only when the future drops the last
/// handle of the pool it runs on).
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    Registry::with_current(|registry| block_on_in(registry, future))
}

/// [`block_on`] on `registry`'s pool.
pub(crate) fn block_on_in<F>(registry: &Arc<Registry>, future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    let mut output: Option<F::Output> = None;
    let slot = OutputSlot(&raw mut output);
    let task: Pin<Box<dyn Future<Output = ()> + Send + '_>> = Box::pin(async move {
        let value = future.await;
        // SAFETY: `output` outlives the task (see the module docs), and
        // nobody reads it before the task completes.
        unsafe { slot.write(value) };
    });
    // SAFETY: only the lifetime changes; the task completes, and with that
    // drops the future, before this frame's borrows end (module docs).
    let task: Pin<Box<dyn Future<Output = ()> + Send + 'static>> =
        unsafe { std::mem::transmute(task) };
    let guard = AbortOnUnwind::new("block_on's wait for its task");
    let mut handle = spawn_in(registry, task);
    let latch = Arc::new(LatchWaker(ThreadLatch::for_current_thread()));
    let waker = Waker::from(Arc::clone(&latch));
    let mut cx = Context::from_waker(&waker);
    let outcome = loop {
        if let Poll::Ready(outcome) = Pin::new(&mut handle).poll(&mut cx) {
            break outcome;
        }
        // The handle's waker fires once, at completion: one wait suffices,
        // and the poll after it returns `Ready`.
        latch.0.core().wait();
    };
    guard.disarm();
    match outcome {
        // Completion (Release) before the handle's `Ready` (Acquire): the
        // output is written.
        Ok(()) => output.expect("a completed block_on task wrote its output"),
        Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
        Err(_) => panic!(
            "bwos::block_on: the pool shut down before the future completed \
             (the future dropped the last handle of its own pool)"
        ),
    }
}

/// Where the task writes the future's output: a pointer into `block_on`'s
/// frame.
struct OutputSlot<T>(*mut Option<T>);

// SAFETY: the pointee is written once by the task's thread and read by the
// waiting thread after completion; `T: Send` lets the value move across.
unsafe impl<T: Send> Send for OutputSlot<T> {}

impl<T> OutputSlot<T> {
    /// # Safety
    /// The pointee is alive and nobody else accesses it meanwhile.
    unsafe fn write(self, value: T) {
        // SAFETY: forwarded from the caller.
        unsafe { *self.0 = Some(value) };
    }
}

/// The `JoinHandle`'s waker: sets the waiting thread's latch.
struct LatchWaker(ThreadLatch);

impl Wake for LatchWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // SAFETY: the `Arc` keeps the latch alive during the call.
        unsafe { Latch::set(&self.0) };
    }
}
