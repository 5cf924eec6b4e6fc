//! The run queues' settings: the geometry of a worker's job queue (LIFO)
//! and task queue (FIFO), how often a worker looks at the task injector,
//! and the one loop that takes the oldest entry of an injector.
//!
//! # Fairness between a worker's tasks and injected ones
//! A task that is always ready goes to the back of its worker's FIFO
//! queue after each poll, so the tasks queued before it run first; every
//! [`INJECTOR_INTERVAL`]th task a worker takes comes from the injector if
//! it holds one, so a busy worker cannot starve tasks woken from outside
//! the pool. A task that yields lets injected tasks go first as well: the
//! worker moves a batch of them to its queue before requeueing the
//! yielder. A worker that takes from the injector moves up to
//! [`INJECTOR_BATCH`] entries at once to its own queue, where idle workers
//! can steal them.
//!
//! # Ready tasks between fork/join jobs
//! A worker running a fork/join computation (a `join`, `scope` or
//! parallel iterator, inside a task or not) finds its next job in its own
//! job queue before it looks at tasks, and a computation keeps that queue
//! busy until it ends: ready tasks, I/O and timers would wait for the whole
//! computation. So every [`TASK_SLICE`] of fork/join work a worker polls
//! the I/O driver and fires due timers (both without blocking), then runs
//! the ready tasks of its queue and the injector for at most half a slice,
//! and goes back to its jobs: a light task waits for at most about one
//! slice while a computation runs on every worker. The task runs on top of
//! the job's frame, as the jobs a `join` runs while it waits for a thief
//! do, with the same caveats (reentrancy: see `WorkerThread::wait_until`).
//! The clock is not read at every join: a countdown of joins between two
//! looks at it adapts to the computation's grain, so that it is read a few
//! times per slice (between [`MIN_JOINS_PER_CLOCK_LOOK`] and
//! [`MAX_JOINS_PER_CLOCK_LOOK`] joins apart).

use std::time::Duration;

use bwos_queue::Config;
use crossbeam_deque::{Injector, Steal};

/// Blocks per worker job queue (a power of two: block moves then need no
/// division).
pub(crate) const QUEUE_BLOCKS: usize = 32;
/// Jobs per block. A block move costs the owner one atomic operation and
/// some bookkeeping; fork/join oscillates around its current depth, so a
/// small block makes the owner cross block boundaries often (8: one push
/// or pop in nine). Thieves do not depend on blocks filling up: idle
/// workers make the owner share its block (see "Sharing the owner's
/// block" in `worker.rs`).
pub(crate) const QUEUE_BLOCK_SIZE: usize = 32;

/// The default geometry of a worker's job queue
/// ([`ThreadPoolBuilder::queue_config`](crate::ThreadPoolBuilder::queue_config)
/// sets another).
pub(crate) fn default_queue_config() -> Config {
    Config::new(QUEUE_BLOCKS, QUEUE_BLOCK_SIZE).expect("a valid constant geometry")
}

/// Blocks per worker task queue.
const TASK_QUEUE_BLOCKS: usize = 8;
/// Entries per block: 8 x 32 = 256 entries, tokio's local queue size; a
/// thief takes up to one block.
const TASK_QUEUE_BLOCK_SIZE: usize = 32;

/// The geometry of a worker's task queue.
pub(crate) fn task_queue_config() -> Config {
    Config::new(TASK_QUEUE_BLOCKS, TASK_QUEUE_BLOCK_SIZE).expect("a valid constant geometry")
}

/// A worker takes its next task from the injector, if it holds one, every
/// this many tasks (tokio's global queue interval, 61 ticks).
pub(crate) const INJECTOR_INTERVAL: u32 = 61;

/// The most entries a worker moves from the injector to its own queue at
/// once, besides the one it runs: one look at the injector serves many
/// tasks, and other workers steal from the batch if they are idle.
pub(crate) const INJECTOR_BATCH: usize = 16;

/// How long a worker runs fork/join jobs before it serves ready tasks,
/// I/O and timers (see "Ready tasks between fork/join jobs"). A look
/// costs a non-blocking poll of the driver (about a microsecond, 1% of a
/// slice) when nothing is ready.
pub(crate) const TASK_SLICE: Duration = Duration::from_micros(100);

/// The fewest joins between two looks at the clock: coarse jobs (a
/// leaf of a millisecond) read it at every join, which costs nothing
/// next to them.
pub(crate) const MIN_JOINS_PER_CLOCK_LOOK: u32 = 1;

/// The most joins between two looks at the clock: fine-grained recursion
/// (a few nanoseconds a join) reads it every few tens of microseconds.
pub(crate) const MAX_JOINS_PER_CLOCK_LOOK: u32 = 1 << 13;

/// The oldest entry of `queue`, retrying while other takers contend for it.
pub(crate) fn take_oldest<T>(queue: &Injector<T>) -> Option<T> {
    loop {
        match queue.steal() {
            Steal::Success(entry) => return Some(entry),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}
