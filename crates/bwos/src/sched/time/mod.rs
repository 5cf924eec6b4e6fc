//! A pool's timers: a hierarchical wheel ([`wheel`]) that the pool's own
//! workers drive, without a timer thread.
//!
//! # Who fires timers
//! - **A worker that falls asleep** first fires the timers that are due
//!   (their tasks land in its queue, and it stays awake for them). Then
//!   one sleeping worker, the *watcher*, sleeps only until the next
//!   deadline: in the I/O driver's poll if it holds the driver (the poll's
//!   timeout), else on its park token with a timeout. The other sleepers
//!   sleep until woken. So a pool without sockets sleeps with a deadline
//!   instead of forever, and only one worker wakes for a timer.
//! - **A new timer that is due before the watcher's deadline** interrupts
//!   the watcher (an unpark, or the driver's eventfd; neither changes its
//!   sleep state), which looks at the wheel again and sleeps until the new
//!   deadline. The watcher's deadline is read and written under the
//!   wheel's lock, and an unpark before the park is kept by the park
//!   token. The eventfd is written only if the watcher already sits in
//!   the driver's seat, so an interrupt that comes between the watcher's
//!   look at the wheel and its taking the seat would be lost: the
//!   interrupt also raises the watcher's interrupt flag
//!   ([`Timers::is_interrupted`]), which every sleeper looks at after
//!   taking the seat (a Dekker pair with the seat,
//!   `idle::park::park_worker`), so no deadline is missed.
//! - **The watch is handed over, never dropped.** A watcher that wakes for
//!   any reason (work injected or stolen, tasks the driver woke, its latch)
//!   leaves the watch as soon as its sleep ends, before it runs anything
//!   (`idle::park::leave_timer_watch`): if a deadline is pending it assigns
//!   the watch to another sleeping worker ([`Timers::assign_watch`]) and
//!   interrupts it, and that worker looks at the wheel again and sleeps
//!   until the next deadline. A new timer while nobody watches does the
//!   same. So while a deadline exists and some worker sleeps, a sleeping
//!   worker sleeps until it (the loom models `timers_watch_is_handed_over`
//!   and `timers_vacant_watch_is_taken`). A worker assigned the watch
//!   that wakes before it looks at the wheel hands it on the same way.
//!   Checking the sleepers under the wheel's lock closes the race with a
//!   worker falling asleep: its announcement (`Sleep`) comes before its
//!   `watch`, so either the assigner sees it asleep or its `watch`, later
//!   under the lock, sees the vacant watch and the pending deadline.
//! - **A busy worker** checks the next deadline every
//!   [`INJECTOR_INTERVAL`](super::queues::INJECTOR_INTERVAL) tasks (one
//!   atomic load and a clock read) and fires what is due, and a worker
//!   running fork/join jobs does so every
//!   [`TASK_SLICE`](super::queues::TASK_SLICE) of them. A poll that runs
//!   long without either (a task that blocks) does not look: the timers
//!   then rely on a sleeping worker, which is why the watch is never left
//!   vacant while one sleeps (above).
//!
//! A `Sleep` that is polled after its deadline is ready whether or not a
//! worker fired its timer yet, so a late worker delays a wake-up, never a
//! result.
//!
//! # Time
//! A tick is one millisecond since the timers were created. Deadlines are
//! rounded up to a tick and "now" down, so a timer never fires before its
//! deadline. Deadlines beyond the wheel's span (about 2.2 years), up to
//! `Instant`'s end, wait at the top level and never overflow.

#[cfg(any(feature = "test-util", bwos_loom))]
pub(crate) mod auto_advance;
pub(crate) mod pool_clock;
pub(crate) mod wheel;

use std::task::Waker;
use std::time::{Duration, Instant};

use super::quietly;
use super::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use pool_clock::PoolClock;
use wheel::Wheel;
pub(crate) use wheel::{Registered, TimerKey};

/// `next_tick` when no timer is pending.
const NONE: u64 = u64::MAX;

