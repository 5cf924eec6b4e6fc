//! loom model: The boundary of a scoped fork region (`fork/boundary.rs`).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use super::builder;

/// The boundary of a scoped fork region: a thief that wants to poll a
/// child races the closer. Either the thief polls and the closer waits
/// for it, or the thief finds the region closed and does not touch the
/// child: the child's borrowed data (a loom cell, written by the poll) is
/// never accessed by the thief after the closer went on to free it.
#[test]
fn fork_boundary_no_poll_after_close() {
    use crate::fork::boundary::Boundary;

    builder(3).check(|| {
        let boundary = Arc::new(Boundary::default());
        let borrowed = Arc::new(UnsafeCell::new(0u32));
        let thief = {
            let (boundary, borrowed) = (boundary.clone(), borrowed.clone());
            thread::spawn(move || {
                if boundary.enter() {
                    // SAFETY: the boundary lets this poll run only while
                    // the closer waits; loom checks it.
                    borrowed.with_mut(|value| unsafe { *value += 1 });
                    boundary.exit();
                }
            })
        };
        boundary.close();
        while boundary.busy() {
            thread::yield_now();
        }
        // The closer frees what the children borrowed.
        // SAFETY: no poll is in flight or can start (the model checks it).
        borrowed.with_mut(|value| unsafe { *value = u32::MAX });
        thief.join().unwrap();
    });
}
