//! Long polls (`PoolStats::long_polls`): the task polls that ran longer
//! than the pool's threshold, timed in groups of polls run back to back
//! so that a short poll pays for no clock read.
//!
//! # Why groups
//! Timing each poll reads the clock twice per poll. Even the cheapest
//! clock (the time-stamp counter, `sched/clock.rs`) costs a good part of
//! what a poll of a task that only yields costs with its scheduling, and
//! two reads per poll slowed such tasks down markedly (the figures are in
//! `docs/benchmarks.md`). So the scheduler loop
//! ([`WorkerThread::run_until`](super::worker::WorkerThread)) reads the
//! clock before the first poll of a group and after its last, and the
//! group's size adapts to the polls' length: it doubles (up to
//! [`MAX_GROUP`] polls) while a group takes less than a quarter of the
//! target, a 64th of the threshold, and falls to one poll as soon as a
//! group takes longer than the target. Tasks whose polls are long
//! compared with a clock read are therefore timed one by one, and short
//! ones pay for two reads per [`MAX_GROUP`] polls. Between those, a poll
//! costs the loop a compare with zero before it (is a group open?) and a
//! decrement in memory with a branch after it (is the group full?).
//!
//! A group is made of task polls only: it ends (with its clock read)
//! before the loop runs anything else (a fork/join job), before it idles,
//! and when it returns, so that a group's time is its polls' time plus
//! the scheduler's bookkeeping between them, never a job's or a sleep's.
//! A poll that waits inside for stolen work (a `join` in a task) runs
//! other work in a nested loop with its own groups, and all of it is that
//! poll's time: such a poll holds its task's place as long as it lasts.
//!
//! # What is counted
//! A group that took longer than the threshold counts as one long poll.
//! A group of one poll is that poll, measured. A group of several polls
//! holds at least one long poll, unless its polls' average length grew
//! 64-fold within the group (the group before took less than a 64th of
//! the threshold); and several long polls in one group count once, which
//! can only happen to the first long polls after a run of short ones, as
//! the first long group makes the size one. Tasks polled outside the
//! scheduler loop (between fork/join jobs, by `yield_now`) are timed one
//! by one.

use std::cell::Cell;
use std::time::Duration;

use super::clock;
use super::stats::WorkerCounters;

/// `ThreadPoolBuilder::long_poll_threshold`'s default.
pub(crate) const DEFAULT_LONG_POLL_THRESHOLD: Duration = Duration::from_millis(10);

/// The shortest long-poll threshold: below a millisecond, a worker's
/// ordinary hiccups (a page fault, an interrupt, being preempted) would
/// count, and the poll clock's cheap first check assumes it
/// (`sched/clock.rs`).
pub(crate) const MIN_LONG_POLL_THRESHOLD: Duration = Duration::from_millis(1);

/// The longest long-poll threshold: an hour. Longer is no threshold at all
/// (to count no poll, ignore the counter).
pub(crate) const MAX_LONG_POLL_THRESHOLD: Duration = Duration::from_secs(3600);

/// The most polls timed as one group: two clock reads per 128 polls cost
/// well under 1% of the shortest polls.
pub(crate) const MAX_GROUP: u32 = 128;

/// Groups at least this many ticks long may be longer than the shortest
/// threshold; shorter ones are not.
const MAY_BE_LONG: u64 = clock::ticks_in_at_least(MIN_LONG_POLL_THRESHOLD);

/// A worker's long-poll timing: the group size it has adapted to, and the
/// threshold.
pub(crate) struct PollTiming {
    group_size: Cell<u32>,
    /// A 64th of the threshold, in ticks: at the slowest rate expected
    /// (a shorter time on a faster counter) until the counter's rate is
    /// measured, then at its rate.
    target: Cell<u64>,
    calibrated: Cell<bool>,
    threshold: Duration,
}

