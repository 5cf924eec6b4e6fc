//! The I/O driver of one pool: a `mio::Poll` that the pool's own workers
//! poll, the way tokio drives I/O, instead of a reactor thread.
//!
//! # Who polls
//! - A worker about to park takes the driver if nobody holds it and
//!   blocks in `epoll_wait` instead of on its futex; events wake the
//!   waiting tasks *on that worker*, so they land in its own queue
//!   (no cross-thread hand-off, no extra thread).
//! - A busy worker polls it without blocking every
//!   [`INJECTOR_INTERVAL`](crate::sched::queues::INJECTOR_INTERVAL)
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
//! Each socket's [`Readiness`] sits in a slab under a mutex. The mio token
//! is the slab key with the registration's generation above it
//! ([`KEY_BITS`]): a key is reused once its socket is dropped, and an
//! event that the poll returned for the old socket, mapped after the key
//! went to a new one (another worker dropped the old socket and registered
//! the new one between `epoll_wait` and the mapping), would otherwise land
//! on the new socket. That was not a harmless spurious readiness: the old
//! socket's last event is often its peer's close, and a "read closed"
//! that the new socket's reads answer with `WouldBlock` kept its task
//! reading forever inside one poll, its worker's queued tasks stranded
//! behind it (found by `bwos-bench soak`). The generation drops such
//! events; `Readiness::clear_would_block` also drops a "closed" bit that a
//! `WouldBlock` contradicts.

use std::any::Any;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Bits of a token that hold the slab key; the bits above hold the
/// registration's generation, so that an event for a dropped socket is not
/// taken for the socket registered under the same key after it.
const KEY_BITS: u32 = if usize::BITS >= 64 { 32 } else { 24 };
/// The key bits of a token. Keys stay below it (a token of all ones would
/// be the waker's).
const KEY_MASK: usize = (1 << KEY_BITS) - 1;

/// What the driving worker holds.
struct Polling {
    poll: Poll,
    events: Events,
    /// The readiness to set after a poll, collected under the slab's lock
    /// and set outside it (setting wakes tasks).
    ready: Vec<(Arc<Readiness>, usize)>,
}

/// One registered socket: its token (key and generation) and readiness.
struct Registration {
    token: Token,
    readiness: Arc<Readiness>,
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
    /// Readiness events delivered ([`Driver::ready_count`]); written
    /// under the poll's lock only.
    ready_count: AtomicU64,
}

struct Registrations {
    sockets: Slab<Registration>,
    /// The generation of the next registration (wrapping; only its low
    /// bits reach the token).
    next_generation: usize,
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
            registry.sleepers.wake_one(|index| registry.unpark(index));
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
                next_generation: 0,
                shut_down: false,
            }),
            ready_count: AtomicU64::new(0),
        })
    }

    /// Registers `source` for both directions, edge-triggered; its events
    /// go to the returned readiness.
    pub(crate) fn register(&self, source: &mut impl Source) -> io::Result<(usize, Arc<Readiness>)> {
        let mut registrations = lock(&self.registrations);
        if registrations.shut_down {
            return Err(shut_down_error());
        }
        let generation = registrations.next_generation;
        let entry = registrations.sockets.vacant_entry();
        let key = entry.key();
        if key >= KEY_MASK {
            return Err(io::Error::other(format!(
                "a pool's I/O driver holds at most {KEY_MASK} sockets at once"
            )));
        }
        let token = Token(generation.wrapping_shl(KEY_BITS) | key);
        let readiness = Arc::new(Readiness::default());
        self.registry
            .register(source, token, Interest::READABLE | Interest::WRITABLE)?;
        entry.insert(Registration {
            token,
            readiness: Arc::clone(&readiness),
        });
        registrations.next_generation = generation.wrapping_add(1);
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
        collect(&lock(&self.registrations), events, ready);
        !ready.is_empty()
    }

    /// Records the collected readiness, waking the waiting tasks (outside
    /// the slab's lock); returns how many sockets it was.
    fn dispatch(&self, polling: &mut Polling) -> usize {
        let count = polling.ready.len();
        // Relaxed load and store: the one writer holds the poll's lock
        // (`polling`), which orders the writers; readers only need some
        // recent value of a monotonic count.
        let delivered = self.ready_count.load(Ordering::Relaxed);
        self.ready_count
            .store(delivered + count as u64, Ordering::Relaxed);
        for (readiness, bits) in polling.ready.drain(..) {
            readiness.set(bits);
        }
        count
    }
}

