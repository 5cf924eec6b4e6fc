//! The cooperative budget: a task whose operations are always ready yields
//! after 128 of them in one poll, so the other tasks of its worker run;
//! each kind of ready operation spends one unit; `unconstrained` lifts the
//! limit.
//!
//! Every test runs on a one-worker pool and tells polls apart by counting
//! them (`CountPolls`): a yield shows as the next poll, never as a time.

#![cfg(not(bwos_loom))]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
#[cfg(feature = "io")]
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bwos::task::{self, JoinHandle, JoinSet, consume_budget, unconstrained};
use bwos::{ThreadPool, ThreadPoolBuilder, time};
use bwos_testkit::watchdog;

/// tokio's budget, which `bwos` copies.
const BUDGET: usize = 128;

fn one_worker() -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool")
}

/// A task's future that counts the task's polls.
struct CountPolls<F> {
    future: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Relaxed: read by the same task, on the thread that polls it.
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.future.as_mut().poll(cx)
    }
}

/// Runs `body` as a task of `pool`; `body` gets a function that tells
/// which poll of the task is running (1 for the first).
fn in_task<T, Fut>(pool: &ThreadPool, body: impl FnOnce(PollNumber) -> Fut) -> T
where
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let polls = Arc::new(AtomicUsize::new(0));
    let future = body(PollNumber(Arc::clone(&polls)));
    let handle = pool.spawn_task(CountPolls {
        future: Box::pin(future),
        polls,
    });
    pool.block_on(handle)
        .expect("the task neither panics nor is cancelled")
}

/// Which poll of its task is running.
#[derive(Clone)]
struct PollNumber(Arc<AtomicUsize>);

