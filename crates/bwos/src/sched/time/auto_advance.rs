//! When a paused clock jumps: the pool's idleness, as the `test-util`
//! feature's automatic advance needs it (tokio's: while the clock is
//! paused and the runtime has nothing to do but wait for a timer, the
//! clock moves to the timer's deadline at once).
//!
//! # What "nothing to do" means
//! A pool has nothing to do when
//! - every worker that runs the scheduler loop is *idle*: it is parked in
//!   its sleep, and nobody has unparked it since it last looked (marked
//!   by [`AutoAdvance::worker_idle`] just before it blocks, unmarked by
//!   `Registry::unpark` and when its sleep ends);
//! - no work of the pool's runs *outside* its workers: no
//!   `spawn_blocking` closure is queued or running (tokio does not
//!   advance while one is in flight either), no `block_in_place` closure
//!   runs, and no thread outside the workers is polling a `block_on`
//!   future of this pool ([`AutoAdvance::outside_started`] and
//!   [`outside_finished`](AutoAdvance::outside_finished));
//! - nothing is queued where a worker would find it, and no socket is
//!   ready (the caller's look, `Registry::try_auto_advance`).
//!
//! # Who advances
//! The one that makes the pool idle looks: a worker marking itself idle
//! (the last to fall asleep), or the last outside work finishing, which
//! unparks an idle worker to look (so the jump is always made by a
//! worker). Both sides take this module's lock, so whichever comes second
//! sees the other: no idle moment is missed. A worker that advances marks
//! itself busy under the same lock before the clock moves ("claims"): a
//! second worker cannot see the pool idle again until the tasks the jump
//! woke have run and their workers are idle once more, so the clock never
//! jumps twice over work that the first jump made. A `block_on` future
//! whose timer fires counts as outside work from its waker's call on
//! (`task/block_on.rs`), for the same reason.
//!
//! Why the marks and not the sleep states alone: a worker's latch can be
//! set (a stolen job finished, a `block_on` waker fired) while its sleep
//! state still says asleep; every such setter unparks the worker through
//! the registry, which unmarks it before the setter can itself fall idle.
//!
//! The loom models `paused_clock_jumps_once_per_idle_moment` and
//! `paused_clock_outside_work_finishing_wakes_the_advance` check both.
//!
//! Work from threads the pool cannot see (a plain thread spawning into the
//! pool, another pool's tasks) is not counted: the clock may jump while
//! such a thread is about to add work, as tokio's may while a thread
//! outside its runtime is.

use std::task::Waker;

use super::Timers;
use crate::sched::quietly;
use crate::sched::sync::{Mutex, MutexGuard};

/// A pool's idleness, for the paused clock (see the module docs).
pub(crate) struct AutoAdvance {
    state: Mutex<Idleness>,
    /// Workers below this index do not run the scheduler loop (a pool's
    /// building thread adopted as worker 0): the pool is idle without
    /// them.
    first_loop_worker: usize,
}

struct Idleness {
    /// Per worker: parked with nothing to do, and not unparked since.
    idle: Box<[bool]>,
    /// Idle workers at or above `first_loop_worker`.
    idle_loop_workers: usize,
    /// Pieces of the pool's work running outside its workers.
    outside: usize,
}

impl AutoAdvance {
    /// The idleness of a pool of `num_workers`, of which the first
    /// `first_loop_worker` run no scheduler loop.
    pub(crate) fn new(num_workers: usize, first_loop_worker: usize) -> Self {
        AutoAdvance {
            state: Mutex::new(Idleness {
                idle: vec![false; num_workers].into_boxed_slice(),
                idle_loop_workers: 0,
                outside: 0,
            }),
            first_loop_worker,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Idleness> {
        // No user code runs under the lock (wakers are woken after it is
        // released): a poisoned state is a consistent one.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn loop_workers(&self, idleness: &Idleness) -> usize {
        idleness.idle.len() - self.first_loop_worker
    }

    fn set_idle(&self, idleness: &mut Idleness, index: usize, idle: bool) {
        if idleness.idle[index] != idle {
            idleness.idle[index] = idle;
            if index >= self.first_loop_worker {
                if idle {
                    idleness.idle_loop_workers += 1;
                } else {
                    idleness.idle_loop_workers -= 1;
                }
            }
        }
    }

    /// Worker `index` is about to block in its sleep. The caller looks
    /// whether its sleep still stands *after* this (a wake-up that came
    /// before the mark would otherwise be hidden by it).
    pub(crate) fn worker_idle(&self, index: usize) {
        let mut idleness = self.lock();
        self.set_idle(&mut idleness, index, true);
    }

    /// Worker `index` was unparked, or its sleep ended.
    pub(crate) fn worker_busy(&self, index: usize) {
        let mut idleness = self.lock();
        self.set_idle(&mut idleness, index, false);
    }

    /// Whether worker `index` is marked idle (the look of a worker that
    /// took the I/O driver's seat, after its fence: an unpark that came
    /// before the seat was taken did not interrupt the poll, but it did
    /// unmark the worker).
    pub(crate) fn is_idle(&self, index: usize) -> bool {
        self.lock().idle[index]
    }

    /// Work of the pool's starts outside its workers.
    pub(crate) fn outside_started(&self) {
        self.lock().outside += 1;
    }

    /// Work of the pool's outside its workers finished. Returns an idle
    /// worker to unpark if that left the pool idle with its clock paused
    /// and a timer pending: it looks again (`try_advance`) and jumps.
    pub(crate) fn outside_finished(&self, timers: &Timers) -> Option<usize> {
        let mut idleness = self.lock();
        idleness.outside -= 1;
        if idleness.outside > 0
            || idleness.idle_loop_workers < self.loop_workers(&idleness)
            || !timers.clock().is_paused()
            || !timers.any_pending()
        {
            return None;
        }
        (self.first_loop_worker..idleness.idle.len()).find(|&index| idleness.idle[index])
    }

    /// Idle worker `index` looks: if the pool is idle (every loop worker
    /// marked, no outside work, and `quiet()`: nothing queued, which the
    /// caller knows how to see) and the clock is paused with a timer
    /// pending, it claims itself busy (`claim`, under the lock; the caller
    /// makes the worker count as searching), moves the clock to the next
    /// deadline and fires the timers due there, waking their wakers after
    /// the lock is released. Returns whether it did.
    pub(crate) fn try_advance(
        &self,
        index: usize,
        timers: &Timers,
        quiet: impl FnOnce() -> bool,
        claim: impl FnOnce(),
    ) -> bool {
        let wakers: Vec<Waker> = {
            let mut idleness = self.lock();
            if idleness.outside > 0
                || idleness.idle_loop_workers < self.loop_workers(&idleness)
                || !timers.clock().is_paused()
                || !quiet()
            {
                return false;
            }
            let Some(wakers) = timers.jump_to_next_deadline(|| {
                self.set_idle(&mut idleness, index, false);
                claim();
            }) else {
                return false;
            };
            wakers
        };
        wakers.into_iter().for_each(quietly::wake);
        true
    }
}

impl std::fmt::Debug for AutoAdvance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idleness = self.lock();
        f.debug_struct("AutoAdvance")
            .field("idle", &idleness.idle)
            .field("outside", &idleness.outside)
            .finish()
    }
}
