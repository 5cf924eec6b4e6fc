//! Cancellation and frames under Miri: dropping (or forgetting) a fork
//! future part-way never leaves a child that is polled afterwards, and the
//! children are dropped in place exactly once.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::fork;

/// A child that borrows `data`, reads it at every poll, stays pending, and
/// keeps its last waker where the test can fire it later.
struct Borrowing<'a> {
    data: &'a [u64],
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Future for Borrowing<'_> {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        // Miri flags this read if it ever happens after `data` is freed.
        let sum: u64 = self.data.iter().sum();
        assert_eq!(sum, 6);
        self.polls.fetch_add(1, Ordering::Relaxed);
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Borrowing<'_> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

struct Probe {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Probe {
    fn new() -> Self {
        Probe {
            polls: Arc::default(),
            drops: Arc::default(),
            waker: Arc::default(),
        }
    }

    fn child<'a>(&self, data: &'a [u64]) -> Borrowing<'a> {
        Borrowing {
            data,
            polls: Arc::clone(&self.polls),
            drops: Arc::clone(&self.drops),
            waker: Arc::clone(&self.waker),
        }
    }

    fn wake(&self) {
        if let Some(waker) = self.waker.lock().unwrap().take() {
            waker.wake();
        }
    }
}

fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn dropping_a_join_part_way_drops_its_borrowing_children() {
    let probe = Probe::new();
    let data = vec![1, 2, 3];
    let mut join = Box::pin(fork::join(
        probe.child(&data),
        fork::boxed(probe.child(&data)),
    ));
    assert!(poll_once(join.as_mut()).is_pending());
    assert_eq!(probe.polls.load(Ordering::Relaxed), 2);
    drop(join);
    assert_eq!(
        probe.drops.load(Ordering::Relaxed),
        2,
        "both children dropped"
    );
    drop(data);
    probe.wake();
    assert_eq!(
        probe.polls.load(Ordering::Relaxed),
        2,
        "no poll after the drop"
    );
}

/// A child like [`Borrowing`] whose counters are borrowed too, so that a
/// forgotten child owns no allocation (Miri's leak check stays on).
struct BorrowingAll<'a> {
    data: &'a [u64],
    polls: &'a AtomicUsize,
    waker: &'a Mutex<Option<Waker>>,
}

impl Future for BorrowingAll<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        assert_eq!(self.data.iter().sum::<u64>(), 6);
        self.polls.fetch_add(1, Ordering::Relaxed);
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn forgetting_a_join_part_way_never_polls_its_children_again() {
    let polls = AtomicUsize::new(0);
    let waker = Mutex::new(None);
    let data = vec![1, 2, 3];
    let child = || BorrowingAll {
        data: &data,
        polls: &polls,
        waker: &waker,
    };
    let mut join = Box::pin(fork::join(child(), child()));
    assert!(poll_once(join.as_mut()).is_pending());
    // The hole of scoped async spawning: no destructor runs. A child
    // polled after this would read freed memory, and Miri would say so.
    free_without_drop(join);
    drop(data);
    if let Some(waker) = waker.lock().unwrap().take() {
        waker.wake();
    }
    assert_eq!(polls.load(Ordering::Relaxed), 2);
}

#[test]
fn dropping_a_scope_part_way_drops_the_body_and_every_child() {
    let probe = Probe::new();
    let data = vec![1, 2, 3];
    let probe_ref = &probe;
    let data_ref = &data;
    let mut scope = Box::pin(fork::scope(|s| async move {
        for _ in 0..5 {
            s.spawn(async move {
                probe_ref.child(data_ref).await;
            });
        }
        probe_ref.child(data_ref).await
    }));
    assert!(poll_once(scope.as_mut()).is_pending());
    assert_eq!(probe.polls.load(Ordering::Relaxed), 6);
    drop(scope);
    assert_eq!(probe.drops.load(Ordering::Relaxed), 6);
    drop(data);
    probe.wake();
    assert_eq!(probe.polls.load(Ordering::Relaxed), 6);
}

#[test]
fn a_completed_join_and_scope_return_their_outputs() {
    let values = [1u64, 2, 3, 4];
    let mut join = Box::pin(fork::join(
        fork::boxed(async { values[..2].iter().sum::<u64>() }),
        async { values[2..].iter().sum::<u64>() },
    ));
    assert_eq!(poll_once(join.as_mut()), Poll::Ready((3, 7)));
    let total = AtomicUsize::new(0);
    let total_ref = &total;
    let mut scope = Box::pin(fork::scope(|s| async move {
        for value in values {
            s.spawn(async move {
                total_ref.fetch_add(value as usize, Ordering::Relaxed);
            });
        }
        "body"
    }));
    assert_eq!(poll_once(scope.as_mut()), Poll::Ready("body"));
    assert_eq!(total.load(Ordering::Relaxed), 10);
}

