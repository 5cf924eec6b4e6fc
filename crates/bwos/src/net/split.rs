//! The halves of a [`TcpStream`]: borrowed ([`TcpStream::split`]) and
//! owned ([`TcpStream::into_split`]).

use std::fmt;
use std::net::Shutdown;
use std::sync::Arc;

use super::registered::{stream_read, stream_write};
use super::tcp::TcpStream;

/// The reading half of a borrowed [`TcpStream`].
#[derive(Debug)]
pub struct ReadHalf<'a>(pub(crate) &'a TcpStream);

/// The writing half of a borrowed [`TcpStream`]; closing it shuts the
/// writing direction down.
#[derive(Debug)]
pub struct WriteHalf<'a>(pub(crate) &'a TcpStream);

/// The reading half of a [`TcpStream`] split with
/// [`into_split`](TcpStream::into_split).
#[derive(Debug)]
pub struct OwnedReadHalf(pub(crate) Arc<TcpStream>);

/// The writing half of a [`TcpStream`] split with
/// [`into_split`](TcpStream::into_split). Dropping it shuts the writing
/// direction down, so the peer reads the end of the stream.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    stream: Arc<TcpStream>,
    /// Cleared by `reunite`, which hands the stream back whole.
    shutdown_on_drop: bool,
}

impl OwnedWriteHalf {
    pub(crate) fn new(stream: Arc<TcpStream>) -> Self {
        OwnedWriteHalf {
            stream,
            shutdown_on_drop: true,
        }
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // The peer may have gone already; nothing to report then.
            let _ = self.stream.shutdown(Shutdown::Write);
        }
    }
}

/// [`OwnedReadHalf::reunite`] with halves of two different streams: both
/// come back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the two halves belong to different TCP streams")
    }
}

impl std::error::Error for ReuniteError {}

impl OwnedReadHalf {
    /// The stream again, from its two halves (no shutdown); an error with
    /// both halves if they are not of the same stream.
    pub fn reunite(self, mut write: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.0, &write.stream) {
            return Err(ReuniteError(self, write));
        }
        write.shutdown_on_drop = false;
        drop(write);
        Ok(Arc::try_unwrap(self.0).expect("the two halves held the only references"))
    }

    /// The stream's peer address.
    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.0.peer_addr()
    }
}

impl OwnedWriteHalf {
    /// The stream's peer address.
    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.stream.peer_addr()
    }
}

stream_read!(ReadHalf<'_>, this => this.0.io);
stream_write!(WriteHalf<'_>, this => this.0.io, this.0.shutdown(Shutdown::Write));
stream_read!(OwnedReadHalf, this => this.0.io);
stream_write!(OwnedWriteHalf, this => this.stream.io, this.stream.shutdown(Shutdown::Write));
