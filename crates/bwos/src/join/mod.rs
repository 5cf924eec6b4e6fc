//! `join`: run two closures, potentially in parallel (child stealing).
//!
//! The calling worker pushes a job for `b` that lives in its own frame,
//! runs `a`, then pops: if the job is still there (the common case) it runs
//! `b` directly. Push and pop are the BWoS owner fast path, without atomic
//! read-modify-write or fence, and the latch is only built (two plain
//! stores), never read. Only if `b` was stolen does the worker look at the
//! latch, running other work until the thief sets it.
//!
//! # Queue only what can be shared
//! A job in the owner's block is private until the owner shares the block
//! (see `worker`), and thieves take the oldest jobs first. So once the
//! worker holds [`JOIN_SLACK`] private jobs and no worker is idle, a deeper
//! `join` would queue a job that no thief takes before the owner pops it
//! again: it runs `a` and then `b` directly instead (lazy task creation).
//! That costs two plain loads and the idle hint per join and makes
//! fine-grained recursion nearly as cheap as serial code. When a worker is
//! idle, the next `join` shares the private jobs (the biggest pending
//! work on the current path) and queues `b` again; the parallelism lost is
//! what lies between the queued jobs and the current frame, which the
//! owner works through itself while thieves take the queued jobs.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::sched::current::in_current_pool;
use crate::sched::job::{JobResult, StackJob};
use crate::sched::pool::ThreadPool;
use crate::sched::wait::WorkerLatch;
use crate::sched::worker::WorkerThread;

/// The queued jobs a worker keeps in its own block before `join` stops
/// queueing `b`. Beyond this depth a join runs its closures one after the
/// other, as serial code would, until another worker becomes idle; the
/// jobs queued higher up on the current path are the oldest and biggest,
/// which is what thieves should take anyway.
pub(crate) const JOIN_SLACK: usize = 1;

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// `a` runs on the calling thread; `b` may be stolen by another worker of
/// the pool. Called outside any pool, `join` runs in the pool the thread
/// entered (`Handle::enter`), else in the global pool.
///
/// # Panics
/// If either closure panics the other still runs to completion, then the
/// panic resumes in the caller (`a`'s if both panic). Nothing runs while
/// the panic unwinds: see "Panics" in the crate docs.
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
#[inline]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let worker = WorkerThread::current_ptr();
    if worker.is_null() {
        return in_current_pool(|worker, _| join_in_worker(worker, a, b));
    }
    // SAFETY: as in `WorkerThread::with_current`: non-null, the current
    // worker lives on this thread's stack while the thread runs pool
    // work, which includes this call.
    join_in_worker(unsafe { &*worker }, a, b)
}

/// How a closure of [`join_context`] is being run: whether it migrated,
/// that is, runs on another thread than the one that called
/// `join_context`.
///
/// Adaptive splitters use it (rayon's parallel iterators split a range
/// again when a half was stolen, since a thief is evidence of idle
/// workers). Not `Send`: it describes the current call on this thread.
#[derive(Debug)]
pub struct FnContext {
    migrated: bool,
    /// Neither `Send` nor `Sync`, as rayon-core's.
    _not_send: std::marker::PhantomData<*mut ()>,
}

impl FnContext {
    /// Whether the closure runs on a different thread than the caller of
    /// [`join_context`]: `b` when a thief took it, and both closures when
    /// `join_context` was called outside the pool (the pair then runs on
    /// a worker). `false` when `b` runs where it was forked, including
    /// the joins that lazy queueing runs one after the other.
    #[inline]
    pub fn migrated(&self) -> bool {
        self.migrated
    }
}

/// [`join`] whose closures learn how they are run: each receives a
/// [`FnContext`] whose [`migrated`](FnContext::migrated) says whether it
/// runs on another thread than the caller (`b` stolen by a thief, or a
/// call from outside the pool). Costs one thread-local read in `b` over
/// `join`.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let (a, b) = pool.install(|| bwos::join_context(|a| a.migrated(), |b| b.migrated()));
/// // A one-worker pool has no thief, and `install` runs on the worker.
/// assert!(!a && !b);
/// // From outside every pool, both closures run on a worker: migrated.
/// let (a, b) = bwos::join_context(|a| a.migrated(), |b| b.migrated());
/// assert!(a && b);
/// ```
#[inline]
pub fn join_context<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    // As in `join`: the call on the current worker is written out.
    WorkerThread::with_current(|worker| match worker {
        Some(worker) => join_context_in_worker(worker, a, b, false),
        None => in_current_pool(|worker, injected| join_context_in_worker(worker, a, b, injected)),
    })
}

/// [`join_context`] on `worker`; `injected`: the caller is not on this
/// worker's thread (both closures migrated).
#[inline(always)]
fn join_context_in_worker<A, B, RA, RB>(
    worker: &WorkerThread,
    a: A,
    b: B,
    injected: bool,
) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let context = |migrated| FnContext {
        migrated,
        _not_send: std::marker::PhantomData,
    };
    // A worker's `WorkerThread` lives on its thread's stack for the
    // thread's whole life: its address tells workers apart.
    let origin = std::ptr::from_ref(worker) as usize;
    join_in_worker(
        worker,
        move || a(context(injected)),
        move || {
            let here = WorkerThread::with_current(|current| {
                current.map_or(0, |current| std::ptr::from_ref(current) as usize)
            });
            b(context(injected || here != origin))
        },
    )
}

