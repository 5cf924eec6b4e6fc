//! `fork::scope`: spawn any number of borrowing children; the scope's
//! future completes when the body and every child have.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use super::boxed::{Boxed, boxed};
use super::child::Child;
use crate::join::join_in_worker;
use crate::sched::stack::with_worker_room;

/// Runs `body` with a [`Scope`] to spawn children into; the returned future
/// completes with the body's output once the body and every child spawned
/// into the scope (by the body or by other children) have completed: the
/// scope's end is Nowa's sync.
///
/// Children may borrow anything that outlives the scope (`'env`). Each
/// poll of the scope's future polls the body first, then the children
/// spawned or woken since the last poll (each child has a waker of its
/// own, so a wake-up costs one child's poll, not a poll of all), in
/// parallel: the children's polls are split in halves with
/// [`fork::join`](super::join)'s mechanism, so idle workers steal them.
/// Children that wait do not block the worker.
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
/// let (values_ref, total_ref) = (&values, &total);
/// // `async move` moves the handle `s` and the two references in.
/// bwos::block_on(bwos::fork::scope(|s| async move {
///     for chunk in values_ref.chunks(10) {
///         s.spawn(async move {
///             total_ref.fetch_add(chunk.iter().sum(), Ordering::Relaxed);
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
        slots: Vec::new(),
        free_slots: Vec::new(),
        live_children: 0,
        to_poll: Vec::new(),
        wake_list: Arc::default(),
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
        let mut spawned = lock(&self.shared.spawned);
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
    /// One slot per child that has not completed, and free slots (`None`)
    /// for the next spawns.
    slots: Vec<Option<Slot<'env>>>,
    free_slots: Vec<usize>,
    live_children: usize,
    /// Children to poll in the current poll: new or woken.
    to_poll: Vec<(usize, Slot<'env>)>,
    wake_list: Arc<WakeList>,
    first_panic: Option<Box<dyn Any + Send>>,
    shared: Arc<Shared<'env>>,
}

/// A child and its own waker (so that a wake-up polls that child only).
struct Slot<'env> {
    child: Child<Boxed<'env, ()>>,
    wake: Arc<ChildWake>,
    waker: Waker,
}

/// The children woken since the scope's future last looked, and the waker
/// of the task that awaits the scope.
#[derive(Default)]
struct WakeList {
    woken: Mutex<Vec<usize>>,
    parent: Mutex<Option<Waker>>,
}

/// The waker of one child: marks the child woken and wakes the parent.
struct ChildWake {
    slot: usize,
    /// Set by a wake-up, cleared before the child's next poll: a child is
    /// listed once however often it is woken meanwhile.
    woken: AtomicBool,
    list: Arc<WakeList>,
}

