//! Panics never abort the process and always reach the caller.
//!
//! The rule (see "Panics" in the crate docs): no pool work runs while a
//! thread unwinds. A panic is caught where the call that owns the closure
//! (`join`, `scope`, `install`) can finish its pending work from ordinary
//! code, then resumed. The property test below generates trees of `join`,
//! `scope` + `spawn`, `install` into a second pool, sequences, and closures
//! run by a destructor while another panic unwinds, with panics at random
//! places, and checks every outcome against a sequential reference.
#![cfg(not(bwos_loom))]

use std::collections::BTreeSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

use bwos::{Scope, ThreadPool};
use bwos_testkit::{panic_message, watchdog};
use common::{fib, fib_serial, pool};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

mod common;

/// The two programs that aborted the process before the unwinding rule:
/// jobs ran inside a drop guard while `a` unwound, and the scope job's
/// abort guard took `std::thread::panicking()` for a bug.
#[test]
fn a_panic_next_to_a_queued_scope_job_reaches_the_caller() {
    watchdog(
        "a_panic_next_to_a_queued_scope_job_reaches_the_caller",
        || {
            let pool = pool(1);
            let payload = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    bwos::scope(|s| {
                        bwos::join(
                            || {
                                s.spawn(|_| {});
                                panic!("a")
                            },
                            || (),
                        );
                    })
                })
            }))
            .expect_err("the panic reaches the caller");
            assert_eq!(panic_message(&payload), "a");

            let payload = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| bwos::join(|| panic!("a"), || bwos::scope(|s| s.spawn(|_| {}))))
            }))
            .expect_err("the panic reaches the caller");
            assert_eq!(panic_message(&payload), "a");
            assert_eq!(
                pool.install(|| fib(15)),
                fib_serial(15),
                "the pool still works"
            );
        },
    );
}

/// When several closures of a scope panic, the first panic recorded wins,
/// the body's included (rayon-core's rule). On one thread the order is
/// deterministic: a job spawned inside a `join` of the body is popped and
/// run before `b`, so it panics before the body does.
#[test]
fn a_scope_resumes_the_first_recorded_panic() {
    watchdog("a_scope_resumes_the_first_recorded_panic", || {
        let pool = pool(1);
        let spawned_first = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                bwos::join(|| s.spawn(|_| panic!("spawned")), || ());
                panic!("body")
            })
        }))
        .expect_err("a panic reaches the caller");
        assert_eq!(panic_message(&spawned_first), "spawned");

        // The body panics before its spawned job runs (the job waits in
        // the queue until the body is over).
        let body_first = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                s.spawn(|_| panic!("spawned"));
                panic!("body")
            })
        }))
        .expect_err("a panic reaches the caller");
        assert_eq!(panic_message(&body_first), "body");
    });
}

/// A closure that runs while another panic unwinds sees the thread
/// unwinding, but bwos work it starts there still runs and reports its
/// own panics to it.
#[test]
fn pool_work_started_by_a_destructor_during_unwinding_runs_normally() {
    struct JoinsOnDrop<'a>(&'a AtomicUsize);
    impl Drop for JoinsOnDrop<'_> {
        fn drop(&mut self) {
            assert!(std::thread::panicking(), "dropped by the unwinding panic");
            let inner = panic::catch_unwind(AssertUnwindSafe(|| {
                bwos::join(|| fib(12), || panic!("inner"))
            }));
            assert_eq!(panic_message(&inner.expect_err("inner panic")), "inner");
            self.0.fetch_add(fib(10) as usize, Ordering::Relaxed);
        }
    }
    watchdog(
        "pool_work_started_by_a_destructor_during_unwinding_runs_normally",
        || {
            for threads in [1, 2] {
                let pool = pool(threads);
                let total = AtomicUsize::new(0);
                let payload = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        let _guard = JoinsOnDrop(&total);
                        panic!("outer")
                    })
                }))
                .expect_err("the outer panic reaches the caller");
                assert_eq!(panic_message(&payload), "outer");
                assert_eq!(total.into_inner(), fib_serial(10) as usize);
            }
        },
    );
}

