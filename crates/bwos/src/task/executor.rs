//! The pool as an async executor: where woken tasks are queued, and how a
//! pool's tasks are cancelled when it shuts down.
//!
//! # Queues
//! Each worker has a FIFO BWoS queue of run-queue entries next to its LIFO
//! queue of jobs (`worker.rs`). A task woken on one of the pool's workers
//! (by itself, by another task, by `spawn`) goes to the back of that
//! worker's FIFO queue; thieves take a whole block of it at once
//! (`fifo::Stealer::steal_batch_and_pop`, as the BWoS paper configured
//! Tokio). A task woken anywhere else (an I/O or timer thread, a thread
//! outside the pool) goes to the pool's task injector, and a sleeping
//! worker is woken if nobody searches; the sleep protocol's final look
//! (`Registry::has_visible_work`) covers both, so no wake-up is lost.
//!
//! # Fairness
//! A task that is always ready goes to the back of the FIFO queue after
//! each poll, so the tasks queued before it run first; every
//! [`INJECTOR_INTERVAL`]th task a worker takes comes from the injector if
//! it holds one, so a busy worker cannot starve tasks woken from outside.
//! A task that yields lets injected tasks go first as well: the worker
//! moves a batch of them to its queue before requeueing the yielder. A
//! worker that takes from the injector moves up to [`INJECTOR_BATCH`]
//! entries at once to its own queue, where idle workers can steal them.
//!
//! # Shutdown
//! Tasks do not keep a pool alive (as in tokio: dropping the runtime
//! cancels its tasks). When the pool stops, each worker cancels the entries
//! left in its FIFO queue, and the last worker to stop closes the pool's
//! task side: from then on a woken or spawned task is cancelled on the
//! spot, every task still alive is aborted (the [`TaskList`] reaches those
//! that wait for a wake-up nobody will send) and the injector is drained.
//! Cancelling drops the future and makes its `JoinHandle` report
//! [`JoinError::is_cancelled`](super::JoinError::is_cancelled).
//!
//! An entry injected while the pool closes is not stranded: see
//! `inject.rs`, whose protocol is model-checked with loom.

use std::sync::Arc;

use bwos_queue::{Config, fifo};
use crossbeam_deque::{Injector, Steal};

use super::inject::{ClosableInjector, EntryQueue};
use super::list::TaskList;
use super::raw::{self, JoinHandle, Notified, Schedule, TaskRef};
use crate::pool::registry::Registry;

/// Blocks per worker task queue.
const TASK_QUEUE_BLOCKS: usize = 8;
/// Entries per block: 8 x 32 = 256 entries, tokio's local queue size; a
/// thief takes up to one block.
const TASK_QUEUE_BLOCK_SIZE: usize = 32;

/// A worker takes its next task from the injector, if it holds one, every
/// this many tasks (tokio's global queue interval, 61 ticks).
pub(crate) const INJECTOR_INTERVAL: u32 = 61;

/// The most entries a worker moves from the injector to its own queue at
/// once, besides the one it runs: one look at the injector serves many
/// tasks, and other workers steal from the batch if they are idle.
pub(crate) const INJECTOR_BATCH: usize = 16;

/// The geometry of a worker's task queue.
pub(crate) fn task_queue_config() -> Config {
    Config::new(TASK_QUEUE_BLOCKS, TASK_QUEUE_BLOCK_SIZE).expect("a valid constant geometry")
}

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
        loop {
            match self.steal() {
                Steal::Success(task) => return Some(task),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    fn is_empty(&self) -> bool {
        Injector::is_empty(self)
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
        !self.injector.is_empty() || self.stealers.iter().any(|s| s.estimated_len() > 0)
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

    /// Called by the last worker to stop: cancels every task of the pool,
    /// now and later (see "Shutdown").
    pub(crate) fn close(&self) {
        self.injector.close(Notified::cancel);
        self.list.close_and_cancel_all();
        // Aborting idle tasks queued them (through `inject`, which
        // cancelled them at once since the injector is closed).
    }

    /// How many of the pool's tasks are alive (listed).
    #[cfg(test)]
    pub(crate) fn live_tasks(&self) -> usize {
        self.list.len()
    }
}

/// What a pool's task holds to be queued when woken: its pool.
pub(crate) struct PoolScheduler(Arc<Registry>);

impl Schedule for PoolScheduler {
    fn schedule(&self, task: Notified) {
        self.0.schedule_task(task);
    }

    fn yield_task(&self, task: Notified) {
        self.0.yield_task(task);
    }

    fn release(&self, task: TaskRef) {
        self.0.tasks.list.remove(task);
    }
}

/// Spawns `future` as a task of `registry`'s pool.
pub(crate) fn spawn_in<F>(registry: &Arc<Registry>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (entry, handle) = raw::spawn(future, PoolScheduler(Arc::clone(registry)));
    if registry.tasks.list.insert(&entry) {
        registry.schedule_task(entry);
    } else {
        entry.cancel();
    }
    handle
}

#[cfg(test)]
mod tests {
    use crate::ThreadPoolBuilder;

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn completed_tasks_leave_the_pools_task_list() {
        bwos_testkit::watchdog("completed_tasks_leave_the_pools_task_list", || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let handles: Vec<_> = (0..1000)
                .map(|i| pool.spawn_task(async move { i }))
                .collect();
            let sum: u64 = pool.block_on(async {
                let mut sum = 0;
                for handle in handles {
                    sum += handle.await.unwrap();
                }
                sum
            });
            assert_eq!(sum, 499_500);
            // The completer unlists a task after waking its handle: the
            // last one may still be on its way out.
            while pool.registry.tasks.live_tasks() != 0 {
                std::thread::yield_now();
            }
        });
    }
}