/// `watcher_index` when nobody watches.
const NOBODY: usize = usize::MAX;

/// The longest a watcher sleeps at once: deadlines further out (up to
/// `Instant`'s end) are looked at again every hour instead of being turned
/// into a timeout that could overflow the clock.
const MAX_WATCH: Duration = Duration::from_secs(3600);

/// A pool's timers.
pub(crate) struct Timers {
    /// Tick 0: the clock's epoch.
    start: Instant,
    /// What "now" is for these timers (`pool_clock.rs`): the system
    /// clock, or with `test-util` a clock that can be paused.
    clock: PoolClock,
    inner: Mutex<Inner>,
    /// The tick of the next slot to process, `NONE` without pending
    /// timers: what a busy worker compares the clock with, without the
    /// lock. Written under the lock.
    next_tick: AtomicU64,
    /// The watcher's deadline moved earlier, or the watch was assigned to
    /// it, since it looked at the wheel (`watch`): raised by
    /// `earlier_than_watcher` and `assign_watch`, lowered by `watch`, all
    /// under the lock.
    interrupted: AtomicBool,
    /// The watcher's index (`NOBODY`), mirrored out of the lock for
    /// [`is_interrupted`](Self::is_interrupted). Written under the lock.
    watcher_index: AtomicUsize,
}

struct Inner {
    wheel: Wheel,
    /// The sleeping worker that wakes for the next deadline, and the tick
    /// it sleeps until (`NONE`: until woken).
    watcher: Option<(usize, u64)>,
}

/// What [`Timers::insert`] did.
#[derive(Debug)]
pub(crate) struct Inserted {
    pub(crate) key: TimerKey,
    /// `Fired`: the deadline was processed already; nobody wakes the
    /// waker.
    pub(crate) registered: Registered,
    /// Whom the caller must wake for the new deadline.
    pub(crate) wake: WakeFor,
}

/// Whom to wake after a deadline was added or moved earlier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeFor {
    /// Nobody: the watcher sleeps until this deadline or an earlier one.
    Nobody,
    /// Interrupt this watcher: the new deadline is earlier than its own.
    Watcher(usize),
    /// Nobody watches: a sleeping worker must take the watch
    /// ([`Timers::assign_watch`]).
    VacantWatch,
}

/// What a worker about to sleep should do about timers.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    /// Another worker watches: sleep until woken.
    Elsewhere,
    /// This worker watches: sleep at most this long (`None`: no timer is
    /// pending; a new one interrupts the sleep).
    Until(Option<Duration>),
}

impl Timers {
    pub(crate) fn new() -> Self {
        let clock = PoolClock::new();
        Timers {
            start: clock.epoch(),
            clock,
            inner: Mutex::new(Inner {
                wheel: Wheel::new(),
                watcher: None,
            }),
            next_tick: AtomicU64::new(NONE),
            interrupted: AtomicBool::new(false),
            watcher_index: AtomicUsize::new(NOBODY),
        }
    }

    /// The timers' clock.
    #[cfg(any(feature = "test-util", bwos_loom))]
    pub(crate) fn clock(&self) -> &PoolClock {
        &self.clock
    }

    /// The clock's reading: the instant deadlines are compared with.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // No user code runs under the lock (wakers are woken after it is
        // released), so a poisoned lock holds a consistent wheel.
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The tick of `deadline`, rounded up (a timer never fires early);
    /// saturates far in the future.
    fn tick_of(&self, deadline: Instant) -> u64 {
        let since = deadline.saturating_duration_since(self.start);
        let millis = since.as_nanos().div_ceil(1_000_000);
        u64::try_from(millis)
            .unwrap_or(u64::MAX - 1)
            .min(u64::MAX - 1)
    }

    /// The tick `now` is in, rounded down.
    fn now_tick(&self, now: Instant) -> u64 {
        let millis = now.saturating_duration_since(self.start).as_millis();
        u64::try_from(millis).unwrap_or(u64::MAX - 1)
    }

