//! The I/O driver of one pool: a `mio::Poll` that the pool's own workers
//! poll, the way tokio drives I/O, instead of a reactor thread.
//!
//! # Who polls
//! - A worker about to park takes the driver if nobody holds it and
//!   blocks in `epoll_wait` instead of on its futex; events wake the
//!   waiting tasks *on that worker*, so they land in its own queue
//!   (no cross-thread hand-off, no extra thread).
//! - A busy worker polls it without blocking every
//!   [`INJECTOR_INTERVAL`](crate::task::executor::INJECTOR_INTERVAL)
//!   tasks, so I/O is served while every worker is busy.
//! - A worker that *searches* does not poll it: polling there kept the
//!   workers finding work in every round, so they never blocked and, on a
//!   machine shared with the load generator, waited out its time slices
//!   on the run queue with requests in hand (`perf sched`: 150 switches in
//!   3 s, 2.8 ms average scheduling delay, p99 3.4 ms at 50 connections).
//!   Without it they fall asleep into the driver and the kernel wakes them
//!   on events: p99 0.7-0.9 ms against tokio's 0.9-1.5, at 1.11-1.26x
//!   tokio's requests per second (3 interleaved runs).
//!
//! When one worker drives while blocked, the others park on their
//! futexes. As in tokio, a worker that leaves the driver to run the
//! tasks it woke does not hand the driver to a parked one; I/O is then
//! polled by that worker between tasks (above) and again by whoever
//! parks next.
//!
//! # Waking the driving worker
//! The pool wakes worker `i` through `Registry::unpark(i)`, which also
//! calls [`Driver::unpark`]: if worker `i` blocks in the driver, that
//! writes the `mio::Waker` (an eventfd), else it costs a fence and a
//! load. The protocol, a Dekker pair between the worker's seat and the
//! waker's change of its sleep state, is `sched/idle/driver_seat.rs`, checked
//! by a loom model.
//!
//! # Registrations
//! Each socket's [`Readiness`] sits in a slab under a mutex; the slab key
//! is the mio token. A key is reused after its socket is dropped, so an
//! old event may reach a new socket: that is a spurious readiness, which
//! costs the new socket one `WouldBlock` and is otherwise harmless.

use std::any::Any;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::sched::driver::Driver;
use crate::sched::idle::driver_seat::DriverSeat;
use crate::sched::registry::Registry;

use super::readiness::{READ_CLOSED, READABLE, Readiness, SHUT_DOWN, WRITABLE, WRITE_CLOSED};

/// The token of the driver's own waker.
const WAKER_TOKEN: Token = Token(usize::MAX);
/// Events taken per poll.
const EVENTS_PER_POLL: usize = 1024;

/// What the driving worker holds.
struct Polling {
    poll: Poll,
    events: Events,
    /// The readiness to set after a poll, collected under the slab's lock
    /// and set outside it (setting wakes tasks).
    ready: Vec<(Arc<Readiness>, usize)>,
}

/// A pool's I/O driver.
pub(crate) struct IoDriver {
    /// The poll and its buffers; whoever holds the lock drives.
    poll: Mutex<Polling>,
    /// Registers sockets without the poll's lock.
    registry: mio::Registry,
    waker: mio::Waker,
    /// The worker blocked in the poll, for wakers.
    seat: DriverSeat,
    registrations: Mutex<Registrations>,
}

struct Registrations {
    sockets: Slab<Arc<Readiness>>,
    /// The pool has shut down: no new registrations, and every existing
    /// one has been told.
    shut_down: bool,
}

impl IoDriver {
    /// The I/O driver of `registry`'s pool, created by the pool's first
    /// socket. A new driver wakes a sleeping worker, which then parks in
    /// it: until then the pool's workers sleep on their futexes, deaf to
    /// I/O.
    pub(crate) fn of(registry: &Registry) -> io::Result<Arc<IoDriver>> {
        registry.driver.get_or_create(IoDriver::new, || {
            registry.sleep.wake_one(|index| registry.unpark(index));
        })
    }

