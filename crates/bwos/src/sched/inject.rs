//! Work from the calling thread into a pool, wherever that thread runs:
//! on one of the pool's workers the work runs or queues there, anywhere
//! else it goes through the pool's injector and a sleeping worker is
//! woken.

use std::sync::Arc;

use super::job::StackJob;
use super::registry::Registry;
use super::wait::ThreadLatch;
use super::worker::WorkerThread;

/// Runs `op` on a worker of `registry` and returns its result; panics
/// propagate to the caller.
pub(crate) fn in_worker_of<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) => op(worker),
        None => in_worker_injected(registry, op),
    })
}

/// Injects `op` and waits for it: a thread outside every pool blocks; a
/// worker of another pool keeps running its own pool's work meanwhile.
#[cold]
fn in_worker_injected<OP, R>(registry: &Registry, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let job = StackJob::new(ThreadLatch::for_current_thread(), || {
        // `with_own`: a worker whose thread entered another pool for good
        // (a leaked `EnterGuard`, see `context.rs`) still runs its pool's
        // jobs.
        WorkerThread::with_own(|worker| {
            op(worker.expect("injected jobs run on workers of their registry"))
        })
    });
    registry.inject(job.as_job_ref());
    job.latch().core().wait();
    job.into_result().into_value()
}
