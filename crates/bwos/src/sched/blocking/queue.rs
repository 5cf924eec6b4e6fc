//! The blocking pool's queue and thread bookkeeping: where a closure goes
//! (an idle thread, a new thread, or the queue), how a thread waits for
//! the next one and when it exits. Generic over the entries and built on
//! `sched::sync`, so the loom model `loom_models/blocking.rs` checks this
//! code itself.
//!
//! A thread that finds the queue empty counts itself `idle` and waits on
//! the condition variable. A pusher that finds an idle thread claims it
//! (`idle -= 1`, `notified += 1`) and notifies one waiter; a waiter that
//! wakes consumes a claim if there is one, else (a timeout or a spurious
//! wake-up) it is still idle. So each entry either claims an idle thread,
//! starts a new one, or waits in the queue for a thread that is busy (and
//! will look at the queue before it idles): none is left without a thread.

use std::collections::VecDeque;
use std::time::Duration;

use crate::sched::sync::{Condvar, Mutex, MutexGuard};

/// The queue of one blocking pool.
pub(crate) struct BlockingQueue<T> {
    state: Mutex<State<T>>,
    /// Idle threads wait here for an entry (or for shutdown).
    work: Condvar,
    max_threads: usize,
}

struct State<T> {
    queue: VecDeque<T>,
    /// Threads alive (running an entry, idle, or starting).
    threads: usize,
    /// Threads waiting for an entry and not claimed by a pusher.
    idle: usize,
    /// Claims made by pushers that no waiter has consumed yet.
    notified: usize,
    shutdown: bool,
}

/// What [`BlockingQueue::push`] did with an entry.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed<T> {
    /// Queued for an idle thread (woken) or for a busy one.
    Queued,
    /// Queued, and the caller must start a thread that calls
    /// [`next`](BlockingQueue::next) (it is counted already; if it cannot
    /// start, the caller reports [`start_failed`](BlockingQueue::start_failed)).
    StartThread,
    /// The pool has shut down: the entry comes back, to be cancelled.
    Refused(T),
}

impl<T> BlockingQueue<T> {
    pub(crate) fn new(max_threads: usize) -> Self {
        BlockingQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                notified: 0,
                shutdown: false,
            }),
            work: Condvar::new(),
            max_threads,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No user code runs under the lock (entries run and are cancelled
        // outside it), so a poisoned lock holds consistent counts.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Queues `item` for a thread: an idle one, a new one if fewer than
    /// the maximum run, else the next one to finish its entry.
    pub(crate) fn push(&self, item: T) -> Pushed<T> {
        let mut state = self.lock();
        if state.shutdown {
            return Pushed::Refused(item);
        }
        state.queue.push_back(item);
        if state.idle > 0 {
            state.idle -= 1;
            state.notified += 1;
            drop(state);
            self.work.notify_one();
            return Pushed::Queued;
        }
        if state.threads >= self.max_threads {
            // A busy thread takes it when it finishes.
            return Pushed::Queued;
        }
        state.threads += 1;
        Pushed::StartThread
    }

    /// A thread that `push` asked for could not start. Returns the entries
    /// to cancel: all of them if no thread is left to take them.
    pub(crate) fn start_failed(&self) -> Vec<T> {
        let mut state = self.lock();
        state.threads -= 1;
        if state.threads == 0 {
            state.queue.drain(..).collect()
        } else {
            Vec::new()
        }
    }

    /// A thread's next entry; `None` when it should exit (idle for
    /// `keep_alive`, or the pool shut down), and it no longer counts.
    pub(crate) fn next(&self, keep_alive: Duration) -> Option<T> {
        let mut state = self.lock();
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some(item);
            }
            if state.shutdown {
                state.threads -= 1;
                return None;
            }
            state.idle += 1;
            let (mut woken, timeout) = self
                .work
                .wait_timeout(state, keep_alive)
                .unwrap_or_else(|poison| poison.into_inner());
            if woken.notified > 0 {
                // Claimed by a pusher (which took us off `idle`).
                woken.notified -= 1;
            } else {
                // A timeout, a spurious wake-up or shutdown: still counted
                // idle, which this thread undoes itself.
                woken.idle -= 1;
                // After shutdown the queue is empty (`shut_down` drained
                // it, `push` refuses).
                if woken.shutdown || (timeout.timed_out() && woken.queue.is_empty()) {
                    woken.threads -= 1;
                    return None;
                }
            }
            state = woken;
        }
    }

    /// Refuses new entries, wakes the idle threads so that they exit, and
    /// returns the entries no thread has taken (to be cancelled).
    pub(crate) fn shut_down(&self) -> Vec<T> {
        let orphans = {
            let mut state = self.lock();
            state.shutdown = true;
            state.queue.drain(..).collect()
        };
        self.work.notify_all();
        orphans
    }

    /// Threads alive.
    pub(crate) fn threads(&self) -> usize {
        self.lock().threads
    }
}
