//! The scheduler core: what every front end runs on, and which imports
//! none of them.
//!
//! - the pool: [`ThreadPool`](pool::ThreadPool) (`pool.rs`), its options
//!   (`builder.rs`), its errors (`error.rs`), starting its threads
//!   (`start.rs`), the global pool (`global.rs`), and the
//!   [`Handle`](handle::Handle) code keeps to a pool (`handle.rs`);
//! - what the workers share, the [`Registry`](registry::Registry)
//!   (`registry.rs`), and each worker's state and scheduler loop,
//!   [`WorkerThread`](worker::WorkerThread) (`worker.rs`), with the one
//!   order in which it looks for work, and the thread that runs a worker
//!   while its own thread is in `block_in_place` (`replacement.rs`);
//! - what runs: two-word [`JobRef`](job::JobRef)s (`job.rs`), whose heap
//!   jobs and `fork`'s futures live in per-thread cached frames
//!   (`frame_cache.rs`), completion
//!   [latches](latch) (`latch.rs`), and the async task cell (`task/`),
//!   whose entries become jobs, and the blocking pool that runs
//!   `spawn_blocking`'s task entries on threads of their own
//!   (`blocking.rs`);
//! - the run queues' geometry and the injector interval (`queues.rs`), the
//!   steal view over them (`steal_view.rs`), victim selection (`steal/`:
//!   the BWoS paper's policies, P_accept, topology), what idle workers do
//!   (`idle/`: spinning, yielding, the sleep protocol, BWS's balanced
//!   work stealing), and the counters (`stats.rs`);
//! - the seams below and beside it: the driver workers park in
//!   (`driver.rs`, implemented by the I/O front end), the timer wheel the
//!   workers drive as they sleep (`time/`), the stack-limit
//!   probe `fork` uses (`stack.rs`), and the std/loom primitives of the
//!   model-checked protocols (`sync.rs`);
//! - the cooperative budget a task poll spends on ready operations
//!   (`coop.rs`), which the front ends' operations check, and the cheap
//!   clock that times task polls for the long-poll count (`clock.rs`);
//! - with feature `tokio-compat`, the tokio runtime context every thread
//!   that runs pool work enters (`tokio_compat.rs`);
//! - the calling thread's place in the pools: `yield_now`,
//!   `current_thread_index` and friends (`current.rs`), and the pools a
//!   thread entered: in `block_on`, on a blocking thread, or with a
//!   `Handle::enter` guard (`context.rs`).
//!
//! The front ends (`join`, `scope`, `task`, `io`, `fork`, `worklist`)
//! import this module; nothing here imports them. `ARCHITECTURE.md` at
//! the repository root draws the layers.

pub(crate) mod blocking;
pub(crate) mod builder;
pub(crate) mod clock;
pub(crate) mod context;
pub(crate) mod coop;
pub(crate) mod current;
pub(crate) mod driver;
pub(crate) mod error;
pub(crate) mod frame_cache;
pub(crate) mod global;
pub(crate) mod handle;
pub(crate) mod idle;
pub(crate) mod inject;
pub(crate) mod job;
pub(crate) mod latch;
pub(crate) mod long_polls;
pub(crate) mod num_threads;
pub(crate) mod pool;
pub(crate) mod queues;
pub(crate) mod registry;
pub(crate) mod replacement;
pub(crate) mod shutdown;
#[cfg(feature = "fork")]
pub(crate) mod stack;
#[cfg(feature = "fork")]
pub(crate) mod stack_limit;
pub(crate) mod start;
pub(crate) mod stats;
pub(crate) mod steal;
pub(crate) mod steal_view;
pub(crate) mod sync;
pub(crate) mod task;
pub(crate) mod time;
#[cfg(feature = "tokio-compat")]
pub(crate) mod tokio_compat;
pub(crate) mod wait;
pub(crate) mod worker;
