//! Running a closure on a fresh stack segment when the worker's stack is
//! nearly used up (where it ends is `stack_limit.rs`'s probe).
//!
//! `fork` polls nested futures on the worker's stack (a suspended child is
//! resumed inside the poll of whoever resumes it), so a deep recursion
//! of forks may need more stack than the thread has. Each worker keeps the
//! lowest address a nested poll may reach ([`WorkerThread::stack_limit`]),
//! set when the worker starts: one comparison per fork instead of a
//! thread-local lookup in `stacker`.

use super::context;
use super::inject::in_worker_of;
use super::stack_limit::{STACK_RED_ZONE, stack_address, stack_limit_here};
use super::worker::WorkerThread;

/// The size of a fresh stack segment.
#[cfg(not(miri))]
const STACK_SEGMENT: usize = 4 << 20;

/// Whether the worker's stack is below its limit (see
/// [`grow_stack_if_needed`]).
#[inline(always)]
pub(crate) fn stack_is_low(worker: &WorkerThread) -> bool {
    stack_address() < worker.stack_limit().get()
}

/// Runs `f`, on a fresh stack segment if the worker's stack is low: one
/// comparison against the worker's limit on the common path.
#[inline]
pub(crate) fn grow_stack_if_needed<R>(worker: &WorkerThread, f: impl FnOnce() -> R) -> R {
    if stack_is_low(worker) {
        grow_stack(worker, f)
    } else {
        f()
    }
}

/// [`grow_stack_if_needed`] for a thread outside pools (another
/// executor polls the fork): `stacker`'s own check, a thread-local lookup.
#[inline]
pub(crate) fn grow_stack_outside_pools<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(not(miri))]
    return stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f);
    #[cfg(miri)]
    f()
}

/// Runs `f` on a stack with room: on a worker, on a fresh stack segment if
/// the stack is low (the worker's one comparison); outside the pools,
/// [`grow_stack_outside_pools`]. For the polls of fork/join futures, which
/// spread their children over the pool only on a worker: outside every pool, but
/// inside a `block_on` for a pool (see `context.rs`), `f` runs on a worker
/// of that pool while the calling thread waits (as `install` runs), so a
/// fork/join future awaited by `block_on` from a plain thread still forks
/// in parallel. Elsewhere it runs here, with `None`.
#[inline]
pub(crate) fn with_worker_room<R: Send>(f: impl FnOnce(Option<&WorkerThread>) -> R + Send) -> R {
    WorkerThread::with_current(|worker| match worker {
        Some(worker) => grow_stack_if_needed(worker, || f(Some(worker))),
        None => outside_pools(f),
    })
}

/// [`with_worker_room`] off the pools' threads.
#[cold]
#[inline(never)]
fn outside_pools<R: Send>(f: impl FnOnce(Option<&WorkerThread>) -> R + Send) -> R {
    match context::current() {
        Some(registry) => in_worker_of(&registry, |worker| {
            grow_stack_if_needed(worker, || f(Some(worker)))
        }),
        None => grow_stack_outside_pools(|| f(None)),
    }
}

/// The slow path of [`grow_stack_if_needed`]: the limit is reached (or
/// unknown). Runs `f` on a fresh segment with the worker's limit set to
/// that segment's, and restores the limit afterwards.
#[cold]
#[cfg(not(miri))]
fn grow_stack<R>(worker: &WorkerThread, f: impl FnOnce() -> R) -> R {
    let limit = worker.stack_limit().get();
    if limit == usize::MAX {
        return stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f);
    }
    stacker::grow(STACK_SEGMENT, || {
        worker.stack_limit().set(stack_limit_here());
        let result = f();
        worker.stack_limit().set(limit);
        result
    })
}

/// Miri cannot switch stacks (`stacker` uses assembly); its tests do not
/// recurse deeply.
#[cold]
#[cfg(miri)]
fn grow_stack<R>(_worker: &WorkerThread, f: impl FnOnce() -> R) -> R {
    f()
}
