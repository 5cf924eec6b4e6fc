//! loom model: The latch: a waiter that parks, a setter that wakes it (`sched/latch.rs`).

use loom::sync::Arc;
use loom::thread;

use super::{Slot, builder, handoff, thread_latch};
use crate::sched::latch::Latch;

/// The join latch as `install` from outside a pool uses it: the waiter
/// parks, the setter publishes a result, sets the latch and unparks.
#[test]
fn latch_wakes_parked_waiter() {
    builder(3).check(|| {
        let result = Arc::new(Slot::new());
        let (latch_sender, latch_receiver) = handoff();
        let waiter = {
            let result = result.clone();
            thread::spawn(move || {
                let latch = Arc::new(thread_latch());
                latch_sender.send(latch.clone());
                latch.core().wait_blocking();
                assert_eq!(result.read(), 42);
            })
        };
        result.write(42);
        let latch = latch_receiver.recv();
        // SAFETY: the latch is alive (the `Arc`).
        unsafe { Latch::set(&*latch) };
        waiter.join().unwrap();
    });
}
