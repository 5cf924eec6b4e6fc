//! Whose turn it is to run a worker, while several threads need it.
//!
//! A worker's state lives on its own thread's stack, and frames that use it
//! may sit on more than one thread: `block_in_place` (`replacement.rs`)
//! lends the worker to a replacement thread while the closure blocks, and
//! that replacement may poll a task that lends it on again. Each thread
//! whose closure has returned needs the worker back before its frames go
//! on. Giving it back in the order it was lent (the last borrower first)
//! can deadlock: the thread lent to first may be the one whose progress
//! the later borrower's closure waits for (a `block_on` in a task that
//! waits for a task whose `block_on` runs on the worker's own thread).
//!
//! So the worker is a baton, handed at *boundaries*: the thread running it
//! (the runner) looks at [`Handover::is_wanted`] at the top of each turn of
//! its scheduler loop, between jobs and polls, and after every sleep. When
//! a thread waits, the runner passes the worker on
//! ([`pass_on`](Handover::pass_on)) to the thread that has waited longest:
//! a replacement at the top of its loop then exits (the worker runs on),
//! any other runner queues to take it back ([`wait_for_turn`]) before its
//! frames go on. A thread starting a `block_in_place` passes the worker on
//! the same way, and starts a replacement only if nobody waits.
//!
//! Each thread that gets the worker runs at least one turn of its loop (a
//! job, a poll, or a look for work that found none) before it passes it
//! on again, so every waiting thread gets its turn and the threads whose
//! frames wait for each other get theirs in turn. What remains a deadlock
//! is a frame that waits on its own thread for a frame below it on that
//! thread, as in any help-first scheduler.
//!
//! A known cost: two loops that both wait for the worker with nothing to
//! run (the worker's own thread back in its main loop, and a replacement
//! in a `join` whose other half runs elsewhere) pass it back and forth at
//! each turn until the `join` ends, instead of one of them sleeping; with
//! the paused clock (`test-util`) the clock cannot jump meanwhile. A loop
//! whose latch is not set could park until it is, and queue only then;
//! that needs the latch's setter to reach it, which unparks of the worker
//! do not.
//!
//! [`wait_for_turn`]: Handover::wait_for_turn

use std::collections::VecDeque;

use super::idle::sleep::Sleepers;
use super::sync::{
    AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, fence,
};

/// How many times a thread that waits for the worker looks for its turn
/// before it parks: half of them spin-loop hints, half yields (a few
/// microseconds in all when the runner is busy).
#[cfg(not(bwos_loom))]
const SPINS_BEFORE_PARKING: u32 = 64;

/// The baton of one worker (see the module docs). The runner holds no lock
/// while it runs: the baton only queues the threads that wait for it.
pub(crate) struct Handover {
    /// Some thread waits for the worker. Written under `state`'s lock,
    /// read by the runner without it (a hint: the lock decides).
    wanted: AtomicBool,
    /// Threads that lent the worker (`block_in_place`) and have not taken
    /// it back: their frames still use it, so it must outlive them.
    borrowers: AtomicUsize,
    /// The ticket granted last, plus one (0: none yet), for a waiter that
    /// spins before it parks.
    last_granted: AtomicU64,
    state: Mutex<Turns>,
    /// Signalled when a turn is granted.
    granted: Condvar,
}

struct Turns {
    /// The tickets of the threads waiting for the worker, oldest first.
    waiting: VecDeque<u64>,
    /// The ticket whose thread may take the worker now.
    granted: Option<u64>,
    next_ticket: u64,
}

