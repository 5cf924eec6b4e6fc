//! `block_in_place`'s core: while a worker's thread runs a closure that
//! blocks, another thread runs that worker.
//!
//! A worker's state (its job and task queues, its place in the sleep
//! protocol, the timers' watch and the driver's seat it may take when it
//! sleeps) lives in its `WorkerThread`, which the scheduler reaches
//! through the thread-local `CURRENT`. So to keep the worker running while
//! its thread blocks, the thread leaves the worker (clears `CURRENT`),
//! starts a *replacement* thread that sets `CURRENT` to the same worker and
//! runs its scheduler loop, and runs the closure as a thread outside the
//! pool that works for it (`context.rs`: its tasks, timers and joins go to
//! the pool). Every task queued on the worker, every job of the frames
//! suspended below the closure (a `join`'s `b`) and every role the worker
//! takes when it sleeps is then the replacement's: nothing waits for the
//! closure. Unparks of the worker reach the replacement
//! (`Registry::register_replacement`).
//!
//! When the closure returns, the thread sets the replacement's latch and
//! joins it: the replacement finishes the job or task poll it is running,
//! leaves the loop (handing over the timers' watch if it held it) and
//! exits, and the thread takes its worker back. That wait is the one cost
//! the caller sees: at most one job or poll of the pool's work.
//!
//! The worker is used by one thread at a time: the original thread does
//! not touch it between leaving it and joining the replacement, and the
//! thread start and the join order the two threads' accesses.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use super::context;
use super::latch::CoreLatch;
use super::worker::WorkerThread;

/// Runs `f`, which may block, on the calling thread; if that thread is a
/// worker, another thread runs the worker meanwhile (see the module
/// docs). Outside a worker, and on a pool's building thread (which runs
/// pool work only while it waits for some), it simply runs `f`.
pub(crate) fn block_in_place<R>(f: impl FnOnce() -> R) -> R {
    let worker = WorkerThread::current_ptr();
    // SAFETY: as in `WorkerThread::with_current`: non-null, the current
    // worker lives on this thread's stack while the thread runs pool work,
    // which includes this call.
    let Some(worker) = (unsafe { worker.as_ref() }) else {
        return f();
    };
    if worker.is_building_thread() {
        return f();
    }
    let registry = Arc::clone(worker.registry());
    // For the paused clock, `f` is the pool's work running outside its
    // workers from before the worker moves (it is busy until then) until
    // `f` returned.
    #[cfg(feature = "test-util")]
    registry.outside_work_started();
    let give_back = Arc::new(CoreLatch::new());
    // The worker's address crosses to the replacement as an integer: the
    // safety argument is the hand-over's, not the type's.
    let address = std::ptr::from_ref(worker) as usize;
    worker.leave_thread();
    let mut thread =
        std::thread::Builder::new().name(format!("bwos-replacement-{}", worker.index()));
    if let Some(size) = registry.worker_stack_size() {
        thread = thread.stack_size(size);
    }
    let replacement = thread.spawn({
        let give_back = Arc::clone(&give_back);
        move || {
            #[cfg(feature = "tokio-compat")]
            let _tokio = super::tokio_compat::enter();
            super::idle::spread::mark_worker_thread();
            // SAFETY: the worker lives on the original thread's stack,
            // below this `block_in_place`, which joins this thread before
            // it returns; that thread left the worker before this thread
            // started and touches it again only after the join.
            let worker = unsafe { &*(address as *const WorkerThread) };
            // SAFETY: as above: the original thread left the worker and
            // waits for this call's end before it uses it.
            unsafe { worker.run_as_replacement(&give_back) };
        }
    });
    let Ok(replacement) = replacement else {
        // No thread to be had: run `f` in place, as a worker.
        worker.return_to_thread();
        #[cfg(feature = "test-util")]
        registry.outside_work_finished();
        return f();
    };
    let result = panic::catch_unwind(AssertUnwindSafe(|| context::enter(&registry, f)));
    #[cfg(feature = "test-util")]
    registry.outside_work_finished();
    if give_back.set() {
        // The replacement sleeps on the latch: wake it (it is registered
        // as the worker's thread).
        registry.unpark(worker.index());
    }
    if replacement.join().is_err() {
        // Its loop aborts the process on a panic (`AbortOnUnwind`).
        unreachable!("a replacement worker panicked");
    }
    worker.return_to_thread();
    match result {
        Ok(value) => value,
        Err(payload) => panic::resume_unwind(payload),
    }
}
