//! The live tasks of one executor, so that shutting it down cancels every
//! task, including those that wait for a wake-up nobody will send.
//!
//! Queued tasks would be cancelled anyway (a dropped run-queue entry
//! cancels its task), and running ones see `CANCELLED` when their poll
//! ends; a task parked on a waker held by a dead socket or a forgotten
//! channel is reachable from nowhere else. The list keeps one reference
//! per task, from [`TaskList::insert`] (at spawn, before the task is
//! queued) until [`TaskList::remove`] (when the task completes, through
//! `Schedule::release`) or [`TaskList::close_and_cancel_all`].
//!
//! The list is sharded: a task goes to the shard its address picks, and
//! each shard is a mutex over a slot vector with a free list (the slot's
//! index and shard are in the task's header). Spawning and completing
//! thus take an uncontended lock in the common case, whichever worker
//! does it. A lock is held for a push or a pop, never while a task runs,
//! is aborted or is freed (those can re-enter the list).

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use super::raw::{Notified, TaskRef};

/// Shard bits in a task's `list_slot`: the slot index is above them.
const SHARD_BITS: u32 = 8;
/// The most shards a list has.
const MAX_SHARDS: usize = 1 << SHARD_BITS;

/// The live tasks of one executor.
pub(crate) struct TaskList {
    shards: Box<[CachePadded<Mutex<Slots>>]>,
}

#[derive(Default)]
struct Slots {
    closed: bool,
    tasks: Vec<Option<TaskRef>>,
    free: Vec<usize>,
    live: usize,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList::with_shards(1)
    }
}

impl TaskList {
    /// A list with `shards` locks (rounded up to a power of two, at most
    /// 256): a few per worker keep spawns on different workers apart.
    pub(crate) fn with_shards(shards: usize) -> Self {
        let shards = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        TaskList {
            shards: (0..shards).map(|_| CachePadded::default()).collect(),
        }
    }

    /// The shard of `task`: tasks are boxes of at least 64 bytes, so the
    /// address bits above the sixth spread them.
    fn shard_of(&self, task: TaskRef) -> usize {
        (task.addr() >> 6) & (self.shards.len() - 1)
    }

    /// Lists the task of `entry` (its first run-queue entry, before it is
    /// queued) and takes a reference to it. `false` if the list is closed:
    /// the executor is shutting down and the caller cancels the entry.
    pub(crate) fn insert(&self, entry: &Notified) -> bool {
        let task = entry.task();
        let shard = self.shard_of(task);
        let mut slots = self.lock(shard);
        if slots.closed {
            return false;
        }
        let index = match slots.free.pop() {
            Some(index) => {
                slots.tasks[index] = Some(task);
                index
            }
            None => {
                slots.tasks.push(Some(task));
                slots.tasks.len() - 1
            }
        };
        slots.live += 1;
        // SAFETY: `entry` keeps the task alive; the list's reference is
        // dropped by `remove` or `close_and_cancel_all`.
        unsafe {
            task.ref_inc();
            // Relaxed: written before the task is queued (the queue's
            // hand-off orders it before any `remove`), read under the lock.
            task.header()
                .list_slot
                .store(index << SHARD_BITS | shard, Ordering::Relaxed);
        }
        true
    }

    /// The task completed: unlists it and drops the list's reference,
    /// unless `close_and_cancel_all` took it already.
    ///
    /// Called by the completer, which still owns the run-queue entry's
    /// reference, so the list's is never the last one here.
    pub(crate) fn remove(&self, task: TaskRef) {
        // SAFETY: the completer's reference keeps the task alive.
        let slot = unsafe { task.header() }.list_slot.load(Ordering::Relaxed);
        if slot == usize::MAX {
            // Never listed (spawned after the list closed).
            return;
        }
        let (index, shard) = (slot >> SHARD_BITS, slot & (MAX_SHARDS - 1));
        let removed = {
            let mut slots = self.lock(shard);
            match slots.tasks.get_mut(index) {
                Some(entry) if *entry == Some(task) => {
                    *entry = None;
                    slots.free.push(index);
                    slots.live -= 1;
                    true
                }
                _ => false,
            }
        };
        if removed {
            // SAFETY: the list's own reference, taken in `insert`. Not the
            // last: the completer holds one.
            unsafe { task.release() };
        }
    }

    /// Closes the list (later `insert`s fail) and aborts every listed task:
    /// queued ones are cancelled by whoever runs or drops their entry,
    /// running ones when their poll ends, idle ones through their
    /// scheduler, which is expected to cancel entries it gets from now on.
    pub(crate) fn close_and_cancel_all(&self) {
        for shard in 0..self.shards.len() {
            let tasks: Vec<TaskRef> = {
                let mut slots = self.lock(shard);
                slots.closed = true;
                slots.free.clear();
                slots.live = 0;
                slots.tasks.drain(..).flatten().collect()
            };
            for task in tasks {
                // SAFETY: the list's reference, taken out of the list above.
                unsafe { task.abort_and_release() };
            }
        }
    }

