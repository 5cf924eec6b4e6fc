//! The task front end's side of the executor: a pool's task is queued
//! into its pool when woken (`sched/inject.rs`) ([`PoolScheduler`] implements
//! the core's [`Schedule`]), and [`spawn_in`] makes a task of a pool. The
//! queues, the injector, fairness and shutdown are the core's: see
//! `sched/task/pool_tasks.rs` and `sched/queues.rs`.

use std::sync::Arc;

use crate::sched::inject;
use crate::sched::registry::Registry;
use crate::sched::task::raw::{self, JoinHandle, Notified, Schedule, TaskRef};
use crate::sched::worker::WorkerThread;

/// What a pool's task holds to be queued when woken: its pool.
pub(crate) struct PoolScheduler(Arc<Registry>);

impl Schedule for PoolScheduler {
    fn schedule(&self, task: Notified) {
        inject::schedule_task(&self.0, task);
    }

    fn yield_task(&self, task: Notified) {
        inject::yield_task(&self.0, task);
    }

    fn long_poll(&self, ticks: u64) {
        WorkerThread::count_long_poll(&self.0, ticks);
    }

    fn release(&self, task: TaskRef) {
        self.0.tasks.release(task);
    }
}

/// Spawns `future` as a task of `registry`'s pool.
pub(crate) fn spawn_in<F>(registry: &Arc<Registry>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (entry, handle) = raw::spawn(future, PoolScheduler(Arc::clone(registry)));
    if registry.tasks.insert(&entry) {
        inject::schedule_task(registry, entry);
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
