//! TCP sockets driven by the pool's workers.

use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::addr::{ToSocketAddrs, each_addr, resolve};
use super::readiness::Direction;
use super::registered::{Registered, byte_stream_io};
use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};

/// A TCP listener whose `accept` waits as a task, driven by the pool's
/// workers (no reactor thread).
///
/// A socket belongs to the pool it was created on (the calling worker's,
/// the pool a `block_on` polls for or an `EnterGuard` entered, or the
/// global pool); any thread or
/// executor may await it. When that pool shuts down, waiting and later
/// operations fail with an error.
///
/// `accept` returns the kernel's errors as they come: out of file
/// descriptors (`EMFILE`), the error comes back at once, without waiting
/// or retrying. A server should back off and accept again (the
/// `echo_server` example does).
///
/// ```
/// use futures_lite::{AsyncReadExt as _, AsyncWriteExt as _};
/// use bwos::net::{TcpListener, TcpStream};
///
/// let echoed = bwos::block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:0").await?;
///     let address = listener.local_addr()?;
///     let server = bwos::task::spawn(async move {
///         let (mut stream, _) = listener.accept().await?;
///         let mut buffer = [0u8; 5];
///         stream.read_exact(&mut buffer).await?;
///         stream.write_all(&buffer).await?;
///         Ok::<_, std::io::Error>(())
///     });
///     let mut client = TcpStream::connect(address).await?;
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
    /// [`local_addr`](Self::local_addr)); a name is resolved on a blocking
    /// thread and each of its addresses tried in turn. The error of a
    /// failed bind names the address (`127.0.0.1:80: Address already in
    /// use`).
    pub async fn bind(address: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let addrs = resolve(&address).await?;
        each_addr(addrs, |addr| async move {
            Ok(TcpListener {
                io: Registered::new(mio::net::TcpListener::bind(addr)?)?,
            })
        })
        .await
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
/// (and tokio's, with the `tokio-io` feature), driven by the pool's
/// workers. `&TcpStream` implements them too, and [`split`](Self::split)
/// and [`into_split`](Self::into_split) give halves, so one task may read
/// while another writes.
///
/// Readiness is tracked edge-triggered: a read or write that comes back
/// short marks the socket not ready without asking the kernel again.
/// See [`TcpListener`] for which pool drives it and for an example.
pub struct TcpStream {
    pub(crate) io: Registered<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `address`; a name is resolved on a blocking thread and
    /// each of its addresses tried in turn until one connects.
    pub async fn connect(address: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let addrs = resolve(&address).await?;
        each_addr(addrs, TcpStream::connect_addr).await
    }

    async fn connect_addr(address: SocketAddr) -> io::Result<TcpStream> {
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

    /// Borrowed halves: one task reads from the [`ReadHalf`] while another
    /// writes to the [`WriteHalf`].
    pub fn split(&self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf(self), WriteHalf(self))
    }

    /// Owned halves, for two tasks that each own one; dropping the
    /// [`OwnedWriteHalf`] shuts the writing direction down (tokio's rule),
    /// and [`OwnedReadHalf::reunite`] puts them back together.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let stream = Arc::new(self);
        (
            OwnedReadHalf(Arc::clone(&stream)),
            OwnedWriteHalf::new(stream),
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

byte_stream_io!(TcpStream, this => this.io, this.shutdown(Shutdown::Write));
byte_stream_io!(&TcpStream, this => this.io, this.shutdown(Shutdown::Write));