#[test]
#[should_panic(expected = "the scope has ended")]
fn a_spawn_on_an_ended_scope_says_so() {
    let mut smuggled = None;
    let smuggled_ref = &mut smuggled;
    let mut scope = Box::pin(fork::scope(|s| {
        *smuggled_ref = Some(s);
        async {}
    }));
    assert!(poll_once(scope.as_mut()).is_ready());
    smuggled.expect("the handle").spawn(async {});
}

/// The same on a pool (Miri too): the children may be stolen and polled
/// on other workers, then the join is dropped, or forgotten (its memory
/// freed without its drop glue, as in
/// `forgetting_a_join_part_way_never_polls_its_children_again`), inside a
/// task, and the borrowed data is freed while the pool keeps running.
#[test]
fn cancelling_inside_a_pool_leaves_no_child_running() {
    bwos_testkit::watchdog("cancelling_inside_a_pool_leaves_no_child_running", || {
        let pool = two_workers();
        // Miri runs a few rounds: each one takes it seconds.
        let rounds = if cfg!(miri) { 2 } else { 200 };
        for _ in 0..rounds {
            let probe = Probe::new();
            let data = vec![1, 2, 3];
            pool.block_on(async {
                let mut join = Box::pin(fork::join(
                    probe.child(&data),
                    fork::join(probe.child(&data), probe.child(&data)),
                ));
                assert!(poll_in_task(join.as_mut()).await.is_pending());
            });
            assert_eq!(probe.polls.load(Ordering::Relaxed), 3);
            assert_eq!(probe.drops.load(Ordering::Relaxed), 3);
            drop(data);
            probe.wake();
            pool.install(|| ());
            assert_eq!(probe.polls.load(Ordering::Relaxed), 3);
        }
        for _ in 0..rounds {
            let polls = AtomicUsize::new(0);
            let waker = Mutex::new(None);
            let data = vec![1, 2, 3];
            let child = || BorrowingAll {
                data: &data,
                polls: &polls,
                waker: &waker,
            };
            pool.block_on(async {
                let mut join = Box::pin(fork::join(child(), fork::join(child(), child())));
                assert!(poll_in_task(join.as_mut()).await.is_pending());
                free_without_drop(join);
            });
            drop(data);
            if let Some(waker) = waker.lock().unwrap().take() {
                waker.wake();
            }
            pool.install(|| ());
            assert_eq!(polls.load(Ordering::Relaxed), 3);
        }
    });
}

/// A pool of two workers: one to run the parent, one to steal.
fn two_workers() -> crate::ThreadPool {
    crate::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two workers")
}

/// `mem::forget`, and then the leaked memory reused: frees `pinned`'s
/// memory without running its drop glue. To what it contains this is a
/// forget (no destructor runs), and Miri's leak check stays on.
fn free_without_drop<T>(pinned: Pin<Box<T>>) {
    // SAFETY: the pointee is not used again and is never dropped, which is
    // allowed (a leak, as far as its contents can tell); the memory is
    // freed with the layout it was allocated with.
    unsafe {
        let raw = Box::into_raw(Pin::into_inner_unchecked(pinned));
        std::alloc::dealloc(raw.cast(), std::alloc::Layout::for_value(&*raw));
    }
}

/// Polls `future` once from inside the task, with the task's waker.
async fn poll_in_task<F: Future + ?Sized>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

mod scoped {
    use super::super::region::{Region, block_on};
    use super::two_workers;
    use crate::fork::{self, Boxed};
    use std::future::Future;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Poll;

