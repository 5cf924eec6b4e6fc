//! A pool's blocking threads at work: an entry is queued (starting a thread
//! if none is free and fewer than the maximum run), each thread runs
//! entries inside its pool's context until it has been idle for
//! `blocking_keep_alive`, and at shutdown the entries not started are
//! cancelled. The pool's state (the queue, the thread count) is the
//! registry's [`BlockingPool`]; the pool itself is passed in, so that what
//! the registry holds does not refer back to it.

use std::rc::Rc;
use std::sync::{Arc, Weak};

use super::queue::Pushed;
use super::{BlockingPool, Shared, THIS_THREAD};
use crate::sched::registry::Registry;
use crate::sched::task::raw::Notified;
use crate::sched::{context, coop};

/// Queues `task` for a blocking thread of `registry`'s pool: an idle one,
/// a new one if fewer than the maximum run, else the next one to finish.
/// After shutdown, or if no thread runs and the OS refuses to start one,
/// the task is cancelled (its handle reports it), never lost.
pub(crate) fn push(registry: &Arc<Registry>, task: Notified) {
    let pool: &BlockingPool = &registry.blocking;
    entry_queued(registry);
    match pool.shared.queue.push(task) {
        Pushed::Queued => {}
        Pushed::Refused(task) => cancel(registry, task),
        Pushed::StartThread => {
            // Relaxed: only numbers the names.
            let number = pool
                .shared
                .next_thread
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let shared = Arc::clone(&pool.shared);
            // Weak: the registry owns the blocking pool, whose threads
            // must not keep it alive.
            let owner = Arc::downgrade(registry);
            let started = std::thread::Builder::new()
                .name(format!("bwos-blocking-{number}"))
                .spawn(move || run(shared, owner));
            if started.is_err() {
                // Nobody will take them if no thread is left: cancel
                // rather than lose them.
                let orphans = pool.shared.queue.start_failed();
                orphans.into_iter().for_each(|task| cancel(registry, task));
            }
        }
    }
}

/// Cancels the entries not started yet and lets the threads exit once
/// they are done (see "Shutdown" in `mod.rs`): a step of the pool's
/// shutdown (`shutdown.rs`).
pub(crate) fn shut_down(registry: &Registry) {
    let orphans = registry.blocking.shared.queue.shut_down();
    orphans.into_iter().for_each(|task| cancel(registry, task));
}

/// A blocking thread's body: run entries until idle for `keep_alive` or
/// shut down. `owner` is the pool the threads belong to: what the current
/// pool is while they run a closure.
fn run(shared: Arc<Shared>, owner: Weak<Registry>) {
    #[cfg(feature = "tokio-compat")]
    let _tokio = crate::sched::tokio_compat::enter();
    let waiter = Rc::new(shared.queue.waiter());
    THIS_THREAD.with(|this| *this.borrow_mut() = Some((Arc::clone(&shared), Rc::clone(&waiter))));
    while let Some(task) = shared.queue.next(&waiter, shared.keep_alive) {
        // Panics are caught by the task cell (the handle gets a
        // `JoinError`), so the thread survives its closures. The
        // closure's tasks, timers and joins go to this pool.
        // The closure's one poll has a budget, as a task's
        // (`sched/coop.rs`).
        coop::start_poll();
        match owner.upgrade() {
            Some(registry) => {
                context::enter(&registry, || task.run());
                // After the run: its handle's waiter has been woken.
                #[cfg(feature = "test-util")]
                registry.outside_work_finished();
            }
            None => task.run(),
        }
        coop::end_poll();
    }
    THIS_THREAD.with(|this| this.borrow_mut().take());
}

/// An entry was queued: for the paused clock it is the pool's work running
/// outside its workers until it has run or been cancelled (tokio does not
/// advance a paused clock while a blocking closure is in flight).
fn entry_queued(registry: &Registry) {
    #[cfg(not(feature = "test-util"))]
    let _ = registry;
    #[cfg(feature = "test-util")]
    registry.outside_work_started();
}

/// Cancels an entry that will never run (its handle reports it).
fn cancel(registry: &Registry, task: Notified) {
    task.cancel();
    #[cfg(not(feature = "test-util"))]
    let _ = registry;
    #[cfg(feature = "test-util")]
    registry.outside_work_finished();
}
