//! Why a pool could not be built: [`ThreadPoolBuildError`].

use std::fmt;
use std::io;

use super::num_threads::{MAX_THREADS, NUM_THREADS_ENV};

/// Why a pool could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum ThreadPoolBuildError {
    /// `BWOS_NUM_THREADS` is not a number.
    InvalidEnvironment {
        /// The variable's value.
        value: String,
    },
    /// More threads than [`MAX_THREADS`] were asked for.
    TooManyThreads {
        /// The number asked for.
        requested: usize,
    },
    /// The global pool exists already.
    GlobalPoolAlreadyInitialized,
    /// [`ThreadPoolBuilder::use_current_thread`](crate::ThreadPoolBuilder::use_current_thread) on a thread that is a
    /// worker of a pool already.
    CurrentThreadAlreadyInPool,
    /// Building the global pool on first use failed earlier; the failure is
    /// kept and the build not retried.
    GlobalPoolBuildFailed {
        /// The message of the original build error.
        reason: String,
    },
    /// The operating system refused to start a thread.
    Spawn(io::Error),
    /// An option has a value it does not allow.
    InvalidOption {
        /// The builder method.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// A worker could not be pinned to a CPU
    /// ([`ThreadPoolBuilder::pin_threads`](crate::ThreadPoolBuilder::pin_threads)).
    Pin {
        /// The worker's index.
        worker: usize,
        /// Why the OS refused.
        error: io::Error,
    },
}

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadPoolBuildError::InvalidEnvironment { value } => write!(
                f,
                "{NUM_THREADS_ENV}={value:?} is not a number of threads: \
                 use a whole number from 1 to {MAX_THREADS}, or 0 for one thread per core"
            ),
            ThreadPoolBuildError::TooManyThreads { requested } => write!(
                f,
                "a pool of {requested} threads was requested; at most {MAX_THREADS} are allowed"
            ),
            ThreadPoolBuildError::GlobalPoolAlreadyInitialized => f.write_str(
                "the global thread pool exists already (build_global must come before \
                 the first use of the free functions)",
            ),
            ThreadPoolBuildError::CurrentThreadAlreadyInPool => f.write_str(
                "use_current_thread was asked on a thread that is already a worker of a \
                 pool; build the pool from a thread outside every pool",
            ),
            ThreadPoolBuildError::GlobalPoolBuildFailed { reason } => write!(
                f,
                "the global thread pool failed to build on first use ({reason}); the \
                 failure is kept and the build is not retried: fix the cause and restart, \
                 or call build_global before the first use of the free functions"
            ),
            ThreadPoolBuildError::Spawn(error) => {
                write!(f, "could not start a worker thread: {error}")
            }
            ThreadPoolBuildError::InvalidOption {
                option,
                value,
                allowed,
            } => write!(
                f,
                "ThreadPoolBuilder::{option}({value}) is invalid: {allowed}"
            ),
            ThreadPoolBuildError::Pin { worker, error } => {
                write!(f, "could not pin worker {worker} to a CPU: {error}")
            }
        }
    }
}

impl std::error::Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ThreadPoolBuildError::Spawn(error) | ThreadPoolBuildError::Pin { error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }
}
