//! The task injector's shutdown protocol: an entry injected while the pool
//! closes is either drained by the closer or drained by its injector, never
//! stranded in a queue nobody reads again.
//!
//! The injecting thread pushes, fences and reads `closed`; the closer
//! writes `closed`, fences and drains. In the single SeqCst order one of
//! the two fences comes second, and the thread that issued it sees the
//! other's write: the closer's drain finds the entry, or the injecting
//! thread sees `closed` and drains (and cancels) it itself. Both may
//! drain; each entry is popped once.
//!
//! Generic over the queue so that the loom model
//! `task_injected_while_closing_is_never_stranded` checks this code with a
//! loom queue; the pool uses crossbeam's `Injector`.

use crate::sched::sync::{AtomicBool, Ordering, fence};

/// A multi-producer, multi-consumer FIFO of run-queue entries.
pub(crate) trait EntryQueue {
    /// A run-queue entry.
    type Entry;
    /// Appends `entry`.
    fn push(&self, entry: Self::Entry);
    /// The oldest entry, if any.
    fn pop(&self) -> Option<Self::Entry>;
    /// Whether the queue holds no entry (a racy snapshot).
    fn is_empty(&self) -> bool;
    /// How many entries the queue holds (a racy snapshot).
    fn len(&self) -> usize;
}

/// A queue that can be closed: entries that reach it after the close are
/// handed to a `cancel` function instead of being queued.
pub(crate) struct ClosableInjector<Q> {
    queue: Q,
    closed: AtomicBool,
}

impl<Q: EntryQueue> ClosableInjector<Q> {
    pub(crate) fn new(queue: Q) -> Self {
        ClosableInjector {
            queue,
            closed: AtomicBool::new(false),
        }
    }

    /// Queues `entry`; `false` if the injector is closed, in which case
    /// `cancel` got the entry (and perhaps others injected concurrently).
    pub(crate) fn inject(&self, entry: Q::Entry, cancel: impl Fn(Q::Entry)) -> bool {
        // Acquire: pairs with the closer's SeqCst store; a fast refusal
        // once the close is known (the fence below decides otherwise).
        if self.closed.load(Ordering::Acquire) {
            cancel(entry);
            return false;
        }
        self.queue.push(entry);
        // The injecting half of the Dekker pair with `close`.
        fence(Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            self.drain(cancel);
            return false;
        }
        true
    }

    /// The oldest entry.
    pub(crate) fn take(&self) -> Option<Q::Entry> {
        self.queue.pop()
    }

    /// Whether an entry is queued (a racy snapshot).
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// How many entries are queued (a racy snapshot).
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Closes the injector and hands every queued entry to `cancel`.
    pub(crate) fn close(&self, cancel: impl Fn(Q::Entry)) {
        self.closed.store(true, Ordering::SeqCst);
        // The closing half of the Dekker pair with `inject`.
        fence(Ordering::SeqCst);
        self.drain(cancel);
    }

    fn drain(&self, cancel: impl Fn(Q::Entry)) {
        while let Some(entry) = self.queue.pop() {
            cancel(entry);
        }
    }
}
