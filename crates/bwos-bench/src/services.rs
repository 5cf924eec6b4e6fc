//! `bwos-bench services`: what a real async program needs besides the
//! scheduler, on bwos and tokio with the same worker count, in the same
//! run (alternating which runtime goes first, each started afresh):
//!
//! - **timers**: `--tasks` tasks (100,000) each sleep a random 0 to
//!   `--max-sleep-ms` (50) ms, then await a `timeout` that fires (1 ms on
//!   a future that never finishes) and one that does not (1 s on a ready
//!   future). Reported: the wall time from the first spawn to the last
//!   task's end, and the lateness of the wake-ups (time after the
//!   deadline at which the task ran again): p50 and p99 of the sleeps,
//!   p99 of the timeouts that fired.
//! - **spawn_blocking**: `--blocking` (10,000) short closures through each
//!   runtime's `spawn_blocking`, all awaited: the wall time.
//!
//! Ratios are tokio's time over bwos's, paired by repetition: above 1,
//! bwos is faster.

use std::fmt::Write as _;
use std::future::Future;
use std::hint::black_box;
use std::io;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::r#async::runtime::{AsyncRuntime, Bwos, Tokio};
use crate::experiment::{self, About, Options, Results};
use crate::options::{OptionHelp, WorkerThreads};
use crate::output::Samples;
use crate::plot::{BarSeries, Better, Chart, Figure};
use crate::progress::{self, Bar};
use crate::stats::Summary;

/// Options of `bwos-bench services`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServicesArgs {
    /// Tasks of the timer workload.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub tasks: u32,
    /// The longest random sleep, in milliseconds.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub max_sleep_ms: u64,
    /// Closures of the spawn_blocking workload.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub blocking: u32,
}

impl OptionHelp for ServicesArgs {
    const QUICK: &'static str =
        "A smoke run: one repetition, 2,000 timer tasks, 500 blocking closures";
    const REPETITIONS: &'static str = "Repetitions (each starts both runtimes afresh)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str =
        "Write an SVG plot (bwos against tokio, figure by figure) into this directory";
    const THREADS: &'static str = "Worker threads of both runtimes";
}

impl experiment::Experiment for ServicesArgs {
    const NAME: &'static str = "services";
    const ABOUT: About = About {
        measures: "Timers (sleeping tasks, timeouts that fire and that do not) and \
                   spawn_blocking on bwos and tokio: wall time and how late wake-ups come.",
        better: "Lower wall time and lateness are better; tokio/bwos above 1 means bwos is \
                 better.",
        paper: None,
    };
    type Threads = WorkerThreads<ServicesArgs>;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let (tasks, blocking) = sizes(options);
        let steps = 4 * u64::from(options.run.repetitions(1));
        let seconds = options.own.max_sleep_ms as f64 / 1e3
            + f64::from(tasks) * 2e-6
            + f64::from(blocking) * 5e-6;
        progress::Plan::steps(steps, seconds + 0.05)
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
}

/// Timer tasks and blocking closures, after `--quick`.
fn sizes(options: &Options<ServicesArgs>) -> (u32, u32) {
    let args = &options.own;
    if options.run.quick {
        (args.tasks.min(2_000), args.blocking.min(500))
    } else {
        (args.tasks, args.blocking)
    }
}

/// One workload on one runtime in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub workload: &'static str,
    pub runtime: &'static str,
    pub repetition: u32,
    pub wall_ms: f64,
    /// Timers only: lateness of the sleeps' wake-ups, microseconds.
    pub sleep_late_p50_us: Option<f64>,
    pub sleep_late_p99_us: Option<f64>,
    /// Timers only: lateness of the timeouts that fired, microseconds.
    pub timeout_late_p99_us: Option<f64>,
}

/// The timer and blocking services of one runtime.
trait Services: AsyncRuntime {
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send;
    /// `Err(())` if the deadline came first.
    fn timeout<F: Future + Send>(
        duration: Duration,
        future: F,
    ) -> impl Future<Output = Result<F::Output, ()>> + Send;
    fn spawn_blocking<R: Send + 'static>(
        f: impl FnOnce() -> R + Send + 'static,
    ) -> impl Future<Output = R> + Send;
}

impl Services for Bwos {
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        bwos::time::sleep(duration)
    }

    async fn timeout<F: Future + Send>(duration: Duration, future: F) -> Result<F::Output, ()> {
        bwos::time::timeout(duration, future).await.map_err(drop)
    }

    async fn spawn_blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        bwos::task::spawn_blocking(f)
            .await
            .expect("a blocking closure of the benchmark failed")
    }
}

