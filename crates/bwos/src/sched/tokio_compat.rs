//! The `tokio-compat` feature: a tokio runtime context on every thread
//! that runs pool work, so that libraries written for tokio (reqwest,
//! database drivers, cloud SDKs) and tokio's own `time`, `net`, `fs`,
//! `spawn` and `Handle::current` work inside bwos tasks.
//!
//! # What runs where
//! - **One tokio runtime per process**, started on first use (the first
//!   bwos thread that enters it): a current-thread runtime with tokio's I/O
//!   and time drivers (`enable_all`), run by one thread named
//!   `bwos-tokio-compat`, which sits in the runtime's `block_on` for the
//!   rest of the process. While nothing is ready it blocks in tokio's
//!   driver (epoll/kqueue/IOCP with the next tokio timer as its timeout),
//!   so an idle process uses no CPU there.
//! - **bwos tasks stay on the bwos workers.** A bwos task that awaits a
//!   tokio timer or socket registers with that runtime's drivers; when the
//!   timer fires or the socket is ready, the `bwos-tokio-compat` thread
//!   calls the task's waker, which queues the task on its bwos pool (as a
//!   wake-up from any thread outside the pool does). The poll that
//!   follows runs on a bwos worker.
//! - **`tokio::spawn`** (and `Handle::spawn`, and what libraries spawn
//!   that way, such as a reqwest or hyper-util connection's background
//!   task) runs on the `bwos-tokio-compat` thread, one task at a time,
//!   not on the bwos workers. Fine for the small I/O tasks libraries spawn;
//!   application tasks belong on the pool: `bwos::task::spawn`. Code in
//!   such a task has no bwos pool context: the `bwos::task::spawn`,
//!   `bwos::time` and `bwos::join` it calls go to the global pool.
//! - **`tokio::task::spawn_blocking`** (and `tokio::fs`, which is built on
//!   it) runs on that runtime's blocking threads, named
//!   `bwos-tokio-compat-blocking` (tokio's defaults: up to 512, idle ones
//!   exit after 10 s), not on the pool's own blocking threads
//!   (`bwos::task::spawn_blocking`).
//! - **`tokio::task::block_in_place`** (tokio's feature `rt-multi-thread`)
//!   called on a bwos thread runs its closure in place, as tokio does
//!   outside its runtimes: it blocks the bwos worker and does not move it
//!   elsewhere. `bwos::task::block_in_place` moves the worker to a
//!   replacement thread. In a task of the compat runtime (`tokio::spawn`)
//!   tokio's `block_in_place` panics, as on any current-thread runtime.
//! - **`tokio::runtime::Handle::current()`** gives this runtime's handle;
//!   its `block_on` works on a bwos thread (it blocks that thread, as any
//!   blocking call), `Handle::spawn` is `tokio::spawn`.
//!
//! # Which threads have the context
//! Each calls [`enter`] once: a worker thread for its whole life
//! (`WorkerThread::main`), a pool's building thread
//! (`ThreadPoolBuilder::use_current_thread`) for the rest of its life
//! ([`enter_for_life`], unless it is in a tokio context already), a
//! replacement thread of `block_in_place` for its life
//! (`replacement.rs`), a blocking thread for its life (`blocking/`), and
//! a `block_on` caller for the duration of the call. Entering is strictly
//! nested (tokio requires its guards to be dropped in the reverse order of
//! their creation): each guard lives in the frame that runs the thread's
//! pool work, and user code on the thread can only enter and leave above
//! it. A `block_on` inside a user's tokio runtime (its handle entered, or
//! a task of it) polls its future with the compat context, and restores
//! the user's context when it returns.
//!
//! # When the runtime cannot start
//! Starting it needs a thread and an epoll instance; if the OS refuses
//! either, bwos writes one line to stderr and the threads enter nothing:
//! tokio calls then panic with tokio's own message, inside the task that
//! made them (the task's `JoinHandle` reports the panic). The next thread
//! that enters tries again.
//!
//! The core holds this module (not a front end) because its callers are
//! the core's thread starts; it imports only tokio.

use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError, mpsc};