impl PollTiming {
    pub(crate) fn new(threshold: Duration) -> PollTiming {
        PollTiming {
            group_size: Cell::new(1),
            target: Cell::new(clock::ticks_in_at_least(threshold / 64)),
            calibrated: Cell::new(false),
            threshold,
        }
    }

    /// A group ended by a completing task ([`poll_completing`]) took
    /// `ticks`: counts a long poll if that is longer than the threshold.
    #[cold]
    pub(crate) fn completed(&self, ticks: u64, counters: &WorkerCounters) {
        self.group_took(ticks, counters);
    }

    /// A group of polls took `ticks`: counts a long poll if that
    /// is longer than the threshold, and adapts the group size.
    #[cold]
    #[inline(never)]
    fn group_took(&self, ticks: u64, counters: &WorkerCounters) {
        // A "negative" interval (the thread moved to a core whose counter
        // is a little behind) wraps to near `u64::MAX`, and a group that
        // its completing poll ended measures at least 2^63 ticks
        // (`ended_start`): not a long group.
        if ticks >= 1 << 63 {
            return;
        }
        if !self.calibrated.get()
            && let Some(target) = clock::ticks_in(self.threshold / 64)
        {
            self.target.set(target);
            self.calibrated.set(true);
        }
        let target = self.target.get();
        if ticks > target {
            self.group_size.set(1);
            if ticks >= MAY_BE_LONG && clock::duration(ticks) > self.threshold {
                counters.long_poll();
            }
        } else if ticks < target / 4 {
            self.group_size
                .set((self.group_size.get() * 2).min(MAX_GROUP));
        }
    }
}

/// A thread's open group of task polls, set aside while a nested loop
/// runs ([`enter_loop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PollGroup {
    start: u64,
    left: u32,
}

thread_local! {
    /// The clock when this thread's open group's first poll started.
    static START: Cell<u64> = const { Cell::new(0) };
    /// The polls this thread's open group has left, the running one
    /// included; 0: none open. Thread-locals rather than values of the
    /// loop, so that a task's poll can end its group as it completes
    /// ([`poll_completing`]); two, so that counting a poll touches one
    /// word: the end of a poll is a decrement in memory and a branch on
    /// zero, the start of one a compare with zero. `const`, without a
    /// destructor: a plain load or store.
    static LEFT: Cell<u32> = const { Cell::new(0) };
}

/// What [`poll_completing`] leaves in `START` when it ends a group whose
/// last poll still runs: half the counter's range past the clock, so that
/// the interval the poll's end measures is at least 2^63 ticks, which
/// [`PollTiming::group_took`] takes for "negative" and ignores. The poll's
/// end then needs no test of its own for a group that ended early.
#[inline]
fn ended_start(now: u64) -> u64 {
    now.wrapping_add(1 << 63)
}

/// A scheduler loop starts on this thread, maybe inside a poll of an outer
/// loop (a task's `join` waiting for stolen work): the outer group is set
/// aside, to go on (with that poll's whole time) when [`leave_loop`] puts
/// it back.
#[inline]
pub(crate) fn enter_loop() -> PollGroup {
    PollGroup {
        start: START.with(Cell::get),
        left: LEFT.with(|left| left.replace(0)),
    }
}

/// The loop begun with [`enter_loop`] returns: its open group ends, and
/// the outer one, `outer`, is back.
#[inline]
pub(crate) fn leave_loop<'c>(
    outer: PollGroup,
    timing: &PollTiming,
    counters: impl FnOnce() -> &'c WorkerCounters,
) {
    close(timing, counters);
    START.with(|start| start.set(outer.start));
    LEFT.with(|left| left.set(outer.left));
}

/// A task poll is about to start: opens a group if none is.
#[inline]
pub(crate) fn before_poll(timing: &PollTiming) {
    LEFT.with(|left| {
        if left.get() == 0 {
            left.set(timing.group_size.get());
            START.with(|start| start.set(clock::ticks()));
        }
    });
}