impl Services for Tokio {
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }

    async fn timeout<F: Future + Send>(duration: Duration, future: F) -> Result<F::Output, ()> {
        tokio::time::timeout(duration, future).await.map_err(drop)
    }

    async fn spawn_blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        tokio::task::spawn_blocking(f)
            .await
            .expect("a blocking closure of the benchmark failed")
    }
}

/// Runs the benchmark and returns its samples.
pub fn run(options: &Options<ServicesArgs>, bar: &Bar) -> Vec<Sample> {
    let repetitions = options.run.repetitions(1);
    let (tasks, blocking) = sizes(options);
    let max_sleep = Duration::from_millis(options.own.max_sleep_ms);
    let threads = options.threads.count as usize;
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for offset in 0..2 {
            let turn = Turn {
                threads,
                tasks,
                max_sleep,
                blocking,
                repetition,
            };
            bar.set_message(format!("repetition {} of {repetitions}", repetition + 1));
            if (repetition + offset) % 2 == 0 {
                measure::<Bwos>(&turn, bar, &mut samples);
            } else {
                measure::<Tokio>(&turn, bar, &mut samples);
            }
        }
    }
    samples
}

/// One runtime's turn in one repetition.
struct Turn {
    threads: usize,
    tasks: u32,
    max_sleep: Duration,
    blocking: u32,
    repetition: u32,
}

fn measure<R: Services>(turn: &Turn, bar: &Bar, samples: &mut Vec<Sample>) {
    let rt = R::start(turn.threads);
    samples.push(timers::<R>(
        &rt,
        turn.tasks,
        turn.max_sleep,
        turn.repetition,
    ));
    bar.step();
    // Let the workers settle between the workloads.
    std::thread::sleep(Duration::from_millis(20));
    samples.push(spawn_blocking::<R>(&rt, turn.blocking, turn.repetition));
    bar.step();
}

/// A task's random sleep: a fixed pseudo-random spread over
/// `0..max_sleep`, the same for both runtimes.
fn sleep_of(task: u32, max_sleep: Duration) -> Duration {
    let mixed = u64::from(task)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29);
    let micros = max_sleep.as_micros().max(1) as u64;
    Duration::from_micros(mixed % micros)
}

fn timers<R: Services>(rt: &R, tasks: u32, max_sleep: Duration, repetition: u32) -> Sample {
    let start = Instant::now();
    let inner = rt.clone();
    let lateness: Vec<(f64, f64)> = rt.block_on(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|task| {
                inner.spawn(async move {
                    let wait = sleep_of(task, max_sleep);
                    let deadline = Instant::now() + wait;
                    R::sleep(wait).await;
                    let sleep_late = Instant::now().saturating_duration_since(deadline);
                    let fires = Instant::now() + Duration::from_millis(1);
                    let fired = R::timeout(Duration::from_millis(1), std::future::pending::<()>());
                    assert!(fired.await.is_err(), "a timeout on a pending future fired");
                    let timeout_late = Instant::now().saturating_duration_since(fires);
                    let kept = R::timeout(Duration::from_secs(1), async { 7 }).await;
                    assert_eq!(kept, Ok(7), "a timeout on a ready future fired");
                    (
                        sleep_late.as_secs_f64() * 1e6,
                        timeout_late.as_secs_f64() * 1e6,
                    )
                })
            })
            .collect();
        let mut lateness = Vec::with_capacity(handles.len());
        for handle in handles {
            lateness.push(handle.await);
        }
        lateness
    });
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let (mut sleeps, mut timeouts): (Vec<f64>, Vec<f64>) = lateness.into_iter().unzip();
    Sample {
        workload: "timers",
        runtime: R::NAME,
        repetition,
        wall_ms,
        sleep_late_p50_us: Some(percentile(&mut sleeps, 0.50)),
        sleep_late_p99_us: Some(percentile(&mut sleeps, 0.99)),
        timeout_late_p99_us: Some(percentile(&mut timeouts, 0.99)),
    }
}

fn spawn_blocking<R: Services>(rt: &R, closures: u32, repetition: u32) -> Sample {
    let start = Instant::now();
    let sum: u64 = rt.block_on(async move {
        let handles: Vec<_> = (0..closures)
            .map(|i| R::spawn_blocking(move || black_box(u64::from(i) * 2)))
            .collect();
        let mut sum = 0;
        for handle in handles {
            sum += handle.await;
        }
        sum
    });
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(sum, u64::from(closures) * u64::from(closures - 1));
    Sample {
        workload: "spawn_blocking",
        runtime: R::NAME,
        repetition,
        wall_ms,
        sleep_late_p50_us: None,
        sleep_late_p99_us: None,
        timeout_late_p99_us: None,
    }
}

/// The `q` quantile of `values` (nearest rank), sorting them.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

