//! Jobs: a pointer plus the function that runs what it points to.
//!
//! Front ends decide where a job lives: [`StackJob`] on the stack of the
//! frame that waits for it (`join`, `install`), [`HeapJob`] in a frame of
//! the per-thread frame cache that the job frees when it runs (`spawn`,
//! `Scope::spawn`). Queues carry the two-word [`JobRef`].

use std::alloc::Layout;
use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use super::frame_cache;
use super::latch::Latch;

/// A type-erased reference to a job, as queues carry it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    data: *const (),
    execute: unsafe fn(*const ()),
}

// SAFETY: a `JobRef` is created only from jobs whose closures and results
// are `Send` (enforced by the constructors' callers' bounds), and running
// it on another thread is the point of work stealing.
unsafe impl Send for JobRef {}

impl JobRef {
    /// A job that runs `execute(data)`.
    ///
    /// # Safety
    /// `execute(data)` must be sound to call once, on any thread, for as
    /// long as the `JobRef` (or a copy) may still be executed.
    pub(crate) unsafe fn new(data: *const (), execute: unsafe fn(*const ())) -> JobRef {
        JobRef { data, execute }
    }

    /// Whether both refer to the same job (the same address: a job is
    /// alive until it ran, so two live jobs never share one).
    #[inline]
    pub(crate) fn is(self, other: JobRef) -> bool {
        std::ptr::eq(self.data, other.data)
    }

    /// Whether the job runs by calling `execute` (tells a kind of job from
    /// the others: `Notified::is_entry`). Compares the functions'
    /// addresses: `execute` must be a function that is not generic and
    /// not `#[inline]`, so that it has exactly one.
    #[inline]
    pub(crate) fn runs(self, execute: unsafe fn(*const ())) -> bool {
        self.execute as usize == execute as usize
    }

    /// Runs the job. Each `JobRef` must be executed exactly once, while
    /// the job it points to is alive.
    ///
    /// # Safety
    /// As above.
    #[inline]
    pub(crate) unsafe fn execute(self) {
        // SAFETY: forwarded from the caller.
        unsafe { (self.execute)(self.data) }
    }
}

/// The outcome of a job that ran to completion or panicked.
pub(crate) enum JobResult<R> {
    Pending,
    Done(R),
    Panicked(Box<dyn Any + Send>),
}

impl<R> JobResult<R> {
    pub(crate) fn of(f: impl FnOnce() -> R) -> Self {
        match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => JobResult::Done(value),
            Err(payload) => JobResult::Panicked(payload),
        }
    }

    /// The value, or the panic resumed on the calling thread.
    pub(crate) fn into_value(self) -> R {
        match self {
            JobResult::Done(value) => value,
            JobResult::Panicked(payload) => panic::resume_unwind(payload),
            JobResult::Pending => unreachable!("a job's result was taken before it ran"),
        }
    }
}

/// A job that lives in the frame of the thread that waits for it: the
/// closure, its result, and the latch its completion sets.
pub(crate) struct StackJob<L, F, R> {
    latch: L,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<L: Latch, F: FnOnce() -> R + Send, R: Send> StackJob<L, F, R> {
    pub(crate) fn new(latch: L, func: F) -> Self {
        StackJob {
            latch,
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::Pending),
        }
    }

    pub(crate) fn latch(&self) -> &L {
        &self.latch
    }

    /// A reference for a queue. The job must stay where it is until it
    /// ran and set its latch, or was taken back with `run_inline`.
    pub(crate) fn as_job_ref(&self) -> JobRef {
        JobRef {
            data: (self as *const Self).cast(),
            execute: Self::execute_erased,
        }
    }

    /// Runs the job's closure on the calling thread, which took its
    /// `JobRef` back before anybody else ran it. The latch is not set.
    pub(crate) fn run_inline(&self) -> R {
        // SAFETY: the caller holds the only `JobRef`, so nobody else
        // touches the closure.
        let func = unsafe { (*self.func.get()).take() };
        func.expect("a stack job runs once")()
    }

