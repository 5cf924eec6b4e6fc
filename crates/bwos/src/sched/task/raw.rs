//! One task in one allocation, and the three kinds of pointers to it: run-
//! queue entries ([`Notified`]), wakers and the [`JoinHandle`].
//!
//! # Layout
//! A task is a `Box<Cell<F, S>>`, `#[repr(C)]` with the [`Header`] first, so
//! that a pointer to the header is a pointer to the whole cell:
//! - `Header`: the state word (`state.rs`) and a vtable of the functions
//!   that need `F` and `S` (run, schedule, read the output, drop the
//!   handle, free). Pointers to a task are `NonNull<Header>` and carry no
//!   type parameters.
//! - the scheduler `S`, which queues the task when it is woken;
//! - the stage: the future while it runs, then its outcome
//!   (`Result<F::Output, JoinError>`) until the handle takes it, then
//!   nothing;
//! - the `JoinHandle`'s waker slot (see `JOIN_WAKER` in `state.rs`).
//!
//! Each pointer owns one reference of the state word's count; the owner of
//! the last one frees the cell. Who may touch which field is decided by the
//! state word: the future and the stage by the holder of `RUNNING` (and
//! after `COMPLETE`, the stage by the handle, or by the completer when no
//! handle is left), the waker slot by whoever the `JOIN_WAKER` flag names.
//!
//! # Panics
//! A panic in `poll`, or in the future's destructor, is caught and becomes
//! the task's outcome (`JoinError::is_panic`); the worker goes on. A panic
//! in dropping an output that nobody will read (the handle is gone) is
//! caught and dropped: there is nobody to report it to.

use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use super::abort_handle::AbortHandle;
use super::state::{EndPoll, StartPoll, State, Wake};
use crate::sched::job::JobRef;
use crate::sched::{coop, long_polls, quietly};

/// How a task is queued when it is woken: the executor's side of a task.
pub(crate) trait Schedule: Send + Sync + 'static {
    /// Queues `task` to be run (by [`Notified::run`]) or, if the executor
    /// is shutting down, cancelled (by [`Notified::cancel`]). Dropping it
    /// unrun also cancels it, on the dropping thread.
    ///
    /// `self` lives in the task, and the task outlives the call: whoever
    /// calls this holds a reference of its own besides the entry's. So the
    /// entry may be run, completed and released by another thread (or
    /// cancelled here) before this returns.
    fn schedule(&self, task: Notified);

    /// Queues `task`, which woke itself during its poll (it yielded): the
    /// executor may let other tasks go first. By default, `schedule`.
    fn yield_task(&self, task: Notified) {
        self.schedule(task);
    }

    /// A poll of the task's future returned `Ready` after its group of
    /// polls took `ticks` of the poll clock (`sched/long_polls.rs`), enough
    /// that it may be longer than the shortest long-poll threshold: the
    /// executor counts it if it is longer than its own. Called on the
    /// thread that polled, before the output is stored, so that whoever
    /// awaits the task sees the count. By default nothing.
    fn long_poll(&self, ticks: u64) {
        let _ = ticks;
    }

    /// The task has completed (its outcome is stored, its future dropped):
    /// an executor that lists its live tasks (`TaskList`) removes it here.
    fn release(&self, task: TaskRef) {
        let _ = task;
    }
}

/// A task's address, for executors that keep a list of their tasks. Holds
/// no reference: valid only while some owner keeps the task alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskRef(NonNull<Header>);

// SAFETY: an address; using it needs a reference owned elsewhere.
unsafe impl Send for TaskRef {}

impl TaskRef {
    /// The task's address.
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The state word and the list slot of the task.
    ///
    /// # Safety
    /// Some owner keeps the task alive for `'a`.
    pub(crate) unsafe fn header<'a>(self) -> &'a Header {
        // SAFETY: guaranteed by the caller.
        unsafe { self.0.as_ref() }
    }

    /// Adds a reference, for a list that keeps the task.
    ///
    /// # Safety
    /// As for [`header`](Self::header).
    pub(crate) unsafe fn ref_inc(self) {
        // SAFETY: forwarded.
        unsafe { self.header() }.state.ref_inc();
    }

