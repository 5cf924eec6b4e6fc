//! Async fork/join after Nowa (Schmaus et al., IPDPS 2021): [`join`] and
//! [`scope`] on futures, with frames from a per-worker cache
//! ([`boxed_with`], [`boxed`], [`ready`]).
//!
//! ```
//! use bwos::fork::{self, Boxed};
//!
//! // The documented way to write recursive fork/join code: return the
//! // base case with `fork::ready` (no frame), and box the recursive calls
//! // with `fork::boxed_with` (a frame from the worker's cache, not the
//! // global allocator, with the future built in it).
//! fn fib(n: u64) -> Boxed<'static, u64> {
//!     if n < 2 {
//!         return fork::ready(n);
//!     }
//!     fork::boxed_with(move || async move {
//!         let (a, b) = fork::join(fib(n - 1), fib(n - 2)).await;
//!         a + b
//!     })
//! }
//!
//! let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! assert_eq!(pool.block_on(fib(25)), 75025);
//! ```
//!
//! # Continuations are futures
//! Nowa steals continuations: a fork runs the child at once on the forking
//! worker and leaves the rest of the parent (the continuation) for thieves,
//! and a join that is not ready *suspends* the parent instead of blocking
//! the worker. In Rust the continuation is a future the compiler already
//! builds: an `async fn` suspended at an `.await`. So here a fork is a
//! future: [`join`]`(fa, fb)` polls `fa` at once on this worker (work
//! first) while the next step of the parent (polling `fb`) sits in the
//! worker's LIFO BWoS queue, where idle workers take the oldest such steps
//! first; in the common case the worker takes the step back itself with
//! no atomic read-modify-write. A join whose children wait (on I/O, a
//! channel, a timer) returns `Pending`: the parent task is suspended, the
//! worker runs other children and tasks at the same stack depth, and the
//! task resumes wherever a child's waker schedules it (whoever finishes
//! last continues it). [`scope`] is the spawn/sync form: any number of
//! children, synced when the scope's future completes.
//!
//! # When to prefer it over [`crate::join`]
//! * The children wait on something (I/O, channels, other tasks): a
//!   blocking `join` would hold the worker, a `fork::join` lets it go on.
//! * The code is async already (a server that fans a request out, a
//!   pipeline stage).
//! * For pure CPU-bound recursion `crate::join` is simpler and a little
//!   faster (no future state machines); both scale the same way.
//!
//! # Borrowing and cancellation
//! The children of `join` and `scope` may borrow from the caller, so
//! divide-and-conquer over `&mut [T]` is written as with `crate::join`.
//! That is sound because of one rule: **a child is only ever polled during
//! a poll of its `join` or `scope` future.** A thief that takes a child's
//! step polls it while the parent's poll is still on its worker's stack
//! (the parent waits for that poll before returning, running other work
//! meanwhile as `crate::join` does); a child that returns `Pending` is
//! polled again by the parent's next poll. So when the `join` future is
//! dropped part-way (cancellation) no thread is inside a child, the
//! children are dropped in place, and nothing runs with a dangling borrow,
//! even if the caller forgets the future instead (`mem::forget` leaks the
//! children, but nobody polls them again).
//!
//! What the rule costs: a parent whose child was stolen and is still being
//! polled on the thief waits for that poll (a CPU-bound child's poll runs
//! it to completion) before its own poll returns. A design in which
//! thieves keep polling children after the parent's poll returned would
//! be unsound for borrowing children: safe code can forget a pinned
//! future and free what its children borrow (tokio issue 3162). The wait
//! is not idle: the worker runs other work, as a `crate::join` does.
//!
//! A `join` polls both unfinished children at each of its polls; a
//! `scope` gives each child a waker of its own and polls only the children
//! woken (or spawned) since its last poll.
//!
//! # Full suspension: `fork::block_on` and `Region::join`
//! [`block_on`]`(|region| ..)` makes a region whose [`Region::join`] lets
//! the parent suspend even while a thief is inside its child's poll: the
//! parent returns `Pending` at once and the thief wakes it. Its children
//! may borrow only what outlives the blocking `block_on` (which waits for
//! every poll in flight before it returns); that bound is what makes this
//! sound where the free `join` cannot be. Prefer it for recursive
//! CPU-bound work that is started from synchronous code.
//!
//! # Panics
//! A panic in a child is caught where it happens, the siblings run to
//! completion, and then the panic resumes in the task awaiting the `join`
//! or `scope` (the first child's in a `join`, the first in time in a
//! `scope`).
//!
//! # Frames and recursion
//! A recursive `async fn` must box its recursive calls. `Box::pin` pays
//! the global allocator on each; [`boxed_with`]`(|| async move { .. })`
//! takes a frame from the calling thread's frame cache (see [`Boxed`] for
//! how much memory it keeps) and builds the future in it, which is the way
//! to write recursive fork/join code. A base case that is known without
//! awaiting anything (`fib(1)`, an empty range, a leaf of a search) is
//! returned with [`ready`]`(value)` before `boxed_with`: a value of up to
//! a word needs no frame at all, and in most recursions half the calls or
//! more are such leaves. Keep leaves with real work (a sum over a slice,
//! a small sort) inside the box: taken before it, that work would run in
//! the parent as it builds the join's children, where no thief can take
//! it. [`boxed`] boxes a future already built, which it moves into the
//! frame; that copy can stall the CPU (see [`boxed_with`]), so prefer
//! `boxed_with` on hot paths. Box only what the recursion needs: a helper
//! `async fn` that the recursive one awaits needs no box of its own. Forks nest polls on the
//! native stack like any future combinator; when the stack runs low (one
//! comparison per fork on a worker, `stacker`'s own check outside pools)
//! a fork continues on a fresh 4 MiB stack segment (the `stacker` crate),
//! so a recursion a million levels deep runs on the default worker stack.
//! Segments are freed as the recursion returns.
//!
//! A fork reaches two thread-locals (the worker and the frame cache)
//! through `thread_local!` accessors, which rustc places in one of the
//! calling crate's codegen units; in another unit than the fork's poll
//! they are called instead of inlined, which cost fine-grained recursions
//! up to 13% (fib). Build the crate that holds such a recursion with
//! `codegen-units = 1` or LTO for the fastest forks.
//!
//! # Detached children
//! A child that outlives its parent is a task: [`crate::task::spawn`]. It
//! requires `'static` because nothing bounds its lifetime (the handle may
//! be dropped or forgotten while it runs); use [`scope`] for children that
//! borrow.

mod boundary;
mod boxed;
mod child;
mod join;
mod region;
mod scope;

pub use boxed::{Boxed, boxed, boxed_with, ready};
pub use join::{Join, join};
pub use region::{Region, ScopedJoin, block_on};
pub use scope::{Scope, ScopeFuture, scope};

#[cfg(test)]
mod tests;
