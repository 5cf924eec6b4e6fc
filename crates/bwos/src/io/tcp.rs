//! TCP sockets driven by the pool's workers.

use std::future::poll_fn;
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use mio::event::Source;

use super::driver::{IoDriver, shut_down_error};
use super::readiness::{Direction, Readiness};
use crate::sched::registry::Registry;

/// A mio socket registered with a pool's driver; deregistered on drop.
struct Registered<S: Source> {
    source: S,
    key: usize,
    readiness: Arc<Readiness>,
    driver: Arc<IoDriver>,
}

impl<S: Source> Registered<S> {
    /// Registers `source` with the driver of the current pool (the calling
    /// worker's, else the global pool's).
    fn new(source: S) -> io::Result<Self> {
        let driver = Registry::with_current(|registry| IoDriver::of(registry))?;
        Self::with_driver(source, driver)
    }

    fn with_driver(mut source: S, driver: Arc<IoDriver>) -> io::Result<Self> {
        let (key, readiness) = driver.register(&mut source)?;
        Ok(Registered {
            source,
            key,
            readiness,
            driver,
        })
    }

    /// Runs `operation` once the socket is ready in `direction`, again
    /// after every `WouldBlock`. A result for which `drained` says the
    /// kernel's buffer was emptied (a short read) or filled (a short
    /// write) clears the readiness too, saving the `WouldBlock` attempt
    /// that would otherwise follow.
    fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut operation: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        loop {
            let event = ready!(self.readiness.poll_ready(cx, direction));
            if event.is_shut_down() {
                return Poll::Ready(Err(shut_down_error()));
            }
            match operation(&self.source) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.readiness.clear(event);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                result => {
                    if result.as_ref().is_ok_and(&drained) {
                        self.readiness.clear(event);
                    }
                    return Poll::Ready(result);
                }
            }
        }
    }
}

impl<S: Source> Drop for Registered<S> {
    fn drop(&mut self) {
        self.driver.deregister(self.key, &mut self.source);
    }
}

/// A TCP listener whose `accept` waits as a task, driven by the pool's
/// workers (no reactor thread).
///
/// A socket belongs to the pool it was created on (the calling worker's,
/// or the global pool outside any pool); any thread or executor may
/// await it. When that pool shuts down, waiting and later operations
/// fail with an error.
///
/// ```
/// use futures_lite::{AsyncReadExt as _, AsyncWriteExt as _};
///
/// let echoed = bwos::block_on(async {
///     let listener = bwos::io::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
///     let address = listener.local_addr()?;
///     let server = bwos::task::spawn(async move {
///         let (mut stream, _) = listener.accept().await?;
///         let mut buffer = [0u8; 5];
///         stream.read_exact(&mut buffer).await?;
///         stream.write_all(&buffer).await?;
///         Ok::<_, std::io::Error>(())
///     });
///     let mut client = bwos::io::TcpStream::connect(address).await?;
///     client.write_all(b"hello").await?;
///     let mut reply = [0u8; 5];
///     client.read_exact(&mut reply).await?;
///     server.await.expect("the server task")?;
///     Ok::<_, std::io::Error>(reply)
/// })?;
/// assert_eq!(&echoed, b"hello");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpListener {
    io: Registered<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `address` (port 0: a free port; see
    /// [`local_addr`](Self::local_addr)).
    pub fn bind(address: SocketAddr) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: Registered::new(mio::net::TcpListener::bind(address)?)?,
        })
    }

    /// Takes over a bound standard listener (made non-blocking here).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            io: Registered::new(mio::net::TcpListener::from_std(listener))?,
        })
    }

    /// The next connection and its peer's address. The stream is driven
    /// by the same pool as the listener.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// [`accept`](Self::accept) as a poll function.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let (stream, peer) = ready!(self.io.poll_io(
            cx,
            Direction::Read,
            mio::net::TcpListener::accept,
            |_| false
        ))?;
        let stream = Registered::with_driver(stream, Arc::clone(&self.io.driver))?;
        Poll::Ready(Ok((TcpStream { io: stream }, peer)))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.local_addr()
    }
}

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

/// A TCP connection implementing `futures_io::AsyncRead` and `AsyncWrite`
/// (also through `&TcpStream`, so one task may read while another
/// writes), driven by the pool's workers.
///
/// Readiness is tracked edge-triggered: a read or write that comes back
/// short marks the socket not ready without asking the kernel again.
/// See [`TcpListener`] for which pool drives it and for an example.
pub struct TcpStream {
    io: Registered<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `address`.
    pub async fn connect(address: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream {
            io: Registered::new(mio::net::TcpStream::connect(address)?)?,
        };
        // A non-blocking connect completes when the socket becomes
        // writable; `take_error` and `peer_addr` then tell how it ended.
        poll_fn(|cx| {
            stream.io.poll_io(
                cx,
                Direction::Write,
                |socket| {
                    if let Some(error) = socket.take_error()? {
                        return Err(error);
                    }
                    match socket.peer_addr() {
                        Ok(_) => Ok(()),
                        Err(error) if error.kind() == io::ErrorKind::NotConnected => {
                            Err(io::ErrorKind::WouldBlock.into())
                        }
                        Err(error) => Err(error),
                    }
                },
                |_| false,
            )
        })
        .await?;
        Ok(stream)
    }

    /// Takes over a connected standard stream (made non-blocking here).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(TcpStream {
            io: Registered::new(mio::net::TcpStream::from_std(stream))?,
        })
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.peer_addr()
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.local_addr()
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.source.set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.source.nodelay()
    }

    /// Shuts down the reading, writing or both halves.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.source.shutdown(how)
    }

    fn poll_read_inner(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.io.poll_io(
            cx,
            Direction::Read,
            |mut socket| socket.read(buf),
            // 0 is the end of the stream, not a drained buffer.
            |&n| n > 0 && n < len,
        )
    }

    fn poll_write_inner(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.io.poll_io(
            cx,
            Direction::Write,
            |mut socket| socket.write(buf),
            |&n| n > 0 && n < len,
        )
    }

    fn poll_write_vectored_inner(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        self.io.poll_io(
            cx,
            Direction::Write,
            |mut socket| socket.write_vectored(bufs),
            |&n| n > 0 && n < len,
        )
    }
}

impl std::fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

impl futures_io::AsyncRead for &TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_inner(cx, buf)
    }
}

impl futures_io::AsyncWrite for &TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_inner(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_inner(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the kernel.
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown(Shutdown::Write))
    }
}

// The owned stream delegates to the shared one.
impl futures_io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self).poll_read(cx, buf)
    }
}

impl futures_io::AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self).poll_close(cx)
    }
}
