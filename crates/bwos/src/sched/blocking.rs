//! The blocking pool: the threads that run `task::spawn_blocking`'s
//! closures, apart from the workers.
//!
//! A closure that blocks (a file read, a DNS lookup, a lock held for long)
//! would stall a worker and every task queued behind it; here it blocks a
//! thread of its own. The pool starts threads on demand, up to
//! `max_blocking_threads` (beyond that, closures queue until a thread is
//! free), and a thread that has been idle for `blocking_keep_alive` exits.
//! Blocking threads never run pool work: they take entries only from this
//! pool's queue.
//!
//! The entries are task-cell entries (`Notified`): a blocking closure is a
//! task whose future runs the closure in its one poll, so its
//! `JoinHandle`, its `JoinError` on a panic and its abort before it starts
//! are the task cell's.
//!
//! # Wake-ups
//! A thread that finds the queue empty counts itself `idle` and waits on
//! the condition variable. A pusher that finds an idle thread claims it
//! (`idle -= 1`, `notified += 1`) and notifies one waiter; a waiter that
//! wakes consumes a claim if there is one, else (a timeout or a spurious
//! wake-up) it is still idle. So each entry either claims an idle thread,
//! starts a new one, or waits in the queue for a thread that is busy (and
//! will look at the queue before it idles): none is left without a thread.
//!
//! # Shutdown
//! When the pool's last worker stops, [`BlockingPool::shut_down`] cancels
//! the entries that have not started (their handles report cancellation)
//! and tells idle threads to exit; closures already running finish on
//! their threads, which then exit. Nobody waits for them: dropping a pool
//! does not block on a closure that may never return.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use super::context;
use super::registry::Registry;
use super::task::raw::Notified;

/// The default of `ThreadPoolBuilder::max_blocking_threads` (tokio's).
pub(crate) const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// The default of `ThreadPoolBuilder::blocking_keep_alive` (tokio's).
pub(crate) const DEFAULT_BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A pool's blocking threads and their queue.
pub(crate) struct BlockingPool {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Idle threads wait here for an entry (or for shutdown).
    work: Condvar,
    max_threads: usize,
    keep_alive: Duration,
    /// The pool the threads belong to: what `Registry::with_current` means
    /// on them. Set once the registry exists; weak, because the registry
    /// owns this pool.
    registry: OnceLock<Weak<Registry>>,
}

struct State {
    queue: VecDeque<Notified>,
    /// Threads alive (running an entry, idle, or starting).
    threads: usize,
    /// Threads waiting for an entry and not claimed by a pusher.
    idle: usize,
    /// Claims made by pushers that no waiter has consumed yet.
    notified: usize,
    shutdown: bool,
    /// Numbers the threads' names.
    next_thread: usize,
}

impl BlockingPool {
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> Self {
        BlockingPool {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                    notified: 0,
                    shutdown: false,
                    next_thread: 0,
                }),
                work: Condvar::new(),
                max_threads,
                keep_alive,
                registry: OnceLock::new(),
            }),
        }
    }

    /// Tells the pool which registry owns it (once, after the registry is
    /// built).
    pub(crate) fn set_registry(&self, registry: Weak<Registry>) {
        let _ = self.shared.registry.set(registry);
    }

    /// Queues `task` for a blocking thread: an idle one, a new one if
    /// fewer than the maximum run, else the next one to finish. After
    /// shutdown, or if no thread runs and the OS refuses to start one, the
    /// task is cancelled (its handle reports it), never lost.
    pub(crate) fn push(&self, task: Notified) {
        let mut state = self.shared.lock();
        if state.shutdown {
            drop(state);
            task.cancel();
            return;
        }
        state.queue.push_back(task);
        if state.idle > 0 {
            state.idle -= 1;
            state.notified += 1;
            drop(state);
            self.shared.work.notify_one();
            return;
        }
        if state.threads >= self.shared.max_threads {
            // A busy thread takes it when it finishes.
            return;
        }
        state.threads += 1;
        let number = state.next_thread;
        state.next_thread += 1;
        drop(state);
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name(format!("bwos-blocking-{number}"))
            .spawn(move || shared.run());
        if started.is_err() {
            let mut state = self.shared.lock();
            state.threads -= 1;
            if state.threads == 0 {
                // Nobody will take the queue: cancel it rather than lose it.
                let orphans: Vec<_> = state.queue.drain(..).collect();
                drop(state);
                orphans.into_iter().for_each(Notified::cancel);
            }
        }
    }

    /// Cancels the entries not started yet and lets the threads exit once
    /// they are done (see "Shutdown").
    pub(crate) fn shut_down(&self) {
        let orphans: Vec<_> = {
            let mut state = self.shared.lock();
            state.shutdown = true;
            state.queue.drain(..).collect()
        };
        self.shared.work.notify_all();
        orphans.into_iter().for_each(Notified::cancel);
    }

    /// Blocking threads alive now.
    #[cfg(test)]
    pub(crate) fn threads(&self) -> usize {
        self.shared.lock().threads
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held while user code runs (entries run and
        // are cancelled outside it), so a poisoned lock only means a
        // panic in this module's bookkeeping, which has none: keep going.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A blocking thread's body: run entries until idle for `keep_alive`
    /// or shut down.
    fn run(self: Arc<Self>) {
        let mut state = self.lock();
        loop {
            if let Some(task) = state.queue.pop_front() {
                drop(state);
                // Panics are caught by the task cell (the handle gets a
                // `JoinError`), so the thread survives its closures. The
                // closure's tasks, timers and joins go to this pool.
                match self.registry.get().and_then(Weak::upgrade) {
                    Some(registry) => context::enter(&registry, || task.run()),
                    None => task.run(),
                }
                state = self.lock();
                continue;
            }
            if state.shutdown {
                break;
            }
            state.idle += 1;
            let (mut woken, timeout) = self
                .work
                .wait_timeout(state, self.keep_alive)
                .unwrap_or_else(PoisonError::into_inner);
            if woken.notified > 0 {
                // Claimed by a pusher (which took us off `idle`).
                woken.notified -= 1;
            } else if timeout.timed_out() || woken.shutdown {
                woken.idle -= 1;
                if woken.queue.is_empty() || woken.shutdown {
                    state = woken;
                    break;
                }
            } else {
                // Spurious: wait again, still idle.
                woken.idle -= 1;
            }
            state = woken;
        }
        state.threads -= 1;
    }
}

impl std::fmt::Debug for BlockingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("BlockingPool")
            .field("threads", &state.threads)
            .field("idle", &state.idle)
            .field("queued", &state.queue.len())
            .finish()
    }
}
