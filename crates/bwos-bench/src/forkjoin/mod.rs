//! `bwos-bench forkjoin`: the Nowa paper's fork/join suite (Table I, the
//! Cilk/Fibril benchmarks) plus skynet, UTS and a divide-and-conquer sum,
//! on the serial elision, bwos, rayon and chili, kernel by kernel.
//!
//! Every kernel is written once over [`runtime::ForkJoin`], so all
//! runtimes run the same algorithm with the same cut-offs. Every
//! measurement runs in a child process of its own (`forkjoin-child`): the
//! peak memory is that runtime's alone, and no other runtime's threads
//! exist during its turn. Runtimes are interleaved (serial, bwos, rayon,
//! chili, then the reverse) and every configuration is repeated. Every
//! result is checked against the serial elision's; a wrong one is printed
//! at once and makes the command fail.

pub(crate) mod asyncfork;
pub mod child;
pub mod joinpath;
pub(crate) mod kernels;
mod report;
pub(crate) mod runtime;

use std::io::{self, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use wait_timeout::ChildExt;

use crate::experiment::{self, About, Options, Paper, Results};
use crate::options::{OptionHelp, ThreadCounts};
use crate::output::Samples;
use crate::progress::{self, Bar};
use child::ChildReport;
pub use kernels::{Scale, Suite};

/// The default `--child-timeout`: ten minutes, far above any measurement
/// of the suite (the paper-scale serial runs take seconds).
pub const DEFAULT_CHILD_TIMEOUT_SECS: u64 = 600;

/// Options of `bwos-bench forkjoin`.
#[derive(Debug, Clone, Args)]
pub struct ForkJoinArgs {
    /// Target milliseconds of timed runs per measurement (the run count is
    /// set from the serial time; at least one run).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub millis: u64,
    /// Kernels to run (default: all sixteen).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Suite>,
    /// Input sizes.
    #[arg(long, value_enum, default_value_t = Scale::Default)]
    pub scale: Scale,
    /// Seconds one child process (one kernel, runtime and thread count)
    /// may run before it is killed and counted as a failure.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_CHILD_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub child_timeout: u64,
}

impl OptionHelp for ForkJoinArgs {
    const QUICK: &'static str = "A smoke run: quick inputs, 2 repetitions, 1 and 2 threads";
    const REPETITIONS: &'static str =
        "Repetitions of every configuration (interleaved across runtimes)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write SVG plots (speedup against threads per kernel, Nowa's \
         Figure 7; speedup per kernel at each thread count) into this directory";
    const THREADS: &'static str =
        "Thread counts to run, comma-separated or repeated [default: 1,2,4,8]";
}

impl ForkJoinArgs {
    /// The suite `report` (and `headline`) run: small inputs (paper-scale
    /// with `full`), 200 ms per measurement.
    pub fn short(full: bool) -> Self {
        ForkJoinArgs {
            millis: 200,
            only: Vec::new(),
            scale: if full { Scale::Paper } else { Scale::Small },
            child_timeout: DEFAULT_CHILD_TIMEOUT_SECS,
        }
    }
}

impl experiment::Experiment for ForkJoinArgs {
    const NAME: &'static str = "forkjoin";
    const ABOUT: About = About {
        measures: "Time of the Nowa paper's fork/join kernels (the Cilk benchmarks of Table I, \
                   skynet, UTS, a sum) on the serial elision, bwos `join`, rayon and chili, and \
                   of their async forms on `bwos::fork`, each measurement in a process of its \
                   own, every result checked against the serial elision's.",
        better: "Higher speedup (T_S / T_n) is better; \"bwos faster than X\" above 1 means bwos \
                 is faster.",
        paper: Some(Paper {
            figure: "Nowa (IPDPS'21), Figure 7 and its averages",
            claim: "On 256 threads Nowa is on average (geometric mean of speedups) 1.06x Fibril, \
                    1.5x Cilk Plus and 3.02x TBB; without knapsack 1.17x, 1.62x and 3.84x.",
            machine: "two AMD EPYC 7702 (128 cores, 256 hardware threads, 503 GiB)",
            threads: "1 to 256 threads, the averages at 256",
            differs: "bwos, rayon and chili are Rust runtimes compared on a few threads, where \
                      scheduling overheads weigh less than among 256 threads and kernels with \
                      tiny tasks (fib, nqueens) decide most of the difference.",
        }),
    };
    type Threads = ThreadCounts<ForkJoinArgs>;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let settings = Settings::of(options);
        let per_kernel = 1 + settings.per_kernel() as u64 * u64::from(settings.repetitions);
        // A child: its process, the probe-sized runs, some slack.
        let child_seconds = settings.target.as_secs_f64() + 0.15;
        progress::Plan::steps(settings.kernels.len() as u64 * per_kernel, child_seconds)
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Sample>>> {
        let outcome = run(options, bar);
        let samples = outcome.samples;
        Ok(Results {
            tables: report::tables(&samples),
            figures: report::figures(&samples),
            result: report::result(&samples),
            failures: outcome.failures,
            body: Samples { samples },
        })
    }

    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        let repetitions = Some(report.repetitions.map_or(3, |n| n.min(3)));
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), repetitions),
            threads: ThreadCounts::default(),
            own: ForkJoinArgs::short(report.full),
        })
    }
}

