//! `block_on`: polls a future on the calling thread until it is ready.
//!
//! The future is polled on the thread that called `block_on`, as tokio's
//! `Runtime::block_on`, `futures::executor::block_on` and smol do, so it
//! need not be `Send` and may borrow anything. Between polls the thread
//! waits for the future's waker and parks. On a worker (of this pool or
//! another) the worker first moves to another thread, as in
//! `block_in_place` (`sched/replacement.rs`), unless the first poll is
//! ready: the worker's tasks run on meanwhile, never on top of this
//! `block_on` (which could not return before they do). While it polls, the calling thread works
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
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use crate::sched::context;
use crate::sched::coop;
use crate::sched::current::with_current_pool;
use crate::sched::latch::Latch;
use crate::sched::registry::Registry;
use crate::sched::replacement;
use crate::sched::wait::ThreadLatch;
use crate::sched::worker::WorkerThread;

/// Runs `future` to completion on the calling thread and returns its
/// output. Tasks, timers and sockets it creates belong to the current pool
/// (the calling worker's pool, else the pool the thread entered with an
/// [`EnterGuard`](crate::EnterGuard), else the global pool). Between
/// polls the calling thread parks. Called on a worker (inside a task, a
/// `join` or an `install`), the worker (its queued tasks and jobs, its
/// timers) first moves to another thread, as in
/// [`block_in_place`](crate::task::block_in_place), unless the first poll
/// is ready: the pool's other tasks never run on top of this call, so one
/// that waits for this call's caller cannot deadlock it (tokio's
/// `Handle::block_on` panics inside a task instead). The exception is a
/// worker hidden by another pool's [`EnterGuard`](crate::EnterGuard),
/// which waits running its own pool's work as before. A panic in the
/// future unwinds out of `block_on`.
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
    // An `Arc` of its own: the registry found through the calling worker
    // would borrow the worker, which moves to another thread meanwhile.
    let registry = with_current_pool(Arc::clone);
    block_on_in(&registry, future)
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
    let signal = Arc::new(Signal::new(registry));
    let _leave = Leave(&signal);
    let waker = Waker::from(Arc::clone(&signal));
    let mut cx = Context::from_waker(&waker);
    // The first poll on the calling thread as it is: a future ready at
    // once costs no more on a worker than elsewhere.
    let latch = match poll_round(registry, &signal, future.as_mut(), &mut cx) {
        Poll::Ready(output) => return output,
        Poll::Pending => signal.current_latch(),
    };
    if WorkerThread::with_current(|worker| worker.is_some_and(|w| !w.is_building_thread())) {
        // A worker does not wait here: the tasks it would run meanwhile
        // would be polled on top of this `block_on`, which could not
        // return before they do, and one of them may wait for this
        // future's caller (a `block_on` of its own that waits for a task
        // whose progress needs this one: a deadlock). The worker moves to
        // another thread instead, as in `block_in_place`, and this thread
        // polls and parks as a thread outside the pools. Its first round
        // polls again: the latch above wakes the worker, not this thread.
        signal.moved_off_the_worker(registry);
        return replacement::block_in_place(false, || {
            poll_until_ready(registry, &signal, future.as_mut(), &mut cx)
        });
    }
    signal.before_wait();
    latch.core().wait();
    poll_until_ready(registry, &signal, future.as_mut(), &mut cx)
}

