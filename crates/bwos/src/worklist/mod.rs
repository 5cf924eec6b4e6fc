//! Parallel work lists: process a set of items, each of which may produce
//! more, until none is left — the shape of a garbage collector's marking
//! phase (the BWoS paper's first application, section 6.3.1), and of graph
//! traversal, flood fill, reachability and dependency resolution.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
//!
//! // Mark everything reachable from node 0 in a graph given as edge lists.
//! let edges: Vec<Vec<usize>> = (0..1000).map(|i| vec![(i * 7 + 1) % 1000, (i * 13 + 5) % 1000]).collect();
//! let marked: Vec<AtomicBool> = (0..1000).map(|_| AtomicBool::new(false)).collect();
//! let visits = AtomicUsize::new(0);
//! marked[0].store(true, Ordering::Relaxed);
//! bwos::worklist::run([0usize], |node, sink| {
//!     visits.fetch_add(1, Ordering::Relaxed);
//!     for &next in &edges[node] {
//!         if !marked[next].swap(true, Ordering::Relaxed) {
//!             sink.push(next);
//!         }
//!     }
//! });
//! let reached = marked.iter().filter(|m| m.load(Ordering::Relaxed)).count();
//! assert_eq!(visits.load(Ordering::Relaxed), reached);
//! ```
//!
//! # How a run works
//! Items are stored by value in a LIFO BWoS queue per participating
//! worker (no job, no allocation per item), 32 blocks of 256 items: a
//! participant pushes and pops its newest items in its own block without
//! atomic read-modify-writes, and a thief takes a whole granted block at
//! once (`steal_batch_and_pop`), choosing its victim with the pool's
//! stealing policy (including the paper's probabilistic one). A
//! participant looks before taking each item whether another participant
//! waits for work or the pool has idle workers (two relaxed loads of
//! read-mostly words); if so and it holds two items or more, it shares its
//! current block early (one item it keeps: passing a chain's single item
//! back and forth would cost a cache transfer per item), and in the second
//! case it also spawns a *helper*, a pool job through which an idle worker
//! joins the run. Items pushed during one call of `f` are thus offered
//! when the call returns, or sooner when a block fills up (a full block
//! is open to thieves). Everything beyond the queue's own push and pop,
//! those loads and the stop flag is out of line: the per-item cost is
//! about 30 instructions over serial marking's. When a participant's queue is full, the item and up to 255 of
//! its newest neighbours move to a shared, unbounded *spill* in one chunk
//! (counted in [`PoolStats::worklist_spilled`](crate::PoolStats)); the
//! spill is looked at before stealing.
//!
//! A participant that finds no item waits the way the pool's idle policy
//! waits (spinning, then yielding, for the pool's sleep threshold of
//! attempts), then leaves the run and goes back to normal pool work: it
//! can run other jobs, sleep, or come back through a later helper.
//!
//! # Termination
//! Detecting that a parallel marking is over is the classic problem of G1's
//! task terminator or Go's mark termination: a worker that finds nothing
//! must not conclude that the work is done while an item is in flight. A
//! run here uses *ownership* instead of a global count:
//!
//! - every item is, at every moment, owned by exactly one participant that
//!   is still running: in its queue, in its hands (being processed, or
//!   just stolen: a thief's reservation makes the items its own), or in
//!   the spill, which the participant that spilled looks at again before
//!   it leaves;
//! - a participant leaves only after its own queue returned nothing (the
//!   owner takes back every granted item no thief reserved), and after its
//!   last look at the spill found it empty;
//! - the run is a scope: the caller's own participation and every helper
//!   are counted by the scope's counter, and `run` returns when the count
//!   is zero.
//!
//! So `run` returns only once every item has been processed: an item
//! pushed while another participant decides to leave belongs to the
//! participant that pushed it, which is still running. It cannot hang: a
//! participant with items processes them, and one without leaves after a
//! bounded wait; helpers that start after the work is over find nothing
//! and leave at once. The loom model `worklist_*` in `loom_models/worklist.rs`
//! checks the spill protocol (`spill.rs`) with two participants, a full queue that
//! spills, and a thief that leaves while the owner still pushes.
//!
//! # Panics
//! A panic in `f` stops the run: every participant stops taking items at
//! its next one, the items left in queues and in the spill are dropped
//! (once each, when the run's queues are dropped), and the first panic
//! resumes in the caller once every participant has left. The pool stays
//! usable.