    /// Two children that force a steal and a suspension: the first spins
    /// until a thief polls the second (it is the parent's poll that spins,
    /// so only a thief can), then returns 1; the second marks itself
    /// started, spins until the parent has returned from its poll of the
    /// join, runs `then`, and returns 2.
    fn steal_and_suspend<'a>(
        b_started: &'a AtomicBool,
        parent_returned: &'a AtomicBool,
        then: impl Fn() + Send + 'a,
    ) -> (
        impl Future<Output = u32> + Send + 'a,
        impl Future<Output = u32> + Send + 'a,
    ) {
        let first = std::future::poll_fn(move |_| {
            while !b_started.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            Poll::Ready(1)
        });
        let second = std::future::poll_fn(move |_| {
            b_started.store(true, Ordering::Release);
            while !parent_returned.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            then();
            Poll::Ready(2)
        });
        (first, second)
    }

    fn fib<'s, 'env>(s: Region<'s, 'env>, n: u64) -> Boxed<'s, u64> {
        fork::boxed(async move {
            if n < 2 {
                return n;
            }
            let (a, b) = s.join(fib(s, n - 1), fib(s, n - 2)).await;
            a + b
        })
    }

    fn quicksort<'s, 'env>(s: Region<'s, 'env>, values: &'s mut [u64]) -> Boxed<'s, ()> {
        fork::boxed(async move {
            if values.len() <= 16 {
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
            let at = high.iter().position(|&v| v == pivot).expect("the pivot");
            high.swap(0, at);
            s.join(quicksort(s, low), quicksort(s, &mut high[1..]))
                .await;
        })
    }

    /// Small enough for Miri, which checks the node's pointer into the
    /// join and the boundary on a real 2-worker pool.
    #[test]
    fn scoped_fib_and_quicksort_small() {
        bwos_testkit::watchdog("scoped_fib_and_quicksort_small", || {
            let pool = two_workers();
            pool.install(|| {
                assert_eq!(block_on(|s| fib(s, 8)), 21);
                let mut values: Vec<u64> = (0..100).map(|i| (i * 37) % 100).collect();
                block_on(|s| quicksort(s, &mut values));
                assert!(values.iter().copied().eq(0..100));
            });
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "long")]
    fn scoped_fib_and_borrowing_quicksort() {
        bwos_testkit::watchdog("scoped_fib_and_borrowing_quicksort", || {
            let pool = two_workers();
            pool.install(|| {
                for _ in 0..20 {
                    assert_eq!(block_on(|s| fib(s, 20)), 6765);
                    let n = 20_000u64;
                    let mut values: Vec<u64> = (0..n).map(|i| (i * 7_919) % n).collect();
                    block_on(|s| quicksort(s, &mut values));
                    assert!(values.iter().copied().eq(0..n));
                }
            });
        });
    }

    /// Nowa's suspension: the parent's first child waits (spinning) until
    /// a thief polls the second; the second spins until the parent's poll
    /// of the join has returned. Only a join that returns `Pending` while
    /// a thief is inside its child finishes this (a join that waited for
    /// the thief's poll would spin forever, and the watchdog would fail
    /// the test).
    #[test]
    fn a_stolen_child_runs_while_its_parent_is_suspended() {
        bwos_testkit::watchdog("a_stolen_child_runs_while_its_parent_is_suspended", || {
            let pool = two_workers();
            let b_started = AtomicBool::new(false);
            let parent_returned = AtomicBool::new(false);
            let (b_started, parent_returned) = (&b_started, &parent_returned);
            let output = pool.install(|| {
                block_on(|s| {
                    fork::boxed(async move {
                        let (first, second) = steal_and_suspend(b_started, parent_returned, || ());
                        let mut join = std::pin::pin!(s.join(first, second));
                        let first =
                            std::future::poll_fn(|cx| Poll::Ready(join.as_mut().poll(cx))).await;
                        assert!(first.is_pending(), "the parent suspends");
                        parent_returned.store(true, Ordering::Release);
                        join.await
                    })
                })
            });
            assert_eq!(output, (1, 2));
        });
    }

    /// A join forgotten while a thief polls its child: `block_on` does not
    /// return before that poll is over (the boundary), so the child never
    /// touches the caller's data after `block_on` returned.
    #[test]
    #[cfg_attr(miri, ignore = "spins, and the forgotten join leaks")]
    fn block_on_waits_for_a_forgotten_joins_stolen_child() {
        bwos_testkit::watchdog("block_on_waits_for_a_forgotten_joins_stolen_child", || {
            let pool = two_workers();
            for _ in 0..5 {
                let b_started = AtomicBool::new(false);
                let parent_returned = AtomicBool::new(false);
                let b_finished = AtomicBool::new(false);
                let flags = (&b_started, &parent_returned, &b_finished);
                pool.install(|| {
                    block_on(|s| {
                        fork::boxed(async move {
                            let (b_started, parent_returned, b_finished) = flags;
                            let (first, second) =
                                steal_and_suspend(b_started, parent_returned, || {
                                    // Long enough that a `block_on` that did
                                    // not wait would be gone.
                                    std::thread::sleep(std::time::Duration::from_millis(20));
                                    b_finished.store(true, Ordering::Release);
                                });
                            let mut join = Box::pin(s.join(first, second));
                            let first =
                                std::future::poll_fn(|cx| Poll::Ready(join.as_mut().poll(cx)))
                                    .await;
                            assert!(first.is_pending());
                            std::mem::forget(join);
                            parent_returned.store(true, Ordering::Release);
                        })
                    })
                });
                assert!(
                    b_finished.load(Ordering::Acquire),
                    "block_on returned while a thief was polling a child"
                );
            }
        });
    }
}
