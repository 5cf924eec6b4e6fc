//! The blocking pool's queue and thread bookkeeping: where a closure goes
//! (an idle thread, a new thread, or the queue), how a thread waits for
//! the next one and when it exits. Generic over the entries and built on
//! `sched::sync`, so the loom model `loom_models/blocking.rs` checks this
//! code itself.
//!
//! A thread that finds the queue empty puts itself on the `idle` stack and
//! waits on its own condition variable. A pusher that finds an idle thread
//! claims the one that went idle last (pops it, records the claim) and
//! notifies it; a waiter that wakes consumes its claim if there is one,
//! else (a timeout or a spurious wake-up) it takes itself off the stack.
//! So each entry either claims an idle thread, starts a new one, or waits
//! in the queue for a thread that is busy (and will look at the queue
//! before it idles): none is left without a thread.
//!
//! A thread on its way to the queue counts as one that will take an
//! entry: a thread just started, and one that finished an entry and said
//! so ([`BlockingQueue::returning`]) before the entry's result was
//! published. Entries pushed while such threads are on their way wait for
//! them instead of starting more. Without this, a task that runs a few
//! closures at a time, again and again, starts a thread whenever the
//! finished ones have not come back to the queue yet or the new ones have
//! not reached it (windows a busy machine makes wide), and the pool grows
//! to many times the threads it needs.
//!
//! Why a stack: under a steady load the same few threads take every
//! entry, and the ones at the bottom stay idle long enough to exit after
//! the keep-alive. With one shared condition variable the OS wakes the
//! waiters in turn, none of them is ever idle for the keep-alive, and a
//! pool that once needed more threads keeps them all for good.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::sched::sync::{Condvar, Mutex, MutexGuard};

/// The queue of one blocking pool.
pub(crate) struct BlockingQueue<T> {
    state: Mutex<State<T>>,
    max_threads: usize,
    /// Notified whenever a thread stops counting, for
    /// [`wait_for_threads`](BlockingQueue::wait_for_threads).
    exited: Condvar,
}

struct State<T> {
    queue: VecDeque<T>,
    /// Threads alive (running an entry, idle, or starting).
    threads: usize,
    /// Threads waiting for an entry and not claimed by a pusher, the one
    /// that went idle last on top.
    idle: Vec<Idle>,
    /// Threads on their way to `next` that will take a queued entry, if
    /// there is one, without waiting: started and not in `next` yet, or
    /// finished an entry and announced their return
    /// ([`BlockingQueue::returning`]).
    arriving: usize,
    /// The threads (by [`Waiter::id`]) that pushers claimed and that have
    /// not woken yet: at most a handful, as many as entries pushed while
    /// their threads wake.
    claimed: Vec<usize>,
    /// The next [`Waiter::id`].
    next_waiter: usize,
    shutdown: bool,
}

/// An idle thread on the stack: who it is and how to wake it.
struct Idle {
    id: usize,
    wake: Arc<Condvar>,
}

/// A blocking thread's identity in its queue ([`BlockingQueue::waiter`]),
/// passed to every [`BlockingQueue::next`].
pub(crate) struct Waiter {
    id: usize,
    /// Counted in `arriving` (just started, or announced its return)
    /// until its next call of `next`.
    arriving: std::cell::Cell<bool>,
    /// Notified by the pusher that claims this thread, and at shutdown.
    wake: Arc<Condvar>,
}