/// The runtimes compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    Serial,
    Bwos,
    Rayon,
    Chili,
    /// `bwos::fork` (async fork/join) with `fork::boxed_with` frames, on the
    /// kernels' async forms.
    Fork,
    /// `bwos::fork` with `Box::pin` frames.
    ForkBoxPin,
    /// The `Box::pin` async form run serially by a trivial executor.
    AsyncSerial,
}

impl Runtime {
    pub const ALL: [Runtime; 7] = [
        Runtime::Serial,
        Runtime::Bwos,
        Runtime::Rayon,
        Runtime::Chili,
        Runtime::Fork,
        Runtime::ForkBoxPin,
        Runtime::AsyncSerial,
    ];

    /// The runtimes of the synchronous kernels, serial elision included.
    pub const SYNC: [Runtime; 4] = [
        Runtime::Serial,
        Runtime::Bwos,
        Runtime::Rayon,
        Runtime::Chili,
    ];

    /// The parallel runtimes of the synchronous kernels.
    pub const PARALLEL: [Runtime; 3] = [Runtime::Bwos, Runtime::Rayon, Runtime::Chili];

    pub fn name(self) -> &'static str {
        match self {
            Runtime::Serial => "serial",
            Runtime::Bwos => "bwos",
            Runtime::Rayon => "rayon",
            Runtime::Chili => "chili",
            Runtime::Fork => "fork",
            Runtime::ForkBoxPin => "fork-box-pin",
            Runtime::AsyncSerial => "async-serial",
        }
    }

    /// Whether the runtime runs on one thread only.
    pub fn is_serial(self) -> bool {
        matches!(self, Runtime::Serial | Runtime::AsyncSerial)
    }
}

/// One measurement (one child process).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub kernel: Suite,
    /// The kernel instance, with its input size.
    pub label: String,
    /// Worker threads (1 for the serial elision).
    pub threads: usize,
    pub runtime: Runtime,
    pub repetition: u32,
    /// Seconds per run.
    pub seconds: f64,
    /// Peak resident memory of the child process, KiB.
    pub peak_rss_kib: Option<u64>,
    /// The anonymous part (heap and stacks) of the peak over the timed
    /// runs, KiB (see `child::PeakMemory`).
    pub peak_anon_kib: Option<u64>,
    /// bwos's counters over the child's runs (warm-up included).
    pub stats: Option<bwos::PoolStats>,
    /// Timed runs in the measurement (the counters cover one more).
    pub iterations: u32,
}

/// What a `forkjoin` run produced: the samples, and every failure (wrong
/// results, crashed children), already printed when it happened.
pub struct Outcome {
    pub samples: Vec<Sample>,
    pub failures: Vec<String>,
}

fn value_name(value: &impl ValueEnum) -> String {
    value
        .to_possible_value()
        .expect("no variant is skipped")
        .get_name()
        .to_string()
}

/// One child process to run: which measurement, and how long it may take.
struct ChildRun {
    kernel: Suite,
    scale: Scale,
    runtime: Runtime,
    threads: usize,
    iterations: u32,
    timeout: Duration,
}

