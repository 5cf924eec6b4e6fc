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
//! When the closure returns, the thread waits for its turn to run the
//! worker again (`handover.rs`): the thread running it passes it on at its
//! next boundary between jobs and polls (to the threads that waited
//! longer first), and a replacement then waits for the next call
//! (`spare_threads.rs`). That wait is the one cost the caller sees: the
//! job or poll the worker is in, usually. The worker is passed on in the
//! order threads wait for it, not in the order it was lent: a replacement
//! may itself lend it on (a `block_on` in a task it polls), and the first
//! thread's closure may be what the later one waits for.
//!
//! The worker is used by one thread at a time: a thread touches it only
//! between taking its turn and passing it on, and the baton's lock (or
//! the thread start, or the spare thread's lock, for a replacement)
//! orders the two threads' accesses. A replacement that passed its worker
//! on waits for the next one (`spare_threads.rs`).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use super::context;
use super::latch::CoreLatch;
use super::registry::Registry;
use super::spare_threads::{Lent, Slot};
use super::worker::WorkerThread;

thread_local! {
    /// The latch of this replacement thread's own scheduler loop, the one
    /// that ends when a thread waits for the worker; null on other threads.
    static REPLACEMENT_LOOP: Cell<*const CoreLatch> = const { Cell::new(ptr::null()) };
}

/// Runs `run`, a replacement's own scheduler loop waiting on `end`.
pub(crate) fn run_replacement_loop(end: &CoreLatch, run: impl FnOnce()) {
    REPLACEMENT_LOOP.with(|current| current.set(end));
    run();
    REPLACEMENT_LOOP.with(|current| current.set(ptr::null()));
}

/// Whether the loop waiting on `latch` is the calling replacement's own
/// loop (see [`run_replacement_loop`]).
pub(crate) fn is_replacement_loop(latch: &CoreLatch) -> bool {
    REPLACEMENT_LOOP.with(|current| ptr::eq(current.get(), latch))
}

/// Runs `f`, which may block, on the calling thread; if that thread is a
/// worker, another thread runs the worker meanwhile (see the module
/// docs). Outside a worker, and on a pool's building thread (which runs
/// pool work only while it waits for some), it simply runs `f`.
///
/// With `test-util`, `f` counts as the pool's work outside its workers
/// (the paused clock does not jump meanwhile) if `outside_work` says so:
/// a closure that blocks counts; a `block_on` counts itself, only while it
/// polls.
pub(crate) fn block_in_place<R>(outside_work: bool, f: impl FnOnce() -> R) -> R {
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
    let index = worker.index();
    // For the paused clock, `f` is the pool's work running outside its
    // workers from before the worker moves (it is busy until then) until
    // `f` returned.
    #[cfg(feature = "test-util")]
    if outside_work {
        registry.outside_work_started();
    }
    #[cfg(not(feature = "test-util"))]
    let _ = outside_work;
    let handover = registry.handover(index);
    handover.lend();
    let turn = worker.leave_for_a_turn();
    if !handover.pass_on() && start_replacement(worker, &registry).is_err() {
        // No thread to be had: run `f` in place, as a worker.
        worker.take_turn(turn);
        worker.borrower_returned();
        #[cfg(feature = "test-util")]
        if outside_work {
            registry.outside_work_finished();
        }
        return f();
    }
    let result = panic::catch_unwind(AssertUnwindSafe(|| context::enter(&registry, f)));
    handover.wait_for_turn(|| registry.wake_runner(index));
    worker.take_turn(turn);
    worker.borrower_returned();
    // Counted until the worker is back: the paused clock must not jump
    // while this thread waits to go on with the pool's work.
    #[cfg(feature = "test-util")]
    if outside_work {
        registry.outside_work_finished();
    }
    match result {
        Ok(value) => value,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Gives `worker`, which the calling thread left and nobody waits to take,
/// to a spare replacement thread (`spare_threads.rs`), or starts one.
fn start_replacement(worker: &WorkerThread, registry: &Arc<Registry>) -> std::io::Result<()> {
    let lent = Lent {
        // The worker's address crosses to the replacement as an integer:
        // the safety argument is the hand-over's, not the type's.
        address: std::ptr::from_ref(worker) as usize,
        _pool: Arc::clone(registry),
    };
    let Err(lent) = registry.spare_threads.give(lent) else {
        return Ok(());
    };
    // Named as the worker it starts for (the pool's `thread_name`): it is
    // that worker, for whoever reads thread names (profilers, tests of
    // where a task ran). A spare keeps the name when it runs another.
    let name = registry
        .worker_thread_name(worker.index())
        .unwrap_or_else(|| format!("bwos-replacement-{}", worker.index()));
    let mut thread = std::thread::Builder::new().name(name);
    if let Some(size) = registry.worker_stack_size() {
        thread = thread.stack_size(size);
    }
    let spare_threads = Arc::clone(&registry.spare_threads);
    // Detached: it touches no worker after passing the last one on, and
    // exits after the keep-alive or at the pool's shutdown.
    thread.spawn(move || {
        #[cfg(feature = "tokio-compat")]
        let _tokio = super::tokio_compat::enter();
        super::idle::spread::mark_worker_thread();
        let slot = Arc::new(Slot::default());
        let mut lent = lent;
        loop {
            // SAFETY: the worker lives on its own thread's stack, which it
            // leaves only once no thread lent the worker or waits for it
            // (`WorkerThread::wait_for_borrowers`), and this thread runs it
            // until it passes it on; the thread that left it found nobody
            // to pass it to and started this thread or gave it to this one
            // (`SpareThreads::give`, under a lock), which orders their
            // accesses (`run_as_replacement`'s contract).
            let worker = unsafe { &*(lent.address as *const WorkerThread) };
            // SAFETY: as above.
            unsafe { worker.run_as_replacement() };
            // Held until the worker is passed on: passing it on touches
            // the baton in the pool, which may end right after.
            drop(lent);
            match spare_threads.wait_for_worker(&slot) {
                Some(next) => lent = next,
                None => break,
            }
        }
    })?;
    Ok(())
}
