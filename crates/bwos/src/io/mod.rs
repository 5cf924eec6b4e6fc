//! Sockets whose readiness the pool's own workers poll: async I/O on the
//! pool without a reactor thread.
//!
//! [`TcpListener`] and [`TcpStream`] implement the `futures-io` traits
//! (hyper serves them through an adapter such as `smol-hyper`'s
//! `FuturesIo`). Their readiness comes from a `mio` poll per pool
//! (`epoll` on Linux), which idle workers block in instead of their
//! futex, and which busy workers poll every 61 tasks; see
//! `driver.rs` for the protocol. A socket's wake-ups therefore arrive on
//! a worker of its pool and queue its task there, the way tokio's I/O
//! driver works, and an idle pool with open sockets sleeps in
//! `epoll_wait`, using no CPU.
//!
//! Other I/O sources and timers work on the pool through any
//! executor-independent reactor (`async-io`, for one); only the sockets
//! of this module are driven by the workers.

pub(crate) mod driver;
mod readiness;
mod tcp;

pub use tcp::{TcpListener, TcpStream};
