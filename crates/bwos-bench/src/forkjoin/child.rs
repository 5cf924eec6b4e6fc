//! One measurement in a process of its own (`bwos-bench forkjoin-child`,
//! started by `bwos-bench forkjoin`): so that each runtime's peak memory is
//! its own, and no other runtime's threads are alive during its turn.
//!
//! The child builds the kernel's input and the pool, runs the kernel once
//! untimed (warm-up), then `iterations` timed runs inside one entry into
//! the pool (each run's state is made and dropped outside the timing), and
//! prints one line of JSON: a [`ChildReport`].

use std::hint::black_box;
use std::io;
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

use super::Runtime;
use super::asyncfork::{AsyncFork, AsyncSerial, Fork, ForkBoxPin};
use super::kernels::{Kernel, Scale, Suite, Visitor};
use super::runtime::{Bwos, Chili, ForkJoin, Rayon, Serial};

/// Options of the hidden `forkjoin-child` subcommand.
#[derive(Debug, Clone, Args)]
pub struct ChildArgs {
    #[arg(long, value_enum)]
    pub kernel: Suite,
    #[arg(long, value_enum)]
    pub scale: Scale,
    #[arg(long, value_enum)]
    pub runtime: Runtime,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub iterations: u32,
}

/// What a child measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildReport {
    /// The kernel instance (its input size).
    pub label: String,
    /// Mean seconds per timed run.
    pub seconds: f64,
    /// The result digest, the same in every run of this child (else the
    /// child reports an error).
    pub digest: u64,
    /// The process's peak resident memory (`VmHWM`), in KiB.
    pub peak_rss_kib: Option<u64>,
    /// The pool's counters after all runs (bwos only), warm-up included.
    pub stats: Option<bwos::PoolStats>,
}

struct Measure {
    runtime: Runtime,
    threads: usize,
    iterations: u32,
}

impl Visitor for Measure {
    type Output = Result<ChildReport, String>;

    fn visit<K: Kernel>(self, label: String, kernel: &K) -> Result<ChildReport, String> {
        let measured = match self.runtime {
            Runtime::Serial => measure::<K, Serial>(kernel, &self),
            Runtime::Bwos => measure::<K, Bwos>(kernel, &self),
            Runtime::Rayon => measure::<K, Rayon>(kernel, &self),
            Runtime::Chili => measure::<K, Chili>(kernel, &self),
            Runtime::Fork => measure_async::<K, Fork>(kernel, &self),
            Runtime::ForkBoxPin => measure_async::<K, ForkBoxPin>(kernel, &self),
            Runtime::AsyncSerial => measure_async::<K, AsyncSerial>(kernel, &self),
        };
        let (seconds, digest, stats) = measured.map_err(|error| format!("{label}: {error}"))?;
        Ok(ChildReport {
            label,
            seconds,
            digest,
            peak_rss_kib: peak_rss_kib(),
            stats,
        })
    }
}

type Measured = (f64, u64, Option<bwos::PoolStats>);

/// The timed runs of one measurement: their total time, and the first
/// digest that differs from the warm-up's.
struct Runs {
    warm_up: u64,
    elapsed: Duration,
    inconsistent: Option<u64>,
}

impl Runs {
    fn after_warm_up(warm_up: u64) -> Self {
        Runs {
            warm_up,
            elapsed: Duration::ZERO,
            inconsistent: None,
        }
    }

    /// A run that started at `start` and computed `digest`.
    fn record(&mut self, start: Instant, digest: u64) {
        self.elapsed += start.elapsed();
        if digest != self.warm_up {
            self.inconsistent = Some(digest);
        }
    }

    /// The mean time per run, or the error of a runtime that computed two
    /// different results.
    fn finish(
        self,
        runtime: &str,
        iterations: u32,
        stats: Option<bwos::PoolStats>,
    ) -> Result<Measured, String> {
        if let Some(other) = self.inconsistent {
            return Err(format!(
                "{runtime} computed two different results in one process: {:#x} and {other:#x}",
                self.warm_up
            ));
        }
        Ok((
            self.elapsed.as_secs_f64() / f64::from(iterations),
            self.warm_up,
            stats,
        ))
    }
}

fn measure<K: Kernel, R: ForkJoin>(kernel: &K, how: &Measure) -> Result<Measured, String> {
    let pool = R::build(how.threads);
    let runs = R::run(&pool, |ctx| {
        let mut runs = Runs::after_warm_up(kernel.run::<R>(&mut kernel.scratch(), ctx));
        for _ in 0..how.iterations {
            let mut scratch = kernel.scratch();
            let start = Instant::now();
            let digest = black_box(kernel.run::<R>(&mut scratch, ctx));
            runs.record(start, digest);
            drop(scratch);
        }
        runs
    });
    runs.finish(R::NAME, how.iterations, R::stats(&pool))
}

/// [`measure`] for the kernel's async form on `A`: the same warm-up and
/// timed runs, inside one `block_on`.
fn measure_async<K: Kernel, A: AsyncFork>(kernel: &K, how: &Measure) -> Result<Measured, String> {
    let pool = A::build(how.threads);
    let runs = A::block_on(&pool, async {
        let mut scratch = kernel.scratch();
        let warm_up = kernel.run_async::<A>(&mut scratch).await;
        drop(scratch);
        let mut runs = Runs::after_warm_up(warm_up);
        for _ in 0..how.iterations {
            let mut scratch = kernel.scratch();
            let start = Instant::now();
            let digest = kernel.run_async::<A>(&mut scratch).await;
            runs.record(start, black_box(digest));
            drop(scratch);
        }
        runs
    });
    runs.finish(A::NAME, how.iterations, A::stats(&pool))
}

/// `VmHWM` of `/proc/self/status`, where there is one.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The child's main: measure, print the report as one line of JSON.
pub fn run(args: &ChildArgs) -> io::Result<()> {
    let how = Measure {
        runtime: args.runtime,
        threads: args.threads as usize,
        iterations: args.iterations,
    };
    let report = args
        .kernel
        .visit(args.scale, how)
        .map_err(io::Error::other)?;
    println!(
        "{}",
        serde_json::to_string(&report).map_err(io::Error::other)?
    );
    Ok(())
}