/// The poll begun after [`before_poll`] ended: the group ends if it is
/// full. (A group that its poll ended early, [`poll_completing`], ends
/// here too, measuring nothing: see [`ended_start`].)
#[inline]
pub(crate) fn after_poll<'c>(timing: &PollTiming, counters: impl FnOnce() -> &'c WorkerCounters) {
    let ends = LEFT.with(|left| {
        // Written so that it compiles to a decrement in memory and a
        // branch: `before_poll` left at least one.
        let rest = left.get().wrapping_sub(1);
        left.set(rest);
        rest == 0
    });
    if ends {
        end(timing, counters);
    }
}

/// The loop does something other than polling a task next: ends the open
/// group, if any.
#[inline]
pub(crate) fn close<'c>(timing: &PollTiming, counters: impl FnOnce() -> &'c WorkerCounters) {
    if LEFT.with(|left| left.replace(0)) > 0 {
        end(timing, counters);
    }
}

/// `counters` (the worker's) are looked up only for a group that counts or
/// adapts: not on the fast path.
#[inline]
fn end<'c>(timing: &PollTiming, counters: impl FnOnce() -> &'c WorkerCounters) {
    let took = clock::ticks().wrapping_sub(START.with(Cell::get));
    // Out of line: a long group, or one short enough to grow the size.
    let target = timing.target.get();
    if took > target || (took < target / 4 && timing.group_size.get() < MAX_GROUP) {
        timing.group_took(took, counters());
    }
}

/// Times one task poll, `poll`, as a group of its own (a task polled
/// outside the scheduler loop).
#[inline]
pub(crate) fn time_one<'c>(
    timing: &PollTiming,
    counters: impl Fn() -> &'c WorkerCounters,
    poll: impl FnOnce(),
) {
    let outer = enter_loop();
    START.with(|start| start.set(clock::ticks()));
    LEFT.with(|left| left.set(1));
    poll();
    leave_loop(outer, timing, counters);
}

