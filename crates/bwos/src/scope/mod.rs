//! `scope`: spawn any number of closures that may borrow from the caller's
//! stack; the scope returns when all of them have finished.
//!
//! Completion is counted the Nowa way ([`counter`]): the scope body's own
//! spawns cost no atomic read-modify-write, completions decrement an atomic
//! that cannot reach zero before the body ends, and the end of the body
//! restores the true count with one atomic subtraction.

pub(crate) mod broadcast;
pub(crate) mod counter;
pub(crate) mod spawn;

use std::any::Any;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, Ordering};

use counter::NowaCounter;

use crate::sched::current::{in_worker, with_current_pool};
use crate::sched::inject;
use crate::sched::job::{AbortOnUnwind, HeapJob, JobRef};
use crate::sched::latch::Latch;
use crate::sched::pool::ThreadPool;
use crate::sched::registry::Registry;
use crate::sched::wait::WaiterLatch;
use crate::sched::worker::WorkerThread;
use broadcast::BroadcastContext;

/// The type of closures a scope runs, for its variance marker.
type SpawnedBody<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + Sync + 'scope>;

/// A scope to spawn borrowing work into; see [`scope`] and
/// [`in_place_scope`].
pub struct Scope<'scope> {
    registry: Arc<Registry>,
    /// The worker running the scope body: its spawns are counted in plain
    /// memory. Null when the body runs on a thread that is not a worker
    /// of `registry` (`in_place_scope`).
    owner: *const WorkerThread,
    counter: NowaCounter,
    /// Set by the last completion after the body ended; wakes the owner.
    latch: WaiterLatch,
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
    in_worker(|worker, _| in_place_scope_in(worker.registry(), op))
}

/// Creates a scope whose body runs on the calling thread, even outside
/// every pool; spawned closures run in the current pool (the calling
/// worker's, or the global pool). Otherwise as [`scope`]: returns once `op`
/// and every closure spawned into the scope have finished, and resumes
/// the first panic. A thread outside the pools blocks while it waits for
/// the spawned closures.
///
/// ```
/// let mut halves = [0u64; 2];
/// let (low, high) = halves.split_at_mut(1);
/// bwos::in_place_scope(|s| {
///     s.spawn(|_| low[0] = (0..50).sum());
///     high[0] = (50..100).sum(); // runs here, on the caller's thread
/// });
/// assert_eq!(halves[0] + halves[1], 4950);
/// ```
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    with_current_pool(|registry| in_place_scope_in(registry, op))
}

/// [`in_place_scope`] in the pool of `registry`.
pub(crate) fn in_place_scope_in<'scope, OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let scope = Scope::new(registry);
    let result = panic::catch_unwind(AssertUnwindSafe(|| op(&scope)));
    scope.complete(result)
}

/// Like [`scope`], but the closures spawned with
/// [`ScopeFifo::spawn_fifo`] by one thread start in the order they were
/// spawned (FIFO), rather than newest first.
///
/// bwos keeps one FIFO per worker, shared by all FIFO spawns of that worker
/// (rayon keeps one per worker and scope): the order among spawns of
/// different scopes on one worker is FIFO too.
///
/// ```
/// let order = std::sync::Mutex::new(Vec::new());
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// pool.scope_fifo(|s| {
///     for i in 0..4 {
///         let order = &order;
///         s.spawn_fifo(move |_| order.lock().unwrap().push(i));
///     }
/// });
/// assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    scope(|base| op(ScopeFifo::from_base(base)))
}

/// [`in_place_scope`] with FIFO spawns, as in [`scope_fifo`].
pub fn in_place_scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    in_place_scope(|base| op(ScopeFifo::from_base(base)))
}

/// A scope whose spawns start oldest first; see [`scope_fifo`].
#[repr(transparent)]
pub struct ScopeFifo<'scope> {
    base: Scope<'scope>,
}

impl<'scope> ScopeFifo<'scope> {
    /// The FIFO view of a scope: the same scope, with FIFO spawns.
    pub(crate) fn from_base<'a>(base: &'a Scope<'scope>) -> &'a ScopeFifo<'scope> {
        // SAFETY: `ScopeFifo` is `repr(transparent)` over `Scope`: same
        // layout and validity, and the cast keeps the target and lifetime.
        unsafe { &*ptr::from_ref(base).cast::<ScopeFifo<'scope>>() }
    }

    /// Spawns `body` into the scope, behind the earlier FIFO spawns of this
    /// thread; it gets the scope, to spawn more.
    pub fn spawn_fifo<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&ScopeFifo<'scope>) + Send + 'scope,
    {
        let scope = ScopePtr(&self.base);
        let job = HeapJob::into_job_ref(move || {
            // SAFETY: the scope waits for this job before it returns.
            let base = unsafe { scope.get() };
            base.run_spawned(|| body(ScopeFifo::from_base(base)));
        });
        self.base.queue(job, true);
    }

    /// Runs `body` once on every worker of the pool, as
    /// [`Scope::spawn_broadcast`] does.
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&ScopeFifo<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        self.base
            .spawn_broadcast(move |base, context| body(ScopeFifo::from_base(base), context));
    }
}

impl std::fmt::Debug for ScopeFifo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeFifo").finish_non_exhaustive()
    }
}

