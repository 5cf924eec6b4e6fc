//! Victim selection: which other worker a hungry worker steals from.
//!
//! This policy is the classic one: start at a random victim and go
//! round all of them once, stealing one job. The richer policies of the
//! paper (sequential, last victim, best of two/many, probabilistic) plug in
//! here behind the same call.

use std::cell::Cell;

use bwos_queue::{Steal, lifo};

use crate::job::JobRef;

/// A worker's victim selector: a small random number generator.
pub(crate) struct Victims {
    state: Cell<u64>,
}

impl Victims {
    /// A selector for worker `index`, seeded differently per worker.
    pub(crate) fn new(index: usize) -> Self {
        // Any non-zero seed works for xorshift; spread the indices.
        let seed = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        Victims {
            state: Cell::new(seed),
        }
    }

    /// xorshift64*: cheap, and good enough to spread thieves.
    fn next(&self) -> u64 {
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Steals one job from some worker other than `me`, or `None` when
    /// every other queue had nothing stealable.
    pub(crate) fn steal(&self, me: usize, stealers: &[lifo::Stealer<JobRef>]) -> Option<JobRef> {
        let n = stealers.len();
        if n <= 1 {
            return None;
        }
        loop {
            let start = (self.next() % n as u64) as usize;
            let mut contended = false;
            for offset in 0..n {
                let victim = (start + offset) % n;
                if victim == me {
                    continue;
                }
                match stealers[victim].steal() {
                    Steal::Success(job) => return Some(job),
                    Steal::Retry => contended = true,
                    Steal::Empty => {}
                }
            }
            if !contended {
                return None;
            }
        }
    }
}