mod spill;

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bwos_queue::{Config, Steal, lifo};
use crossbeam_utils::CachePadded;

use crate::sched::current::with_current_pool;
use crate::sched::inject::in_worker_of;
use crate::sched::pool::ThreadPool;
use crate::sched::registry::Registry;
use crate::sched::steal::{StealBatch, VictimQueues};
use crate::sched::worker::WorkerThread;
use crate::scope::{Scope, in_place_scope_in};
use spill::{Spill, next_item, push_or_spill};

/// Blocks per participant queue.
const QUEUE_BLOCKS: usize = 32;
/// Items per block: what one steal moves at most. Large, since items are
/// tiny: a steal costs a few atomic operations however many it moves.
const QUEUE_BLOCK_SIZE: usize = 256;
/// Spin rounds before an idle participant starts yielding (as the pool's
/// `Park` policy does).
const SPIN_ROUNDS: u32 = 10;

/// Processes `seeds` and every item pushed while processing them, each
/// exactly once, on the current pool (the calling worker's, or the global
/// pool): `f(item, sink)` runs once per item on some worker, and
/// [`Sink::push`] adds an item. Returns when every item has been
/// processed. Items are processed in no particular order (each worker
/// takes its newest first).
///
/// # Panics
/// If `f` panics, the run stops (other workers stop taking items), the
/// remaining items are dropped, and the panic resumes here. See the
/// [module docs](self).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// // Every number of a Collatz-like tree below 1000, summed.
/// let sum = AtomicU64::new(0);
/// bwos::worklist::run([1u64], |n, sink| {
///     sum.fetch_add(n, Ordering::Relaxed);
///     for child in [2 * n, 2 * n + 1] {
///         if child < 1000 {
///             sink.push(child);
///         }
///     }
/// });
/// assert_eq!(sum.into_inner(), (1..1000).sum::<u64>());
/// ```
pub fn run<T, F>(seeds: impl IntoIterator<Item = T>, f: F)
where
    T: Send,
    F: Fn(T, &Sink<'_, T>) + Sync,
{
    with_current_pool(|registry| run_in(registry, seeds, f));
}

/// [`run`] on `registry`'s pool: on the calling worker if it belongs to
/// it, else on one of its workers (the seeds are collected here first).
pub(crate) fn run_in<T, F>(
    registry: &std::sync::Arc<Registry>,
    seeds: impl IntoIterator<Item = T>,
    f: F,
) where
    T: Send,
    F: Fn(T, &Sink<'_, T>) + Sync,
{
    let not_on_a_worker = WorkerThread::with_current_in(registry, |worker| match worker {
        Some(worker) => {
            run_in_worker(worker, seeds, &f);
            None
        }
        None => Some(seeds),
    });
    let Some(seeds) = not_on_a_worker else {
        return;
    };
    let seeds: Vec<T> = seeds.into_iter().collect();
    let f = &f;
    in_worker_of(registry, move |worker| run_in_worker(worker, seeds, f));
}

fn run_in_worker<T, F>(worker: &WorkerThread, seeds: impl IntoIterator<Item = T>, f: &F)
where
    T: Send,
    F: Fn(T, &Sink<'_, T>) + Sync,
{
    let run = Run {
        shared: Shared::new(worker.registry().num_threads()),
        f,
    };
    in_place_scope_in(worker.registry(), |scope| {
        run.participate(worker, scope, Some(seeds));
    });
    // Every participant has left: what the queues and the spill still hold
    // (only after a panic) is dropped with `run`.
}

/// Adds items to the running work list; given to `f` with each item.
///
/// Belongs to one participant: neither `Send` nor `Sync`.
pub struct Sink<'a, T> {
    participant: &'a Participant<'a, T>,
}

impl<T> Sink<'_, T> {
    /// Adds `item` to the work list: it will be processed before
    /// [`run`] returns (unless the run stops on a panic, which drops it).
    /// Never fails: when this worker's queue is full the item goes to the
    /// run's spill.
    ///
    /// Other workers can take the item once the current call of `f`
    /// returns (or once this worker's block of 256 items fills up), not
    /// while `f` still runs: an `f` that pushes and then computes for long
    /// should make that computation an item of its own.
    #[inline]
    pub fn push(&self, item: T) {
        self.participant.push(item);
    }
}

impl<T> fmt::Debug for Sink<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sink")
            .field("worker", &self.participant.worker.index())
            .field("queued", &self.participant.queue.private_len())
            .finish_non_exhaustive()
    }
}

