//! [`block_on`] and [`Region::join`]: fork/join with Nowa's suspension.
//! A thief that takes a child's step polls it while the parent is
//! suspended: the parent's poll returns `Pending` as soon as its own child
//! cannot go on, and the thief wakes it when its poll is over (whoever
//! finishes last continues the parent).
//!
//! That is sound only for children whose borrows outlive the thief's
//! poll, whatever the parent does (even `mem::forget`): so the children of
//! a region may borrow only what outlives the *blocking* [`block_on`] that
//! made the region, and `block_on` does not return before every poll of a
//! child has ended and no more can start (the region's boundary, a Dekker
//! pair checked with loom). A join's own memory stays valid when it is
//! forgotten (pinning), and dropping a join waits for a poll in flight.
//!
//! ```
//! use bwos::fork::{self, Boxed, Region};
//!
//! fn sum<'s, 'env>(region: Region<'s, 'env>, values: &'s [u64]) -> Boxed<'s, u64> {
//!     fork::boxed_with(move || async move {
//!         if values.len() <= 1024 {
//!             return values.iter().sum();
//!         }
//!         let (left, right) = values.split_at(values.len() / 2);
//!         let (a, b) = region.join(sum(region, left), sum(region, right)).await;
//!         a + b
//!     })
//! }
//!
//! let values: Vec<u64> = (0..100_000).collect();
//! assert_eq!(fork::block_on(|region| sum(region, &values)), 4_999_950_000);
//! ```

use std::future::Future;
use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use super::boundary::Boundary;
use super::boxed::Boxed;
use super::child::{Child, ChildSlot};
use super::join::{Fast, poll_sequential_fast};
use crate::sched::job::{HeapJob, JobRef};
use crate::sched::quietly;
use crate::sched::stack::with_worker_room;
use crate::sched::worker::WorkerThread;

/// `fb`'s step is in a queue.
const QUEUED: u8 = 0;
/// A thief polls `fb`.
const RUNNING: u8 = 1;
/// The thief's poll is over; `fb` is the parent's again.
const IDLE: u8 = 2;
/// The parent took `fb`'s step back, or dropped the join: the queued step
/// does nothing.
const WITHDRAWN: u8 = 3;

/// Runs the future that `root` makes from a [`Region`] on the current pool
/// (the calling worker's, the global pool outside pools) and returns its
/// output; the calling thread blocks until the output is there and no
/// child of the region is being polled any more (called on a worker, the
/// worker moves to another thread meanwhile, as in [`crate::block_on`]).
///
/// `root` must return a [`Boxed`] future (from [`fork::boxed_with`](super::boxed_with)
/// or [`fork::boxed`](super::boxed)):
/// its lifetime `'s` is the region's, chosen by `block_on`, which is what
/// keeps the region's children from borrowing anything shorter-lived.
///
/// # Panics
/// A panic of the root future resumes here, after the region closed.
pub fn block_on<'env, R, F>(root: F) -> R
where
    F: for<'s> FnOnce(Region<'s, 'env>) -> Boxed<'s, R>,
    R: Send,
{
    let boundary = Arc::new(Boundary::default());
    let closer = CloseOnDrop(&boundary);
    let future = root(Region {
        boundary: &boundary,
        _lifetimes: PhantomData,
    });
    let output = crate::task::block_on::block_on(future);
    drop(closer);
    output
}

/// Closes the region and waits for the polls in flight, also while a
/// panic unwinds out of `block_on`.
struct CloseOnDrop<'a>(&'a Arc<Boundary>);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close();
        while self.0.busy() {
            std::thread::yield_now();
        }
    }
}

/// The handle of a fork region (made by [`block_on`]): `Copy`, with an invariant lifetime
/// `'s` that ends at its [`block_on`] and is shorter than `'env`, the
/// lifetime of what the region borrows (the field's type implies
/// `'env: 's`, as in `std::thread::Scope`).
#[derive(Clone, Copy)]
pub struct Region<'s, 'env: 's> {
    boundary: &'s Arc<Boundary>,
    _lifetimes: PhantomData<(&'s mut &'s (), &'s &'env ())>,
}

impl std::fmt::Debug for Region<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region").finish_non_exhaustive()
    }
}

