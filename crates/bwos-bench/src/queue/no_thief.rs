//! Experiment 1 (paper Figure 10, 0% stolen): one queue, no thief. The owner
//! pushes until the queue is full, then pops until it is empty, in a loop.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::queues::Owner;

/// Push-until-full / pop-until-empty cycles for `duration`; returns the
/// operations per second.
pub fn run<Q: Owner>(duration: Duration) -> f64 {
    let mut queue = Q::create();
    let mut ops = 0u64;
    let start = Instant::now();
    while start.elapsed() < duration {
        ops += fill_and_drain(&mut queue);
    }
    ops as f64 / start.elapsed().as_secs_f64()
}

/// One cycle: pushes until the queue refuses, pops until it is empty.
/// Returns the number of successful operations.
#[inline]
pub fn fill_and_drain<Q: Owner>(queue: &mut Q) -> u64 {
    let mut pushed = 0u64;
    while queue.push(black_box(pushed)) {
        pushed += 1;
    }
    let mut popped = 0u64;
    while let Some(value) = queue.pop() {
        black_box(value);
        popped += 1;
    }
    pushed + popped
}