/// The blocking pool's gauges at one moment ([`BlockingQueue::gauges`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockingGauges {
    /// Threads alive: running an entry, idle, or starting.
    pub(crate) threads: usize,
    /// Threads waiting for an entry.
    pub(crate) idle: usize,
    /// Entries waiting for a thread.
    pub(crate) queued: usize,
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
                idle: Vec::new(),
                arriving: 0,
                claimed: Vec::new(),
                next_waiter: 0,
                shutdown: false,
            }),
            max_threads,
            exited: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No user code runs under the lock (entries run and are cancelled
        // outside it), so a poisoned lock holds consistent counts.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Queues `item` for a thread: an idle one, one on its way to the
    /// queue, a new one if fewer than the maximum run, else the next one
    /// to finish its entry.
    pub(crate) fn push(&self, item: T) -> Pushed<T> {
        let mut state = self.lock();
        if state.shutdown {
            return Pushed::Refused(item);
        }
        state.queue.push_back(item);
        if let Some(idle) = state.idle.pop() {
            state.claimed.push(idle.id);
            drop(state);
            idle.wake.notify_one();
            return Pushed::Queued;
        }
        if state.queue.len() <= state.arriving + state.claimed.len() {
            // Every queued entry has a thread on its way to take it: one
            // arriving, or an idle one claimed by an earlier push and not
            // awake yet (each takes whichever entry is first: only the
            // counts matter).
            return Pushed::Queued;
        }
        if state.threads >= self.max_threads {
            // A busy thread takes it when it finishes.
            return Pushed::Queued;
        }
        state.threads += 1;
        state.arriving += 1;
        Pushed::StartThread
    }

    /// A thread that `push` asked for could not start. Returns the entries
    /// to cancel: all of them if no thread is left to take them.
    pub(crate) fn start_failed(&self) -> Vec<T> {
        let mut state = self.lock();
        state.threads -= 1;
        state.arriving -= 1;
        self.exited.notify_all();
        if state.threads == 0 {
            state.queue.drain(..).collect()
        } else {
            Vec::new()
        }
    }

    /// The identity a new thread (one that `push` asked for, counted as
    /// arriving until its first [`next`](Self::next)) passes to `next`.
    pub(crate) fn waiter(&self) -> Waiter {
        let mut state = self.lock();
        let id = state.next_waiter;
        state.next_waiter += 1;
        Waiter {
            id,
            arriving: std::cell::Cell::new(true),
            wake: Arc::new(Condvar::new()),
        }
    }

    /// The thread of `waiter` finished its entry and calls
    /// [`next`](Self::next) without blocking in between: entries pushed
    /// from now on may wait for it instead of starting a thread. Called
    /// before the entry's result is published (whoever waits for it may
    /// push the next entries at once); more calls before `next` count
    /// once.
    pub(crate) fn returning(&self, waiter: &Waiter) {
        if !waiter.arriving.replace(true) {
            self.lock().arriving += 1;
        }
    }

    /// A thread's next entry; `None` when it should exit (idle for
    /// `keep_alive`, or the pool shut down), and it no longer counts.
    pub(crate) fn next(&self, waiter: &Waiter, keep_alive: Duration) -> Option<T> {
        let mut state = self.lock();
        if waiter.arriving.replace(false) {
            state.arriving -= 1;
        }
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some(item);
            }
            if state.shutdown {
                state.threads -= 1;
                self.exited.notify_all();
                return None;
            }
            state.idle.push(Idle {
                id: waiter.id,
                wake: Arc::clone(&waiter.wake),
            });
            let (mut woken, timeout) = waiter
                .wake
                .wait_timeout(state, keep_alive)
                .unwrap_or_else(|poison| poison.into_inner());
            if let Some(claim) = woken.claimed.iter().position(|&id| id == waiter.id) {
                // Claimed by a pusher (which took us off the stack).
                woken.claimed.swap_remove(claim);
            } else {
                // A timeout, a spurious wake-up or shutdown: still on the
                // stack, which this thread undoes itself.
                let position = woken.idle.iter().position(|idle| idle.id == waiter.id);
                debug_assert!(position.is_some(), "an unclaimed waiter is on the stack");
                if let Some(position) = position {
                    woken.idle.remove(position);
                }
                // After shutdown the queue is empty (`shut_down` drained
                // it, `push` refuses).
                if woken.shutdown || (timeout.timed_out() && woken.queue.is_empty()) {
                    woken.threads -= 1;
                    self.exited.notify_all();
                    return None;
                }
            }
            state = woken;
        }
    }

    /// Refuses new entries, wakes the idle threads so that they exit, and
    /// returns the entries no thread has taken (to be cancelled).
    pub(crate) fn shut_down(&self) -> Vec<T> {
        let (orphans, idle) = {
            let mut state = self.lock();
            state.shutdown = true;
            let idle: Vec<Arc<Condvar>> = state
                .idle
                .iter()
                .map(|idle| Arc::clone(&idle.wake))
                .collect();
            (state.queue.drain(..).collect(), idle)
        };
        // They take themselves off the stack and exit; claimed threads
        // find the queue empty and exit too.
        idle.iter().for_each(|wake| wake.notify_one());
        orphans
    }

    /// Threads alive.
    pub(crate) fn threads(&self) -> usize {
        self.lock().threads
    }

    /// Waits until at most `threads` threads are alive or `deadline`
    /// passed (`None`: no deadline); whether they are down to that many.
    pub(crate) fn wait_for_threads(
        &self,
        threads: usize,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        let mut state = self.lock();
        while state.threads > threads {
            let Some(deadline) = deadline else {
                state = self
                    .exited
                    .wait(state)
                    .unwrap_or_else(|poison| poison.into_inner());
                continue;
            };
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .exited
                .wait_timeout(state, left)
                .unwrap_or_else(|poison| poison.into_inner())
                .0;
        }
        true
    }

    /// The threads alive, those idle and the entries queued, read together
    /// under the lock. A thread a pusher claimed and that has not woken
    /// yet counts as busy (its entry is on the way to it), and so does one
    /// on its way to the queue.
    pub(crate) fn gauges(&self) -> BlockingGauges {
        let state = self.lock();
        BlockingGauges {
            threads: state.threads,
            idle: state.idle.len(),
            queued: state.queue.len(),
        }
    }

    /// Threads on the idle stack.
    #[cfg(all(test, not(bwos_loom)))]
    fn idle_threads(&self) -> usize {
        self.lock().idle.len()
    }
}

