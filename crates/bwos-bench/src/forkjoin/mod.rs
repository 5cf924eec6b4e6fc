//! `bwos-bench forkjoin`: fork/join workloads (fib, n-queens, tree sums) on
//! serial code, bwos, rayon and chili, on one thread and on all cores.
//!
//! Every runtime gets a fresh pool for each measurement (built and warmed
//! up outside the timed region, dropped after it), so no pool's idle
//! threads compete with the next measurement; runtimes are interleaved
//! (A B C D, then D C B A) and every configuration is repeated. The timed
//! region runs a whole batch of iterations inside one `install` (chili:
//! one scope), so that entering the pool is not what is measured.

pub(crate) mod kernels;
mod report;
pub(crate) mod runtime;
pub(crate) mod workloads;

use std::hint::black_box;
use std::num::NonZero;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

pub use report::{tables, write_outputs};
use workloads::Tree;

/// Options of `bwos-bench forkjoin`.
#[derive(Debug, Clone, Args)]
pub struct ForkJoinArgs {
    /// Repetitions of every configuration (interleaved across runtimes).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repetitions: u32,
    /// Target milliseconds per measurement (the iteration count is set from
    /// the serial time).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub millis: u64,
    /// Thread counts to run (default: 1 and the number of cores).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Vec<u32>,
    /// Workloads to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Workload>,
    /// fib's argument.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(2..=45))]
    pub fib: u64,
    /// n-queens' board size.
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(4..=14))]
    pub queens: u32,
    /// A short smoke run: 2 repetitions, short measurements, small sizes.
    #[arg(long)]
    pub quick: bool,
    /// Write every sample to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write SVG plots into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

impl ForkJoinArgs {
    /// The options `report` uses: defaults, with the shared switches.
    pub fn for_report(quick: bool, repetitions: u32, plot: Option<PathBuf>) -> Self {
        ForkJoinArgs {
            repetitions,
            millis: 300,
            threads: Vec::new(),
            only: Vec::new(),
            fib: 30,
            queens: 11,
            quick,
            json: None,
            plot,
        }
    }
}

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Naive recursive Fibonacci.
    Fib,
    /// n-queens solution count.
    Nqueens,
    /// Sum of a balanced binary tree of 1,000 nodes.
    Tree1k,
    /// Sum of a balanced binary tree of 10,000,000 nodes.
    Tree10m,
}

/// The runtimes compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Serial,
    Bwos,
    Rayon,
    Chili,
}