impl<'s, 'env> Region<'s, 'env> {
    /// Runs `fa` and `fb` concurrently, potentially in parallel: as
    /// [`fork::join`](super::join) (work first, lazy queueing, panics
    /// after the sibling finished), except that when a thief has taken
    /// `fb`'s step the parent does not wait for the thief's poll: it
    /// returns `Pending` and the thief wakes it when its poll is over.
    /// `fb` is then the parent's again (polled at its next polls). A queued
    /// step costs two allocations (a node and its job), paid only when lazy
    /// queueing queues `fb`.
    pub fn join<FA, FB>(self, fa: FA, fb: FB) -> ScopedJoin<'s, 'env, FA, FB>
    where
        FA: Future + Send + 's,
        FB: Future + Send + 's,
        FA::Output: Send,
        FB::Output: Send,
    {
        ScopedJoin {
            a: ChildSlot::new(fa),
            b: ChildSlot::new(fb),
            node: None,
            region: self,
            _pinned: PhantomPinned,
        }
    }
}

/// What a queued step of `fb` shares between the parent and a thief.
struct Node {
    state: AtomicU8,
    /// `fb`'s `Child`, inside the pinned join.
    b: *mut (),
    /// Polls the `Child` at `b` once.
    poll_b: unsafe fn(*mut (), &Waker),
    /// The parent's waker, refreshed at each of its polls.
    waker: Mutex<Waker>,
    boundary: Arc<Boundary>,
}

// SAFETY: `b` is only dereferenced by whoever moved `state` to RUNNING
// (the thief) or by the parent while the state is not RUNNING; the future
// and its output are `Send` (`Region::join`'s bounds).
unsafe impl Send for Node {}
// SAFETY: as above: the pointer is shared, its pointee is not.
unsafe impl Sync for Node {}

impl Node {
    /// The thief's side: polls `fb` once unless the region closed or the
    /// parent withdrew the step, then wakes the parent.
    fn run_stolen(&self) {
        // Relaxed: the parent withdraws a step it popped back itself before
        // running the job here; that needs no ordering.
        if self.state.load(Ordering::Relaxed) == WITHDRAWN || !self.boundary.enter() {
            return;
        }
        // Acquire: the parent's writes to `fb` (its earlier polls) happen
        // before this poll.
        if self
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            let waker = self.waker();
            // SAFETY: RUNNING gives this thread `fb` (see `Node`); the join
            // is pinned and its drop waits while the state is RUNNING.
            unsafe { (self.poll_b)(self.b, &waker) };
            // Release: this poll's writes to `fb` happen before the
            // parent's Acquire CAS from IDLE.
            self.state.store(IDLE, Ordering::Release);
            quietly::wake(self.waker());
        }
        self.boundary.exit();
    }

    /// The parent's current waker.
    fn waker(&self) -> Waker {
        self.waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The parent polls again, perhaps with another waker.
    fn refresh_waker(&self, waker: &Waker) {
        let mut current = self.waker.lock().unwrap_or_else(PoisonError::into_inner);
        if !current.will_wake(waker) {
            *current = waker.clone();
        }
    }
}

/// # Safety
/// `b` points to a live, pinned `Child<F>` that nobody else accesses.
unsafe fn poll_child<F: Future>(b: *mut (), waker: &Waker) {
    // SAFETY: forwarded from the caller.
    unsafe { (*b.cast::<Child<F>>()).poll_once(waker) }
}

/// The future of [`Region::join`]. Dropping it waits for a thief's poll of
/// `fb` in flight (one poll), then drops the unfinished children.
#[must_use = "futures do nothing unless polled"]
pub struct ScopedJoin<'s, 'env, FA: Future, FB: Future> {
    a: ChildSlot<FA>,
    b: ChildSlot<FB>,
    /// `fb`'s queued or stolen step, until the parent has `fb` back.
    node: Option<Arc<Node>>,
    region: Region<'s, 'env>,
    /// The node points into the join.
    _pinned: PhantomPinned,
}