/// One run: what its participants share, and the function.
struct Run<'f, T, F> {
    shared: Shared<T>,
    f: &'f F,
}

/// A worker's place in a run.
struct Slot<T> {
    /// The worker's queue while it is not in the run; `None` while it is,
    /// or before it first joined.
    idle_queue: std::sync::Mutex<Option<lifo::Worker<T>>>,
    /// Set when the worker first joins; thieves read it.
    stealer: OnceLock<lifo::Stealer<T>>,
}

/// What the participants of a run share.
struct Shared<T> {
    slots: Box<[Slot<T>]>,
    /// On a line of its own: its lock and length change with every chunk
    /// moved, and the hints below are read once per item.
    spill: CachePadded<Spill<T>>,
    /// Participants waiting for items (a hint for sharing).
    hungry: AtomicUsize,
    /// Participants in the run now.
    participants: AtomicUsize,
    /// Helpers spawned that have not started yet: at most one at a time.
    helpers_pending: AtomicUsize,
    /// Set by a participant that panics: the others stop taking items.
    stopped: AtomicBool,
}

impl<T> Shared<T> {
    fn new(num_threads: usize) -> Self {
        Shared {
            slots: (0..num_threads)
                .map(|_| Slot {
                    idle_queue: std::sync::Mutex::new(None),
                    stealer: OnceLock::new(),
                })
                .collect(),
            spill: CachePadded::new(Spill::new()),
            hungry: AtomicUsize::new(0),
            participants: AtomicUsize::new(0),
            helpers_pending: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    /// Worker `index`'s queue, created when it first joins; `None` if the
    /// worker already takes part (its `f` ran nested pool work that picked
    /// up a helper of the same run).
    fn join(&self, index: usize) -> Option<lifo::Worker<T>> {
        let slot = &self.slots[index];
        let mut idle_queue = slot
            .idle_queue
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let queue = match idle_queue.take() {
            Some(queue) => queue,
            None if slot.stealer.get().is_none() => {
                let config = Config::new(QUEUE_BLOCKS, QUEUE_BLOCK_SIZE)
                    .expect("the work-list queue geometry is valid");
                let (queue, stealer) = lifo::new(config);
                // Only this worker, holding the slot's lock, sets it.
                let _ = slot.stealer.set(stealer);
                queue
            }
            None => return None,
        };
        // Relaxed: a count for the helper decision only.
        self.participants.fetch_add(1, Ordering::Relaxed);
        Some(queue)
    }

    fn leave(&self, index: usize, queue: lifo::Worker<T>) {
        *self.slots[index]
            .idle_queue
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(queue);
        // Relaxed: as in `join`.
        self.participants.fetch_sub(1, Ordering::Relaxed);
    }

    fn is_stopped(&self) -> bool {
        // Relaxed: stopping early is best effort; the scope carries the
        // panic itself.
        self.stopped.load(Ordering::Relaxed)
    }
}

/// The queues a participant steals from: the other participants'.
struct RunQueues<'a, T> {
    shared: &'a Shared<T>,
    thief: &'a lifo::Worker<T>,
}

impl<T> VictimQueues for RunQueues<'_, T> {
    type Item = T;