/// What a finished child process left.
#[derive(Debug)]
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `command` with its output captured. A process that does not exit
/// within `timeout` is killed, and the error says so.
fn run_with_timeout(mut command: Command, timeout: Duration) -> Result<Finished, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a child process: {e}"))?;
    // Read both pipes while waiting, so that a chatty child cannot block
    // on a full pipe and be mistaken for a hung one.
    fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
        thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                // A read error keeps what was read; the exit status says
                // whether the child succeeded.
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            // `kill` fails only if the child has exited meanwhile; either
            // way `wait` reaps it (and the pipes then close).
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the child process did not finish within {} s and was killed",
                timeout.as_secs_f64()
            ));
        }
        Err(e) => return Err(format!("cannot wait for the child process: {e}")),
    };
    Ok(Finished {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Runs one measurement in a child process; one that hangs (a deadlocked
/// or livelocked runtime) is killed after `run.timeout` and reported as a
/// failure, so that the suite never hangs.
fn spawn_child(run: &ChildRun) -> Result<ChildReport, String> {
    let what = format!(
        "{} on {} with {} thread(s)",
        run.kernel.name(),
        run.runtime.name(),
        run.threads
    );
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut command = Command::new(exe);
    command
        .arg("forkjoin-child")
        .args(["--kernel", &value_name(&run.kernel)])
        .args(["--scale", &value_name(&run.scale)])
        .args(["--runtime", run.runtime.name()])
        .args(["--threads", &run.threads.to_string()])
        .args(["--iterations", &run.iterations.to_string()]);
    let finished = run_with_timeout(command, run.timeout)
        .map_err(|e| format!("{what}: {e} (--child-timeout sets the limit)"))?;
    if !finished.status.success() {
        return Err(format!(
            "{what}: the child process failed ({}): {}",
            finished.status,
            finished.stderr.trim()
        ));
    }
    let line = finished.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("{what}: unreadable child report {line:?}: {e}"))
}

/// What a run measures, after `--quick` and the defaults.
struct Settings {
    repetitions: u32,
    scale: Scale,
    target: Duration,
    thread_counts: Vec<usize>,
    kernels: Vec<Suite>,
    timeout: Duration,
}

impl Settings {
    fn of(options: &Options<ForkJoinArgs>) -> Settings {
        let args = &options.own;
        let (scale, target, mut thread_counts) = if options.run.quick {
            (Scale::Quick, Duration::from_millis(20), vec![1, 2])
        } else {
            (
                args.scale,
                Duration::from_millis(args.millis),
                options.threads.or_else(|| vec![1, 2, 4, 8]),
            )
        };
        thread_counts.sort_unstable();
        thread_counts.dedup();
        Settings {
            repetitions: options.run.repetitions(2),
            scale,
            target,
            thread_counts,
            kernels: if args.only.is_empty() {
                Suite::ALL.to_vec()
            } else {
                args.only.clone()
            },
            timeout: Duration::from_secs(args.child_timeout),
        }
    }

    /// The runtimes measured on `threads` threads.
    fn runtimes(threads: usize) -> impl Iterator<Item = Runtime> {
        Runtime::ALL
            .into_iter()
            .filter(move |r| threads == 1 || !r.is_serial())
    }

    /// Measurements per kernel and repetition.
    fn per_kernel(&self) -> usize {
        self.thread_counts
            .iter()
            .map(|&threads| Settings::runtimes(threads).count())
            .sum()
    }
}

/// Runs every selected kernel on every runtime and thread count.
pub fn run(options: &Options<ForkJoinArgs>, bar: &Bar) -> Outcome {
    let settings = Settings::of(options);
    let mut outcome = Outcome {
        samples: Vec::new(),
        failures: Vec::new(),
    };
    let fail = |outcome: &mut Outcome, message: String| {
        bar.note(&format!("\n!!! FAILURE: {message}\n"));
        outcome.failures.push(message);
    };
    for &kernel in &settings.kernels {
        bar.set_message(format!("{}: serial probe", kernel.name()));
        // The serial elision's result and time: the reference for every
        // check, and the run count per measurement.
        let mut child = ChildRun {
            kernel,
            scale: settings.scale,
            runtime: Runtime::Serial,
            threads: 1,
            iterations: 1,
            timeout: settings.timeout,
        };
        let probe = spawn_child(&child);
        bar.step();
        let probe = match probe {
            Ok(probe) => probe,
            Err(error) => {
                fail(&mut outcome, error);
                // The kernel's measurements will not run: their steps
                // are done.
                for _ in 0..settings.per_kernel() * settings.repetitions as usize {
                    bar.step();
                }
                continue;
            }
        };
        let iterations = (settings.target.as_secs_f64() / probe.seconds).clamp(1.0, 1e6) as u32;
        child.iterations = iterations;
        for &threads in &settings.thread_counts {
            for repetition in 0..settings.repetitions {
                let mut order: Vec<Runtime> = Settings::runtimes(threads).collect();
                if repetition % 2 == 1 {
                    order.reverse();
                }
                for runtime in order {
                    bar.set_message(format!(
                        "{} on {} with {threads} thread(s), repetition {} of {}",
                        probe.label,
                        runtime.name(),
                        repetition + 1,
                        settings.repetitions
                    ));
                    (child.runtime, child.threads) = (runtime, threads);
                    match spawn_child(&child) {
                        Ok(report) if report.digest != probe.digest => fail(
                            &mut outcome,
                            format!(
                                "WRONG RESULT: {} on {} with {threads} thread(s) computed digest \
                                 {:#x}; the serial elision computed {:#x}",
                                report.label,
                                runtime.name(),
                                report.digest,
                                probe.digest
                            ),
                        ),
                        Ok(report) => outcome.samples.push(Sample {
                            kernel,
                            label: report.label,
                            threads,
                            runtime,
                            repetition,
                            seconds: report.seconds,
                            peak_rss_kib: report.peak_rss_kib,
                            peak_anon_kib: report.peak_anon_kib,
                            stats: report.stats,
                            iterations,
                        }),
                        Err(error) => fail(&mut outcome, error),
                    }
                    bar.step();
                }
            }
        }
    }
    outcome
}

#[cfg(test)]
mod child_tests {
    use super::*;

    #[test]
    fn a_hung_child_is_killed_and_reported() {
        let mut command = Command::new("sleep");
        command.arg("60");
        let error = run_with_timeout(command, Duration::from_millis(300))
            .expect_err("a child that sleeps for a minute outlives a 0.3 s limit");
        assert!(error.contains("did not finish within 0.3 s"), "{error}");
    }

    #[test]
    fn a_finished_child_keeps_its_output_and_status() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 3"]);
        let finished = run_with_timeout(command, Duration::from_secs(60)).expect("sh runs");
        assert_eq!(finished.status.code(), Some(3));
        assert_eq!(finished.stdout, "out\n");
        assert_eq!(finished.stderr, "err\n");
    }
}
