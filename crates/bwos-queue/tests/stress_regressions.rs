//! Stress versions of the regression models in `loom_regressions.rs`, on
//! real threads, for what loom cannot reach: real preemption at any
//! instruction (a thief descheduled between reading a block's position and
//! its CAS), long runs, and many laps across the wrap of the 40-bit round
//! counter.
//!
//! Each test runs many short runs, each on a fresh tiny queue (2 to 4
//! blocks of 1 or 2 entries, so the owner changes blocks every push or two
//! and laps the ring constantly) whose rounds start a few laps before the
//! counter wraps from 2^40 - 1 to 0. The owner pushes and pops a stream of
//! values while thieves (more threads than this 2-core machine has cores,
//! so they are preempted mid-steal) steal; when the owner is done the
//! thieves drain the queue first, and nothing a thief could take may be
//! left when they report empty; then the owner pops what remains in its own
//! block. Every value must come out exactly once.
//!
//! Each flavor of each test runs for `BWOS_STRESS_REGRESSION_MS`
//! milliseconds (default 1500), and at least [`MIN_RUNS`] runs, under a
//! watchdog: the file takes about 6 s on 2 cores. Under Miri each runs
//! once, on a short stream.
//!
//! What none of this reaches is the ABA of Tokio's bug at full width: a
//! thief's stale CAS could succeed only after the owner cycled one block
//! through 2^40 rounds during a single stall. These tests run the same
//! code across the wrap of the counter, not through its whole range.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bwos_queue::{Config, Steal};
use bwos_testkit::Rng;

/// The last round before the 40-bit round counter wraps to 0.
const LAST_ROUND: u64 = (1 << 40) - 1;

/// Runs per test at least, however long they take (Miri: one short run
/// per test, as a check of the memory accesses, not a stress test).
const MIN_RUNS: u32 = if cfg!(miri) { 1 } else { 20 };

/// Values the owner pushes per run.
const VALUES_PER_RUN: u32 = if cfg!(miri) { 40 } else { 400 };

/// How long each test keeps starting new runs.
fn budget() -> Duration {
    if cfg!(miri) {
        return Duration::ZERO;
    }
    let ms = std::env::var("BWOS_STRESS_REGRESSION_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500);
    Duration::from_millis(ms)
}

/// How a thief steals.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `steal()`.
    Single,
    /// `steal_batch_and_pop` and `steal_batch` into its own queue,
    /// alternately, then drains that queue.
    Batch,
}

/// One stress test: the geometries to cycle through, the thieves, and how
/// often (out of 8) the owner pushes rather than pops.
struct Plan {
    geometries: &'static [(usize, usize)],
    thieves: &'static [Kind],
    pushes_per_8: u64,
}

/// What a series of runs did, summed.
#[derive(Debug, Default)]
struct Totals {
    runs: u32,
    stolen: u64,
    popped: u64,
    refused: u64,
}

/// Checks that `outputs` together hold every value below `n` exactly once.
fn assert_exactly_once(n: u32, outputs: &[Vec<u32>]) {
    let mut seen = vec![false; n as usize];
    for &value in outputs.iter().flatten() {
        let slot = &mut seen[value as usize];
        assert!(!*slot, "{value} came out twice");
        *slot = true;
    }
    let missing: Vec<usize> = (0..n as usize).filter(|&i| !seen[i]).take(10).collect();
    assert!(missing.is_empty(), "lost values, first ones: {missing:?}");
}

