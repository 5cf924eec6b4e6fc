//! The primitives of the protocols that are model-checked: std's, or loom's
//! when compiled with `--cfg bwos_loom`.
//!
//! Only the self-contained protocol cores (the latch, the Nowa scope
//! counter, the sleep counters) are built on this module; a loom build
//! compiles just those (see `lib.rs`), so the models check the real code.

#[cfg(bwos_loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(bwos_loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(bwos_loom)]
pub(crate) use loom::thread::{Thread, park};

#[cfg(not(bwos_loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(bwos_loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(bwos_loom))]
pub(crate) use std::thread::{Thread, park, park_timeout};

/// The handle of the calling thread.
#[cfg(bwos_loom)]
pub(crate) fn current_thread() -> Thread {
    loom::thread::current()
}

/// The handle of the calling thread.
#[cfg(not(bwos_loom))]
pub(crate) fn current_thread() -> Thread {
    std::thread::current()
}
