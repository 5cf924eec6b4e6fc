//! A work-stealing runtime on BWoS queues, with the fork/join API of
//! rayon-core: porting is a rename.
//!
//! ```
//! fn sum(values: &[u64]) -> u64 {
//!     if values.len() <= 1024 {
//!         return values.iter().sum();
//!     }
//!     let (left, right) = values.split_at(values.len() / 2);
//!     let (a, b) = bwos::join(|| sum(left), || sum(right));
//!     a + b
//! }
//! let values: Vec<u64> = (0..100_000).collect();
//! assert_eq!(sum(&values), 4_999_950_000);
//! ```
//!
//! # How it works
//! Each worker owns a LIFO BWoS queue (`bwos-queue`): it pushes and pops
//! its own jobs without atomic read-modify-write or fences, and idle
//! workers steal the oldest jobs of others. [`join`] keeps the job for its
//! second closure on the stack and pops it back in the common case;
//! [`scope`] counts its spawns the Nowa way (no atomic increment on the
//! scope's own path). Idle workers spin briefly, then park; they use no
//! CPU while the pool has nothing to do.
//!
//! Module map (see `DESIGN.md`): `pool` (pools, registry, injector,
//! global pool, shutdown), `worker` (the scheduling loop), `steal` (victim
//! selection: [`StealPolicy`], [`StealBatch`]), `idle` (what idle workers
//! do: [`IdlePolicy`], including BWS's balanced work stealing), `stats`
//! ([`PoolStats`]), `join` and `scope` (front ends), [`fork`] (async
//! fork/join after Nowa, on the same workers), [`task`] and [`io`] (async
//! tasks and sockets), `job` and `latch` (what the front ends hand to
//! workers).
//!
//! # Panics
//! A panic in user code never aborts the process: it reaches the caller
//! of the `join`, `scope` or `install` it happened in, after all work of
//! that call has finished (a [`spawn`]ed job's panic goes to the panic
//! handler). The rule that makes this hold: **no pool work runs while a
//! thread unwinds.** Where a closure panics while work of its call is
//! still pending (`join`'s `b`, perhaps on a thief; a scope's spawned
//! jobs), bwos catches the panic at that call, finishes the pending work
//! from ordinary code, then resumes the panic. So jobs never run inside a
//! destructor during unwinding, user code never observes
//! `std::thread::panicking()` because of somebody else's panic, and
//! mutex poisoning works as usual. Which panic wins: in `join`, `a`'s
//! when both panic; in a scope, the first one recorded in time, the
//! body's included (rayon-core's rules). bwos's own bookkeeping (a scope
//! completion, the scheduler loop) runs under a guard that aborts only if
//! that bwos code itself unwinds, which would be a bug in bwos: user code
//! never runs under it.
//!
//! Code that runs while a thread unwinds (a destructor of the user's) may
//! itself call `join` or `scope`; they behave as anywhere else.
//!
//! # Differences from rayon-core worth knowing
//! * Child stealing, as in rayon: a worker that waits for a stolen job runs
//!   other jobs meanwhile, on top of the waiting frame; see
//!   [`ThreadPoolBuilder::stack_size`].
//! * A panic in a [`spawn`]ed job goes to the pool's panic handler, or
//!   aborts the process when there is none (as in rayon).
//!
//! # Verification
//! The latch protocol, the Nowa scope counter, the sleep protocol, BWS's
//! watchdog hand-off and credit wake-ups, the async task state word,
//! `fork::join`'s suspension and resumption and a fork region's boundary
//! are model-checked with loom: `RUSTFLAGS="--cfg loom" cargo test -p bwos
//! --release --lib` (a loom build compiles only these protocol cores and
//! their models, `src/loom_models.rs`).

#![warn(missing_docs)]
// A loom build holds only the protocol cores, used by the loom models alone.
#![cfg_attr(loom, allow(dead_code))]

mod latch;
mod sync;

#[cfg(not(loom))]
mod broadcast;
#[cfg(not(loom))]
mod idle;
#[cfg(not(loom))]
mod scope;
// A loom build compiles only the protocol cores.
#[cfg(loom)]
#[path = "idle/balance.rs"]
mod balance;
#[cfg(loom)]
#[path = "scope/counter.rs"]
mod counter;
#[cfg(loom)]
#[path = "idle/driver_seat.rs"]
mod driver_seat;
#[cfg(not(loom))]
pub mod fork;
#[cfg(loom)]
#[path = "fork/boundary.rs"]
mod fork_boundary;
#[cfg(not(loom))]
pub mod io;
#[cfg(not(loom))]
mod job;
#[cfg(not(loom))]
mod join;
#[cfg(not(loom))]
mod pool;
#[cfg(loom)]
#[path = "idle/sleep.rs"]
mod sleep;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
mod steal;
pub mod task;
#[cfg(not(loom))]
mod worker;
#[cfg(not(loom))]
pub mod worklist;
// The loom build compiles the work list's core alone.
#[cfg(loom)]
#[path = "worklist/core.rs"]
mod worklist_core;

