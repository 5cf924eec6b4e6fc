//! The seam between the scheduler and an event source its workers park
//! in: the I/O driver (`crate::net`) implements [`Driver`], the registry
//! holds at most one in its [`DriverSlot`], created on first use by the
//! front end that needs it.
//!
//! A worker that falls asleep parks in the driver instead of on its futex
//! if nobody else does ([`Driver::park`]); waking worker `i` also calls
//! [`Driver::unpark`]`(i)`; a busy worker polls it without blocking every
//! [`INJECTOR_INTERVAL`](super::queues::INJECTOR_INTERVAL) tasks;
//! the last worker to stop shuts it down. None of these is on the path of
//! a `join`: the calls through the trait object happen only when a worker
//! sleeps, wakes another, or takes its 61st task.

// The I/O driver (`net/`, feature `io`) is the only implementation: in a
// build without it the slot stays empty and the creating half is unused.
#![cfg_attr(not(feature = "io"), allow(dead_code))]

use std::any::Any;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// An event source the workers of one pool park in.
pub(crate) trait Driver: Send + Sync + 'static {
    /// Worker `index` parks here if nobody else does: blocks until an
    /// event, [`unpark`](Self::unpark) or the end of `timeout` (the next
    /// timer's deadline, `None`: no limit), unless `still_asleep` says
    /// after the announcement that it was woken already. With events in
    /// hand it calls `wake_early` (the worker counts as searching again,
    /// so the wake-ups it is about to cause go to other sleepers), then
    /// delivers them. Returns `None` if somebody else parks here (the
    /// worker parks on its futex instead), else how many waiters the
    /// events woke.
    fn park(
        &self,
        index: usize,
        still_asleep: &dyn Fn() -> bool,
        wake_early: &dyn Fn(),
        timeout: Option<Duration>,
    ) -> Option<usize>;

    /// Worker `index` was woken (its sleep state already changed): if it
    /// blocks in the driver, interrupt it.
    fn unpark(&self, index: usize);

    /// Polls for events without blocking, if nobody else does, and
    /// delivers them.
    fn poll_now(&self);

    /// The pool has stopped: tell every waiter, refuse new registrations.
    fn shut_down(&self);

    /// Readiness events delivered so far (`PoolStats::io_driver_ready_count`).
    fn ready_count(&self) -> u64;

    /// The driver as `Any`, for the front end that created it to get its
    /// concrete type back.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// A pool's driver, created on first use.
#[derive(Default)]
pub(crate) struct DriverSlot {
    driver: OnceLock<Arc<dyn Driver>>,
    /// Serializes creation (`OnceLock::get_or_try_init` is unstable).
    creating: Mutex<()>,
}

impl DriverSlot {
    /// The driver, if one was created.
    #[inline]
    pub(crate) fn get(&self) -> Option<&Arc<dyn Driver>> {
        self.driver.get()
    }

    /// The driver of type `D`, created by `create` if the slot is empty;
    /// `created` runs after a new driver is in the slot.
    ///
    /// # Panics
    /// If the slot holds a driver of another type: a pool has one driver,
    /// and one type implements [`Driver`].
    pub(crate) fn get_or_create<D: Driver>(
        &self,
        create: impl FnOnce() -> io::Result<D>,
        created: impl FnOnce(),
    ) -> io::Result<Arc<D>> {
        if let Some(driver) = self.driver.get() {
            return Ok(downcast(driver));
        }
        // A poisoned lock only means a creator panicked; the slot is intact.
        let _creating = self
            .creating
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(driver) = self.driver.get() {
            return Ok(downcast(driver));
        }
        let driver = Arc::new(create()?);
        let _ = self.driver.set(Arc::clone(&driver) as Arc<dyn Driver>);
        created();
        Ok(driver)
    }
}

fn downcast<D: Driver>(driver: &Arc<dyn Driver>) -> Arc<D> {
    Arc::clone(driver)
        .into_any()
        .downcast()
        .unwrap_or_else(|_| unreachable!("a pool's driver slot holds one driver type"))
}
