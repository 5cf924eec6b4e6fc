//! Where a sleeping worker waits: parked in the pool's I/O driver if it
//! has one and nobody else blocks in it, else on its thread's park token,
//! for at most the time to the next timer if it watches the timers; and
//! what the timers need of the sleepers: firing due timers around a park,
//! handing the timers' watch over, waking the watcher for an earlier
//! deadline, and (with `test-util`) letting the paused clock jump when the
//! pool has nothing to do. The sleep protocol itself, who sleeps and who
//! wakes whom without losing a wake-up, is `sleep.rs`'s; the timers are
//! `time/`'s, the driver `sched/driver.rs`'s seam.

use std::time::Duration;

use crate::sched::registry::Registry;
use crate::sched::time::{WakeFor, Watch};

/// Parks sleeping worker `index`: in the pool's driver if it has one
/// and nobody else blocks in it, else on the thread's park token; for
/// at most the time to the next timer if it watches the timers (see
/// `time/mod.rs`). Returns whether it made work for this worker (the
/// driver or a timer woke tasks into its queue; see
/// `Sleepers::sleep_parking_with`); if the driver woke several, a
/// sleeping worker is woken to share them.
pub(crate) fn park_worker(
    registry: &Registry,
    index: usize,
    still_asleep: &dyn Fn() -> bool,
    wake_early: &dyn Fn(),
) -> bool {
    // A worker that makes work as it sleeps (timers, sockets) stops
    // counting as idle for the paused clock before it does.
    #[cfg(feature = "test-util")]
    let (searching_again, wake_early) = (wake_early, &|| {
        registry.auto_advance.worker_busy(index);
        wake_early();
    });
    if fire_due_timers(registry, wake_early) {
        return true;
    }
    let timeout = match registry.timers.watch(index) {
        Watch::Elsewhere => None,
        Watch::Until(timeout) => timeout,
    };
    #[cfg(feature = "test-util")]
    let timeout = {
        registry.auto_advance.worker_idle(index);
        // After the mark: a wake-up that came before it did not unmark
        // this worker, but it ended the sleep.
        if !still_asleep() {
            registry.auto_advance.worker_busy(index);
            return false;
        }
        if registry.timers.clock().is_paused() {
            if try_auto_advance(registry, index, still_asleep, wake_early, searching_again) {
                return true;
            }
            // Paused time does not pass by itself: sleep until woken
            // (a new timer, work, an advance, the pool falling idle).
            None
        } else {
            timeout
        }
    };
    // A timer's interrupt writes the driver's eventfd only if the
    // sleeper already sits in the seat: one that came since `watch` (an
    // earlier deadline, or the watch assigned to this worker) raised
    // the interrupt flag, seen here after the seat is taken (the
    // driver calls this after its SeqCst store and fence), so the
    // worker does not block in the poll with a stale timeout; the
    // sleep loop parks it again, and `watch` gives the new deadline.
    // The watch is left when the sleep ends (`leave_timer_watch`), not
    // here: across the sleep loop's turns it stays this worker's.
    // With `test-util`, an unpark that came before the seat was taken
    // unmarked the worker (`unpark`, under the idleness lock, which the
    // look here takes after the seat's fence): it looks again too.
    let undisturbed = || {
        let undisturbed = still_asleep() && !registry.timers.is_interrupted(index);
        #[cfg(feature = "test-util")]
        let undisturbed = undisturbed && registry.auto_advance.is_idle(index);
        undisturbed
    };
    let parked = park_for(registry, index, &undisturbed, wake_early, timeout);
    #[cfg(feature = "test-util")]
    registry.auto_advance.worker_busy(index);
    parked || fire_due_timers(registry, wake_early)
}

/// Idle worker `index`, about to sleep with the clock paused: if the
/// pool has nothing to do, moves the clock to the next deadline and
/// fires it (`time/auto_advance.rs`). Returns whether it made work
/// for this worker (then it counts as searching again): tasks a ready
/// socket woke (a socket ready now holds the clock, as in tokio), or
/// the jump's. `wake_early` also unmarks the worker;
/// `searching_again` only makes it count as searching (the jump
/// unmarks it under the idleness lock).
#[cfg(feature = "test-util")]
fn try_auto_advance(
    registry: &Registry,
    index: usize,
    still_asleep: &dyn Fn() -> bool,
    wake_early: &dyn Fn(),
    searching_again: &dyn Fn(),
) -> bool {
    if let Some(driver) = registry.driver.get()
        && let Some(woken) = driver.park(index, still_asleep, wake_early, Some(Duration::ZERO))
        && woken > 0
    {
        return true;
    }
    let loop_workers = registry.num_threads() - usize::from(registry.uses_building_thread());
    let quiet = || {
        registry.sleepers.all_asleep(loop_workers)
            && (0..registry.num_threads()).all(|index| !registry.has_visible_work(index))
    };
    registry
        .auto_advance
        .try_advance(index, &registry.timers, quiet, searching_again)
}

