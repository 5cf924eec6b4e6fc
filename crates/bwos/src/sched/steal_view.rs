//! The steal view: what a worker's steal round takes from, the other
//! workers' job queues and task queues seen as one set of victims
//! ([`VictimQueues`], which the selection policies of `steal/` walk).

use bwos_queue::{Steal, fifo, lifo};

use super::job::JobRef;
use super::registry::Registry;
use super::steal::{StealBatch, VictimQueues};
use super::task::raw::Notified;

/// The queues a steal round of this worker takes from: each victim's jobs
/// first (the oldest is the biggest piece of a fork/join tree), then a
/// block of its tasks, which goes to the thief's own task queue.
pub(super) struct StealView<'a> {
    /// The thief's pool.
    pub(super) registry: &'a Registry,
    /// The thief's own queues, where a batch it steals goes.
    pub(super) jobs: &'a lifo::Worker<JobRef>,
    pub(super) tasks: &'a fifo::Worker<Notified>,
}

impl VictimQueues for StealView<'_> {
    type Item = JobRef;

    fn count(&self) -> usize {
        self.registry.num_threads()
    }

    fn estimated_len(&self, victim: usize) -> usize {
        let registry = self.registry;
        registry.stealers()[victim].len() + registry.tasks.stealers()[victim].len()
    }

    fn probe(&self, victim: usize, sample: usize) -> bool {
        let registry = self.registry;
        registry.stealers()[victim].probe(sample) || registry.tasks.stealers()[victim].probe(sample)
    }

    fn steal(&self, victim: usize, batch: StealBatch) -> Steal<JobRef> {
        let registry = self.registry;
        let jobs = &registry.stealers()[victim];
        let (job, taken) = match batch {
            StealBatch::One => (jobs.steal(), 1),
            StealBatch::Block => jobs.steal_batch_and_pop_counted(self.jobs),
        };
        // Counted on the victim's line for thieves (see "What other
        // workers stole from a worker" in `stats.rs`).
        let stolen_from = || registry.counters(victim).stolen_from();
        let jobs_contended = match job {
            Steal::Success(job) => {
                stolen_from().jobs(taken);
                return Steal::Success(job);
            }
            Steal::Retry => true,
            Steal::Empty => false,
        };
        match registry.tasks.stealers()[victim].steal_batch_and_pop_counted(self.tasks) {
            (Steal::Success(task), taken) => {
                stolen_from().tasks(taken);
                Steal::Success(task.into_job_ref())
            }
            (Steal::Empty, _) if !jobs_contended => Steal::Empty,
            _ => Steal::Retry,
        }
    }
}
