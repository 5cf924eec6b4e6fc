//! Unix domain stream sockets driven by the pool's workers.

use std::future::poll_fn;
use std::io;
use std::net::Shutdown;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::readiness::Direction;
use super::registered::{Registered, byte_stream_io};

/// A Unix domain socket listener (unix only), as [`TcpListener`](super::TcpListener)
/// for a filesystem path.
///
/// ```
/// use futures_lite::{AsyncReadExt as _, AsyncWriteExt as _};
/// use bwos::net::{UnixListener, UnixStream};
///
/// let dir = std::env::temp_dir().join(format!("bwos-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("echo.sock");
/// let _ = std::fs::remove_file(&path);
/// let reply = bwos::block_on(async {
///     let listener = UnixListener::bind(&path)?;
///     let server = bwos::task::spawn(async move {
///         let (mut stream, _) = listener.accept().await?;
///         let mut buffer = [0u8; 4];
///         stream.read_exact(&mut buffer).await?;
///         stream.write_all(&buffer).await?;
///         Ok::<_, std::io::Error>(())
///     });
///     let mut client = UnixStream::connect(&path).await?;
///     client.write_all(b"pong").await?;
///     let mut reply = [0u8; 4];
///     client.read_exact(&mut reply).await?;
///     server.await.expect("the server task")?;
///     Ok::<_, std::io::Error>(reply)
/// })?;
/// assert_eq!(&reply, b"pong");
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixListener {
    io: Registered<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to `path` (which must not exist yet). Synchronous: binding a
    /// path does not wait on the network.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let path = path.as_ref();
        let listener = mio::net::UnixListener::bind(path).map_err(|error| {
            io::Error::new(error.kind(), format!("{}: {error}", path.display()))
        })?;
        Ok(UnixListener {
            io: Registered::new(listener)?,
        })
    }

    /// Takes over a bound standard listener (made non-blocking here).
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener {
            io: Registered::new(mio::net::UnixListener::from_std(listener))?,
        })
    }

    /// The next connection and its peer's address.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// [`accept`](Self::accept) as a poll function.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        let (stream, peer) = ready!(self.io.poll_io(
            cx,
            Direction::Read,
            mio::net::UnixListener::accept,
            |_| false
        ))?;
        let stream = Registered::with_driver(stream, Arc::clone(&self.io.driver))?;
        Poll::Ready(Ok((UnixStream { io: stream }, peer)))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.local_addr()
    }
}

impl std::fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

/// A Unix domain stream connection (unix only), with the same traits as
/// [`TcpStream`](super::TcpStream) (`&UnixStream` too).
pub struct UnixStream {
    io: Registered<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the listener at `path`.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let path = path.as_ref();
        let stream = mio::net::UnixStream::connect(path).map_err(|error| {
            io::Error::new(error.kind(), format!("{}: {error}", path.display()))
        })?;
        let stream = UnixStream {
            io: Registered::new(stream)?,
        };
        // As for TCP: writable once connected, then `take_error` tells.
        poll_fn(|cx| {
            stream.io.poll_io(
                cx,
                Direction::Write,
                |socket| match socket.take_error()? {
                    Some(error) => Err(error),
                    None => Ok(()),
                },
                |_| false,
            )
        })
        .await?;
        Ok(stream)
    }

    /// Takes over a connected standard stream (made non-blocking here).
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        Ok(UnixStream {
            io: Registered::new(mio::net::UnixStream::from_std(stream))?,
        })
    }

    /// A connected pair of streams.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            UnixStream {
                io: Registered::new(a)?,
            },
            UnixStream {
                io: Registered::new(b)?,
            },
        ))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.peer_addr()
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.local_addr()
    }

    /// Shuts down the reading, writing or both halves.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.source.shutdown(how)
    }
}

impl std::fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

byte_stream_io!(UnixStream, this => this.io, this.shutdown(Shutdown::Write));
byte_stream_io!(&UnixStream, this => this.io, this.shutdown(Shutdown::Write));
