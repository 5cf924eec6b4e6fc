//! A user's crate: a counter whose increments are checked with loom, and
//! a parallel sum on bwos. Under `--cfg loom` the counter's atomics are
//! loom's; bwos is the same as in any other build.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};

/// A counter shared between threads.
#[derive(Default)]
pub struct Hits(AtomicUsize);

impl Hits {
    /// Counts one hit.
    pub fn hit(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The hits so far.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sums `values` with `bwos::join`.
pub fn sum(values: &[u64]) -> u64 {
    if values.len() <= 256 {
        return values.iter().sum();
    }
    let (left, right) = values.split_at(values.len() / 2);
    let (a, b) = bwos::join(|| sum(left), || sum(right));
    a + b
}
