//! The pool a thread outside every pool works for, for a while: the
//! "current pool" of a thread in `block_on` (while it polls the future on
//! its own thread) and of a blocking thread (while it runs a closure).
//! `Registry::with_current` and the free functions look here after the
//! calling worker and before the global pool, so the tasks, timers and
//! joins such code starts go to that pool.

use std::cell::RefCell;
use std::sync::Arc;

use super::registry::Registry;

thread_local! {
    static CONTEXT: RefCell<Option<Arc<Registry>>> = const { RefCell::new(None) };
}

/// Runs `f` with `registry` as the calling thread's pool, restoring the
/// previous one afterwards (also if `f` unwinds).
pub(crate) fn enter<R>(registry: &Arc<Registry>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Registry>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CONTEXT.with(|context| *context.borrow_mut() = previous);
        }
    }
    let previous = CONTEXT.with(|context| context.borrow_mut().replace(Arc::clone(registry)));
    let _restore = Restore(previous);
    f()
}

/// The pool the calling thread works for, if it entered one.
pub(crate) fn current() -> Option<Arc<Registry>> {
    CONTEXT.with(|context| context.borrow().clone())
}
