//! What the latency workloads need from a runtime beyond
//! [`AsyncRuntime`]: spawning from inside a task with the runtime's own
//! free function (as user code does), its sleep and interval, and taking
//! over a connected standard socket. Written once for bwos and tokio.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::r#async::runtime::{AsyncRuntime, Bwos, Tokio};

/// A runtime the latency workloads run on.
pub trait LatencyRuntime: AsyncRuntime {
    /// The runtime's socket type (both implement tokio's I/O traits:
    /// bwos's with its `tokio-io` feature).
    type Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static;

    /// Spawns `future` from inside a task of the runtime with its free
    /// function (`bwos::task::spawn`, `tokio::spawn`): the spawn lands in
    /// the calling worker's queue. The returned future gives the output.
    fn spawn_here<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Runs `future` to completion from inside a task of the runtime, the
    /// way the runtime allows: `bwos::block_on`; tokio's `block_in_place`
    /// around `Handle::block_on` (which panics inside a task alone).
    fn block_on_here<F: Future>(future: F) -> F::Output;

    /// The runtime's sleep.
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send;

    /// Ticks an interval of `period` with `MissedTickBehavior::Skip`
    /// forever, pushing the instant at which the task saw each tick.
    fn count_ticks(
        period: Duration,
        seen: Arc<Mutex<Vec<Instant>>>,
    ) -> impl Future<Output = ()> + Send + 'static;

    /// Takes over a connected standard stream; call it inside a task of
    /// the runtime (a socket belongs to the runtime it is made in).
    fn stream(stream: std::net::TcpStream) -> std::io::Result<Self::Stream>;
}

impl LatencyRuntime for Bwos {
    type Stream = bwos::net::TcpStream;

    fn spawn_here<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // Spawned now, not when the returned future is first polled.
        let handle = bwos::task::spawn(future);
        async move { handle.await.expect("a benchmark task failed") }
    }

    fn block_on_here<F: Future>(future: F) -> F::Output {
        bwos::block_on(future)
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        bwos::time::sleep(duration)
    }

    async fn count_ticks(period: Duration, seen: Arc<Mutex<Vec<Instant>>>) {
        let mut interval = bwos::time::interval(period);
        interval.set_missed_tick_behavior(bwos::time::MissedTickBehavior::Skip);
        loop {
            interval.tick().await;
            seen.lock().expect("tick list").push(Instant::now());
        }
    }

    fn stream(stream: std::net::TcpStream) -> std::io::Result<Self::Stream> {
        bwos::net::TcpStream::from_std(stream)
    }
}

impl LatencyRuntime for Tokio {
    type Stream = tokio::net::TcpStream;

    fn spawn_here<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = tokio::spawn(future);
        async move { handle.await.expect("a benchmark task failed") }
    }

    fn block_on_here<F: Future>(future: F) -> F::Output {
        let handle = tokio::runtime::Handle::current();
        tokio::task::block_in_place(|| handle.block_on(future))
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }

    async fn count_ticks(period: Duration, seen: Arc<Mutex<Vec<Instant>>>) {
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            interval.tick().await;
            seen.lock().expect("tick list").push(Instant::now());
        }
    }

    fn stream(stream: std::net::TcpStream) -> std::io::Result<Self::Stream> {
        // tokio takes the socket as it is: it must be non-blocking already.
        stream.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(stream)
    }
}