// Always inlined: a recursive workload then calls itself through `join`
// with its closures in registers instead of a generic call that copies
// them through memory.
#[inline(always)]
pub(crate) fn join_in_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if runs_sequentially(worker) {
        return join_sequential(worker, a, b);
    }
    let job_b = StackJob::new(WorkerLatch::new(worker), b);
    let job_b_ref = job_b.as_job_ref();
    // `push` offers the job at once if some worker is idle: `a` may run
    // long without another join (see "Sharing" in `worker`).
    if !worker.push(job_b_ref) {
        return join_unqueued(a, &job_b);
    }
    // A panic in `a` stops here: `b` must still run (and a thief running it
    // must be waited for) before this frame goes, and that work runs only
    // once the thread no longer unwinds (see "Panics" in the crate docs).
    let result_a = match panic::catch_unwind(AssertUnwindSafe(a)) {
        Ok(value) => value,
        Err(payload) => finish_b_then_resume(worker, &job_b, payload),
    };
    // Ready tasks get a turn every slice of fork/join work (`queues.rs`).
    // Counted between `a` and `b`, not before `a`: in a recursion each
    // leaf then ends at a count (counted before `a`, two leaves ran
    // between counts and a light task waited for both), and `b` stays in
    // sight of thieves while tasks are served.
    worker.count_job();
    match worker.take_local() {
        // The common case: nobody stole `b`. A panic in `b` propagates
        // directly: nothing of this join is pending any more.
        Some(job) if job.is(job_b_ref) => (result_a, job_b.run_inline()),
        popped => (result_a, reclaim_b(worker, &job_b, popped).into_value()),
    }
}

/// Whether a join on `worker` should run its two halves one after the
/// other without queueing the second (lazy queueing, see the module docs).
#[inline(always)]
pub(crate) fn runs_sequentially(worker: &WorkerThread) -> bool {
    let private = worker.private_jobs();
    // Idle workers get the jobs queued so far: the oldest, and in
    // fork/join the biggest. Otherwise, with enough jobs queued, `b` is not
    // worth queueing.
    private > 0 && !worker.offer_to_idle() && private >= JOIN_SLACK
}

/// Runs `a`, then `b`, on this thread without queueing `b`: the worker
/// already holds [`JOIN_SLACK`] queued jobs and no worker is idle. If `a`
/// panics, `b` still runs (its own panic is dropped) before `a`'s panic
/// continues, as when `b` is queued.
#[inline]
fn join_sequential<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    match panic::catch_unwind(AssertUnwindSafe(a)) {
        Ok(result_a) => {
            // As in `join_in_worker`: between the halves.
            worker.count_job();
            (result_a, b())
        }
        Err(payload) => run_then_resume(b, payload),
    }
}

/// `a` panicked in [`join_sequential`]: runs `b`, drops its panic if any,
/// and resumes `a`'s.
#[cold]
#[inline(never)]
fn run_then_resume<B: FnOnce() -> RB, RB>(b: B, payload: Box<dyn Any + Send>) -> ! {
    drop(JobResult::of(b));
    panic::resume_unwind(payload)
}

/// The local queue was full: run both closures here, `b` even if `a`
/// panics.
#[cold]
#[inline(never)]
fn join_unqueued<A, B, RA, RB>(a: A, job_b: &StackJob<WorkerLatch, B, RB>) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let result_a = JobResult::of(a);
    let result_b = JobResult::of(|| job_b.run_inline());
    (result_a.into_value(), result_b.into_value())
}

/// `a` panicked after `b` was queued: gets `b` done (here, or by its thief),
/// drops `b`'s panic if any, and resumes `a`'s.
#[cold]
#[inline(never)]
fn finish_b_then_resume<B, RB>(
    worker: &WorkerThread,
    job_b: &StackJob<WorkerLatch, B, RB>,
    payload: Box<dyn Any + Send>,
) -> !
where
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let popped = worker.take_local();
    drop(reclaim_b(worker, job_b, popped));
    panic::resume_unwind(payload)
}

/// Gets `b`'s result when the first pop did not return `b`'s job: run the
/// jobs popped instead (left behind by `a`, or older ones once `b` was
/// stolen) until `b` comes back or the queue is empty, then wait for the
/// thief.
#[cold]
#[inline(never)]
fn reclaim_b<B, RB>(
    worker: &WorkerThread,
    job_b: &StackJob<WorkerLatch, B, RB>,
    mut popped: Option<crate::sched::job::JobRef>,
) -> JobResult<RB>
where
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let job_b_ref = job_b.as_job_ref();
    while let Some(job) = popped {
        if job.is(job_b_ref) {
            return JobResult::of(|| job_b.run_inline());
        }
        // SAFETY: popped from our queue, so executed exactly once, here.
        unsafe { job.execute() };
        if job_b.latch().core().probe() {
            break;
        }
        popped = worker.take_local();
    }
    worker.wait_until(job_b.latch().core());
    // SAFETY: the latch is set: the thief ran `b` and is done with the job.
    unsafe { job_b.take_result() }
}

impl ThreadPool {
    /// [`join`](crate::join) in this pool.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(|| join(a, b))
    }
}
