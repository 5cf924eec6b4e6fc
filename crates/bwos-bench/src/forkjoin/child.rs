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
    /// The anonymous part of the peak over the timed runs (heap and
    /// stacks), in KiB: see [`PeakMemory`].
    #[serde(default)]
    pub peak_anon_kib: Option<u64>,
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
        let (seconds, digest, stats, memory) =
            measured.map_err(|error| format!("{label}: {error}"))?;
        Ok(ChildReport {
            label,
            seconds,
            digest,
            peak_rss_kib: memory.peak_rss_kib,
            peak_anon_kib: memory.peak_anon_kib,
            stats,
        })
    }
}

type Measured = (f64, u64, Option<bwos::PoolStats>, MemoryReport);

/// The process's peak memory, split into what the runtime allocates and
/// what the code it runs occupies.
///
/// `VmHWM`, the peak resident set, counts file-backed pages too: the pages
/// of this binary's code that the run touched. The binary holds every
/// runtime, so which of its pages a run touches depends on the code path
/// and the link layout, not on the memory a runtime uses: on `fib(35)`,
/// `bwos::fork` and rayon differ by 0.2-0.3 MiB of code pages and by 8
/// KiB of anonymous memory. So after the warm-up, which touches the code
/// the timed runs use, the peak is reset (`/proc/self/clear_refs`, Linux
/// 4.0 and later); the peak of the timed runs minus the file-backed pages
/// resident at the end is then the anonymous peak: heap and stacks.
struct PeakMemory {
    /// `VmHWM` before the reset, KiB.
    before_reset: Option<u64>,
    /// Whether the reset took effect.
    reset: bool,
}

impl PeakMemory {
    /// Reads the peak so far and resets it.
    fn reset_after_warm_up() -> Self {
        let before_reset = status_kib(&["VmHWM"]);
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        PeakMemory {
            before_reset,
            reset,
        }
    }

    /// The peak resident memory over the whole process, and the anonymous
    /// part of the peak since the reset (`None` without a reset), KiB.
    /// Called right after the last timed run, on the thread that ran it:
    /// the code that returns from a pool to its caller runs for the first
    /// time after that run, and its pages must not count.
    fn finish(self) -> MemoryReport {
        let after = status_kib(&["VmHWM"]);
        let file = status_kib(&["RssFile", "RssShmem"]);
        MemoryReport {
            peak_rss_kib: self.before_reset.max(after),
            peak_anon_kib: after
                .zip(file)
                .filter(|_| self.reset)
                .map(|(peak, file)| peak.saturating_sub(file)),
        }
    }
}

/// What [`PeakMemory`] measured, KiB.
#[derive(Debug, Clone, Copy, Default)]
struct MemoryReport {
    peak_rss_kib: Option<u64>,
    peak_anon_kib: Option<u64>,
}

