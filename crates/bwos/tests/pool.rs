//! Pools: install across pools, spawn, shutdown with pending work, thread
//! indices and names, builder errors.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use bwos::{ThreadPoolBuildError, ThreadPoolBuilder};
use common::fib;

mod common;

#[test]
fn install_from_a_thread_of_another_pool() {
    let outer = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let inner = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let (outer_threads, inner_threads, value) = outer.install(|| {
        let outer_threads = bwos::current_num_threads();
        let (inner_threads, value) = inner.install(|| (bwos::current_num_threads(), fib(18)));
        (outer_threads, inner_threads, value)
    });
    assert_eq!((outer_threads, inner_threads, value), (2, 3, 2584));
    // Joins in the outer pool whose halves install into the inner one.
    let (a, b) =
        outer.install(|| bwos::join(|| inner.install(|| fib(15)), || inner.install(|| fib(16))));
    assert_eq!((a, b), (610, 987));
}

#[test]
fn install_on_own_pool_runs_inline() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let same = pool.install(|| {
        let index = bwos::current_thread_index();
        pool.install(|| bwos::current_thread_index() == index)
    });
    assert!(same);
}

#[test]
fn thread_names_and_indices() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("tested-{i}"))
        .build()
        .unwrap();
    let (name, index) = pool.install(|| {
        (
            std::thread::current().name().map(str::to_owned),
            bwos::current_thread_index(),
        )
    });
    let index = index.expect("install runs on a worker");
    assert!(index < 3);
    assert_eq!(name.as_deref(), Some(format!("tested-{index}").as_str()));
    assert!(pool.install(|| pool.current_thread_index()).is_some());
    assert_eq!(pool.current_thread_index(), None, "not from outside");
    assert_eq!(pool.current_num_threads(), 3);
}

#[test]
fn spawned_jobs_run_and_dropping_the_pool_waits_for_them() {
    let done = Arc::new(AtomicUsize::new(0));
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for _ in 0..20 {
        let done = Arc::clone(&done);
        pool.spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            // Spawns from spawned jobs keep the pool alive too.
            let inner = Arc::clone(&done);
            bwos::spawn(move || {
                inner.fetch_add(1, Ordering::SeqCst);
            });
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    drop(pool);
    assert_eq!(
        done.load(Ordering::SeqCst),
        40,
        "drop returned before the spawned work finished"
    );
}

#[test]
fn dropping_a_pool_joins_its_threads() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("short-lived-{i}"))
        .build()
        .unwrap();
    let (sender, receiver) = mpsc::channel();
    pool.install(|| {
        bwos::scope(|s| {
            for _ in 0..2 {
                let sender = sender.clone();
                s.spawn(move |_| sender.send(std::thread::current().id()).unwrap());
            }
        })
    });
    drop(sender);
    assert_eq!(receiver.iter().count(), 2);
    assert_eq!(threads_named("short-lived-"), 2);
    drop(pool);
    // Joined threads have exited: they are gone from /proc/self/task.
    assert_eq!(
        threads_named("short-lived-"),
        0,
        "drop returned before joining"
    );
}

/// How many threads of this process have a name starting with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("Linux /proc")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

#[test]
fn a_pool_dropped_on_its_own_thread_stops_without_deadlock() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (sender, receiver) = mpsc::channel();
    let pool = Arc::new(pool);
    let inside = Arc::clone(&pool);
    pool.spawn(move || {
        // The last handle may go here, on the pool's own thread.
        drop(inside);
        sender.send(()).unwrap();
    });
    drop(pool);
    receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the spawned job ran");
}

#[test]
fn spawn_panics_go_to_the_handler() {
    let (sender, receiver) = mpsc::channel::<String>();
    let sender = std::sync::Mutex::new(sender);
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .panic_handler(move |payload| {
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .unwrap_or("?")
                .to_owned();
            sender.lock().unwrap().send(message).unwrap();
        })
        .build()
        .unwrap();
    pool.spawn(|| panic!("detached"));
    assert_eq!(
        receiver.recv_timeout(Duration::from_secs(60)).unwrap(),
        "detached"
    );
    assert_eq!(pool.install(|| fib(10)), 55, "the pool still works");
}

#[test]
fn too_many_threads_is_a_typed_error() {
    let error = ThreadPoolBuilder::new()
        .num_threads(bwos::MAX_THREADS + 1)
        .build()
        .unwrap_err();
    assert!(
        matches!(error, ThreadPoolBuildError::TooManyThreads { requested } if requested == bwos::MAX_THREADS + 1)
    );
    let message = error.to_string();
    assert!(message.contains("at most 65536"), "{message}");
}

#[test]
fn build_global_after_first_use_is_refused() {
    assert_eq!(bwos::join(|| 1, || 2), (1, 2));
    let error = ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .unwrap_err();
    assert!(matches!(
        error,
        ThreadPoolBuildError::GlobalPoolAlreadyInitialized
    ));
}
