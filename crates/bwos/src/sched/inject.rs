//! Work from the calling thread into a pool, wherever that thread runs:
//! on one of the pool's workers the work runs or queues there, anywhere
//! else it goes through the pool's injector and a sleeping worker is
//! woken. The front ends queue this way: a woken task
//! ([`schedule_task`], [`yield_task`]), a spawned job ([`push_or_inject`],
//! [`push_spawn_fifo`]), a closure run on a worker ([`in_worker_of`]).

use std::sync::Arc;

use super::job::{HeapJob, JobRef, StackJob};
use super::registry::Registry;
use super::task::raw::Notified;
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

/// Queues a woken task of `registry`'s pool: on the calling worker's task
/// queue if it belongs to the pool, else in the task injector (waking a sleeper
/// if nobody searches). After the pool shut down, cancels it.
pub(crate) fn schedule_task(registry: &Registry, task: Notified) {
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) => worker.push_task(task),
        None => registry.inject_task(task),
    });
}

/// Queues a task that yielded: as `schedule_task`, but a worker first
/// moves a batch of injected tasks to its queue, so that they run
/// before the yielder comes round again.
pub(crate) fn yield_task(registry: &Registry, task: Notified) {
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) => {
            if registry.tasks.has_injected() {
                worker.move_injected_tasks();
            }
            worker.push_task(task);
        }
        None => registry.inject_task(task),
    });
}

/// Pushes `job` on the calling worker's queue if it belongs to
/// `registry`'s pool, else injects it.
pub(crate) fn push_or_inject(registry: &Registry, job: JobRef) {
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) => worker.push_or_inject(job),
        None => registry.inject(job),
    });
}

/// Queues `job` so that the jobs queued this way by one worker start
/// oldest first (`spawn_fifo`, `ScopeFifo::spawn`): the job goes to the
/// worker's spawn-FIFO queue and a trampoline to its job queue; whoever
/// runs a trampoline (the worker or a thief) runs the oldest job of that
/// spawn-FIFO queue. There is one per worker, shared by `spawn_fifo` and
/// every `ScopeFifo` (rayon keeps one per scope): FIFO order holds among
/// all of them. Outside the pool the job is injected, and injected jobs
/// start in order too.
pub(crate) fn push_spawn_fifo(registry: &Arc<Registry>, job: JobRef) {
    WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) if !worker.is_building_thread() => {
            let index = worker.index();
            registry.spawn_fifos[index].push(job);
            let registry = Arc::clone(registry);
            let trampoline = HeapJob::into_job_ref(move || {
                // One trampoline per queued job: the spawn-FIFO queue
                // holds at least the job this trampoline was queued for.
                if let Some(job) = registry.take_spawn_fifo(index) {
                    // SAFETY: every job in a spawn-FIFO queue is executed
                    // exactly once, by whoever takes it out; the job (a
                    // heap job) owns itself until then.
                    unsafe { job.execute() };
                }
            });
            worker.push_or_inject(trampoline);
        }
        _ => registry.inject(job),
    });
}
