//! Calling a user's [`Waker`] from the scheduler's own code: a timer that
//! fired, a socket that became ready, a finished task's join-handle
//! waiter, a stolen `fork` child's parent.
//!
//! `Waker::wake` is user code (any executor's waker, or the user's own),
//! and it may panic. There it would unwind out of the scheduler loop, or a
//! driver turn, whose bookkeeping aborts the process rather than unwind
//! (`job.rs`'s `AbortOnUnwind`), and it would drop the other wakers of the
//! same batch unwoken. So the panic is caught here: the panic hook has
//! printed it already, one line on stderr says the scheduler carried on,
//! and the payload is dropped (tokio, too, catches a panicking join waker
//! and drops its panic). Whatever the waker did before it panicked stands;
//! the wake-ups after it in the batch still happen.
//!
//! Imports nothing of the crate: the timers (`time/`), a loom-checked
//! protocol, call it.

use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

/// Wakes `waker`, a user's, from the scheduler: a panic in it is reported
/// and dropped (see the module docs).
pub(crate) fn wake(waker: Waker) {
    caught(|| waker.wake());
}

/// [`wake`] without consuming `waker`.
pub(crate) fn wake_by_ref(waker: &Waker) {
    caught(|| waker.wake_by_ref());
}

fn caught(wake: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(wake)) {
        // The payload is the user's too: its destructor may panic again.
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            std::mem::forget(second);
        }
        eprintln!(
            "bwos: a Waker::wake called by the scheduler (for a timer, a socket, a join \
             handle or a fork child's parent) panicked; the panic is dropped and bwos \
             carries on"
        );
    }
}

#[cfg(all(test, not(bwos_loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    struct Panicking;

    impl Wake for Panicking {
        fn wake(self: Arc<Self>) {
            panic!("the waker panics");
        }
    }

    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    // Mutation caught: `caught` calling `wake` without `catch_unwind` (the
    // panic reaches the test).
    #[test]
    fn a_panicking_waker_does_not_stop_the_wake_ups_after_it() {
        let counting = Arc::new(Counting::default());
        let wakers = [
            Waker::from(Arc::new(Panicking)),
            Waker::from(Arc::clone(&counting)),
            Waker::from(Arc::new(Panicking)),
            Waker::from(Arc::clone(&counting)),
        ];
        wake_by_ref(&wakers[0]);
        wakers.into_iter().for_each(wake);
        assert_eq!(counting.0.load(Ordering::SeqCst), 2);
    }
}
