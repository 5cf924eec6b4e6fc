//! [`JoinSet`]: a set of spawned tasks whose outputs come back in the
//! order the tasks finish.
//!
//! # How `join_next` finds a finished task without polling them all
//! Every task in the set has its own waker, which its [`JoinHandle`] is
//! polled with. When the task finishes (or is cancelled), that waker puts
//! the task's slot on the set's ready list and wakes whoever awaits
//! `join_next`. `join_next` polls only the handles on the ready list, so
//! draining a set of `n` tasks costs O(n) handle polls, not O(n^2). A
//! newly spawned task starts on the ready list: its first poll registers
//! its waker.

use std::fmt;
use std::future::{Future, poll_fn};
use std::panic;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker, ready};

use super::{AbortHandle, JoinError, JoinHandle, spawn, spawn_blocking};
use crate::sched::coop;

/// A set of tasks spawned on the current pool, awaited in the order they
/// finish (tokio's `JoinSet`).
///
/// [`spawn`](Self::spawn) starts a task, [`join_next`](Self::join_next)
/// returns the output of the next one to finish. Dropping the set aborts
/// every task still in it (their futures are dropped the next time a
/// worker would poll them); [`shutdown`](Self::shutdown) aborts them and
/// waits until they are gone. A task's panic is not propagated: it comes
/// back as a [`JoinError`] with [`is_panic`](JoinError::is_panic).
///
/// ```
/// use bwos::task::JoinSet;
///
/// let total = bwos::block_on(async {
///     let mut set = JoinSet::new();
///     for i in 0..10u64 {
///         set.spawn(async move { i * i });
///     }
///     let mut total = 0;
///     while let Some(output) = set.join_next().await {
///         total += output.expect("no task panics");
///     }
///     total
/// });
/// assert_eq!(total, 285);
/// ```
pub struct JoinSet<T> {
    /// The tasks' handles by slot; `None` marks a free slot.
    slots: Vec<Option<Slot<T>>>,
    /// Free slots, reused before the vector grows.
    free: Vec<usize>,
    /// Tasks in the set.
    len: usize,
    ready: Arc<ReadyList>,
    /// Numbers the tasks, so that a late wake-up of a task that left the
    /// set is not taken for the task now in its slot.
    next_id: u64,
}

struct Slot<T> {
    handle: JoinHandle<T>,
    waker: Arc<SlotWaker>,
}

/// The slots whose tasks were woken since `join_next` last looked, and
/// the waker of the task that awaits `join_next`.
struct ReadyList {
    inner: Mutex<ReadyInner>,
}

struct ReadyInner {
    /// `(slot, id)`: the slot's task `id` was woken.
    woken: Vec<(usize, u64)>,
    waiter: Option<Waker>,
}

impl ReadyList {
    fn lock(&self) -> std::sync::MutexGuard<'_, ReadyInner> {
        // Nothing panics while holding the lock (pushes and waker swaps),
        // so a poisoned lock still holds consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The waker of one task's handle: queues its slot on the ready list.
struct SlotWaker {
    slot: usize,
    id: u64,
    /// Whether the slot is on the ready list already: a task woken many
    /// times between two looks is queued once.
    queued: AtomicBool,
    ready: Arc<ReadyList>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel pairs with the `store(false)` in `poll_join_next` before
        // the handle is polled: either that poll sees this wake-up's task
        // state, or this swap sees `false` and queues the slot again.
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiter = {
            let mut ready = self.ready.lock();
            ready.woken.push((self.slot, self.id));
            ready.waiter.take()
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            ready: Arc::new(ReadyList {
                inner: Mutex::new(ReadyInner {
                    woken: Vec::new(),
                    waiter: None,
                }),
            }),
            next_id: 0,
        }
    }

    /// How many tasks are in the set: spawned and not yet returned by
    /// [`join_next`](Self::join_next) (aborted ones included until then).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Aborts every task in the set. They stay in it:
    /// [`join_next`](Self::join_next) returns each one's outcome, a
    /// [`JoinError`] with [`is_cancelled`](JoinError::is_cancelled) unless
    /// it finished first.
    pub fn abort_all(&mut self) {
        for slot in self.slots.iter().flatten() {
            slot.handle.abort();
        }
    }