    /// Drops one reference the caller owns, freeing the task if it was the
    /// last.
    ///
    /// # Safety
    /// The caller owns a reference, which this call consumes.
    pub(crate) unsafe fn release(self) {
        // SAFETY: the caller's reference keeps the header alive until this
        // `ref_dec`.
        let header = unsafe { self.header() };
        if header.state.ref_dec() {
            // SAFETY: the last reference.
            unsafe { (header.vtable.dealloc)(self.0) }
        }
    }

    /// Aborts the task: marks it cancelled and, if it is idle, queues it
    /// so that a worker drops its future.
    ///
    /// # Safety
    /// As for [`header`](Self::header).
    pub(crate) unsafe fn abort(self) {
        // SAFETY: forwarded from the caller.
        let header = unsafe { self.header() };
        if header.state.abort() == Wake::Submit {
            // SAFETY: `abort` added the new entry's reference; the owner
            // the caller vouches for keeps the task alive across the call.
            unsafe { (header.vtable.schedule)(self.0) }
        }
    }

    /// Whether the task has completed (finished, panicked or been
    /// cancelled).
    ///
    /// # Safety
    /// As for [`header`](Self::header).
    pub(crate) unsafe fn is_complete(self) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe { self.header() }.state.load().is_complete()
    }

    /// Aborts the task (as `JoinHandle::abort`) and drops one reference
    /// the caller owns, freeing the task if it was the last.
    ///
    /// # Safety
    /// The caller owns a reference, which this call consumes.
    pub(crate) unsafe fn abort_and_release(self) {
        // SAFETY: the caller's reference keeps the task alive for both.
        unsafe {
            self.abort();
            self.release();
        }
    }
}

/// Why a task produced no output.
pub struct JoinError {
    repr: Repr,
}

enum Repr {
    Cancelled,
    Panic(SyncPanic),
}

/// A panic payload that can be shared between threads because nothing
/// can read it through a shared reference: it is only moved out.
struct SyncPanic(Box<dyn Any + Send>);

// SAFETY: `SyncPanic` offers no access to the payload through `&self`
// (only `into_panic`, by value), so sharing `&SyncPanic` between threads
// shares nothing.
unsafe impl Sync for SyncPanic {}

impl JoinError {
    fn cancelled() -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
        }
    }

    fn panic(payload: Box<dyn Any + Send>) -> JoinError {
        JoinError {
            repr: Repr::Panic(SyncPanic(payload)),
        }
    }

    /// Whether the task was aborted (or its executor shut down) before it
    /// finished.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic's payload, to resume it with
    /// [`std::panic::resume_unwind`].
    ///
    /// # Panics
    /// If the task was cancelled, not panicked.
    pub fn into_panic(self) -> Box<dyn Any + Send> {
        match self.repr {
            Repr::Panic(SyncPanic(payload)) => payload,
            Repr::Cancelled => panic!("JoinError::into_panic on a cancelled task"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            // Reading the payload through `&self` would break
            // `SyncPanic`'s promise; say only that it panicked.
            Repr::Panic(_) => f.write_str("JoinError::Panic(..)"),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("task was cancelled"),
            Repr::Panic(_) => f.write_str("task panicked"),
        }
    }
}

impl std::error::Error for JoinError {}

/// The functions of a task that depend on its future and scheduler types.
/// Calling an entry has the safety contract of the `Cell` function of the
/// same name that it points to.
struct Vtable {
    /// Runs a run-queue entry: poll, or cancel if aborted.
    run: unsafe fn(NonNull<Header>),
    /// Queues the task with its scheduler (the entry owns a reference).
    schedule: unsafe fn(NonNull<Header>),
    /// `JoinHandle::poll`: writes `Poll<Result<T, JoinError>>` to `out`.
    poll_join: unsafe fn(NonNull<Header>, *mut (), &Waker),
    /// `JoinHandle`'s drop.
    drop_join_handle: unsafe fn(NonNull<Header>),
    /// Frees the cell.
    dealloc: unsafe fn(NonNull<Header>),
}

/// The type-independent part of a task, at the start of its allocation.
pub(crate) struct Header {
    state: State,
    vtable: &'static Vtable,
    /// Where the executor's `TaskList` keeps the task (its own business).
    pub(crate) list_slot: std::sync::atomic::AtomicUsize,
}

