//! `bwos-bench small`: the smallest units of parallel work, where a
//! runtime's fixed costs show and the serial loop is the bar to beat.
//! Each runtime gets a pool of `--threads` workers (2), built outside the
//! timed region; the runtimes take turns in an order that rotates with
//! the repetition.
//!
//! - **spawn-tiny**: `--spawns` (1,000,000) `spawn`s of a tiny body (one
//!   store into the spawn's own slot) in one `scope`, on bwos and rayon;
//!   the serial loop stores the same slots. Reported: nanoseconds per
//!   spawn, and bwos's cost over rayon's (below 1, bwos is cheaper).
//! - **spawn-1us**: `--spawns / 10` (100,000) `spawn`s of a body that
//!   computes for about a microsecond (calibrated at start), in one
//!   `scope`, against the same bodies in a serial loop: the speedup
//!   over serial, which shows whether a loop that only spawns keeps both
//!   workers busy; plain threads given equal shares up front (`threads`)
//!   show the machine's ceiling.
//! - **tree**: a balanced binary tree of `--tree-nodes` (1,023) nodes,
//!   summed with one `join` per node, `--calls` (20,000) times back to back
//!   inside the pool (chili: on its scope), against the serial sum:
//!   nanoseconds per call and the speedup over serial.
//! - **tree-entered**: the same tree, each call entering the pool from the
//!   main thread (`install`; chili: `scope()`), `--calls / 10` times: what
//!   a program pays for a tiny parallel call from outside.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::forkjoin::kernels::Kernel;
use crate::forkjoin::kernels::recursive::TreeSum;
use crate::forkjoin::runtime::{self, ForkJoin};
use crate::options::{RunOptions, WorkerThreads, repetitions_help};
use crate::stats::Summary;

/// Repetitions without `--repetitions`.
pub const REPETITIONS: u32 = 7;

