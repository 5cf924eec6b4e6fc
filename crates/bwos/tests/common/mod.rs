//! Helpers shared by the integration tests (each test file uses a subset).
#![allow(dead_code)]

use bwos::{ThreadPool, ThreadPoolBuilder};

/// A pool of `threads` workers.
pub fn pool(threads: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Waits (blocking the thread) until `done` or 10 s; returns `done()`.
/// The bound makes a regression fail with a message instead of hanging.
pub fn wait_until(done: impl Fn() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    done()
}

/// Recursive Fibonacci through `bwos::join`.
pub fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// Recursive Fibonacci without the runtime, to check `fib` against.
pub fn fib_serial(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_serial(n - 1) + fib_serial(n - 2)
    }
}

/// The `/proc/self/task/<tid>` directories of the `expected` threads of
/// this process whose name starts with `prefix`.
///
/// One listing of `/proc/self/task` is not a snapshot: Linux ends it early
/// when a thread it has just listed exits meanwhile (any other test's
/// thread can), so a listing may miss threads that are alive. The threads
/// looked for here are alive for the whole call, so the listing is repeated
/// until it shows exactly `expected` of them; callers then read each
/// thread's files by path, which does not depend on a listing.
///
/// # Panics
///
/// If no listing within 30 s shows exactly `expected` such threads.
#[cfg(target_os = "linux")]
pub fn tasks_named(prefix: &str, expected: usize) -> Vec<std::path::PathBuf> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let tasks: Vec<std::path::PathBuf> = std::fs::read_dir("/proc/self/task")
            .expect("Linux /proc")
            .filter_map(|task| {
                let path = task.ok()?.path();
                let name = std::fs::read_to_string(path.join("comm")).ok()?;
                name.starts_with(prefix).then_some(path)
            })
            .collect();
        if tasks.len() == expected {
            return tasks;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/proc/self/task listed {} threads named {prefix}* for 30 s, expected {expected}",
            tasks.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
