//! The readiness of one registered socket and the tasks waiting for it.
//!
//! Sockets are registered edge-triggered: the driver hears about a
//! socket only when its state changes (data arrived, buffer space freed,
//! peer closed). So the driver *remembers* readiness here, in one word,
//! and the socket's operations *clear* it when the kernel says
//! `WouldBlock`, or earlier when a read or write came back short (the
//! kernel buffer was drained or filled: on Linux no data or space is
//! left, and the next edge will say when there is). Tokio's
//! `ScheduledIo` does the same; the saving against a level-triggered,
//! re-armed registration is one `epoll_ctl` and one failed `read` per
//! wait. A `WouldBlock` also clears its half's "closed" bit, which it
//! contradicts (kept, it would send the operation back to the kernel
//! forever); a short read or write keeps it (the end comes after the data).
//!
//! The word holds readiness bits and a *tick* that the driver bumps with
//! every event. An operation clears only the readiness it observed: if
//! an event came in between (the tick moved), the clear is dropped, so
//! readiness that arrived after the failed attempt is never lost.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use crate::sched::quietly;

/// Data to read (or a pending connection to accept).
pub(crate) const READABLE: usize = 0b0001;
/// Space to write (or a connection attempt finished).
pub(crate) const WRITABLE: usize = 0b0010;
/// The peer shut its writing half down: reads return 0 from now on.
pub(crate) const READ_CLOSED: usize = 0b0100;
/// The socket can no longer be written.
pub(crate) const WRITE_CLOSED: usize = 0b1000;
/// The pool that drives the socket has shut down: operations fail.
pub(crate) const SHUT_DOWN: usize = 0b1_0000;
const READINESS_MASK: usize = 0b1_1111;
/// The tick lives above the readiness bits.
const TICK_SHIFT: u32 = 5;

/// Which half of the socket an operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The bits that let an operation in this direction proceed (a closed
    /// half lets it proceed too: the operation then reports the end).
    fn mask(self) -> usize {
        match self {
            Direction::Read => READABLE | READ_CLOSED | SHUT_DOWN,
            Direction::Write => WRITABLE | WRITE_CLOSED | SHUT_DOWN,
        }
    }

    /// The readiness bit of this direction: what a `WouldBlock`, or a
    /// read or write that drained the kernel's buffer, clears.
    fn readiness(self) -> usize {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }

    /// The "closed" bit of this direction, which a `WouldBlock` contradicts
    /// (a closed half answers with its end or an error, never
    /// `WouldBlock`) and therefore clears too. A contradicted "closed" bit
    /// kept would send the operation back to the kernel at once, forever:
    /// `poll_io` would never return.
    fn closed(self) -> usize {
        match self {
            Direction::Read => READ_CLOSED,
            Direction::Write => WRITE_CLOSED,
        }
    }
}

/// What an operation saw when it found the socket ready: the tick to
/// clear against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadyEvent {
    tick: usize,
    direction: Direction,
    shut_down: bool,
}

impl ReadyEvent {
    /// Whether the driver is gone rather than the socket ready.
    pub(crate) fn is_shut_down(self) -> bool {
        self.shut_down
    }
}

/// One registered socket's remembered readiness and waiting tasks.
#[derive(Default)]
pub(crate) struct Readiness {
    /// Readiness bits, and the tick above them.
    word: AtomicUsize,
    /// The task waiting to read and the one waiting to write (one each,
    /// as for any `AsyncRead`/`AsyncWrite`: the last poller is woken).
    waiters: Mutex<Waiters>,
}

#[derive(Default)]
struct Waiters {
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Readiness {
    /// The driver saw `ready` (a union of the bit constants): records it
    /// with a new tick and wakes the tasks waiting for it.
    pub(crate) fn set(&self, ready: usize) {
        // AcqRel: publishes the event to the operation that loads the
        // word (Acquire in `poll_ready`); the tick makes a concurrent
        // `clear` for an older observation fail.
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |word| {
                let tick = (word >> TICK_SHIFT).wrapping_add(1);
                Some((tick << TICK_SHIFT) | (word & READINESS_MASK) | ready)
            });
        let (reader, writer) = {
            let mut waiters = self.lock_waiters();
            (
                if ready & Direction::Read.mask() != 0 {
                    waiters.reader.take()
                } else {
                    None
                },
                if ready & Direction::Write.mask() != 0 {
                    waiters.writer.take()
                } else {
                    None
                },
            )
        };
        // Woken outside the lock: a waker may run arbitrary code.
        if let Some(reader) = reader {
            quietly::wake(reader);
        }
        if let Some(writer) = writer {
            quietly::wake(writer);
        }
    }

