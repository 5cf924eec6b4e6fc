//! The task cell, below the executor (tokio's `runtime/task` in spirit): a
//! task in one allocation (`raw.rs`) with its state word (`state.rs`), the
//! list of a pool's live tasks (`list.rs`), the closable injector
//! (`inject.rs`) and the task side of a pool's registry
//! (`pool_tasks.rs`).
//!
//! The cell does not know who runs it: a task is queued through the
//! [`Schedule`](raw::Schedule) trait, which the task front end
//! (`crate::task`) implements for the pool. Run-queue entries
//! ([`Notified`](raw::Notified)) become [`JobRef`](crate::sched::job::JobRef)s,
//! so workers run tasks the way they run fork/join jobs.
//!
//! # Memory layout
//! A task is one allocation: a header (the state word: `RUNNING`,
//! `NOTIFIED`, `COMPLETE`, `CANCELLED`, join interest, join waker, and a
//! reference count; a vtable; the slot in the pool's task list), the
//! scheduler, the future (later its output) and the `JoinHandle`'s waker.
//! Run-queue entries, wakers and the `JoinHandle` are pointers to it that
//! each own one reference. The state machine is model-checked with loom
//! and the allocation and waker code runs under Miri.

#[cfg(not(bwos_loom))]
pub(crate) mod abort_handle;
pub(crate) mod inject;
#[cfg(not(bwos_loom))]
pub(crate) mod list;
#[cfg(not(bwos_loom))]
pub(crate) mod pool_tasks;
#[cfg(not(bwos_loom))]
pub(crate) mod raw;
pub(crate) mod state;
