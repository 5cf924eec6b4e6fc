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
use std::io;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::experiment::{self, About, Options, Results};
use crate::options::{OptionHelp, WorkerThreads};
use crate::output::Samples;
use crate::plot::{BarSeries, Better, Chart, Figure};
use crate::progress::{self, Bar};
use crate::stats::Summary;
use kernels::{Kernel, Scale};
use runtime::{AsyncRuntime, Bwos, Smol, Tokio};

/// Options of `bwos-bench async`.
#[derive(Debug, Clone, clap::Args)]
pub struct AsyncArgs {
    /// Timed iterations of each kernel per repetition.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
}

impl OptionHelp for AsyncArgs {
    const QUICK: &'static str = "A smoke run: one repetition, three iterations, sizes / 10";
    const REPETITIONS: &'static str = "Repetitions (each starts every runtime afresh)";
    const DEFAULT_REPETITIONS: u32 = 7;
    const PLOT: &'static str =
        "Write an SVG plot (bwos's speed relative to each peer, per kernel) into this directory";
    const THREADS: &'static str = "Worker threads of every runtime";
}

impl experiment::Experiment for AsyncArgs {
    const NAME: &'static str = "async";
    const ABOUT: About = About {
        measures: "tokio's scheduler microbenchmarks (spawning from inside and outside the \
                   runtime, ping-pong, yield, chained spawns) on bwos, tokio and smol with the \
                   same worker count: median time per iteration.",
        better: "Lower time is better; tokio/bwos and smol/bwos above 1 mean bwos is faster.",
        paper: None,
    };
    type Threads = WorkerThreads<AsyncArgs>;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let kernels = kernels::all::<Bwos>().len();
        let steps = u64::from(options.run.repetitions(1)) * (RUNTIMES.len() * kernels) as u64;
        progress::Plan::steps(steps, f64::from(iterations(options) + 1) * 0.003 + 0.005)
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Sample>>> {
        let samples = run(options, bar);
        Ok(Results {
            tables: tables(&samples),
            figures: vec![figure(&samples)],
            result: None,
            failures: Vec::new(),
            body: Samples { samples },
        })
    }

    /// 3 repetitions of 10 iterations on 2 threads.
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), Some(3)),
            threads: WorkerThreads::of(2),
            own: AsyncArgs { iterations: 10 },
        })
    }
}

fn iterations(options: &Options<AsyncArgs>) -> u32 {
    if options.run.quick {
        3
    } else {
        options.own.iterations
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
pub fn run(options: &Options<AsyncArgs>, bar: &Bar) -> Vec<Sample> {
    let repetitions = options.run.repetitions(1);
    let iterations = iterations(options);
    let threads = options.threads.count as usize;
    let scale = Scale {
        divisor: if options.run.quick { 10 } else { 1 },
        workers: threads,
    };
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for offset in 0..RUNTIMES.len() {
            let measure = match (repetition as usize + offset) % RUNTIMES.len() {
                0 => measure::<Bwos>,
                1 => measure::<Tokio>,
                _ => measure::<Smol>,
            };
            let turn = Turn {
                threads,
                scale,
                repetition,
                repetitions,
                iterations,
            };
            measure(&turn, bar, &mut samples);
        }
    }
    samples
}

/// One runtime's turn in one repetition.
struct Turn {
    threads: usize,
    scale: Scale,
    repetition: u32,
    repetitions: u32,
    iterations: u32,
}

fn measure<R: AsyncRuntime>(turn: &Turn, bar: &Bar, samples: &mut Vec<Sample>) {
    let rt = R::start(turn.threads);
    for Kernel { name, run } in kernels::all::<R>() {
        bar.set_message(format!(
            "{name} on {}, repetition {} of {}",
            R::NAME,
            turn.repetition + 1,
            turn.repetitions
        ));
        // Let the workers fall asleep between kernels, as between
        // requests of a real service.
        std::thread::sleep(Duration::from_millis(5));
        run(&rt, turn.scale);
        let mut times: Vec<f64> = (0..turn.iterations)
            .map(|_| {
                let start = Instant::now();
                run(&rt, turn.scale);
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        samples.push(Sample {
            kernel: name,
            runtime: R::NAME,
            repetition: turn.repetition,
            micros: Summary::of(&times).expect("at least one iteration").median,
        });
        bar.step();
    }
}

/// The kernels in the order they ran.
fn kernel_names(samples: &[Sample]) -> Vec<&'static str> {
    let mut kernels: Vec<&'static str> = Vec::new();
    for sample in samples {
        if !kernels.contains(&sample.kernel) {
            kernels.push(sample.kernel);
        }
    }
    kernels
}

/// Per kernel, each peer's time over bwos's (paired, median): how much
/// faster bwos is.
fn figure(samples: &[Sample]) -> Figure {
    let kernels = kernel_names(samples);
    let series = RUNTIMES[1..]
        .iter()
        .map(|&peer| {
            let values = kernels
                .iter()
                .map(|kernel| {
                    let bwos = series(samples, kernel, Bwos::NAME);
                    Summary::of_ratios(&series(samples, kernel, peer), &bwos).map(|r| r.median)
                })
                .collect();
            BarSeries::new(format!("{peer} time / bwos time"), values)
        })
        .collect();
    Figure {
        file: "async.svg".into(),
        title: "Async scheduler benchmarks: bwos's speed against each peer's, per kernel".into(),
        better: Better::Higher,
        note: "above 1, bwos is faster; paired ratios of times, median over repetitions".into(),
        chart: Chart::Bars {
            value_label: "peer's time / bwos's time".into(),
            categories: kernels.iter().map(|k| k.to_string()).collect(),
            series,
            reference: Some((1.0, "as fast as the peer".into())),
        },
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
    let kernels = kernel_names(samples);
    let mut out = String::from(
        "\n## Async scheduler microbenchmarks (tokio's rt_multi_threaded workloads)\n\
         median time per iteration in microseconds (min-max over repetitions); \
         tokio/bwos and smol/bwos are paired ratios of times: above 1, bwos is faster\n\n",
    );
    let _ = writeln!(
        out,
        "| kernel | bwos µs | tokio µs | smol µs | tokio/bwos | smol/bwos |"
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
