//! `fork::block_on(|s| ..)` and `Scope::join`: fork/join whose stolen
//! children keep running while their parent is suspended (Nowa's
//! suspension), for children that borrow only what outlives the blocking
//! call. See `DESIGN.md`, "Next".
//!
//! WORK IN PROGRESS on the `fork-scoped` branch: not exported yet.

use std::future::Future;
use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Waker};

use super::boundary::Boundary;
use super::child::Child;
use super::frame::Boxed;
use crate::job::{HeapJob, JobRef};
use crate::worker::WorkerThread;

/// `fb`'s step is in a queue.
const QUEUED: u8 = 0;
/// A thief polls `fb`.
const RUNNING: u8 = 1;
/// The thief's poll is over; `fb` is the parent's again.
const IDLE: u8 = 2;
/// The parent took `fb`'s step back, or dropped the join: the queued step
/// does nothing.
const WITHDRAWN: u8 = 3;

/// Runs the future that `root` makes from a [`Scope`] on the current pool
/// and returns its output; the calling thread blocks until the output is
/// there and no child of the region is being polled any more.
pub fn block_on<'env, R, F>(root: F) -> R
where
    F: for<'s> FnOnce(Scope<'s, 'env>) -> Boxed<'s, R>,
    R: Send,
{
    let boundary = Arc::new(Boundary::default());
    let closer = CloseOnDrop(&boundary);
    let future = root(Scope {
        boundary: &boundary,
        _lifetimes: PhantomData,
    });
    let output = crate::block_on(future);
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

/// The handle of a scoped fork region: `Copy`, with an invariant lifetime
/// `'s` that ends at its [`block_on`] and is shorter than `'env`, the
/// lifetime of what the region borrows (the field's type implies
/// `'env: 's`, as in `std::thread::Scope`).
#[derive(Clone, Copy)]
pub struct Scope<'s, 'env: 's> {
    boundary: &'s Arc<Boundary>,
    _lifetimes: PhantomData<(&'s mut &'s (), &'s &'env ())>,
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

impl<'s, 'env> Scope<'s, 'env> {
    /// Runs `fa` and `fb` concurrently, potentially in parallel: as
    /// [`fork::join`](super::join), except that when a thief has taken
    /// `fb`'s step the parent does not wait for the thief's poll: it
    /// returns `Pending` and the thief wakes it when its poll is over.
    pub fn join<FA, FB>(self, fa: FA, fb: FB) -> ScopedJoin<'s, 'env, FA, FB>
    where
        FA: Future + Send + 's,
        FB: Future + Send + 's,
        FA::Output: Send,
        FB::Output: Send,
    {
        ScopedJoin {
            a: Child::Running(fa),
            b: Child::Running(fb),
            node: None,
            scope: self,
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
    /// The parent's waker when the step was queued.
    waker: Waker,
    boundary: Arc<Boundary>,
}

// SAFETY: `b` is only dereferenced by whoever moved `state` to RUNNING
// (the thief) or by the parent while the state is not RUNNING; the future
// and its output are `Send` (`Scope::join`'s bounds).
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
            // SAFETY: RUNNING gives this thread `fb` (see `Node`); the join
            // is pinned and its drop waits while the state is RUNNING.
            unsafe { (self.poll_b)(self.b, &self.waker) };
            // Release: this poll's writes to `fb` happen before the
            // parent's Acquire CAS from IDLE.
            self.state.store(IDLE, Ordering::Release);
            self.waker.wake_by_ref();
        }
        self.boundary.exit();
    }
}

/// # Safety
/// `b` points to a live, pinned `Child<F>` that nobody else accesses.
unsafe fn poll_child<F: Future>(b: *mut (), waker: &Waker) {
    // SAFETY: forwarded from the caller.
    unsafe { (*b.cast::<Child<F>>()).poll_once(waker) }
}

/// The future of [`Scope::join`].
#[must_use = "futures do nothing unless polled"]
pub struct ScopedJoin<'s, 'env, FA: Future, FB: Future> {
    a: Child<FA>,
    b: Child<FB>,
    /// `fb`'s queued or stolen step, until the parent has `fb` back.
    node: Option<Arc<Node>>,
    scope: Scope<'s, 'env>,
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
            b: (&raw mut self.b).cast(),
            poll_b: poll_child::<FB>,
            waker: waker.clone(),
            boundary: Arc::clone(self.scope.boundary),
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
        let waker = cx.waker();
        let worker = WorkerThread::current();
        let b_here = this.has_b();
        if b_here && this.a.is_running() && this.b.is_running() && !worker.is_null() {
            // SAFETY: a non-null current worker lives on this thread's stack
            // while the thread runs pool work, which includes this poll.
            let worker = unsafe { &*worker };
            let queued = if crate::join::runs_sequentially(worker) {
                None
            } else {
                this.queue_b(worker, waker)
            };
            // SAFETY: pinned (above).
            unsafe { this.a.poll_once(waker) };
            if let Some(job) = queued {
                this.reclaim_b(worker, job);
            }
        } else {
            // SAFETY: pinned (above).
            unsafe { this.a.poll_once(waker) };
        }
        if this.has_b() {
            // SAFETY: pinned (above); `fb` is the parent's.
            unsafe { this.b.poll_once(waker) };
        }
        if this.a.is_running() || this.node.is_some() || this.b.is_running() {
            return Poll::Pending;
        }
        match (this.a.take(), this.b.take()) {
            (Ok(a), Ok(b)) => Poll::Ready((a, b)),
            (Err(payload), _) | (Ok(_), Err(payload)) => std::panic::resume_unwind(payload),
        }
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
