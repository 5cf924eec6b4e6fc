//! [`AbortHandle`]: the right to cancel a task, without its output.

use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};

use super::raw::TaskRef;

/// Cancels a spawned task without owning its output: made by
/// [`JoinHandle::abort_handle`](crate::task::JoinHandle::abort_handle) and
/// returned by [`JoinSet::spawn`](crate::task::JoinSet::spawn). It is
/// `Clone`, `Send` and `Sync`, and it may outlive the task's
/// [`JoinHandle`](crate::task::JoinHandle) and the task itself (tokio's
/// `AbortHandle`). Dropping it does nothing to the task.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let task = pool.spawn_task(std::future::pending::<u32>());
/// let abort = task.abort_handle();
/// assert!(!abort.is_finished());
/// abort.clone().abort();
/// assert!(pool.block_on(task).unwrap_err().is_cancelled());
/// assert!(abort.is_finished());
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub struct AbortHandle {
    /// Owns one reference of the task: the cell stays allocated (not its
    /// future or output, which the task side drops as usual) while this
    /// handle lives.
    task: TaskRef,
}

// SAFETY: the handle touches only the task's atomic state word (`abort`,
// `is_finished`) and its reference count; releasing the last reference
// frees the cell, whose future and output are `Send`, on whichever thread
// drops the handle, as a `JoinHandle` or a waker may.
unsafe impl Send for AbortHandle {}
// SAFETY: `&AbortHandle` allows `abort` and `is_finished` only, which are
// atomic operations on the state word.
unsafe impl Sync for AbortHandle {}
// Nothing a panic could leave half-done is reachable through the handle:
// its operations are single atomic updates.
impl UnwindSafe for AbortHandle {}
impl RefUnwindSafe for AbortHandle {}

impl AbortHandle {
    /// A handle to `task`, with a reference of its own.
    ///
    /// # Safety
    /// Some owner keeps `task` alive during the call.
    pub(crate) unsafe fn new(task: TaskRef) -> Self {
        // SAFETY: the caller's owner keeps the task alive; the reference
        // added here is the new handle's.
        unsafe { task.ref_inc() };
        AbortHandle { task }
    }

    /// Cancels the task, as [`JoinHandle::abort`](crate::task::JoinHandle::abort):
    /// unless it has finished, its future is dropped the next time a
    /// worker would poll it, and its `JoinHandle` resolves to a
    /// [`JoinError`](crate::task::JoinError) with
    /// [`is_cancelled`](crate::task::JoinError::is_cancelled). A task
    /// being polled finishes that poll first; a
    /// [`spawn_blocking`](crate::task::spawn_blocking) closure that has
    /// started runs to its end. Aborting a finished task does nothing.
    pub fn abort(&self) {
        // SAFETY: this handle's reference keeps the task alive.
        unsafe { self.task.abort() }
    }

    /// Whether the task has finished: completed, panicked or been
    /// cancelled.
    pub fn is_finished(&self) -> bool {
        // SAFETY: this handle's reference keeps the task alive.
        unsafe { self.task.is_complete() }
    }
}

impl Clone for AbortHandle {
    fn clone(&self) -> Self {
        // SAFETY: this handle's reference keeps the task alive.
        unsafe { AbortHandle::new(self.task) }
    }
}

impl Drop for AbortHandle {
    fn drop(&mut self) {
        // SAFETY: the reference this handle owns, given up once.
        unsafe { self.task.release() }
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
