//! `join`: run two closures, potentially in parallel (child stealing).
//!
//! The calling worker pushes a job for `b` that lives in its own frame,
//! runs `a`, then pops: if the job is still there (the common case) it runs
//! `b` directly. Push and pop are the BWoS owner fast path, without atomic
//! read-modify-write or fence, and the latch is only built (two plain
//! stores), never read. Only if `b` was stolen does the worker look at the
//! latch, running other work until the thief sets it.

use crate::job::{JobResult, StackJob};
use crate::latch::WorkerLatch;
use crate::worker::WorkerThread;

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// `a` runs on the calling thread; `b` may be stolen by another worker of
/// the pool. Called outside any pool, `join` runs in the global pool. If
/// either closure panics the other still runs to completion, then the panic
/// resumes in the caller (`a`'s if both panic).
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
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let worker = WorkerThread::current();
    if worker.is_null() {
        return crate::pool::global::registry().in_worker(|worker| join_in_worker(worker, a, b));
    }
    // SAFETY: the current worker lives on this thread's stack while the
    // thread runs pool work, which includes this call.
    join_in_worker(unsafe { &*worker }, a, b)
}

#[inline]
fn join_in_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let job_b = StackJob::new(WorkerLatch::new(worker), b);
    let job_b_ref = job_b.as_job_ref();
    if !worker.push(job_b_ref) {
        // The local queue is full: run both here, in order.
        let result_a = JobResult::of(a);
        let result_b = JobResult::of(|| job_b.run_inline());
        return (result_a.into_value(), result_b.into_value());
    }
    // `b` must be done before this frame goes, even if `a` panics.
    let result_a = JobResult::of(a);
    loop {
        match worker.take_local() {
            Some(job) if job.is(job_b_ref) => {
                let result_b = JobResult::of(|| job_b.run_inline());
                return (result_a.into_value(), result_b.into_value());
            }
            // Jobs `a` pushed and left behind (spawns), or, once `b` has
            // been stolen, older local jobs: run them while we are here.
            Some(job) => {
                // SAFETY: popped from our queue, so executed exactly once.
                unsafe { job.execute() };
                if job_b.latch().core().probe() {
                    break;
                }
            }
            None => break,
        }
    }
    // `b` was stolen: wait for the thief, working meanwhile.
    worker.wait_until(job_b.latch().core());
    (result_a.into_value(), job_b.into_result().into_value())
}