    /// Publishes the wheel's next expiration for busy workers.
    fn publish_next(&self, inner: &Inner) {
        let next = inner.wheel.next_expiration_tick().unwrap_or(NONE);
        // Relaxed: a hint read by `fire_if_due`, which takes the lock to
        // act on it; a stale value costs a late or an extra look.
        self.next_tick.store(next, Ordering::Relaxed);
    }

    /// Adds a timer for `deadline` that wakes `waker`. Returns its key,
    /// whether it waits or has fired already (a worker may have processed
    /// past `deadline` since the caller looked at the clock: then nobody
    /// will wake `waker`, and the caller must not wait), and whom the
    /// caller must wake for it (`idle::park::wake_for_timer`).
    pub(crate) fn insert(&self, deadline: Instant, waker: &Waker) -> Inserted {
        self.insert_at_tick(self.tick_of(deadline), waker)
    }

    /// [`insert`](Self::insert) at tick `when`.
    pub(crate) fn insert_at_tick(&self, when: u64, waker: &Waker) -> Inserted {
        let mut inner = self.lock();
        let key = inner.wheel.insert(when, Some(waker.clone()));
        if inner.wheel.has_fired(key) {
            return Inserted {
                key,
                registered: Registered::Fired,
                wake: WakeFor::Nobody,
            };
        }
        let wake = self.earlier_than_watcher(&mut inner, when);
        self.publish_next(&inner);
        Inserted {
            key,
            registered: Registered::Pending,
            wake,
        }
    }

    /// Whom deadline `when` needs woken: the watcher if it is due before
    /// the watcher's deadline (which becomes `when`: one interrupt per
    /// earlier deadline), a sleeper if nobody watches.
    fn earlier_than_watcher(&self, inner: &mut Inner, when: u64) -> WakeFor {
        match &mut inner.watcher {
            Some((index, until)) if when < *until => {
                *until = when;
                self.raise_interrupt();
                WakeFor::Watcher(*index)
            }
            Some(_) => WakeFor::Nobody,
            None => WakeFor::VacantWatch,
        }
    }