    /// The result after the latch was observed set.
    pub(crate) fn into_result(self) -> JobResult<R> {
        self.result.into_inner()
    }

    /// Takes the result out after the latch was observed set.
    ///
    /// # Safety
    /// The latch has been observed set (`probe`), so the job has run and
    /// nobody else touches the result any more.
    pub(crate) unsafe fn take_result(&self) -> JobResult<R> {
        // SAFETY: guaranteed by the caller.
        unsafe { std::mem::replace(&mut *self.result.get(), JobResult::Pending) }
    }

    /// # Safety
    /// `this` is a `StackJob<L, F, R>` that has not run yet and stays alive
    /// until its latch is set.
    unsafe fn execute_erased(this: *const ()) {
        let this: *const Self = this.cast();
        // SAFETY: the caller guarantees the type and that this is the only
        // execution; the waiter does not read `func` or `result` before
        // the latch is set.
        unsafe {
            let func = (*(*this).func.get()).take().expect("a stack job runs once");
            *(*this).result.get() = JobResult::of(func);
            Latch::set(&raw const (*this).latch);
        }
    }
}

/// A job on the heap, freed when it runs. Its closure handles its own
/// panics (a scope records them, `spawn` hands them to the panic handler).
///
/// The job's memory is a frame of the calling thread's [frame
/// cache](super::frame_cache), not a `Box`: a loop of spawns allocates
/// jobs of one size on the spawning worker, and the workers that run them
/// free them, as fast as they come (see the cache's module docs for what
/// the global allocator costs there).
pub(crate) struct HeapJob<F> {
    func: F,
}

impl<F: FnOnce() + Send> HeapJob<F> {
    const LAYOUT: Layout = Layout::new::<HeapJob<F>>();

    /// Moves `func` to the heap and returns the only reference to it; the
    /// job is freed when that reference executes. Dropping the reference
    /// leaks the job.
    ///
    /// The closure may borrow data that the caller guarantees to keep
    /// alive until the job has run (a scope waits for its jobs).
    pub(crate) fn into_job_ref(func: F) -> JobRef {
        let job: NonNull<Self> = if Self::LAYOUT.size() == 0 {
            // A zero-sized job needs no memory (and the cache serves none).
            NonNull::dangling()
        } else {
            frame_cache::allocate(Self::LAYOUT).cast()
        };
        // SAFETY: `job` is valid for writes of a `HeapJob<F>`: a fresh
        // frame of its layout, or dangling and aligned for a zero-sized one.
        unsafe { job.write(HeapJob { func }) };
        JobRef {
            data: job.as_ptr().cast_const().cast(),
            execute: Self::execute_erased,
        }
    }

    /// # Safety
    /// `this` came from `into_job_ref` for this `F` and runs once.
    unsafe fn execute_erased(this: *const ()) {
        let job = this.cast::<Self>().cast_mut();
        // SAFETY: the caller guarantees the pointer came from
        // `into_job_ref` for this `F` and that this is its only execution:
        // the job is initialized and nobody else reads it.
        let HeapJob { func } = unsafe { job.read() };
        if Self::LAYOUT.size() != 0 {
            // Freed before the closure runs, so that the spawns it makes
            // reuse the frame while it is hot.
            // SAFETY: the frame came from `allocate(Self::LAYOUT)` and was
            // read out above; nothing uses it afterwards.
            unsafe { frame_cache::free(NonNull::new_unchecked(job).cast(), Self::LAYOUT) };
        }
        func();
    }
}

/// Aborts the process if the bwos code it guards unwinds: that code keeps
/// frames other threads point into (a scope, a worker's queue), and
/// unwinding out of it would free them under their feet.
///
/// Create it before the guarded code and [`disarm`](Self::disarm) it after:
/// only a drop that happens because the guarded code itself unwound aborts.
/// It does not look at `std::thread::panicking()`: bwos catches every user
/// panic before it runs pool work, but a guard that merely sees some other
/// frame of the thread unwinding must not take that as a bug.
///
/// Only bwos's own bookkeeping runs under such a guard; the user code it
/// calls runs under `catch_unwind` (closures, polls, futures' destructors,
/// the wakers it calls and the values it drops: `quietly.rs`), so
/// reaching the abort means a bug in bwos.
pub(crate) struct AbortOnUnwind {
    what: &'static str,
}

