//! `Handle`: what `Handle::current` is on each kind of thread, enter
//! guards (nesting, out-of-order drops, on a worker of another pool) and
//! where the free functions go under them, handles that outlive their
//! pool, and the unwind-safety bounds.
//!
//! Where work went is told by the name of the thread that ran it: every
//! pool here names its threads with its own prefix, and the global pool's
//! are `bwos-worker-{i}`. No timing is asserted.

#![cfg(not(bwos_loom))]

use std::panic::{self, AssertUnwindSafe, RefUnwindSafe, UnwindSafe};
use std::time::Duration;

use bwos::task::AbortHandle;
use bwos::{EnterGuard, Handle, ThreadPool, ThreadPoolBuilder};
use bwos_testkit::{panic_message, watchdog};
use proptest::prelude::*;

/// The global pool's thread names (the builder's default).
const GLOBAL: &str = "bwos-worker-";

/// A pool of `threads` workers named `{prefix}{index}`.
fn named_pool(prefix: &'static str, threads: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |index| format!("{prefix}{index}"))
        .build()
        .expect("a pool")
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// The thread a task spawned here with `task::spawn` runs on.
fn spawn_runs_on() -> String {
    bwos::block_on(bwos::task::spawn(async { thread_name() })).expect("the task runs")
}

/// The thread `join`'s first closure runs on, called here.
fn join_runs_on() -> String {
    bwos::join(thread_name, || ()).0
}

/// The thread a task spawned through `Handle::current()` runs on.
fn current_handle_runs_on() -> String {
    let handle = Handle::current();
    bwos::block_on(handle.spawn(async { thread_name() })).expect("the task runs")
}

fn assert_on(what: &str, thread: &str, prefix: &str) {
    assert!(
        thread.starts_with(prefix),
        "{what} ran on {thread:?}, expected a thread of {prefix}*"
    );
}

fn assert_traits<T: Clone + Send + Sync + UnwindSafe + RefUnwindSafe>() {}
fn assert_unwind_safe<T: UnwindSafe + RefUnwindSafe>() {}

/// A compile test as much as a run: `catch_unwind(|| pool.block_on(..))`
/// needs `ThreadPool: RefUnwindSafe`, and `Handle` and `AbortHandle` have
/// their bounds. The pool is used again after the caught panic.
#[test]
fn a_pool_and_its_handle_are_unwind_safe() {
    assert_traits::<Handle>();
    assert_unwind_safe::<ThreadPool>();
    assert_traits::<AbortHandle>();
    watchdog("a_pool_and_its_handle_are_unwind_safe", || {
        let pool = named_pool("unwind-", 1);
        let caught = panic::catch_unwind(|| pool.block_on(async { panic!("in block_on") }));
        assert_eq!(panic_message(&caught.unwrap_err()), "in block_on");
        let handle = pool.handle();
        let caught = panic::catch_unwind(|| handle.block_on(async { panic!("in a handle") }));
        assert_eq!(panic_message(&caught.unwrap_err()), "in a handle");
        assert_eq!(pool.block_on(async { 7 }), 7);
        assert_eq!(pool.install(|| bwos::join(|| 1, || 2)), (1, 2));
    });
}

// Mutation caught: `current::with_current_pool_if_any` (which
// `with_current_pool` is built on) without its look at the entered pools
// (`context::current`): the blocking thread's and the `block_on` caller's
// handles are the global pool's.
#[test]
fn handle_current_is_the_pool_of_each_kind_of_thread() {
    watchdog("handle_current_is_the_pool_of_each_kind_of_thread", || {
        let pool = named_pool("current-", 2);
        // A worker.
        let on_worker = pool.install(Handle::current);
        assert_on(
            "a worker's handle's task",
            &spawn_on(&on_worker),
            "current-",
        );
        // A blocking thread of the pool.
        let on_blocking = pool
            .block_on(pool.spawn_blocking(Handle::current))
            .expect("the closure runs");
        assert_on(
            "a blocking thread's handle's task",
            &spawn_on(&on_blocking),
            "current-",
        );
        // A thread outside the pools, in the pool's `block_on`.
        let in_block_on = std::thread::spawn({
            let handle = pool.handle();
            move || handle.block_on(async { Handle::current() })
        })
        .join()
        .unwrap();
        assert_on(
            "a block_on caller's handle's task",
            &spawn_on(&in_block_on),
            "current-",
        );
        // `block_in_place`'s closure, moved off its worker.
        let in_place = pool.install(|| bwos::task::block_in_place(Handle::current));
        assert_on(
            "block_in_place's handle's task",
            &spawn_on(&in_place),
            "current-",
        );
        // A plain thread: the global pool.
        let plain = std::thread::spawn(Handle::current).join().unwrap();
        assert_on("a plain thread's handle's task", &spawn_on(&plain), GLOBAL);
        assert!(format!("{plain:?}").contains("Handle"));
        // The global pool's counters can be read.
        let stats = Handle::current().stats();
        assert!(stats.wakeups <= stats.sleeps);
    });
}

/// The thread a task spawned through `handle` runs on.
fn spawn_on(handle: &Handle) -> String {
    handle
        .block_on(handle.spawn(async { thread_name() }))
        .expect("the task runs")
}

/// What a test sequence does with enter guards.
#[derive(Debug, Clone)]
enum Op {
    /// Enter pool `i` (a new guard, the newest).
    Enter(usize),
    /// Drop the newest guard.
    DropNewest,
    /// Drop the guard at this position (modulo the live guards), oldest
    /// first: out of order unless it is the newest.
    DropAt(usize),
}

fn arb_ops(pools: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..pools).prop_map(Op::Enter),
        1 => Just(Op::DropNewest),
        1 => any::<usize>().prop_map(Op::DropAt),
    ];
    prop::collection::vec(op, 1..12)
}