    fn count(&self) -> usize {
        self.shared.slots.len()
    }

    fn estimated_len(&self, victim: usize) -> usize {
        self.shared.slots[victim]
            .stealer
            .get()
            .map_or(0, lifo::Stealer::len)
    }

    fn probe(&self, victim: usize, sample: usize) -> bool {
        self.shared.slots[victim]
            .stealer
            .get()
            .is_some_and(|stealer| stealer.probe(sample))
    }

    /// Always a whole block: items are tiny (see the module docs).
    fn steal(&self, victim: usize, _batch: StealBatch) -> Steal<T> {
        match self.shared.slots[victim].stealer.get() {
            Some(stealer) => stealer.steal_batch_and_pop(self.thief),
            None => Steal::Empty,
        }
    }
}

/// A worker taking part in a run.
struct Participant<'a, T> {
    shared: &'a Shared<T>,
    worker: &'a WorkerThread,
    queue: &'a lifo::Worker<T>,
}

impl<T> Participant<'_, T> {
    #[inline]
    fn push(&self, item: T) {
        let spilled = push_or_spill(self.queue, &self.shared.spill, item);
        if spilled > 0 {
            self.worker.counters().worklist_spilled(spilled as u64);
        }
    }

    /// Once per item: if another participant waits for work or the pool
    /// has idle workers, makes this participant's items visible to
    /// thieves. Returns whether a helper should be spawned. Two relaxed
    /// loads of read-mostly words when nobody is idle.
    #[inline]
    fn share_if_wanted(&self) -> bool {
        // Relaxed: hints; a participant that waits looks again, and an
        // idle worker that is missed is asked at the next item.
        if self.shared.hungry.load(Ordering::Relaxed) != 0 || self.worker.pool_has_idle_workers() {
            return self.offer();
        }
        false
    }

    /// Someone could use work: open this participant's private items to
    /// thieves, unless its last offer is still untaken. Returns whether
    /// there is stealable work and no participant waiting for it (the
    /// idle workers of the pool are then asked to join through a helper).
    ///
    /// Only with two private items or more: a participant keeps one for
    /// itself. Sharing its only item would hand a chain (a linked list)
    /// back and forth between workers, a cache transfer per item.
    #[cold]
    #[inline(never)]
    fn offer(&self) -> bool {
        let visible =
            self.queue.granted_pending() || (self.queue.private_len() >= 2 && self.queue.share());
        // Relaxed: as in `share_if_wanted`.
        visible && self.shared.hungry.load(Ordering::Relaxed) == 0
    }

    /// The next item when the participant's own queue looks empty: from
    /// the spill, or stolen; after a bounded wait, `None` (the participant
    /// then leaves).
    #[cold]
    #[inline(never)]
    fn next_when_empty(&self) -> Option<T> {
        if let Some(item) = self.look() {
            return Some(item);
        }
        // Relaxed: `hungry` is a hint for sharing.
        self.shared.hungry.fetch_add(1, Ordering::Relaxed);
        let config = self.worker.idle_config();
        let mut found = None;
        for attempt in 0..config.sleep_threshold.max(1) {
            if self.shared.is_stopped() {
                break;
            }
            if attempt < SPIN_ROUNDS
                && !config.oversubscribed
                && config.policy != crate::IdlePolicy::Yield
            {
                for _ in 0..1u32 << attempt.min(4) {
                    std::hint::spin_loop();
                }
            } else if config.policy == crate::IdlePolicy::Spin {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            found = self.look();
            if found.is_some() {
                break;
            }
        }
        self.shared.hungry.fetch_sub(1, Ordering::Relaxed);
        found
    }

    fn look(&self) -> Option<T> {
        next_item(self.queue, &self.shared.spill, |queue| {
            let stolen = self.worker.steal_round(&RunQueues {
                shared: self.shared,
                thief: queue,
            })?;
            self.worker
                .counters()
                .worklist_steal(1 + queue.private_len() as u64);
            Some(stolen)
        })
    }
}

