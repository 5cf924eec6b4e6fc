//! `bwos::fork`: async fork/join. Results are exact (unique values, every
//! child exactly once), borrowing children sort a `&mut [u64]` in place,
//! panics reach the awaiting task after the siblings finished, a child that
//! waits does not stop a one-thread pool from running its other children,
//! a million-level recursion runs on the default worker stack, and random
//! nestings of joins and scopes with panicking and waiting leaves compute
//! what a serial evaluation computes.

#![cfg(all(feature = "fork", not(bwos_loom)))]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bwos::fork::{self, Boxed, Region};
use bwos_testkit::{panic_message, watchdog};
use common::pool;
use proptest::prelude::*;

mod common;

fn fib(n: u64) -> Boxed<'static, u64> {
    fork::boxed(async move {
        if n < 2 {
            return n;
        }
        let (a, b) = fork::join(fib(n - 1), fib(n - 2)).await;
        a + b
    })
}

fn fib_box_pin(n: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if n < 2 {
            return n;
        }
        let (a, b) = fork::join(fib_box_pin(n - 1), fib_box_pin(n - 2)).await;
        a + b
    })
}

/// `block_on` polls its future on the calling thread; a fork/join future
/// awaited there still forks on the pool's workers (its joins' polls move
/// to a worker), so `pool.block_on(fib(n))` from `main` is parallel.
#[test]
fn a_join_awaited_by_block_on_from_a_plain_thread_forks_on_the_workers() {
    watchdog("join_from_plain_thread", || {
        let pool = pool(2);
        let (a, b) = pool.block_on(fork::join(async { bwos::current_thread_index() }, async {
            bwos::current_thread_index()
        }));
        assert!(
            a.is_some() && b.is_some(),
            "children polled off the pool: {a:?} {b:?}"
        );
        assert_eq!(bwos::current_thread_index(), None);
        assert_eq!(pool.block_on(fib(20)), 6765);
    });
}

#[test]
fn fib_on_one_two_and_four_threads() {
    watchdog("fib_on_one_two_and_four_threads", || {
        for threads in [1, 2, 4] {
            let pool = pool(threads);
            assert_eq!(pool.block_on(fib(27)), 196_418, "{threads} threads");
            assert_eq!(pool.block_on(fib_box_pin(22)), 17_711, "{threads} threads");
        }
    });
}

/// Sums `values` with borrowing joins, marking each value in `seen`; the
/// leaves yield once, so that their parents suspend.
fn count_once<'a>(values: &'a [u64], seen: &'a [AtomicUsize]) -> Boxed<'a, u64> {
    fork::boxed(async move {
        if values.len() <= 64 {
            bwos::task::yield_now().await;
            for &value in values {
                seen[value as usize].fetch_add(1, Ordering::Relaxed);
            }
            return values.iter().sum();
        }
        let (left, right) = values.split_at(values.len() / 2);
        let (a, b) = fork::join(count_once(left, seen), count_once(right, seen)).await;
        a + b
    })
}

/// Many parents at once: 200 tasks fork on the same pool, each summing
/// its own slice of unique values through borrowing joins, with yields in
/// the leaves so that parents suspend and move between workers. Every
/// value is counted exactly once.
#[test]
fn many_tasks_fork_at_once_and_count_every_value_once() {
    watchdog("many_tasks_fork_at_once_and_count_every_value_once", || {
        let pool = pool(2);
        let tasks = 200usize;
        let per_task = 1_000usize;
        // Rounds: more interleavings of suspensions, steals and wake-ups.
        for _ in 0..20 {
            let values: Arc<Vec<u64>> = Arc::new((0..(tasks * per_task) as u64).collect());
            let seen: Arc<Vec<AtomicUsize>> =
                Arc::new((0..values.len()).map(|_| AtomicUsize::new(0)).collect());
            let handles: Vec<_> = (0..tasks)
                .map(|task| {
                    let (values, seen) = (Arc::clone(&values), Arc::clone(&seen));
                    pool.spawn_task(async move {
                        let range = task * per_task..(task + 1) * per_task;
                        count_once(&values[range], &seen).await
                    })
                })
                .collect();
            let total = pool.block_on(async move {
                let mut total = 0;
                for handle in handles {
                    total += handle.await.expect("no task panics");
                }
                total
            });
            assert_eq!(total, values.iter().sum::<u64>());
            for (value, count) in seen.iter().enumerate() {
                assert_eq!(count.load(Ordering::Relaxed), 1, "value {value}");
            }
        }
    });
}