// ---------------------------------------------------------------------------
// The randomized test.

/// A generated program. Every node is one closure or call of the runtime's
/// API; `id` is its index into the run counters, filled in by [`number`]
/// after generation.
#[derive(Debug, Clone)]
struct Node {
    id: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A closure; panics if `panics`.
    Leaf { panics: bool },
    /// The children in order; a panic skips the rest.
    Seq(Vec<Node>),
    /// `bwos::join(a, b)`.
    Join(Box<Node>, Box<Node>),
    /// `bwos::scope`: the body spawns each child in order and, with
    /// `Some(k)`, panics after spawning the first `k`.
    Scope {
        spawns: Vec<Node>,
        body_panics_after: Option<usize>,
    },
    /// `Scope::spawn` of the child into the innermost enclosing scope (run
    /// in place without one).
    Spawn(Box<Node>),
    /// `install` of the child into the other pool of the pair.
    Install(Box<Node>),
    /// Panics; a destructor runs the child while that panic unwinds (and
    /// catches whatever the child panics with).
    PanicWhileRunning(Box<Node>),
}

impl Kind {
    fn node(self) -> Node {
        Node { id: 0, kind: self }
    }
}

/// Numbers the nodes in pre-order, from `*next` on; leaves the count in `*next`.
fn number(node: &mut Node, next: &mut usize) {
    node.id = *next;
    *next += 1;
    match &mut node.kind {
        Kind::Leaf { .. } => {}
        Kind::Seq(children)
        | Kind::Scope {
            spawns: children, ..
        } => {
            children.iter_mut().for_each(|child| number(child, next));
        }
        Kind::Join(a, b) => {
            number(a, next);
            number(b, next);
        }
        Kind::Spawn(child) | Kind::Install(child) | Kind::PanicWhileRunning(child) => {
            number(child, next);
        }
    }
}

fn node_strategy() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        4 => Just(Kind::Leaf { panics: false }.node()),
        1 => Just(Kind::Leaf { panics: true }.node()),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..4).prop_map(|children| Kind::Seq(children).node()),
            3 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Kind::Join(Box::new(a), Box::new(b)).node()),
            2 => (prop::collection::vec(inner.clone(), 0..4), prop::option::weighted(0.3, 0..4usize))
                .prop_map(|(spawns, body_panics_after)| Kind::Scope {
                    body_panics_after: body_panics_after.map(|k| k.min(spawns.len())),
                    spawns,
                }.node()),
            2 => inner.clone().prop_map(|c| Kind::Spawn(Box::new(c)).node()),
            1 => inner.clone().prop_map(|c| Kind::Install(Box::new(c)).node()),
            1 => inner.prop_map(|c| Kind::PanicWhileRunning(Box::new(c)).node()),
        ]
    })
}

/// The payload of every generated panic: the index of the node that
/// panicked.
#[derive(Debug)]
struct Injected(usize);

/// What a run needs: a counter per node and the two pools.
struct Run<'a> {
    counts: Vec<AtomicUsize>,
    pools: [&'a ThreadPool; 2],
}

impl Run<'_> {
    fn ran(&self, node: &Node) {
        self.counts[node.id].fetch_add(1, Ordering::Relaxed);
    }

    /// The pool that is not the one running the calling thread.
    fn other_pool(&self) -> &ThreadPool {
        if self.pools[0].current_thread_index().is_some() {
            self.pools[1]
        } else {
            self.pools[0]
        }
    }
}

