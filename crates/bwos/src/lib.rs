//! A work-stealing runtime on BWoS queues: rayon's fork/join, tokio-style
//! async tasks with timers and sockets, on one pool of workers.
//!
//! **Coming from rayon**: your program runs on bwos unchanged, through the
//! `rayon-core` drop-in of this crate's repository. Add to its
//! `Cargo.toml`, then `cargo update -p rayon-core` (the repository's
//! `docs/rayon.md` says what to expect and the known cliffs):
//!
//! ```toml
//! [patch.crates-io]
//! rayon-core = { path = "../bwos/crates/rayon-core" }
//! ```
//!
//! **Coming from tokio**: [`block_on`] is the entry point, where tokio has
//! `#[tokio::main]` or `Runtime::block_on`; tasks, timers and sockets keep
//! tokio's names:
//!
//! ```
//! use std::time::Duration;
//!
//! let answer = bwos::block_on(async {
//!     let task = bwos::task::spawn(async {
//!         bwos::time::sleep(Duration::from_millis(1)).await;
//!         6 * 7
//!     });
//!     task.await.expect("the task does not panic")
//! });
//! assert_eq!(answer, 42);
//! ```
//!
//! **Fork/join**, with rayon-core's API (porting is a rename):
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
//! # Coming from rayon, tokio or crossbeam
//! One pool serves all of it; the names are those of the crate you know.
//!
//! | you know | in bwos | notes |
//! |---|---|---|
//! | `rayon::join`, `scope`, `scope_fifo`, `in_place_scope` | [`join`], [`scope`], [`scope_fifo`], [`in_place_scope`] | same signatures; children may borrow |
//! | `rayon::spawn`, `spawn_fifo`, `broadcast` | [`spawn`], [`spawn_fifo`], [`broadcast`] | a panic without a handler is reported, not an abort |
//! | `rayon::ThreadPoolBuilder`, `ThreadPool::install` | [`ThreadPoolBuilder`], [`ThreadPool::install`] | plus steal/idle policies, [`PoolStats`] |
//! | rayon's parallel iterators | the `rayon-core` drop-in (`[patch]`) | rayon itself runs on bwos |
//! | `tokio::spawn`, `JoinHandle`, `JoinSet`, `spawn_blocking`, `yield_now` | [`task::spawn`], [`task::JoinHandle`], [`task::JoinSet`], [`task::spawn_blocking`], [`task::yield_now`] | `Send + 'static` futures, as tokio's |
//! | `Runtime::spawn`, `Runtime::block_on` | [`ThreadPool::spawn_task`], [`ThreadPool::block_on`] | `spawn` is rayon's closure spawn, hence `spawn_task` |
//! | `runtime::Handle`, `Handle::current`, `Handle::enter`, `Runtime::shutdown_timeout` | [`Handle`], [`Handle::current`], [`Handle::enter`], [`ThreadPool::shutdown_timeout`] | a handle's `spawn` is the task spawn |
//! | `task::AbortHandle`, `JoinSet::{try_join_next, join_all}` | [`task::AbortHandle`], [`task::JoinSet`] | |
//! | `futures::executor::block_on` | [`block_on`] | polls on the calling thread, no `Send` bound; the future's tasks go to the pool |
//! | `tokio::time::{sleep, timeout, interval}` | [`time::sleep`], [`time::timeout`], [`time::interval`] | a timer wheel per pool, driven by its workers |
//! | `tokio::time::{pause, resume, advance}`, `tokio::time::Instant` | `time::{pause, resume, advance}` (feature `test-util`), [`time::Instant`] | a paused clock per pool; `Instant` converts to and from std's |
//! | `#[tokio::main]`, `#[tokio::test]` | `#[bwos::main]`, `#[bwos::test]` (feature `macros`) | `worker_threads = N`; `start_paused = true` in tests |
//! | `tokio::net::{TcpListener, TcpStream, UdpSocket, UnixStream}` | [`net`] (feature `io`) | tokio's I/O traits with feature `tokio-io` |
//! | hyper-util's `TokioExecutor`, `TokioTimer` | `bwos::hyper::{Executor, Timer}` (feature `hyper`) | |
//! | libraries that need a tokio runtime (reqwest, database drivers, cloud SDKs), `tokio::spawn`, `Handle::current` | themselves, in bwos tasks (feature `tokio-compat`) | see [Cargo features](#cargo-features) for what runs where |
//! | crossbeam-deque `Worker`/`Stealer` | the `bwos-queue` crate | LIFO items are private until shared; see its docs |
//! | (no equivalent) | [`fork::join`], [`fork::scope`] (feature `fork`) | fork/join over futures: children may await |
//! | (no equivalent) | [`worklist::run`] | items that push more items, each processed once |
//!
//! Two things are spelled alike but differ: [`Scope`] is rayon's (closures)
//! and `fork::Scope` the async one (futures); [`block_on`] runs any future,
//! while `fork::block_on(|region| ..)` runs a *region* whose fork joins
//! suspend instead of waiting (see [`fork`]).
//!
//! # Cargo features
//! - `io` (default): [`net`], sockets on an epoll/kqueue/IOCP driver (mio)
//!   that the idle workers park in.
//! - `fork` (default): [`fork`], continuation stealing over futures.
//! - `serde`: `Serialize` and `Deserialize` for [`PoolStats`] and
//!   [`WorkerStats`].
//! - `tokio-io`: tokio's `AsyncRead`/`AsyncWrite` on the [`net`] streams
//!   (tokio's traits only, no tokio runtime), for
//!   `hyper_util::rt::TokioIo` and other tokio-io code.
//! - `hyper`: `bwos::hyper::{Executor, Timer}`, hyper's runtime traits.
//! - `tokio-compat`: libraries written for tokio work inside bwos tasks.
//!   Every thread that runs pool work is inside a tokio runtime context:
//!   the workers, the blocking threads, [`task::block_in_place`]'s
//!   replacement threads, a pool's building thread, and the caller of
//!   [`block_on`] for the duration of the call. The context is one tokio runtime per
//!   process, a current-thread runtime started on first use. What runs
//!   where:
//!   - a bwos task (and a [`block_on`] future, a
//!     [`task::spawn_blocking`] closure) runs where it always does; the
//!     tokio timers and sockets it awaits are driven by the thread
//!     `bwos-tokio-compat`, which wakes the task, and the task's next poll
//!     runs on a bwos worker;
//!   - `tokio::spawn` (and `Handle::spawn`) runs its future on the
//!     `bwos-tokio-compat` thread, one task at a time: fine for the small
//!     I/O tasks libraries spawn (a connection's driver), wrong for
//!     application work, which belongs in [`task::spawn`]. A tokio task
//!     that blocks or computes for long holds up every tokio timer and
//!     socket of the process;
//!   - `tokio::task::spawn_blocking` and `tokio::fs` run on that runtime's
//!     blocking threads, `bwos-tokio-compat-blocking`;
//!   - tokio's own `block_in_place` (tokio feature `rt-multi-thread`) on a
//!     bwos thread runs its closure in place, blocking the worker (tokio
//!     does the same outside its runtimes): use [`task::block_in_place`];
//!     inside a `tokio::spawn`ed task it panics, as on any current-thread
//!     runtime;
//!   - `tokio::runtime::Handle::current()` is that runtime's handle.
//!
//!   `bwos::hyper::{Executor, Timer}` are unaffected: hyper's tasks stay
//!   bwos tasks. Without the feature, a tokio call that needs a runtime
//!   panics with tokio's own message ("there is no reactor running, must
//!   be called from the context of a Tokio 1.x runtime"), inside the task
//!   that made it.
//! - `test-util`: `time::{pause, resume, advance}`, a pool's clock that
//!   tests pause and move by hand (tokio's test utilities, per pool); an
//!   idle pool's paused clock jumps to the next deadline.
//! - `macros`: `#[bwos::main]` and `#[bwos::test]` (`worker_threads = N`;
//!   `start_paused = true` in tests, with `test-util`).
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
//! Module map (`ARCHITECTURE.md` at the repository root has the layers
//! and the path of each call): the scheduler core, `sched` (pools,
//! registry, workers, queues, [`StealPolicy`], [`IdlePolicy`] including
//! BWS's balanced work stealing, [`PoolStats`]), and above it the front
//! ends, each a folder that imports the core: `join`, `scope` (with
//! [`broadcast`] and the detached [`spawn`]), [`task`] (async tasks and
//! [`block_on`]), [`net`] (sockets), [`time`] (timers), [`fork`] (async fork/join after Nowa,
//! on the same workers) and [`worklist`].
//!
//! # Panics
//! A panic in user code never aborts the process: it reaches the caller
//! of the `join`, `scope` or `install` it happened in, after all work of
//! that call has finished. A [`spawn`]ed job's panic, which nobody awaits,
//! goes to the pool's panic handler; without one it is reported on stderr
//! and counted ([`PoolStats::unhandled_panics`]), and the pool carries on. The rule that makes this hold: **no pool work runs while a
//! thread unwinds.** Where a closure panics while work of its call is
//! still pending (`join`'s `b`, perhaps on a thief; a scope's spawned
//! jobs), bwos catches the panic at that call, finishes the pending work
//! from ordinary code, then resumes the panic. So jobs never run inside a
//! destructor during unwinding, user code never observes
//! `std::thread::panicking()` because of somebody else's panic, and
//! mutex poisoning works as usual. Which panic wins: in `join`, `a`'s
//! when both panic; in a scope, the first one recorded in time, the
//! body's included (rayon-core's rules). bwos's own bookkeeping (a scope
//! completion, the scheduler loop, a nested wait) runs under a guard that
//! aborts only if that bwos code itself unwinds, which would be a bug in
//! bwos: the user code it runs (jobs, task polls, futures' destructors)
//! runs under `catch_unwind`, and so does a `Waker::wake` it calls (a
//! timer's, a socket's, a join handle's waiter): a waker that panics there
//! is reported on stderr after the panic hook's message, its panic is
//! dropped, and the other wake-ups of the same batch still happen.
//!
//! Code that runs while a thread unwinds (a destructor of the user's) may
//! itself call `join` or `scope`; they behave as anywhere else.
//!
//! # Differences from rayon-core worth knowing
//! * Child stealing, as in rayon: a worker that waits for a stolen job runs
//!   other jobs meanwhile, on top of the waiting frame; see
//!   [`ThreadPoolBuilder::stack_size`].
//! * A panic in a [`spawn`]ed job goes to the pool's panic handler, or is
//!   reported and counted when there is none: rayon aborts the process
//!   there.
//!
//! # Verification
//! Fourteen protocols are model-checked with loom, one model file each in
//! `src/loom_models/`: the latch (`loom_models/latch.rs`), the sleep
//! protocol (`loom_models/sleep.rs`), BWS's watchdog hand-off and credit
//! wake-ups (`loom_models/balance.rs`), the Nowa scope counter
//! (`loom_models/scope_counter.rs`), the async task state word
//! (`loom_models/task_state.rs`), the closable task injector
//! (`loom_models/task_inject.rs`), the I/O driver's seat
//! (`loom_models/driver_seat.rs`), `fork::join`'s suspension and
//! resumption (`loom_models/fork_join.rs`), a fork region's boundary
//! (`loom_models/fork_boundary.rs`), the work list's hand-over
//! (`loom_models/worklist.rs`), the timers (`loom_models/timers.rs`), the
//! paused clock's automatic advance (`loom_models/auto_advance.rs`), the
//! blocking pool's queue (`loom_models/blocking.rs`) and a worker's baton
//! among the threads that run it (`loom_models/handover.rs`). Run them with
//! `RUSTFLAGS="--cfg bwos_loom" cargo test -p bwos --release --lib`: a loom
//! build compiles only these protocol cores and their models.