    /// Raises the watcher's interrupt flag (under the lock).
    fn raise_interrupt(&self) {
        // SeqCst: the interrupter's half of the Dekker pair with the
        // watcher taking the driver's seat (the interrupter's SeqCst fence
        // and load of the seat in `DriverSeat::wake` follow; the watcher's
        // store to the seat, fence and loads in `is_interrupted`).
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// Records `watcher` under the lock, and its index for
    /// [`is_interrupted`](Self::is_interrupted).
    fn set_watcher(&self, inner: &mut Inner, watcher: Option<(usize, u64)>) {
        inner.watcher = watcher;
        // SeqCst: read with the flag in `is_interrupted`, after the seat's
        // fence (same Dekker pair as `raise_interrupt`).
        self.watcher_index
            .store(watcher.map_or(NOBODY, |(index, _)| index), Ordering::SeqCst);
    }

    /// Stores `waker` for timer `key` unless it has fired.
    pub(crate) fn register(&self, key: TimerKey, waker: &Waker) -> Registered {
        self.lock().wheel.register(key, waker)
    }

    /// Moves timer `key` to `deadline`. Returns whom to wake for the new
    /// deadline.
    pub(crate) fn reset(&self, key: TimerKey, deadline: Instant) -> WakeFor {
        let when = self.tick_of(deadline);
        let (fired, interrupt) = {
            let mut inner = self.lock();
            let fired = inner.wheel.reset(key, when);
            let interrupt = self.earlier_than_watcher(&mut inner, when);
            self.publish_next(&inner);
            (fired, interrupt)
        };
        // Caught even though a user's `reset` runs this: a panic here would
        // skip the caller's wake-up of the watcher for the new deadline.
        if let Some(waker) = fired {
            quietly::wake(waker);
        }
        interrupt
    }

    /// Removes timer `key`, fired or not.
    pub(crate) fn remove(&self, key: TimerKey) {
        let mut inner = self.lock();
        inner.wheel.remove(key);
        self.publish_next(&inner);
    }

    /// Fires the timers due by now and wakes their tasks; returns how many
    /// fired.
    pub(crate) fn fire_due(&self) -> usize {
        self.fire_until(self.now_tick(self.now()))
    }

    /// Fires the timers due by tick `now` and wakes their tasks, outside
    /// the lock; returns how many fired.
    pub(crate) fn fire_until(&self, now: u64) -> usize {
        let mut wakers = Vec::new();
        let fired = {
            let mut inner = self.lock();
            let fired = inner.wheel.process(now, |waker| wakers.push(waker));
            self.publish_next(&inner);
            fired
        };
        wakers.into_iter().for_each(quietly::wake);
        fired
    }

    /// Timers that have not fired yet (under the lock, for `PoolStats`).
    pub(crate) fn pending(&self) -> usize {
        self.lock().wheel.pending()
    }

    /// Whether a timer may be due now (a hint, without the lock).
    pub(crate) fn maybe_due(&self) -> bool {
        // Relaxed: see `publish_next`.
        let next = self.next_tick.load(Ordering::Relaxed);
        next != NONE && next <= self.now_tick(self.now())
    }

    /// A busy worker's look: fires the due timers if the hint says some
    /// are.
    pub(crate) fn fire_if_due(&self) {
        if self.maybe_due() {
            self.fire_due();
        }
    }

    /// Worker `index` is about to sleep: it becomes the watcher if nobody
    /// is, and learns how long to sleep.
    pub(crate) fn watch(&self, index: usize) -> Watch {
        let mut inner = self.lock();
        match inner.watcher {
            Some((watcher, _)) if watcher != index => Watch::Elsewhere,
            _ => {
                let next = inner.wheel.next_expiration_tick();
                self.set_watcher(&mut inner, Some((index, next.unwrap_or(NONE))));
                // Relaxed: under the lock, which orders it before any
                // later raise (`earlier_than_watcher`, `assign_watch`).
                self.interrupted.store(false, Ordering::Relaxed);
                Watch::Until(next.map(|tick| {
                    self.start
                        .checked_add(Duration::from_millis(tick))
                        .map_or(MAX_WATCH, |deadline| {
                            deadline.saturating_duration_since(self.now())
                        })
                        .min(MAX_WATCH)
                }))
            }
        }
    }

    /// Whether worker `index` watches and must look at the wheel again:
    /// its deadline moved earlier, or the watch was assigned to it, since
    /// its last [`watch`](Self::watch). A sleeper that took the driver's
    /// seat (store, SeqCst fence) looks here before it blocks in the poll,
    /// and does not block if so.
    pub(crate) fn is_interrupted(&self, index: usize) -> bool {
        // SeqCst: the sleeper's half of the Dekker pair described in
        // `raise_interrupt` (pairs with its SeqCst stores of the flag and,
        // in `set_watcher`, of the index).
        self.interrupted.load(Ordering::SeqCst)
            && self.watcher_index.load(Ordering::SeqCst) == index
    }

    /// Worker `index` stopped sleeping: it no longer watches. Returns
    /// whether it was the watcher and a deadline is pending, that is,
    /// whether the watch must be handed over
    /// ([`assign_watch`](Self::assign_watch)).
    pub(crate) fn unwatch(&self, index: usize) -> bool {
        let mut inner = self.lock();
        if !matches!(inner.watcher, Some((watcher, _)) if watcher == index) {
            return false;
        }
        self.set_watcher(&mut inner, None);
        inner.wheel.next_expiration_tick().is_some()
    }

    /// If nobody watches and a deadline is pending: assigns the watch to
    /// the first of `candidates` that `is_asleep` and returns it (the
    /// caller interrupts it, which then looks at the wheel again). `None`
    /// if the watch is taken, nothing is pending, or no candidate sleeps
    /// (each worker that falls asleep later looks at the wheel itself).
    ///
    /// `is_asleep` is consulted under the lock: see "The watch is handed
    /// over" in the module docs for why a worker falling asleep meanwhile
    /// is not missed.
    pub(crate) fn assign_watch(
        &self,
        candidates: impl IntoIterator<Item = usize>,
        is_asleep: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let mut inner = self.lock();
        if inner.watcher.is_some() || inner.wheel.next_expiration_tick().is_none() {
            return None;
        }
        let chosen = candidates.into_iter().find(|&index| is_asleep(index))?;
        // `NONE`: it sleeps until woken so far; its next `watch` sets the
        // deadline, and any timer added before that interrupts it again.
        self.set_watcher(&mut inner, Some((chosen, NONE)));
        self.raise_interrupt();
        Some(chosen)
    }
}

impl Timers {
    /// The pool's workers stopped and nobody will fire timers again: every
    /// pending timer fires now (its task is woken) and every timer added
    /// later has fired at once, so that nothing waits for a deadline
    /// forever. A `Sleep` told "fired" before its deadline looks at
    /// [`is_shut_down`](Self::is_shut_down) and says why.
    pub(crate) fn shut_down(&self) {
        let mut wakers = Vec::new();
        {
            let mut inner = self.lock();
            inner.wheel.close(|waker| wakers.push(waker));
            self.set_watcher(&mut inner, None);
            self.publish_next(&inner);
        }
        wakers.into_iter().for_each(quietly::wake);
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.lock().wheel.is_closed()
    }
}

#[cfg(any(feature = "test-util", bwos_loom))]
impl Timers {
    /// Whether a timer is pending.
    pub(crate) fn any_pending(&self) -> bool {
        self.lock().wheel.next_expiration_tick().is_some()
    }