impl PollNumber {
    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// Spends all but one unit of a fresh poll's budget, then awaits `$op`
/// (an expression whose future is ready) twice: the first spends the last
/// unit within the poll, the second finds the budget spent and yields
/// once. Evaluates to the polls (counted from the first) after each.
macro_rules! one_unit_then_yield {
    ($poll:expr, $op:expr) => {{
        let poll: &PollNumber = $poll;
        // A fresh budget: `yield_now` spends none, and its poll ends here.
        task::yield_now().await;
        let start = poll.get();
        for _ in 0..BUDGET - 1 {
            consume_budget().await;
        }
        assert_eq!(poll.get(), start, "127 units fit in one poll");
        $op;
        let after_first = poll.get() - start;
        $op;
        let after_second = poll.get() - start;
        (after_first, after_second)
    }};
}

/// A task of `pool` that has finished.
fn finished_task(pool: &ThreadPool, value: u32) -> JoinHandle<u32> {
    let handle = pool.spawn_task(async move { value });
    // Another thread waits for the worker: under the watchdog.
    while !handle.is_finished() {
        std::thread::yield_now();
    }
    handle
}

// Mutation caught: `Budget::is_spent` one unit early (`self.0 <= 2`), or
// `made_progress` spending nothing (no yield at all).
#[test]
fn consume_budget_yields_after_exactly_128_units_per_poll() {
    watchdog(
        "consume_budget_yields_after_exactly_128_units_per_poll",
        || {
            let pool = one_worker();
            let polls_at = in_task(&pool, |poll| async move {
                let mut polls_at = Vec::new();
                for _ in 0..3 * BUDGET + 10 {
                    consume_budget().await;
                    polls_at.push(poll.get());
                }
                polls_at
            });
            for (unit, &poll) in polls_at.iter().enumerate() {
                assert_eq!(poll, unit / BUDGET + 1, "unit {unit} ran in the wrong poll");
            }
        },
    );
}

// Mutation caught: `Unconstrained::poll` polling its future directly (the
// task's budget applies: the 129th unit yields); and `with_budget`'s guard
// putting back "unconstrained" instead of the task's budget (the units
// after the block never yield).
#[test]
fn unconstrained_never_yields_and_spends_none_of_the_tasks_budget() {
    watchdog(
        "unconstrained_never_yields_and_spends_none_of_the_tasks_budget",
        || {
            let pool = one_worker();
            let (inside, after) = in_task(&pool, |poll| async move {
                consume_budget().await;
                let unconstrained_poll = poll.clone();
                let inside = unconstrained(async move {
                    for _ in 0..10 * BUDGET {
                        consume_budget().await;
                    }
                    unconstrained_poll.get()
                })
                .await;
                // The task's own budget: the unit spent before, the rest
                // still there.
                let mut after = Vec::new();
                for _ in 0..BUDGET {
                    consume_budget().await;
                    after.push(poll.get());
                }
                (inside, after)
            });
            assert_eq!(inside, 1, "unconstrained units never yield");
            assert!(
                after[..BUDGET - 1].iter().all(|&poll| poll == 1),
                "{after:?}"
            );
            assert_eq!(after[BUDGET - 1], 2, "the task's own budget still applies");
        },
    );
}

// Mutation caught: `JoinHandle::poll` without `poll_budgeted` (the second
// handle is read in the first poll).
#[test]
fn a_finished_join_handle_spends_a_unit() {
    watchdog("a_finished_join_handle_spends_a_unit", || {
        let pool = one_worker();
        let mut handles = vec![finished_task(&pool, 1), finished_task(&pool, 2)].into_iter();
        let polls = in_task(&pool, |poll| async move {
            one_unit_then_yield!(&poll, {
                let handle = handles.next().expect("two handles");
                assert!(handle.await.is_ok());
            })
        });
        assert_eq!(polls, (0, 1));
    });
}

// Mutation caught: `JoinSet::poll_join_next` without its `poll_proceed`
// (with the budget spent, each handle's poll wakes its slot, which puts it
// back on the ready list that `poll_join_next` keeps looking at: it spins
// and the watchdog ends the test); `JoinHandle::poll` unbudgeted (the
// second output comes in the first poll).
#[test]
fn join_next_spends_a_unit_per_output() {
    watchdog("join_next_spends_a_unit_per_output", || {
        let pool = one_worker();
        let polls = in_task(&pool, |poll| async move {
            let mut set = JoinSet::new();
            set.spawn(async { 1 });
            set.spawn(async { 2 });
            // The two tasks run while this one waits behind them in the
            // worker's queue.
            task::yield_now().await;
            one_unit_then_yield!(&poll, {
                let output = set.join_next().await;
                assert!(output.is_some_and(|output| output.is_ok()));
            })
        });
        assert_eq!(polls, (0, 1));
    });
}

// Mutation caught: `Sleep::poll` without `poll_budgeted` (the second
// elapsed sleep returns in the first poll).
#[test]
fn an_elapsed_sleep_spends_a_unit() {
    watchdog("an_elapsed_sleep_spends_a_unit", || {
        let pool = one_worker();
        let polls = in_task(&pool, |poll| async move {
            one_unit_then_yield!(&poll, time::sleep_until(Instant::now()).await)
        });
        assert_eq!(polls, (0, 1));
    });
}

// Mutation caught: as for the sleep (the timeout's deadline is its sleep).
#[test]
fn an_elapsed_timeout_spends_a_unit() {
    watchdog("an_elapsed_timeout_spends_a_unit", || {
        let pool = one_worker();
        let polls = in_task(&pool, |poll| async move {
            one_unit_then_yield!(&poll, {
                let elapsed = time::timeout(Duration::ZERO, std::future::pending::<()>()).await;
                assert!(elapsed.is_err());
            })
        });
        assert_eq!(polls, (0, 1));
    });
}

// Mutation caught: `Timeout::poll` looking at its deadline with the spent
// budget (no `with_unconstrained`): the timeout never fires, because its
// future spends the whole budget in every poll, and the watchdog ends the
// test.
#[test]
fn a_timeout_fires_around_a_future_that_spends_every_budget() {
    watchdog(
        "a_timeout_fires_around_a_future_that_spends_every_budget",
        || {
            let pool = one_worker();
            let result = in_task(&pool, |_| async {
                time::timeout(Duration::from_millis(20), async {
                    loop {
                        consume_budget().await;
                    }
                })
                .await
            });
            assert!(result.is_err(), "the deadline passed");
        },
    );
}

/// How many echo round trips the always-ready loop makes: far more than a
/// budget holds (two units each, a read and a write).
#[cfg(feature = "io")]
const ECHOES: usize = 1000;

/// Echoes `ECHOES` chunks over a socket that is always ready (its peer
/// wrote every chunk before the loop began and never reads the echoes,
/// which fit in the kernel's buffers), while ten tasks of the same worker
/// count their turns. Returns each counter's turns during the loop.
#[cfg(feature = "io")]
fn echo_while_counting(pool: &ThreadPool) -> Vec<u64> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use std::io::Write;

