//! `scope`: spawn any number of closures that may borrow from the caller's
//! stack; the scope returns when all of them have finished.
//!
//! Completion is counted the Nowa way ([`counter`]): the scope body's own
//! spawns cost no atomic read-modify-write, completions decrement an atomic
//! that cannot reach zero before the body ends, and the end of the body
//! restores the true count with one atomic subtraction.

pub(crate) mod counter;

use std::any::Any;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, Ordering};

use counter::NowaCounter;

use crate::job::{AbortOnUnwind, HeapJob};
use crate::latch::{Latch, WorkerLatch};
use crate::pool::registry::Registry;
use crate::worker::WorkerThread;

/// The type of closures a scope runs, for its variance marker.
type SpawnedBody<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + Sync + 'scope>;

/// A scope to spawn borrowing work into; see [`scope`].
pub struct Scope<'scope> {
    registry: Arc<Registry>,
    /// The worker running the scope body: its spawns are counted in plain
    /// memory.
    owner: *const WorkerThread,
    counter: NowaCounter,
    /// Set by the last completion after the body ended; wakes the owner.
    latch: WorkerLatch,
    /// The first panic recorded: of the body or of a spawned closure.
    panic: AtomicPtr<Box<dyn Any + Send>>,
    /// Invariant in `'scope`, like the closures it holds.
    marker: PhantomData<SpawnedBody<'scope>>,
}

// SAFETY: the raw pointers are compared (`owner`) or only dereferenced by
// the owner's own thread (the latch's registry pointer is used by setters
// that keep the registry alive); everything else is `Sync`.
unsafe impl Sync for Scope<'_> {}
// SAFETY: as above; a scope is never moved while jobs point to it (it lives
// in `scope`'s frame).
unsafe impl Send for Scope<'_> {}

/// Creates a scope, runs `op` in it and returns once `op` and every closure
/// spawned into the scope (transitively) have finished.
///
/// Spawned closures may borrow anything that outlives the scope. Called
/// outside any pool, the scope runs in the global pool.
///
/// # Panics
/// If `op` or any spawned closure panics, the scope still waits for all of
/// them, then resumes the panic that was recorded first, in time: `op`'s
/// panic is recorded when `op` unwinds, a spawned closure's when it
/// unwinds. The other panics are dropped. This is rayon-core's rule, so
/// porting does not change which panic a caller sees.
///
/// ```
/// let mut counts = vec![0u32; 4];
/// let words = ["a", "bb", "ccc", "dddd"];
/// bwos::scope(|s| {
///     for (count, word) in counts.iter_mut().zip(&words) {
///         s.spawn(move |_| *count = word.len() as u32);
///     }
/// });
/// assert_eq!(counts, [1, 2, 3, 4]);
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let worker = WorkerThread::current();
    if worker.is_null() {
        return crate::pool::global::registry().in_worker(|worker| scope_in_worker(worker, op));
    }
    // SAFETY: the current worker lives on this thread's stack while the
    // thread runs pool work, which includes this call.
    scope_in_worker(unsafe { &*worker }, op)
}

fn scope_in_worker<'scope, OP, R>(worker: &WorkerThread, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let scope = Scope {
        registry: Arc::clone(worker.registry()),
        owner: worker,
        counter: NowaCounter::new(),
        latch: WorkerLatch::new(worker),
        panic: AtomicPtr::new(ptr::null_mut()),
        marker: PhantomData,
    };
    // A panic of the body is recorded like a spawned job's: the first one
    // recorded is the one the caller gets (as in rayon-core).
    let result = match panic::catch_unwind(AssertUnwindSafe(|| op(&scope))) {
        Ok(value) => Some(value),
        Err(payload) => {
            scope.record_panic(payload);
            None
        }
    };
    if !scope.counter.end_of_body() {
        worker.wait_until(scope.latch.core());
    }
    // Every job is done; nothing points to the scope any more.
    // Acquire: pairs with the Release CAS that stored the panic; the
    // counter's release sequence orders it before us anyway.
    let first_panic = scope.panic.swap(ptr::null_mut(), Ordering::Acquire);
    if !first_panic.is_null() {
        // SAFETY: a non-null pointer came from `Box::into_raw` in
        // `record_panic` and was swapped out exactly once.
        let payload = unsafe { Box::from_raw(first_panic) };
        panic::resume_unwind(*payload);
    }
    result.expect("the body returned: it did not panic, and nothing else was recorded")
}

impl<'scope> Scope<'scope> {
    /// Spawns `body` into the scope: it runs on some worker of the pool,
    /// before the scope returns. It gets the scope, to spawn more.
    ///
    /// ```
    /// let total = std::sync::atomic::AtomicU64::new(0);
    /// bwos::scope(|s| {
    ///     for i in 0..100u64 {
    ///         let total = &total;
    ///         s.spawn(move |s| {
    ///             // Nested spawns belong to the same scope.
    ///             s.spawn(move |_| {
    ///                 total.fetch_add(i, std::sync::atomic::Ordering::Relaxed);
    ///             });
    ///         });
    ///     }
    /// });
    /// assert_eq!(total.into_inner(), 4950);
    /// ```
    pub fn spawn<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let scope = ScopePtr(self);
        let job = HeapJob::into_job_ref(move || {
            // SAFETY: the scope waits for this job before it returns.
            let scope = unsafe { scope.get() };
            scope.run_spawned(body);
        });
        let current = WorkerThread::current();
        if ptr::eq(current, self.owner) {
            self.counter.spawn_on_owner_thread();
            // SAFETY: `current` is the live worker of this thread.
            unsafe { (*current).push_or_inject(job) };
        } else {
            self.counter.spawn_elsewhere();
            self.registry.push_or_inject(job);
        }
    }

    fn run_spawned<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| body(self))) {
            self.record_panic(payload);
        }
        let guard = AbortOnUnwind::new("completing a scope job");
        if self.counter.complete() {
            // SAFETY: the latch lives in the scope, which is alive until the
            // latch is set; `set` touches nothing of it afterwards.
            unsafe { Latch::set(&raw const self.latch) };
        }
        guard.disarm();
    }

    fn record_panic(&self, payload: Box<dyn Any + Send>) {
        let boxed = Box::into_raw(Box::new(payload));
        // Release: pairs with the owner's Acquire swap. Only the first
        // panic is kept.
        if self
            .panic
            .compare_exchange(ptr::null_mut(), boxed, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: `boxed` was not published; we still own it.
            drop(unsafe { Box::from_raw(boxed) });
        }
    }
}

/// A pointer to a scope that spawned jobs carry.
struct ScopePtr<'scope>(*const Scope<'scope>);

// SAFETY: `Scope` is `Sync`, so a pointer to it may cross threads.
unsafe impl Send for ScopePtr<'_> {}

impl<'scope> ScopePtr<'scope> {
    /// # Safety
    /// The scope is alive for `'a` (it waits for every job it spawned).
    unsafe fn get<'a>(&self) -> &'a Scope<'scope> {
        // SAFETY: forwarded from the caller.
        unsafe { &*self.0 }
    }
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}