    /// The paused clock's automatic advance (`auto_advance.rs`): if a
    /// timer is pending, calls `claim` (under the lock), moves the clock
    /// to the next deadline and fires the timers due there; returns their
    /// wakers for the caller to wake once it holds no lock. `None` if no
    /// timer is pending.
    pub(crate) fn jump_to_next_deadline(&self, claim: impl FnOnce()) -> Option<Vec<Waker>> {
        let mut inner = self.lock();
        let mut next = inner.wheel.next_expiration_tick()?;
        claim();
        let mut wakers = Vec::new();
        loop {
            let deadline = self
                .start
                .checked_add(Duration::from_millis(next))
                .unwrap_or_else(|| pool_clock::add_saturating(self.start, Duration::MAX));
            self.clock.advance_to(deadline);
            let now = next.max(self.now_tick(self.now()));
            // A slot of a higher level only moves its timers down (they
            // fire later): go on to the next expiration until one fires.
            if inner.wheel.process(now, |waker| wakers.push(waker)) > 0 {
                break;
            }
            match inner.wheel.next_expiration_tick() {
                Some(later) => next = later,
                None => break,
            }
        }
        self.publish_next(&inner);
        Some(wakers)
    }

    /// The clock was resumed: a watcher that sleeps without a deadline
    /// (the clock was paused) must look at the wheel again and sleep until
    /// the next deadline in real time. Returns whom to wake.
    pub(crate) fn clock_resumed(&self) -> WakeFor {
        let inner = self.lock();
        if inner.wheel.next_expiration_tick().is_none() {
            return WakeFor::Nobody;
        }
        match inner.watcher {
            Some((index, _)) => {
                self.raise_interrupt();
                WakeFor::Watcher(index)
            }
            None => WakeFor::VacantWatch,
        }
    }
}

#[cfg(bwos_loom)]
impl Timers {
    /// Timers in the wheel, fired or pending (for the loom model).
    pub(crate) fn len(&self) -> usize {
        self.lock().wheel.len()
    }
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("Timers")
            .field("elapsed_ms", &inner.wheel.elapsed())
            .field("next_tick", &inner.wheel.next_expiration_tick())
            .field("watcher", &inner.watcher)
            .finish()
    }
}