#![warn(missing_docs)]
// docs.rs: mark what each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]
// A loom build holds only the protocol cores, used by the loom models alone.
#![cfg_attr(bwos_loom, allow(dead_code))]

#[cfg(not(bwos_loom))]
mod sched;
// A loom build compiles only the protocol cores, at their usual paths.
#[cfg(bwos_loom)]
mod sched {
    pub(crate) mod handover;
    pub(crate) mod latch;
    pub(crate) mod quietly;
    pub(crate) mod sync;
    pub(crate) mod task;
    pub(crate) mod time;
    pub(crate) mod blocking {
        pub(crate) mod queue;
    }
    pub(crate) mod idle {
        pub(crate) mod balance;
        pub(crate) mod driver_seat;
        pub(crate) mod sleep;
    }
}

#[cfg(all(feature = "fork", not(bwos_loom)))]
pub mod fork;
#[cfg(bwos_loom)]
mod fork {
    pub(crate) mod boundary;
}
/// The sockets' old home: [`net`] has them now, with `bind` and `connect`
/// as tokio's (async, taking any [`net::ToSocketAddrs`]).
#[cfg(all(feature = "io", not(bwos_loom)))]
#[deprecated(since = "0.1.0", note = "use `bwos::net`")]
pub mod io {
    #[deprecated(since = "0.1.0", note = "use `bwos::net::TcpListener`")]
    pub use crate::net::TcpListener;
    #[deprecated(since = "0.1.0", note = "use `bwos::net::TcpStream`")]
    pub use crate::net::TcpStream;
}
#[cfg(all(feature = "hyper", not(bwos_loom)))]
pub mod hyper;
#[cfg(not(bwos_loom))]
mod join;
#[cfg(all(feature = "macros", not(bwos_loom)))]
mod macros;
#[cfg(all(feature = "io", not(bwos_loom)))]
pub mod net;
#[cfg(not(bwos_loom))]
mod scope;
#[cfg(bwos_loom)]
mod scope {
    pub(crate) mod counter;
}
#[cfg(not(bwos_loom))]
pub mod task;
#[cfg(not(bwos_loom))]
pub mod time;
#[cfg(not(bwos_loom))]
pub mod worklist;
#[cfg(bwos_loom)]
mod worklist {
    pub(crate) mod spill;
}