/// Runs `ops` on the calling thread over `handles` (named `prefixes`),
/// checking after each one where `task::spawn`, `join` and
/// `Handle::current` go: to the pool of the newest live guard, or to
/// `base` (the calling worker's pool, or the global pool) without one. On
/// a worker of `own` (an index into `handles`), the worker is hidden
/// exactly while the newest guard is another pool's.
fn run_ops(ops: &[Op], handles: &[Handle], prefixes: &[&str], base: &str, own: Option<usize>) {
    let mut live: Vec<(usize, EnterGuard<'_>)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Enter(pool) => live.push((pool, handles[pool].enter())),
            Op::DropNewest => drop(live.pop()),
            Op::DropAt(position) if !live.is_empty() => {
                let position = position % live.len();
                drop(live.remove(position));
            }
            Op::DropAt(_) => {}
        }
        let newest = live.last().map(|&(pool, _)| pool);
        let expected = newest.map_or(base, |pool| prefixes[pool]);
        let context = format!("after step {step} ({op:?}) of {ops:?}");
        assert_on(
            &format!("task::spawn {context}"),
            &spawn_runs_on(),
            expected,
        );
        assert_on(&format!("join {context}"), &join_runs_on(), expected);
        assert_on(
            &format!("Handle::current {context}"),
            &current_handle_runs_on(),
            expected,
        );
        if let Some(own) = own {
            let shown = newest.is_none_or(|pool| pool == own);
            assert_eq!(
                bwos::current_thread_index().is_some(),
                shown,
                "the worker is hidden exactly while another pool is entered, {context}"
            );
        }
    }
    // The rest drop oldest first: out of order again.
    while !live.is_empty() {
        drop(live.remove(0));
    }
    assert_on("task::spawn after every guard", &spawn_runs_on(), base);
    assert_on("join after every guard", &join_runs_on(), base);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    // Mutations caught: `context::leave` removing the newest entry instead
    // of its own (an out-of-order drop leaves the wrong pool entered), and
    // without its `hide_unless_in` (the worker stays hidden after the
    // other pool is left: `current_thread_index` is `None`).
    /// Guards nest and may drop in any order, on a plain thread and on a
    /// worker: `task::spawn`, `join` and `Handle::current` always go to the
    /// pool of the newest guard still alive, else to the thread's own.
    #[test]
    fn enter_guards_route_the_free_functions_to_the_newest_pool(
        plain in arb_ops(3),
        on_worker in arb_ops(4),
    ) {
        watchdog("enter_guards_route_the_free_functions_to_the_newest_pool", || {
            let pools = [
                named_pool("nest-a-", 1),
                named_pool("nest-b-", 2),
                named_pool("nest-c-", 1),
                named_pool("nest-w-", 2),
            ];
            let handles: Vec<Handle> = pools.iter().map(ThreadPool::handle).collect();
            let prefixes = ["nest-a-", "nest-b-", "nest-c-", "nest-w-"];
            run_ops(&plain, &handles[..3], &prefixes[..3], GLOBAL, None);
            // The fourth pool's worker, which may also enter its own pool.
            pools[3].install(|| run_ops(&on_worker, &handles, &prefixes, "nest-w-", Some(3)));
        });
    }
}