/// Borrowing children: quicksort of a `&mut [u64]` in place.
fn quicksort(values: &mut [u64]) -> Boxed<'_, ()> {
    fork::boxed(async move {
        if values.len() <= 32 {
            values.sort_unstable();
            return;
        }
        let pivot = values[values.len() / 2];
        let mut left = 0;
        for i in 0..values.len() {
            if values[i] < pivot {
                values.swap(i, left);
                left += 1;
            }
        }
        let (low, high) = values.split_at_mut(left);
        // `high` starts with elements >= pivot; skip the pivot itself so both
        // halves shrink.
        let at = high.iter().position(|&v| v == pivot).expect("the pivot");
        high.swap(0, at);
        let high = &mut high[1..];
        fork::join(quicksort(low), quicksort(high)).await;
    })
}

#[test]
fn borrowing_children_sort_in_place() {
    watchdog("borrowing_children_sort_in_place", || {
        let pool = pool(2);
        // A permutation of 0..n: unique values, so a lost or duplicated
        // element shows.
        let n = 200_000u64;
        let mut values: Vec<u64> = (0..n).map(|i| (i * 7_919) % n).collect();
        pool.block_on(quicksort(&mut values));
        assert!(values.iter().copied().eq(0..n), "sorted permutation");
    });
}

