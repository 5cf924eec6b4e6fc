//! The global pool the free functions use outside any pool.

use std::sync::{Arc, OnceLock};

use super::ThreadPool;
use super::builder::{ThreadPoolBuildError, ThreadPoolBuilder};
use super::registry::Registry;

static GLOBAL: OnceLock<ThreadPool> = OnceLock::new();

/// The global pool's registry, created with the default configuration on
/// first use.
///
/// # Panics
/// If the default configuration is invalid (`BWOS_NUM_THREADS` is not a
/// number) or threads cannot be started: the free functions have no error
/// channel. Call [`ThreadPoolBuilder::build_global`] first to handle these
/// errors.
pub(crate) fn registry() -> &'static Arc<Registry> {
    &GLOBAL
        .get_or_init(|| {
            ThreadPoolBuilder::new().build().unwrap_or_else(|error| {
                panic!("bwos: cannot create the global thread pool: {error}")
            })
        })
        .registry
}

pub(crate) fn set(builder: ThreadPoolBuilder) -> Result<(), ThreadPoolBuildError> {
    if GLOBAL.get().is_some() {
        return Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized);
    }
    let pool = builder.build()?;
    // Lost a race with another initialisation: the new pool is dropped
    // (its threads are stopped and joined).
    GLOBAL
        .set(pool)
        .map_err(|_| ThreadPoolBuildError::GlobalPoolAlreadyInitialized)
}
