//! `bwos-bench async`: tokio's scheduler microbenchmarks on bwos, tokio
//! and smol with the same worker count.
//!
//! Each repetition starts every runtime afresh, in a rotating order (so
//! that no runtime always runs first or last), runs each kernel once to
//! warm up and then `--iterations` times, and keeps the median time per
//! iteration; the runtime is dropped before the next one starts. Tables
//! give the median over repetitions with its spread, and the paired ratio
//! of each peer's time to bwos's (same repetition, back to back): above 1,
//! bwos is faster.

pub mod kernels;
pub mod runtime;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::options::{RunOptions, WorkerThreads, repetitions_help};
use crate::stats::Summary;
use kernels::{Kernel, Scale};
use runtime::{AsyncRuntime, Bwos, Smol, Tokio};

/// Repetitions without `--repetitions`.
pub const REPETITIONS: u32 = 7;

/// Options of `bwos-bench async`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help("A smoke run: one repetition, three iterations, sizes / 10")),
    mut_arg("repetitions", repetitions_help("Repetitions (each starts every runtime afresh)", REPETITIONS)),
    mut_arg("threads", |a| a.help("Worker threads of every runtime")),
)]
pub struct AsyncArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--threads`.
    #[command(flatten)]
    pub threads: WorkerThreads,
    /// Timed iterations of each kernel per repetition.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
}

impl AsyncArgs {
    /// The short run of `bwos-bench report`: 3 repetitions of 10
    /// iterations on 2 threads, with the report's `run` options.
    pub fn for_report(run: RunOptions) -> AsyncArgs {
        AsyncArgs {
            run: RunOptions {
                repetitions: Some(3),
                ..run
            },
            threads: WorkerThreads { count: 2 },
            iterations: 10,
        }
    }
}

/// One kernel on one runtime in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub kernel: &'static str,
    pub runtime: &'static str,
    pub repetition: u32,
    /// Median over the iterations, in microseconds.
    pub micros: f64,
}

/// The runtimes in table order.
pub const RUNTIMES: [&str; 3] = [Bwos::NAME, Tokio::NAME, Smol::NAME];

/// Runs the benchmark and returns its samples.
pub fn run(args: &AsyncArgs) -> Vec<Sample> {
    let repetitions = args.run.repetitions(REPETITIONS, 1);
    let iterations = if args.run.quick { 3 } else { args.iterations };
    let scale = Scale {
        divisor: if args.run.quick { 10 } else { 1 },
        workers: args.threads.count as usize,
    };
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for offset in 0..RUNTIMES.len() {
            let threads = args.threads.count as usize;
            match (repetition as usize + offset) % RUNTIMES.len() {
                0 => measure::<Bwos>(threads, scale, repetition, iterations, &mut samples),
                1 => measure::<Tokio>(threads, scale, repetition, iterations, &mut samples),
                _ => measure::<Smol>(threads, scale, repetition, iterations, &mut samples),
            }
        }
        eprintln!("async: repetition {} of {repetitions} done", repetition + 1);
    }
    samples
}

fn measure<R: AsyncRuntime>(
    threads: usize,
    scale: Scale,
    repetition: u32,
    iterations: u32,
    samples: &mut Vec<Sample>,
) {
    let rt = R::start(threads);
    for Kernel { name, run } in kernels::all::<R>() {
        // Let the workers fall asleep between kernels, as between
        // requests of a real service.
        std::thread::sleep(Duration::from_millis(5));
        run(&rt, scale);
        let mut times: Vec<f64> = (0..iterations)
            .map(|_| {
                let start = Instant::now();
                run(&rt, scale);
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        samples.push(Sample {
            kernel: name,
            runtime: R::NAME,
            repetition,
            micros: Summary::of(&times).expect("at least one iteration").median,
        });
    }
}

/// Times of `runtime` on `kernel`, by repetition.
fn series(samples: &[Sample], kernel: &str, runtime: &str) -> Vec<f64> {
    let mut picked: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.kernel == kernel && s.runtime == runtime)
        .collect();
    picked.sort_by_key(|s| s.repetition);
    picked.iter().map(|s| s.micros).collect()
}

/// The result tables: per kernel the median time per iteration of each
/// runtime (min-max over repetitions) and each peer's paired time ratio
/// to bwos; then the geometric means of those ratios.
pub fn tables(samples: &[Sample]) -> String {
    let mut kernels: Vec<&'static str> = Vec::new();
    for sample in samples {
        if !kernels.contains(&sample.kernel) {
            kernels.push(sample.kernel);
        }
    }
    let mut out = String::from(
        "\n## Async scheduler microbenchmarks (tokio's rt_multi_threaded workloads)\n\
         median time per iteration in microseconds (min-max over repetitions); \
         tokio/bwos and smol/bwos are paired ratios of times: above 1, bwos is faster\n\n",
    );
    let _ = writeln!(
        out,
        "| kernel | bwos us | tokio us | smol us | tokio/bwos | smol/bwos |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let mut log_ratios = [Vec::new(), Vec::new()];
    for kernel in &kernels {
        let times: Vec<Vec<f64>> = RUNTIMES
            .iter()
            .map(|runtime| series(samples, kernel, runtime))
            .collect();
        let cell = |values: &[f64]| match Summary::of(values) {
            Some(s) => format!("{:.0} ({:.0}-{:.0})", s.median, s.min, s.max),
            None => "-".into(),
        };
        let mut row = format!(
            "| {kernel} | {} | {} | {} |",
            cell(&times[0]),
            cell(&times[1]),
            cell(&times[2])
        );
        for (peer, logs) in [1, 2].into_iter().zip(log_ratios.iter_mut()) {
            match Summary::of_ratios(&times[peer], &times[0]) {
                Some(ratio) => {
                    logs.push(ratio.median.ln());
                    let _ = write!(
                        row,
                        " {:.2} ({:.2}-{:.2}) |",
                        ratio.median, ratio.min, ratio.max
                    );
                }
                None => row.push_str(" - |"),
            }
        }
        let _ = writeln!(out, "{row}");
    }
    let geomean = |logs: &[f64]| {
        if logs.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.2}",
                (logs.iter().sum::<f64>() / logs.len() as f64).exp()
            )
        }
    };
    let _ = writeln!(
        out,
        "| geometric mean | | | | {} | {} |",
        geomean(&log_ratios[0]),
        geomean(&log_ratios[1])
    );
    out
}