/// Where a task's future stands.
enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

/// A task's allocation.
#[repr(C)]
struct Cell<F: Future, S> {
    header: Header,
    scheduler: S,
    stage: UnsafeCell<Stage<F>>,
    join_waker: UnsafeCell<Option<Waker>>,
}

impl<F, S> Cell<F, S>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Schedule,
{
    const VTABLE: Vtable = Vtable {
        run: Self::run,
        schedule: Self::schedule,
        poll_join: Self::poll_join,
        drop_join_handle: Self::drop_join_handle,
        dealloc: Self::dealloc,
    };

    /// # Safety
    /// `header` is the header of a live `Cell<F, S>`.
    unsafe fn from_header<'a>(header: NonNull<Header>) -> &'a Self {
        // SAFETY: `#[repr(C)]` puts the header at offset 0, and the caller
        // guarantees the cell's type and that it is alive.
        unsafe { header.cast::<Self>().as_ref() }
    }

    /// Runs one run-queue entry, whose reference the caller hands over.
    ///
    /// # Safety
    /// `header` belongs to a `Cell<F, S>`, and the caller owns one of its
    /// run-queue entries (a `NOTIFIED` state and one reference).
    unsafe fn run(header: NonNull<Header>) {
        // SAFETY: forwarded from the caller.
        let cell = unsafe { Self::from_header(header) };
        match cell.header.state.start_poll() {
            // SAFETY: `start_poll` made this thread the `RUNNING` owner.
            StartPoll::Cancel => unsafe { Self::cancel_and_complete(header) },
            StartPoll::Poll => {
                // The entry's reference keeps the task alive during the
                // poll, so the waker handed to the future borrows it
                // without a reference of its own.
                // SAFETY: see above; `ManuallyDrop` keeps its drop from
                // releasing a reference it does not own.
                let waker =
                    ManuallyDrop::new(unsafe { Waker::from_raw(raw_waker::<F, S>(header)) });
                let mut cx = Context::from_waker(&waker);
                // The cooperative budget of the poll is set by whoever
                // runs the entry (`sched/coop.rs`).
                let polled = panic::catch_unwind(AssertUnwindSafe(|| {
                    // SAFETY: `RUNNING`: this thread alone touches the
                    // stage.
                    match unsafe { &mut *cell.stage.get() } {
                        Stage::Running(future) => {
                            // SAFETY: the future is never moved out of the
                            // cell (boxed, and freed only after the stage
                            // is dropped in place), so pinning it is sound.
                            let future = unsafe { Pin::new_unchecked(future) };
                            future.poll(&mut cx)
                        }
                        _ => unreachable!("a running task's stage holds its future"),
                    }
                }));
                match polled {
                    Ok(Poll::Pending) => match cell.header.state.end_poll() {
                        EndPoll::Idle { last } => {
                            if last {
                                // SAFETY: the last reference.
                                unsafe { Self::dealloc(header) }
                            }
                        }
                        // Woken during its own poll: it yielded. The new
                        // entry has a reference of its own and takes
                        // `NOTIFIED`; the one run here keeps the task
                        // (and the scheduler borrowed from it) alive
                        // until `yield_task` returns.
                        EndPoll::Requeue => {
                            cell.scheduler.yield_task(Notified(header));
                            // SAFETY: the reference of the entry just run.
                            unsafe { TaskRef(header).release() }
                        }
                        // SAFETY: still `RUNNING`, as `Cancel` says.
                        EndPoll::Cancel => unsafe { Self::cancel_and_complete(header) },
                    },
                    // SAFETY: still `RUNNING`.
                    Ok(Poll::Ready(output)) => unsafe { Self::finish(header, Ok(output)) },
                    // SAFETY: still `RUNNING`.
                    Err(payload) => unsafe { Self::finish(header, Err(JoinError::panic(payload))) },
                }
            }
        }
    }

    /// Drops the future and completes the task as cancelled (or as
    /// panicked, if the future's destructor panics).
    ///
    /// # Safety
    /// The calling thread is the `RUNNING` owner and hands over the
    /// run-queue entry's reference.
    unsafe fn cancel_and_complete(header: NonNull<Header>) {
        // SAFETY: forwarded from the caller.
        unsafe { Self::finish(header, Err(JoinError::cancelled())) }
    }

