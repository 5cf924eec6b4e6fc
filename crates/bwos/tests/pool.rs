//! Pools: install across pools, spawn, shutdown with pending work, thread
//! indices and names, builder errors, worker stack size.
#![cfg(not(bwos_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use bwos::{ThreadPoolBuildError, ThreadPoolBuilder};
use bwos_testkit::watchdog;
use common::fib;

mod common;

#[test]
fn install_from_a_thread_of_another_pool() {
    watchdog("install_from_a_thread_of_another_pool", || {
        let outer = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let inner = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (outer_threads, inner_threads, value) = outer.install(|| {
            let outer_threads = bwos::current_num_threads();
            let (inner_threads, value) = inner.install(|| (bwos::current_num_threads(), fib(18)));
            (outer_threads, inner_threads, value)
        });
        assert_eq!((outer_threads, inner_threads, value), (2, 3, 2584));
        // Joins in the outer pool whose halves install into the inner one.
        let (a, b) = outer
            .install(|| bwos::join(|| inner.install(|| fib(15)), || inner.install(|| fib(16))));
        assert_eq!((a, b), (610, 987));
    });
}

/// A worker of one pool that waits for an `install` into another pool
/// keeps running its own pool's work: here the inner job can only finish
/// once the outer pool's single worker has run `b` of its own join.
#[test]
fn a_worker_waiting_for_another_pool_runs_its_own_work() {
    watchdog(
        "a_worker_waiting_for_another_pool_runs_its_own_work",
        || {
            let outer = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let inner = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let flag = std::sync::atomic::AtomicBool::new(false);
            let outer_worker = outer.install(|| {
                let (waited, b_index) = bwos::join(
                    || {
                        inner.install(|| {
                            while !flag.load(Ordering::Acquire) {
                                std::thread::yield_now();
                            }
                        });
                        bwos::current_thread_index()
                    },
                    || {
                        flag.store(true, Ordering::Release);
                        bwos::current_thread_index()
                    },
                );
                assert_eq!(waited, b_index, "b ran on the outer pool's only worker");
                waited
            });
            assert_eq!(outer_worker, Some(0));
        },
    );
}

/// Work injected from outside while one worker is blocked is picked up by
/// the other worker.
#[test]
fn injected_work_is_picked_up_by_another_worker() {
    watchdog("injected_work_is_picked_up_by_another_worker", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (blocked_on, blocked_index) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        pool.spawn(move || {
            blocked_on.send(bwos::current_thread_index()).unwrap();
            released.recv().unwrap();
        });
        let blocked = blocked_index.recv().unwrap().expect("runs on a worker");
        let picked_up_by = pool.install(bwos::current_thread_index).expect("a worker");
        assert_ne!(
            picked_up_by, blocked,
            "the blocked worker cannot have run it"
        );
        release.send(()).unwrap();
    });
}

#[test]
fn install_on_own_pool_runs_inline() {
    watchdog("install_on_own_pool_runs_inline", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let same = pool.install(|| {
            let index = bwos::current_thread_index();
            pool.install(|| bwos::current_thread_index() == index)
        });
        assert!(same);
    });
}

#[test]
fn thread_names_and_indices() {
    watchdog("thread_names_and_indices", || {
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
    });
}

#[test]
fn spawned_jobs_run_and_dropping_the_pool_waits_for_them() {
    watchdog(
        "spawned_jobs_run_and_dropping_the_pool_waits_for_them",
        || {
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
        },
    );
}

