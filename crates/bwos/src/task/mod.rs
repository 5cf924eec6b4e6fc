//! Async tasks (issue 13, in progress): the task state word (`state.rs`,
//! model-checked with loom) and the task allocation with its wakers and
//! `JoinHandle` (`raw.rs`, tested under Miri). The executor that runs
//! tasks from the FIFO BWoS queues, `spawn` and `block_on` build on these.

#[cfg(not(loom))]
pub(crate) mod raw;
pub(crate) mod state;
