//! The hierarchical timer wheel (Varghese and Lauck's hashed and
//! hierarchical timing wheels, laid out as tokio's time driver lays them
//! out): six levels of 64 slots, a tick of one millisecond.
//!
//! Level `l` has slots of `64^l` ticks and covers `64^(l+1)`: level 0
//! the next 64 ms one slot per millisecond, level 5 about 2.2 years. An
//! entry goes to the level of the highest 6-bit digit in which its
//! deadline differs from `elapsed` (the time processed so far), in the
//! slot of that digit. Every entry of a lower level therefore expires
//! before every entry of a higher one, so the next expiration is the
//! first occupied slot of the lowest occupied level (one bit scan per
//! level). When time reaches a slot of level `l > 0`, its entries move
//! down ("cascade") to the levels their deadlines now select; at level 0
//! they fire.
//!
//! Entries live in a slab; each slot is an intrusive doubly linked list
//! through them, so insertion and cancellation are O(1), and a 64-bit
//! mask per level says which slots hold entries. An entry stays in the
//! slab after it fired, until its owner (a `Sleep`) removes it: the key
//! the owner holds is never reused behind its back.

use std::task::Waker;

use slab::Slab;

/// Bits of a level's digit: 64 slots per level.
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;
const LEVELS: usize = 6;
/// The span of the whole wheel, in ticks: deadlines further out than this
/// from `elapsed` wait in the top level and are placed again when it comes
/// round (they never fire early: see `process`).
const MAX_SPAN: u64 = (1 << (SLOT_BITS as usize * LEVELS)) - 1;
/// No entry: the end of a slot's list.
const NIL: usize = usize::MAX;

/// A timer in the wheel, by its slab key (owned by one `Sleep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey(usize);

/// The wheel. Not thread-safe: the pool's timers hold it under a lock.
pub(crate) struct Wheel {
    /// Ticks processed: every entry with a deadline at or before this has
    /// fired.
    elapsed: u64,
    levels: [Level; LEVELS],
    entries: Slab<Entry>,
    /// Entries linked into a slot: those that have not fired.
    pending: usize,
}

struct Level {
    /// Bit `s` set: slot `s` holds entries.
    occupied: u64,
    /// The first entry of each slot's list.
    heads: [usize; SLOTS],
}

struct Entry {
    /// The deadline, in ticks.
    when: u64,
    /// Where the entry is linked: `Some((level, slot))` while pending.
    place: Option<(usize, usize)>,
    prev: usize,
    next: usize,
    /// Whom to wake when it fires; `None` until the owner polled.
    waker: Option<Waker>,
    fired: bool,
}

/// What [`Wheel::register`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Registered {
    /// The timer waits; its waker is stored.
    Pending,
    /// The timer has fired (or its deadline had passed already).
    Fired,
}

/// The next slot to process: its level, its index, and the tick at which
/// it is due.
#[derive(Debug, Clone, Copy)]
struct Expiration {
    level: usize,
    slot: usize,
    deadline: u64,
}

impl Wheel {
    pub(crate) fn new() -> Self {
        Wheel {
            elapsed: 0,
            levels: std::array::from_fn(|_| Level {
                occupied: 0,
                heads: [NIL; SLOTS],
            }),
            entries: Slab::new(),
            pending: 0,
        }
    }

    /// Ticks processed so far.
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Timers that have not fired (nor been removed).
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    /// Timers in the slab (pending or fired and not yet removed).
    #[cfg(any(test, bwos_loom))]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds a timer due at tick `when`, waking `waker` when it fires. A
    /// deadline already processed (another thread may have processed past
    /// it since the caller read the clock) makes a timer that has fired:
    /// see [`has_fired`](Self::has_fired).
    pub(crate) fn insert(&mut self, when: u64, waker: Option<Waker>) -> TimerKey {
        let key = self.entries.insert(Entry {
            when,
            place: None,
            prev: NIL,
            next: NIL,
            waker,
            fired: false,
        });
        if when <= self.elapsed {
            self.entries[key].fired = true;
        } else {
            self.link(key);
        }
        TimerKey(key)
    }

