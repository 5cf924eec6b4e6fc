//! Experiment 2 (paper Figure 11): one queue, one thief. The owner keeps
//! filling and draining its queue; a thief steals with a pause between
//! attempts, tuned so that the stolen share reaches a target.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::queue::no_thief::fill_and_drain;
use crate::queues::Stealable;

/// One run's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// Owner operations plus successful steals, per second.
    pub total_ops_per_sec: f64,
    /// Owner operations (successful pushes and pops) per second.
    pub owner_ops_per_sec: f64,
    /// Stolen items / items taken out (popped + stolen).
    pub stolen_share: f64,
}

/// Runs the owner against a thief pausing `pause` spin iterations between
/// steal attempts (`None`: no thief at all).
pub fn run<Q: Stealable>(pause: Option<u32>, duration: Duration) -> Outcome {
    let Some(pause) = pause else {
        let ops = crate::queue::no_thief::run::<Q>(duration);
        return Outcome {
            total_ops_per_sec: ops,
            owner_ops_per_sec: ops,
            stolen_share: 0.0,
        };
    };
    let mut queue = Q::create();
    let mut thief = queue.thief();
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(2);
    thread::scope(|scope| {
        let stealing = scope.spawn(|| {
            start_line.wait();
            let mut stolen = 0u64;
            // Relaxed: a stop request needs no data with it.
            while !stop.load(Ordering::Relaxed) {
                if let Some(value) = Q::steal(&mut thief) {
                    black_box(value);
                    stolen += 1;
                }
                for _ in 0..pause {
                    std::hint::spin_loop();
                }
            }
            stolen
        });
        start_line.wait();
        let start = Instant::now();
        let mut owner_ops = 0u64;
        while start.elapsed() < duration {
            owner_ops += fill_and_drain(&mut queue);
        }
        let elapsed = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let stolen = stealing.join().expect("the thief does not panic");
        // Every item pushed came out once: popped by the owner or stolen.
        // Owner ops are pushes + pops, so pops = (owner_ops - stolen) / 2.
        let popped = owner_ops.saturating_sub(stolen) / 2;
        let taken = popped + stolen;
        Outcome {
            total_ops_per_sec: (owner_ops + stolen) as f64 / elapsed,
            owner_ops_per_sec: owner_ops as f64 / elapsed,
            stolen_share: if taken == 0 {
                0.0
            } else {
                stolen as f64 / taken as f64
            },
        }
    })
}

/// Finds the pause that brings the stolen share closest to `target`
/// (a fraction), by bisection on a logarithmic scale with short runs.
pub fn calibrate<Q: Stealable>(target: f64, steps: u32, probe_time: Duration) -> u32 {
    // The share falls as the pause grows; search pause in [0, 2^20].
    let (mut low, mut high) = (0.0f64, 20.0f64);
    let mut best = (f64::INFINITY, 0u32);
    for _ in 0..steps {
        let exponent = (low + high) / 2.0;
        let pause = exponent.exp2() as u32;
        let share = run::<Q>(Some(pause), probe_time).stolen_share;
        let error = (share - target).abs();
        if error < best.0 {
            best = (error, pause);
        }
        if share > target {
            low = exponent;
        } else {
            high = exponent;
        }
    }
    // A pause of zero (steal flat out) may be the closest for high targets.
    let share = run::<Q>(Some(0), probe_time).stolen_share;
    if (share - target).abs() < best.0 {
        return 0;
    }
    best.1
}
