//! `bwos-bench corun`: the BWS paper's co-run experiment (EuroSys'12,
//! section 5, Figures 2 and 3). Two programs run at once on the same cores,
//! as separate processes (this binary re-executed as `corun-child`), each
//! with as many workers as there are cores, and again with twice as many.
//!
//! The pairs: fib with a copy of itself, fib with the tree sum, and each
//! of them with LOOP.
//!
//! For each pair and runtime configuration: the solo time per iteration
//! `T_s` of each program, its co-run time `T_c` (a program that finishes
//! its measured iterations first keeps running unmeasured ones until the
//! other is done, so the measured runs overlap fully), the slowdown
//! `(T_c - T_s) / T_s`, the unfairness (larger slowdown minus smaller)
//! and the throughput (weighted speedup, the sum of `T_s / T_c`; 2.0 is
//! perfect, 1.0 is no better than running one after the other). Solo and
//! co-runs of one repetition are measured back to back, configurations
//! interleaved (reversed every other repetition).
//!
//! The *fair-share reference*: each program alone with half the cores'
//! worth of workers (`T_f`, one worker on 2 cores), which is what a
//! scheduler that splits the cores evenly between the two programs, and
//! wastes nothing, would give each of them. Its slowdowns `(T_f - T_s) /
//! T_s` differ with the programs' scalability (a memory-bound tree loses
//! less from losing a core than fib), so even a perfectly fair split of
//! the cores has an unfairness; the report prints it, and the throughput
//! of that split, next to each configuration's.
//!
//! Also measured: the solo cost of each idle policy against `Spin`, one
//! program oversubscribed (4x the cores in workers against 1x, only that
//! program alive), and a table of the stealing policies (every selector,
//! with and without `P_accept`, one job or a block) on fib and the tree.

pub mod child;
mod report;

use std::io::{BufRead, BufReader, Write};
use std::num::NonZero;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::options::{PlotOption, RunOptions, ThreadCounts, repetitions_help};
pub use child::ChildArgs;
use child::{ChildReport, Config, Program, Selector};
pub use report::{plots, tables};

/// Repetitions of every measurement without `--repetitions`.
pub const REPETITIONS: u32 = 5;