impl Handover {
    pub(crate) fn new() -> Self {
        Handover {
            wanted: AtomicBool::new(false),
            borrowers: AtomicUsize::new(0),
            last_granted: AtomicU64::new(0),
            state: Mutex::new(Turns {
                waiting: VecDeque::new(),
                granted: None,
                next_ticket: 0,
            }),
            granted: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Turns> {
        // Nothing here panics while the lock is held.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a thread waits for the worker: the runner's look at a
    /// boundary, one load.
    #[inline(always)]
    pub(crate) fn is_wanted(&self) -> bool {
        // Relaxed: a hint, read at every boundary. A waiter that the
        // runner misses here is seen at its next boundary; a runner about
        // to sleep reads it after the sleep's SeqCst fence instead
        // (`Registry::has_visible_work`), against the waiter's SeqCst
        // store and the fence of its wake-up (`Registry::wake_runner`).
        self.wanted.load(Ordering::Relaxed)
    }

    /// The runner gives the worker up: the thread that has waited longest
    /// may take it. Returns `false` if no thread waits: the caller still
    /// holds the worker.
    pub(crate) fn pass_on(&self) -> bool {
        let mut turns = self.lock();
        if !self.grant_next(&mut turns) {
            return false;
        }
        // Under the lock: once it is released, the thread granted the
        // worker may take it, end the pool and free this baton.
        self.granted.notify_all();
        true
    }

    /// The runner, which needs the worker back to go on, gives it to the
    /// thread that has waited longest and waits for its own turn, in one
    /// step: no instant in which it neither holds the worker nor waits
    /// for it (the worker's own thread, holding the worker with nobody
    /// waiting and nobody lending, may then end the worker). Returns
    /// `false`, still holding the worker, if no thread waits.
    pub(crate) fn pass_on_and_wait(&self, wake_runner: impl FnOnce()) -> bool {
        let mut turns = self.lock();
        if !self.grant_next(&mut turns) {
            return false;
        }
        let ticket = Self::queue(&mut turns);
        // SeqCst: as in `wait_for_turn`.
        self.wanted.store(true, Ordering::SeqCst);
        self.granted.notify_all();
        drop(turns);
        wake_runner();
        self.await_turn(ticket);
        true
    }

    /// Grants the worker to the oldest waiter, if any (under the lock).
    fn grant_next(&self, turns: &mut Turns) -> bool {
        let Some(next) = turns.waiting.pop_front() else {
            return false;
        };
        debug_assert!(turns.granted.is_none(), "one runner grants at a time");
        turns.granted = Some(next);
        if turns.waiting.is_empty() {
            // SeqCst: as the store in `wait_for_turn`, under the lock.
            self.wanted.store(false, Ordering::SeqCst);
        }
        // Release, after the stores above: pairs with the spinning
        // waiter's Acquire load (the lock orders them for a waiter that
        // parked). Ticket + 1, so that 0 is nobody's.
        self.last_granted.store(next + 1, Ordering::Release);
        true
    }

    /// Queues the calling thread for the worker; returns its ticket.
    fn queue(turns: &mut Turns) -> u64 {
        let ticket = turns.next_ticket;
        turns.next_ticket += 1;
        turns.waiting.push_back(ticket);
        ticket
    }

    /// The runner lends the worker for a while (`block_in_place`) and will
    /// take it back with [`wait_for_turn`](Self::wait_for_turn) and
    /// [`returned`](Self::returned).
    pub(crate) fn lend(&self) {
        // SeqCst: read by the worker's own thread before it lets the
        // worker go (`has_borrowers`), which it does only as the runner,
        // after a turn passed through the lock.
        self.borrowers.fetch_add(1, Ordering::SeqCst);
    }

    /// A thread that lent the worker has it back; returns whether it was
    /// the last one.
    pub(crate) fn returned(&self) -> bool {
        // SeqCst: as in `lend`.
        self.borrowers.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// Whether a thread that lent the worker has not taken it back.
    pub(crate) fn has_borrowers(&self) -> bool {
        // SeqCst: as in `lend`.
        self.borrowers.load(Ordering::SeqCst) != 0
    }

    /// The calling thread, which does not hold the worker, waits until the
    /// worker is passed on to it. `wake_runner` is called once the wait is
    /// announced: it must make the runner reach a boundary if it sleeps.
    pub(crate) fn wait_for_turn(&self, wake_runner: impl FnOnce()) {
        let mut turns = self.lock();
        let ticket = Self::queue(&mut turns);
        // SeqCst: the waiter's half of the Dekker pair with a runner that
        // falls asleep (`is_wanted`).
        self.wanted.store(true, Ordering::SeqCst);
        drop(turns);
        wake_runner();
        self.await_turn(ticket);
    }

    /// Waits until the worker is granted to `ticket`, and takes it.
    fn await_turn(&self, ticket: u64) {
        // A runner at a boundary, or spinning for work, passes the worker
        // on within microseconds: look for the turn a while before the
        // thread parks, which would cost the runner a futex wake-up and
        // this thread a wake-up latency on top.
        #[cfg(not(bwos_loom))]
        for spin in 0..SPINS_BEFORE_PARKING {
            // Acquire: pairs with `grant_next`'s Release store; the lock
            // below orders the rest.
            if self.last_granted.load(Ordering::Acquire) == ticket + 1 {
                break;
            }
            if spin < SPINS_BEFORE_PARKING / 2 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut turns = self.lock();
        while turns.granted != Some(ticket) {
            turns = self
                .granted
                .wait(turns)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        turns.granted = None;
    }
}

/// Makes the thread running worker `index` reach a boundary soon, also if
/// it sleeps: what a thread does once it waits for the worker
/// (`Registry::wake_runner` passes it to [`Handover::wait_for_turn`]).
/// `unpark` unparks the worker's threads.
pub(crate) fn wake_runner(sleepers: &Sleepers, index: usize, unpark: impl Fn(usize)) {
    // The waiter's half of the Dekker pair with a runner that falls
    // asleep: the waiter stored `wanted` (SeqCst) before this fence; a
    // runner that announced its sleep before it is woken here, one that
    // announces it after reads `wanted` in its look for work
    // (`Registry::has_visible_work`) after its own fence.
    fence(Ordering::SeqCst);
    sleepers.wake(index, &unpark);
    // Not asleep in the sleep protocol: it spins or yields (and looks at
    // its next boundary), runs a job or poll, or is parked on its own
    // terms.
    unpark(index);
}