/// The paused clock was resumed: the watcher sleeps without a deadline
/// and must take up the next one in real time.
#[cfg(feature = "test-util")]
pub(crate) fn clock_resumed(registry: &Registry) {
    wake_for_timer(registry, registry.timers.clock_resumed());
}

/// Worker `index`'s sleep ended, for whatever reason: before it runs
/// anything, it hands the timers' watch to another sleeping worker if
/// it watched and a deadline is pending (see "The watch is handed
/// over" in `time/mod.rs`).
pub(crate) fn leave_timer_watch(registry: &Registry, index: usize) {
    if registry.timers.unwatch(index) {
        hand_over_timer_watch(registry, Some(index));
    }
}

/// Assigns the vacant timers' watch to a sleeping worker other than
/// `leaving`, if one sleeps and a deadline is pending, and interrupts
/// it so that it sleeps until the deadline.
fn hand_over_timer_watch(registry: &Registry, leaving: Option<usize>) {
    let n = registry.num_threads();
    let start = leaving.map_or(0, |index| index + 1);
    let candidates = (0..n)
        .map(|offset| (start + offset) % n)
        .filter(|&index| Some(index) != leaving);
    if let Some(chosen) = registry
        .timers
        .assign_watch(candidates, |index| registry.sleepers.is_asleep(index))
    {
        registry.unpark(chosen);
    }
}

/// Wakes whom a new or earlier deadline needs woken
/// ([`Timers::insert`](crate::sched::time::Timers::insert),
/// [`Timers::reset`](crate::sched::time::Timers::reset)).
pub(crate) fn wake_for_timer(registry: &Registry, wake: WakeFor) {
    match wake {
        WakeFor::Nobody => {}
        WakeFor::Watcher(index) => registry.unpark(index),
        // Nobody sleeps: every worker that falls asleep from now on
        // looks at the wheel under its lock and sees the deadline; one
        // that fell asleep before shows in the count (its announcement
        // came before its `watch`, which the timer's insertion, under
        // the same lock, followed).
        WakeFor::VacantWatch if registry.sleepers.anyone_sleeping() => {
            hand_over_timer_watch(registry, None);
        }
        WakeFor::VacantWatch => {}
    }
}

/// Fires the timers that are due, as a worker about to sleep or just
/// woken: it counts as searching first (its wake-ups then go to other
/// sleepers), and the tasks the timers wake land in its queue.
fn fire_due_timers(registry: &Registry, wake_early: &dyn Fn()) -> bool {
    if !registry.timers.maybe_due() {
        return false;
    }
    wake_early();
    registry.timers.fire_due();
    true
}

/// Blocks worker `index` in the driver or on its park token, for at
/// most `timeout`; whether the driver woke tasks into its queue.
fn park_for(
    registry: &Registry,
    index: usize,
    still_asleep: &dyn Fn() -> bool,
    wake_early: &dyn Fn(),
    timeout: Option<Duration>,
) -> bool {
    if let Some(driver) = registry.driver.get()
        && let Some(woken) = driver.park(index, still_asleep, wake_early, timeout)
    {
        if woken > 1 {
            // More than this worker's next task: share with a sleeper
            // (this worker searches again, so producers would not).
            registry.sleepers.wake_one(|other| registry.unpark(other));
        }
        return woken > 0;
    }
    match timeout {
        Some(timeout) => crate::sched::sync::park_timeout(timeout),
        None => crate::sched::sync::park(),
    }
    false
}

/// Polls the pool's driver without blocking, if it has one and nobody
/// else polls it; the tasks it wakes join this worker's queue.
pub(crate) fn poll_driver_now(registry: &Registry) {
    if let Some(driver) = registry.driver.get() {
        driver.poll_now();
    }
    registry.timers.fire_if_due();
}
