//! Victim selection: which other worker an idle worker steals from, and
//! how much it takes.
//!
//! The selectors are those of the BWoS paper (section 6.2.3), chosen with
//! [`StealPolicy`]: they propose the first victim of a *steal round*. A
//! round then goes on through every other worker once (from the proposed
//! one, or nearest first for [`StealPolicy::Topology`]), so a round that
//! comes back empty-handed has seen every queue empty; the idle policy
//! counts its failed attempts. The paper's probabilistic acceptance
//! (section 3.4, `P_accept`) composes with any selector: a proposed victim
//! is accepted with the probability that one randomly sampled block of its
//! queue holds stealable jobs ([`bwos_queue::lifo::Stealer::probe`], one cache line),
//! otherwise the selector proposes another, up to once per worker; fuller
//! queues are thus preferred without scanning their sizes.

pub(crate) mod topology;

use std::cell::Cell;
use std::sync::Arc;

use bwos_queue::Steal;

use topology::{TIERS, Topology};

/// What a steal round takes from: one queue (or set of queues) per
/// worker. The pool's workers each have a LIFO queue of jobs and a FIFO
/// queue of tasks; one implementation serves both (`StealView`, `steal_view.rs`), so both
/// kinds of work go through one round.
pub(crate) trait VictimQueues {
    /// What a steal hands over.
    type Item;
    /// How many workers there are.
    fn count(&self) -> usize;
    /// Worker `victim`'s stealable items (a racy estimate).
    fn estimated_len(&self, victim: usize) -> usize;
    /// Whether one sampled block of worker `victim`'s queues holds
    /// stealable items (`P_accept`, one cache line).
    fn probe(&self, victim: usize, sample: usize) -> bool;
    /// Steals from worker `victim`, one item or a batch, as configured.
    fn steal(&self, victim: usize, batch: StealBatch) -> Steal<Self::Item>;
}

/// How an idle worker picks the first victim of a steal round. Whatever
/// it picks, the round then tries every other worker once before it
/// counts as failed.
///
/// The default is [`Random`](StealPolicy::Random). Measured on the
/// fork/join workloads of `bwos-bench corun` (fib(30), a 10M-node tree
/// sum, 2 workers on a 2-core VM, 5 repetitions), every other selector
/// was within noise of it or slower (medians 0.93x-1.31x of its time;
/// `Topology` and `BestOfMany` slowest): with two workers every thief has
/// one victim. See the README's "Scheduling policies" section.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new()
///     .num_threads(2)
///     .steal_policy(bwos::StealPolicy::BestOfMany { candidates: 3 })
///     .build()?;
/// assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StealPolicy {
    /// A victim chosen uniformly at random among the other workers.
    #[default]
    Random,
    /// The other workers in a fixed order, starting after the thief's own
    /// index (worker `i` tries `i + 1`, `i + 2`, ... modulo the count).
    Sequential,
    /// The victim of the last successful steal first, else a random one.
    LastVictim,
    /// Two random victims; the one with more stealable jobs
    /// ([`bwos_queue::lifo::Stealer::estimated_len`]).
    BestOfTwo,
    /// `candidates` random victims; the one with the most stealable jobs.
    /// `candidates` must be at least 1; more than the number of other
    /// workers samples each of them once.
    BestOfMany {
        /// How many victims to sample (at least 1).
        candidates: usize,
    },
    /// Nearest workers first: those that last ran on a CPU sharing the
    /// thief's last-level cache, then those on its NUMA node, then the
    /// rest, each group from a random start. The layout comes from
    /// `/sys/devices/system/cpu/*/cache` and `/sys/devices/system/node`
    /// (flat when absent), and workers learn where they run with
    /// `sched_getcpu`, or are pinned with
    /// [`ThreadPoolBuilder::pin_threads`](crate::ThreadPoolBuilder::pin_threads).
    Topology,
}

/// How much a successful steal takes.
///
/// The default is [`One`](StealBatch::One): fork/join queues hold one job
/// per pending `join` on the victim's path, the oldest being the biggest,
/// and taking more than one hands the thief jobs the victim would have
/// reached soon (measured: see the README's policy table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StealBatch {
    /// The oldest stealable job.
    #[default]
    One,
    /// The stealable jobs of the victim's oldest granted block (as many as
    /// fit in the thief's current block): the thief runs the oldest and
    /// keeps the rest in its own queue
    /// ([`bwos_queue::lifo::Stealer::steal_batch_and_pop`]).
    Block,
}

/// The steal configuration of one pool, shared by its workers.
#[derive(Clone, Debug, Default)]
pub(crate) struct StealConfig {
    pub(crate) policy: StealPolicy,
    pub(crate) probabilistic: bool,
    pub(crate) batch: StealBatch,
}