fn series(
    samples: &[Sample],
    workload: &str,
    runtime: &str,
    value: impl Fn(&Sample) -> Option<f64>,
) -> Vec<f64> {
    let mut picked: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.workload == workload && s.runtime == runtime)
        .collect();
    picked.sort_by_key(|s| s.repetition);
    picked.iter().filter_map(|s| value(s)).collect()
}

/// A workload, a figure of it and its value in a sample.
type Measured = (&'static str, &'static str, fn(&Sample) -> Option<f64>);

/// What the table and the plot show.
const FIGURES: [Measured; 5] = [
    ("timers", "wall ms", |s| Some(s.wall_ms)),
    ("timers", "sleep lateness p50 µs", |s| s.sleep_late_p50_us),
    ("timers", "sleep lateness p99 µs", |s| s.sleep_late_p99_us),
    ("timers", "timeout lateness p99 µs", |s| {
        s.timeout_late_p99_us
    }),
    ("spawn_blocking", "wall ms", |s| Some(s.wall_ms)),
];

/// tokio's over bwos's, figure by figure (paired, median).
fn figure(samples: &[Sample]) -> Figure {
    let values = FIGURES
        .iter()
        .map(|(workload, _, value)| {
            let bwos = series(samples, workload, Bwos::NAME, *value);
            let tokio = series(samples, workload, Tokio::NAME, *value);
            Summary::of_ratios(&tokio, &bwos).map(|r| r.median)
        })
        .collect();
    Figure {
        file: "services.svg".into(),
        title: "Timers and spawn_blocking: tokio's figure over bwos's".into(),
        better: Better::Higher,
        note: "above 1, bwos is faster or wakes closer to the deadline; paired, median".into(),
        chart: Chart::Bars {
            value_label: "tokio's value / bwos's value".into(),
            categories: FIGURES
                .iter()
                .map(|(workload, figure, _)| format!("{workload}: {figure}"))
                .collect(),
            series: vec![BarSeries::new("tokio / bwos", values)],
            reference: Some((1.0, "as good as tokio".into())),
        },
    }
}

/// The result table: per workload and figure, each runtime's median
/// (min-max over repetitions) and the paired ratio tokio/bwos.
pub fn tables(samples: &[Sample]) -> String {
    let mut out = String::from(
        "\n## Runtime services: timers and spawn_blocking, bwos vs tokio\n\
         medians over repetitions (min-max); tokio/bwos is the paired ratio: \
         above 1, bwos is faster (for lateness: bwos wakes closer to the deadline)\n\n\
         | workload | figure | bwos | tokio | tokio/bwos |\n|---|---|---|---|---|\n",
    );
    for (workload, figure, value) in FIGURES {
        let bwos = series(samples, workload, Bwos::NAME, value);
        let tokio = series(samples, workload, Tokio::NAME, value);
        let cell = |values: &[f64]| match Summary::of(values) {
            Some(s) => format!("{:.1} ({:.1}-{:.1})", s.median, s.min, s.max),
            None => "-".into(),
        };
        let ratio = match Summary::of_ratios(&tokio, &bwos) {
            Some(r) => format!("{:.2} ({:.2}-{:.2})", r.median, r.min, r.max),
            None => "-".into(),
        };
        let _ = writeln!(
            out,
            "| {workload} | {figure} | {} | {} | {ratio} |",
            cell(&bwos),
            cell(&tokio)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut values, 0.50), 50.0);
        assert_eq!(percentile(&mut values, 0.99), 99.0);
        assert!(percentile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn sleeps_spread_over_the_range() {
        let max = Duration::from_millis(50);
        let sleeps: Vec<_> = (0..1000).map(|t| sleep_of(t, max)).collect();
        assert!(sleeps.iter().all(|&s| s < max));
        assert!(sleeps.iter().any(|&s| s < max / 10));
        assert!(sleeps.iter().any(|&s| s > max * 9 / 10));
    }

    /// Also: the steps the plan counts are the steps the run takes, so
    /// the progress bar's total is right before it starts (mutation: no
    /// `bar.step()` after the spawn_blocking workload).
    #[test]
    fn a_quick_run_measures_both_runtimes() {
        let options = Options {
            run: crate::options::RunOptions {
                quick: true,
                ..Default::default()
            },
            threads: WorkerThreads::of(2),
            own: ServicesArgs {
                tasks: 200,
                max_sleep_ms: 5,
                blocking: 50,
            },
        };
        let bar = Bar::hidden();
        let samples = run(&options, &bar);
        assert_eq!(samples.len(), 4);
        // Every step planned is taken: the bar ends full.
        assert_eq!(bar.position(), ServicesArgs::plan(&options).steps);
        let table = tables(&samples);
        assert!(table.contains("| timers | wall ms |"), "{table}");
        assert!(table.contains("| spawn_blocking | wall ms |"), "{table}");
    }
}