impl Runtime {
    pub const ALL: [Runtime; 4] = [
        Runtime::Serial,
        Runtime::Bwos,
        Runtime::Rayon,
        Runtime::Chili,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Runtime::Serial => "serial",
            Runtime::Bwos => "bwos",
            Runtime::Rayon => "rayon",
            Runtime::Chili => "chili",
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub workload: String,
    pub threads: usize,
    pub runtime: Runtime,
    pub repetition: u32,
    /// Seconds per iteration (one whole computation).
    pub seconds: f64,
}

/// A workload instance: its label, input and expected result.
struct Instance {
    label: String,
    kind: Workload,
    size: u64,
    tree: Option<Tree>,
    expected: u64,
}

impl Instance {
    fn new(kind: Workload, args: &ForkJoinArgs) -> Instance {
        let quick = args.quick;
        let (label, size, tree, expected) = match kind {
            Workload::Fib => {
                let n = if quick { args.fib.min(25) } else { args.fib };
                (format!("fib({n})"), n, None, workloads::fib_value(n))
            }
            Workload::Nqueens => {
                let n = if quick {
                    args.queens.min(9)
                } else {
                    args.queens
                };
                let expected = workloads::nqueens_solutions(n).expect("n is at most 14");
                (format!("nqueens({n})"), u64::from(n), None, expected)
            }
            Workload::Tree1k => (
                "tree 1K".to_string(),
                1000,
                Some(Tree::balanced(1000)),
                1000,
            ),
            Workload::Tree10m => {
                let nodes = if quick { 1_000_000 } else { 10_000_000 };
                let label = if quick { "tree 1M" } else { "tree 10M" };
                (
                    label.to_string(),
                    nodes,
                    Some(Tree::balanced(nodes as usize)),
                    nodes,
                )
            }
        };
        Instance {
            label,
            kind,
            size,
            tree,
            expected,
        }
    }
}

macro_rules! run_workload {
    ($module:ident, $instance:expr, $ctx:expr) => {{
        let instance: &Instance = $instance;
        match instance.kind {
            Workload::Fib => workloads::$module::fib(black_box(instance.size), $ctx),
            Workload::Nqueens => workloads::$module::nqueens(black_box(instance.size as u32), $ctx),
            Workload::Tree1k | Workload::Tree10m => {
                let tree = instance.tree.as_ref().expect("tree workloads have a tree");
                workloads::$module::tree_sum(black_box(&tree.values), 0, $ctx)
            }
        }
    }};
}

/// Runs `iterations` computations on `runtime` with `threads` threads and
/// returns the seconds per iteration. The pool is built and warmed up
/// before, and dropped after, the timed region.
fn measure_once(runtime: Runtime, threads: usize, instance: &Instance, iterations: u32) -> f64 {
    let batch = |run: &mut dyn FnMut() -> u64| {
        for _ in 0..iterations {
            let result = run();
            assert_eq!(
                result,
                instance.expected,
                "{} computed a wrong result",
                runtime.name()
            );
        }
    };
    let elapsed = match runtime {
        Runtime::Serial => {
            black_box(run_workload!(serial, instance, &mut ()));
            let start = Instant::now();
            batch(&mut || run_workload!(serial, instance, &mut ()));
            start.elapsed()
        }
        Runtime::Bwos => {
            let pool = bwos::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a bwos pool");
            pool.install(|| black_box(run_workload!(with_bwos, instance, &mut ())));
            let start = Instant::now();
            pool.install(|| batch(&mut || run_workload!(with_bwos, instance, &mut ())));
            start.elapsed()
        }
        Runtime::Rayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a rayon pool");
            pool.install(|| black_box(run_workload!(with_rayon, instance, &mut ())));
            let start = Instant::now();
            pool.install(|| batch(&mut || run_workload!(with_rayon, instance, &mut ())));
            let elapsed = start.elapsed();
            drop(pool);
            // rayon's threads exit after the pool is dropped, not before
            // `drop` returns: give them a moment to leave the cores.
            std::thread::sleep(Duration::from_millis(20));
            elapsed
        }
        Runtime::Chili => {
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: NonZero::new(threads),
                ..chili::Config::default()
            });
            let mut scope = pool.scope();
            black_box(run_workload!(with_chili, instance, &mut scope));
            let start = Instant::now();
            batch(&mut || run_workload!(with_chili, instance, &mut scope));
            start.elapsed()
        }
    };
    elapsed.as_secs_f64() / f64::from(iterations)
}

/// Runs every selected workload; returns every sample.
pub fn run(args: &ForkJoinArgs) -> Vec<Sample> {
    let cores = std::thread::available_parallelism().map_or(1, NonZero::get);
    let mut thread_counts: Vec<usize> = if args.threads.is_empty() {
        vec![1, cores]
    } else {
        args.threads.iter().map(|&t| t as usize).collect()
    };
    thread_counts.dedup();
    let (repetitions, target) = if args.quick {
        (2, Duration::from_millis(30))
    } else {
        (args.repetitions, Duration::from_millis(args.millis))
    };
    let kinds: Vec<Workload> = if args.only.is_empty() {
        vec![
            Workload::Fib,
            Workload::Nqueens,
            Workload::Tree1k,
            Workload::Tree10m,
        ]
    } else {
        args.only.clone()
    };
    let progress =
        ProgressBar::new((kinds.len() * thread_counts.len() * 4) as u64 * u64::from(repetitions));
    progress.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    progress.set_prefix("forkjoin");
    let mut samples = Vec::new();
    for kind in kinds {
        progress.set_message(format!("building {kind:?}"));
        let instance = Instance::new(kind, args);
        // Iterations per measurement from the serial time (at least one).
        let probe = measure_once(Runtime::Serial, 1, &instance, 1);
        let iterations = (target.as_secs_f64() / probe).clamp(1.0, 1e7) as u32;
        for &threads in &thread_counts {
            progress.set_message(format!("{} on {threads} thread(s)", instance.label));
            for repetition in 0..repetitions {
                let mut order = Runtime::ALL.to_vec();
                if repetition % 2 == 1 {
                    order.reverse();
                }
                for runtime in order {
                    let seconds = measure_once(runtime, threads, &instance, iterations);
                    samples.push(Sample {
                        workload: instance.label.clone(),
                        threads,
                        runtime,
                        repetition,
                        seconds,
                    });
                    progress.inc(1);
                }
            }
        }
    }
    progress.finish_and_clear();
    samples
}