/// Maps the events of a poll to the readiness of their sockets: for each,
/// the socket's readiness and the bits the event sets. An event whose
/// token is not a registered socket's current one (the waker's, or a
/// socket dropped since, whose key may be another socket's now) is
/// dropped.
fn collect(
    registrations: &Registrations,
    events: &Events,
    ready: &mut Vec<(Arc<Readiness>, usize)>,
) {
    for event in events.iter() {
        let token = event.token();
        let Some(registration) = registrations.sockets.get(token.0 & KEY_MASK) else {
            continue;
        };
        if registration.token != token {
            continue;
        }
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
        ready.push((Arc::clone(&registration.readiness), bits));
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
                .map(|(_, registration)| Arc::clone(&registration.readiness))
                .collect()
        };
        for readiness in sockets {
            readiness.set(SHUT_DOWN);
        }
    }

    fn ready_count(&self) -> u64 {
        // Relaxed: see `dispatch`.
        self.ready_count.load(Ordering::Relaxed)
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

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;
    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::net::registered::Registered;

    /// A connected pair: the accepted end, registered with `driver`, and
    /// the client end (plain std).
    fn registered_pair(
        driver: &Arc<IoDriver>,
    ) -> (Registered<mio::net::TcpStream>, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        accepted.set_nonblocking(true).unwrap();
        let accepted = mio::net::TcpStream::from_std(accepted);
        (
            Registered::with_driver(accepted, Arc::clone(driver)).unwrap(),
            client,
        )
    }

    /// The race the soak found, replayed step by step: a poll returns the
    /// close of socket A, another worker drops A and registers B (which
    /// gets A's slab key) before the events are mapped, then they are
    /// mapped. A's event must not reach B.
    #[test]
    fn an_event_of_a_dropped_socket_does_not_reach_the_next_socket_under_its_key() {
        bwos_testkit::watchdog("driver_stale_event", || {
            let driver = Arc::new(IoDriver::new().unwrap());
            let (a, a_client) = registered_pair(&driver);
            let a_key = a.key();
            // A's peer closes: A becomes readable and read-closed.
            drop(a_client);
            let mut polling = lock(&driver.poll);
            let mut events = Events::with_capacity(16);
            loop {
                polling
                    .poll
                    .poll(&mut events, Some(Duration::from_secs(1)))
                    .unwrap();
                if events
                    .iter()
                    .any(|e| e.token().0 & KEY_MASK == a_key && e.is_read_closed())
                {
                    break;
                }
            }
            drop(a);
            let (b, _b_client) = registered_pair(&driver);
            assert_eq!(b.key(), a_key, "the slab reuses the dropped socket's key");
            let mut ready = Vec::new();
            collect(&lock(&driver.registrations), &events, &mut ready);
            assert!(
                ready.is_empty(),
                "A's close was mapped to B: {:?}",
                ready.iter().map(|(_, bits)| bits).collect::<Vec<_>>()
            );
        });
    }

    /// A "closed" bit that the kernel contradicts (reads answer
    /// `WouldBlock`) is dropped at the first `WouldBlock`: the read waits
    /// instead of asking the kernel again forever inside one poll.
    #[test]
    fn a_read_closed_bit_contradicted_by_would_block_does_not_spin() {
        bwos_testkit::watchdog("driver_contradicted_close", || {
            let driver = Arc::new(IoDriver::new().unwrap());
            let (stream, mut client) = registered_pair(&driver);
            stream.readiness().set(crate::net::readiness::READ_CLOSED);
            let mut cx = Context::from_waker(Waker::noop());
            let mut buf = [0u8; 16];
            assert!(matches!(stream.poll_read(&mut cx, &mut buf), Poll::Pending));
            // Real data and a real close still get through.
            client.write_all(b"hi").unwrap();
            drop(client);
            let mut received = Vec::new();
            loop {
                driver.poll_now();
                match stream.poll_read(&mut cx, &mut buf) {
                    Poll::Ready(Ok(0)) => break,
                    Poll::Ready(Ok(n)) => received.extend_from_slice(&buf[..n]),
                    Poll::Ready(Err(error)) => panic!("{error}"),
                    Poll::Pending => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            assert_eq!(received, b"hi");
        });
    }
}
