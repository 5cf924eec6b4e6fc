//! The global pool the free functions use outside any pool: where it is
//! kept once built.
//!
//! It is built on first use by whoever looks for the current pool
//! (`current.rs`, with the default configuration), or earlier by
//! [`ThreadPoolBuilder::build_global`](crate::ThreadPoolBuilder::build_global).
//! If the build on first use fails (a bad `BWOS_NUM_THREADS`, the system
//! refusing threads), the failure is kept: the free functions have no
//! error channel, so that call and every later one panic with the error's
//! message, and the build is never tried again (a loop of failing thread
//! spawns helps nobody). `build_global` after such a failure returns
//! [`ThreadPoolBuildError::GlobalPoolBuildFailed`] with the same message.

use std::sync::{Arc, OnceLock};

use super::error::ThreadPoolBuildError;
use super::pool::ThreadPool;
use super::registry::Registry;

static GLOBAL: OnceLock<Result<ThreadPool, ThreadPoolBuildError>> = OnceLock::new();

/// The global pool's registry, built by `build` if this is the first use.
///
/// # Panics
/// If the global pool could not be built (now or on an earlier call), with
/// the build error's message.
pub(crate) fn registry(
    build: impl FnOnce() -> Result<ThreadPool, ThreadPoolBuildError>,
) -> &'static Arc<Registry> {
    match GLOBAL.get_or_init(build) {
        Ok(pool) => &pool.registry,
        Err(error) => panic!(
            "bwos: the global thread pool could not be built: {error} \
             (the build is not retried; call ThreadPoolBuilder::build_global \
             before the first use of the free functions to handle this error)"
        ),
    }
}

/// The global pool's registry if the pool has been built, without
/// building it.
#[cfg(feature = "test-util")]
pub(crate) fn registry_if_started() -> Option<&'static Arc<Registry>> {
    match GLOBAL.get() {
        Some(Ok(pool)) => Some(&pool.registry),
        _ => None,
    }
}

/// Builds the global pool with `build` unless it exists (or its build on
/// first use failed).
pub(crate) fn set(
    build: impl FnOnce() -> Result<ThreadPool, ThreadPoolBuildError>,
) -> Result<(), ThreadPoolBuildError> {
    if let Some(existing) = GLOBAL.get() {
        return Err(already_there(existing));
    }
    // A failure here is the caller's to handle: nothing is stored, so the
    // caller may try another configuration.
    let pool = build()?;
    // Lost a race with another initialisation: the new pool is dropped
    // (its threads are stopped and joined).
    GLOBAL
        .set(Ok(pool))
        .map_err(|_| already_there(GLOBAL.get().expect("set by the winner of the race")))
}

fn already_there(existing: &Result<ThreadPool, ThreadPoolBuildError>) -> ThreadPoolBuildError {
    match existing {
        Ok(_) => ThreadPoolBuildError::GlobalPoolAlreadyInitialized,
        Err(error) => ThreadPoolBuildError::GlobalPoolBuildFailed {
            reason: error.to_string(),
        },
    }
}