    /// Drops the future, stores `outcome` (a panic of the future's
    /// destructor replaces it), completes the task, wakes the handle and
    /// drops the entry's reference.
    ///
    /// # Safety
    /// As for [`cancel_and_complete`](Self::cancel_and_complete).
    unsafe fn finish(header: NonNull<Header>, outcome: Result<F::Output, JoinError>) {
        // A local, not `&self`: a reference argument would have to outlive
        // the `dealloc` at the end.
        // SAFETY: forwarded from the caller.
        let cell = unsafe { Self::from_header(header) };
        // Only a poll that returned `Ready` gives an output.
        let polled_ready = outcome.is_ok();
        let stage = cell.stage.get();
        // SAFETY: `RUNNING`: the stage is this thread's.
        let dropped = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
            *stage = Stage::Consumed;
        }));
        let outcome = match dropped {
            Ok(()) => outcome,
            Err(payload) => Err(JoinError::panic(payload)),
        };
        // SAFETY: as above.
        unsafe { *stage = Stage::Finished(outcome) };
        // Polls are timed by the scheduler loop, after they return; one
        // that completed the task (its future dropped, as part of the
        // poll) is looked at here, before the handle can see the output
        // (a clock read per task). Here rather than in `run`: there, the
        // output kept across the count cost `run` a register to save on
        // every poll.
        if polled_ready && let Some(ticks) = long_polls::poll_completing() {
            cell.scheduler.long_poll(ticks);
        }
        // Release (in `complete`): the handle that sees `COMPLETE` sees the
        // outcome.
        let before = cell.header.state.complete();
        if !before.has_join_interest() {
            // No handle will read it: drop it here, and a panic in its
            // destructor with it (there is nobody to report it to).
            // SAFETY: without join interest the completer owns the stage.
            let _ = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
                *stage = Stage::Consumed;
            }));
        }
        if before.has_join_waker() {
            // SAFETY: `JOIN_WAKER` was set at completion: the slot is the
            // task side's from now on, and it only reads it.
            if let Some(waker) = unsafe { &*cell.join_waker.get() } {
                quietly::wake_by_ref(waker);
            }
        }
        cell.scheduler.release(TaskRef(header));
        // SAFETY: the run-queue entry's reference, handed over by the caller.
        unsafe { TaskRef(header).release() }
    }

    /// Hands a run-queue entry (and the reference it owns) to the
    /// scheduler.
    ///
    /// # Safety
    /// `header` belongs to a live `Cell<F, S>`; the caller owns a reference
    /// and a `NOTIFIED` state, both of which go to the entry, and keeps the
    /// task alive by another reference until this returns (`&self` of the
    /// scheduler lives in the task, which the entry's runner may free
    /// before the scheduler returns).
    unsafe fn schedule(header: NonNull<Header>) {
        // SAFETY: forwarded from the caller.
        let cell = unsafe { Self::from_header(header) };
        cell.scheduler.schedule(Notified(header));
    }

    /// # Safety
    /// `header` belongs to a live `Cell<F, S>` whose handle calls this, and
    /// `out` points to a `Poll<Result<F::Output, JoinError>>`.
    unsafe fn poll_join(header: NonNull<Header>, out: *mut (), waker: &Waker) {
        // SAFETY: forwarded from the caller.
        let cell = unsafe { Self::from_header(header) };
        let state = &cell.header.state;
        let snapshot = state.load();
        let ready = if snapshot.is_complete() {
            true
        } else if !snapshot.has_join_waker() {
            // SAFETY: `JOIN_WAKER` is clear: the slot is the handle's.
            unsafe { *cell.join_waker.get() = Some(waker.clone()) };
            state.set_join_waker().is_err()
        } else {
            // SAFETY: `JOIN_WAKER` is set and the task is not complete:
            // the task side does not read the slot before completion, and
            // only the handle writes it, so reading it here is safe.
            let same = unsafe { &*cell.join_waker.get() }
                .as_ref()
                .is_some_and(|stored| stored.will_wake(waker));
            if same {
                false
            } else if state.unset_join_waker().is_err() {
                true
            } else {
                // SAFETY: `JOIN_WAKER` is clear again: the slot is ours.
                unsafe { *cell.join_waker.get() = Some(waker.clone()) };
                state.set_join_waker().is_err()
            }
        };
        let out = out.cast::<Poll<Result<F::Output, JoinError>>>();
        if !ready {
            // SAFETY: the caller's `out` has this type.
            unsafe { *out = Poll::Pending };
            return;
        }
        // SAFETY: complete with join interest: the stage is the handle's.
        let stage = unsafe { std::mem::replace(&mut *cell.stage.get(), Stage::Consumed) };
        let outcome = match stage {
            Stage::Finished(outcome) => outcome,
            _ => panic!("JoinHandle polled after it returned the task's output"),
        };
        // SAFETY: as above.
        unsafe { *out = Poll::Ready(outcome) };
    }

    /// # Safety
    /// `header` belongs to a live `Cell<F, S>`; its handle calls this once,
    /// handing over its reference.
    unsafe fn drop_join_handle(header: NonNull<Header>) {
        // SAFETY: forwarded from the caller.
        let cell = unsafe { Self::from_header(header) };
        match cell.header.state.drop_join_interest() {
            // SAFETY: `JOIN_WAKER` is now clear: the slot is the handle's.
            Ok(()) => drop(unsafe { (*cell.join_waker.get()).take() }),
            Err(_) => {
                // Complete: nobody else will drop the outcome.
                // SAFETY: complete, and the handle still had interest: the
                // stage is the handle's.
                let _ = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
                    *cell.stage.get() = Stage::Consumed;
                }));
            }
        }
        // SAFETY: the handle's reference, handed over by the caller.
        unsafe { TaskRef(header).release() }
    }

    /// # Safety
    /// `header` belongs to a `Cell<F, S>` and its last reference is gone.
    unsafe fn dealloc(header: NonNull<Header>) {
        // SAFETY: made by `Box::into_raw` in `spawn`; nobody else points
        // to it any more.
        let mut cell = unsafe { Box::from_raw(header.cast::<Self>().as_ptr()) };
        // The join waker is the user's, and its drop may panic; the last
        // reference may be a worker's, in its bookkeeping. The stage was
        // emptied under `catch_unwind` when the task ended.
        quietly::drop(cell.join_waker.get_mut().take());
        drop(cell);
    }
}

