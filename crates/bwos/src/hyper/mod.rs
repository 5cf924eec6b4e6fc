//! hyper's runtime traits on bwos (the `hyper` feature): [`Executor`]
//! spawns hyper's background tasks (HTTP/2's connection and stream tasks)
//! as tasks of the current pool, or of a given pool
//! ([`Executor::new`] with a [`Handle`]), [`Timer`] gives hyper
//! `bwos::time` sleeps (header-read timeouts, HTTP/2 keep-alive). Both are
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

use crate::Handle;

/// Runs hyper's background tasks as tasks of a pool:
/// `hyper::rt::Executor` for every `Send` future.
///
/// [`Executor::default()`] spawns on the current pool at each call (the
/// calling worker's, else the pool the thread entered, as in a
/// `block_on`, else the global pool); [`Executor::new`] on the pool of a
/// [`Handle`], wherever hyper calls it from: a client connection driven
/// off the pools keeps its tasks on that pool.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(2).build()?;
/// let on_pool = bwos::hyper::Executor::new(pool.handle());
/// let current = bwos::hyper::Executor::default();
/// # let _ = (on_pool, current);
/// # Ok::<(), bwos::ThreadPoolBuildError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Executor {
    /// The pool, or `None` for the current one.
    pool: Option<Handle>,
}

impl Executor {
    /// An executor that spawns hyper's tasks on `handle`'s pool. After
    /// that pool shut down, they are cancelled (see [`Handle`]).
    pub fn new(handle: Handle) -> Self {
        Executor { pool: Some(handle) }
    }
}

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // Detached: hyper keeps track of its tasks through their futures.
        match &self.pool {
            Some(handle) => drop(handle.spawn(future)),
            None => drop(crate::task::spawn(future)),
        }
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
    /// The current pool's clock, so that hyper's deadlines (header reads,
    /// keep-alives) and the sleeps that end them read the same clock, also
    /// while a test paused it (feature `test-util`).
    fn now(&self) -> Instant {
        crate::time::Instant::now().into_std()
    }

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
