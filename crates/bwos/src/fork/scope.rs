//! `fork::scope`: spawn any number of borrowing children; the scope's
//! future completes when the body and every child have.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use super::child::Child;
use super::frame::{Boxed, boxed};
use crate::worker::WorkerThread;

/// Runs `body` with a [`Scope`] to spawn children into; the returned future
/// completes with the body's output once the body and every child spawned
/// into the scope (by the body or by other children) have completed: the
/// scope's end is Nowa's sync.
///
/// Children may borrow anything that outlives the scope (`'env`). Each
/// poll of the scope's future polls the body first, then every child that
/// was spawned or may have been woken since, in parallel: the children's
/// polls are split in halves with [`fork::join`](super::join)'s mechanism,
/// so idle workers steal them. Children that wait do not block the worker.
///
/// # Panics
/// A panic in the body or in a child is caught; the other children still
/// run to completion, then the first panic (in time) resumes in the task
/// that awaits the scope.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let values: Vec<u64> = (1..=100).collect();
/// let total = AtomicU64::new(0);
/// bwos::block_on(bwos::fork::scope(|s| async {
///     for chunk in values.chunks(10) {
///         let total = &total;
///         s.spawn(async move {
///             total.fetch_add(chunk.iter().sum(), Ordering::Relaxed);
///         });
///     }
/// }));
/// assert_eq!(total.into_inner(), 5050);
/// ```
pub fn scope<'env, F, Fut>(body: F) -> ScopeFuture<'env, Fut>
where
    F: FnOnce(Scope<'env>) -> Fut,
    Fut: Future + Send + 'env,
    Fut::Output: Send,
{
    let shared = Arc::new(Shared {
        spawned: Mutex::new(Spawned {
            children: Vec::new(),
            ended: false,
        }),
    });
    let body = body(Scope {
        shared: Arc::clone(&shared),
    });
    ScopeFuture {
        body: Child::Running(body),
        children: Vec::new(),
        first_panic: None,
        shared,
    }
}

/// A handle to spawn children into a [`scope`]; cheap to clone (children
/// that spawn more children capture a clone).
pub struct Scope<'env> {
    shared: Arc<Shared<'env>>,
}

impl Clone for Scope<'_> {
    fn clone(&self) -> Self {
        Scope {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

struct Shared<'env> {
    spawned: Mutex<Spawned<'env>>,
}

/// Children spawned since the scope's future last collected them.
struct Spawned<'env> {
    children: Vec<Boxed<'env, ()>>,
    /// The scope's future completed or was dropped.
    ended: bool,
}

impl<'env> Scope<'env> {
    /// Spawns `child` into the scope: the scope's future polls it (or lets
    /// a thief poll it) at its next poll, which is right after the current
    /// poll of the body or child that spawns it, and does not complete
    /// before `child` has. The child's frame comes from the worker's frame
    /// cache ([`boxed`](super::boxed)).
    ///
    /// # Panics
    /// If the scope has ended (its future completed or was dropped), which
    /// only a handle smuggled out of the scope can observe: the child could
    /// never run.
    pub fn spawn<F>(&self, child: F)
    where
        F: Future<Output = ()> + Send + 'env,
    {
        let child = boxed(child);
        let mut spawned = self
            .shared
            .spawned
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert!(
            !spawned.ended,
            "bwos::fork::Scope::spawn: the scope has ended (its future completed or was \
             dropped), so the child could never run"
        );
        spawned.children.push(child);
    }
}

/// The future of [`scope`]: the body's output, once the body and every
/// child completed.
///
/// Dropping it drops the body and every child that has not completed; no
/// thread polls them at that point (see the [module docs](super)).
#[must_use = "futures do nothing unless polled"]
pub struct ScopeFuture<'env, Fut: Future> {
    body: Child<Fut>,
    /// Children that have not completed (`Boxed` frames: they never move).
    children: Vec<Child<Boxed<'env, ()>>>,
    first_panic: Option<Box<dyn Any + Send>>,
    shared: Arc<Shared<'env>>,
}

