//! The scheduler core: what every front end runs on, and which imports
//! none of them. Its files import one another without a cycle; from the
//! bottom up:
//!
//! - the model-checked protocols and their std/loom primitives
//!   (`sync.rs`): the latch word (`latch.rs`), the sleep protocol and
//!   BWS's wake-ups (`idle/sleep.rs`, `idle/balance.rs`,
//!   `idle/driver_seat.rs`), the timers the workers drive as they sleep
//!   (`time/`), the task cell's state word and injector (`task/`), the
//!   blocking pool's queue (`blocking/queue.rs`); a loom-checked file
//!   imports only `sync.rs` and other such files;
//! - what runs and what it runs on: two-word [`JobRef`](job::JobRef)s
//!   (`job.rs`), whose heap jobs and `fork`'s futures live in per-thread
//!   cached frames (`frame_cache.rs`), and the async task cell (`task/`),
//!   whose entries become jobs; the run queues' geometry and the injector
//!   interval (`queues.rs`), victim selection (`steal/`: the BWoS paper's
//!   policies, P_accept, topology), the counters (`stats.rs`), the
//!   long-poll count and the cheap clock that times it (`long_polls.rs`,
//!   `clock.rs`), the cooperative budget a task poll spends on ready
//!   operations (`coop.rs`), the driver workers park in (`driver.rs`,
//!   implemented by the I/O front end), the stack-limit probe
//!   (`stack_limit.rs`), a pool's size bounds (`num_threads.rs`), calling
//!   a user's waker, or dropping a user's value, with its panic caught
//!   (`quietly.rs`);
//! - what the workers share, the [`Registry`](registry::Registry)
//!   (`registry.rs`), and on it what idle workers do (`idle/`: spinning,
//!   yielding, sleeping, parking with timers and the driver) and a
//!   thief's view of the other workers' queues (`steal_view.rs`);
//! - each worker's state and scheduler loop,
//!   [`WorkerThread`](worker::WorkerThread) (`worker.rs`), with the one
//!   order in which it looks for work and the one lookup of the calling
//!   worker;
//! - above the worker: the pools a thread entered, in `block_on`, on a
//!   blocking thread or with a `Handle::enter` guard (`context.rs`);
//!   waiting on a latch, and how its setter wakes the waiter (`wait.rs`);
//!   work from the calling thread into a pool (`inject.rs`); the blocking
//!   pool's threads (`blocking/`); the thread that runs a worker while its
//!   own thread is in `block_in_place` (`replacement.rs`); growing `fork`'s
//!   stacks (`stack.rs`); shutting a pool down, step by step
//!   (`shutdown.rs`);
//! - the pool: [`ThreadPool`](pool::ThreadPool) (`pool.rs`), starting its
//!   threads (`start.rs`), its errors (`error.rs`), the global pool
//!   (`global.rs`), its options (`builder.rs`), the calling thread's place
//!   in the pools: the one lookup of the current pool, `yield_now`,
//!   `current_thread_index` and friends (`current.rs`), and the
//!   [`Handle`](handle::Handle) code keeps to a pool (`handle.rs`);
//! - with feature `tokio-compat`, the tokio runtime context every thread
//!   that runs pool work enters (`tokio_compat.rs`).
//!
//! The front ends (`join`, `scope`, `task`, `time`, `net`, `hyper`, `fork`,
//! `worklist`, and the runtime side of `macros`) import this module;
//! nothing here imports them. `ARCHITECTURE.md` at the repository root
//! draws the layers.

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
pub(crate) mod handover;
pub(crate) mod idle;
pub(crate) mod inject;
pub(crate) mod job;
pub(crate) mod latch;
pub(crate) mod long_polls;
pub(crate) mod num_threads;
pub(crate) mod pool;
pub(crate) mod queues;
pub(crate) mod quietly;
pub(crate) mod registry;
pub(crate) mod replacement;
pub(crate) mod shutdown;
pub(crate) mod spare_threads;
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
