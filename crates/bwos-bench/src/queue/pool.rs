//! Experiment 3 (paper Figure 12): a pool of queues. Each of N threads
//! fills its own queue, drains it, then steals k percent of the capacity
//! from the others, choosing victims with a policy.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::queue::no_thief::fill_and_drain;
use crate::queue::policy::{Policy, Selector};
use crate::queues::{CAPACITY, Stealable};

/// Consecutive failed steals (per victim) after which a thief stops trying
/// for this round: everybody else may be draining too.
const GIVE_UP_PER_VICTIM: usize = 4;

/// Runs the pool for `duration`; returns operations (pushes, pops and
/// steals) per second over all threads.
pub fn run<Q: Stealable>(
    threads: usize,
    steal_percent: usize,
    policy: Policy,
    duration: Duration,
) -> f64 {
    let queues: Vec<Q> = (0..threads).map(|_| Q::create()).collect();
    let victims: Vec<Vec<Q::Thief>> = (0..threads)
        .map(|me| {
            queues
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != me)
                .map(|(_, queue)| queue.thief())
                .collect()
        })
        .collect();
    let quota = CAPACITY * steal_percent / 100;
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(threads + 1);
    thread::scope(|scope| {
        let workers: Vec<_> = queues
            .into_iter()
            .zip(victims)
            .enumerate()
            .map(|(me, (mut queue, mut victims))| {
                let (stop, start_line) = (&stop, &start_line);
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(me as u64 + 1);
                    let mut selector = Selector::new(policy, me);
                    start_line.wait();
                    let mut ops = 0u64;
                    // Relaxed: a stop request needs no data with it.
                    while !stop.load(Ordering::Relaxed) {
                        ops += fill_and_drain(&mut queue);
                        if victims.is_empty() {
                            continue;
                        }
                        let (mut stolen, mut failures) = (0, 0);
                        while stolen < quota && failures < GIVE_UP_PER_VICTIM * victims.len() {
                            let victim = selector.pick::<Q>(&victims, &mut rng);
                            let success = Q::steal(&mut victims[victim]).map(black_box).is_some();
                            selector.record(victim, success);
                            if success {
                                stolen += 1;
                                failures = 0;
                            } else {
                                failures += 1;
                            }
                        }
                        ops += stolen as u64;
                    }
                    ops
                })
            })
            .collect();
        start_line.wait();
        let start = Instant::now();
        thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let total: u64 = workers
            .into_iter()
            .map(|w| w.join().expect("pool threads do not panic"))
            .sum();
        total as f64 / start.elapsed().as_secs_f64()
    })
}
