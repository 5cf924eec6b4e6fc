//! Shutting a pool down, in the order it happens. One verb throughout: the
//! pool, each worker, the task side, the blocking pool, the I/O driver and
//! the timers *shut down*. The state is the registry's
//! ([`Shutdown`](super::registry::Shutdown)); the steps are here.
//!
//! 1. **The owner lets go.** The pool's `ThreadPool` is dropped, or shut
//!    down with a timeout ([`shut_down`]). From now on the pool counts as
//!    shut down for its `Handle`s, and the owner's hold is released.
//! 2. **The last hold is released.** The pool is held open by its
//!    `ThreadPool` and by every detached job (`spawn`, `spawn_fifo`,
//!    `spawn_broadcast`) that has not run yet ([`hold`], [`release`]). The
//!    last release sets every worker's shutdown latch and wakes the
//!    worker.
//! 3. **Each worker shuts down** once its latch is set: its scheduler loop,
//!    which runs until that latch is set (`WorkerThread::main`), returns;
//!    the worker wakes a sleeping worker to take the timers' watch over,
//!    cancels the tasks left in its queue and runs the exit handler, and
//!    its thread, no worker any more, reports ([`worker_shut_down`],
//!    called by the thread's body in `start.rs`).
//! 4. **The last worker shuts the pool's services down**
//!    ([`worker_shut_down`]): the task side (every task left is cancelled,
//!    and so is every task spawned or woken from now on), the blocking pool
//!    (closures not started are cancelled; running ones finish on their
//!    threads), the spare replacement threads (`spare_threads.rs`), the
//!    I/O driver (socket operations fail), the timers (they fire at once:
//!    nobody would fire them later). Then it tells the owner waiting in
//!    step 5.
//! 5. **The owner waits, or not** ([`shut_down`]). Dropping the pool joins
//!    the worker threads, unless the pool detaches them
//!    (`ThreadPoolBuilder::detach_threads_on_drop`) or is dropped on one of
//!    its own workers (which cannot wait for itself);
//!    `ThreadPool::shutdown_timeout` waits for the workers and the blocking
//!    threads until its deadline, joins the workers if they stopped, and
//!    lets whatever still runs finish on its own.

use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::blocking;
use super::registry::Registry;
use super::sync::Ordering;
use super::worker::WorkerThread;

/// How the owner waits for the threads in step 5.
pub(crate) enum Wait {
    /// The `ThreadPool` is dropped: join the workers as the pool was built
    /// to (`ThreadPoolBuilder::detach_threads_on_drop`).
    AsBuilt,
    /// `ThreadPool::shutdown_timeout`: wait for the workers and the
    /// blocking threads at most this long.
    AtMost(Duration),
}

/// Steps 1 and 5: the pool's `ThreadPool` is dropped or shut down, and the
/// owner waits as `wait` says. Nothing is done twice: a `ThreadPool` shut
/// down with a timeout is dropped afterwards.
pub(crate) fn shut_down(registry: &Registry, wait: Wait) {
    // Relaxed: the flag only makes the second call a no-op and tells
    // handles the pool is gone; the release's AcqRel decrement publishes
    // what the owner did.
    if registry.shutdown.begun.swap(true, Ordering::Relaxed) {
        return;
    }
    release(registry);
    match wait {
        Wait::AsBuilt if registry.shutdown.join_on_drop && !runs_on_own_worker(registry) => {
            join_threads(registry);
        }
        // Not joined here (a detaching pool, or dropped on one of its own
        // workers): detach the threads now rather than when the registry
        // goes. A pool built with `use_current_thread` never frees its
        // registry (the adopted thread's worker state holds it for the
        // rest of the process), and handles kept there would keep every
        // exited worker's stack mapped for good.
        Wait::AsBuilt => detach_threads(registry),
        Wait::AtMost(_) if runs_on_own_worker(registry) => detach_threads(registry),
        Wait::AtMost(timeout) => {
            // A timeout past the clock's range waits without a deadline.
            let deadline = Instant::now().checked_add(timeout);
            if wait_for_workers(registry, deadline) {
                // Every worker has left its loop: the joins are short.
                registry.blocking.wait_for_threads(deadline);
                join_threads(registry);
            } else {
                detach_threads(registry);
            }
        }
    }
}