    /// How many tasks are listed (each shard's count under its lock, one
    /// shard after the other).
    pub(crate) fn len(&self) -> usize {
        (0..self.shards.len())
            .map(|shard| self.lock(shard).live)
            .sum()
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Slots> {
        // A panic never happens while a lock is held (only pushes and
        // pops), so a poisoned lock still holds consistent slots.
        self.shards[shard]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    use super::*;
    use crate::sched::task::raw::{JoinHandle, Schedule, spawn};

    /// A scheduler with a list: queues entries until closed, then cancels
    /// them; unlists completed tasks.
    #[derive(Default)]
    struct Executor {
        queue: Mutex<Vec<Notified>>,
        closed: AtomicBool,
        list: TaskList,
    }

    impl Schedule for Arc<Executor> {
        fn schedule(&self, task: Notified) {
            if self.closed.load(Ordering::SeqCst) {
                task.cancel();
            } else {
                self.queue.lock().unwrap().push(task);
            }
        }

        fn release(&self, task: TaskRef) {
            self.list.remove(task);
        }
    }

    impl Executor {
        fn spawn<F>(self: &Arc<Self>, future: F) -> JoinHandle<F::Output>
        where
            F: std::future::Future + Send + 'static,
            F::Output: Send + 'static,
        {
            let (entry, handle) = spawn(future, self.clone());
            if self.list.insert(&entry) {
                self.schedule(entry);
            } else {
                entry.cancel();
            }
            handle
        }

        fn run_all(&self) {
            loop {
                let next = self.queue.lock().unwrap().pop();
                match next {
                    Some(task) => task.run(),
                    None => return,
                }
            }
        }

        fn shut_down(&self) {
            self.closed.store(true, Ordering::SeqCst);
            self.list.close_and_cancel_all();
            // Entries queued before the close are dropped, which cancels.
            drop(std::mem::take(&mut *self.queue.lock().unwrap()));
        }
    }

    /// Counts its drops.
    struct DropCounter(Arc<AtomicUsize>);

    impl Drop for DropCounter {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn outcome<T>(
        handle: &mut JoinHandle<T>,
    ) -> Poll<Result<T, crate::sched::task::raw::JoinError>> {
        let waker = Waker::noop();
        std::pin::Pin::new(handle).poll(&mut std::task::Context::from_waker(waker))
    }

    use std::future::Future;

    #[test]
    fn completed_tasks_leave_the_list() {
        let executor = Arc::new(Executor::default());
        let mut handles: Vec<_> = (0..10).map(|i| executor.spawn(async move { i })).collect();
        assert_eq!(executor.list.len(), 10);
        executor.run_all();
        assert_eq!(executor.list.len(), 0);
        for (i, handle) in handles.iter_mut().enumerate() {
            assert!(matches!(outcome(handle), Poll::Ready(Ok(v)) if v == i));
        }
        // Slots are reused.
        let _handle = executor.spawn(async {});
        assert_eq!(executor.list.len(), 1);
        executor.run_all();
    }

    #[test]
    fn shutting_down_cancels_a_task_that_waits_forever() {
        let executor = Arc::new(Executor::default());
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCounter(drops.clone());
        let parked = Arc::new(Mutex::new(None::<Waker>));
        let mut handle = executor.spawn({
            let parked = parked.clone();
            std::future::poll_fn(move |cx| {
                let _keep = &guard;
                *parked.lock().unwrap() = Some(cx.waker().clone());
                Poll::<()>::Pending
            })
        });
        let mut queued = executor.spawn(async { 5 });
        executor.run_all();
        // Nobody will wake the first task; a second one is queued again.
        let _second = executor.spawn(async { 6 });
        executor.shut_down();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the waiting future was dropped"
        );
        assert!(matches!(outcome(&mut handle), Poll::Ready(Err(e)) if e.is_cancelled()));
        assert!(matches!(outcome(&mut queued), Poll::Ready(Ok(5))));
        assert_eq!(executor.list.len(), 0);
        // A stale waker after the shutdown queues nothing.
        parked.lock().unwrap().take().unwrap().wake();
        assert!(executor.queue.lock().unwrap().is_empty());
        // And nothing can be spawned any more.
        let mut late = executor.spawn(async { 7 });
        assert!(matches!(outcome(&mut late), Poll::Ready(Err(e)) if e.is_cancelled()));
    }

    #[test]
    fn a_queued_task_at_shutdown_is_cancelled_once() {
        let executor = Arc::new(Executor::default());
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCounter(drops.clone());
        let mut handle = executor.spawn(async move {
            let _guard = guard;
        });
        executor.shut_down();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(matches!(outcome(&mut handle), Poll::Ready(Err(e)) if e.is_cancelled()));
    }
}