/// The waker of a task of type `Cell<F, S>`.
fn raw_waker<F, S>(header: NonNull<Header>) -> RawWaker
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Schedule,
{
    RawWaker::new(header.as_ptr().cast_const().cast(), waker_vtable())
}

/// The waker functions. They need only the header (the state word and the
/// task's vtable), so one set serves every task type.
fn waker_vtable() -> &'static RawWakerVTable {
    static VTABLE: RawWakerVTable =
        RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);
    &VTABLE
}

/// # Safety
/// `data` is a task header whose waker owns (or borrows) a reference.
unsafe fn header_of<'a>(data: *const ()) -> (NonNull<Header>, &'a Header) {
    // SAFETY: wakers are made only by `raw_waker` from a live header, and
    // the reference they own (or the entry they borrow from) keeps it
    // alive.
    unsafe {
        let header = NonNull::new_unchecked(data.cast_mut().cast::<Header>());
        (header, header.as_ref())
    }
}

/// # Safety
/// Called by `Waker` on a waker made by `raw_waker` (`data` is a task
/// header kept alive by the waker's reference, or by the run-queue entry
/// that lends it).
unsafe fn waker_clone(data: *const ()) -> RawWaker {
    // SAFETY: called by `Waker::clone` on one of our wakers.
    let (_, header) = unsafe { header_of(data) };
    header.state.ref_inc();
    RawWaker::new(data, waker_vtable())
}

/// # Safety
/// Called by `Waker` on a waker made by `raw_waker` (`data` is a task
/// header kept alive by the waker's reference, or by the run-queue entry
/// that lends it).
unsafe fn waker_wake(data: *const ()) {
    // SAFETY: called by `Waker::wake` on one of our wakers, which owns a
    // reference (a borrowed waker is never woken by value: it is in a
    // `ManuallyDrop` and only lent out by `&`).
    let (ptr, header) = unsafe { header_of(data) };
    match header.state.wake_by_val() {
        // SAFETY: `wake_by_val` added the entry's reference; the waker's
        // keeps the task alive across `schedule` and is dropped after it.
        Wake::Submit => unsafe {
            (header.vtable.schedule)(ptr);
            TaskRef(ptr).release();
        },
        // SAFETY: the waker held the last reference.
        Wake::Nothing { last: true } => unsafe { (header.vtable.dealloc)(ptr) },
        Wake::Nothing { last: false } => {}
    }
}

