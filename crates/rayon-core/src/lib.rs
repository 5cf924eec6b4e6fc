//! rayon-core's API on the bwos runtime.
//!
//! Rust programs reach rayon's thread pool through this crate: rayon's
//! parallel iterators and every library built on them call `join`,
//! `scope` and friends from `rayon_core`. This package has the same name
//! and version as the rayon-core that rayon 1.12 requires, so two lines in
//! a program's `Cargo.toml` move all of them onto bwos:
//!
//! ```toml
//! [patch.crates-io]
//! rayon-core = { path = "path/to/bwos/crates/rayon-core" }
//! ```
//!
//! Everything here is a re-export of `bwos` or a thin adapter where
//! rayon-core's signature differs (the builder is generic over its spawn
//! handler; the error type is opaque; the deprecated `Configuration`).
//!
//! # Differences from rayon-core
//! - A panic in a spawned job (`spawn`, `spawn_fifo`, `spawn_broadcast`)
//!   when the pool has no panic handler is reported on stderr, counted in
//!   `bwos::PoolStats::unhandled_panics`, and the pool carries on. rayon
//!   aborts the process there.
//! - It builds with Rust 1.88 or newer (rayon: 1.80): bwos uses edition
//!   2024 and let chains. It depends on `bwos` without default features,
//!   so neither mio nor stacker (and its C build step) come with it.
//! - Jobs a worker queues stay private to it until another worker is
//!   hungry (BWoS's blocks): work is shared at the next `join`, spawn or
//!   scheduler step of its owner, not at once. Code that waits for a
//!   spawned job by spinning without calling into the pool can wait
//!   longer than under rayon.
//! - One FIFO per worker serves `spawn_fifo` and all `ScopeFifo`s
//!   (rayon keeps one per worker and scope): FIFO order also holds
//!   between scopes.
//! - `ThreadPoolBuilder::breadth_first` makes spawns FIFO; `join` stays
//!   depth-first.
//! - `BWOS_NUM_THREADS`, if set, takes precedence over `RAYON_NUM_THREADS`,
//!   and an invalid `BWOS_NUM_THREADS` is an error rather than ignored.
//! - The `web_spin_lock` feature exists and does nothing: bwos runs on
//!   native threads only.
//!
//! ```
//! let (a, b) = rayon_core::join(|| 1 + 1, || 2 + 2);
//! assert_eq!((a, b), (2, 4));
//! ```

mod builder;
mod thread_pool;

pub use bwos::{
    BroadcastContext, FnContext, Scope, ScopeFifo, ThreadBuilder, Yield, broadcast,
    current_num_threads, current_thread_has_pending_tasks, current_thread_index, in_place_scope,
    in_place_scope_fifo, join, join_context, max_num_threads, scope, scope_fifo, spawn,
    spawn_broadcast, spawn_fifo, yield_local, yield_now,
};

#[allow(deprecated)]
pub use builder::{Configuration, initialize};
pub use builder::{ThreadPoolBuildError, ThreadPoolBuilder};
pub use thread_pool::ThreadPool;