impl<'scope> Scope<'scope> {
    /// A scope of the pool of `registry`, owned by the calling thread.
    fn new(registry: &Arc<Registry>) -> Self {
        Scope {
            registry: Arc::clone(registry),
            owner: WorkerThread::with_current_in(registry, |worker| {
                worker.map_or(ptr::null(), ptr::from_ref)
            }),
            counter: NowaCounter::new(),
            latch: WaiterLatch::for_current_thread(registry),
            panic: AtomicPtr::new(ptr::null_mut()),
            marker: PhantomData,
        }
    }

    /// Ends the body, whose outcome is `result`: waits for every spawned
    /// job, then returns the body's value or resumes the first panic.
    fn complete<R>(&self, result: std::thread::Result<R>) -> R {
        // A panic of the body is recorded like a spawned job's: the first
        // one recorded is the one the caller gets (as in rayon-core).
        let result = match result {
            Ok(value) => Some(value),
            Err(payload) => {
                self.record_panic(payload);
                None
            }
        };
        if !self.counter.end_of_body() {
            self.latch.wait();
        }
        // Every job is done; nothing points to the scope any more.
        // Acquire: pairs with the Release CAS that stored the panic; the
        // counter's release sequence orders it before us anyway.
        let first_panic = self.panic.swap(ptr::null_mut(), Ordering::Acquire);
        if !first_panic.is_null() {
            // SAFETY: a non-null pointer came from `Box::into_raw` in
            // `record_panic` and was swapped out exactly once.
            let payload = unsafe { Box::from_raw(first_panic) };
            panic::resume_unwind(*payload);
        }
        result.expect("the body returned: it did not panic, and nothing else was recorded")
    }

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
            scope.run_spawned(|| body(scope));
        });
        self.queue(job, self.registry.breadth_first());
    }

    /// Runs `body` once on every worker of the pool, with a
    /// [`BroadcastContext`] telling which; the scope waits for all of
    /// them. A worker runs its broadcast job when it next looks for work
    /// (it is not stolen by another).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let ran = AtomicUsize::new(0);
    /// pool.scope(|s| s.spawn_broadcast(|_, context| {
    ///     assert_eq!(context.num_threads(), 2);
    ///     ran.fetch_add(1, Ordering::Relaxed);
    /// }));
    /// assert_eq!(ran.into_inner(), 2);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&Scope<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        let body = Arc::new(body);
        let num_threads = self.registry.num_threads();
        let jobs = (0..num_threads)
            .map(|index| {
                let scope = ScopePtr(self);
                let body = Arc::clone(&body);
                // Counted before it can run (see `counter`: spawns counted
                // in the atomic are valid from any thread).
                self.counter.spawn_elsewhere();
                HeapJob::into_job_ref(move || {
                    // SAFETY: the scope waits for this job before it returns.
                    let scope = unsafe { scope.get() };
                    scope.run_spawned(|| body(scope, BroadcastContext::new(index, num_threads)));
                })
            })
            .collect();
        self.registry.broadcast_jobs(jobs);
    }

    /// Counts `job` in the scope and queues it: LIFO on the owner's queue
    /// or FIFO (see `inject::push_spawn_fifo`).
    fn queue(&self, job: JobRef, fifo: bool) {
        WorkerThread::with_current(|current| {
            let owner = current.filter(|current| ptr::eq(*current, self.owner));
            match owner {
                Some(_) => self.counter.spawn_on_owner_thread(),
                None => self.counter.spawn_elsewhere(),
            }
            match owner {
                _ if fifo => inject::push_spawn_fifo(&self.registry, job),
                Some(owner) => owner.push_or_inject(job),
                None => inject::push_or_inject(&self.registry, job),
            }
        });
    }

    fn run_spawned(&self, body: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(body)) {
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

impl ThreadPool {
    /// [`scope`](crate::scope) in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| scope(op))
    }

    /// [`scope_fifo`](crate::scope_fifo) in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| scope_fifo(op))
    }

    /// [`in_place_scope`](crate::in_place_scope) with this pool: the body
    /// runs on the calling thread, spawned closures in this pool.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        in_place_scope_in(&self.registry, op)
    }

    /// [`in_place_scope_fifo`](crate::in_place_scope_fifo) with this pool.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        self.in_place_scope(|base| op(ScopeFifo::from_base(base)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Spawns that borrow, nested spawns and FIFO spawns all run once on
    /// a pool of two, their job frames moving between the workers (small
    /// enough for Miri).
    #[test]
    fn spawned_jobs_run_once_across_workers() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool");
        let slots: Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        pool.scope(|s| {
            for (i, slot) in slots.iter().enumerate() {
                s.spawn(move |s| {
                    slot.fetch_add(1, Ordering::Relaxed);
                    s.spawn(move |_| {
                        slot.fetch_add(i as u64, Ordering::Relaxed);
                    });
                });
            }
        });
        pool.scope_fifo(|s| {
            for slot in &slots {
                s.spawn_fifo(move |_| {
                    slot.fetch_add(1000, Ordering::Relaxed);
                });
            }
        });
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(slot.load(Ordering::Relaxed), 1 + i as u64 + 1000);
        }
    }
}