/// # Safety
/// Called by `Waker` on a waker made by `raw_waker` (`data` is a task
/// header kept alive by the waker's reference, or by the run-queue entry
/// that lends it).
unsafe fn waker_wake_by_ref(data: *const ()) {
    // SAFETY: called by `Waker::wake_by_ref` on one of our wakers.
    let (ptr, header) = unsafe { header_of(data) };
    if header.state.wake_by_ref() == Wake::Submit {
        // SAFETY: `wake_by_ref` added the entry's reference; the waker's,
        // borrowed by the caller, keeps the task alive across `schedule`.
        unsafe { (header.vtable.schedule)(ptr) }
    }
}

/// # Safety
/// Called by `Waker` on a waker made by `raw_waker` (`data` is a task
/// header kept alive by the waker's reference, or by the run-queue entry
/// that lends it).
unsafe fn waker_drop(data: *const ()) {
    // SAFETY: called by `Waker::drop` on one of our wakers, which owns a
    // reference.
    let (ptr, _) = unsafe { header_of(data) };
    // SAFETY: the waker's reference.
    unsafe { TaskRef(ptr).release() }
}

/// A run-queue entry: the right (and the duty) to run the task once. It
/// owns one reference.
pub(crate) struct Notified(NonNull<Header>);

// SAFETY: a task's future and output are `Send`, and the state word
// decides which thread touches them; the entry is a pointer plus a
// reference, like `Arc`.
unsafe impl Send for Notified {}

impl Notified {
    /// Polls the task once (or cancels it, if aborted).
    pub(crate) fn run(self) {
        let header = ManuallyDrop::new(self).0;
        // SAFETY: the entry's reference and `NOTIFIED` state go to `run`.
        unsafe { (header.as_ref().vtable.run)(header) }
    }

    /// Cancels the task instead of running it (the executor shuts down):
    /// its future is dropped here and its handle reports cancellation.
    pub(crate) fn cancel(self) {
        // SAFETY: the entry's reference keeps the header alive.
        let state = unsafe { &self.0.as_ref().state };
        // An aborted task's `start_poll` says `Cancel`; the entry already
        // exists, so `abort` queues nothing new.
        let queued = state.abort();
        debug_assert_eq!(queued, Wake::Nothing { last: false });
        self.run();
    }

    /// The entry as a job for the worker loop: executing the job runs the
    /// entry (and never executing it leaks the task, so the job must run).
    pub(crate) fn into_job_ref(self) -> JobRef {
        let header = ManuallyDrop::new(self).0;
        // SAFETY: `run_entry` rebuilds this entry, which the job owns; a
        // `JobRef` is executed exactly once.
        unsafe { JobRef::new(header.as_ptr().cast_const().cast(), run_entry) }
    }

    /// Whether `job` is a task's entry (made by
    /// [`into_job_ref`](Self::into_job_ref)) rather than a fork/join job:
    /// the scheduler loop times task polls (`sched/long_polls.rs`).
    #[inline]
    pub(crate) fn is_entry(job: JobRef) -> bool {
        job.runs(run_entry)
    }

    /// The task's address, to tell entries apart.
    pub(crate) fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The task, for the executor's list of live tasks (the entry keeps it
    /// alive while borrowed).
    pub(crate) fn task(&self) -> TaskRef {
        TaskRef(self.0)
    }
}

/// Runs an entry turned into a job by [`Notified::into_job_ref`].
///
/// # Safety
/// `data` comes from `into_job_ref`, whose entry was not run yet.
// Never inlined, so that its address is one (`Notified::is_entry`).
#[inline(never)]
unsafe fn run_entry(data: *const ()) {
    // SAFETY: a non-null header pointer whose entry (and reference) the
    // job owned; it is rebuilt once, here.
    let entry = Notified(unsafe { NonNull::new_unchecked(data.cast_mut().cast::<Header>()) });
    entry.run();
}