impl Wake for ChildWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel: the swap that lists the child pairs with the clearing
        // swap before its next poll, so that a wake-up after that clearing
        // lists it again.
        if self.woken.swap(true, Ordering::AcqRel) {
            return;
        }
        lock(&self.list.woken).push(self.slot);
        let parent = lock(&self.list.parent).clone();
        if let Some(parent) = parent {
            parent.wake();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'env, Fut: Future> ScopeFuture<'env, Fut> {
    /// Moves newly spawned children into slots and queues them for a
    /// poll; `true` if there were any. With `end_if_idle`, ends the scope
    /// if there were none (under the lock, so no spawn slips in between).
    fn collect_spawned(&mut self, end_if_idle: bool) -> bool {
        let mut spawned = lock(&self.shared.spawned);
        if spawned.children.is_empty() {
            spawned.ended |= end_if_idle;
            return false;
        }
        let children: Vec<Boxed<'env, ()>> = spawned.children.drain(..).collect();
        drop(spawned);
        for child in children {
            let slot = self.free_slots.pop().unwrap_or_else(|| {
                self.slots.push(None);
                self.slots.len() - 1
            });
            let wake = Arc::new(ChildWake {
                slot,
                woken: AtomicBool::new(false),
                list: Arc::clone(&self.wake_list),
            });
            let waker = Waker::from(Arc::clone(&wake));
            self.live_children += 1;
            self.to_poll.push((
                slot,
                Slot {
                    child: Child::Running(child),
                    wake,
                    waker,
                },
            ));
        }
        true
    }

    /// Queues the children woken since the last look for a poll.
    fn collect_woken(&mut self) {
        let woken = std::mem::take(&mut *lock(&self.wake_list.woken));
        for index in woken {
            // A stale index (a wake-up of a child that completed, or one
            // already queued) finds no slot.
            if let Some(slot) = self.slots.get_mut(index).and_then(Option::take) {
                self.to_poll.push((index, slot));
            }
        }
    }

    /// Puts the polled children back, or frees their slots.
    fn settle_polled(&mut self) {
        for (index, slot) in std::mem::take(&mut self.to_poll) {
            if slot.child.is_running() {
                self.slots[index] = Some(slot);
                continue;
            }
            let mut child = slot.child;
            if let Err(payload) = child.take() {
                self.record(payload);
            }
            self.live_children -= 1;
            self.free_slots.push(index);
        }
    }

    fn record(&mut self, payload: Box<dyn Any + Send>) {
        // The first panic wins; later ones are dropped here, as ordinary
        // values.
        if self.first_panic.is_none() {
            self.first_panic = Some(payload);
        }
    }

    /// Remembers the waker of the task that awaits the scope, for the
    /// children's wake-ups.
    fn register_parent(&self, waker: &Waker) {
        let mut parent = lock(&self.wake_list.parent);
        if !parent.as_ref().is_some_and(|known| known.will_wake(waker)) {
            *parent = Some(waker.clone());
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
        this.register_parent(cx.waker());
        // SAFETY: pinned (above).
        unsafe { this.body.poll_once(cx.waker()) };
        if let Child::Panicked(_) = this.body
            && let Err(payload) = this.body.take()
        {
            this.record(payload);
        }
        // Rounds: the children spawned or woken since the last round, in
        // parallel; children spawned or woken during a round are polled in
        // the next one.
        loop {
            this.collect_spawned(false);
            this.collect_woken();
            if this.to_poll.is_empty() {
                break;
            }
            for (_, slot) in &this.to_poll {
                // AcqRel: see `ChildWake::wake_by_ref`.
                slot.wake.woken.swap(false, Ordering::AcqRel);
            }
            poll_all(&mut this.to_poll);
            this.settle_polled();
        }
        if this.body.is_running() || this.live_children != 0 {
            return Poll::Pending;
        }
        if this.collect_spawned(true) {
            // Spawned after the last round (only a handle smuggled out of
            // the scope can do that): poll them next time.
            this.settle_polled_later();
            cx.waker().wake_by_ref();
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

impl<Fut: Future> ScopeFuture<'_, Fut> {
    /// Children collected at the very end stay queued: mark them woken so
    /// that the next poll takes them.
    fn settle_polled_later(&mut self) {
        for (index, slot) in std::mem::take(&mut self.to_poll) {
            slot.wake.woken.store(true, Ordering::Relaxed);
            lock(&self.wake_list.woken).push(index);
            self.slots[index] = Some(slot);
        }
    }
}

impl<Fut: Future> Drop for ScopeFuture<'_, Fut> {
    fn drop(&mut self) {
        // Children dropped here may (oddly) spawn from their destructors:
        // drop until nothing is left, then end the scope.
        self.slots.clear();
        self.to_poll.clear();
        while self.collect_spawned(true) {
            self.to_poll.clear();
        }
    }
}

/// Polls every child of `children` with its own waker, splitting the
/// slice in halves with `join`'s stealable second half; returns once every
/// poll is over.
fn poll_all(children: &mut [(usize, Slot<'_>)]) {
    match children {
        [] => {}
        // SAFETY: a `Child<Boxed>`'s future lives in its frame and never
        // moves, whatever happens to the `Child`.
        [(_, slot)] => unsafe { slot.child.poll_once(&slot.waker) },
        _ => {
            let (left, right) = children.split_at_mut(children.len() / 2);
            with_worker_room(|worker| match worker {
                Some(worker) => {
                    join_in_worker(worker, || poll_all(left), || poll_all(right));
                }
                None => {
                    poll_all(left);
                    poll_all(right);
                }
            });
        }
    }
}