impl<Fut: Future> ScopeFuture<'_, Fut> {
    /// Moves newly spawned children to `children`; `true` if there were
    /// any. With `end_if_idle`, ends the scope if there were none (under
    /// the lock, so no spawn slips in between).
    fn collect_spawned(&mut self, end_if_idle: bool) -> bool {
        let mut spawned = self
            .shared
            .spawned
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if spawned.children.is_empty() {
            spawned.ended |= end_if_idle;
            return false;
        }
        self.children
            .extend(spawned.children.drain(..).map(Child::Running));
        true
    }

    fn record(&mut self, payload: Box<dyn Any + Send>) {
        // The first panic wins; later ones are dropped here, as ordinary
        // values.
        if self.first_panic.is_none() {
            self.first_panic = Some(payload);
        }
    }
}

impl<Fut> Future for ScopeFuture<'_, Fut>
where
    Fut: Future + Send,
    Fut::Output: Send,
{
    type Output = Fut::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // SAFETY: `body` is structurally pinned (polled and dropped in
        // place); nothing else of the scope's future needs pinning (the
        // children live in `Boxed` frames).
        let this = unsafe { self.get_unchecked_mut() };
        let waker = cx.waker();
        // SAFETY: pinned (above).
        unsafe { this.body.poll_once(waker) };
        if let Child::Panicked(_) = this.body {
            if let Err(payload) = this.body.take() {
                this.record(payload);
            }
        }
        // Every child that was already there may have been woken; the
        // ones spawned meanwhile have not been polled yet. Children spawned
        // during a round are polled in the next one.
        let mut first_unpolled = 0;
        loop {
            this.collect_spawned(false);
            if first_unpolled == this.children.len() {
                break;
            }
            poll_all(&mut this.children[first_unpolled..], waker);
            first_unpolled = this.children.len();
        }
        let mut index = 0;
        while index < this.children.len() {
            match &this.children[index] {
                Child::Running(_) => index += 1,
                _ => {
                    if let Err(payload) = this.children.swap_remove(index).take() {
                        this.record(payload);
                    }
                }
            }
        }
        if this.body.is_running() || !this.children.is_empty() {
            return Poll::Pending;
        }
        if this.collect_spawned(true) {
            // Spawned after the last round (only a handle smuggled out of
            // the scope can do that): poll them next time.
            waker.wake_by_ref();
            return Poll::Pending;
        }
        if let Some(payload) = this.first_panic.take() {
            std::panic::resume_unwind(payload);
        }
        match this.body.take() {
            Ok(output) => Poll::Ready(output),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
}

impl<Fut: Future> Drop for ScopeFuture<'_, Fut> {
    fn drop(&mut self) {
        // Children dropped here may (oddly) spawn from their destructors:
        // drop until nothing is left, then end the scope.
        self.children.clear();
        while self.collect_spawned(true) {
            self.children.clear();
        }
    }
}

/// Polls every child of `children`, splitting the slice in halves with
/// `join`'s stealable second half; returns once every poll is over.
fn poll_all(children: &mut [Child<Boxed<'_, ()>>], waker: &Waker) {
    match children {
        [] => {}
        // SAFETY: a `Child<Boxed>`'s future lives in its frame and never
        // moves, whatever happens to the `Child`.
        [child] => unsafe { child.poll_once(waker) },
        _ => {
            let worker = WorkerThread::current();
            let (left, right) = children.split_at_mut(children.len() / 2);
            if worker.is_null() {
                poll_all(left, waker);
                poll_all(right, waker);
                return;
            }
            // SAFETY: the current worker lives on this thread's stack while
            // the thread runs pool work, which includes this poll.
            let worker = unsafe { &*worker };
            super::grow_stack_if_needed(worker, || {
                crate::join::join_in_worker(
                    worker,
                    || poll_all(left, waker),
                    || poll_all(right, waker),
                )
            });
        }
    }
}