/// Runs `node` on the runtime; spawns go into `scope`.
fn run<'t: 's, 's>(node: &'t Node, ctx: &'t Run<'t>, scope: Option<&Scope<'s>>) {
    ctx.ran(node);
    match &node.kind {
        Kind::Leaf { panics } => {
            if *panics {
                panic::panic_any(Injected(node.id));
            }
        }
        Kind::Seq(children) => children.iter().for_each(|c| run(c, ctx, scope)),
        Kind::Join(a, b) => {
            bwos::join(|| run(a, ctx, scope), || run(b, ctx, scope));
        }
        Kind::Scope {
            spawns,
            body_panics_after,
        } => bwos::scope(|s| {
            for (k, child) in spawns.iter().enumerate() {
                if *body_panics_after == Some(k) {
                    panic::panic_any(Injected(node.id));
                }
                s.spawn(move |s| run(child, ctx, Some(s)));
            }
            if *body_panics_after == Some(spawns.len()) {
                panic::panic_any(Injected(node.id));
            }
        }),
        Kind::Spawn(child) => match scope {
            Some(s) => s.spawn(move |s| run(child, ctx, Some(s))),
            None => run(child, ctx, None),
        },
        Kind::Install(child) => ctx.other_pool().install(|| run(child, ctx, scope)),
        Kind::PanicWhileRunning(child) => {
            struct RunOnUnwind<'t>(&'t Node, &'t Run<'t>);
            impl Drop for RunOnUnwind<'_> {
                fn drop(&mut self) {
                    // A panic escaping a destructor during unwinding would
                    // abort, by Rust's rules: catch it.
                    let _ = panic::catch_unwind(AssertUnwindSafe(|| run(self.0, self.1, None)));
                }
            }
            let _guard = RunOnUnwind(child, ctx);
            panic::panic_any(Injected(node.id));
        }
    }
}

/// The sequential reference: adds to `counts` how often each node must run
/// and returns the ids the caller's panic may carry (`None`: no panic).
/// Panics of spawned closures go to the scope's set, `spawned`.
fn expect(
    node: &Node,
    counts: &mut [usize],
    spawned: Option<&mut BTreeSet<usize>>,
) -> Option<BTreeSet<usize>> {
    counts[node.id] += 1;
    let own = || Some(BTreeSet::from([node.id]));
    match &node.kind {
        Kind::Leaf { panics } => panics.then(|| BTreeSet::from([node.id])),
        Kind::Seq(children) => {
            let mut spawned = spawned;
            for child in children {
                if let Some(panic) = expect(child, counts, spawned.as_deref_mut()) {
                    return Some(panic);
                }
            }
            None
        }
        Kind::Join(a, b) => {
            let mut spawned = spawned;
            let panic_a = expect(a, counts, spawned.as_deref_mut());
            let panic_b = expect(b, counts, spawned);
            // `a`'s panic wins when both panic.
            panic_a.or(panic_b)
        }
        Kind::Scope {
            spawns,
            body_panics_after,
        } => {
            let mut recorded = BTreeSet::new();
            let spawned_before_panic = body_panics_after.unwrap_or(spawns.len());
            for child in &spawns[..spawned_before_panic] {
                let mut inner = BTreeSet::new();
                if let Some(panic) = expect(child, counts, Some(&mut inner)) {
                    recorded.extend(panic);
                }
                recorded.extend(inner);
            }
            if body_panics_after.is_some() {
                recorded.insert(node.id);
            }
            // Which one is recorded first depends on timing.
            (!recorded.is_empty()).then_some(recorded)
        }
        Kind::Spawn(child) => match spawned {
            Some(spawned) => {
                let mut inner = BTreeSet::new();
                if let Some(panic) = expect(child, counts, Some(&mut inner)) {
                    spawned.extend(panic);
                }
                spawned.extend(inner);
                None
            }
            None => expect(child, counts, None),
        },
        Kind::Install(child) => expect(child, counts, spawned),
        Kind::PanicWhileRunning(child) => {
            let _ = expect(child, counts, None);
            own()
        }
    }
}

/// Two pools of 1, 2 and 4 threads, built once for all cases.
fn pools(threads: usize) -> [&'static ThreadPool; 2] {
    static POOLS: OnceLock<Vec<[ThreadPool; 2]>> = OnceLock::new();
    let all = POOLS.get_or_init(|| [1, 2, 4].map(|n| [pool(n), pool(n)]).into());
    let pair = &all[[1, 2, 4].iter().position(|&n| n == threads).unwrap()];
    [&pair[0], &pair[1]]
}

