//! **hot socket**: on a runtime of one worker (bwos: a pool of one
//! thread; tokio: the multi-thread runtime with one worker, the scheduler
//! of the other workloads, with its LIFO slot and its coop budget), one
//! task echoes a loopback TCP connection that is always readable, and
//! [`COUNTERS`] tasks count (each loops `yield_now().await; count += 1`).
//!
//! Two plain threads outside the runtime keep the connection hot: one
//! writes 64 KiB chunks without pause (so a read always finds bytes),
//! one drains the echo (so a write rarely waits); the echo moves at most
//! 1 KiB at a time, so that the pumps stay ahead of it. The same threads load
//! both runtimes. The echo task runs for `--window-ms` by its own clock.
//! Measured: the counters' total steps during that window (a task that
//! never yields to them leaves them at zero), the echo's throughput, and
//! how often its reads and writes returned `Pending` (each is a point
//! where the worker may run the counters: a would-block, a full send
//! buffer, or tokio's coop budget spent).

use std::io::{Read as _, Write as _};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};

use super::runtimes::LatencyRuntime;
use super::{Metrics, SETTLE};

/// Tasks that count while the echo runs.
pub const COUNTERS: usize = 10;
/// The most the echo reads at once: small messages, so that the echo
/// costs system calls rather than copies, and the pump threads (which
/// move 64 and 256 KiB at a time) stay far ahead of it: reads find
/// bytes and writes find room.
const ECHO_CHUNK: usize = 1024;
/// The socket buffers asked for.
const BUFFER: usize = 4 << 20;
/// Counter steps taken before the echo starts: they are all running.
const WARM_STEPS: u64 = 1_000;

/// One measurement on a fresh 1-worker `R`, the echo running for `window`.
pub fn run<R: LatencyRuntime>(window: Duration) -> std::io::Result<Metrics> {
    let rt = R::start(1);
    std::thread::sleep(SETTLE);
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let pump = std::net::TcpStream::connect(listener.local_addr()?)?;
    let (echoed, _) = listener.accept()?;
    // Deep buffers both ways (the kernel caps them at its maxima): the
    // pumps stay milliseconds ahead of the echo even when the machine's
    // other work takes their core for a while.
    for socket in [&pump, &echoed] {
        let socket = socket2::SockRef::from(socket);
        socket.set_recv_buffer_size(BUFFER)?;
        socket.set_send_buffer_size(BUFFER)?;
    }
    let mut drain = pump.try_clone()?;
    let mut feed = pump;
    // Both threads end when the echo task drops its socket: writes fail
    // (EPIPE; Rust ignores SIGPIPE) and reads see the end or a reset.
    let feeder = std::thread::spawn(move || {
        let chunk = vec![0x5a_u8; 64 * 1024];
        while feed.write_all(&chunk).is_ok() {}
    });
    let drainer = std::thread::spawn(move || {
        let mut buffer = vec![0_u8; 256 * 1024];
        while matches!(drain.read(&mut buffer), Ok(n) if n > 0) {}
    });

    let steps = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    for _ in 0..COUNTERS {
        let (steps, stop) = (Arc::clone(&steps), Arc::clone(&stop));
        rt.spawn_detached(async move {
            // Relaxed: the counters publish nothing but their counts.
            while !stop.load(Ordering::Relaxed) {
                R::yield_now().await;
                steps.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let waited = Instant::now();
    // The counters run, and the feeder has had time to fill the buffers.
    std::thread::sleep(Duration::from_millis(20));
    while steps.load(Ordering::Relaxed) < WARM_STEPS && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let counted = Arc::clone(&steps);
    let stopping = Arc::clone(&stop);
    let echo = rt.block_on(async move {
        let outcome = async {
            let mut stream = Counted {
                inner: R::stream(echoed)?,
                pending: 0,
            };
            let mut buffer = vec![0_u8; ECHO_CHUNK];
            let start = Instant::now();
            let before = counted.load(Ordering::Relaxed);
            let mut bytes = 0_u64;
            while start.elapsed() < window {
                let n = stream.read(&mut buffer).await?;
                if n == 0 {
                    return Err(std::io::Error::other("hot socket: the pump closed"));
                }
                stream.write_all(&buffer[..n]).await?;
                bytes += n as u64;
            }
            let progress = counted.load(Ordering::Relaxed) - before;
            Ok::<_, std::io::Error>((bytes, progress, stream.pending, start.elapsed()))
        }
        .await;
        stopping.store(true, Ordering::Relaxed);
        outcome
    });
    stop.store(true, Ordering::Relaxed);
    drop(rt);
    let _ = feeder.join();
    let _ = drainer.join();
    let (bytes, progress, pending, elapsed) = echo?;
    Ok(vec![
        ("counter_steps", progress as f64),
        ("echo_mb_per_s", bytes as f64 / 1e6 / elapsed.as_secs_f64()),
        ("echo_pending", pending as f64),
    ])
}

/// A stream that counts the polls of its reads and writes that returned
/// `Pending`.
struct Counted<S> {
    inner: S,
    pending: u64,
}

impl<S> Counted<S> {
    fn count<T>(&mut self, poll: Poll<T>) -> Poll<T> {
        if poll.is_pending() {
            self.pending += 1;
        }
        poll
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.count(poll)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count(poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
