//! loom models of the runtime's protocol cores, one file per protocol:
//! the latch, the sleep protocol, balanced work stealing's wake-ups, the
//! Nowa scope counter, the async task state word, the closable task
//! injector, the I/O driver's seat, the timers' registration, firing,
//! cancellation and watcher, the paused clock's automatic advance, the
//! blocking pool's queue, `fork::join`'s suspension, a fork
//! region's boundary, the work list's hand-over and a worker's baton. Run with
//! `RUSTFLAGS="--cfg bwos_loom" cargo test -p bwos --release --lib`: a loom
//! build compiles only these protocol files, at their usual module paths
//! (see `lib.rs`), so the models check the real code.
//!
//! loom explores every interleaving (up to a preemption bound) under the
//! C11 memory model: a lost wake-up shows up as a deadlock (every thread
//! parked), a missing happens-before edge as a causality violation on the
//! `UnsafeCell` results.
//!
//! The threads that park are spawned threads that never `join` anything:
//! loom lets a stale unpark token (one that arrives after the waiter saw
//! its condition and moved on, which the real code tolerates) unblock a
//! later `join` and then fails an internal assertion. The main thread only
//! produces and joins.

mod auto_advance;
mod balance;
mod blocking;
mod driver_seat;
mod fork_boundary;
mod fork_join;
mod handover;
mod latch;
mod scope_counter;
mod sleep;
mod task_inject;
mod task_state;
mod timers;
mod worklist;

use loom::cell::UnsafeCell;
use loom::sync::Arc;

use crate::sched::latch::WakingLatch;

/// A checker bounded to `preemptions` unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise.
fn builder(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder
}

/// Hands a value from a spawned thread to the main thread (a one-slot
/// channel built on a loom mutex and condition variable).
fn handoff<T>() -> (Handoff<T>, Handoff<T>) {
    let slot = Arc::new((loom::sync::Mutex::new(None), loom::sync::Condvar::new()));
    (Handoff(slot.clone()), Handoff(slot))
}

struct Handoff<T>(Arc<(loom::sync::Mutex<Option<T>>, loom::sync::Condvar)>);

impl<T> Handoff<T> {
    fn send(&self, value: T) {
        *self.0.0.lock().unwrap() = Some(value);
        self.0.1.notify_one();
    }

    fn recv(&self) -> T {
        let mut slot = self.0.0.lock().unwrap();
        loop {
            if let Some(value) = slot.take() {
                return value;
            }
            slot = self.0.1.wait(slot).unwrap();
        }
    }
}

/// A job's result slot written by one thread and read by the waiter.
struct Slot(UnsafeCell<u32>);

// SAFETY: accesses are ordered by the latch under test; loom checks that.
unsafe impl Sync for Slot {}

impl Slot {
    fn new() -> Self {
        Slot(UnsafeCell::new(0))
    }

    fn write(&self, value: u32) {
        // SAFETY: loom checks that no access is concurrent with this one.
        self.0.with_mut(|slot| unsafe { *slot = value });
    }

    fn read(&self) -> u32 {
        // SAFETY: as for `write`.
        self.0.with(|slot| unsafe { *slot })
    }
}

/// The latch a thread outside the pools waits on (`wait.rs`'s `ThreadLatch`
/// with a plain thread as its waiter): the calling thread parks in
/// `CoreLatch::wait_blocking`, the setter unparks it.
type ThreadLatch = WakingLatch<loom::thread::Thread>;

/// A [`ThreadLatch`] the calling thread will wait on.
fn thread_latch() -> ThreadLatch {
    WakingLatch::new(loom::thread::current())
}