use tokio::runtime::{Builder, EnterGuard, Handle};

/// The name of the thread that drives the compat runtime.
const DRIVER_THREAD_NAME: &str = "bwos-tokio-compat";

/// The name of the compat runtime's blocking threads.
const BLOCKING_THREAD_NAME: &str = "bwos-tokio-compat-blocking";

/// The compat runtime's handle, once it runs. The runtime itself lives on
/// its driver thread, in a `block_on` that never returns.
static HANDLE: OnceLock<Handle> = OnceLock::new();

/// Serializes starting the runtime: `OnceLock::get_or_try_init` is
/// unstable, and a failed start must leave the cell empty for a retry.
static STARTING: Mutex<()> = Mutex::new(());

/// Whether a failed start was reported already (one line per process).
static REPORTED_FAILURE: AtomicBool = AtomicBool::new(false);

/// The calling thread is inside the compat runtime's context while this
/// lives (`None`: the runtime could not start, or tokio's thread-locals
/// are gone because the thread is exiting).
pub(crate) type ContextGuard = Option<EnterGuard<'static>>;

/// Enters the compat runtime's context on the calling thread, starting the
/// runtime if it does not run yet; the previous context (a user's tokio
/// runtime, or none) comes back when the guard is dropped. Keep the guard
/// in the frame that runs the thread's pool work.
pub(crate) fn enter() -> ContextGuard {
    let handle = handle()?;
    // `Handle::enter` panics if tokio's thread-local context is destroyed
    // (a `block_on` from another thread-local's destructor): enter nothing
    // there rather than panic in bwos.
    if matches!(Handle::try_current(), Err(error) if error.is_thread_local_destroyed()) {
        return None;
    }
    Some(handle.enter())
}

/// Enters the compat runtime's context on the calling thread for the rest
/// of its life: for a pool's building thread, which becomes a worker
/// without a frame of bwos's around its pool work. Leaves a thread that is
/// in a tokio context already as it is (a guard left under the user's
/// would be dropped out of order when theirs is, which tokio refuses); a
/// thread without one has no guard below this one, so every later guard
/// nests above it.
pub(crate) fn enter_for_life() {
    if Handle::try_current().is_err() {
        std::mem::forget(enter());
    }
}

/// The compat runtime's handle, starting the runtime if needed; `None` if
/// it cannot start now.
fn handle() -> Option<&'static Handle> {
    if let Some(handle) = HANDLE.get() {
        return Some(handle);
    }
    // Poisoned only if a start panicked; the cell is intact either way.
    let _starting = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(handle) = HANDLE.get() {
        return Some(handle);
    }
    match start() {
        Ok(handle) => Some(HANDLE.get_or_init(|| handle)),
        Err(error) => {
            // Relaxed: the flag only limits the reports to one.
            // Not `eprintln!`, which panics if stderr fails: this runs
            // under the scheduler loop's abort guard.
            if !REPORTED_FAILURE.swap(true, Ordering::Relaxed) {
                let _ = writeln!(
                    io::stderr(),
                    "bwos: tokio-compat: could not start the tokio runtime ({error}); \
                     tokio calls on bwos threads panic until it starts"
                );
            }
            None
        }
    }
}

/// Starts the driver thread, which builds the runtime and runs it; returns
/// the runtime's handle once it runs. The runtime is built, run and (if
/// building fails) dropped on that thread alone: never on the caller's,
/// which may be inside a user's tokio runtime, where tokio refuses to
/// drop one.
fn start() -> io::Result<Handle> {
    let (started, handle) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(DRIVER_THREAD_NAME.into())
        .spawn(move || {
            let built = Builder::new_current_thread()
                .enable_all()
                .thread_name(BLOCKING_THREAD_NAME)
                .build();
            match built {
                Ok(runtime) => {
                    let _ = started.send(Ok(runtime.handle().clone()));
                    runtime.block_on(std::future::pending::<()>());
                }
                Err(error) => {
                    let _ = started.send(Err(error));
                }
            }
        })?;
    handle.recv().unwrap_or_else(|_| {
        Err(io::Error::other(
            "the driver thread ended before its runtime started",
        ))
    })
}