    /// Stores `waker` for timer `key` unless it has fired.
    pub(crate) fn register(&mut self, key: TimerKey, waker: &Waker) -> Registered {
        let entry = &mut self.entries[key.0];
        if entry.fired {
            return Registered::Fired;
        }
        match &entry.waker {
            Some(current) if current.will_wake(waker) => {}
            _ => entry.waker = Some(waker.clone()),
        }
        Registered::Pending
    }

    /// Whether timer `key` has fired.
    pub(crate) fn has_fired(&self, key: TimerKey) -> bool {
        self.entries[key.0].fired
    }

    /// Moves timer `key` to tick `when`, keeping its waker; returns the
    /// waker if the new deadline was processed already (it fired: the
    /// caller wakes it outside the lock).
    pub(crate) fn reset(&mut self, key: TimerKey, when: u64) -> Option<Waker> {
        self.unlink(key.0);
        let entry = &mut self.entries[key.0];
        entry.when = when;
        entry.fired = false;
        if when <= self.elapsed {
            entry.fired = true;
            return entry.waker.take();
        }
        self.link(key.0);
        None
    }

    /// Removes timer `key` (cancelled if pending): O(1).
    pub(crate) fn remove(&mut self, key: TimerKey) {
        self.unlink(key.0);
        self.entries.remove(key.0);
    }

    /// The tick of the next slot to process (a level-0 slot fires, a
    /// higher one cascades), or `None` without pending timers.
    pub(crate) fn next_expiration_tick(&self) -> Option<u64> {
        self.next_expiration().map(|expiration| expiration.deadline)
    }

    /// Processes time up to tick `now`: fires every timer due by then and
    /// hands their wakers to `wake` (the caller wakes them after releasing
    /// its lock). Returns how many fired.
    pub(crate) fn process(&mut self, now: u64, mut wake: impl FnMut(Waker)) -> usize {
        let mut fired = 0;
        while let Some(expiration) = self.next_expiration() {
            if expiration.deadline > now {
                break;
            }
            let mut next = std::mem::replace(
                &mut self.levels[expiration.level].heads[expiration.slot],
                NIL,
            );
            self.levels[expiration.level].occupied &= !(1 << expiration.slot);
            self.elapsed = expiration.deadline;
            while next != NIL {
                let key = next;
                let entry = &mut self.entries[key];
                next = entry.next;
                entry.place = None;
                // Out of its slot: fired below, or linked again.
                self.pending -= 1;
                entry.prev = NIL;
                entry.next = NIL;
                if entry.when <= expiration.deadline {
                    entry.fired = true;
                    fired += 1;
                    if let Some(waker) = entry.waker.take() {
                        wake(waker);
                    }
                } else {
                    // Cascades to the level its deadline selects now (or
                    // back to the top if it is beyond the wheel's span).
                    self.link(key);
                }
            }
        }
        self.elapsed = self.elapsed.max(now);
        fired
    }

    /// The next slot due: the first occupied slot, from `elapsed` on, of
    /// the lowest occupied level.
    fn next_expiration(&self) -> Option<Expiration> {
        let (level, occupied) = self
            .levels
            .iter()
            .enumerate()
            .find(|(_, level)| level.occupied != 0)?;
        let slot_range = slot_range(level);
        let level_range = slot_range * SLOTS as u64;
        // The slots from the one `elapsed` is in, around the level.
        let now_slot = (self.elapsed / slot_range) % SLOTS as u64;
        let rotated = occupied.occupied.rotate_right(now_slot as u32);
        let slot = (u64::from(rotated.trailing_zeros()) + now_slot) % SLOTS as u64;
        let level_start = self.elapsed & !(level_range - 1);
        let mut deadline = level_start + slot * slot_range;
        if deadline <= self.elapsed && level > 0 {
            // A slot behind `elapsed`: only the top level holds such, for
            // deadlines beyond the wheel's span; it comes round next lap.
            deadline += level_range;
        }
        Some(Expiration {
            level,
            slot: slot as usize,
            deadline: deadline.max(self.elapsed),
        })
    }