#[cfg(not(bwos_loom))]
pub use join::{FnContext, join, join_context};
#[cfg(not(bwos_loom))]
pub use sched::builder::ThreadPoolBuilder;
#[cfg(not(bwos_loom))]
pub use sched::current::{
    current_num_threads, current_thread_has_pending_tasks, current_thread_index, max_num_threads,
    yield_local, yield_now,
};
#[cfg(not(bwos_loom))]
pub use sched::error::ThreadPoolBuildError;
#[cfg(not(bwos_loom))]
pub use sched::handle::{EnterGuard, Handle};
#[cfg(not(bwos_loom))]
pub use sched::idle::{DEFAULT_SLEEP_THRESHOLD, IdlePolicy};
#[cfg(not(bwos_loom))]
pub use sched::num_threads::{MAX_THREADS, NUM_THREADS_ENV, RAYON_NUM_THREADS_ENV};
#[cfg(not(bwos_loom))]
pub use sched::pool::ThreadPool;
#[cfg(not(bwos_loom))]
pub use sched::start::ThreadBuilder;
#[cfg(not(bwos_loom))]
pub use sched::stats::{PoolStats, WorkerStats};
#[cfg(not(bwos_loom))]
pub use sched::steal::{StealBatch, StealPolicy};
#[cfg(not(bwos_loom))]
pub use sched::worker::Yield;
#[cfg(not(bwos_loom))]
pub use scope::broadcast::{BroadcastContext, broadcast, spawn_broadcast};
#[cfg(not(bwos_loom))]
pub use scope::spawn::{spawn, spawn_fifo};
#[cfg(not(bwos_loom))]
pub use scope::{Scope, ScopeFifo, in_place_scope, in_place_scope_fifo, scope, scope_fifo};
#[cfg(not(bwos_loom))]
pub use task::block_on::block_on;