    const CHUNK: usize = 16;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (ours, _) = listener.accept().unwrap();
    // Every chunk before the loop starts: the socket stays readable
    // throughout (reads of a full chunk keep the readiness).
    peer.write_all(&vec![7u8; CHUNK * (ECHOES + 1)]).unwrap();
    let seen = in_task(pool, |_| async move {
        let stream = bwos::net::TcpStream::from_std(ours).unwrap();
        let mut chunk = [0u8; CHUNK];
        // The first read and write wait for the driver's first readiness
        // events; the loop below never waits.
        (&stream).read_exact(&mut chunk).await.unwrap();
        (&stream).write_all(&chunk).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counters: Vec<_> = (0..10).map(|_| Arc::new(AtomicU64::new(0))).collect();
        for counter in &counters {
            let (counter, stop) = (Arc::clone(counter), Arc::clone(&stop));
            // Queued behind this task: they run only when it yields.
            task::spawn(async move {
                // Relaxed: the counts are read on the same worker.
                while !stop.load(Ordering::Relaxed) {
                    counter.fetch_add(1, Ordering::Relaxed);
                    task::yield_now().await;
                }
            });
        }
        for _ in 0..ECHOES {
            (&stream).read_exact(&mut chunk).await.unwrap();
            (&stream).write_all(&chunk).await.unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        counters
            .iter()
            .map(|counter| counter.load(Ordering::Relaxed))
            .collect::<Vec<_>>()
    });
    drop(peer);
    seen
}

// Mutation caught: `made_progress` spending nothing (budget never spent):
// the echo loop never yields and every counter stays at 0.
#[cfg(feature = "io")]
#[test]
fn an_always_ready_echo_loop_lets_the_other_tasks_of_its_worker_run() {
    watchdog(
        "an_always_ready_echo_loop_lets_the_other_tasks_of_its_worker_run",
        || {
            let pool = one_worker();
            let seen = echo_while_counting(&pool);
            assert!(
                seen.iter().all(|&turns| turns > 0),
                "every counter had a turn during the echo loop: {seen:?}"
            );
        },
    );
}

// Outside task polls and `block_on` there is no budget: a future polled by
// hand runs any number of ready operations without yielding.
// Mutation caught: the thread-local starting with a fresh budget instead of
// an unconstrained one.
#[test]
fn operations_outside_a_poll_are_unconstrained() {
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    for _ in 0..10 * BUDGET {
        let mut unit = std::pin::pin!(consume_budget());
        assert!(unit.as_mut().poll(&mut cx).is_ready());
    }
}

// `block_on` gives each poll a budget too.
// Mutation caught: `block_on_in` polling without `coop::budget` (the
// 129th unit runs in the first poll).
#[test]
fn block_on_polls_have_a_budget() {
    watchdog("block_on_polls_have_a_budget", || {
        let pool = one_worker();
        let polls = Arc::new(AtomicUsize::new(0));
        let poll = PollNumber(Arc::clone(&polls));
        let polls_at = pool.block_on(CountPolls {
            future: Box::pin(async move {
                let mut polls_at = Vec::new();
                for _ in 0..BUDGET + 1 {
                    consume_budget().await;
                    polls_at.push(poll.get());
                }
                polls_at
            }),
            polls,
        });
        assert_eq!(polls_at[BUDGET - 1], 1);
        assert_eq!(polls_at[BUDGET], 2);
    });
}

// A task polled inside another task's poll (here by `bwos::yield_now`,
// as the scheduler loop of a `join` waiting in a task would) has a budget
// of its own, and the outer poll goes on with what it had left.
// Mutations caught: `poll_task_alone` (`sched/worker.rs`) without its
// `coop::start_poll` (the inner task runs unconstrained: its 129th unit
// does not yield) or without `coop::put_back` (the outer poll's units
// after the nested poll never yield: the inner poll's end cleared the
// budget).
#[test]
fn a_task_polled_inside_another_poll_has_its_own_budget() {
    watchdog(
        "a_task_polled_inside_another_poll_has_its_own_budget",
        || {
            let pool = one_worker();
            let (inner_polls, outer_polls_at) = in_task(&pool, |poll| async move {
                // A fresh budget: `yield_now` spends none, and its poll ends
                // here.
                task::yield_now().await;
                let start = poll.get();
                for _ in 0..BUDGET / 2 {
                    consume_budget().await;
                }
                let inner_polls = Arc::new(AtomicUsize::new(0));
                let inner = task::spawn(CountPolls {
                    future: Box::pin(async {
                        for _ in 0..BUDGET + 1 {
                            consume_budget().await;
                        }
                    }),
                    polls: Arc::clone(&inner_polls),
                });
                // The only work queued on the one worker: the inner task,
                // polled here, inside this poll (its last unit waits for its
                // second poll, which the handle's await below lets run).
                assert_eq!(bwos::yield_now(), Some(bwos::Yield::Executed));
                assert_eq!(poll.get(), start, "still the same poll");
                let mut outer_polls_at = Vec::new();
                for _ in BUDGET / 2..BUDGET + 1 {
                    consume_budget().await;
                    outer_polls_at.push(poll.get() - start);
                }
                inner
                    .await
                    .expect("the inner task neither panics nor is cancelled");
                (inner_polls.load(Ordering::Relaxed), outer_polls_at)
            });
            // A fresh budget of 128 units, not the outer's rest, nor none.
            assert_eq!(inner_polls, 2, "the inner task's 129th unit yields");
            let (last, before) = outer_polls_at.split_last().expect("units spent");
            assert!(before.iter().all(|&poll| poll == 0), "{outer_polls_at:?}");
            assert_eq!(*last, 1, "the outer poll's own budget still applies");
        },
    );
}
