//! Async tasks (issue 13, in progress): so far the task state word,
//! model-checked with loom. The executor that runs tasks from the FIFO
//! BWoS queues, the waker vtable, `JoinHandle` and `block_on` build on it.

pub(crate) mod state;