/// The sum of these fields of `/proc/self/status` (KiB), where they exist.
fn status_kib(fields: &[&str]) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    fields
        .iter()
        .map(|field| {
            let line = status
                .lines()
                .find(|line| line.split(':').next() == Some(field))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// The runs of one measurement: the first is the warm-up (untimed), the
/// rest are timed; the first digest that differs from the warm-up's; the
/// memory probe, reset when the warm-up ends.
///
/// The warm-up goes through the same loop as the timed runs, so that the
/// timed runs touch no code the warm-up did not: each new code page maps
/// up to 64 KiB of the binary (the kernel's fault-around), which would
/// count as memory of the timed runs.
struct Runs {
    warm_up: Option<u64>,
    elapsed: Duration,
    inconsistent: Option<u64>,
    memory: Option<PeakMemory>,
    measured: MemoryReport,
}

impl Runs {
    fn new() -> Self {
        Runs {
            warm_up: None,
            elapsed: Duration::ZERO,
            inconsistent: None,
            memory: None,
            measured: MemoryReport::default(),
        }
    }

    /// Whether run `index` (0 is the warm-up) is due; ends the warm-up
    /// before run 1, and reads the memory after the last run.
    fn next(&mut self, index: u32, iterations: u32) -> bool {
        if index == 1 {
            self.elapsed = Duration::ZERO;
            self.memory = Some(PeakMemory::reset_after_warm_up());
        }
        if index <= iterations {
            return true;
        }
        if let Some(memory) = self.memory.take() {
            self.measured = memory.finish();
        }
        false
    }

    /// A run that started at `start` and computed `digest`.
    fn record(&mut self, start: Instant, digest: u64) {
        self.elapsed += start.elapsed();
        match self.warm_up {
            None => self.warm_up = Some(digest),
            Some(warm_up) if warm_up != digest => self.inconsistent = Some(digest),
            Some(_) => {}
        }
    }

    /// The mean time per timed run, or the error of a runtime that
    /// computed two different results.
    fn finish(
        self,
        runtime: &str,
        iterations: u32,
        stats: Option<bwos::PoolStats>,
    ) -> Result<Measured, String> {
        let warm_up = self.warm_up.ok_or("no run")?;
        if let Some(other) = self.inconsistent {
            return Err(format!(
                "{runtime} computed two different results in one process: {warm_up:#x} and {other:#x}"
            ));
        }
        Ok((
            self.elapsed.as_secs_f64() / f64::from(iterations),
            warm_up,
            stats,
            self.measured,
        ))
    }
}

fn measure<K: Kernel, R: ForkJoin>(kernel: &K, how: &Measure) -> Result<Measured, String> {
    let pool = R::build(how.threads);
    let runs = R::run(&pool, |ctx| {
        let mut runs = Runs::new();
        let mut index = 0;
        while runs.next(index, how.iterations) {
            let mut scratch = kernel.scratch();
            let start = Instant::now();
            let digest = black_box(kernel.run::<R>(&mut scratch, ctx));
            runs.record(start, digest);
            drop(scratch);
            index += 1;
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
        let mut runs = Runs::new();
        let mut index = 0;
        while runs.next(index, how.iterations) {
            let mut scratch = kernel.scratch();
            let start = Instant::now();
            let digest = kernel.run_async::<A>(&mut scratch).await;
            runs.record(start, black_box(digest));
            drop(scratch);
            index += 1;
        }
        runs
    });
    runs.finish(A::NAME, how.iterations, A::stats(&pool))
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A timed run that allocates `bytes`, touches them and frees them.
    fn runs_with_a_transient_allocation(bytes: usize) -> MemoryReport {
        let mut runs = Runs::new();
        let mut index = 0;
        while runs.next(index, 2) {
            let start = Instant::now();
            if index == 1 {
                // One byte per page is enough to make every page resident.
                let mut block = vec![0u8; bytes];
                for page in block.chunks_mut(4096) {
                    page[0] = 1;
                }
                black_box(&mut block);
            }
            runs.record(start, 7);
            index += 1;
        }
        let (_, digest, _, memory) = runs.finish("test", 2, None).expect("consistent runs");
        assert_eq!(digest, 7);
        memory
    }

    #[test]
    fn the_anonymous_peak_counts_memory_freed_before_the_runs_end() {
        const BYTES: usize = 32 << 20;
        let memory = runs_with_a_transient_allocation(BYTES);
        let rss = memory.peak_rss_kib.expect("VmHWM on Linux");
        let anon = memory
            .peak_anon_kib
            .expect("a peak reset through /proc/self/clear_refs on Linux");
        assert!(
            anon >= (BYTES / 1024) as u64,
            "the anonymous peak ({anon} KiB) misses the {} KiB freed before the end",
            BYTES / 1024
        );
        assert!(
            anon <= rss,
            "anonymous peak {anon} KiB above the RSS peak {rss} KiB"
        );
    }

    // Without `Runs::next`, whose peak reset would disturb the other test
    // (the tests of this binary share a process).
    #[test]
    fn two_different_digests_are_an_error() {
        let mut runs = Runs::new();
        for digest in [7, 7, 8] {
            runs.record(Instant::now(), digest);
        }
        let error = runs.finish("rt", 3, None).expect_err("inconsistent");
        assert!(
            error.contains("rt computed two different results"),
            "{error}"
        );
    }
}

impl crate::experiment::Run for ChildArgs {
    fn run(&self) -> io::Result<()> {
        run(self)
    }
}
