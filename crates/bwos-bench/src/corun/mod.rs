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

use std::io::{self, BufRead, BufReader, Write};
use std::num::NonZero;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use clap::Args;
use serde::Serialize;

use crate::experiment::{self, About, Options, Paper, Results};
use crate::options::{OptionHelp, ThreadCounts};
use crate::output::Samples;
use crate::progress::{self, Bar};
pub use child::ChildArgs;
use child::{ChildReport, Config, Program, Selector};

/// Options of `bwos-bench corun`.
#[derive(Debug, Clone, Args)]
pub struct CorunArgs {
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

impl OptionHelp for CorunArgs {
    const QUICK: &'static str = "A short smoke run: one repetition, short runs, small inputs";
    const REPETITIONS: &'static str =
        "Repetitions of every measurement (interleaved across configurations)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write SVG plots (average unfairness and throughput per \
         configuration, per worker count) into this directory";
    const THREADS: &'static str = "Workers per program, comma-separated or repeated (default: \
         the number of cores, and twice that)";
}

impl experiment::Experiment for CorunArgs {
    const NAME: &'static str = "corun";
    const ABOUT: About = About {
        measures: "Two programs at once on the same cores (fib with fib, fib with a tree sum, \
                   each with LOOP), as separate processes, on bwos with each idle policy, rayon \
                   and chili: each program's slowdown against running alone, the unfairness \
                   (larger slowdown minus smaller) and the throughput (weighted speedup); also \
                   the solo cost of each idle policy, oversubscription and the stealing \
                   policies.",
        better: "Lower unfairness is better; higher throughput is better (2 is perfect, 1 is no \
                 better than running the programs one after the other).",
        paper: Some(Paper {
            figure: "BWS (EuroSys'12), Figures 2 and 3",
            claim: "Against Cilk++ with ABP's yielding, BWS reduces the average unfairness from \
                    124% to 20% and improves the average throughput by 12.5%.",
            machine: "four Intel Xeon 7560 (32 cores), Linux 2.6.36 with BWS's kernel support",
            threads: "32 workers per program",
            differs: "BWS relies on a kernel extension (yield_to a given thread, a \
                      sleep/wake-up protocol the OS knows of) that bwos's user-space idle \
                      policies approximate, the pairs here are three small programs rather \
                      than the paper's eight benchmarks, and on few cores a single descheduled \
                      worker weighs much more.",
        }),
    };
    type Threads = ThreadCounts<CorunArgs>;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let settings = Settings::of(options);
        // Every measurement runs its programs for `seconds`, after a
        // start-up, calibration and the other's tail.
        progress::Plan::steps(settings.measurements(), 3.0 * settings.seconds + 0.3)
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Sample>>> {
        let samples = run(options, bar);
        Ok(Results {
            tables: report::tables(&samples),
            figures: report::figures(&samples),
            result: report::result(&samples),
            failures: Vec::new(),
            body: Samples { samples },
        })
    }

    /// One repetition of 0.3 s runs, the default sizes.
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), Some(1)),
            threads: ThreadCounts::default(),
            own: CorunArgs {
                seconds: 0.3,
                configs: Vec::new(),
                skip_policies: false,
            },
        })
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

fn child_args(settings: &Settings, program: Program, config: Config, threads: usize) -> ChildArgs {
    ChildArgs {
        program,
        config,
        threads,
        seconds: settings.seconds,
        quick: settings.quick,
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

/// What a run measures, after `--quick` and the defaults.
struct Settings {
    cores: usize,
    quick: bool,
    seconds: f64,
    thread_counts: Vec<usize>,
    configs: Vec<Config>,
    repetitions: u32,
    oversubscribed: [usize; 2],
    policies: bool,
}

impl Settings {
    fn of(options: &Options<CorunArgs>) -> Settings {
        let args = &options.own;
        let quick = options.run.quick;
        let cores = std::thread::available_parallelism().map_or(1, NonZero::get);
        Settings {
            cores,
            quick,
            seconds: if quick { 0.05 } else { args.seconds },
            thread_counts: options.threads.or_else(|| {
                if quick {
                    vec![cores]
                } else {
                    vec![cores, 2 * cores]
                }
            }),
            configs: if args.configs.is_empty() {
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
            },
            repetitions: options.run.repetitions(1),
            oversubscribed: [cores, 4 * cores],
            policies: !args.skip_policies,
        }
    }

    /// Measurements (solo runs and co-runs) in all.
    fn measurements(&self) -> u64 {
        let policy_runs = if self.policies {
            Selector::ALL.len() * 4 * 2
        } else {
            0
        };
        let per_repetition = self.thread_counts.len()
            * (self.configs.len() * (2 + PAIRS.len()) + 1)
            + self.configs.len() * 2
            + 1
            + IDLE_CONFIGS.len() * 2 * self.oversubscribed.len()
            + policy_runs;
        self.repetitions as u64 * per_repetition as u64
    }
}

/// Runs the whole experiment; returns every sample.
pub fn run(options: &Options<CorunArgs>, bar: &Bar) -> Vec<Sample> {
    let settings = Settings::of(options);
    let cores = settings.cores;
    let repetitions = settings.repetitions;
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
        bar.step();
    };
    let fair_workers = (cores / 2).max(1);
    let of = |repetition: u32| format!("repetition {} of {repetitions}", repetition + 1);
    for repetition in 0..repetitions {
        let mut order = settings.configs.clone();
        if repetition % 2 == 1 {
            order.reverse();
        }
        // LOOP has no runtime: one solo per repetition and worker count.
        let loop_solo = |threads| {
            [child_args(
                &settings,
                Program::Loop,
                Config::BwosPark,
                threads,
            )]
        };
        for &threads in &settings.thread_counts {
            bar.set_message(format!(
                "co-runs, {threads} workers each, {}",
                of(repetition)
            ));
            measure_run(Section::Corun, &loop_solo(threads), repetition);
            for &config in &order {
                for program in [Program::Fib, Program::Tree] {
                    let solo = [child_args(&settings, program, config, threads)];
                    measure_run(Section::Corun, &solo, repetition);
                }
                for (a, b) in PAIRS {
                    let pair = [
                        child_args(&settings, a, config, threads),
                        child_args(&settings, b, config, threads),
                    ];
                    measure_run(Section::Corun, &pair, repetition);
                }
            }
        }
        bar.set_message(format!("fair-share references, {}", of(repetition)));
        measure_run(Section::FairShare, &loop_solo(fair_workers), repetition);
        for &config in &order {
            for program in [Program::Fib, Program::Tree] {
                let solo = [child_args(&settings, program, config, fair_workers)];
                measure_run(Section::FairShare, &solo, repetition);
            }
        }
        bar.set_message(format!("oversubscribed, {}", of(repetition)));
        for config in IDLE_CONFIGS {
            for program in [Program::Fib, Program::Tree] {
                for threads in settings.oversubscribed {
                    let solo = [child_args(&settings, program, config, threads)];
                    measure_run(Section::Oversubscribed, &solo, repetition);
                }
            }
        }
        if settings.policies {
            bar.set_message(format!("stealing policies, {}", of(repetition)));
            for selector in Selector::ALL {
                for probabilistic in [false, true] {
                    for block in [false, true] {
                        for program in [Program::Fib, Program::Tree] {
                            let mut solo = child_args(&settings, program, Config::BwosPark, cores);
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
    samples
}