/// Dropping a pool returns only after its threads have exited: each
/// worker runs a job that arms a thread-local whose destructor (which runs
/// when the thread exits) counts; after `drop`, both must have run.
#[test]
fn dropping_a_pool_joins_its_threads() {
    struct CountsExit(Arc<AtomicUsize>);
    impl Drop for CountsExit {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    thread_local! {
        static EXIT: std::cell::RefCell<Option<CountsExit>> = const { std::cell::RefCell::new(None) };
    }
    watchdog("dropping_a_pool_joins_its_threads", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("short-lived-{i}"))
            .build()
            .unwrap();
        let exited = Arc::new(AtomicUsize::new(0));
        // Two jobs that wait for each other: each worker runs one.
        let barrier = std::sync::Barrier::new(2);
        pool.scope(|s| {
            for _ in 0..2 {
                let (barrier, exited) = (&barrier, Arc::clone(&exited));
                s.spawn(move |_| {
                    EXIT.with(|exit| *exit.borrow_mut() = Some(CountsExit(exited)));
                    barrier.wait();
                });
            }
        });
        #[cfg(target_os = "linux")]
        let workers = bwos_testkit::proc::tasks_named("short-lived-", 2).unwrap();
        assert_eq!(exited.load(Ordering::SeqCst), 0);
        drop(pool);
        assert_eq!(
            exited.load(Ordering::SeqCst),
            2,
            "drop returned before both worker threads exited"
        );
        // The kernel's thread list may lag `pthread_join` by a moment:
        // wait for it, with a bound.
        #[cfg(target_os = "linux")]
        {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while workers.iter().any(|task| task.exists()) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "worker threads still listed in /proc/self/task 30 s after drop"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
}

#[test]
fn a_pool_dropped_on_its_own_thread_stops_without_deadlock() {
    watchdog(
        "a_pool_dropped_on_its_own_thread_stops_without_deadlock",
        || {
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
        },
    );
}

#[test]
fn spawn_panics_go_to_the_handler() {
    watchdog("spawn_panics_go_to_the_handler", || {
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
    });
}

#[test]
fn too_many_threads_is_a_typed_error() {
    watchdog("too_many_threads_is_a_typed_error", || {
        let error = ThreadPoolBuilder::new()
            .num_threads(bwos::MAX_THREADS + 1)
            .build()
            .unwrap_err();
        assert!(
            matches!(error, ThreadPoolBuildError::TooManyThreads { requested } if requested == bwos::MAX_THREADS + 1)
        );
        let message = error.to_string();
        assert!(message.contains("at most 65536"), "{message}");
    });
}

#[test]
fn build_global_after_first_use_is_refused() {
    watchdog("build_global_after_first_use_is_refused", || {
        assert_eq!(bwos::join(|| 1, || 2), (1, 2));
        let error = ThreadPoolBuilder::new()
            .num_threads(1)
            .build_global()
            .unwrap_err();
        assert!(matches!(
            error,
            ThreadPoolBuildError::GlobalPoolAlreadyInitialized
        ));
    });
}

/// A recursion with at least 1 KiB of stack per call, `depth` calls deep;
/// stores the address of the deepest frame's array in `bottom`.
fn deep(depth: u32, bottom: &mut usize) -> u64 {
    let frame = std::hint::black_box([depth as u8; 1024]);
    if depth == 0 {
        *bottom = std::hint::black_box(&frame) as *const [u8; 1024] as usize;
        return u64::from(frame[0]);
    }
    // black_box: keeps the recursion a recursion (no accumulator loop).
    std::hint::black_box(deep(depth - 1, bottom)) + u64::from(frame[1023])
}

/// The depth of `deep` that uses about `bytes` of stack, measured (frames
/// are larger in debug builds than in release builds).
fn depth_for(bytes: usize) -> u32 {
    const PROBE: u32 = 64;
    // A local, not `&0u8` (that would be promoted to a static).
    let marker = 0u8;
    let top = std::hint::black_box(&marker) as *const u8 as usize;
    let mut bottom = 0;
    deep(PROBE, &mut bottom);
    let per_call = top.abs_diff(bottom) / PROBE as usize;
    (bytes / per_call.max(1024)) as u32
}

/// Workers get the main thread's stack size by default: a recursion of
/// about 4 MiB (more than std's 2 MiB for spawned threads, less than the
/// usual 8 MiB main thread) runs on the pool. A stack overflow aborts the
/// process, so the recursion runs in a child process of this test binary
/// and the test checks how the child ended.
#[test]
fn a_recursion_that_fits_the_main_thread_fits_a_worker() {
    const CHILD: &str = "BWOS_TEST_DEEP_RECURSION_CHILD";
    const NAME: &str = "a_recursion_that_fits_the_main_thread_fits_a_worker";
    if std::env::var_os(CHILD).is_some() {
        let depth = depth_for(4 << 20);
        let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let sum = pool.install(|| deep(depth, &mut 0));
        let expected: u64 = (0..=depth).map(|d| u64::from(d as u8)).sum();
        assert_eq!(sum, expected);
        assert!(depth >= 100, "the probe measured {depth} calls for 4 MiB");
        println!("deep recursion done: {depth} calls");
        return;
    }
    watchdog(NAME, || {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env_remove("RUST_MIN_STACK")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("deep recursion done"),
            "the recursion did not finish on a worker ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    });
}
