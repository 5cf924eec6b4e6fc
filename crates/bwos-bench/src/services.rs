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
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::asyncrt::runtime::{AsyncRuntime, Bwos, Tokio};
use crate::options::{RunOptions, WorkerThreads, repetitions_help};
use crate::stats::Summary;

/// Repetitions without `--repetitions`.
pub const REPETITIONS: u32 = 5;

/// Options of `bwos-bench services`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help("A smoke run: one repetition, 2,000 timer tasks, 500 blocking closures")),
    mut_arg("repetitions", repetitions_help("Repetitions (each starts both runtimes afresh)", REPETITIONS)),
    mut_arg("threads", |a| a.help("Worker threads of both runtimes")),
)]
pub struct ServicesArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--threads`.
    #[command(flatten)]
    pub threads: WorkerThreads,
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
pub fn run(args: &ServicesArgs) -> Vec<Sample> {
    let repetitions = args.run.repetitions(REPETITIONS, 1);
    let (tasks, blocking) = if args.run.quick {
        (args.tasks.min(2_000), args.blocking.min(500))
    } else {
        (args.tasks, args.blocking)
    };
    let max_sleep = Duration::from_millis(args.max_sleep_ms);
    let threads = args.threads.count as usize;
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for offset in 0..2 {
            if (repetition + offset) % 2 == 0 {
                measure::<Bwos>(
                    threads,
                    tasks,
                    max_sleep,
                    blocking,
                    repetition,
                    &mut samples,
                );
            } else {
                measure::<Tokio>(
                    threads,
                    tasks,
                    max_sleep,
                    blocking,
                    repetition,
                    &mut samples,
                );
            }
        }
        eprintln!(
            "services: repetition {} of {repetitions} done",
            repetition + 1
        );
    }
    samples
}

fn measure<R: Services>(
    threads: usize,
    tasks: u32,
    max_sleep: Duration,
    blocking: u32,
    repetition: u32,
    samples: &mut Vec<Sample>,
) {
    let rt = R::start(threads);
    samples.push(timers::<R>(&rt, tasks, max_sleep, repetition));
    // Let the workers settle between the workloads.
    std::thread::sleep(Duration::from_millis(20));
    samples.push(spawn_blocking::<R>(&rt, blocking, repetition));
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

/// The result table: per workload and figure, each runtime's median
/// (min-max over repetitions) and the paired ratio tokio/bwos.
pub fn tables(samples: &[Sample]) -> String {
    let mut out = String::from(
        "\n## Runtime services: timers and spawn_blocking, bwos vs tokio\n\
         medians over repetitions (min-max); tokio/bwos is the paired ratio: \
         above 1, bwos is faster (for lateness: bwos wakes closer to the deadline)\n\n\
         | workload | figure | bwos | tokio | tokio/bwos |\n|---|---|---|---|---|\n",
    );
    type Figure = (&'static str, &'static str, fn(&Sample) -> Option<f64>);
    let figures: [Figure; 5] = [
        ("timers", "wall ms", |s| Some(s.wall_ms)),
        ("timers", "sleep lateness p50 us", |s| s.sleep_late_p50_us),
        ("timers", "sleep lateness p99 us", |s| s.sleep_late_p99_us),
        ("timers", "timeout lateness p99 us", |s| {
            s.timeout_late_p99_us
        }),
        ("spawn_blocking", "wall ms", |s| Some(s.wall_ms)),
    ];
    for (workload, figure, value) in figures {
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

    #[test]
    fn a_quick_run_measures_both_runtimes() {
        let args = ServicesArgs {
            run: RunOptions {
                quick: true,
                ..RunOptions::default()
            },
            threads: WorkerThreads { count: 2 },
            tasks: 200,
            max_sleep_ms: 5,
            blocking: 50,
        };
        let samples = run(&args);
        assert_eq!(samples.len(), 4);
        let table = tables(&samples);
        assert!(table.contains("| timers | wall ms |"), "{table}");
        assert!(table.contains("| spawn_blocking | wall ms |"), "{table}");
    }
}