#[cfg(not(loom))]
pub use broadcast::{BroadcastContext, broadcast, spawn_broadcast};
#[cfg(not(loom))]
pub use idle::{DEFAULT_SLEEP_THRESHOLD, IdlePolicy};
#[cfg(not(loom))]
pub use join::{FnContext, join, join_context};
#[cfg(not(loom))]
pub use pool::ThreadPool;
#[cfg(not(loom))]
pub use pool::builder::{
    MAX_THREADS, NUM_THREADS_ENV, RAYON_NUM_THREADS_ENV, ThreadBuilder, ThreadPoolBuildError,
    ThreadPoolBuilder,
};
#[cfg(not(loom))]
pub use scope::{Scope, ScopeFifo, in_place_scope, in_place_scope_fifo, scope, scope_fifo};
#[cfg(not(loom))]
pub use stats::PoolStats;
#[cfg(not(loom))]
pub use steal::{StealBatch, StealPolicy};
#[cfg(not(loom))]
pub use task::block_on::block_on;

/// The geometry of a worker's BWoS queue, for
/// [`ThreadPoolBuilder::queue_config`]: `QueueConfig::new(num_blocks,
/// block_size)` validates it and says what is wrong.
#[cfg(not(loom))]
pub use bwos_queue::Config as QueueConfig;

/// Runs `func` on the current pool (the global pool outside pools),
/// detached: nobody waits for it, so it must be `'static`. A panic goes to
/// the pool's panic handler ([`ThreadPoolBuilder::panic_handler`]), or
/// aborts the process if there is none. The pool stays alive until `func`
/// has run.
///
/// ```
/// let (sender, receiver) = std::sync::mpsc::channel();
/// bwos::spawn(move || sender.send(6 * 7).unwrap());
/// assert_eq!(receiver.recv().unwrap(), 42);
/// ```
#[cfg(not(loom))]
pub fn spawn<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    current_registry().spawn(func);
}

/// Like [`spawn`], but the jobs one worker spawns this way start in the
/// order they were spawned (FIFO) instead of newest first. Outside the
/// pools the job goes to the global pool's injector, which is FIFO too.
///
/// ```
/// let (sender, receiver) = std::sync::mpsc::channel();
/// bwos::spawn_fifo(move || sender.send("done").unwrap());
/// assert_eq!(receiver.recv().unwrap(), "done");
/// ```
#[cfg(not(loom))]
pub fn spawn_fifo<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    current_registry().spawn_fifo(func);
}

/// What [`yield_now`] or [`yield_local`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Yield {
    /// It ran one job.
    Executed,
    /// It found no job to run.
    Idle,
}

/// Runs one pending job of the current pool, if there is one: a job of the
/// calling worker's queue, else a broadcast job for it, a stolen job or an
/// injected one. Returns `None` outside the pools. A loop that waits for
/// something other work produces can call it to help instead of spinning.
///
/// ```
/// assert_eq!(bwos::yield_now(), None); // not a worker
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let outcome = pool.install(|| bwos::yield_now());
/// assert_eq!(outcome, Some(bwos::Yield::Idle));
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[cfg(not(loom))]
pub fn yield_now() -> Option<Yield> {
    yield_here(false)
}

/// As [`yield_now`], but runs only a job of the calling worker's own
/// queue.
#[cfg(not(loom))]
pub fn yield_local() -> Option<Yield> {
    yield_here(true)
}

#[cfg(not(loom))]
fn yield_here(local_only: bool) -> Option<Yield> {
    let worker = worker::WorkerThread::current();
    if worker.is_null() {
        return None;
    }
    // SAFETY: a non-null current worker lives on this thread's stack (or
    // is leaked) while the thread runs pool work.
    let ran = unsafe { (*worker).yield_once(local_only) };
    Some(if ran { Yield::Executed } else { Yield::Idle })
}

/// The largest number of threads a pool may have: [`MAX_THREADS`].
#[cfg(not(loom))]
pub fn max_num_threads() -> usize {
    MAX_THREADS
}

/// Whether the calling worker's queue holds jobs (`None` outside the
/// pools). A racy snapshot: thieves may take them at any moment.
#[cfg(not(loom))]
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    let worker = worker::WorkerThread::current();
    // SAFETY: a non-null current worker lives on this thread's stack.
    (!worker.is_null()).then(|| unsafe { (*worker).has_pending_jobs() })
}

/// The number of threads of the current pool: the pool of the calling
/// worker, or the global pool (created if needed) outside pools.
#[cfg(not(loom))]
pub fn current_num_threads() -> usize {
    current_registry().num_threads()
}

/// The index of the calling thread in its pool, or `None` outside pools.
#[cfg(not(loom))]
pub fn current_thread_index() -> Option<usize> {
    let worker = worker::WorkerThread::current();
    // SAFETY: a non-null current worker lives on this thread's stack.
    (!worker.is_null()).then(|| unsafe { (*worker).index() })
}

#[cfg(not(loom))]
fn current_registry() -> std::sync::Arc<pool::registry::Registry> {
    with_current_registry(std::sync::Arc::clone)
}

/// Calls `f` with the current pool's registry: the calling worker's, or
/// the global pool's outside pools.
#[cfg(not(loom))]
fn with_current_registry<R>(f: impl FnOnce(&std::sync::Arc<pool::registry::Registry>) -> R) -> R {
    let worker = worker::WorkerThread::current();
    if worker.is_null() {
        f(pool::global::registry())
    } else {
        // SAFETY: a non-null current worker lives on this thread's stack.
        f(unsafe { (*worker).registry() })
    }
}

#[cfg(all(test, loom))]
mod loom_models;

/// The README's examples (runtime and queue), compiled and run as doc
/// tests.
#[cfg(all(doctest, not(loom)))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
