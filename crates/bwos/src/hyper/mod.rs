//! hyper's runtime traits on bwos (the `hyper` feature): [`Executor`]
//! spawns hyper's background tasks (HTTP/2's connection and stream tasks)
//! as tasks of the current pool, [`Timer`] gives hyper `bwos::time`
//! sleeps (header-read timeouts, HTTP/2 keep-alive). Both are
//! `Default + Clone`, as hyper-util's `TokioExecutor` and `TokioTimer`.
//!
//! With the `tokio-io` feature, `hyper_util::rt::TokioIo` wraps a
//! `bwos::net::TcpStream` for hyper's I/O traits; the `http_server`
//! example serves HTTP/1 and HTTP/2 on one port this way.
//!
//! ```text
//! hyper::server::conn::http2::Builder::new(bwos::hyper::Executor::default())
//!     .timer(bwos::hyper::Timer::default())
//!     .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
//!     .await
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Runs hyper's background tasks as tasks of the current pool (the
/// calling worker's, or the pool a `block_on` polls for, else the global
/// pool): `hyper::rt::Executor` for every `Send` future.
#[derive(Debug, Default, Clone, Copy)]
pub struct Executor {
    _private: (),
}

impl Executor {
    /// The executor (the same as `Executor::default()`).
    pub fn new() -> Self {
        Executor::default()
    }
}

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // Detached: hyper keeps track of its tasks through their futures.
        drop(crate::task::spawn(future));
    }
}

/// hyper's timer: `bwos::time` sleeps of the current pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct Timer {
    _private: (),
}

impl Timer {
    /// The timer (the same as `Timer::default()`).
    pub fn new() -> Self {
        Timer::default()
    }
}

/// A `bwos::time::Sleep` as a `hyper::rt::Sleep`.
struct HyperSleep(crate::time::Sleep);

impl Future for HyperSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for HyperSleep {}

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HyperSleep(crate::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HyperSleep(crate::time::sleep_until(deadline)))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<HyperSleep>() {
            // Moves the timer in the wheel instead of making a new one.
            Some(mut ours) => Pin::new(&mut ours.0).reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