#[test]
fn scope_runs_every_child_exactly_once() {
    watchdog("scope_runs_every_child_exactly_once", || {
        let pool = pool(2);
        let children = 20_000usize;
        let seen: Vec<AtomicUsize> = (0..children).map(|_| AtomicUsize::new(0)).collect();
        let seen_ref = &seen;
        let output = pool.block_on(fork::scope(|s| async move {
            // Half spawned by the body, half by children (nested spawns).
            for i in 0..children / 2 {
                let inner = s.clone();
                s.spawn(async move {
                    seen_ref[i].fetch_add(1, Ordering::Relaxed);
                    inner.spawn(async move {
                        seen_ref[children / 2 + i].fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
            "body done"
        }));
        assert_eq!(output, "body done");
        for (i, count) in seen.iter().enumerate() {
            assert_eq!(count.load(Ordering::Relaxed), 1, "child {i}");
        }
    });
}

/// A one-shot channel: the receiver's future waits until another thread
/// sends.
struct Oneshot<T> {
    slot: Mutex<(Option<T>, Option<Waker>)>,
}

impl<T> Oneshot<T> {
    fn new() -> Arc<Self> {
        Arc::new(Oneshot {
            slot: Mutex::new((None, None)),
        })
    }

    fn send(&self, value: T) {
        let mut slot = self.slot.lock().unwrap();
        slot.0 = Some(value);
        if let Some(waker) = slot.1.take() {
            waker.wake();
        }
    }

    fn recv(self: &Arc<Self>) -> impl Future<Output = T> + Send + use<T>
    where
        T: Send,
    {
        let this = Arc::clone(self);
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            let mut slot = this.slot.lock().unwrap();
            match slot.0.take() {
                Some(value) => Poll::Ready(value),
                None => {
                    slot.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

/// Nowa's point: a join that is not ready does not block the worker. On a
/// one-thread pool the first child waits for a value that another thread
/// sends only after the other children ran: if the waiting child held the
/// worker, they never would (and the watchdog would fail the test).
#[test]
fn a_waiting_child_does_not_stop_a_one_thread_pool() {
    watchdog("a_waiting_child_does_not_stop_a_one_thread_pool", || {
        let pool = pool(1);
        let channel = Oneshot::new();
        let others_done = Arc::new(AtomicUsize::new(0));
        let sender = {
            let channel = Arc::clone(&channel);
            let others_done = Arc::clone(&others_done);
            std::thread::spawn(move || {
                while others_done.load(Ordering::Acquire) < 100 {
                    std::thread::yield_now();
                }
                channel.send(42u64);
            })
        };
        let others = &others_done;
        let (received, ran) = pool.block_on(fork::join(channel.recv(), async move {
            fork::scope(|s| async move {
                for _ in 0..100 {
                    s.spawn(async move {
                        others.fetch_add(1, Ordering::Release);
                    });
                }
            })
            .await;
            others.load(Ordering::Relaxed)
        }));
        sender.join().unwrap();
        assert_eq!((received, ran), (42, 100));
    });
}

/// Each scope child has a waker of its own: a wake-up polls that child,
/// not all of them. Fifty children wait on channels filled one by one from
/// another thread; each is polled at most twice (once waiting, once
/// ready), where polling every child at every wake-up would poll the last
/// ones up to fifty times.
#[test]
fn a_scope_polls_only_the_woken_children() {
    watchdog("a_scope_polls_only_the_woken_children", || {
        let pool = pool(2);
        let children = 50;
        let channels: Vec<_> = (0..children).map(|_| Oneshot::new()).collect();
        let polls: Vec<AtomicUsize> = (0..children).map(|_| AtomicUsize::new(0)).collect();
        let sender = {
            let channels = channels.clone();
            std::thread::spawn(move || {
                for (i, channel) in channels.iter().enumerate() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    channel.send(i);
                }
            })
        };
        let received = AtomicUsize::new(0);
        let (polls_ref, received_ref, channels_ref) = (&polls, &received, &channels);
        pool.block_on(fork::scope(|s| async move {
            for (i, channel) in channels_ref.iter().enumerate() {
                let receive = channel.recv();
                s.spawn(async move {
                    let mut receive = std::pin::pin!(receive);
                    let value = std::future::poll_fn(|cx| {
                        polls_ref[i].fetch_add(1, Ordering::Relaxed);
                        receive.as_mut().poll(cx)
                    })
                    .await;
                    received_ref.fetch_add(value, Ordering::Relaxed);
                });
            }
        }));
        sender.join().unwrap();
        assert_eq!(
            received.load(Ordering::Relaxed),
            (0..children).sum::<usize>()
        );
        for (i, count) in polls.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            assert!(
                (1..=2).contains(&count),
                "child {i} was polled {count} times"
            );
        }
    });
}

fn deep(depth: u64) -> Boxed<'static, u64> {
    fork::boxed(async move {
        if depth == 0 {
            return 0;
        }
        let (below, one) = fork::join(deep(depth - 1), async { 1 }).await;
        below + one
    })
}

/// A million nested forks on a pool with the default worker stack.
#[test]
fn a_million_levels_deep() {
    watchdog("a_million_levels_deep", || {
        let pool = pool(2);
        assert_eq!(pool.block_on(deep(1_000_000)), 1_000_000);
    });
}

fn deep_in<'s, 'env>(region: Region<'s, 'env>, depth: u64) -> Boxed<'s, u64> {
    fork::boxed(async move {
        if depth == 0 {
            return 0;
        }
        let (below, one) = region.join(deep_in(region, depth - 1), async { 1 }).await;
        below + one
    })
}

/// `Region::join` grows the stack the same way: a million levels.
#[test]
fn a_million_levels_deep_in_a_region() {
    watchdog("a_million_levels_deep_in_a_region", || {
        let pool = pool(2);
        let depth = pool.install(|| fork::block_on(|region| deep_in(region, 1_000_000)));
        assert_eq!(depth, 1_000_000);
    });
}

/// Outside pools (another executor polls the forks) a deep recursion grows
/// the stack the same way: 200,000 levels on a test thread's 2 MiB stack.
#[test]
fn a_deep_recursion_outside_pools() {
    watchdog("a_deep_recursion_outside_pools", || {
        assert_eq!(futures_lite::future::block_on(deep(200_000)), 200_000);
    });
}

#[test]
fn a_panic_reaches_the_parent_after_the_sibling_finished() {
    watchdog(
        "a_panic_reaches_the_parent_after_the_sibling_finished",
        || {
            let pool = pool(2);
            for panicking in ["first", "second", "both"] {
                let sibling_done = AtomicBool::new(false);
                let done = &sibling_done;
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.block_on(fork::join(
                        async move {
                            if panicking != "second" {
                                panic!("first child");
                            }
                            // Keep the sibling busy past the panic.
                            let _ = fib(18).await;
                            done.store(true, Ordering::Relaxed);
                        },
                        async move {
                            let _ = fib(18).await;
                            if panicking != "first" {
                                panic!("second child");
                            }
                            done.store(true, Ordering::Relaxed);
                        },
                    ))
                }));
                let payload = result.expect_err("the join panics");
                let expected = if panicking == "second" {
                    "second child"
                } else {
                    "first child"
                };
                assert_eq!(panic_message(&payload), expected, "{panicking}");
                if panicking != "both" {
                    assert!(sibling_done.load(Ordering::Relaxed), "{panicking}");
                }
            }
        },
    );
}

/// A future that is ready at once and whose destructor panics.
struct PanicsWhenDropped;

impl Future for PanicsWhenDropped {
    type Output = u64;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u64> {
        Poll::Ready(7)
    }
}

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("child destructor");
    }
}

