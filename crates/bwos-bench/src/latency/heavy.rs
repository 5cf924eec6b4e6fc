//! The mixed server's heavy request: a sum over a slice with a fixed
//! amount of mixing per element, computed serially (tokio's
//! `spawn_blocking` set-up) or as a recursive `join` down to leaves of
//! [`LEAF`] elements (`bwos::join`, `rayon::join`). Every variant runs
//! the same never-inlined leaf, so they run the same machine code, and
//! gives the same sum (wrapping addition is associative).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Elements of the slice: 2 MiB of `u64`, cache-resident on most
/// machines, so the work is arithmetic, not memory bandwidth.
pub const ELEMENTS: usize = 1 << 18;
/// Elements per leaf of the recursive sums (64 leaves).
pub const LEAF: usize = 4096;

/// The slice and the work per element, sized so that one serial sum
/// takes the asked-for time.
#[derive(Debug)]
pub struct Heavy {
    values: Vec<u64>,
    /// Mixing rounds per element.
    pub rounds: u32,
    /// The sum every variant must give.
    pub expected: u64,
    /// The serial sum's measured time, in milliseconds.
    pub serial_ms: f64,
}

/// The leaf: each element mixed `rounds` times, then added.
#[inline(never)]
fn leaf(values: &[u64], rounds: u32) -> u64 {
    values.iter().fold(0_u64, |sum, &value| {
        let mut x = value;
        for _ in 0..rounds {
            x = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        }
        sum.wrapping_add(x)
    })
}

impl Heavy {
    /// Calibrates the rounds per element so that one serial sum takes
    /// about `target` on this machine now (the median of five timings).
    pub fn calibrate(target: Duration) -> Heavy {
        let values: Vec<u64> = (0..ELEMENTS as u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let time = |rounds: u32| {
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    let start = Instant::now();
                    black_box(leaf(black_box(&values), black_box(rounds)));
                    start.elapsed().as_secs_f64()
                })
                .collect();
            super::percentile(&mut times, 0.5)
        };
        // The time is not quite linear in the rounds (the loop's set-up,
        // the CPU's frequency): scale, time again, up to a few times.
        let target_s = target.as_secs_f64();
        let mut rounds = 8_u32;
        let mut seconds = time(rounds);
        for _ in 0..6 {
            if (seconds / target_s - 1.0).abs() < 0.05 {
                break;
            }
            let scaled = (f64::from(rounds) * target_s / seconds.max(1e-9)).round();
            rounds = (scaled as u32).max(1);
            seconds = time(rounds);
        }
        let serial_ms = seconds * 1e3;
        let expected = leaf(&values, rounds);
        Heavy {
            values,
            rounds,
            expected,
            serial_ms,
        }
    }

    /// The serial sum.
    pub fn serial(&self) -> u64 {
        leaf(&self.values, self.rounds)
    }

    /// The sum as a recursive `bwos::join` (on the caller's pool).
    pub fn bwos(&self) -> u64 {
        fn sum(values: &[u64], rounds: u32) -> u64 {
            if values.len() <= LEAF {
                return leaf(values, rounds);
            }
            let (left, right) = values.split_at(values.len() / 2);
            let (a, b) = bwos::join(|| sum(left, rounds), || sum(right, rounds));
            a.wrapping_add(b)
        }
        sum(&self.values, self.rounds)
    }

    /// The sum as a recursive `rayon::join` (on the calling thread's
    /// rayon pool).
    pub fn rayon(&self) -> u64 {
        fn sum(values: &[u64], rounds: u32) -> u64 {
            if values.len() <= LEAF {
                return leaf(values, rounds);
            }
            let (left, right) = values.split_at(values.len() / 2);
            let (a, b) = rayon::join(|| sum(left, rounds), || sum(right, rounds));
            a.wrapping_add(b)
        }
        sum(&self.values, self.rounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_gives_the_same_sum() {
        let heavy = Heavy::calibrate(Duration::from_millis(1));
        assert!(heavy.rounds >= 1);
        assert_eq!(heavy.serial(), heavy.expected);
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| heavy.bwos()), heavy.expected);
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert_eq!(rayon.install(|| heavy.rayon()), heavy.expected);
    }
}
