//! Async tasks (issue 13, in progress): the task state word (`state.rs`,
//! model-checked with loom); the task allocation with its wakers and
//! `JoinHandle` (`raw.rs`); the list of an executor's live tasks, which
//! its shutdown cancels (`list.rs`). The last two are tested under Miri.
//! The executor that runs tasks from the FIFO BWoS queues, `spawn` and
//! `block_on` build on these.

#[cfg(not(loom))]
pub(crate) mod list;
#[cfg(not(loom))]
pub(crate) mod raw;
pub(crate) mod state;