/// A child whose future panics when it is dropped, right after it
/// finished: the panic is the child's outcome and reaches the parent,
/// whichever thread polled the child, in `fork::join` and in
/// `Region::join`. A thief polls a region's stolen child in its scheduler
/// loop, which must not unwind: there the panic aborted the process
/// before `Child::poll_once` caught it.
// Mutation caught: dropping the finished future outside a `catch_unwind`
// (the process aborts once a thief finishes a region's child).
#[test]
fn a_panicking_destructor_of_a_finished_child_reaches_the_parent() {
    watchdog(
        "a_panicking_destructor_of_a_finished_child_reaches_the_parent",
        || {
            let pool = pool(2);
            for round in 0..50 {
                let in_join = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.block_on(fork::join(fib(16), PanicsWhenDropped))
                }));
                let in_region = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.install(|| {
                        fork::block_on(|region| {
                            fork::boxed(
                                async move { region.join(fib(16), PanicsWhenDropped).await.1 },
                            )
                        })
                    })
                }));
                for (how, result) in [
                    ("fork::join", in_join.map(|_| ())),
                    ("Region::join", in_region.map(|_| ())),
                ] {
                    let payload = result.expect_err("the join panics");
                    assert_eq!(
                        panic_message(&payload),
                        "child destructor",
                        "{how}, round {round}"
                    );
                }
            }
            // The pool carries on.
            assert_eq!(pool.block_on(fib(10)), 55);
        },
    );
}

/// The same inside a join that runs its children one after the other
/// (the fast path of a nested join on a one-thread pool): a panic of
/// either inner child reaches the parent after every sibling, inner and
/// outer, finished.
#[test]
fn a_panic_in_a_nested_sequential_join_waits_for_the_siblings() {
    watchdog(
        "a_panic_in_a_nested_sequential_join_waits_for_the_siblings",
        || {
            let pool = pool(1);
            for panicking in ["first", "second"] {
                let finished = AtomicUsize::new(0);
                let finished_ref = &finished;
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.block_on(fork::join(
                        fork::join(
                            async move {
                                if panicking == "first" {
                                    panic!("inner first");
                                }
                                finished_ref.fetch_add(1, Ordering::Relaxed);
                            },
                            async move {
                                if panicking == "second" {
                                    panic!("inner second");
                                }
                                finished_ref.fetch_add(1, Ordering::Relaxed);
                            },
                        ),
                        async move {
                            finished_ref.fetch_add(1, Ordering::Relaxed);
                        },
                    ))
                }));
                let payload = result.expect_err("the join panics");
                assert_eq!(panic_message(&payload), format!("inner {panicking}"));
                assert_eq!(finished.load(Ordering::Relaxed), 2, "{panicking}");
            }
        },
    );
}

#[test]
fn a_scope_child_panic_waits_for_the_other_children() {
    watchdog("a_scope_child_panic_waits_for_the_other_children", || {
        let pool = pool(2);
        let finished = AtomicUsize::new(0);
        let finished_ref = &finished;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.block_on(fork::scope(|s| async move {
                s.spawn(async { panic!("child 0") });
                for _ in 0..50 {
                    s.spawn(async move {
                        let _ = fib(12).await;
                        finished_ref.fetch_add(1, Ordering::Relaxed);
                    });
                }
            }))
        }));
        let payload = result.expect_err("the scope panics");
        assert_eq!(panic_message(&payload), "child 0");
        assert_eq!(finished.load(Ordering::Relaxed), 50);
    });
}