/// A task's poll returned `Ready`, and the task is about to complete (its
/// future dropped, its output stored but not yet visible): the
/// ticks its group took so far if that may be longer than the threshold
/// (`None` otherwise, and outside a group), for the executor to count
/// ([`PollTiming::completed`]) before the task's handle sees the output.
/// Such a group ends with this poll, measuring nothing more (see
/// [`ended_start`]), so that nothing is counted twice and the next group
/// starts at the size the long one left, one poll. A clock read per
/// completed task.
#[inline]
pub(crate) fn poll_completing() -> Option<u64> {
    if LEFT.with(Cell::get) == 0 {
        return None;
    }
    let now = clock::ticks();
    let took = now.wrapping_sub(START.with(Cell::get));
    if (MAY_BE_LONG..1 << 63).contains(&took) {
        LEFT.with(|left| left.set(1));
        START.with(|start| start.set(ended_start(now)));
        Some(took)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PoolStats;

    fn long_polls(counters: &WorkerCounters) -> u64 {
        let mut stats = PoolStats::default();
        counters.read_into(std::time::Instant::now(), &mut stats);
        stats.long_polls
    }

    fn spin(time: Duration) {
        let start = std::time::Instant::now();
        while start.elapsed() < time {}
    }

    #[test]
    fn short_polls_grow_the_group_and_count_nothing() {
        let timing = PollTiming::new(Duration::from_millis(10));
        let counters = WorkerCounters::default();
        let outer = enter_loop();
        for _ in 0..10_000 {
            before_poll(&timing);
            after_poll(&timing, || &counters);
        }
        leave_loop(outer, &timing, || &counters);
        assert_eq!(timing.group_size.get(), MAX_GROUP);
        assert_eq!(long_polls(&counters), 0);
    }

    // Mutation caught: `group_took` not resetting the size to 1 (the
    // next two long polls would share a group and count once).
    #[test]
    fn a_long_poll_counts_once_and_the_group_falls_to_one() {
        let timing = PollTiming::new(Duration::from_millis(1));
        let counters = WorkerCounters::default();
        timing.group_size.set(MAX_GROUP);
        let outer = enter_loop();
        for poll in 0..MAX_GROUP {
            before_poll(&timing);
            if poll == 3 {
                spin(Duration::from_millis(3));
            }
            after_poll(&timing, || &counters);
        }
        assert_eq!(long_polls(&counters), 1);
        assert_eq!(timing.group_size.get(), 1);
        // From now on each poll is a group: two long ones count twice.
        for _ in 0..2 {
            before_poll(&timing);
            spin(Duration::from_millis(3));
            after_poll(&timing, || &counters);
        }
        leave_loop(outer, &timing, || &counters);
        assert_eq!(long_polls(&counters), 3);
    }

    // Mutation caught: `close` keeping the group open (the spin after it
    // counted as a poll's time).
    #[test]
    fn closing_ends_the_group_before_other_work() {
        let timing = PollTiming::new(Duration::from_millis(1));
        let counters = WorkerCounters::default();
        timing.group_size.set(MAX_GROUP);
        let outer = enter_loop();
        before_poll(&timing);
        after_poll(&timing, || &counters);
        close(&timing, || &counters);
        // A job or a sleep after the close is not a poll's time.
        spin(Duration::from_millis(3));
        before_poll(&timing);
        after_poll(&timing, || &counters);
        leave_loop(outer, &timing, || &counters);
        assert_eq!(long_polls(&counters), 0);
    }

    // Mutation caught: `enter_loop` not setting the outer group aside (the
    // nested loop's polls would end it early), `leave_loop` not putting
    // it back (the outer poll's time lost).
    #[test]
    fn a_nested_loop_leaves_the_outer_group_to_the_outer_poll() {
        let timing = PollTiming::new(Duration::from_millis(1));
        let counters = WorkerCounters::default();
        let outer = enter_loop();
        before_poll(&timing);
        // The outer poll waits in a nested loop that runs short polls.
        let nested = enter_loop();
        for _ in 0..3 {
            before_poll(&timing);
            after_poll(&timing, || &counters);
        }
        // It finds no work and waits, as `run_until` does: after a close.
        close(&timing, || &counters);
        spin(Duration::from_millis(3));
        leave_loop(nested, &timing, || &counters);
        assert_eq!(long_polls(&counters), 0);
        after_poll(&timing, || &counters);
        leave_loop(outer, &timing, || &counters);
        assert_eq!(long_polls(&counters), 1);
    }

    #[test]
    fn time_one_measures_its_poll_alone() {
        let timing = PollTiming::new(Duration::from_millis(1));
        let counters = WorkerCounters::default();
        time_one(&timing, || &counters, || {});
        assert_eq!(long_polls(&counters), 0);
        time_one(&timing, || &counters, || spin(Duration::from_millis(3)));
        assert_eq!(long_polls(&counters), 1);
    }

    // Mutation caught: `poll_completing` not ending the group (the
    // completed poll counted again when the group ends, and the size not
    // back to one for the next poll): leaving `START` as it was (counted
    // again at the poll's end), or leaving `LEFT` at 0 (the poll's end
    // wraps it, and the group never ends: the next long poll is lost).
    #[test]
    fn a_completing_poll_is_counted_once() {
        let timing = PollTiming::new(Duration::from_millis(1));
        let counters = WorkerCounters::default();
        let outer = enter_loop();
        assert_eq!(poll_completing(), None, "no group open yet");
        before_poll(&timing);
        spin(Duration::from_millis(3));
        let ticks = poll_completing().expect("3 ms may be long");
        timing.completed(ticks, &counters);
        assert_eq!(long_polls(&counters), 1);
        after_poll(&timing, || &counters);
        // The next group is one poll: a long one right after counts too.
        assert_eq!(timing.group_size.get(), 1);
        before_poll(&timing);
        spin(Duration::from_millis(3));
        after_poll(&timing, || &counters);
        leave_loop(outer, &timing, || &counters);
        assert_eq!(long_polls(&counters), 2);
    }
}