macro_rules! flavor {
    ($variant:ident) => {
        mod $variant {
            use super::*;
            use bwos_queue::$variant;

            /// Runs `plan` for the time budget (and at least `MIN_RUNS`
            /// runs) under a watchdog named `test`.
            pub(super) fn stress(test: &str, plan: &'static Plan) -> Totals {
                let name = format!("{}::{test}", stringify!($variant));
                bwos_testkit::watchdog(&name, || {
                    let start = Instant::now();
                    let mut totals = Totals::default();
                    while totals.runs < MIN_RUNS || start.elapsed() < budget() {
                        let (blocks, size) =
                            plan.geometries[totals.runs as usize % plan.geometries.len()];
                        // 0 to 3 laps before the wrap, so that every run
                        // crosses it early and then keeps lapping.
                        let first_round = LAST_ROUND - u64::from(totals.runs % 4);
                        let config = Config::new(blocks, size)
                            .unwrap()
                            .with_first_round(first_round);
                        run(plan, config, u64::from(totals.runs), &mut totals);
                        totals.runs += 1;
                    }
                    eprintln!("{name}: {totals:?}");
                    totals
                })
            }

            /// One run on a fresh queue.
            fn run(plan: &Plan, config: Config, seed: u64, totals: &mut Totals) {
                let (worker, stealer) = $variant::new::<u32>(config);
                let done = Arc::new(AtomicBool::new(false));
                let thieves: Vec<_> = plan
                    .thieves
                    .iter()
                    .enumerate()
                    .map(|(t, &kind)| {
                        let stealer = stealer.clone();
                        let done = done.clone();
                        thread::spawn(move || thief(&stealer, kind, config, &done, seed, t))
                    })
                    .collect();

                let mut rng =
                    Rng::with_seed(0xD1B5_4A32_D192_ED03 ^ seed.wrapping_mul(0x9E37_79B9));
                let mut popped = Vec::new();
                let mut next = 0;
                while next < VALUES_PER_RUN {
                    if rng.u64(..) % 8 < plan.pushes_per_8 {
                        match worker.push(next) {
                            Ok(()) => next += 1,
                            Err(back) => {
                                assert_eq!(back, next);
                                totals.refused += 1;
                                // Full: let the thieves run, or make room.
                                if rng.u64(..) % 2 == 0 {
                                    thread::yield_now();
                                } else {
                                    popped.extend(worker.pop());
                                }
                            }
                        }
                    } else {
                        popped.extend(worker.pop());
                    }
                }
                // The thieves drain first: what was granted to them must
                // be reachable by a steal, not only by the owner's pop.
                done.store(true, Ordering::Release);
                let mut outputs: Vec<Vec<u32>> =
                    thieves.into_iter().map(|t| t.join().unwrap()).collect();
                assert!(
                    stealer.steal().is_empty(),
                    "a steal found items after the thieves' last Empty"
                );
                assert_eq!(
                    stealer.len(),
                    0,
                    "items left stealable after the thieves' last Empty"
                );
                while let Some(value) = worker.pop() {
                    popped.push(value);
                }
                assert!(worker.is_empty());
                totals.stolen += outputs.iter().map(|o| o.len() as u64).sum::<u64>();
                totals.popped += popped.len() as u64;
                outputs.push(popped);
                assert_exactly_once(VALUES_PER_RUN, &outputs);
            }

            /// A thief: steals until the owner is done and a steal comes
            /// back empty.
            fn thief(
                stealer: &$variant::Stealer<u32>,
                kind: Kind,
                config: Config,
                done: &AtomicBool,
                seed: u64,
                t: usize,
            ) -> Vec<u32> {
                let (own, _) = $variant::new::<u32>(config);
                let mut out = Vec::new();
                let mut attempt = seed.wrapping_add(t as u64);
                loop {
                    // Read before stealing: once the owner is done and a
                    // steal finds the queue empty, nothing appears later.
                    let finished = done.load(Ordering::Acquire);
                    attempt += 1;
                    let result = match kind {
                        Kind::Single => stealer.steal(),
                        Kind::Batch if attempt % 2 == 0 => stealer.steal_batch_and_pop(&own),
                        Kind::Batch => match stealer.steal_batch(&own) {
                            Steal::Success(()) => Steal::Success(
                                own.pop().expect("a successful batch steal brought items"),
                            ),
                            Steal::Empty => Steal::Empty,
                            Steal::Retry => Steal::Retry,
                        },
                    };
                    match result {
                        Steal::Success(value) => out.push(value),
                        Steal::Empty if finished => break,
                        Steal::Empty | Steal::Retry => thread::yield_now(),
                    }
                    while let Some(value) = own.pop() {
                        out.push(value);
                    }
                }
                assert!(own.is_empty());
                out
            }
        }
    };
}

