//! Sockets whose readiness the pool's own workers poll: async networking
//! on the pool without a reactor thread, named and shaped as tokio's
//! `net`.
//!
//! [`TcpListener`], [`TcpStream`] (with [`split`](TcpStream::split) and
//! [`into_split`](TcpStream::into_split) halves), [`UdpSocket`], and on
//! unix [`UnixListener`] and [`UnixStream`]. The streams implement the
//! `futures-io` traits always and tokio's `AsyncRead`/`AsyncWrite` with
//! the `tokio-io` feature (a trait-only dependency on tokio, no runtime),
//! so `hyper_util::rt::TokioIo` and the tokio-io ecosystem take them.
//! Addresses are anything [`ToSocketAddrs`]: host names are resolved on a
//! blocking thread (`task::spawn_blocking`).
//!
//! Readiness comes from a `mio` poll per pool (`epoll` on Linux), which
//! idle workers block in instead of their futex (with the next timer's
//! deadline as its timeout), and which busy workers poll every 61 tasks;
//! see `driver.rs` for the protocol. A socket's wake-ups therefore arrive
//! on a worker of its pool and queue its task there, the way tokio's I/O
//! driver works, and an idle pool with open sockets sleeps in
//! `epoll_wait`, using no CPU.

mod addr;
pub(crate) mod driver;
mod readiness;
pub(crate) mod registered;
mod split;
mod tcp;
mod udp;
#[cfg(unix)]
mod unix;

pub use addr::ToSocketAddrs;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;
#[cfg(unix)]
pub use unix::{UnixListener, UnixStream};
