//! [`Sleep`]: a future ready at a deadline.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Instant;
use crate::sched::coop;
use crate::sched::current::with_current_pool;
use crate::sched::idle::park;
use crate::sched::registry::Registry;
use crate::sched::time::{Registered, TimerKey};

/// Waits until `duration` has passed: the future resolves at the first
/// poll after that. `Duration::MAX` and other durations beyond the clock's
/// range wait (practically) forever, without overflow.
///
/// ```
/// # use std::time::{Duration, Instant};
/// let start = Instant::now();
/// bwos::block_on(bwos::time::sleep(Duration::from_millis(10)));
/// assert!(start.elapsed() >= Duration::from_millis(10));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    let registry = with_current_pool(Arc::clone);
    let now = Instant::from_std(registry.timers.now());
    Sleep::new(registry, super::deadline_after(now, duration))
}

/// Waits until `deadline` (at once if it has passed). It takes a
/// [`bwos::time::Instant`](Instant) or a `std::time::Instant`.
pub fn sleep_until(deadline: impl Into<Instant>) -> Sleep {
    Sleep::new(with_current_pool(Arc::clone), deadline.into())
}

/// The future of [`sleep`] and [`sleep_until`]. It holds a timer of the
/// pool that was current when it was created, registered at its first
/// poll; dropping it cancels the timer.
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    registry: Arc<Registry>,
    deadline: Instant,
    /// The timer, once polled (and until dropped).
    timer: Option<TimerKey>,
    /// The deadline has been seen to pass.
    elapsed: bool,
}

impl Sleep {
    fn new(registry: Arc<Registry>, deadline: Instant) -> Self {
        Sleep {
            registry,
            deadline,
            timer: None,
            elapsed: false,
        }
    }

    /// The instant the sleep ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed (checked now, not only when the
    /// timer fired).
    pub fn is_elapsed(&self) -> bool {
        self.elapsed || self.now() >= self.deadline
    }

    /// Sets a new deadline, earlier or later, even after the sleep ended:
    /// the future then waits again (tokio's `Sleep::reset`). A task that
    /// waits on it is woken at the new deadline without polling it again.
    pub fn reset(self: Pin<&mut Self>, deadline: impl Into<Instant>) {
        let this = self.get_mut();
        let deadline = deadline.into();
        this.deadline = deadline;
        this.elapsed = false;
        if let Some(timer) = this.timer {
            let wake = this.registry.timers.reset(timer, deadline.into_std());
            park::wake_for_timer(&this.registry, wake);
        }
    }

    /// Now on the clock of the pool the sleep belongs to.
    pub(crate) fn now(&self) -> Instant {
        Instant::from_std(self.registry.timers.now())
    }
}

impl Future for Sleep {
    type Output = ();

    /// A ready sleep spends a unit of the cooperative budget; with the
    /// budget spent it returns `Pending` (and wakes the task) even past
    /// its deadline, so that a loop of elapsed sleeps or interval ticks
    /// lets the worker's other tasks run.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        coop::poll_budgeted(cx, |cx| this.poll_elapsed(cx))
    }
}

impl Sleep {
    /// The timer says it fired: the deadline has passed, unless the pool
    /// shut down (its wheel closed then, firing every timer early).
    ///
    /// # Panics
    /// If the pool shut down before the deadline: nobody would ever end
    /// the sleep (tokio panics there too).
    fn fired(&mut self) -> Poll<()> {
        if self.now() < self.deadline && self.registry.timers.is_shut_down() {
            panic!(
                "bwos: a timer (time::sleep, timeout, interval) of a pool that has shut down \
                 was polled before its deadline: nothing would ever end it. Its pool's \
                 ThreadPool was dropped or shut down while the timer was still in use"
            );
        }
        self.elapsed = true;
        Poll::Ready(())
    }

    /// The poll, without the budget.
    fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.elapsed {
            return Poll::Ready(());
        }
        if self.now() >= self.deadline {
            // Whether or not a worker fired the timer yet.
            self.elapsed = true;
            return Poll::Ready(());
        }
        let timers = &self.registry.timers;
        match self.timer {
            None => {
                let inserted = timers.insert(self.deadline.into_std(), cx.waker());
                self.timer = Some(inserted.key);
                park::wake_for_timer(&self.registry, inserted.wake);
                match inserted.registered {
                    Registered::Pending => Poll::Pending,
                    // A worker processed past the deadline since the
                    // clock was read above.
                    Registered::Fired => self.fired(),
                }
            }
            Some(timer) => match timers.register(timer, cx.waker()) {
                Registered::Pending => Poll::Pending,
                Registered::Fired => self.fired(),
            },
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(timer) = self.timer {
            self.registry.timers.remove(timer);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("elapsed", &self.elapsed)
            .finish()
    }
}