flavor!(lifo);
flavor!(fifo);

/// Checks that thieves took part (otherwise the runs were sequential).
/// Miri's scheduler and its one short run give no such guarantee.
fn assert_concurrent(totals: &Totals) {
    assert!(totals.runs >= MIN_RUNS, "{totals:?}");
    if !cfg!(miri) {
        assert!(totals.stolen > 0, "no thief stole anything: {totals:?}");
    }
}

/// NVIDIA/stdexec PR #1967: tasks lost when a thief skipped a block the
/// owner had taken over and later re-granted (see the loom model). Two
/// thieves on blocks of one entry, so every push or pop changes blocks,
/// lapping across the round wrap; the thieves drain first at the end.
#[test]
fn stdexec_1967_block_wraparound_loses_no_task() {
    static PLAN: Plan = Plan {
        geometries: &[(2, 1), (4, 1), (2, 2)],
        thieves: &[Kind::Single, Kind::Single],
        pushes_per_8: 5,
    };
    assert_concurrent(&lifo::stress("stdexec_1967", &PLAN));
    assert_concurrent(&fifo::stress("stdexec_1967", &PLAN));
}

/// NVIDIA/stdexec issue #2130: two thieves stealing the same task while
/// the owner pushes (see the loom model). Four single-item thieves against
/// an owner that mostly pushes, so thieves race each other on the blocks
/// the owner is filling and granting.
#[test]
fn stdexec_2130_two_thieves_never_steal_the_same_task() {
    static PLAN: Plan = Plan {
        geometries: &[(2, 2), (4, 2), (2, 1)],
        thieves: &[Kind::Single, Kind::Single, Kind::Single, Kind::Single],
        pushes_per_8: 7,
    };
    assert_concurrent(&lifo::stress("stdexec_2130", &PLAN));
    assert_concurrent(&fifo::stress("stdexec_2130", &PLAN));
}

/// tokio-rs/tokio issue #5041: a stalled batch stealer whose CAS succeeds
/// on a stale view and takes more items than the queue holds (see the loom
/// model). Three batch thieves, preempted mid-steal by oversubscription,
/// against an owner that pops as often as it pushes, so blocks are taken
/// over and reused with fewer items, across the round wrap.
#[test]
fn tokio_5041_stalled_batch_thief_takes_no_more_than_is_there() {
    static PLAN: Plan = Plan {
        geometries: &[(2, 2), (4, 2), (2, 1)],
        thieves: &[Kind::Batch, Kind::Batch, Kind::Batch],
        pushes_per_8: 4,
    };
    assert_concurrent(&lifo::stress("tokio_5041", &PLAN));
    assert_concurrent(&fifo::stress("tokio_5041", &PLAN));
}

/// crossbeam-rs/crossbeam GHSA-pqqp-xmhj-wgcw: a steal racing the worker's
/// pop returned a task that was also popped (see the loom model). The
/// owner keeps the queue almost empty (pushes and pops equally often, on
/// blocks of one entry), so its pops take over the very entries a batch
/// thief and a single thief are reserving, and those entries are written
/// again within a push or two.
#[test]
fn crossbeam_ghsa_pqqp_pop_racing_steal_returns_each_item_once() {
    static PLAN: Plan = Plan {
        geometries: &[(2, 1), (3, 1), (2, 2)],
        thieves: &[Kind::Batch, Kind::Single],
        pushes_per_8: 4,
    };
    assert_concurrent(&lifo::stress("crossbeam_ghsa", &PLAN));
    assert_concurrent(&fifo::stress("crossbeam_ghsa", &PLAN));
}