    /// Ready in `direction` now, or the task of `cx` is woken when it is.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<ReadyEvent> {
        if let Some(event) = self.ready_now(direction) {
            return Poll::Ready(event);
        }
        let mut waiters = self.lock_waiters();
        let slot = match direction {
            Direction::Read => &mut waiters.reader,
            Direction::Write => &mut waiters.writer,
        };
        match slot {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
        // Looked at again under the lock: `set` stores the bits before it
        // takes the lock to collect the wakers, so either this load sees
        // the bits or `set` finds the waker just stored.
        match self.ready_now(direction) {
            Some(event) => Poll::Ready(event),
            None => Poll::Pending,
        }
    }

    fn ready_now(&self, direction: Direction) -> Option<ReadyEvent> {
        // Acquire: pairs with the AcqRel update in `set`.
        let word = self.word.load(Ordering::Acquire);
        (word & direction.mask() != 0).then_some(ReadyEvent {
            tick: word >> TICK_SHIFT,
            direction,
            shut_down: word & SHUT_DOWN != 0,
        })
    }

    /// The operation after `event` drained the kernel's buffer (a short
    /// read or write): forget the readiness it saw, unless a newer event
    /// came in. A "closed" bit stays: the end comes after the data.
    pub(crate) fn clear(&self, event: ReadyEvent) {
        self.clear_bits(event, event.direction.readiness());
    }

    /// The operation after `event` got `WouldBlock`: forget the readiness
    /// it saw and a "closed" bit (which the kernel's answer contradicts:
    /// an event of an earlier socket under the same driver key, say),
    /// unless a newer event came in.
    pub(crate) fn clear_would_block(&self, event: ReadyEvent) {
        self.clear_bits(
            event,
            event.direction.readiness() | event.direction.closed(),
        );
    }

    fn clear_bits(&self, event: ReadyEvent, bits: usize) {
        // Relaxed on both sides of the CAS: the only data here is the word
        // itself; a failing CAS because of a newer tick leaves the newer
        // readiness standing, which is the point.
        let mut word = self.word.load(Ordering::Relaxed);
        while word >> TICK_SHIFT == event.tick {
            let cleared = word & !bits;
            match self.word.compare_exchange_weak(
                word,
                cleared,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }

    fn lock_waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        // Nothing panics while holding the lock; a poisoned lock still
        // holds consistent slots.
        self.waiters
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn readiness_is_remembered_cleared_and_not_lost_to_a_stale_clear() {
        let readiness = Readiness::default();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut cx = Context::from_waker(&waker);
        assert!(readiness.poll_ready(&mut cx, Direction::Read).is_pending());
        readiness.set(WRITABLE);
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            0,
            "a write event woke the reader"
        );
        readiness.set(READABLE);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let Poll::Ready(seen) = readiness.poll_ready(&mut cx, Direction::Read) else {
            panic!("readable was forgotten");
        };
        // A new event between the attempt and its clear survives the clear.
        readiness.set(READABLE);
        readiness.clear(seen);
        assert!(readiness.poll_ready(&mut cx, Direction::Read).is_ready());
        let Poll::Ready(seen) = readiness.poll_ready(&mut cx, Direction::Read) else {
            unreachable!()
        };
        readiness.clear(seen);
        assert!(readiness.poll_ready(&mut cx, Direction::Read).is_pending());
        // Clearing reads leaves writes alone; a closed half stays ready.
        assert!(readiness.poll_ready(&mut cx, Direction::Write).is_ready());
        readiness.set(READ_CLOSED);
        let Poll::Ready(seen) = readiness.poll_ready(&mut cx, Direction::Read) else {
            panic!("a closed half must let reads see the end");
        };
        readiness.clear(seen);
        assert!(readiness.poll_ready(&mut cx, Direction::Read).is_ready());
    }
}
