//! Broadcasts: run a closure once on every worker of a pool.
//!
//! Each worker has an inbox of broadcast jobs that only it runs (a thief
//! cannot take them: the point is which thread runs them). A worker looks
//! at its inbox right after its own queue, before it steals; a broadcast
//! wakes every sleeping worker, and a sleeper's last look before parking
//! includes its inbox (the Dekker pair of `Registry::broadcast_jobs`). A
//! worker busy with a long job runs its broadcast job when it next looks
//! for work.

use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::spawn::detached_job;
use crate::sched::current::with_current_pool;
use crate::sched::job::{HeapJob, JobRef};
use crate::sched::latch::Latch;
use crate::sched::pool::ThreadPool;
use crate::sched::registry::Registry;
use crate::sched::wait::WaiterLatch;

/// Which worker a broadcast closure runs on.
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    /// Not `Send`: the context describes the thread it was given to.
    marker: PhantomData<&'a mut dyn Fn()>,
}

impl BroadcastContext<'_> {
    pub(crate) fn new(index: usize, num_threads: usize) -> Self {
        BroadcastContext {
            index,
            num_threads,
            marker: PhantomData,
        }
    }

    /// The index of the worker running the closure: every index from 0 to
    /// [`num_threads`](Self::num_threads)` - 1` gets one call.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of workers the broadcast runs on.
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl fmt::Debug for BroadcastContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcastContext")
            .field("index", &self.index)
            .field("num_threads", &self.num_threads)
            .finish()
    }
}

/// Runs `op` once on every worker of the current pool (the calling
/// worker's, or the global pool) and returns the results by worker index.
/// A panic in any call resumes here once all calls have finished.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(3).build()?;
/// let indices = pool.install(|| bwos::broadcast(|context| context.index()));
/// assert_eq!(indices, [0, 1, 2]);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    with_current_pool(|registry| broadcast_in(registry, op))
}

/// Runs `op` once on every worker of the current pool, detached: as
/// [`spawn`](crate::spawn), the pool stays alive until every call has run,
/// and a panic goes to the panic handler.
///
/// ```
/// let (sender, receiver) = std::sync::mpsc::channel();
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
/// pool.spawn_broadcast(move |context| sender.send(context.index()).unwrap());
/// let mut seen: Vec<usize> = receiver.iter().take(2).collect();
/// seen.sort();
/// assert_eq!(seen, [0, 1]);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn spawn_broadcast<OP>(op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    with_current_pool(|registry| spawn_broadcast_in(registry, op));
}

impl ThreadPool {
    /// [`broadcast`](crate::broadcast) in this pool: runs `op` once on each
    /// of its workers and returns the results by worker index.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        broadcast_in(&self.registry, op)
    }

    /// [`spawn_broadcast`](crate::spawn_broadcast) in this pool.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        spawn_broadcast_in(&self.registry, op);
    }
}

/// What the calls of one blocking broadcast share; lives on the caller's
/// frame, which waits for all of them.
struct Shared<'a, OP, R> {
    op: &'a OP,
    results: Vec<Mutex<Option<std::thread::Result<R>>>>,
    remaining: AtomicUsize,
    latch: WaiterLatch,
}

/// [`broadcast`] in the pool of `registry`.
pub(crate) fn broadcast_in<OP, R>(registry: &Arc<Registry>, op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    let num_threads = registry.num_threads();
    let shared = Shared {
        op: &op,
        results: (0..num_threads).map(|_| Mutex::new(None)).collect(),
        remaining: AtomicUsize::new(num_threads),
        latch: WaiterLatch::for_current_thread(registry),
    };
    let jobs: Vec<JobRef> = (0..num_threads)
        .map(|index| {
            let shared = SharedPtr(&shared);
            HeapJob::into_job_ref(move || {
                // SAFETY: the caller waits for every job before `shared`
                // goes out of scope.
                let shared = unsafe { &*shared.get() };
                let context = BroadcastContext::new(index, num_threads);
                let result = panic::catch_unwind(AssertUnwindSafe(|| (shared.op)(context)));
                *lock(&shared.results[index]) = Some(result);
                // AcqRel: the last call sees the others' results (their
                // Release) before it sets the latch, whose Release hands
                // all of them to the waiter.
                if shared.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // SAFETY: the latch lives in `shared`, alive until it
                    // is set; `set` touches nothing of it afterwards.
                    unsafe { Latch::set(&raw const shared.latch) };
                }
            })
        })
        .collect();
    registry.broadcast_jobs(jobs);
    shared.latch.wait();
    let mut first_panic = None;
    let mut values = Vec::with_capacity(num_threads);
    for slot in shared.results {
        let result = slot
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner());
        match result.expect("every broadcast call stored its result before the latch was set") {
            Ok(value) => values.push(value),
            Err(payload) => {
                first_panic.get_or_insert(payload);
            }
        }
    }
    if let Some(payload) = first_panic {
        panic::resume_unwind(payload);
    }
    values
}

/// [`spawn_broadcast`] in the pool of `registry`.
pub(crate) fn spawn_broadcast_in<OP>(registry: &Arc<Registry>, op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    let num_threads = registry.num_threads();
    let op = Arc::new(op);
    let jobs = (0..num_threads)
        .map(|index| {
            let op = Arc::clone(&op);
            // Holds a count of the pool until it has run, as `spawn` does.
            detached_job(registry, move || {
                op(BroadcastContext::new(index, num_threads))
            })
        })
        .collect();
    registry.broadcast_jobs(jobs);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a call panicked after storing; the slot
    // is intact (calls store outside `catch_unwind` only a finished value).
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// A pointer to a broadcast's shared state that its jobs carry.
struct SharedPtr<'a, OP, R>(*const Shared<'a, OP, R>);

// SAFETY: the jobs use `op` by shared reference from several threads
// (`OP: Sync`) and send their `R` to the caller (`R: Send`); the rest is
// atomics, mutexes and a latch meant for other threads to set.
unsafe impl<OP: Sync, R: Send> Send for SharedPtr<'_, OP, R> {}

impl<'a, OP, R> SharedPtr<'a, OP, R> {
    fn get(&self) -> *const Shared<'a, OP, R> {
        self.0
    }
}
