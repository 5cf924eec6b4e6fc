//! The pools a thread has entered: the "current pool" of a thread in
//! `block_on` (while it polls the future), of a blocking thread (while it
//! runs a closure), of `block_in_place`'s closure, and of any thread while
//! a `Handle::enter` guard lives. The current-pool lookup
//! (`current::with_current_pool`) and the free functions look here after
//! the calling worker and before the global pool, so the tasks, timers,
//! sockets and joins such code starts go to the pool entered last.
//!
//! # A stack, left in any order
//! Entries nest: the pool entered last is the current one. Each entry is
//! removed by its own id, wherever it is on the stack, so an entry left
//! out of order (an `EnterGuard` dropped before a guard made after it, or
//! returned out of the `block_on` it was made in) takes only itself away:
//! the current pool is then the one of the newest entry still there.
//!
//! # On a worker
//! A worker that enters another pool is hidden while that pool is the
//! newest entry (`WorkerThread::hide_unless_in`): the thread then works
//! for the entered pool as a thread outside the pools does (a `join` goes
//! to that pool's workers). Only its waits stay a worker's: a hidden
//! worker that waits enters its own pool on top and runs that pool's work
//! meanwhile (`CoreLatch::wait`), so the work only it may run (its private
//! jobs, the tasks it queued) never waits for it, and the work it runs
//! finds its worker. Entering the worker's own pool changes nothing.

use std::cell::RefCell;
use std::sync::Arc;

use super::registry::Registry;
use super::worker::WorkerThread;

/// The pools the thread entered, oldest first, each with its id.
struct Entered {
    stack: Vec<(u64, Arc<Registry>)>,
    next_id: u64,
}

thread_local! {
    static ENTERED: RefCell<Entered> = const {
        RefCell::new(Entered { stack: Vec::new(), next_id: 0 })
    };
}

/// An entry of the calling thread's stack, to leave it by
/// ([`leave`]); `None` if the thread could not enter (its thread-locals
/// are being destroyed: it is exiting).
#[derive(Debug)]
pub(crate) struct Entry(Option<u64>);

/// Makes `registry` the calling thread's current pool until [`leave`]
/// with the returned entry.
pub(crate) fn push(registry: &Arc<Registry>) -> Entry {
    let id = ENTERED.try_with(|entered| {
        let mut entered = entered.borrow_mut();
        let id = entered.next_id;
        entered.next_id += 1;
        entered.stack.push((id, Arc::clone(registry)));
        id
    });
    let Ok(id) = id else {
        // A thread-local destructor runs bwos code as the thread exits:
        // nothing is entered, the global pool serves it.
        return Entry(None);
    };
    WorkerThread::hide_unless_in(Arc::as_ptr(registry));
    Entry(Some(id))
}

/// Leaves `entry`, wherever it is on the stack (see "A stack, left in any
/// order").
pub(crate) fn leave(entry: Entry) {
    let Some(id) = entry.0 else {
        return;
    };
    // The registry is dropped after the stack is released: a registry's
    // last reference may run the user's destructors (its handlers), which
    // may enter pools themselves.
    let left = ENTERED.try_with(|entered| {
        let mut entered = entered.borrow_mut();
        let position = entered.stack.iter().rposition(|(entry, _)| *entry == id);
        let registry = position.map(|position| entered.stack.remove(position).1);
        let newest = entered
            .stack
            .last()
            .map_or(std::ptr::null(), |(_, registry)| Arc::as_ptr(registry));
        (registry, newest)
    });
    if let Ok((registry, newest)) = left {
        WorkerThread::hide_unless_in(newest);
        drop(registry);
    }
}

/// Runs `f` with `registry` as the calling thread's current pool, leaving
/// it afterwards (also if `f` unwinds).
pub(crate) fn enter<R>(registry: &Arc<Registry>, f: impl FnOnce() -> R) -> R {
    struct Leave(Option<Entry>);
    impl Drop for Leave {
        fn drop(&mut self) {
            if let Some(entry) = self.0.take() {
                leave(entry);
            }
        }
    }
    let _leave = Leave(Some(push(registry)));
    f()
}

/// The pool the calling thread entered last, if it entered one.
pub(crate) fn current() -> Option<Arc<Registry>> {
    ENTERED
        .try_with(|entered| {
            entered
                .borrow()
                .stack
                .last()
                .map(|(_, registry)| Arc::clone(registry))
        })
        .ok()
        .flatten()
}
