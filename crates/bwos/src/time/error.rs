//! The timers' errors.

use std::fmt;
use std::io;

/// A [`timeout`](super::timeout) whose deadline came before its future
/// finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl Elapsed {
    pub(crate) fn new() -> Self {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// An `io::Error` of kind [`TimedOut`](io::ErrorKind::TimedOut), so that
/// `?` works in functions that return `io::Result`.
impl From<Elapsed> for io::Error {
    fn from(elapsed: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, elapsed)
    }
}