impl<'f, T, F> Run<'f, T, F>
where
    T: Send,
    F: Fn(T, &Sink<'_, T>) + Sync,
{
    /// Takes part in the run on `worker` until no item is in sight: pushes
    /// `seeds` first, if given.
    fn participate<'scope>(
        &'scope self,
        worker: &WorkerThread,
        scope: &Scope<'scope>,
        seeds: Option<impl IntoIterator<Item = T>>,
    ) {
        let index = worker.index();
        let Some(queue) = self.shared.join(index) else {
            // This worker already takes part further down its stack (its
            // `f` ran pool work that picked up this helper). Seeds cannot
            // get here (the caller's participation is the run's first),
            // but would go to the spill, which that participation looks
            // at before it leaves.
            if let Some(seeds) = seeds {
                self.shared.spill.push_all(seeds);
            }
            return;
        };
        let stop_on_panic = StopOnPanic(&self.shared);
        let participant = Participant {
            shared: &self.shared,
            worker,
            queue: &queue,
        };
        let sink = Sink {
            participant: &participant,
        };
        if let Some(seeds) = seeds {
            for item in seeds {
                sink.push(item);
            }
        }
        // The per-item path: the queue's own fast paths, two hint loads
        // and the stop flag; everything else is out of line.
        while !self.shared.is_stopped() {
            if participant.share_if_wanted() {
                self.spawn_helper(scope);
            }
            let item = match queue.pop() {
                Some(item) => item,
                None => match participant.next_when_empty() {
                    Some(item) => item,
                    None => break,
                },
            };
            (self.f)(item, &sink);
        }
        drop(stop_on_panic);
        self.shared.leave(index, queue);
    }

    /// Spawns a helper, a job through which an idle worker joins the run,
    /// unless one is already on its way or every worker takes part.
    #[cold]
    #[inline(never)]
    fn spawn_helper<'scope>(&'scope self, scope: &Scope<'scope>) {
        let shared = &self.shared;
        // Relaxed: counts for a heuristic; an extra or a missing helper
        // changes only how many workers take part.
        if shared.helpers_pending.load(Ordering::Relaxed) != 0
            || shared.participants.load(Ordering::Relaxed) >= shared.slots.len()
        {
            return;
        }
        shared.helpers_pending.fetch_add(1, Ordering::Relaxed);
        scope.spawn(move |scope| {
            self.shared.helpers_pending.fetch_sub(1, Ordering::Relaxed);
            if self.shared.is_stopped() {
                return;
            }
            // `with_own`: see `inject::in_worker_injected`.
            WorkerThread::with_own(|worker| {
                let worker = worker.expect("scope jobs run on workers of the scope's pool");
                self.participate(worker, scope, None::<Vec<T>>);
            });
        });
    }
}

/// Stops the run if dropped while a panic unwinds: the other
/// participants stop taking items.
struct StopOnPanic<'a, T>(&'a Shared<T>);

impl<T> Drop for StopOnPanic<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Relaxed: see `Shared::is_stopped`.
            self.0.stopped.store(true, Ordering::Relaxed);
        }
    }
}

impl ThreadPool {
    /// [`worklist::run`](crate::worklist::run) in this pool: processes
    /// `seeds` and every item `f` pushes, each exactly once, on this
    /// pool's workers.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
    /// let processed = AtomicUsize::new(0);
    /// // A complete binary tree of depth 10, one item per node.
    /// pool.worklist([0u32], |depth, sink| {
    ///     processed.fetch_add(1, Ordering::Relaxed);
    ///     if depth < 10 {
    ///         sink.push(depth + 1);
    ///         sink.push(depth + 1);
    ///     }
    /// });
    /// assert_eq!(processed.into_inner(), 2047);
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn worklist<T, F>(&self, seeds: impl IntoIterator<Item = T>, f: F)
    where
        T: Send,
        F: Fn(T, &crate::worklist::Sink<'_, T>) + Sync,
    {
        run_in(&self.registry, seeds, f);
    }
}