/// Polls `future` until it is ready, waiting for its waker between polls.
fn poll_until_ready<F: Future>(
    registry: &Arc<Registry>,
    signal: &Signal,
    mut future: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> F::Output {
    loop {
        if let Poll::Ready(output) = poll_round(registry, signal, future.as_mut(), cx) {
            return output;
        }
        signal.before_wait();
        signal.current_latch().core().wait();
    }
}

/// Starts a round and polls `future` once. The round waits on a fresh
/// latch, which a wake-up during the poll sets, so a wait after a pending
/// poll returns at once.
fn poll_round<F: Future>(
    registry: &Arc<Registry>,
    signal: &Signal,
    future: Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    signal.start_round(Arc::new(ThreadLatch::for_current_thread()));
    // A fresh cooperative budget per poll, as a task's (and as tokio's
    // `block_on`), so that a future behaves the same under `block_on` as
    // in a task: `consume_budget` yields, a timeout around a busy future
    // still fires. A yield for the budget sets the latch, so the wait
    // returns at once: one extra poll per `POLL_BUDGET` ready operations.
    context::enter(registry, || coop::budget(|| future.poll(cx)))
}

/// The waker of a `block_on`: sets the calling thread's current latch.
struct Signal {
    round: Mutex<Round>,
}

/// The current round of a `block_on`'s polls.
struct Round {
    latch: Arc<ThreadLatch>,
    /// With `test-util`, a `block_on` on a thread that is not one of the
    /// pool's workers is the pool's work outside its workers while it
    /// polls (`sched/time/auto_advance.rs`): the paused clock does not
    /// jump meanwhile. `None` on a worker of the pool (its sleep counts),
    /// and once `block_on` returned.
    #[cfg(feature = "test-util")]
    presence: Option<Presence>,
}

/// A `block_on`'s count as outside work (see [`Round::presence`]).
#[cfg(feature = "test-util")]
struct Presence {
    registry: Arc<Registry>,
    /// Counted as outside work now: from the start until the thread waits,
    /// and again from the wake-up that ends the wait (the waker counts it,
    /// before it sets the latch, so that the clock cannot jump between the
    /// wake-up and the next poll).
    counted: bool,
    /// Woken since the round started: the wait will end at once, so the
    /// thread stays counted.
    woken: bool,
}

impl Signal {
    fn new(registry: &Arc<Registry>) -> Self {
        #[cfg(not(feature = "test-util"))]
        let _ = registry;
        #[cfg(feature = "test-util")]
        let presence =
            WorkerThread::with_current_in(registry, |worker| worker.is_none()).then(|| {
                registry.outside_work_started();
                Presence {
                    registry: Arc::clone(registry),
                    counted: true,
                    woken: false,
                }
            });
        Signal {
            round: Mutex::new(Round {
                latch: Arc::new(ThreadLatch::for_current_thread()),
                #[cfg(feature = "test-util")]
                presence,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Round> {
        // Only an `Arc` is swapped or cloned and flags are set under the
        // lock: never poisoned in a way that matters.
        self.round.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The calling worker moved to another thread (`block_in_place`) and
    /// this thread polls on as a thread outside the pools: with
    /// `test-util`, it counts as the pool's work outside its workers while
    /// it polls, from now (it was busy as a worker until now).
    fn moved_off_the_worker(&self, registry: &Arc<Registry>) {
        #[cfg(not(feature = "test-util"))]
        let _ = registry;
        #[cfg(feature = "test-util")]
        {
            let mut round = self.lock();
            if round.presence.is_none() {
                registry.outside_work_started();
                round.presence = Some(Presence {
                    registry: Arc::clone(registry),
                    counted: true,
                    woken: false,
                });
            }
        }
    }

    /// The latch the current round waits on.
    fn current_latch(&self) -> Arc<ThreadLatch> {
        Arc::clone(&self.lock().latch)
    }

    /// A new round of polls waits on `latch`.
    fn start_round(&self, latch: Arc<ThreadLatch>) {
        let mut round = self.lock();
        round.latch = latch;
        #[cfg(feature = "test-util")]
        if let Some(presence) = &mut round.presence {
            presence.woken = false;
            presence.count();
        }
    }

    /// The poll returned `Pending` and the thread is about to wait: unless
    /// a wake-up came during the poll, it no longer counts as outside work.
    fn before_wait(&self) {
        #[cfg(feature = "test-util")]
        {
            let mut round = self.lock();
            let Some(presence) = &mut round.presence else {
                return;
            };
            if presence.woken || !presence.counted {
                return;
            }
            presence.counted = false;
            let registry = Arc::clone(&presence.registry);
            drop(round);
            registry.outside_work_finished();
        }
    }

    /// `block_on` returns or unwinds: it stops counting for good (a waker
    /// kept by a timer or a task may still be called later).
    fn leave(&self) {
        #[cfg(feature = "test-util")]
        {
            let presence = self.lock().presence.take();
            if let Some(presence) = presence
                && presence.counted
            {
                presence.registry.outside_work_finished();
            }
        }
    }
}

#[cfg(feature = "test-util")]
impl Presence {
    /// Counts the `block_on` as outside work if it is not counted.
    fn count(&mut self) {
        if !self.counted {
            self.counted = true;
            self.registry.outside_work_started();
        }
    }
}

/// Ends a `block_on`'s count when it returns or unwinds.
struct Leave<'a>(&'a Signal);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let latch = {
            #[cfg_attr(not(feature = "test-util"), allow(unused_mut))]
            let mut round = self.lock();
            #[cfg(feature = "test-util")]
            if let Some(presence) = &mut round.presence {
                presence.woken = true;
                presence.count();
            }
            Arc::clone(&round.latch)
        };
        // SAFETY: the `Arc` keeps the latch alive during the call.
        unsafe { Latch::set(&*latch) };
    }
}