    pub(crate) fn new() -> io::Result<IoDriver> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(&registry, WAKER_TOKEN)?;
        Ok(IoDriver {
            poll: Mutex::new(Polling {
                poll,
                events: Events::with_capacity(EVENTS_PER_POLL),
                ready: Vec::new(),
            }),
            registry,
            waker,
            seat: DriverSeat::default(),
            registrations: Mutex::new(Registrations {
                sockets: Slab::new(),
                shut_down: false,
            }),
        })
    }

    /// Registers `source` for both directions, edge-triggered; its events
    /// go to the returned readiness.
    pub(crate) fn register(&self, source: &mut impl Source) -> io::Result<(usize, Arc<Readiness>)> {
        let mut registrations = lock(&self.registrations);
        if registrations.shut_down {
            return Err(shut_down_error());
        }
        let entry = registrations.sockets.vacant_entry();
        let key = entry.key();
        let readiness = Arc::new(Readiness::default());
        self.registry
            .register(source, Token(key), Interest::READABLE | Interest::WRITABLE)?;
        entry.insert(Arc::clone(&readiness));
        Ok((key, readiness))
    }

    /// Undoes [`register`](Self::register).
    pub(crate) fn deregister(&self, key: usize, source: &mut impl Source) {
        // An error here means the socket is already gone from the poll
        // (closed elsewhere); the slot is freed either way.
        let _ = self.registry.deregister(source);
        let mut registrations = lock(&self.registrations);
        if registrations.sockets.contains(key) {
            registrations.sockets.remove(key);
        }
    }

    /// The poll, unless another thread drives.
    fn try_drive(&self) -> Option<MutexGuard<'_, Polling>> {
        match self.poll.try_lock() {
            Ok(polling) => Some(polling),
            // Nothing panics under this lock; the poll is intact.
            Err(TryLockError::Poisoned(poison)) => Some(poison.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// One poll; collects the readiness of the sockets it reports.
    /// Returns whether there is any.
    fn poll(&self, polling: &mut Polling, timeout: Option<Duration>) -> bool {
        let Polling {
            poll,
            events,
            ready,
        } = polling;
        // An error is EINTR (a signal: the caller looks again) or one that
        // a valid epoll descriptor does not produce.
        if poll.poll(events, timeout).is_err() {
            return false;
        }
        let registrations = lock(&self.registrations);
        for event in events.iter() {
            let Some(readiness) = registrations.sockets.get(event.token().0) else {
                // The waker's token, or a socket dropped since.
                continue;
            };
            let mut bits = 0;
            if event.is_readable() {
                bits |= READABLE;
            }
            if event.is_writable() {
                bits |= WRITABLE;
            }
            if event.is_read_closed() {
                bits |= READ_CLOSED;
            }
            if event.is_write_closed() {
                bits |= WRITE_CLOSED;
            }
            if event.is_error() {
                // The error surfaces in the next operation either way.
                bits |= READABLE | WRITABLE;
            }
            ready.push((Arc::clone(readiness), bits));
        }
        !ready.is_empty()
    }

    /// Records the collected readiness, waking the waiting tasks (outside
    /// the slab's lock); returns how many sockets it was.
    fn dispatch(&self, polling: &mut Polling) -> usize {
        let count = polling.ready.len();
        for (readiness, bits) in polling.ready.drain(..) {
            readiness.set(bits);
        }
        count
    }
}

impl Driver for IoDriver {
    /// Worker `index` parks here if nobody drives: blocks in the poll
    /// until an event or [`unpark`](Self::unpark), unless `still_asleep`
    /// says after the announcement that it was woken already. With events
    /// in hand it calls `wake_early` (it counts as searching again, so
    /// the wake-ups it is about to cause go to other sleepers), then
    /// wakes the sockets' waiters. Returns `None` if somebody else drives
    /// (park elsewhere), else how many sockets' waiters were woken.
    fn park(
        &self,
        index: usize,
        still_asleep: &dyn Fn() -> bool,
        wake_early: &dyn Fn(),
        timeout: Option<Duration>,
    ) -> Option<usize> {
        let mut polling = self.try_drive()?;
        let polled = self
            .seat
            .block_in_driver(index, still_asleep, || self.poll(&mut polling, timeout));
        if polled == Some(true) {
            wake_early();
        }
        Some(self.dispatch(&mut polling))
    }

    /// Worker `index` was woken (its sleep state already changed): if it
    /// blocks in the driver, interrupt the poll.
    fn unpark(&self, index: usize) {
        self.seat.wake(index, || {
            // A failed eventfd write would leave the worker blocked until
            // the next event; the kernel does not fail it for a valid
            // eventfd, and nothing better could be done here.
            let _ = self.waker.wake();
        });
    }

    /// Polls for events without blocking if nobody else drives, and wakes
    /// the sockets' waiters.
    fn poll_now(&self) {
        if let Some(mut polling) = self.try_drive() {
            self.poll(&mut polling, Some(Duration::ZERO));
            self.dispatch(&mut polling);
        }
    }

    /// The pool's last worker stopped: every socket's waiting and future
    /// operations fail with [`shut_down_error`] instead of waiting for a
    /// poll that will not come.
    fn shut_down(&self) {
        let sockets: Vec<Arc<Readiness>> = {
            let mut registrations = lock(&self.registrations);
            registrations.shut_down = true;
            registrations
                .sockets
                .iter()
                .map(|(_, r)| Arc::clone(r))
                .collect()
        };
        for readiness in sockets {
            readiness.set(SHUT_DOWN);
        }
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The slab and the poll stay consistent across a panic (no user code
    // runs under these locks).
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// What socket operations return once their pool has shut down.
pub(crate) fn shut_down_error() -> io::Error {
    io::Error::other("the bwos pool that drives this socket has shut down")
}