/// Keeps the default panic message for everything but generated panics,
/// which would otherwise print thousands of lines.
fn silence_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<Injected>().is_none() {
                default(info);
            }
        }));
    });
}

/// Runs one generated tree on `threads` threads and compares with the
/// reference.
fn check_tree(tree: &Node, threads: usize) -> Result<(), TestCaseError> {
    let mut numbered = tree.clone();
    let mut next = 0;
    number(&mut numbered, &mut next);
    let mut expected_counts = vec![0; next];
    let expected_panic = expect(&numbered, &mut expected_counts, None);

    let pools = pools(threads);
    let ctx = Run {
        counts: (0..next).map(|_| AtomicUsize::new(0)).collect(),
        pools,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        pools[0].install(|| run(&numbered, &ctx, None))
    }));
    let counts: Vec<usize> = ctx
        .counts
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    prop_assert_eq!(
        &counts,
        &expected_counts,
        "run counts per node (index = node id) differ from the reference"
    );
    match (outcome, expected_panic) {
        (Ok(()), None) => {}
        (Err(payload), Some(possible)) => {
            let Some(Injected(id)) = payload.downcast_ref::<Injected>() else {
                return Err(TestCaseError::fail(format!(
                    "a panic that was not generated reached the caller: {}",
                    panic_message(&payload)
                )));
            };
            prop_assert!(
                possible.contains(id),
                "the caller got the panic of node {}, expected one of {:?}",
                id,
                possible
            );
        }
        (Ok(()), Some(possible)) => {
            return Err(TestCaseError::fail(format!(
                "no panic reached the caller; expected one of {possible:?}"
            )));
        }
        (Err(payload), None) => {
            return Err(TestCaseError::fail(format!(
                "a panic reached the caller of a tree without panics: {:?}",
                payload.downcast_ref::<Injected>()
            )));
        }
    }
    for pool in pools {
        prop_assert_eq!(pool.install(|| fib(10)), 55, "the pool stays usable");
    }
    Ok(())
}

/// Cases: 10,000 by default, `BWOS_PANIC_TREE_CASES` for more.
fn cases() -> u32 {
    match std::env::var("BWOS_PANIC_TREE_CASES") {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("BWOS_PANIC_TREE_CASES={value:?} is not a number")),
        Err(_) => 10_000,
    }
}

#[test]
fn random_panic_trees_behave_like_the_sequential_reference() {
    silence_injected_panics();
    watchdog(
        "random_panic_trees_behave_like_the_sequential_reference",
        || {
            let mut runner = TestRunner::new(ProptestConfig {
                cases: cases(),
                ..ProptestConfig::default()
            });
            let strategy = (node_strategy(), prop::sample::select(vec![1usize, 2, 4]));
            if let Err(failure) =
                runner.run(&strategy, |(tree, threads)| check_tree(&tree, threads))
            {
                panic!("{failure}");
            }
        },
    );
}

/// A waker whose `wake` panics, after counting the call: the user code the
/// scheduler calls when a task it waits for finishes, a timer fires or a
/// socket becomes ready.
#[derive(Default)]
struct PanickingWaker(AtomicUsize);

impl std::task::Wake for PanickingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a waker that panics");
    }
}

impl PanickingWaker {
    fn new() -> (std::sync::Arc<Self>, std::task::Waker) {
        let counter = std::sync::Arc::new(PanickingWaker::default());
        let waker = std::task::Waker::from(std::sync::Arc::clone(&counter));
        (counter, waker)
    }

    fn calls(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Polls `future` once with `waker`.
fn poll_with<F: std::future::Future + ?Sized>(
    future: std::pin::Pin<&mut F>,
    waker: &std::task::Waker,
) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(waker))
}

fn assert_the_pool_still_works(pool: &ThreadPool) {
    assert_eq!(pool.install(|| fib(15)), fib_serial(15));
    assert_eq!(pool.block_on(async { 5 }), 5);
}