// Mutations caught: `block_on_in` entering its pool around the whole loop
// (the worker is hidden while it waits too, so its own task never runs:
// the watchdog fails the test), and `WorkerThread::hide_unless_in` as a
// no-op (the task spawned in the poll goes to the worker's own pool).
/// `other.block_on` on a worker: the future's tasks and joins go to
/// `other` (as its docs say), and the worker runs its own pool's work
/// while it waits between polls.
#[test]
fn block_on_for_another_pool_on_a_worker_uses_that_pool_while_it_polls() {
    watchdog(
        "block_on_for_another_pool_on_a_worker_uses_that_pool_while_it_polls",
        || {
            let own = named_pool("bo-own-", 1);
            let other = named_pool("bo-other-", 2);
            let (spawned, joined, own_task) = own.install(|| {
                // Queued on this worker (its pool has one): it can only
                // run if the worker runs its own work while `other`'s
                // `block_on` waits for it.
                let own_task = bwos::task::spawn(async { thread_name() });
                let (spawned, joined, own_task) = other.block_on(async {
                    let spawned = bwos::task::spawn(async { thread_name() }).await.unwrap();
                    let joined = bwos::join(thread_name, || ()).0;
                    (spawned, joined, own_task.await.unwrap())
                });
                assert!(bwos::current_thread_index().is_some(), "the worker is back");
                (spawned, joined, own_task)
            });
            assert_on("a task spawned in other.block_on", &spawned, "bo-other-");
            assert_on("a join in other.block_on", &joined, "bo-other-");
            assert_on("the worker's own task", &own_task, "bo-own-");
        },
    );
}

// Mutation caught: `WorkerThread::hide_unless_in` as a no-op (a worker
// never hidden): the guard for the other pool changes nothing on a
// worker, its spawn and its join stay on the worker's pool.
/// On a worker, a guard for another pool sends `spawn`, `spawn_blocking`,
/// `join` and `scope` there; the worker is itself again once it drops.
#[test]
fn a_worker_that_enters_another_pool_works_for_it_until_the_guard_drops() {
    watchdog(
        "a_worker_that_enters_another_pool_works_for_it_until_the_guard_drops",
        || {
            let own = named_pool("we-own-", 2);
            let other = named_pool("we-other-", 2);
            let handle = other.handle();
            own.install(|| {
                let index = bwos::current_thread_index();
                assert!(index.is_some());
                {
                    let _guard = handle.enter();
                    assert_eq!(bwos::current_thread_index(), None);
                    assert_on("spawn", &spawn_runs_on(), "we-other-");
                    assert_on("join", &join_runs_on(), "we-other-");
                    let mut in_scope = String::new();
                    bwos::scope(|scope| scope.spawn(|_| in_scope = thread_name()));
                    assert_on("a scope's spawn", &in_scope, "we-other-");
                    let blocking = bwos::task::spawn_blocking(Handle::current);
                    let blocking = bwos::block_on(blocking).unwrap();
                    assert_on("spawn_blocking's pool", &spawn_on(&blocking), "we-other-");
                    assert_eq!(bwos::current_num_threads(), 2);
                }
                assert_eq!(bwos::current_thread_index(), index);
                assert_on("spawn after the guard", &spawn_runs_on(), "we-own-");
                assert_on("join after the guard", &join_runs_on(), "we-own-");
            });
        },
    );
}

// Mutation caught: `CoreLatch::wait` blocking a hidden worker as a plain
// thread (`wait_off_the_pools` as `wait_blocking`): the pool's one worker
// waits for its own work, which only it can run (the watchdog fails the
// test).
/// A worker that entered another pool still runs its own pool's work
/// while it waits: explicit calls into its own pool (a one-worker pool
/// here) complete.
#[test]
fn a_hidden_worker_runs_its_own_work_while_it_waits() {
    watchdog("a_hidden_worker_runs_its_own_work_while_it_waits", || {
        let own = named_pool("hw-own-", 1);
        let other = named_pool("hw-other-", 1);
        let handle = other.handle();
        let (installed, spawned, joined) = own.install(|| {
            let _guard = handle.enter();
            // Injected into `own`, whose one worker is this thread.
            let installed = own.install(thread_name);
            // Polled for `own` (the task goes to this worker's queue),
            // waited for as a hidden worker.
            let spawned =
                own.block_on(async { bwos::task::spawn(async { thread_name() }).await.unwrap() });
            // Runs on `other`; meanwhile this thread serves `own`.
            let joined = bwos::join(thread_name, || ()).0;
            (installed, spawned, joined)
        });
        assert_on("own.install", &installed, "hw-own-");
        assert_on("a task of own.block_on", &spawned, "hw-own-");
        assert_on("join under the guard", &joined, "hw-other-");
    });
}

// Mutation caught: `inject::in_worker_injected`'s job finding its worker
// with `with_current` instead of `with_own` (on a worker hidden for good,
// `install` panics "injected jobs run on workers of their registry").
/// A guard leaked on a worker leaves that worker working for the other
/// pool; its own pool still runs its work and stops when dropped.
#[test]
fn a_guard_leaked_on_a_worker_leaves_both_pools_working() {
    watchdog(
        "a_guard_leaked_on_a_worker_leaves_both_pools_working",
        || {
            let own = named_pool("leak-own-", 2);
            let other = named_pool("leak-other-", 1);
            let handle = other.handle();
            own.broadcast(|_| std::mem::forget(handle.enter()));
            // Every worker of `own` is hidden now, yet its queues are served.
            let sum: u64 = own.install(|| (0..100u64).map(|i| bwos::join(|| i, || 1).0).sum());
            assert_eq!(sum, 4950);
            assert_eq!(own.block_on(own.spawn_task(async { 5 })).unwrap(), 5);
            drop(own);
            assert_eq!(other.block_on(async { bwos::current_num_threads() }), 1);
        },
    );
}

