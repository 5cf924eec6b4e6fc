//! The cooperative budget for users: [`consume_budget`] and
//! [`unconstrained`] (tokio's names and meaning). The budget itself, and
//! where each poll gets a fresh one, is the core's: `sched/coop.rs`.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::sched::coop;

/// Spends one unit of the calling task's cooperative budget, and yields
/// (returns `Pending` once, with the task woken) if the budget is spent.
///
/// Each poll of a task, or of a [`block_on`](crate::block_on) future,
/// starts with a budget of 128 units, and every ready operation of the
/// runtime spends one: socket reads, writes, accepts, sends and receives
/// of [`net`](crate::net), an elapsed [`Sleep`](crate::time::Sleep) or
/// [`Timeout`](crate::time::Timeout), a finished [`JoinHandle`], a
/// [`JoinSet::join_next`](super::JoinSet::join_next) that returns an
/// output. When the budget is spent, the next such operation yields
/// instead: the task goes to the back of its worker's queue, so a task
/// whose operations are always ready cannot keep the worker's other tasks
/// from running. This function spends the budget for work the runtime
/// does not see, such as a long computation in a loop or operations of
/// another library. Outside a task poll and outside `block_on` there is
/// no budget, and it returns at once.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let sum = pool.block_on(pool.spawn_task(async {
///     let mut sum = 0u64;
///     for item in 0..10_000u64 {
///         // Every 128 items, the other tasks of this worker get a turn.
///         bwos::task::consume_budget().await;
///         sum += item;
///     }
///     sum
/// }));
/// assert_eq!(sum.unwrap(), 49_995_000);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
///
/// [`JoinHandle`]: super::JoinHandle
pub async fn consume_budget() {
    poll_fn(|cx| coop::poll_budgeted(cx, |_| Poll::Ready(()))).await;
}

/// Runs `future` without the cooperative budget: its operations never
/// yield for it (see [`consume_budget`]), and what they do does not count
/// against the budget of the task that polls it.
///
/// For a future that must not be interrupted between ready operations,
/// for example one that measures them; a future that stays ready this way
/// keeps its worker's other tasks waiting for as long as it runs.
///
/// ```
/// use bwos::task::{consume_budget, unconstrained};
///
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
/// let units = pool.block_on(pool.spawn_task(unconstrained(async {
///     // Far more than one poll's budget, all in one poll.
///     for _ in 0..1000 {
///         consume_budget().await;
///     }
///     1000
/// })));
/// assert_eq!(units.unwrap(), 1000);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
pub fn unconstrained<F: Future>(future: F) -> Unconstrained<F> {
    Unconstrained { future }
}

pin_project_lite::pin_project! {
    /// The future of [`unconstrained`]: polls its future without the
    /// cooperative budget.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Unconstrained<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Unconstrained<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let future = self.project().future;
        coop::with_unconstrained(|| future.poll(cx))
    }
}