// Mutation caught: `task/raw.rs` waking the join waker with a plain
// `wake_by_ref` (the worker that completes the task aborts the process).
#[test]
fn a_join_handle_waiter_that_panics_does_not_abort_the_pool() {
    watchdog(
        "a_join_handle_waiter_that_panics_does_not_abort_the_pool",
        || {
            let pool = pool(2);
            let (release, released) = std::sync::mpsc::channel::<()>();
            let released = std::sync::Mutex::new(released);
            let mut handle = pool.spawn_task(async move {
                released.lock().unwrap().recv().unwrap();
                7
            });
            let (waiter, waker) = PanickingWaker::new();
            assert!(
                poll_with(std::pin::Pin::new(&mut handle), &waker).is_pending(),
                "the task waits for the release"
            );
            release.send(()).unwrap();
            // Not polled again until then: the scheduler calls that waker.
            assert!(common::wait_until(|| waiter.calls() == 1));
            let outcome = poll_with(std::pin::Pin::new(&mut handle), std::task::Waker::noop());
            assert!(matches!(outcome, std::task::Poll::Ready(Ok(7))));
            assert_the_pool_still_works(&pool);
        },
    );
}

// Mutation caught: `Timers::fire_until` waking with a plain `Waker::wake`
// (the thread that fires the timers aborts the process, and the second
// timer of the batch would not be woken).
#[test]
fn timers_whose_wakers_panic_do_not_abort_the_pool_or_stall_the_others() {
    watchdog(
        "timers_whose_wakers_panic_do_not_abort_the_pool_or_stall_the_others",
        || {
            let pool = pool(2);
            let (waiter, waker) = PanickingWaker::new();
            let (mut first, mut second) = pool.block_on(async {
                // One deadline: both fire in the same batch. Far enough
                // that a slow machine polls them before it.
                let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
                let mut first = Box::pin(bwos::time::sleep_until(deadline));
                let mut second = Box::pin(bwos::time::sleep_until(deadline));
                assert!(poll_with(first.as_mut(), &waker).is_pending());
                assert!(poll_with(second.as_mut(), &waker).is_pending());
                (first, second)
            });
            assert!(common::wait_until(|| waiter.calls() == 2));
            assert!(poll_with(first.as_mut(), std::task::Waker::noop()).is_ready());
            assert!(poll_with(second.as_mut(), std::task::Waker::noop()).is_ready());
            assert_the_pool_still_works(&pool);
        },
    );
}

// Mutation caught: `Readiness` waking its reader with a plain
// `Waker::wake` (the worker that turns the I/O driver aborts the process).
#[cfg(feature = "io")]
#[test]
fn a_socket_whose_waker_panics_does_not_abort_the_pool() {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    watchdog(
        "a_socket_whose_waker_panics_does_not_abort_the_pool",
        || {
            let pool = pool(2);
            let (waiter, waker) = PanickingWaker::new();
            let (listener, mut accept) = pool.block_on(async {
                let listener = bwos::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let listener = std::sync::Arc::new(listener);
                let mut accept = Box::pin({
                    let listener = std::sync::Arc::clone(&listener);
                    async move { listener.accept().await }
                });
                assert!(
                    poll_with(accept.as_mut(), &waker).is_pending(),
                    "nobody connected"
                );
                (listener, accept)
            });
            let address = listener.local_addr().unwrap();
            let client = pool.spawn_task(async move {
                let mut stream = bwos::net::TcpStream::connect(address).await.unwrap();
                stream.write_all(b"ping").await.unwrap();
                stream
            });
            assert!(common::wait_until(|| waiter.calls() == 1));
            let std::task::Poll::Ready(accepted) =
                poll_with(accept.as_mut(), std::task::Waker::noop())
            else {
                panic!("the connection is there: the waker was called for it");
            };
            let (mut server, _) = accepted.unwrap();
            pool.block_on(async {
                let mut bytes = [0; 4];
                server.read_exact(&mut bytes).await.unwrap();
                assert_eq!(&bytes, b"ping");
            });
            drop(pool.block_on(client).expect("the client task returned"));
            assert_the_pool_still_works(&pool);
        },
    );
}
