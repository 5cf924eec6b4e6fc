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
