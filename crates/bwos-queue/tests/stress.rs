//! Real threads: one owner mixing pushes and pops (and, FIFO, shares of its
//! consumer block) against several thieves mixing single, sampled and
//! batch steals, on small geometries (constant block moves and
//! wrap-arounds, frequent full queue) and the default one. Every value must
//! come out exactly once.
//!
//! `BWOS_STRESS_ITEMS` overrides the number of values per run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use bwos_queue::{Config, Steal};
use bwos_testkit::Rng;

const THIEVES: usize = 3;

fn items() -> u32 {
    let default = if cfg!(miri) { 200 } else { 2_000_000 };
    std::env::var("BWOS_STRESS_ITEMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Checks that `outputs` together hold every value below `n` exactly once.
fn assert_exactly_once(n: u32, outputs: Vec<Vec<u32>>) {
    let mut seen = vec![0u8; n as usize];
    for value in outputs.into_iter().flatten() {
        let count = &mut seen[value as usize];
        assert_eq!(*count, 0, "{value} came out twice");
        *count = 1;
    }
    let missing: Vec<usize> = (0..n as usize).filter(|&i| seen[i] == 0).take(10).collect();
    assert!(missing.is_empty(), "lost values, first ones: {missing:?}");
}

macro_rules! stress_tests {
    ($variant:ident $(, sharing: $tiny:ident, $small:ident)?) => {
        mod $variant {
            use super::*;
            use bwos_queue::$variant;

            fn run(config: Config) {
                let test = format!("{}::stress {config:?}", stringify!($variant));
                bwos_testkit::watchdog(&test, || run_unwatched(config, false));
            }

            /// `run` with the owner calling `Worker::share` before about
            /// one operation in eight (only some flavours' tests do).
            #[allow(dead_code)]
            fn run_sharing(config: Config) {
                let test = format!("{}::stress sharing {config:?}", stringify!($variant));
                bwos_testkit::watchdog(&test, || run_unwatched(config, true));
            }

            fn run_unwatched(config: Config, share_now: bool) {
                let n = items();
                let (worker, stealer) = $variant::new::<u32>(config);
                let done = Arc::new(AtomicBool::new(false));
                let thieves: Vec<_> = (0..THIEVES)
                    .map(|t| {
                        let stealer = stealer.clone();
                        let done = done.clone();
                        thread::spawn(move || {
                            let (own, _) = $variant::new::<u32>(config);
                            let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                            let mut out = Vec::new();
                            loop {
                                // Read before stealing: once the owner is done and
                                // the queue reads empty, nothing can appear later.
                                let finished = done.load(Ordering::Acquire);
                                let result = match rng.u64(..) % 4 {
                                    0 => stealer.steal_batch_and_pop(&own),
                                    1 => stealer.steal_sampled(rng.u64(..) as usize),
                                    _ => stealer.steal(),
                                };
                                match result {
                                    Steal::Success(v) => out.push(v),
                                    Steal::Empty if finished => break,
                                    Steal::Empty | Steal::Retry => thread::yield_now(),
                                }
                                while let Some(v) = own.pop() {
                                    out.push(v);
                                }
                            }
                            assert!(own.is_empty());
                            out
                        })
                    })
                    .collect();

                let mut rng = Rng::with_seed(0xD1B5_4A32_D192_ED03);
                let mut out = Vec::new();
                let mut next = 0;
                let mut refused = 0u64;
                let mut shares = 0u64;
                while next < n {
                    let choice = rng.u64(..);
                    // As a runtime does before polling a task while other
                    // workers are idle.
                    if share_now && choice % 64 < 8 && worker.share() {
                        shares += 1;
                    }
                    if choice % 8 < 5 {
                        match worker.push(next) {
                            Ok(()) => next += 1,
                            Err(back) => {
                                assert_eq!(back, next);
                                refused += 1;
                                // Full: half the time let the thieves run (on
                                // two cores they otherwise rarely overlap with
                                // the owner), half the time make room.
                                if refused % 2 == 0 {
                                    thread::yield_now();
                                } else {
                                    out.extend(worker.pop());
                                }
                            }
                        }
                    } else {
                        out.extend(worker.pop());
                    }
                }
                while let Some(v) = worker.pop() {
                    out.push(v);
                }
                done.store(true, Ordering::Release);

                let mut outputs: Vec<Vec<u32>> =
                    thieves.into_iter().map(|t| t.join().unwrap()).collect();
                // Nothing may be left for anyone.
                assert!(worker.is_empty());
                assert!(stealer.steal().is_empty());
                let popped = out.len();
                let stolen: usize = outputs.iter().map(Vec::len).sum();
                eprintln!(
                    "{}: {n} values through {config:?}: {stolen} stolen, {} popped, {refused} full-queue refusals, {shares} shares",
                    stringify!($variant),
                    popped,
                );
                outputs.push(out);
                assert_exactly_once(n, outputs);
                // Otherwise the run quietly was sequential. Miri's scheduler
                // and its 200 values give no such guarantee.
                if !cfg!(miri) {
                    assert!(stolen > 0, "no thief stole anything: the run was sequential");
                    if config.capacity() <= 4 {
                        assert!(refused > 0, "a {config:?} queue never refused a push: the full-queue path did not run");
                    }
                }
                if share_now {
                    assert!(shares > 0, "the owner never shared anything");
                }
            }

            #[test]
            fn tiny_blocks_wrap_around_constantly() {
                run(Config::new(2, 2).unwrap());
            }

            #[test]
            fn small_blocks() {
                run(Config::new(4, 8).unwrap());
            }

            #[test]
            fn default_geometry() {
                run(Config::default());
            }

            $(
            /// The owner shares its consumer block at random (and takes it
            /// back with its next pop) while thieves steal from it, across
            /// constant block moves and reuses.
            #[test]
            fn $tiny() {
                run_sharing(Config::new(2, 2).unwrap());
            }

            /// As above, with blocks big enough that thieves and the
            /// owner's pops meet inside the shared block.
            #[test]
            fn $small() {
                run_sharing(Config::new(4, 8).unwrap());
            }
            )?
        }
    };
}

stress_tests!(lifo);
stress_tests!(fifo, sharing: tiny_blocks_sharing, small_blocks_sharing);
