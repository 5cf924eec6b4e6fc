//! The task side of a pool, in its registry: the stealers of the workers'
//! task queues, the task injector and the list of live tasks; and how a
//! pool's tasks are cancelled when it shuts down.
//!
//! # Queues
//! Each worker has a FIFO BWoS queue of run-queue entries next to its LIFO
//! queue of jobs (`sched/worker.rs`). A task woken on one of the pool's workers
//! (by itself, by another task, by `spawn`) goes to the back of that
//! worker's FIFO queue; thieves take a whole block of it at once
//! (`fifo::Stealer::steal_batch_and_pop`, as the BWoS paper configured
//! Tokio). A task woken anywhere else (an I/O or timer thread, a thread
//! outside the pool) goes to the pool's task injector, and a sleeping
//! worker is woken if nobody searches; the sleep protocol's final look
//! (`Registry::has_visible_work`) covers both, so no wake-up is lost. How
//! a worker chooses between its queue and the injector: "Fairness" in
//! `sched/queues.rs`.
//!
//! # Shutdown
//! Tasks do not keep a pool alive (as in tokio: dropping the runtime
//! cancels its tasks). When the pool stops, each worker cancels the entries
//! left in its FIFO queue, and the last worker to stop closes the pool's
//! task side: from then on a woken or spawned task is cancelled on the
//! spot, every task still alive is aborted (the [`TaskList`] reaches those
//! that wait for a wake-up nobody will send) and the injector is drained.
//! Cancelling drops the future and makes its `JoinHandle` report
//! [`JoinError::is_cancelled`](super::raw::JoinError::is_cancelled).
//!
//! An entry injected while the pool closes is not stranded: see
//! `inject.rs`, whose protocol is model-checked with loom.

use bwos_queue::fifo;
use crossbeam_deque::Injector;

use super::inject::{ClosableInjector, EntryQueue};
use super::list::TaskList;
use super::raw::{Notified, TaskRef};
use crate::sched::queues::take_oldest;

/// The task side of a pool, in its registry.
pub(crate) struct PoolTasks {
    stealers: Box<[fifo::Stealer<Notified>]>,
    /// Closed when the last worker stopped.
    injector: ClosableInjector<Injector<Notified>>,
    list: TaskList,
}

impl EntryQueue for Injector<Notified> {
    type Entry = Notified;

    fn push(&self, entry: Notified) {
        Injector::push(self, entry);
    }

    fn pop(&self) -> Option<Notified> {
        take_oldest(self)
    }

    fn is_empty(&self) -> bool {
        Injector::is_empty(self)
    }

    fn len(&self) -> usize {
        Injector::len(self)
    }
}

impl PoolTasks {
    /// The task side of a pool whose workers' FIFO queues have these
    /// stealers.
    pub(crate) fn new(stealers: Vec<fifo::Stealer<Notified>>) -> Self {
        let shards = 4 * stealers.len();
        PoolTasks {
            stealers: stealers.into(),
            injector: ClosableInjector::new(Injector::new()),
            list: TaskList::with_shards(shards),
        }
    }

    pub(crate) fn stealers(&self) -> &[fifo::Stealer<Notified>] {
        &self.stealers
    }

    /// Whether a sleeping worker would find a task: injected or stealable.
    pub(crate) fn has_visible_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Whether the injector holds an entry (a racy snapshot).
    pub(crate) fn has_injected(&self) -> bool {
        !self.injector.is_empty()
    }

    /// The oldest injected entry.
    pub(crate) fn take_injected(&self) -> Option<Notified> {
        self.injector.take()
    }

    /// Queues `task` in the injector; `false` if the pool has closed, in
    /// which case the entry was cancelled (see "Shutdown").
    pub(crate) fn inject(&self, task: Notified) -> bool {
        self.injector.inject(task, Notified::cancel)
    }

    /// Lists a new task of the pool; `false` if the pool has closed (the
    /// caller cancels the task).
    pub(crate) fn insert(&self, task: &Notified) -> bool {
        self.list.insert(task)
    }

    /// Unlists a completed task.
    pub(crate) fn release(&self, task: TaskRef) {
        self.list.remove(task);
    }

    /// Called by the last worker to stop: cancels every task of the pool,
    /// now and later (see "Shutdown").
    pub(crate) fn shut_down(&self) {
        self.injector.close(Notified::cancel);
        self.list.close_and_cancel_all();
        // Aborting idle tasks queued them (through `inject`, which
        // cancelled them at once since the injector is closed).
    }

    /// Entries in the injector (a racy snapshot, for `PoolStats`).
    pub(crate) fn injected_len(&self) -> usize {
        self.injector.len()
    }

    /// How many of the pool's tasks are alive (listed): locks each shard
    /// of the list in turn.
    pub(crate) fn live_tasks(&self) -> usize {
        self.list.len()
    }
}