/// Options of `bwos-bench small`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help("A smoke run: one repetition, 20,000 spawns, 200 tree calls")),
    mut_arg("repetitions", repetitions_help("Repetitions (each builds every pool afresh)", REPETITIONS)),
    mut_arg("threads", |a| a.help("Worker threads of every pool")),
)]
pub struct SmallArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--threads`.
    #[command(flatten)]
    pub threads: WorkerThreads,
    /// Spawns of the tiny body (the ~1 us body gets a tenth of them).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(10..=100_000_000))]
    pub spawns: u32,
    /// Nodes of the summed tree.
    #[arg(long, default_value_t = 1_023, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub tree_nodes: u32,
    /// Back-to-back calls of the tree sum (calls entering the pool: a tenth).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(10..=100_000_000))]
    pub calls: u32,
    /// Run only these workloads (comma-separated; default: all).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(WORKLOADS))]
    pub workload: Vec<String>,
}

/// One workload on one runtime in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub workload: &'static str,
    pub runtime: &'static str,
    pub repetition: u32,
    /// Items (spawns or calls) timed.
    pub items: u32,
    /// Wall time over the items, nanoseconds per item.
    pub ns_per_item: f64,
}

const WORKLOADS: [&str; 4] = ["spawn-tiny", "spawn-1us", "tree", "tree-entered"];

/// The runtimes each workload runs on: spawns have no chili counterpart
/// (chili has only `join`). The ~1 us bodies also run on plain threads,
/// each given an equal share up front: the machine's ceiling for the
/// workload, with no runtime at all.
fn runtimes_of(workload: &str) -> &'static [&'static str] {
    match workload {
        "spawn-tiny" => &["serial", "bwos", "rayon"],
        "spawn-1us" => &["serial", "threads", "bwos", "rayon"],
        _ => &["serial", "bwos", "rayon", "chili"],
    }
}

/// Runs the benchmark and returns its samples.
pub fn run(args: &SmallArgs) -> Vec<Sample> {
    let repetitions = args.run.repetitions(REPETITIONS, 1);
    let (spawns, calls) = if args.run.quick {
        (args.spawns.min(20_000), args.calls.min(200))
    } else {
        (args.spawns, args.calls)
    };
    let threads = args.threads.count as usize;
    let spin_per_us = calibrate_spin();
    eprintln!("small: the ~1 us body spins {spin_per_us} rounds");
    let tree = TreeSum::balanced(args.tree_nodes as usize);
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for workload in WORKLOADS {
            if !args.workload.is_empty() && !args.workload.iter().any(|w| w == workload) {
                continue;
            }
            let runtimes = runtimes_of(workload);
            for turn in 0..runtimes.len() {
                let runtime = runtimes[(turn + repetition as usize) % runtimes.len()];
                let (items, seconds) = match workload {
                    "spawn-tiny" => (spawns, spawn_tiny(runtime, threads, spawns)),
                    "spawn-1us" => {
                        let n = (spawns / 10).max(1);
                        (n, spawn_spinning(runtime, threads, n, spin_per_us))
                    }
                    "tree" => (
                        calls,
                        tree_sums(runtime, threads, &tree, calls, TreeCalls::BackToBack),
                    ),
                    _ => {
                        let n = (calls / 10).max(1);
                        (n, tree_sums(runtime, threads, &tree, n, TreeCalls::Entered))
                    }
                };
                samples.push(Sample {
                    workload,
                    runtime,
                    repetition,
                    items,
                    ns_per_item: seconds * 1e9 / f64::from(items),
                });
            }
        }
        eprintln!("small: repetition {} of {repetitions} done", repetition + 1);
    }
    samples
}

/// Rounds of [`spin`] that take about a microsecond here (the median of
/// a few timings, so a preempted one does not skew it).
fn calibrate_spin() -> u64 {
    const ROUNDS: u64 = 1 << 20;
    let mut per_us: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            black_box(spin(ROUNDS, 1));
            ROUNDS as f64 / (start.elapsed().as_secs_f64() * 1e6)
        })
        .collect();
    per_us.sort_by(f64::total_cmp);
    (per_us[2].round() as u64).max(1)
}

/// A dependent chain of multiply-adds the optimizer cannot shorten.
#[inline]
fn spin(rounds: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..rounds {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

fn build_bwos(threads: usize) -> bwos::ThreadPool {
    runtime::Bwos::build(threads)
}

fn build_rayon(threads: usize) -> rayon::ThreadPool {
    runtime::Rayon::build(threads)
}

/// Every slot of `slots` holds what the body of spawn `i` stores.
fn check_slots(slots: &[AtomicU64], expected: impl Fn(u64) -> u64, workload: &str) {
    for (i, slot) in slots.iter().enumerate() {
        assert_eq!(
            slot.load(Ordering::Relaxed),
            expected(i as u64),
            "{workload}: spawn {i} did not run, or ran wrong"
        );
    }
}

/// Seconds for `spawns` tiny spawns in one scope on `runtime`.
fn spawn_tiny(runtime: &str, threads: usize, spawns: u32) -> f64 {
    let slots: Vec<AtomicU64> = (0..spawns).map(|_| AtomicU64::new(0)).collect();
    let slots = &slots[..];
    let body = |i: usize| slots[i].store(i as u64 + 1, Ordering::Relaxed);
    let seconds = spawn_all(runtime, threads, spawns as usize, &body);
    check_slots(slots, |i| i + 1, "spawn-tiny");
    seconds
}

/// Seconds for `spawns` spawns of a ~1 us body in one scope on `runtime`.
fn spawn_spinning(runtime: &str, threads: usize, spawns: u32, spin_per_us: u64) -> f64 {
    let slots: Vec<AtomicU64> = (0..spawns).map(|_| AtomicU64::new(0)).collect();
    let slots = &slots[..];
    let body = |i: usize| slots[i].store(spin(spin_per_us, i as u64), Ordering::Relaxed);
    let seconds = spawn_all(runtime, threads, spawns as usize, &body);
    check_slots(slots, |i| spin(spin_per_us, i), "spawn-1us");
    seconds
}

/// Seconds for `body(0..n)`: each index spawned in one scope inside the
/// pool (bwos, rayon), or called in a loop (serial). The pool is warmed
/// with one small scope first.
fn spawn_all(runtime: &str, threads: usize, n: usize, body: &(dyn Fn(usize) + Sync)) -> f64 {
    match runtime {
        "serial" => timed(|| (0..n).for_each(|i| body(black_box(i)))),
        "threads" => {
            let share = n.div_ceil(threads).max(1);
            timed(|| {
                std::thread::scope(|s| {
                    for first in (0..n).step_by(share) {
                        s.spawn(move || {
                            (first..(first + share).min(n)).for_each(|i| body(black_box(i)))
                        });
                    }
                })
            })
        }
        "bwos" => {
            let pool = build_bwos(threads);
            pool.install(|| bwos::scope(|s| s.spawn(|_| black_box(()))));
            timed(|| {
                pool.install(|| bwos::scope(|s| (0..n).for_each(|i| s.spawn(move |_| body(i)))))
            })
        }
        "rayon" => {
            let pool = build_rayon(threads);
            pool.install(|| rayon::scope(|s| s.spawn(|_| black_box(()))));
            timed(|| {
                pool.install(|| rayon::scope(|s| (0..n).for_each(|i| s.spawn(move |_| body(i)))))
            })
        }
        other => unreachable!("no spawn workload on {other}"),
    }
}

/// How the tree workloads call the sum: `tree` back to back inside one
/// entry into the pool, `tree-entered` entering it from the main thread
/// for each call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TreeCalls {
    BackToBack,
    Entered,
}

/// Seconds for `calls` sums of `tree` on `runtime`, called as `how` says.
fn tree_sums(runtime: &str, threads: usize, tree: &TreeSum, calls: u32, how: TreeCalls) -> f64 {
    fn on<R: ForkJoin>(threads: usize, tree: &TreeSum, calls: u32, how: TreeCalls) -> f64 {
        let pool = R::build(threads);
        let expected = tree.values.len() as u64;
        assert_eq!(R::run(&pool, |ctx| tree.run::<R>(&mut (), ctx)), expected);
        let check = |sum: u64| {
            assert_eq!(sum, expected, "a tree sum came out wrong on {}", R::NAME);
        };
        match how {
            TreeCalls::BackToBack => R::run(&pool, |ctx| {
                timed(|| (0..calls).for_each(|_| check(tree.run::<R>(&mut (), ctx))))
            }),
            TreeCalls::Entered => timed(|| {
                for _ in 0..calls {
                    check(R::run(&pool, |ctx| tree.run::<R>(&mut (), ctx)));
                }
            }),
        }
    }
    match runtime {
        "serial" => on::<runtime::Serial>(threads, tree, calls, how),
        "bwos" => on::<runtime::Bwos>(threads, tree, calls, how),
        "rayon" => on::<runtime::Rayon>(threads, tree, calls, how),
        "chili" => on::<runtime::Chili>(threads, tree, calls, how),
        other => unreachable!("no fork/join runtime named {other}"),
    }
}

/// Seconds that `work` takes.
fn timed(work: impl FnOnce()) -> f64 {
    let start = Instant::now();
    work();
    start.elapsed().as_secs_f64()
}

fn series(samples: &[Sample], workload: &str, runtime: &str) -> Vec<f64> {
    let mut picked: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.workload == workload && s.runtime == runtime)
        .collect();
    picked.sort_by_key(|s| s.repetition);
    picked.iter().map(|s| s.ns_per_item).collect()
}

/// The result table: per workload and runtime, the median nanoseconds
/// per item (min-max over repetitions), the speedup over serial and the
/// cost against rayon's, both paired by repetition.
pub fn tables(samples: &[Sample], threads: u32) -> String {
    let mut out = format!(
        "\n## Small work: spawns and tiny trees, {threads} threads\n\
         ns per spawn or call: median over repetitions (min-max); \
         speedup = serial / runtime (above 1: faster than the serial loop); \
         cost / rayon = runtime / rayon (below 1: cheaper than rayon); both paired by repetition\n\n\
         | workload | runtime | ns per item | speedup over serial | cost / rayon |\n\
         |---|---|---|---|---|\n"
    );
    let ratio = |a: &[f64], b: &[f64]| match Summary::of_ratios(a, b) {
        Some(r) => format!("{:.2} ({:.2}-{:.2})", r.median, r.min, r.max),
        None => "-".into(),
    };
    for workload in WORKLOADS {
        let serial = series(samples, workload, "serial");
        let rayon = series(samples, workload, "rayon");
        for &runtime in runtimes_of(workload) {
            let values = series(samples, workload, runtime);
            let Some(summary) = Summary::of(&values) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {workload} | {runtime} | {:.1} ({:.1}-{:.1}) | {} | {} |",
                summary.median,
                summary.min,
                summary.max,
                if runtime == "serial" {
                    "1".into()
                } else {
                    ratio(&serial, &values)
                },
                if runtime == "serial" {
                    "-".into()
                } else {
                    ratio(&values, &rayon)
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_run_measures_every_workload_on_every_runtime() {
        let args = SmallArgs {
            run: RunOptions {
                quick: true,
                ..RunOptions::default()
            },
            threads: WorkerThreads { count: 2 },
            spawns: 2_000,
            tree_nodes: 63,
            calls: 50,
            workload: Vec::new(),
        };
        let samples = run(&args);
        // 3 + 4 spawn runtimes, 4 tree runtimes twice.
        assert_eq!(samples.len(), 15);
        assert!(samples.iter().all(|s| s.ns_per_item > 0.0));
        let table = tables(&samples, 2);
        for row in [
            "| spawn-tiny | bwos |",
            "| spawn-1us | rayon |",
            "| spawn-1us | threads |",
            "| tree | chili |",
            "| tree-entered | serial |",
        ] {
            assert!(table.contains(row), "{row} missing from\n{table}");
        }
    }

    #[test]
    fn the_spin_depends_on_its_seed_and_rounds() {
        assert_ne!(spin(10, 1), spin(10, 2));
        assert_ne!(spin(10, 1), spin(11, 1));
        assert_eq!(spin(0, 5), 5);
    }
}
