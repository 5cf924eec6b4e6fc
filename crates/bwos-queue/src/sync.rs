//! The synchronisation primitives the queue is built from, swapped for loom's
//! model-checked versions when compiled with `--cfg bwos_loom`.
//!
//! Everything concurrent in the crate goes through this module, so a loom
//! build checks every atomic access and every slot access of the real code,
//! not of a copy.

#[cfg(bwos_loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(bwos_loom)]
pub(crate) use loom::sync::Arc;
#[cfg(bwos_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(not(bwos_loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(bwos_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// `std::cell::UnsafeCell` with the closure-based access API of
/// `loom::cell::UnsafeCell`, so the same code compiles in both builds.
/// It has no constructor: the queue's only cells are its entries, which
/// are allocated uninitialised (any bytes are a valid cell of a
/// `MaybeUninit`; see `ring::unused_slots`).
#[cfg(not(bwos_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(bwos_loom))]
impl<T> UnsafeCell<T> {
    /// Runs `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Loads of positions that only the calling thread ever writes.
pub(crate) trait OwnedLoad {
    /// The current value of a position written only by this thread.
    ///
    /// A Relaxed load of a word only this thread stores always returns the
    /// thread's own last store (coherence), so no ordering is involved. In
    /// loom builds the load skips the scheduling point (loom still checks
    /// that every store happened before it), which keeps the models small.
    ///
    /// # Safety
    /// No other thread ever stores to this word (as with loom's and tokio's
    /// `unsync_load`): otherwise a loom build would read it without a
    /// synchronisation check, and the value would not be the latest.
    unsafe fn load_owned(&self) -> u64;
}

impl OwnedLoad for AtomicU64 {
    #[inline(always)]
    unsafe fn load_owned(&self) -> u64 {
        #[cfg(bwos_loom)]
        {
            // SAFETY: forwarded from the caller: only this thread stores
            // the word, and loom verifies no store is concurrent with it.
            unsafe { self.unsync_load() }
        }
        #[cfg(not(bwos_loom))]
        {
            self.load(Ordering::Relaxed)
        }
    }
}