/// The CPU each worker last ran on, for [`StealPolicy::Topology`].
pub(crate) trait WhereWorkersRun {
    /// Worker `index`'s last known CPU.
    fn cpu_of(&self, index: usize) -> Option<u32>;
}

/// A worker's victim selector.
pub(crate) struct Victims {
    state: Cell<u64>,
    config: StealConfig,
    topology: Option<Arc<Topology>>,
    last_victim: Cell<Option<usize>>,
}

impl Victims {
    /// A selector for worker `index`, seeded differently per worker.
    pub(crate) fn new(index: usize, config: StealConfig, topology: Option<Arc<Topology>>) -> Self {
        // Any non-zero seed works for xorshift; spread the indices.
        let seed = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        Victims {
            state: Cell::new(seed),
            config,
            topology,
            last_victim: Cell::new(None),
        }
    }

    /// xorshift64*: cheap, and good enough to spread thieves.
    fn next(&self) -> u64 {
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A random worker other than `me` (`n >= 2`).
    fn random_other(&self, me: usize, n: usize) -> usize {
        let r = (self.next() % (n as u64 - 1)) as usize;
        if r >= me { r + 1 } else { r }
    }

    /// The selector's proposal for the first victim of a round.
    fn propose(&self, me: usize, queues: &impl VictimQueues) -> usize {
        let n = queues.count();
        let len = |victim: usize| queues.estimated_len(victim);
        match self.config.policy {
            StealPolicy::Random | StealPolicy::Topology => self.random_other(me, n),
            StealPolicy::Sequential => (me + 1) % n,
            StealPolicy::LastVictim => match self.last_victim.get() {
                Some(victim) => victim,
                None => self.random_other(me, n),
            },
            StealPolicy::BestOfTwo => {
                let (a, b) = (self.random_other(me, n), self.random_other(me, n));
                if len(b) > len(a) { b } else { a }
            }
            StealPolicy::BestOfMany { candidates } => {
                let mut best = self.random_other(me, n);
                let mut best_len = len(best);
                for _ in 1..candidates.min(n - 1) {
                    let victim = self.random_other(me, n);
                    let victim_len = len(victim);
                    if victim_len > best_len {
                        (best, best_len) = (victim, victim_len);
                    }
                }
                best
            }
        }
    }

    /// The first victim of a round: the selector's proposal, filtered by
    /// `P_accept` if the pool asks for it.
    fn first_victim(&self, me: usize, queues: &impl VictimQueues) -> usize {
        let mut victim = self.propose(me, queues);
        if self.config.probabilistic {
            for _ in 1..queues.count() {
                if queues.probe(victim, self.next() as usize) {
                    break;
                }
                victim = self.propose(me, queues);
            }
        }
        victim
    }

    /// Steals from some worker other than `me`: an item (after a batch
    /// steal the others are in the thief's own queue), or `None` when every
    /// other queue had nothing stealable. `on_empty(victim)` is called for
    /// every victim found empty; `where_workers_run` serves
    /// [`StealPolicy::Topology`].
    pub(crate) fn steal<Q: VictimQueues>(
        &self,
        me: usize,
        queues: &Q,
        where_workers_run: &impl WhereWorkersRun,
        mut on_empty: impl FnMut(usize),
    ) -> Option<Q::Item> {
        let n = queues.count();
        if n <= 1 {
            return None;
        }
        loop {
            let first = self.first_victim(me, queues);
            let mut contended = false;
            let mut attempt = |victim: usize| match queues.steal(victim, self.config.batch) {
                Steal::Success(job) => {
                    self.last_victim.set(Some(victim));
                    Some(job)
                }
                Steal::Retry => {
                    contended = true;
                    None
                }
                Steal::Empty => {
                    on_empty(victim);
                    None
                }
            };
            let found = match &self.topology {
                Some(topology) if self.config.policy == StealPolicy::Topology => {
                    let here = where_workers_run.cpu_of(me);
                    (0..TIERS).find_map(|tier| {
                        (0..n).find_map(|offset| {
                            let victim = (first + offset) % n;
                            let near = topology.tier(here, where_workers_run.cpu_of(victim));
                            (victim != me && near == tier)
                                .then(|| attempt(victim))
                                .flatten()
                        })
                    })
                }
                _ => (0..n).find_map(|offset| {
                    let victim = (first + offset) % n;
                    (victim != me).then(|| attempt(victim)).flatten()
                }),
            };
            if found.is_some() {
                return found;
            }
            self.last_victim.set(None);
            if !contended {
                return None;
            }
        }
    }
}