// Mutation caught: `Handle::block_on` without its shutdown check (the
// sleep's own shutdown panic comes instead, without the handle's words).
/// A handle outlives its pool: spawns are cancelled, `block_on` panics
/// saying why, the counters stay readable, entering still works.
#[test]
fn a_handle_to_a_dropped_pool_cancels_spawns_and_refuses_block_on() {
    watchdog(
        "a_handle_to_a_dropped_pool_cancels_spawns_and_refuses_block_on",
        || {
            let pool = named_pool("dropped-", 2);
            let handle = pool.handle();
            assert_eq!(handle.block_on(handle.spawn(async { 1 })).unwrap(), 1);
            drop(pool);
            let task = handle.spawn(async { 2 });
            assert!(bwos::block_on(task).unwrap_err().is_cancelled());
            let closure = handle.spawn_blocking(|| 3);
            assert!(bwos::block_on(closure).unwrap_err().is_cancelled());
            let refused = panic::catch_unwind(AssertUnwindSafe(|| {
                // Made in the poll: the dead pool's timer.
                handle.block_on(async { bwos::time::sleep(Duration::from_secs(3600)).await })
            }));
            let payload = refused.unwrap_err();
            let message = panic_message(&payload);
            assert!(
                message.contains("Handle::block_on on a pool that has shut down"),
                "{message}"
            );
            let _ = handle.stats();
            assert!(format!("{handle:?}").contains("shut_down: true"));
            let guard = handle.enter();
            let task = bwos::task::spawn(async { 4 });
            drop(guard);
            assert!(bwos::block_on(task).unwrap_err().is_cancelled());
        },
    );
}

// Mutation caught: `Timers::close` not called when the workers stop: the
// sleep's poller waits forever (the watchdog fails the test).
/// A sleep made under a guard belongs to the entered pool: when that pool
/// shuts down while another thread waits on it, the waiter is woken and
/// the sleep panics instead of waiting an hour (a global pool's sleep
/// would just wait).
#[test]
fn a_sleep_of_a_pool_that_shuts_down_panics_instead_of_hanging() {
    watchdog(
        "a_sleep_of_a_pool_that_shuts_down_panics_instead_of_hanging",
        || {
            let pool = named_pool("sleep-", 1);
            let handle = pool.handle();
            let sleep = {
                let _guard = handle.enter();
                bwos::time::sleep(Duration::from_secs(3600))
            };
            let (polled, has_polled) = std::sync::mpsc::channel();
            let waiter = std::thread::spawn(move || {
                let mut sleep = Box::pin(sleep);
                // An executor that is not bwos: only the pool's timers
                // can end this wait.
                futures_lite::future::block_on(async {
                    assert!(
                        futures_lite::future::poll_once(sleep.as_mut())
                            .await
                            .is_none()
                    );
                    polled.send(()).unwrap();
                    sleep.await;
                });
            });
            has_polled.recv().unwrap();
            drop(pool);
            let outcome = waiter.join().expect_err("the sleep panics");
            let message = panic_message(&outcome);
            assert!(message.contains("shut down"), "{message}");
        },
    );
}

/// `hyper::Executor::new(handle)` spawns on the handle's pool from any
/// thread; `Executor::default()` on the current pool.
#[cfg(feature = "hyper")]
#[test]
fn a_hyper_executor_with_a_handle_spawns_on_its_pool() {
    use hyper::rt::Executor as _;
    watchdog("a_hyper_executor_with_a_handle_spawns_on_its_pool", || {
        let pool = named_pool("hyper-exec-", 1);
        let (sender, ran_on) = std::sync::mpsc::channel();
        let executor = bwos::hyper::Executor::new(pool.handle());
        let on_pool = sender.clone();
        std::thread::spawn(move || {
            executor.execute(async move { on_pool.send(thread_name()).unwrap() });
        })
        .join()
        .unwrap();
        assert_on(
            "Executor::new(handle)'s task",
            &ran_on.recv().unwrap(),
            "hyper-exec-",
        );
        // The default executor, on a plain thread: the global pool.
        bwos::hyper::Executor::default()
            .execute(async move { sender.send(thread_name()).unwrap() });
        assert_on(
            "Executor::default()'s task",
            &ran_on.recv().unwrap(),
            GLOBAL,
        );
    });
}