    /// Links pending entry `key` into the slot its deadline selects.
    fn link(&mut self, key: usize) {
        let when = self.entries[key].when;
        let level = level_for(self.elapsed, when);
        let slot = ((when.min(self.elapsed.saturating_add(MAX_SPAN))
            >> (SLOT_BITS as usize * level))
            % SLOTS as u64) as usize;
        let head = self.levels[level].heads[slot];
        if head != NIL {
            self.entries[head].prev = key;
        }
        let entry = &mut self.entries[key];
        entry.place = Some((level, slot));
        entry.prev = NIL;
        entry.next = head;
        self.pending += 1;
        self.levels[level].heads[slot] = key;
        self.levels[level].occupied |= 1 << slot;
    }

    /// Closes the wheel for good (its pool's workers stopped): every
    /// pending timer fires now, its waker going to `wake`, and every timer
    /// added or reset later has fired at once. Timers stay in the slab
    /// until removed, as fired ones do.
    pub(crate) fn close(&mut self, mut wake: impl FnMut(Waker)) {
        self.elapsed = CLOSED;
        // Every timer fired: none is pending (`remove` finds them out of
        // their slots and leaves the count alone).
        self.pending = 0;
        for level in &mut self.levels {
            level.occupied = 0;
            level.heads = [NIL; SLOTS];
        }
        for (_, entry) in &mut self.entries {
            entry.place = None;
            entry.prev = NIL;
            entry.next = NIL;
            if !entry.fired {
                entry.fired = true;
                if let Some(waker) = entry.waker.take() {
                    wake(waker);
                }
            }
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.elapsed == CLOSED
    }

    /// Unlinks entry `key` from its slot, if it is in one.
    fn unlink(&mut self, key: usize) {
        let Some((level, slot)) = self.entries[key].place.take() else {
            return;
        };
        self.pending -= 1;
        let (prev, next) = {
            let entry = &mut self.entries[key];
            (
                std::mem::replace(&mut entry.prev, NIL),
                std::mem::replace(&mut entry.next, NIL),
            )
        };
        if prev == NIL {
            self.levels[level].heads[slot] = next;
        } else {
            self.entries[prev].next = next;
        }
        if next != NIL {
            self.entries[next].prev = prev;
        }
        if self.levels[level].heads[slot] == NIL {
            self.levels[level].occupied &= !(1 << slot);
        }
    }
}

/// `elapsed` of a closed wheel: past every deadline (they saturate one
/// below it).
const CLOSED: u64 = u64::MAX;

/// Ticks per slot of `level`.
fn slot_range(level: usize) -> u64 {
    1 << (SLOT_BITS as usize * level)
}

/// The level for a deadline `when` seen from `elapsed`: that of the highest
/// 6-bit digit in which they differ, the top level beyond the span.
fn level_for(elapsed: u64, when: u64) -> usize {
    let mut masked = (elapsed ^ when) | (SLOTS as u64 - 1);
    if masked >= MAX_SPAN {
        masked = MAX_SPAN - 1;
    }
    let significant = 63 - masked.leading_zeros() as usize;
    significant / SLOT_BITS as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fire_until(wheel: &mut Wheel, now: u64) -> usize {
        wheel.process(now, drop)
    }

    #[test]
    fn timers_fire_at_their_tick_not_before() {
        let mut wheel = Wheel::new();
        let soon = wheel.insert(5, None);
        let later = wheel.insert(70, None);
        let much_later = wheel.insert(5_000, None);
        assert_eq!(wheel.next_expiration_tick(), Some(5));
        assert_eq!(fire_until(&mut wheel, 4), 0);
        assert!(!wheel.has_fired(soon));
        assert_eq!(fire_until(&mut wheel, 5), 1);
        assert!(wheel.has_fired(soon));
        assert_eq!(fire_until(&mut wheel, 69), 0);
        assert!(!wheel.has_fired(later));
        assert_eq!(fire_until(&mut wheel, 70), 1);
        assert!(wheel.has_fired(later));
        assert_eq!(fire_until(&mut wheel, 4_999), 0);
        assert_eq!(fire_until(&mut wheel, 10_000), 1);
        assert!(wheel.has_fired(much_later));
        assert_eq!(wheel.next_expiration_tick(), None);
    }

    // Mutation caught: `Wheel::close` leaving `elapsed` as it was (a timer
    // added after the close waits in the wheel forever).
    #[test]
    fn closing_fires_every_timer_now_and_every_later_one_at_once() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let count = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(std::sync::Arc::clone(&count));
        let mut wheel = Wheel::new();
        let timers: Vec<_> = [5, 70, 5_000, MAX_SPAN * 2, u64::MAX]
            .into_iter()
            .map(|when| wheel.insert(when, Some(waker.clone())))
            .collect();
        assert_eq!(fire_until(&mut wheel, 5), 1);
        let mut woken = Vec::new();
        wheel.close(|waker| woken.push(waker));
        assert!(wheel.is_closed());
        assert_eq!(woken.len(), 4, "the four pending timers");
        assert_eq!(wheel.pending(), 0, "closed: nothing pending");
        woken.into_iter().for_each(Waker::wake);
        assert!(timers.iter().all(|&timer| wheel.has_fired(timer)));
        assert_eq!(wheel.next_expiration_tick(), None);
        let late = wheel.insert(u64::MAX - 1, Some(waker.clone()));
        assert!(wheel.has_fired(late));
        assert!(
            wheel.reset(timers[2], 10_000_000).is_none(),
            "fired: no waker left"
        );
        assert!(wheel.has_fired(timers[2]));
        assert_eq!(fire_until(&mut wheel, u64::MAX - 1), 0);
        for timer in timers {
            wheel.remove(timer);
        }
        wheel.remove(late);
        assert_eq!(wheel.len(), 0);
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 4);
    }

    #[test]
    fn a_removed_timer_never_fires() {
        let mut wheel = Wheel::new();
        let cancelled = wheel.insert(10, None);
        let kept = wheel.insert(10, None);
        wheel.remove(cancelled);
        assert_eq!(fire_until(&mut wheel, 10), 1);
        assert!(wheel.has_fired(kept));
        assert_eq!(wheel.len(), 1);
    }

    #[test]
    fn far_deadlines_do_not_overflow_or_fire_early() {
        let mut wheel = Wheel::new();
        let never = wheel.insert(u64::MAX, None);
        let beyond_span = wheel.insert(MAX_SPAN * 3 + 17, None);
        // Jump far ahead in a few big steps: nothing fires early.
        for now in [MAX_SPAN / 2, MAX_SPAN, MAX_SPAN * 2, MAX_SPAN * 3] {
            assert_eq!(fire_until(&mut wheel, now), 0, "at {now}");
        }
        assert_eq!(fire_until(&mut wheel, MAX_SPAN * 3 + 17), 1);
        assert!(wheel.has_fired(beyond_span));
        assert!(!wheel.has_fired(never));
        assert!(wheel.next_expiration_tick().is_some());
    }

    #[test]
    fn reset_moves_a_timer_either_way() {
        let mut wheel = Wheel::new();
        let timer = wheel.insert(100, None);
        assert!(wheel.reset(timer, 10).is_none());
        assert_eq!(fire_until(&mut wheel, 10), 1);
        assert!(wheel.has_fired(timer));
        // Reset after firing: pending again, later.
        assert!(wheel.reset(timer, 50).is_none());
        assert!(!wheel.has_fired(timer));
        assert_eq!(fire_until(&mut wheel, 49), 0);
        assert_eq!(fire_until(&mut wheel, 50), 1);
        // Reset into the past: fired at once.
        wheel.reset(timer, 20);
        assert!(wheel.has_fired(timer));
    }

    /// The wheel against the model at tick `now`: exactly the timers of
    /// `live` due by `now` have fired, and the next slot is due no later
    /// than the earliest pending deadline (a higher level's slot is due
    /// when it cascades).
    fn agrees_with_model(
        wheel: &Wheel,
        live: &[(TimerKey, u64)],
        now: u64,
    ) -> Result<(), TestCaseError> {
        for &(key, when) in live {
            prop_assert_eq!(
                wheel.has_fired(key),
                when <= now,
                "deadline {} at {}",
                when,
                now
            );
        }
        // Mutation caught: `process` not counting the entries it takes out
        // of a slot (the count drifts up with every cascade and firing).
        prop_assert_eq!(
            wheel.pending(),
            live.iter().filter(|(_, when)| *when > now).count(),
            "pending timers at {}",
            now
        );
        let next = wheel.next_expiration_tick();
        let pending = live
            .iter()
            .filter(|(_, when)| *when > now)
            .map(|(_, when)| *when)
            .min();
        match (next, pending) {
            (None, None) => {}
            (Some(next), Some(pending)) => prop_assert!(
                next <= pending && next > now,
                "next {} pending {} now {}",
                next,
                pending,
                now
            ),
            other => prop_assert!(false, "next {:?}", other),
        }
        Ok(())
    }

    /// One step of [`timers_added_while_time_runs_fire_exactly_when_due`].
    #[derive(Debug, Clone)]
    enum Op {
        /// A timer due this many ticks after `elapsed`.
        Insert(u64),
        /// Remove the live timer at this index (modulo the count).
        Remove(usize),
        /// Move the timer at this index to this many ticks after `elapsed`.
        Reset(usize, u64),
        /// Process time this many ticks on.
        Advance(u64),
    }

    /// Delays and steps from a tick to beyond level 3 (about 4.6 hours of
    /// ticks), weighted to the small ones a pool mostly sees.
    fn span() -> impl Strategy<Value = u64> {
        prop_oneof![
            4 => 0u64..70,
            3 => 0u64..5_000,
            2 => 0u64..300_000,
            1 => 0u64..20_000_000,
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => span().prop_map(Op::Insert),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), span()).prop_map(|(i, d)| Op::Reset(i, d)),
            4 => span().prop_map(Op::Advance),
        ]
    }

    proptest! {
        /// Against a model (a sorted list): the same timers fire by every
        /// `now`, whatever the deadlines, removals and steps.
        #[test]
        fn fires_exactly_the_due_timers(
            deadlines in proptest::collection::vec(0u64..300_000, 1..60),
            removals in proptest::collection::vec(any::<bool>(), 60),
            steps in proptest::collection::vec(1u64..20_000, 1..40),
        ) {
            let mut wheel = Wheel::new();
            let keys: Vec<_> = deadlines.iter().map(|&when| wheel.insert(when + 1, None)).collect();
            let mut live: Vec<(TimerKey, u64)> = Vec::new();
            for (i, (&key, &when)) in keys.iter().zip(&deadlines).enumerate() {
                if removals[i] {
                    wheel.remove(key);
                } else {
                    live.push((key, when + 1));
                }
            }
            let mut now = 0;
            for step in steps {
                now += step;
                fire_until(&mut wheel, now);
                agrees_with_model(&wheel, &live, now)?;
            }
        }

        /// Against a model, with timers added, moved and removed while
        /// time runs (a long-running pool: `elapsed` far from zero, every
        /// level in use, the slots of a level behind and ahead of
        /// `elapsed`): after every step exactly the due timers have fired,
        /// and the next expiration is no later than the earliest pending
        /// deadline.
        #[test]
        fn timers_added_while_time_runs_fire_exactly_when_due(
            start in prop_oneof![Just(0u64), 0u64..50_000_000],
            ops in proptest::collection::vec(op(), 1..120),
        ) {
            let mut wheel = Wheel::new();
            fire_until(&mut wheel, start);
            let mut now = start;
            let mut live: Vec<(TimerKey, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(delay) => {
                        let when = now + delay;
                        let key = wheel.insert(when, None);
                        prop_assert_eq!(wheel.has_fired(key), when <= now);
                        live.push((key, when));
                    }
                    Op::Remove(i) if !live.is_empty() => {
                        let (key, _) = live.swap_remove(i % live.len());
                        wheel.remove(key);
                    }
                    Op::Reset(i, delay) if !live.is_empty() => {
                        let i = i % live.len();
                        let when = now + delay;
                        wheel.reset(live[i].0, when);
                        live[i].1 = when;
                    }
                    Op::Remove(_) | Op::Reset(..) => {}
                    Op::Advance(step) => {
                        now += step;
                        fire_until(&mut wheel, now);
                    }
                }
                agrees_with_model(&wheel, &live, now)?;
            }
        }
    }
}