/// Options of `bwos-bench corun`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("quick", |a| a.help("A short smoke run: one repetition, short runs, small inputs")),
    mut_arg("repetitions", repetitions_help("Repetitions of every measurement (interleaved across configurations)", REPETITIONS)),
    mut_arg("threads", |a| a.help("Workers per program, comma-separated or repeated (default: the number of cores, and twice that)")),
)]
pub struct CorunArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--plot`.
    #[command(flatten)]
    pub plot: PlotOption,
    /// `--threads`.
    #[command(flatten)]
    pub threads: ThreadCounts,
    /// Target seconds of measured iterations per program and run.
    #[arg(long, default_value_t = 0.5)]
    pub seconds: f64,
    /// Runtime configurations (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub configs: Vec<Config>,
    /// Skip the stealing-policy table.
    #[arg(long)]
    pub skip_policies: bool,
}

impl CorunArgs {
    /// The short co-run of `report`: one repetition of 0.3 s runs, the
    /// default sizes, with the report's `run` and `plot` options.
    pub fn for_report(run: RunOptions, plot: PlotOption) -> Self {
        CorunArgs {
            run: RunOptions {
                repetitions: Some(1),
                ..run
            },
            plot,
            threads: ThreadCounts::default(),
            seconds: 0.3,
            configs: Vec::new(),
            skip_policies: false,
        }
    }
}

/// Which part of the experiment a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    Corun,
    /// Each program alone with half the cores' worth of workers: the
    /// reference a fair split of the cores would give a co-run.
    FairShare,
    Oversubscribed,
    Policies,
}

/// One measurement: a solo run (one report) or a co-run (two).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub section: Section,
    pub programs: Vec<Program>,
    pub config: Config,
    pub threads: usize,
    pub repetition: u32,
    pub selector: Selector,
    pub probabilistic: bool,
    pub block: bool,
    pub reports: Vec<ChildReport>,
}

/// A running child process.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Running {
    fn start(args: &ChildArgs) -> Running {
        let exe = std::env::current_exe().expect("the path of this executable");
        let mut command = Command::new(exe);
        command
            .arg("corun-child")
            .args(["--program", &value_name(&args.program)])
            .args(["--config", &value_name(&args.config)])
            .args(["--threads", &args.threads.to_string()])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--selector", &value_name(&args.selector)]);
        if args.quick {
            command.arg("--quick");
        }
        if args.probabilistic {
            command.arg("--probabilistic");
        }
        if args.block {
            command.arg("--block");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("re-executing bwos-bench");
        let stdin = child.stdin.take().expect("a piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        let mut running = Running {
            child,
            stdin,
            stdout,
        };
        let line = running.line();
        assert_eq!(line, "ready", "the child did not start: {line:?}");
        running
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("reading the child's output");
        line.trim().to_string()
    }

    fn send(&mut self, line: &str) {
        // A child that exited early shows up when its report is read.
        let _ = writeln!(self.stdin, "{line}");
        let _ = self.stdin.flush();
    }

    fn report(&mut self) -> ChildReport {
        let line = self.line();
        let json = line
            .strip_prefix("done ")
            .unwrap_or_else(|| panic!("the child failed: {line:?}"));
        serde_json::from_str(json).expect("a child report")
    }

    fn finish(mut self) {
        self.send("stop");
        drop(self.stdin);
        let status = self.child.wait().expect("waiting for the child");
        assert!(status.success(), "the child exited with {status}");
    }
}

/// The command-line spelling of `value`.
fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    let possible = value.to_possible_value().expect("no skipped variants");
    possible.get_name().to_string()
}

/// Runs the programs of `args` at the same time; returns their reports.
fn measure(args: &[ChildArgs]) -> Vec<ChildReport> {
    let mut running: Vec<Running> = args.iter().map(Running::start).collect();
    for child in &mut running {
        child.send("go");
    }
    let reports = running.iter_mut().map(Running::report).collect();
    for child in running {
        child.finish();
    }
    reports
}

fn child_args(args: &CorunArgs, program: Program, config: Config, threads: usize) -> ChildArgs {
    ChildArgs {
        program,
        config,
        threads,
        seconds: if args.run.quick { 0.05 } else { args.seconds },
        quick: args.run.quick,
        selector: Selector::Random,
        probabilistic: false,
        block: false,
    }
}

/// The pairs of the co-run table: two different programs, and fib with
/// a copy of itself (two programs that want every core equally).
pub const PAIRS: [(Program, Program); 4] = [
    (Program::Fib, Program::Fib),
    (Program::Fib, Program::Tree),
    (Program::Fib, Program::Loop),
    (Program::Tree, Program::Loop),
];

/// The bwos idle configurations.
const IDLE_CONFIGS: [Config; 4] = [
    Config::BwosSpin,
    Config::BwosYield,
    Config::BwosPark,
    Config::BwosBalanced,
];

/// Runs the whole experiment; returns every sample.
pub fn run(args: &CorunArgs) -> Vec<Sample> {
    let cores = std::thread::available_parallelism().map_or(1, NonZero::get);
    let thread_counts = args.threads.or_else(|| {
        if args.run.quick {
            vec![cores]
        } else {
            vec![cores, 2 * cores]
        }
    });
    let configs: Vec<Config> = if args.configs.is_empty() {
        vec![
            Config::BwosSpin,
            Config::BwosYield,
            Config::BwosPark,
            Config::BwosBalanced,
            Config::BwosBalancedNoYtv,
            Config::Rayon,
            Config::Chili,
        ]
    } else {
        args.configs.clone()
    };
    let repetitions = args.run.repetitions(REPETITIONS, 1);
    let oversubscribed = [cores, 4 * cores];
    let policy_runs = if args.skip_policies {
        0
    } else {
        Selector::ALL.len() * 4 * 2
    };
    let total = repetitions as usize
        * (thread_counts.len() * (configs.len() * (2 + PAIRS.len()) + 1)
            + configs.len() * 2
            + 1
            + IDLE_CONFIGS.len() * 2 * oversubscribed.len()
            + policy_runs);
    let progress = ProgressBar::new(total as u64);
    progress.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    progress.set_prefix("corun");
    let mut samples = Vec::new();
    // Runs the programs of `run` at once (one: a solo run) and records
    // their reports.
    let mut measure_run = |section, run: &[ChildArgs], repetition| {
        let reports = measure(run);
        let first = &run[0];
        samples.push(Sample {
            section,
            programs: run.iter().map(|child| child.program).collect(),
            config: first.config,
            threads: first.threads,
            repetition,
            selector: first.selector,
            probabilistic: first.probabilistic,
            block: first.block,
            reports,
        });
        progress.inc(1);
    };
    let fair_workers = (cores / 2).max(1);
    for repetition in 0..repetitions {
        let mut order = configs.clone();
        if repetition % 2 == 1 {
            order.reverse();
        }
        // LOOP has no runtime: one solo per repetition and worker count.
        let loop_solo = |threads| [child_args(args, Program::Loop, Config::BwosPark, threads)];
        for &threads in &thread_counts {
            progress.set_message(format!("co-runs, {threads} workers each"));
            measure_run(Section::Corun, &loop_solo(threads), repetition);
            for &config in &order {
                for program in [Program::Fib, Program::Tree] {
                    let solo = [child_args(args, program, config, threads)];
                    measure_run(Section::Corun, &solo, repetition);
                }
                for (a, b) in PAIRS {
                    let pair = [
                        child_args(args, a, config, threads),
                        child_args(args, b, config, threads),
                    ];
                    measure_run(Section::Corun, &pair, repetition);
                }
            }
        }
        progress.set_message("fair-share references");
        measure_run(Section::FairShare, &loop_solo(fair_workers), repetition);
        for &config in &order {
            for program in [Program::Fib, Program::Tree] {
                let solo = [child_args(args, program, config, fair_workers)];
                measure_run(Section::FairShare, &solo, repetition);
            }
        }
        progress.set_message("oversubscribed");
        for config in IDLE_CONFIGS {
            for program in [Program::Fib, Program::Tree] {
                for threads in oversubscribed {
                    let solo = [child_args(args, program, config, threads)];
                    measure_run(Section::Oversubscribed, &solo, repetition);
                }
            }
        }
        if !args.skip_policies {
            progress.set_message("stealing policies");
            for selector in Selector::ALL {
                for probabilistic in [false, true] {
                    for block in [false, true] {
                        for program in [Program::Fib, Program::Tree] {
                            let mut solo = child_args(args, program, Config::BwosPark, cores);
                            solo.selector = selector;
                            solo.probabilistic = probabilistic;
                            solo.block = block;
                            measure_run(Section::Policies, &[solo], repetition);
                        }
                    }
                }
            }
        }
    }
    progress.finish_and_clear();
    samples
}
