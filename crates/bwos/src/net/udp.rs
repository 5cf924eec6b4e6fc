//! UDP sockets driven by the pool's workers.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use super::addr::{ToSocketAddrs, each_addr, resolve};
use super::readiness::Direction;
use super::registered::Registered;

/// A UDP socket: datagrams to and from any peer ([`send_to`](Self::send_to),
/// [`recv_from`](Self::recv_from)), or to and from the one peer it is
/// [`connect`](Self::connect)ed to ([`send`](Self::send),
/// [`recv`](Self::recv)). All methods take `&self`: one task may send while
/// another receives. Driven by the pool it was created on, as
/// [`TcpListener`](super::TcpListener).
///
/// ```
/// use bwos::net::UdpSocket;
///
/// let reply = bwos::block_on(async {
///     let server = UdpSocket::bind("127.0.0.1:0").await?;
///     let client = UdpSocket::bind("127.0.0.1:0").await?;
///     client.connect(server.local_addr()?).await?;
///     client.send(b"ping").await?;
///     let mut buffer = [0u8; 16];
///     let (n, from) = server.recv_from(&mut buffer).await?;
///     server.send_to(&buffer[..n], from).await?;
///     let n = client.recv(&mut buffer).await?;
///     Ok::<_, std::io::Error>(buffer[..n].to_vec())
/// })?;
/// assert_eq!(reply, b"ping");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UdpSocket {
    io: Registered<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds to `address` (port 0: a free port); a name is resolved on a
    /// blocking thread and each address tried in turn.
    pub async fn bind(address: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let addrs = resolve(&address).await?;
        each_addr(addrs, |addr| async move {
            Ok(UdpSocket {
                io: Registered::new(mio::net::UdpSocket::bind(addr)?)?,
            })
        })
        .await
    }

    /// Takes over a bound standard socket (made non-blocking here).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            io: Registered::new(mio::net::UdpSocket::from_std(socket))?,
        })
    }

    /// Sets the only peer `send` sends to and `recv` receives from (other
    /// senders' datagrams are dropped by the kernel).
    pub async fn connect(&self, address: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = resolve(&address).await?;
        each_addr(addrs, |addr| async move { self.io.source.connect(addr) }).await
    }

    /// Sends `buf` as one datagram to the connected peer; how many bytes
    /// went.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// [`send`](Self::send) as a poll function.
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io
            .poll_io(cx, Direction::Write, |socket| socket.send(buf), |_| false)
    }

    /// Receives one datagram from the connected peer into `buf` (the rest
    /// of a longer datagram is dropped); its length.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_recv(cx, buf)).await
    }

    /// [`recv`](Self::recv) as a poll function.
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io
            .poll_io(cx, Direction::Read, |socket| socket.recv(buf), |_| false)
    }

    /// Sends `buf` as one datagram to `target` (resolved on a blocking
    /// thread if it is a name; the first address is used).
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let addrs = resolve(&target).await?;
        let target = addrs[0];
        poll_fn(|cx| self.poll_send_to(cx, buf, target)).await
    }

    /// [`send_to`](Self::send_to) as a poll function.
    pub fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        self.io.poll_io(
            cx,
            Direction::Write,
            |socket| socket.send_to(buf, target),
            |_| false,
        )
    }

    /// Receives one datagram into `buf`; its length and its sender.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.poll_recv_from(cx, buf)).await
    }

    /// [`recv_from`](Self::recv_from) as a poll function.
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        self.io.poll_io(
            cx,
            Direction::Read,
            |socket| socket.recv_from(buf),
            |_| false,
        )
    }

    /// This socket's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.local_addr()
    }

    /// The connected peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source.peer_addr()
    }

    /// Whether datagrams may go to broadcast addresses.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.io.source.set_broadcast(on)
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}
