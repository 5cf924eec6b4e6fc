//! The runtime side of `#[bwos::main]` and `#[bwos::test]` (feature
//! `macros`; the attributes are the `bwos-macros` crate's): what their
//! expansion calls. Not a public API: hidden, and free to change with the
//! macros.

use std::future::Future;

use crate::ThreadPoolBuilder;
use crate::sched::error::ThreadPoolBuildError;

/// `#[bwos::main]`: builds the global pool (with `worker_threads` workers,
/// else the default number) and runs `body` in `block_on` on it. A global
/// pool that exists already (the function was called before) is used as
/// it is.
///
/// # Panics
/// If the global pool cannot be built (the system refuses threads, a bad
/// `BWOS_NUM_THREADS`), with the build error's message: `main` has no
/// other way to report it.
#[doc(hidden)]
pub fn run_main<F: Future>(worker_threads: Option<usize>, body: F) -> F::Output {
    let mut builder = ThreadPoolBuilder::new();
    if let Some(threads) = worker_threads {
        builder = builder.num_threads(threads);
    }
    match builder.build_global() {
        Ok(()) | Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized) => {}
        Err(error) => panic!("#[bwos::main] could not build the global pool: {error}"),
    }
    crate::block_on(body)
}

/// `#[bwos::test]`: builds a pool for this test alone (with
/// `worker_threads` workers, else the default number) and runs `body` in
/// `block_on` on it; the pool is dropped (its threads stopped) when the
/// test ends.
///
/// # Panics
/// If the pool cannot be built, with the build error's message (a test
/// fails by panicking).
#[doc(hidden)]
pub fn run_test<F: Future>(worker_threads: Option<usize>, body: F) -> F::Output {
    let mut builder = ThreadPoolBuilder::new();
    if let Some(threads) = worker_threads {
        builder = builder.num_threads(threads);
    }
    let pool = builder
        .build()
        .unwrap_or_else(|error| panic!("#[bwos::test] could not build the test's pool: {error}"));
    pool.block_on(body)
}
