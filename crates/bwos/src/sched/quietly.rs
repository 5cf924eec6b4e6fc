//! The user's code that the scheduler's own bookkeeping calls, with its
//! panic caught: a [`Waker`] to wake (a timer that fired, a socket that
//! became ready, a finished task's join-handle waiter, a stolen `fork`
//! child's parent) and a value to drop (a panic payload, a finished
//! child's output, a join waker).
//!
//! Both are user code, and both may panic. There the panic would unwind
//! out of the scheduler loop, or a driver turn, whose bookkeeping aborts
//! the process rather than unwind (`job.rs`'s `AbortOnUnwind`), and a
//! panicking waker would leave the other wakers of its batch unwoken. So
//! the panic is caught here, and its payload (the user's too) is dropped
//! the same way, or leaked if that panics again. A waker's panic also
//! gets one line on stderr after the panic hook's own message, saying
//! that the scheduler carried on (tokio, too, catches a panicking join
//! waker and drops its panic). Whatever the code did before it panicked
//! stands; the wake-ups after it in the batch still happen.
//!
//! Imports nothing of the crate: the timers (`time/`), a loom-checked
//! protocol, call it.

use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

/// Wakes `waker`, a user's: a panic in it is reported and dropped (see
/// the module docs).
pub(crate) fn wake(waker: Waker) {
    caught(|| waker.wake());
}

/// [`wake`] without consuming `waker`.
pub(crate) fn wake_by_ref(waker: &Waker) {
    caught(|| waker.wake_by_ref());
}

/// Drops `value`, any user type, whose destructor may panic: that panic
/// is caught and its payload dropped the same way, once; a payload whose
/// drop panics too is leaked.
pub(crate) fn drop<T>(value: T) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || std::mem::drop(value)))
        && let Err(again) = panic::catch_unwind(AssertUnwindSafe(move || std::mem::drop(payload)))
    {
        std::mem::forget(again);
    }
}

fn caught(wake: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(wake)) {
        // The payload is the user's too: its destructor may panic again.
        drop(payload);
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
