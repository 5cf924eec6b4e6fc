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
    pub fn pick<Q: Stealable>(&mut self, victims: &[Q::Thief], rng: &mut fastrand::Rng) -> usize {
        let n = victims.len();
        let size = |i: usize| Q::size_hint(&victims[i]).unwrap_or(0);
        match self.policy {
            Policy::Random => rng.usize(..n),
            Policy::Sequential => {
                self.next = (self.next + 1) % n;
                self.next
            }
            Policy::LastVictim => self.last.unwrap_or_else(|| rng.usize(..n)),
            Policy::BestOfTwo => {
                let (a, b) = (rng.usize(..n), rng.usize(..n));
                if size(b) > size(a) { b } else { a }
            }
            Policy::BestOfMany => (0..n.div_ceil(2))
                .map(|_| rng.usize(..n))
                .max_by_key(|&i| size(i))
                .expect("at least one sample"),
            Policy::Probabilistic => {
                let mut candidate = rng.usize(..n);
                for _ in 0..n {
                    if Q::probe(&victims[candidate], rng.usize(..)) == Some(true) {
                        break;
                    }
                    candidate = rng.usize(..n);
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