    /// Aborts every task and waits until each has finished or been
    /// cancelled; the set is empty afterwards.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Waits for the next task of the set to finish and returns its
    /// output, or `None` when the set is empty. The task leaves the set.
    ///
    /// Cancel-safe: dropping the future before it finishes loses no
    /// output; the task stays in the set.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// The outcome of a task of the set that has finished, if one has,
    /// without waiting: `None` if the set is empty or no task has finished
    /// yet (a task that is finishing at this very moment may show only in
    /// the next call). The task leaves the set. Spends no cooperative
    /// budget: a loop over it never gets a spurious `None` for that.
    ///
    /// ```
    /// use bwos::task::JoinSet;
    ///
    /// bwos::block_on(async {
    ///     let mut set = JoinSet::new();
    ///     let task = set.spawn(async { 5 });
    ///     while !task.is_finished() {
    ///         bwos::task::yield_now().await;
    ///     }
    ///     let mut outputs = Vec::new();
    ///     while !set.is_empty() {
    ///         match set.try_join_next() {
    ///             Some(outcome) => outputs.push(outcome.unwrap()),
    ///             // Finished, and its wake-up on its way to the set.
    ///             None => bwos::task::yield_now().await,
    ///         }
    ///     }
    ///     assert_eq!(outputs, [5]);
    ///     assert!(set.try_join_next().is_none());
    /// });
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        if self.len == 0 {
            return None;
        }
        // Unconstrained: `JoinHandle::poll` would answer `Pending` for a
        // finished task once the budget is spent, and there is no waiter
        // here to come back for it.
        coop::with_unconstrained(|| {
            loop {
                match self.poll_woken(None) {
                    Some(Poll::Ready(outcome)) => return outcome,
                    Some(Poll::Pending) => return None,
                    // Every handle on the list was still pending: look again,
                    // which finds new wake-ups or an empty list.
                    None => {}
                }
            }
        })
    }

    /// Waits for every task of the set and returns their outputs, in the
    /// order the tasks finished (tokio's `JoinSet::join_all`): the same as
    /// [`join_next`](Self::join_next) in a loop.
    ///
    /// # Panics
    /// If a task panicked, its panic resumes here; if one was cancelled,
    /// this panics saying so. Either way the set is dropped as the panic
    /// unwinds, which aborts the tasks still in it. To handle a failed task
    /// some other way, call `join_next` in a loop.
    ///
    /// ```
    /// use bwos::task::JoinSet;
    ///
    /// let outputs = bwos::block_on(async {
    ///     let mut set = JoinSet::new();
    ///     for i in 0..3u32 {
    ///         set.spawn(async move { i * 2 });
    ///     }
    ///     set.join_all().await
    /// });
    /// let mut sorted = outputs.clone();
    /// sorted.sort();
    /// assert_eq!(sorted, [0, 2, 4]);
    /// ```
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len);
        while let Some(outcome) = self.join_next().await {
            match outcome {
                Ok(output) => outputs.push(output),
                Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
                Err(_) => panic!(
                    "JoinSet::join_all: a task of the set was cancelled (aborted, or its pool \
                     shut down); call join_next in a loop to handle that"
                ),
            }
        }
        outputs
    }

    /// The poll behind [`join_next`](Self::join_next): `Ready(None)` when
    /// the set is empty, `Ready(Some(_))` with a finished task's outcome,
    /// or `Pending` with `cx`'s waker registered for the next task to
    /// finish.
    ///
    /// A returned outcome spends a unit of the task's cooperative budget
    /// (as awaiting a [`JoinHandle`] does); with the budget spent, this
    /// returns `Pending` and wakes the task, which goes on after the
    /// worker's other tasks.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        // Checked here, with the caller's waker: the handles below are
        // polled with their slots' wakers. With a unit left, the handle
        // whose poll returns `Ready` spends it (`JoinHandle::poll`), and
        // pending ones spend nothing, so none of them finds it spent.
        ready!(coop::poll_proceed(cx));
        loop {
            if let Some(outcome) = self.poll_woken(Some(cx)) {
                return outcome;
            }
            // Every woken handle was still pending: look again, which
            // either finds new wake-ups or registers the waiter.
        }
    }

    /// One look at the ready list: `Some` with the poll's answer, or
    /// `None` if every handle on it was still pending. With an empty list
    /// the answer is `Pending`, with `waiter`'s waker registered if given.
    fn poll_woken(
        &mut self,
        waiter: Option<&mut Context<'_>>,
    ) -> Option<Poll<Option<Result<T, JoinError>>>> {
        let woken = {
            let mut ready = self.ready.lock();
            if ready.woken.is_empty() {
                // Registered under the lock that wake-ups queue under: a
                // task woken after this look finds the waiter.
                if let Some(cx) = waiter {
                    ready.waiter = Some(cx.waker().clone());
                }
                return Some(Poll::Pending);
            }
            std::mem::take(&mut ready.woken)
        };
        let mut woken = woken.into_iter();
        while let Some((index, id)) = woken.next() {
            let Some(Some(slot)) = self.slots.get_mut(index) else {
                continue;
            };
            if slot.waker.id != id {
                continue;
            }
            // Before the poll: a wake-up during or after it queues the
            // slot again (pairs with the swap in `wake_by_ref`).
            slot.waker.queued.store(false, Ordering::Release);
            let waker = Waker::from(Arc::clone(&slot.waker));
            let mut slot_cx = Context::from_waker(&waker);
            if let Poll::Ready(outcome) = Pin::new(&mut slot.handle).poll(&mut slot_cx) {
                self.remove(index);
                // The rest of this batch goes back to the front of the
                // list for the next call.
                let rest: Vec<_> = woken.collect();
                if !rest.is_empty() {
                    let mut ready = self.ready.lock();
                    let later = std::mem::replace(&mut ready.woken, rest);
                    ready.woken.extend(later);
                }
                return Some(Poll::Ready(Some(outcome)));
            }
        }
        None
    }

    fn remove(&mut self, index: usize) {
        self.slots[index] = None;
        self.free.push(index);
        self.len -= 1;
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns `future` on the current pool (as [`task::spawn`](spawn)
    /// does) as a task of this set. The returned [`AbortHandle`] cancels
    /// that task alone; the task stays in the set until
    /// [`join_next`](Self::join_next) returns its outcome (cancelled,
    /// unless it finished first). Dropping the `AbortHandle` does nothing.
    pub fn spawn<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(spawn(future))
    }

    /// Runs `f` on a blocking thread of the current pool (as
    /// [`task::spawn_blocking`](spawn_blocking) does), as a task of this
    /// set. Aborting it (through the returned [`AbortHandle`], or
    /// [`abort_all`](Self::abort_all), or dropping the set) cancels it if
    /// it has not started; once it runs, it runs to its end, since a
    /// thread cannot be interrupted.
    ///
    /// ```
    /// use bwos::task::JoinSet;
    ///
    /// let sum: u64 = bwos::block_on(async {
    ///     let mut set = JoinSet::new();
    ///     for i in 1..=4u64 {
    ///         set.spawn_blocking(move || i * 10);
    ///     }
    ///     set.join_all().await.into_iter().sum()
    /// });
    /// assert_eq!(sum, 100);
    /// ```
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.insert(spawn_blocking(f))
    }

    /// Adds a spawned task to the set.
    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        let index = self.free.pop().unwrap_or(self.slots.len());
        let id = self.next_id;
        self.next_id += 1;
        let waker = Arc::new(SlotWaker {
            slot: index,
            id,
            queued: AtomicBool::new(false),
            ready: Arc::clone(&self.ready),
        });
        // A new task is polled once by the next `join_next`, which
        // registers its waker with the task.
        waker.wake_by_ref();
        let slot = Some(Slot { handle, waker });
        if index == self.slots.len() {
            self.slots.push(slot);
        } else {
            self.slots[index] = slot;
        }
        self.len += 1;
        abort
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        JoinSet::new()
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts the tasks still in the set (tokio's rule): their futures are
    /// dropped the next time a worker would poll them.
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadPoolBuilder;
    use std::sync::atomic::AtomicUsize;

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn outputs_come_back_in_finishing_order_and_each_once() {
        bwos_testkit::watchdog("join_set_finishing_order", || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let release = Arc::new(AtomicBool::new(false));
            let outputs = pool.block_on(async move {
                let mut set = JoinSet::new();
                // The first task waits for a flag that is set only after
                // the second task's output was returned.
                let flag = Arc::clone(&release);
                set.spawn(async move {
                    while !flag.load(Ordering::SeqCst) {
                        crate::task::yield_now().await;
                    }
                    "slow"
                });
                set.spawn(async { "fast" });
                assert_eq!(set.len(), 2);
                let first = set.join_next().await.unwrap().unwrap();
                release.store(true, Ordering::SeqCst);
                let second = set.join_next().await.unwrap().unwrap();
                assert!(set.join_next().await.is_none());
                assert!(set.is_empty());
                vec![first, second]
            });
            assert_eq!(outputs, ["fast", "slow"]);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn many_tasks_each_returned_once() {
        bwos_testkit::watchdog("join_set_many_tasks", || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let (sum, count) = pool.block_on(async {
                let mut set = JoinSet::new();
                for i in 0..10_000u64 {
                    set.spawn(async move {
                        if i % 3 == 0 {
                            crate::task::yield_now().await;
                        }
                        i
                    });
                }
                let (mut sum, mut count) = (0, 0);
                while let Some(output) = set.join_next().await {
                    sum += output.unwrap();
                    count += 1;
                }
                (sum, count)
            });
            assert_eq!(count, 10_000);
            assert_eq!(sum, 10_000 * 9_999 / 2);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn dropping_the_set_aborts_its_tasks() {
        bwos_testkit::watchdog("join_set_drop_aborts", || {
            struct Dropped(Arc<AtomicUsize>);
            impl Drop for Dropped {
                fn drop(&mut self) {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let dropped = Arc::new(AtomicUsize::new(0));
            pool.block_on({
                let dropped = Arc::clone(&dropped);
                async move {
                    let mut set = JoinSet::new();
                    for _ in 0..8 {
                        let guard = Dropped(Arc::clone(&dropped));
                        // Never finishes on its own.
                        set.spawn(async move {
                            let _guard = guard;
                            std::future::pending::<()>().await;
                        });
                    }
                    drop(set);
                }
            });
            // The aborted futures are dropped by the workers, soon.
            while dropped.load(Ordering::SeqCst) != 8 {
                std::thread::yield_now();
            }
            assert_eq!(dropped.load(Ordering::SeqCst), 8);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn abort_all_and_shutdown_report_cancelled_tasks() {
        bwos_testkit::watchdog("join_set_abort_all", || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            pool.block_on(async {
                let mut set = JoinSet::new();
                for _ in 0..4 {
                    set.spawn(std::future::pending::<u32>());
                }
                set.spawn(async { panic!("a task panics") });
                set.abort_all();
                assert_eq!(set.len(), 5);
                let (mut cancelled, mut panicked) = (0, 0);
                while let Some(outcome) = set.join_next().await {
                    let error = outcome.expect_err("no task completes");
                    cancelled += usize::from(error.is_cancelled());
                    panicked += usize::from(error.is_panic());
                }
                // The panicking task may have run before the abort.
                assert_eq!(cancelled + panicked, 5);
                assert!(cancelled >= 4);

                for _ in 0..4 {
                    set.spawn(std::future::pending::<u32>());
                }
                set.shutdown().await;
                assert!(set.is_empty());
                assert!(set.join_next().await.is_none());
            });
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn join_next_is_cancel_safe() {
        bwos_testkit::watchdog("join_set_cancel_safe", || {
            let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            pool.block_on(async {
                let mut set = JoinSet::new();
                set.spawn(async { 7u8 });
                // Polled once and dropped: whatever it saw stays in the set.
                let first = {
                    let mut next = std::pin::pin!(set.join_next());
                    let mut cx = Context::from_waker(Waker::noop());
                    next.as_mut().poll(&mut cx)
                };
                match first {
                    Poll::Ready(outcome) => assert_eq!(outcome.unwrap().unwrap(), 7),
                    Poll::Pending => {
                        assert_eq!(set.len(), 1);
                        assert_eq!(set.join_next().await.unwrap().unwrap(), 7);
                    }
                }
                assert!(set.is_empty());
            });
        });
    }
}
