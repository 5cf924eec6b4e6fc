//! Victim-selection policies for the pool experiment.

use clap::ValueEnum;
use serde::Serialize;

use crate::queues::Stealable;

/// How a thief picks the queue to steal from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// A uniformly random victim.
    Random,
    /// The victims in turn.
    Sequential,
    /// The last victim a steal succeeded on, else a random one.
    LastVictim,
    /// The larger of two random victims.
    BestOfTwo,
    /// The largest of half the victims, sampled at random.
    BestOfMany,
    /// BWoS: a random victim, accepted if a randomly sampled block of it
    /// holds stealable items (probability about its fill), else another.
    Probabilistic,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Random,
        Policy::Sequential,
        Policy::LastVictim,
        Policy::BestOfTwo,
        Policy::BestOfMany,
        Policy::Probabilistic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::Sequential => "sequential",
            Policy::LastVictim => "last-victim",
            Policy::BestOfTwo => "best-of-two",
            Policy::BestOfMany => "best-of-many",
            Policy::Probabilistic => "probabilistic",
        }
    }

    /// Whether queue `Q` offers what the policy needs (a size estimate).
    pub fn supports<Q: Stealable>(self, sample: &Q::Thief) -> bool {
        match self {
            Policy::Random | Policy::Sequential | Policy::LastVictim => true,
            Policy::BestOfTwo | Policy::BestOfMany => Q::size_hint(sample).is_some(),
            Policy::Probabilistic => Q::probe(sample, 0).is_some(),
        }
    }
}

/// A small xorshift generator; victim selection needs speed, not quality.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One thief's selection state.
pub struct Selector {
    policy: Policy,
    next: usize,
    last: Option<usize>,
}

impl Selector {
    pub fn new(policy: Policy, start: usize) -> Selector {
        Selector {
            policy,
            next: start,
            last: None,
        }
    }

    /// Picks a victim among `victims` (not empty).
    pub fn pick<Q: Stealable>(&mut self, victims: &[Q::Thief], rng: &mut Rng) -> usize {
        let n = victims.len();
        let size = |i: usize| Q::size_hint(&victims[i]).unwrap_or(0);
        match self.policy {
            Policy::Random => rng.below(n),
            Policy::Sequential => {
                self.next = (self.next + 1) % n;
                self.next
            }
            Policy::LastVictim => self.last.unwrap_or_else(|| rng.below(n)),
            Policy::BestOfTwo => {
                let (a, b) = (rng.below(n), rng.below(n));
                if size(b) > size(a) { b } else { a }
            }
            Policy::BestOfMany => (0..n.div_ceil(2))
                .map(|_| rng.below(n))
                .max_by_key(|&i| size(i))
                .expect("at least one sample"),
            Policy::Probabilistic => {
                let mut candidate = rng.below(n);
                for _ in 0..n {
                    if Q::probe(&victims[candidate], rng.next() as usize) == Some(true) {
                        break;
                    }
                    candidate = rng.below(n);
                }
                candidate
            }
        }
    }

    /// Records the outcome of a steal from `victim`.
    pub fn record(&mut self, victim: usize, success: bool) {
        self.last = success.then_some(victim);
    }
}