/// Runs an `async fn main` in [`block_on`] on the global pool (feature
/// `macros`): tokio's `#[tokio::main]`.
///
/// The global pool is built first, with `worker_threads = N` workers if
/// given, else the default number ([`ThreadPoolBuilder::num_threads`]'s
/// default: `BWOS_NUM_THREADS`, else one per core), so that the tasks,
/// timers and joins of `main`, and the free functions called on any
/// thread, all use it. If the global pool exists already (the function
/// was called before), it is used as it is. A pool that cannot be built
/// (the system refuses threads) panics with the build error's message.
///
/// The function must be an `async fn` without arguments; it may return
/// anything, a `Result` included. Bad arguments are compile errors that
/// say what is accepted.
///
/// ```
/// #[bwos::main(worker_threads = 2)]
/// async fn main() -> Result<(), std::num::ParseIntError> {
///     let answer = bwos::task::spawn(async { "42".parse::<u32>() }).await.unwrap()?;
///     assert_eq!(answer, 42);
///     assert_eq!(bwos::current_num_threads(), 2);
///     Ok(())
/// }
/// ```
#[cfg(all(feature = "macros", not(bwos_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use bwos_macros::main;

/// Runs an `async fn` test in [`block_on`] on a pool of its own (feature
/// `macros`): tokio's `#[tokio::test]`.
///
/// Each test builds a fresh pool, with `worker_threads = N` workers if
/// given, else the default number, and drops it (stopping its threads)
/// when the test ends. `start_paused = true` pauses the pool's clock
/// before the body runs ([`time::pause`](crate::time), which needs the
/// `test-util` feature: without it the expansion's call to
/// `bwos::time::pause` does not compile, and the error points at the
/// argument). Other attributes (`#[should_panic]`, `#[ignore]`) are kept.
///
/// The function must be an `async fn` without arguments; it may return a
/// `Result`, as a `#[test]` may. Bad arguments are compile errors that
/// say what is accepted.
///
/// ```
/// #[bwos::test(worker_threads = 2)]
/// async fn spawned_tasks_run_on_the_tests_pool() {
///     let index = bwos::task::spawn(async { bwos::current_thread_index() });
///     assert!(index.await.unwrap().is_some());
/// }
///
/// #[cfg(feature = "test-util")]
/// #[bwos::test(start_paused = true)]
/// async fn an_hour_passes_at_once() {
///     let start = bwos::time::Instant::now();
///     bwos::time::sleep(std::time::Duration::from_secs(3600)).await;
///     assert_eq!(start.elapsed(), std::time::Duration::from_secs(3600));
/// }
/// # fn main() {}
/// ```
#[cfg(all(feature = "macros", not(bwos_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use bwos_macros::test;

/// What the expansions of [`main`] and [`test`] call: not a public API.
#[cfg(all(feature = "macros", not(bwos_loom)))]
#[doc(hidden)]
pub mod __macros {
    pub use crate::macros::{run_main, run_test};
}

/// The geometry of a worker's BWoS queue, for
/// [`ThreadPoolBuilder::queue_config`]: `QueueConfig::new(num_blocks,
/// block_size)` validates it and says what is wrong.
#[cfg(not(bwos_loom))]
pub use bwos_queue::Config as QueueConfig;

#[cfg(all(test, bwos_loom))]
mod loom_models;

/// The crate README's examples, compiled and run as doc tests.
#[cfg(all(doctest, not(bwos_loom)))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The repository README's recipes (fork/join, async, work lists, the queue
/// alone), compiled and run as doc tests: a newcomer copies them as
/// written. Only in the repository: the published crate has no
/// `../../../README.md`, and `cfg(doctest)` keeps it out of every other
/// build.
#[cfg(all(doctest, not(bwos_loom)))]
#[doc = include_str!("../../../README.md")]
struct RepositoryReadmeDoctests;
