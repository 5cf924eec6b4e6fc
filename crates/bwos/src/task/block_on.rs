//! `block_on`: polls a future on the calling thread until it is ready.
//!
//! The future is polled on the thread that called `block_on`, as tokio's
//! `Runtime::block_on`, `futures::executor::block_on` and smol do, so it
//! need not be `Send` and may borrow anything. Between polls the thread
//! waits for the future's waker: a thread outside the pools parks; a
//! worker (of this pool or another) keeps running its pool's work
//! meanwhile, as `install` does. While it polls, the calling thread works
//! for the pool (`sched/context.rs`): the tasks the future spawns, its
//! timers and its `join`s go to that pool, also on a worker of another
//! pool.
//!
//! Each poll has a cooperative budget, as a task's poll
//! (`sched/coop.rs`).
//!
//! Each round waits on a fresh latch; the waker the future holds sets
//! whichever latch is current, so a wake-up during a poll ends the next
//! wait at once and a stale one is harmless.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use crate::sched::context;
use crate::sched::coop;
use crate::sched::latch::{Latch, ThreadLatch};
use crate::sched::registry::Registry;

/// Runs `future` to completion on the calling thread and returns its
/// output. Tasks, timers and sockets it creates belong to the current pool
/// (the calling worker's pool, the global pool outside pools). Between
/// polls a thread outside the pools parks; a worker keeps running its
/// pool's work. A panic in the future unwinds out of `block_on`.
///
/// The future need not be `Send` (it never leaves the calling thread) and
/// may borrow from the caller.
///
/// ```
/// use std::rc::Rc;
///
/// let words = Rc::new(vec!["fork", "join"]); // not Send
/// let total = bwos::block_on(async {
///     let length = bwos::task::spawn(async { 4 }).await.unwrap();
///     words.len() * length
/// });
/// assert_eq!(total, 8);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    Registry::with_current(|registry| block_on_in(registry, future))
}

/// [`block_on`] for `registry`'s pool.
///
/// The pool is entered for each poll, not for the waits between them: a
/// worker of another pool works for `registry`'s pool while it polls (its
/// worker hidden, see `sched/context.rs`) and for its own pool while it
/// waits.
pub(crate) fn block_on_in<F: Future>(registry: &Arc<Registry>, future: F) -> F::Output {
    // Dropped after the future, which may hold tokio guards of its own.
    #[cfg(feature = "tokio-compat")]
    let _tokio = crate::sched::tokio_compat::enter();
    let mut future = pin!(future);
    let signal = Arc::new(Signal {
        latch: Mutex::new(Arc::new(ThreadLatch::for_current_thread())),
    });
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    loop {
        // A fresh latch before the poll: a wake-up during the poll sets
        // it, and the wait below returns at once.
        let latch = Arc::new(ThreadLatch::for_current_thread());
        *signal.lock() = Arc::clone(&latch);
        // A fresh cooperative budget per poll, as a task's (and as
        // tokio's `block_on`), so that a future behaves the same under
        // `block_on` as in a task: `consume_budget` yields, a timeout
        // around a busy future still fires. A yield for the budget sets
        // the latch, so the wait below returns at once: one extra poll
        // per `POLL_BUDGET` ready operations.
        let polled = context::enter(registry, || coop::budget(|| future.as_mut().poll(&mut cx)));
        if let Poll::Ready(output) = polled {
            return output;
        }
        latch.core().wait();
    }
}

/// The waker of a `block_on`: sets the calling thread's current latch.
struct Signal {
    latch: Mutex<Arc<ThreadLatch>>,
}

impl Signal {
    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<ThreadLatch>> {
        // Only an `Arc` is swapped or cloned under the lock: never poisoned
        // in a way that matters.
        self.latch.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let latch = Arc::clone(&self.lock());
        // SAFETY: the `Arc` keeps the latch alive during the call.
        unsafe { Latch::set(&*latch) };
    }
}