impl<FA, FB> ScopedJoin<'_, '_, FA, FB>
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    /// Whether `fb` is the parent's (no step queued or in a thief's hands);
    /// takes it back from an IDLE node.
    fn has_b(&mut self) -> bool {
        let Some(node) = &self.node else {
            return true;
        };
        // Acquire: pairs with the thief's Release store of IDLE.
        let back = node
            .state
            .compare_exchange(IDLE, WITHDRAWN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if back {
            self.node = None;
        }
        back
    }

    /// Queues `fb`'s step on `worker` and returns its job; `None` if the
    /// queue is full (then nothing is queued).
    fn queue_b(&mut self, worker: &WorkerThread, waker: &Waker) -> Option<JobRef> {
        let node = Arc::new(Node {
            state: AtomicU8::new(QUEUED),
            b: (&raw mut *self.b).cast(),
            poll_b: poll_child::<FB>,
            waker: Mutex::new(waker.clone()),
            boundary: Arc::clone(self.region.boundary),
        });
        let stolen = Arc::clone(&node);
        let job = HeapJob::into_job_ref(move || stolen.run_stolen());
        if !worker.push(job) {
            node.state.store(WITHDRAWN, Ordering::Relaxed);
            // SAFETY: the job was not queued: this is its only execution
            // (it finds the step withdrawn and only frees itself).
            unsafe { job.execute() };
            return None;
        }
        self.node = Some(node);
        Some(job)
    }

    /// After `fa`'s poll: takes `fb`'s step back if it is still in this
    /// worker's queue (running the jobs queued above it, as `join` does),
    /// else leaves it with its thief.
    fn reclaim_b(&mut self, worker: &WorkerThread, job: JobRef) {
        while let Some(popped) = worker.take_local() {
            if popped.is(job) {
                if let Some(node) = self.node.take() {
                    // Relaxed: the step left the queue through this pop, so
                    // no thief has it (each entry is taken once).
                    node.state.store(WITHDRAWN, Ordering::Relaxed);
                }
                // SAFETY: popped from our queue: its only execution (it
                // finds the step withdrawn and only frees itself).
                unsafe { popped.execute() };
                return;
            }
            // SAFETY: popped from our queue: its only execution.
            unsafe { popped.execute() };
        }
    }

    /// The poll, on a stack with room, on the calling worker (`None`
    /// outside pools).
    fn poll_here(
        &mut self,
        worker: Option<&WorkerThread>,
        waker: &Waker,
    ) -> Poll<(FA::Output, FB::Output)> {
        let this = self;
        if let Some(node) = &this.node {
            node.refresh_waker(waker);
        }
        // `fb` is looked at only if the parent has it: while a thief polls
        // it, even a reference to it (a closure capturing `this.b`) would
        // alias the thief's `&mut` (Miri: a_stolen_child_runs_while_its_
        // parent_is_suspended).
        let fork_b = this.has_b() && this.a.is_running() && this.b.is_running();
        if let Some(worker) = worker.filter(|_| fork_b) {
            let queued = if crate::join::runs_sequentially(worker) {
                None
            } else {
                this.queue_b(worker, waker)
            };
            // SAFETY: the join is pinned (see `poll`).
            unsafe { this.a.poll_once(waker) };
            if let Some(job) = queued {
                this.reclaim_b(worker, job);
            }
        } else {
            // SAFETY: the join is pinned (see `poll`).
            unsafe { this.a.poll_once(waker) };
        }
        if this.has_b() {
            // SAFETY: the join is pinned (see `poll`); `fb` is the parent's.
            unsafe { this.b.poll_once(waker) };
        }
        this.outcome()
    }

    /// `Pending` while a child runs or a thief has `fb`'s step; else both
    /// outputs, or the panic (`fa`'s first).
    fn outcome(&mut self) -> Poll<(FA::Output, FB::Output)> {
        if self.a.is_running() || self.node.is_some() || self.b.is_running() {
            return Poll::Pending;
        }
        match (self.a.take(), self.b.take()) {
            (Ok(a), Ok(b)) => Poll::Ready((a, b)),
            (Err(payload), _) | (Ok(_), Err(payload)) => std::panic::resume_unwind(payload),
        }
    }
}

impl<FA, FB> Future for ScopedJoin<'_, '_, FA, FB>
where
    FA: Future + Send,
    FB: Future + Send,
    FA::Output: Send,
    FB::Output: Send,
{
    type Output = (FA::Output, FB::Output);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the children are structurally pinned (polled and dropped
        // in place); the node points into the join, which never moves.
        let this = unsafe { self.get_unchecked_mut() };
        if this.node.is_none() {
            // `fb` is the parent's: the sequential fast path of
            // `fork::join` applies as it is.
            // SAFETY: the children are pinned (above).
            match unsafe { poll_sequential_fast(&mut this.a, &mut this.b, cx) } {
                Fast::Finished(poll) => return poll,
                Fast::PollSecond => {
                    // SAFETY: pinned (above); `fb` is the parent's.
                    unsafe { this.b.poll_once(cx.waker()) };
                    return this.outcome();
                }
                Fast::NotTaken => {}
            }
        }
        let waker = cx.waker();
        with_worker_room(|worker| this.poll_here(worker, waker))
    }
}

impl<FA: Future, FB: Future> Drop for ScopedJoin<'_, '_, FA, FB> {
    fn drop(&mut self) {
        let Some(node) = &self.node else { return };
        loop {
            // Acquire: a thief's poll of `fb` happens before `fb` is
            // dropped here.
            match node.state.compare_exchange(
                QUEUED,
                WITHDRAWN,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) | Err(IDLE) | Err(WITHDRAWN) => return,
                // A thief is inside `fb`'s poll: wait for it (one poll).
                Err(_) => std::thread::yield_now(),
            }
        }
    }
}
