//! A mio socket registered with its pool's I/O driver: what every socket
//! type of `net` is built on.

use std::io::{self, IoSlice, Read, Write};
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use mio::event::Source;

use super::driver::{IoDriver, shut_down_error};
use super::readiness::{Direction, Readiness};
use crate::sched::coop;
use crate::sched::current::with_current_pool;

/// A mio socket registered with a pool's driver; deregistered on drop.
pub(crate) struct Registered<S: Source> {
    pub(crate) source: S,
    key: usize,
    readiness: Arc<Readiness>,
    pub(crate) driver: Arc<IoDriver>,
}

impl<S: Source> Registered<S> {
    /// Registers `source` with the driver of the current pool (the calling
    /// worker's, else the entered pool's, else the global pool's).
    pub(crate) fn new(source: S) -> io::Result<Self> {
        let driver = with_current_pool(|registry| IoDriver::of(registry))?;
        Self::with_driver(source, driver)
    }

    pub(crate) fn with_driver(mut source: S, driver: Arc<IoDriver>) -> io::Result<Self> {
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
    ///
    /// Every socket operation of `net` (reads, writes, accepts, connects,
    /// sends, receives) comes through here, so this is where they spend
    /// the cooperative budget (`sched/coop.rs`): a result spends a unit,
    /// and with the budget spent the call wakes the task and returns
    /// `Pending` without trying the socket.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut operation: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        coop::poll_budgeted(cx, |cx| {
            loop {
                let event = ready!(self.readiness.poll_ready(cx, direction));
                if event.is_shut_down() {
                    return Poll::Ready(Err(shut_down_error()));
                }
                match operation(&self.source) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        self.readiness.clear_would_block(event);
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
        })
    }
}

#[cfg(test)]
impl<S: Source> Registered<S> {
    /// The driver's slab key of the socket.
    pub(crate) fn key(&self) -> usize {
        self.key
    }

    /// The socket's readiness.
    pub(crate) fn readiness(&self) -> &Readiness {
        &self.readiness
    }
}

impl<S: Source> Drop for Registered<S> {
    fn drop(&mut self) {
        self.driver.deregister(self.key, &mut self.source);
    }
}

/// Byte streams (TCP, Unix): reads and writes that clear the readiness
/// when the kernel's buffer was drained or filled.
impl<S: Source> Registered<S>
where
    for<'a> &'a S: Read + Write,
{
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.poll_io(
            cx,
            Direction::Read,
            |mut socket| socket.read(buf),
            // 0 is the end of the stream, not a drained buffer.
            |&n| n > 0 && n < len,
        )
    }

    /// [`poll_read`](Self::poll_read) into memory that may be
    /// uninitialized: `read(2)` on the socket's descriptor writes into it
    /// directly. On `Ready(Ok(n))`, the first `n` bytes of `buf` are
    /// initialized.
    #[cfg(all(feature = "tokio-io", unix))]
    pub(crate) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>>
    where
        S: std::os::fd::AsRawFd,
    {
        let len = buf.len();
        let pointer = buf.as_mut_ptr().cast::<libc::c_void>();
        self.poll_io(
            cx,
            Direction::Read,
            |socket| {
                // SAFETY: the descriptor is the socket's own, open while
                // `self` lives; `pointer` and `len` describe `buf`, which
                // is writable for this whole call, and the kernel writes at
                // most `len` bytes into it. No reference to uninitialized
                // bytes is made.
                let read = unsafe { libc::read(socket.as_raw_fd(), pointer, len) };
                // A negative return is -1 with the error in errno.
                usize::try_from(read).map_err(|_| io::Error::last_os_error())
            },
            // 0 is the end of the stream, not a drained buffer.
            |&n| n > 0 && n < len,
        )
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.poll_io(
            cx,
            Direction::Write,
            |mut socket| socket.write(buf),
            |&n| n > 0 && n < len,
        )
    }

    pub(crate) fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        self.poll_io(
            cx,
            Direction::Write,
            |mut socket| socket.write_vectored(bufs),
            |&n| n > 0 && n < len,
        )
    }
}

/// Implements `futures_io::AsyncRead` (and, with the `tokio-io` feature,
/// tokio's `AsyncRead`) for a stream type: `$get` turns `&Self` (bound to
/// `$this`) into its `&Registered<_>`.
macro_rules! stream_read {
    ($ty:ty, $this:ident => $get:expr) => {
        impl futures_io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $get.poll_read(cx, buf)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $this = &*self;
                // The kernel writes into the unfilled part as it is,
                // initialized or not: no zeroing per read (hyper hands
                // over a fresh, uninitialized `ReadBuf` for every read;
                // zeroing it was 10% of a server's time at 1000
                // connections).
                #[cfg(unix)]
                let n = {
                    // SAFETY: nothing below de-initializes bytes of `buf`:
                    // `poll_read_uninit` only lets the kernel write into
                    // them.
                    let unfilled = unsafe { buf.unfilled_mut() };
                    let n = std::task::ready!($get.poll_read_uninit(cx, unfilled))?;
                    // SAFETY: the kernel initialized the first `n` bytes of
                    // the unfilled part (`poll_read_uninit`'s contract).
                    unsafe { buf.assume_init(n) };
                    n
                };
                #[cfg(not(unix))]
                let n = std::task::ready!($get.poll_read(cx, buf.initialize_unfilled()))?;
                buf.advance(n);
                std::task::Poll::Ready(Ok(()))
            }
        }
    };
}

/// Implements `futures_io::AsyncWrite` (and, with the `tokio-io` feature,
/// tokio's `AsyncWrite`) for a stream type: `$get` as for `stream_read`,
/// `$shutdown` shuts down its writing direction (close, shutdown).
macro_rules! stream_write {
    ($ty:ty, $this:ident => $get:expr, $shutdown:expr) => {
        impl futures_io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $get.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $get.poll_write_vectored(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Writes go straight to the kernel.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $this = &*self;
                std::task::Poll::Ready($shutdown)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $get.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let $this = &*self;
                $get.poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let $this = &*self;
                std::task::Poll::Ready($shutdown)
            }
        }
    };
}

/// Both: a whole stream.
macro_rules! byte_stream_io {
    ($ty:ty, $this:ident => $get:expr, $shutdown:expr) => {
        $crate::net::registered::stream_read!($ty, $this => $get);
        $crate::net::registered::stream_write!($ty, $this => $get, $shutdown);
    };
}

pub(crate) use {byte_stream_io, stream_read, stream_write};