#[cfg(all(test, not(bwos_loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    #[cfg_attr(miri, ignore = "threads that wait on a condition variable for seconds")]
    fn the_thread_that_went_idle_last_takes_the_next_entry() {
        bwos_testkit::watchdog("blocking_queue_lifo", || {
            let queue = Arc::new(BlockingQueue::<usize>::new(3));
            let (ran, runs) = mpsc::channel::<(usize, usize)>();
            let mut threads = Vec::new();
            // Three threads, one per `StartThread` as the pool starts
            // them. All three pushes come first: a thread started after
            // the first push could take its entry and go idle before the
            // second, which would then be `Queued` for it.
            for item in 0..3 {
                assert_eq!(queue.push(item), Pushed::StartThread);
            }
            for _ in 0..3 {
                let (queue, ran) = (Arc::clone(&queue), ran.clone());
                threads.push(std::thread::spawn(move || {
                    let waiter = queue.waiter();
                    while let Some(item) = queue.next(&waiter, Duration::from_secs(600)) {
                        ran.send((item, waiter.id)).unwrap();
                    }
                }));
            }
            for _ in 0..3 {
                runs.recv().unwrap();
            }
            // One entry at a time, each pushed once every thread is idle
            // again: the one that ran the last entry is on top of the
            // stack, so it takes them all and the other two stay idle
            // (long enough, they would reach their keep-alive).
            let mut takers = Vec::new();
            for item in 3..103 {
                while queue.idle_threads() != 3 {
                    std::thread::yield_now();
                }
                assert_eq!(queue.push(item), Pushed::Queued);
                let (ran_item, taker) = runs.recv().unwrap();
                assert_eq!(ran_item, item);
                takers.push(taker);
            }
            takers.dedup();
            assert_eq!(
                takers.len(),
                1,
                "entries went to several idle threads: {takers:?}"
            );
            assert!(queue.shut_down().is_empty());
            for thread in threads {
                thread.join().unwrap();
            }
            assert_eq!(queue.threads(), 0);
        });
    }
}
