//! Detached jobs: [`spawn`] and [`spawn_fifo`] (rayon-core's), and the
//! same on a [`ThreadPool`]. A detached job holds a count of its pool
//! until it has run, so the pool outlives it; its panic goes to the
//! pool's panic handler.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::sched::current::with_current_pool;
use crate::sched::inject;
use crate::sched::job::{HeapJob, JobRef};
use crate::sched::pool::ThreadPool;
use crate::sched::registry::Registry;
use crate::sched::shutdown;
use crate::sched::worker::WorkerThread;

/// Runs `func` on the current pool (the calling worker's, else the entered
/// pool, else the global pool),
/// detached: nobody waits for it, so it must be `'static`. A panic goes to
/// the pool's panic handler ([`ThreadPoolBuilder::panic_handler`]); without
/// one it is reported on stderr and counted in
/// [`PoolStats::unhandled_panics`](crate::PoolStats::unhandled_panics),
/// and the pool carries on (rayon aborts the process here). The pool stays
/// alive until `func` has run.
///
/// [`ThreadPoolBuilder::panic_handler`]: crate::ThreadPoolBuilder::panic_handler
///
/// ```
/// let (sender, receiver) = std::sync::mpsc::channel();
/// bwos::spawn(move || sender.send(6 * 7).unwrap());
/// assert_eq!(receiver.recv().unwrap(), 42);
/// ```
pub fn spawn<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    with_current_pool(|registry| spawn_in(registry, func));
}

/// Like [`spawn`], but the jobs one worker spawns this way start in the
/// order they were spawned (FIFO) instead of newest first. Outside the
/// pools the job goes to the global pool's injector, which is FIFO too.
///
/// ```
/// let (sender, receiver) = std::sync::mpsc::channel();
/// bwos::spawn_fifo(move || sender.send("done").unwrap());
/// assert_eq!(receiver.recv().unwrap(), "done");
/// ```
pub fn spawn_fifo<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    with_current_pool(|registry| spawn_fifo_in(registry, func));
}

impl ThreadPool {
    /// [`spawn_fifo`](crate::spawn_fifo) in this pool.
    pub fn spawn_fifo<F>(&self, func: F)
    where
        F: FnOnce() + Send + 'static,
    {
        spawn_fifo_in(&self.registry, func);
    }

    /// [`spawn`](crate::spawn) in this pool: runs `func` detached. The pool
    /// stays alive until it has run.
    pub fn spawn<F>(&self, func: F)
    where
        F: FnOnce() + Send + 'static,
    {
        spawn_in(&self.registry, func);
    }
}

/// [`spawn`] on `registry`'s pool. In a breadth-first pool it queues as
/// [`spawn_fifo`] does.
fn spawn_in<F>(registry: &Arc<Registry>, func: F)
where
    F: FnOnce() + Send + 'static,
{
    let job = detached_job(registry, func);
    if registry.breadth_first() {
        inject::push_spawn_fifo(registry, job);
    } else {
        push_detached(registry, job);
    }
}

/// [`spawn_fifo`] on `registry`'s pool: jobs spawned FIFO by the same
/// worker start in the order they were spawned (see
/// `inject::push_spawn_fifo`).
fn spawn_fifo_in<F>(registry: &Arc<Registry>, func: F)
where
    F: FnOnce() + Send + 'static,
{
    let job = detached_job(registry, func);
    inject::push_spawn_fifo(registry, job);
}

/// `func` as a job that holds a count of `registry`'s pool until it has
/// run and hands its panic to the panic handler.
pub(crate) fn detached_job<F>(registry: &Arc<Registry>, func: F) -> JobRef
where
    F: FnOnce() + Send + 'static,
{
    shutdown::hold(registry);
    let registry = Arc::clone(registry);
    HeapJob::into_job_ref(move || {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(func)) {
            registry.handle_panic(payload);
        }
        shutdown::release(&registry);
    })
}

/// Queues a job nobody waits for. A worker that does not run the scheduler
/// loop (the building thread of a pool built with `use_current_thread`)
/// would keep it private while it does other things: it injects it
/// instead.
fn push_detached(registry: &Registry, job: JobRef) {
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) if !worker.is_building_thread() => worker.push_or_inject(job),
        _ => registry.inject(job),
    });
}
