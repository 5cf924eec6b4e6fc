//! **bursts**: a task spawns one [`LONG`] CPU-bound task (a busy loop on
//! the clock, not a sleep), then [`SHORT`] short tasks, and awaits them
//! all; `--rounds` rounds, each after a [`GAP`] sleep so that the other
//! worker has gone idle when the burst arrives, as between the requests
//! of a quiet service. Measured: every short task's start delay (its
//! spawn to its first poll), p50 and p99 over all rounds, and the median
//! round makespan (the first spawn to the last task's end, as the tasks
//! themselves clock it).

use std::time::{Duration, Instant};

use super::runtimes::LatencyRuntime;
use super::{Metrics, SETTLE, percentile};

/// The CPU-bound task's length.
pub const LONG: Duration = Duration::from_millis(2);
/// Short tasks per round.
pub const SHORT: usize = 15;
/// The sleep between rounds (both runtimes' timers tick in milliseconds).
pub const GAP: Duration = Duration::from_millis(1);

/// Spins on the clock for `duration`: work that holds its worker.
fn spin(duration: Duration) {
    let end = Instant::now() + duration;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// One measurement of `rounds` rounds on a fresh 2-worker `R`.
pub fn run<R: LatencyRuntime>(rounds: u32) -> Metrics {
    let rt = R::start(2);
    std::thread::sleep(SETTLE);
    let (mut delays, mut makespans) = rt.block_on(async move {
        let mut delays = Vec::with_capacity(rounds as usize * SHORT);
        let mut makespans = Vec::with_capacity(rounds as usize);
        for _ in 0..rounds {
            let first = Instant::now();
            let long = R::spawn_here(async {
                spin(LONG);
                Instant::now()
            });
            let shorts: Vec<_> = (0..SHORT)
                .map(|_| {
                    let spawned = Instant::now();
                    R::spawn_here(async move {
                        let started = Instant::now();
                        (started - spawned, Instant::now())
                    })
                })
                .collect();
            let mut last = long.await;
            for short in shorts {
                let (delay, done) = short.await;
                delays.push(delay.as_secs_f64() * 1e3);
                last = last.max(done);
            }
            makespans.push((last - first).as_secs_f64() * 1e3);
            R::sleep(GAP).await;
        }
        (delays, makespans)
    });
    drop(rt);
    vec![
        ("short_delay_p50_ms", percentile(&mut delays, 0.50)),
        ("short_delay_p99_ms", percentile(&mut delays, 0.99)),
        ("makespan_p50_ms", percentile(&mut makespans, 0.50)),
    ]
}
