//! Helpers shared by the tests of the bwos crates.
//!
//! * [`watchdog`]: every test that waits on other threads runs its body
//!   under one, so a deadlock or a lost wake-up fails the test run with a
//!   message naming the test instead of hanging until CI kills it.
//! * [`panic_message`]: the text of a panic payload.
//! * [`proc`]: what Linux's `/proc` says about the process (threads,
//!   descriptors, thread names, memory, CPU time, TCP sockets), for the
//!   tests that check nothing leaks and the soak's sampler.
//! * [`Rng`]: the one seeded generator of the tests (fastrand's): a
//!   failing run repeats with the same seed.
//!
//! A pool of `n` workers for bwos's tests is `pool(n)` of
//! `crates/bwos/tests/common/mod.rs`, not here: this crate does not depend
//! on `bwos`, so that `bwos`'s own unit tests, which use the watchdog, link
//! one `bwos` (not a second copy through this crate), and the queue crate's
//! tests, its loom models and Miri runs do not build the runtime.
//!
//! ```
//! let sum = bwos_testkit::watchdog("doc_example", || {
//!     let handle = std::thread::spawn(|| 20 + 22);
//!     handle.join().unwrap()
//! });
//! assert_eq!(sum, 42);
//! ```

pub mod proc;

/// The tests' pseudo-random generator, seeded:
/// `Rng::with_seed(seed)`, then `u64(..)`, `usize(..n)`, `bool()`. A
/// test that draws its inputs from one repeats them on every run, so a
/// failure reproduces; the tests use fastrand's (wyrand) rather than a copy
/// of their own.
///
/// ```
/// let mut a = bwos_testkit::Rng::with_seed(7);
/// let mut b = bwos_testkit::Rng::with_seed(7);
/// assert_eq!(a.u64(..1000), b.u64(..1000));
/// ```
pub use fastrand::Rng;

use std::any::Any;
use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// The environment variable that overrides [`DEFAULT_TIMEOUT`], in seconds.
pub const TIMEOUT_ENV: &str = "BWOS_TEST_TIMEOUT_SECS";

/// How long a test body may run before the watchdog declares it hung:
/// generous, so a slow or oversubscribed machine never trips it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The timeout in force: [`TIMEOUT_ENV`] if set to a whole number of
/// seconds, else [`DEFAULT_TIMEOUT`].
///
/// # Panics
/// If [`TIMEOUT_ENV`] is set but is not a whole number of seconds.
pub fn timeout() -> Duration {
    match std::env::var(TIMEOUT_ENV) {
        Ok(value) => Duration::from_secs(value.trim().parse().unwrap_or_else(|_| {
            panic!("{TIMEOUT_ENV}={value:?} is not a whole number of seconds")
        })),
        Err(_) => DEFAULT_TIMEOUT,
    }
}

/// Runs `body` on the calling thread and returns its result; if it has not
/// returned (or unwound) after [`timeout()`], prints a message naming
/// `test` and ends the test process with exit code 101 (a failed run).
///
/// A hung thread cannot be made to fail from outside, and leaving it
/// running would leave the whole test binary hanging, so the watchdog ends
/// the process: the message on stderr says which test hung and for how
/// long. A panic in `body` passes through unchanged.
pub fn watchdog<R>(test: &str, body: impl FnOnce() -> R) -> R {
    // Dropped on return and on unwind alike.
    let guard = watchdog_guard(test);
    let result = body();
    drop(guard);
    result
}

/// The [`watchdog`] as a guard, for a body that is not a closure (an
/// `async fn` test under `#[bwos::test]`, whose body runs inside
/// `block_on`): the watch ends when the guard is dropped, on return and
/// on unwind alike; if it lives longer than [`timeout()`], the test
/// process ends with a message naming `test`.
///
/// ```
/// let _watchdog = bwos_testkit::watchdog_guard("doc_example_guard");
/// let handle = std::thread::spawn(|| 20 + 22);
/// assert_eq!(handle.join().unwrap(), 42);
/// ```
pub fn watchdog_guard(test: &str) -> WatchdogGuard {
    let limit = timeout();
    let (done, finished) = mpsc::channel::<()>();
    let name = test.to_owned();
    let watcher = thread::Builder::new()
        .name(format!("watchdog-{test}"))
        .spawn(move || match finished.recv_timeout(limit) {
            // The body returned or unwound: its guard dropped the sender.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {}
            Err(RecvTimeoutError::Timeout) => {
                // Straight to the stderr handle: the test harness captures
                // `eprintln!` (in threads the test spawned, too) and would
                // lose the message when the process exits.
                let _ = writeln!(
                    std::io::stderr(),
                    "watchdog: test `{name}` did not finish within {} s \
                     (a deadlock or a lost wake-up?); ending the test process \
                     ({TIMEOUT_ENV} sets the limit)",
                    limit.as_secs()
                );
                std::process::exit(101);
            }
        })
        .expect("the watchdog thread starts");
    WatchdogGuard {
        done: Some(done),
        watcher: Some(watcher),
    }
}

/// Stops the watcher when the body is over, however it ended: see
/// [`watchdog_guard`].
#[must_use = "the watch ends when the guard is dropped"]
pub struct WatchdogGuard {
    done: Option<mpsc::Sender<()>>,
    watcher: Option<thread::JoinHandle<()>>,
}

impl Drop for WatchdogGuard {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

/// The message of a panic payload from `panic!` with a literal or a format
/// string, or `"<not a string>"`.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
/// assert_eq!(bwos_testkit::panic_message(&payload), "boom 1");
/// ```
pub fn panic_message(payload: &Box<dyn Any + Send>) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<not a string>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_body_result_and_passes_panics_through() {
        assert_eq!(watchdog("value", || 7), 7);
        let payload = std::panic::catch_unwind(|| watchdog("panics", || panic!("inner")))
            .expect_err("the panic passes through");
        assert_eq!(panic_message(&payload), "inner");
    }

    /// Runs this test binary again with a 1-second limit on a body that
    /// never finishes: the child must fail with the watchdog's message.
    #[test]
    fn a_hanging_body_fails_the_process_with_a_message() {
        if std::env::var_os("BWOS_TESTKIT_HANG_CHILD").is_some() {
            watchdog("hangs_forever", || {
                loop {
                    thread::park();
                }
            });
        }
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::a_hanging_body_fails_the_process_with_a_message",
                "--nocapture",
            ])
            .env("BWOS_TESTKIT_HANG_CHILD", "1")
            .env(TIMEOUT_ENV, "1")
            .output()
            .expect("the test binary runs again");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(101), "stderr: {stderr}");
        assert!(
            stderr.contains("test `hangs_forever` did not finish within 1 s"),
            "stderr: {stderr}"
        );
    }
}