/// Whether the pool's `ThreadPool` was dropped or shut down (step 1).
pub(crate) fn is_shut_down(registry: &Registry) -> bool {
    // Relaxed: see `shut_down`.
    registry.shutdown.begun.load(Ordering::Relaxed)
}

/// Holds the pool open for a detached job until it has run (step 2).
pub(crate) fn hold(registry: &Registry) {
    // Relaxed: the caller holds the pool already (its `ThreadPool`, or the
    // running detached job that spawns), so the count cannot reach zero
    // meanwhile.
    registry.shutdown.holds.fetch_add(1, Ordering::Relaxed);
}

/// Releases a hold; the last one tells every worker to shut down once it
/// runs out of work (step 2).
pub(crate) fn release(registry: &Registry) {
    // AcqRel: the last release sees everything done under the other holds
    // before it shuts the workers down.
    if registry.shutdown.holds.fetch_sub(1, Ordering::AcqRel) == 1 {
        for (index, latch) in registry.shutdown.latches.iter().enumerate() {
            if latch.set() {
                registry.unpark(index);
            }
        }
    }
}

/// A worker has shut down and cancelled its queued tasks (step 3); the
/// last one shuts the pool's services down (step 4).
pub(crate) fn worker_shut_down(registry: &Registry) {
    // AcqRel: the last worker sees what the others did before they shut
    // down (their queues are empty).
    if registry
        .shutdown
        .running_workers
        .fetch_sub(1, Ordering::AcqRel)
        != 1
    {
        return;
    }
    registry.tasks.shut_down();
    blocking::threads::shut_down(registry);
    registry.spare_threads.shut_down();
    if let Some(driver) = registry.driver.get() {
        driver.shut_down();
    }
    // Nobody fires them any more: a sleep polled from now on (by a thread
    // outside the pool) panics instead of waiting forever.
    registry.timers.shut_down();
    *lock(&registry.shutdown.workers_gone) = true;
    registry.shutdown.workers_gone_signal.notify_all();
}

/// Keeps the worker threads' handles for step 5 (the threads the pool
/// started itself; a spawn handler's threads are its own).
pub(crate) fn keep_threads(registry: &Registry, handles: Vec<JoinHandle<()>>) {
    lock(&registry.shutdown.threads).extend(handles);
}

/// Waits until every worker has shut down (after the last release) or
/// `deadline` passed (`None`: no deadline); whether they did.
fn wait_for_workers(registry: &Registry, deadline: Option<Instant>) -> bool {
    let signal = &registry.shutdown.workers_gone_signal;
    let mut gone = lock(&registry.shutdown.workers_gone);
    while !*gone {
        let Some(deadline) = deadline else {
            gone = signal
                .wait(gone)
                .unwrap_or_else(|poison| poison.into_inner());
            continue;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        gone = signal
            .wait_timeout(gone, left)
            .unwrap_or_else(|poison| poison.into_inner())
            .0;
    }
    true
}

/// Whether the calling thread runs one of this pool's workers (also while
/// another pool it entered hides the worker, see `context.rs`): such a
/// thread cannot wait for the workers to shut down.
fn runs_on_own_worker(registry: &Registry) -> bool {
    WorkerThread::with_own(|worker| {
        worker.is_some_and(|worker| ptr::eq(Arc::as_ptr(worker.registry()), registry))
    })
}

/// Drops the worker threads' handles, so that each thread's resources are
/// freed when it exits: for a pool whose last handle is dropped without
/// joining them (nothing joins them later).
fn detach_threads(registry: &Registry) {
    drop(std::mem::take(&mut *lock(&registry.shutdown.threads)));
}

/// Joins the worker threads (after the last release).
fn join_threads(registry: &Registry) {
    let handles = std::mem::take(&mut *lock(&registry.shutdown.threads));
    for handle in handles {
        // Workers abort rather than unwind, so join cannot fail.
        let _ = handle.join();
    }
}

/// Locks `mutex`, taking a poisoned lock as it is: the shutdown's locks
/// guard a flag and a list of handles that no user code touches while it
/// holds them.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