/// A random fork tree: leaves yield some times, then return their value or
/// panic.
#[derive(Clone, Debug)]
enum Tree {
    Leaf {
        value: u64,
        yields: u8,
        panics: bool,
    },
    Join(Box<Tree>, Box<Tree>),
    Scope(Vec<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf =
        (0u64..1000, 0u8..3, prop::bool::weighted(0.05)).prop_map(|(value, yields, panics)| {
            Tree::Leaf {
                value,
                yields,
                panics,
            }
        });
    leaf.prop_recursive(6, 64, 5, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Tree::Join(Box::new(a), Box::new(b))),
            prop::collection::vec(inner, 0..5).prop_map(Tree::Scope),
        ]
    })
}

/// The serial meaning: the sum of the leaves, or the message of the panic
/// that wins (`join`: the first child's; `scope`: the first in time, which
/// is not deterministic, so any panicking leaf's).
fn expected(tree: &Tree) -> Result<u64, ()> {
    match tree {
        Tree::Leaf { value, panics, .. } => {
            if *panics {
                Err(())
            } else {
                Ok(*value)
            }
        }
        Tree::Join(a, b) => Ok(expected(a)? + expected(b)?),
        Tree::Scope(children) => children.iter().map(expected).sum(),
    }
}

/// Counts leaves that ran to the end, to check that siblings of a panic
/// still finish.
/// With a region, its joins are `Region::join`s (full suspension);
/// without, `fork::join`s.
fn evaluate<'a, 'env>(
    tree: &'a Tree,
    finished: &'a AtomicUsize,
    region: Option<Region<'a, 'env>>,
) -> Boxed<'a, u64> {
    fork::boxed(async move {
        match tree {
            Tree::Leaf {
                value,
                yields,
                panics,
            } => {
                for _ in 0..*yields {
                    bwos::task::yield_now().await;
                }
                if *panics {
                    panic!("leaf {value}");
                }
                finished.fetch_add(1, Ordering::Relaxed);
                *value
            }
            Tree::Join(a, b) => {
                let (a, b) = (evaluate(a, finished, region), evaluate(b, finished, region));
                let (a, b) = match region {
                    Some(region) => region.join(a, b).await,
                    None => fork::join(a, b).await,
                };
                a + b
            }
            Tree::Scope(children) => {
                let sum = AtomicUsize::new(0);
                let sum_ref = &sum;
                fork::scope(|s| async move {
                    for child in children {
                        s.spawn(async move {
                            let value = evaluate(child, finished, region).await;
                            sum_ref.fetch_add(value as usize, Ordering::Relaxed);
                        });
                    }
                })
                .await;
                sum.into_inner() as u64
            }
        }
    })
}

fn leaves(tree: &Tree) -> (usize, usize) {
    match tree {
        Tree::Leaf { panics, .. } => (usize::from(!panics), usize::from(*panics)),
        Tree::Join(a, b) => {
            let (a, b) = (leaves(a), leaves(b));
            (a.0 + b.0, a.1 + b.1)
        }
        Tree::Scope(children) => children
            .iter()
            .map(leaves)
            .fold((0, 0), |sum, x| (sum.0 + x.0, sum.1 + x.1)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random nestings of joins and scopes with waiting and panicking
    /// leaves, with `fork::join` or (in a `fork::block_on` region)
    /// `Region::join`: the sum of a serial evaluation, or a panic of one of
    /// the panicking leaves after every non-panicking leaf ran.
    #[test]
    fn random_fork_trees_compute_the_serial_result(tree in tree(), region in any::<bool>()) {
        let pool = pool(2);
        let finished = AtomicUsize::new(0);
        let result = watchdog("random_fork_trees_compute_the_serial_result", || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if region {
                    pool.install(|| fork::block_on(|region| evaluate(&tree, &finished, Some(region))))
                } else {
                    pool.block_on(evaluate(&tree, &finished, None))
                }
            }))
        });
        let (normal_leaves, _) = leaves(&tree);
        match (expected(&tree), result) {
            (Ok(sum), Ok(value)) => prop_assert_eq!(sum, value),
            (Err(()), Err(payload)) => {
                prop_assert!(panic_message(&payload).starts_with("leaf "));
                // Every leaf that does not panic still finished.
                prop_assert_eq!(finished.load(Ordering::Relaxed), normal_leaves);
            }
            (expected, result) => prop_assert!(
                false,
                "expected {:?}, got {:?}",
                expected,
                result.map_err(|payload| panic_message(&payload).to_owned())
            ),
        }
    }
}
