//! Replacement threads kept for the next `block_in_place`: a replacement
//! that passed its worker on (`handover.rs`) waits for another worker to
//! run, for the pool's blocking keep-alive, instead of exiting.
//!
//! Every `block_on` that waits on a worker and every `block_in_place`
//! moves a worker to a replacement thread (`replacement.rs`): starting a
//! thread for each cost about as much as the rest of the hand-over (tens
//! of microseconds), and a task calling `block_on` in a loop would start
//! one per call. tokio takes its `block_in_place` threads from its blocking
//! pool for the same reason; these are kept apart from the blocking pool's
//! (whose maximum and queue are for `spawn_blocking`'s closures: a worker
//! queued behind closures that block would not run).
//!
//! The pool's shutdown sends the spare threads away (step 4 in
//! `shutdown.rs`); a thread given a worker since runs it until it passes
//! it on, as any replacement.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::registry::Registry;

/// The spare replacement threads of one pool.
pub(crate) struct SpareThreads {
    state: Mutex<Spares>,
    keep_alive: Duration,
}

struct Spares {
    /// The spare threads waiting for a worker, each by its slot.
    idle: Vec<Arc<Slot>>,
    shut_down: bool,
}

/// Where a spare thread waits for its next worker.
#[derive(Default)]
pub(crate) struct Slot {
    next: Mutex<Next>,
    given: Condvar,
}

#[derive(Default)]
enum Next {
    #[default]
    Waiting,
    /// A worker to run (see `start_replacement`).
    Worker(Lent),
    Exit,
}

/// A worker lent to a replacement thread: its address (the safety
/// argument is the hand-over's, not the type's) and its pool, which the
/// thread holds until it has passed the worker on (its last touch of the
/// baton may come after the worker's own thread ended the worker).
pub(crate) struct Lent {
    pub(crate) address: usize,
    pub(crate) _pool: Arc<Registry>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SpareThreads {
    pub(crate) fn new(keep_alive: Duration) -> Self {
        SpareThreads {
            state: Mutex::new(Spares {
                idle: Vec::new(),
                shut_down: false,
            }),
            keep_alive,
        }
    }

    /// Gives `lent` to a spare thread, if one waits; else returns it.
    pub(crate) fn give(&self, lent: Lent) -> Result<(), Lent> {
        let Some(slot) = lock(&self.state).idle.pop() else {
            return Err(lent);
        };
        *lock(&slot.next) = Next::Worker(lent);
        slot.given.notify_one();
        Ok(())
    }

    /// The calling replacement thread passed its worker on: waits, for the
    /// keep-alive at most, to be given another one. `None`: the thread
    /// exits.
    pub(crate) fn wait_for_worker(&self, slot: &Arc<Slot>) -> Option<Lent> {
        {
            let mut spares = lock(&self.state);
            if spares.shut_down {
                return None;
            }
            *lock(&slot.next) = Next::Waiting;
            spares.idle.push(Arc::clone(slot));
        }
        let deadline = Instant::now() + self.keep_alive;
        let mut next = lock(&slot.next);
        loop {
            match std::mem::take(&mut *next) {
                Next::Worker(lent) => return Some(lent),
                Next::Exit => return None,
                Next::Waiting => {}
            }
            let now = Instant::now();
            if now >= deadline {
                drop(next);
                // Leaving: unless a `give` took this slot off the list
                // meanwhile, in which case its worker is on the way.
                let mut spares = lock(&self.state);
                if let Some(position) = spares.idle.iter().position(|idle| Arc::ptr_eq(idle, slot))
                {
                    spares.idle.swap_remove(position);
                    return None;
                }
                drop(spares);
                next = lock(&slot.next);
                while let Next::Waiting = *next {
                    next = slot
                        .given
                        .wait(next)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                continue;
            }
            next = slot
                .given
                .wait_timeout(next, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The pool shuts down: the spare threads exit, and no thread becomes
    /// spare from now on.
    pub(crate) fn shut_down(&self) {
        let idle = {
            let mut spares = lock(&self.state);
            spares.shut_down = true;
            std::mem::take(&mut spares.idle)
        };
        for slot in idle {
            *lock(&slot.next) = Next::Exit;
            slot.given.notify_one();
        }
    }
}