impl Drop for Notified {
    /// An entry dropped unrun (its queue is dropped) cancels the task, so
    /// that its handle resolves instead of waiting forever.
    fn drop(&mut self) {
        let header = self.0;
        // SAFETY: the entry's reference keeps the header alive.
        let state = unsafe { &header.as_ref().state };
        state.abort();
        // SAFETY: as in `Notified::run`: this entry's reference and
        // `NOTIFIED` state go to `run`, which cancels.
        unsafe { (header.as_ref().vtable.run)(header) }
    }
}

impl fmt::Debug for Notified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Notified({:#x})", self.addr())
    }
}

/// A handle to a spawned task's output. Awaiting it gives the output, or a
/// [`JoinError`] if the task panicked or was cancelled. Dropping it
/// detaches the task: it keeps running and its output is dropped.
pub struct JoinHandle<T> {
    header: NonNull<Header>,
    _output: PhantomData<T>,
}

// SAFETY: the handle only moves the `Send` output out of the task (and
// touches its waker slot as the state word allows).
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` allows only `abort` and `is_finished`, which touch
// the atomic state word alone.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    fn header(&self) -> &Header {
        // SAFETY: the handle's reference keeps the task alive.
        unsafe { self.header.as_ref() }
    }

    /// Cancels the task: unless it has finished, its future is dropped the
    /// next time a worker would poll it, and the handle resolves to a
    /// [`JoinError`] with [`is_cancelled`](JoinError::is_cancelled). A task
    /// that is being polled finishes that poll first (and its output wins
    /// if that poll completes it).
    pub fn abort(&self) {
        // SAFETY: the handle's reference keeps the task alive.
        unsafe { TaskRef(self.header).abort() }
    }

    /// Whether the task has finished (completed, panicked or been
    /// cancelled), so that awaiting the handle returns at once.
    pub fn is_finished(&self) -> bool {
        self.header().state.load().is_complete()
    }

    /// A handle that aborts the task without owning its output: it can be
    /// cloned and sent to other threads, and outlives this handle (see
    /// [`AbortHandle`]).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
    /// let task = pool.spawn_task(std::future::pending::<()>());
    /// let abort = task.abort_handle();
    /// std::thread::spawn(move || abort.abort()).join().unwrap();
    /// assert!(pool.block_on(task).unwrap_err().is_cancelled());
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn abort_handle(&self) -> AbortHandle {
        // SAFETY: the handle's reference keeps the task alive during the
        // call.
        unsafe { AbortHandle::new(TaskRef(self.header)) }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    /// A ready handle spends a unit of the cooperative budget; with the
    /// budget spent it returns `Pending` (and wakes the task) even if the
    /// task has finished, so that a loop over finished handles lets the
    /// worker's other tasks run.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        coop::poll_budgeted(cx, |cx| {
            let mut out: Poll<Result<T, JoinError>> = Poll::Pending;
            // SAFETY: the handle's reference keeps the task alive; `out`
            // has the type the vtable's `poll_join` writes (`T` is the
            // task's output type, fixed by `spawn`).
            unsafe {
                (self.header().vtable.poll_join)(self.header, (&raw mut out).cast(), cx.waker());
            }
            out
        })
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: called once, with the handle's reference.
        unsafe { (self.header().vtable.drop_join_handle)(self.header) }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Makes a task of `future`, queued with `scheduler` when woken. Returns
/// its first run-queue entry (the caller queues it) and its handle.
pub(crate) fn spawn<F, S>(future: F, scheduler: S) -> (Notified, JoinHandle<F::Output>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Schedule,
{
    let cell = Box::new(Cell {
        header: Header {
            state: State::new(),
            vtable: &Cell::<F, S>::VTABLE,
            list_slot: std::sync::atomic::AtomicUsize::new(usize::MAX),
        },
        scheduler,
        stage: UnsafeCell::new(Stage::Running(future)),
        join_waker: UnsafeCell::new(None),
    });
    // SAFETY: `Box::into_raw` never returns null.
    let header = unsafe { NonNull::new_unchecked(Box::into_raw(cell).cast::<Header>()) };
    (
        Notified(header),
        JoinHandle {
            header,
            _output: PhantomData,
        },
    )
}

#[cfg(test)]
mod tests;