impl AbortOnUnwind {
    /// Guards the code that follows, until [`disarm`](Self::disarm).
    #[inline]
    pub(crate) fn new(what: &'static str) -> Self {
        AbortOnUnwind { what }
    }

    /// The guarded code finished without unwinding.
    #[inline]
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!(
            "bwos: {} panicked; aborting: bwos catches the panics of jobs, tasks and \
             their destructors and of the wakers it calls, so this is a bug in bwos",
            self.what
        );
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops: a job's captures are dropped exactly once, when
    /// its closure has run.
    struct DropCounter(Arc<AtomicUsize>);

    impl Drop for DropCounter {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_heap_job_runs_once_and_drops_its_captures_once() {
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let jobs: Vec<JobRef> = (0..100)
            .map(|i| {
                let ran = Arc::clone(&ran);
                let captured = (DropCounter(Arc::clone(&dropped)), format!("job {i}"));
                HeapJob::into_job_ref(move || {
                    let captured = captured;
                    assert!(captured.1.starts_with("job "));
                    ran.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        for job in jobs {
            // SAFETY: each job is executed once, while alive.
            unsafe { job.execute() };
        }
        assert_eq!(ran.load(Ordering::Relaxed), 100);
        assert_eq!(dropped.load(Ordering::Relaxed), 100);
    }

    #[test]
    fn zero_sized_and_large_jobs_run() {
        static RAN: AtomicUsize = AtomicUsize::new(0);
        let zero_sized = HeapJob::into_job_ref(|| {
            RAN.fetch_add(1, Ordering::Relaxed);
        });
        let big = [7u8; 4096];
        let large = HeapJob::into_job_ref(move || {
            RAN.fetch_add(
                big.iter().map(|&b| usize::from(b)).sum::<usize>(),
                Ordering::Relaxed,
            );
        });
        // SAFETY: each job is executed once, while alive.
        unsafe {
            zero_sized.execute();
            large.execute();
        }
        assert_eq!(RAN.load(Ordering::Relaxed), 1 + 7 * 4096);
    }

    #[test]
    fn a_job_made_on_one_thread_runs_on_another() {
        let total = Arc::new(AtomicUsize::new(0));
        let jobs: Vec<JobRef> = (0..50)
            .map(|i| {
                let total = Arc::clone(&total);
                HeapJob::into_job_ref(move || {
                    total.fetch_add(i, Ordering::Relaxed);
                })
            })
            .collect();
        std::thread::spawn(move || {
            for job in jobs {
                // SAFETY: each job is executed once, while alive.
                unsafe { job.execute() };
            }
        })
        .join()
        .expect("the thread runs the jobs");
        assert_eq!(total.load(Ordering::Relaxed), 49 * 50 / 2);
    }

    #[test]
    fn a_job_that_makes_a_job_of_its_size_reuses_its_frame() {
        let second = Arc::new(std::sync::Mutex::new(None));
        let first_address = Arc::new(AtomicUsize::new(0));
        let first = {
            let second = Arc::clone(&second);
            let payload = [1u64; 3];
            HeapJob::into_job_ref(move || {
                let payload = payload;
                let job = HeapJob::into_job_ref(move || assert_eq!(payload, [1; 3]));
                *second.lock().unwrap() = Some((job.data as usize, job));
            })
        };
        first_address.store(first.data as usize, Ordering::Relaxed);
        // SAFETY: executed once, while alive.
        unsafe { first.execute() };
        let (address, job) = second.lock().unwrap().take().expect("made a job");
        assert_eq!(
            address,
            first_address.load(Ordering::Relaxed),
            "the frame was freed before the closure ran"
        );
        // SAFETY: executed once, while alive.
        unsafe { job.execute() };
    }
}
