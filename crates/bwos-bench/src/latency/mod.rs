//! `bwos-bench latency`: what a task that blocks, a burst of spawns, a
//! socket that is always ready or CPU work in a request handler does to
//! the latency of the other tasks, on bwos and on tokio (and tokio with
//! rayon where the work is parallel), all with 2 workers (the hot socket:
//! 1), in one process. The workloads are described in their modules:
//! [`blocked`], [`bursts`], [`timers`], [`hot_socket`], [`mixed`] (with
//! its load generator, [`client`]).
//!
//! Every measurement starts its runtime afresh and lets it settle idle
//! for [`SETTLE`] first. A repetition measures every workload on every
//! set-up, rotating which set-up goes first; the table gives each
//! metric's median over repetitions with its [min-max] range, the paired
//! ratio bwos / peer (same repetition), and the goal the runtime work of
//! issue 47 set for bwos, met or not.

mod blocked;
mod bursts;
mod client;
mod heavy;
mod hot_socket;
mod mixed;
mod nested;
mod runtimes;
mod timers;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::r#async::runtime::{Bwos, Tokio};
use crate::experiment::{self, About, Options, Results};
use crate::options::{NoThreads, OptionHelp};
use crate::plot::{BarSeries, Better, Chart, Figure};
use crate::progress::{self, Bar};
use crate::stats::Summary;
use client::LoadPlan;
use heavy::Heavy;
use mixed::Setup;

/// How long a fresh runtime idles before a measurement: its workers have
/// started and gone to sleep, as in a quiet service.
pub const SETTLE: Duration = Duration::from_millis(50);

/// A measurement's figures: (metric key, value).
pub type Metrics = Vec<(&'static str, f64)>;

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// A task spawns 20 short tasks, then blocks its worker for 100 ms.
    BlockedParent,
    /// One 2 ms CPU-bound task and 15 short ones spawned at once, 300
    /// rounds.
    Bursts,
    /// A 10 ms interval while a task injected from outside blocks its
    /// worker for 500 ms.
    Timers,
    /// One worker: an echo over an always-readable socket and ten
    /// counting tasks.
    HotSocket,
    /// hyper HTTP/1.1 with 1 request in ~20 a ~20 ms parallel sum.
    MixedServer,
    /// A task's `block_on` (tokio: `block_in_place` + `Handle::block_on`):
    /// its cost, and a pair of them that deadlocks a runtime running
    /// queued tasks on top of a waiting `block_on`.
    NestedBlockOn,
}

impl Workload {
    const ALL: [Workload; 6] = [
        Workload::BlockedParent,
        Workload::Bursts,
        Workload::Timers,
        Workload::HotSocket,
        Workload::MixedServer,
        Workload::NestedBlockOn,
    ];

    /// The name in tables, JSON and file names.
    pub fn name(self) -> &'static str {
        match self {
            Workload::BlockedParent => "blocked-parent",
            Workload::Bursts => "bursts",
            Workload::Timers => "timers",
            Workload::HotSocket => "hot-socket",
            Workload::MixedServer => "mixed-server",
            Workload::NestedBlockOn => "nested-block-on",
        }
    }

    /// The set-ups it runs: bwos first, then its peers.
    pub fn setups(self) -> &'static [&'static str] {
        match self {
            Workload::MixedServer => &[BWOS, TOKIO, TOKIO_RAYON],
            _ => &[BWOS, TOKIO],
        }
    }
}

const BWOS: &str = "bwos";
const TOKIO: &str = "tokio";
const TOKIO_RAYON: &str = "tokio+rayon";
/// Every set-up, in table order.
const SETUPS: [&str; 3] = [BWOS, TOKIO, TOKIO_RAYON];

/// Options of `bwos-bench latency`.
#[derive(Debug, Clone, clap::Args)]
pub struct LatencyArgs {
    /// The workloads to run (comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub workloads: Vec<Workload>,
    /// Rounds of the bursts workload.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rounds: u32,
    /// How long the hot socket's echo runs, in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub window_ms: u64,
    /// Seconds of counted mixed-server load per measurement (after a
    /// warm-up of 0.5 s).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub seconds: u32,
    /// Light requests per second (open loop) in the mixed server.
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub light_rate: u32,
    /// Connections sending heavy requests back to back (closed loop).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub heavy_connections: u32,
    /// One core's time for one heavy request, in milliseconds (the sum is
    /// sized to it at start-up).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub heavy_ms: u64,
}

impl OptionHelp for LatencyArgs {
    const QUICK: &'static str = "A smoke run (under a minute): two repetitions, 50 burst \
         rounds, 1 s of mixed-server load after 0.2 s of warm-up";
    const REPETITIONS: &'static str = "Repetitions (each measures every workload on every \
         set-up, each on a fresh runtime)";
    const DEFAULT_REPETITIONS: u32 = 10;
    const PLOT: &'static str = "Write SVG bar charts of the medians, one per workload and \
         unit, into this directory";
}

impl experiment::Experiment for LatencyArgs {
    const NAME: &'static str = "latency";
    const ABOUT: About = About {
        measures: "What a task that blocks its worker, a burst of spawns, a socket that is \
                   always ready and CPU work in request handlers do to the other tasks' \
                   latency, on bwos, tokio and tokio with rayon, with the goals of issue 47 met \
                   or not.",
        better: "Each metric says its direction: latencies, delays and CPU lower; tasks run, \
                 ticks seen and requests answered higher; a goal marked \"met\" is reached.",
        paper: None,
    };
    type Threads = NoThreads;
    type Body = Experiment;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let settings = Resolved::of(options);
        let per_repetition: f64 = settings
            .workloads
            .iter()
            .map(|w| w.setups().len() as f64 * settings.seconds(*w))
            .sum();
        let steps: usize = settings.workloads.iter().map(|w| w.setups().len()).sum();
        let repetitions = f64::from(settings.repetitions);
        progress::Plan {
            steps: 1 + steps as u64 * u64::from(settings.repetitions),
            seconds: 1.0 + per_repetition * repetitions,
        }
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Experiment>> {
        let experiment = run(options, bar)?;
        Ok(Results {
            tables: tables(&experiment),
            figures: figures(&experiment),
            ..Results::new(experiment, String::new())
        })
    }

    /// 3 repetitions, 100 burst rounds, 1 s of mixed-server load.
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), Some(3)),
            threads: NoThreads {},
            own: LatencyArgs {
                workloads: Vec::new(),
                rounds: 100,
                window_ms: 200,
                seconds: 1,
                light_rate: 1500,
                heavy_connections: 2,
                heavy_ms: 20,
            },
        })
    }
}

/// The settings a run used; part of its JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub repetitions: u32,
    pub workloads: Vec<Workload>,
    pub burst_rounds: u32,
    pub hot_socket_window_ms: u64,
    pub mixed_warmup_ms: u64,
    pub mixed_window_ms: u64,
    pub light_rate: u32,
    pub heavy_connections: u32,
    /// The heavy request's sum: mixing rounds per element of a 2^18
    /// element slice, and its serial time at start-up.
    pub heavy_rounds: u32,
    pub heavy_serial_ms: f64,
}

/// One workload on one set-up in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub workload: &'static str,
    /// bwos, tokio or tokio+rayon; in the mixed server, tokio computes in
    /// `spawn_blocking`.
    pub runtime: &'static str,
    pub repetition: u32,
    /// Metric key (see the table) to value.
    pub metrics: BTreeMap<&'static str, f64>,
}

/// A run's settings and samples: the body of its JSON file.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub settings: Settings,
    pub samples: Vec<Sample>,
}

/// What a run measures, after `--quick` and the defaults.
struct Resolved {
    repetitions: u32,
    workloads: Vec<Workload>,
    rounds: u32,
    plan: LoadPlan,
    window: Duration,
}

impl Resolved {
    fn of(options: &Options<LatencyArgs>) -> Resolved {
        let args = &options.own;
        let quick = options.run.quick;
        Resolved {
            repetitions: options.run.repetitions(2),
            workloads: if args.workloads.is_empty() {
                Workload::ALL.to_vec()
            } else {
                args.workloads.clone()
            },
            rounds: if quick {
                args.rounds.min(50)
            } else {
                args.rounds
            },
            plan: LoadPlan {
                light_rate: f64::from(args.light_rate),
                heavy_connections: args.heavy_connections,
                warmup: Duration::from_millis(if quick { 200 } else { 500 }),
                window: Duration::from_secs(if quick { 1 } else { args.seconds.into() }),
            },
            window: Duration::from_millis(args.window_ms),
        }
    }

    /// About how long one measurement of `workload` takes.
    fn seconds(&self, workload: Workload) -> f64 {
        let settle = SETTLE.as_secs_f64();
        settle
            + match workload {
                Workload::BlockedParent => 0.15,
                Workload::Bursts => f64::from(self.rounds) * 0.004,
                Workload::Timers => 0.6,
                Workload::HotSocket => self.window.as_secs_f64() + 0.1,
                Workload::MixedServer => (self.plan.warmup + self.plan.window).as_secs_f64() + 0.2,
                Workload::NestedBlockOn => 0.1,
            }
    }
}

/// Runs the experiment; an error if a workload cannot run (a socket, a
/// runtime that never ticks).
pub fn run(options: &Options<LatencyArgs>, bar: &Bar) -> std::io::Result<Experiment> {
    let args = &options.own;
    let Resolved {
        repetitions,
        ref workloads,
        rounds,
        ref plan,
        window,
    } = Resolved::of(options);
    // Sized before any runtime starts, on a quiet process.
    bar.set_message("sizing the heavy request's sum");
    let heavy = Arc::new(if workloads.contains(&Workload::MixedServer) {
        Heavy::calibrate(Duration::from_millis(args.heavy_ms))
    } else {
        Heavy::calibrate(Duration::from_millis(1))
    });
    bar.step();
    let settings = Settings {
        repetitions,
        workloads: workloads.clone(),
        burst_rounds: rounds,
        hot_socket_window_ms: args.window_ms,
        mixed_warmup_ms: plan.warmup.as_millis() as u64,
        mixed_window_ms: plan.window.as_millis() as u64,
        light_rate: args.light_rate,
        heavy_connections: args.heavy_connections,
        heavy_rounds: heavy.rounds,
        heavy_serial_ms: heavy.serial_ms,
    };
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for &workload in workloads {
            let setups = workload.setups();
            for offset in 0..setups.len() {
                let setup = setups[(repetition as usize + offset) % setups.len()];
                bar.set_message(format!(
                    "{} on {setup}, repetition {} of {repetitions}",
                    workload.name(),
                    repetition + 1
                ));
                let metrics = measure(workload, setup, rounds, window, &heavy, plan)?;
                samples.push(Sample {
                    workload: workload.name(),
                    runtime: setup,
                    repetition,
                    metrics: metrics.into_iter().collect(),
                });
                bar.step();
            }
        }
    }
    Ok(Experiment { settings, samples })
}

fn measure(
    workload: Workload,
    setup: &str,
    rounds: u32,
    window: Duration,
    heavy: &Arc<Heavy>,
    plan: &LoadPlan,
) -> std::io::Result<Metrics> {
    let bwos = setup == BWOS;
    Ok(match workload {
        Workload::BlockedParent if bwos => blocked::run::<Bwos>(),
        Workload::BlockedParent => blocked::run::<Tokio>(),
        Workload::Bursts if bwos => bursts::run::<Bwos>(rounds),
        Workload::Bursts => bursts::run::<Tokio>(rounds),
        Workload::Timers if bwos => timers::run::<Bwos>()?,
        Workload::Timers => timers::run::<Tokio>()?,
        Workload::HotSocket if bwos => hot_socket::run::<Bwos>(window)?,
        Workload::HotSocket => hot_socket::run::<Tokio>(window)?,
        Workload::NestedBlockOn if bwos => nested::run::<Bwos>(),
        Workload::NestedBlockOn => nested::run::<Tokio>(),
        Workload::MixedServer => {
            let setup = match setup {
                BWOS => Setup::Bwos,
                TOKIO => Setup::TokioSpawnBlocking,
                _ => Setup::TokioRayon,
            };
            mixed::run(setup, heavy, plan)?
        }
    })
}

/// The `q` quantile of `values` (nearest rank), sorting them; NaN when
/// there are none.
pub fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// What bwos's median must reach, against a number or its peers'
/// medians (the best peer where there are several).
#[derive(Debug, Clone, Copy)]
enum Goal {
    /// At least this.
    Floor(f64),
    /// At most this.
    Ceiling(f64),
    /// At most the best peer's plus this much.
    CeilingAbovePeer(f64),
    /// At most the best peer's times this.
    CeilingTimesPeer(f64),
    /// At least the best peer's times this.
    FloorTimesPeer(f64),
}

impl Goal {
    /// The goal in words; `peer` names the peer (or "best tokio").
    fn describe(self, peer: &str, unit: &str) -> String {
        match self {
            Goal::Floor(x) => format!(">= {x} {unit}"),
            Goal::Ceiling(x) => format!("<= {x} {unit}"),
            Goal::CeilingAbovePeer(x) => format!("<= {peer} + {x} {unit}"),
            Goal::CeilingTimesPeer(1.0) => format!("<= {peer}"),
            Goal::CeilingTimesPeer(x) => format!("<= {x}x {peer}"),
            Goal::FloorTimesPeer(x) => format!(">= {x}x {peer}"),
        }
    }

    /// The bound bwos's median must reach, given the peers' medians (the
    /// best of them counts); `None` without peers where it needs them.
    fn bound(self, peers: &[f64]) -> Option<f64> {
        let lowest = peers.iter().copied().reduce(f64::min);
        let highest = peers.iter().copied().reduce(f64::max);
        match self {
            Goal::Floor(x) | Goal::Ceiling(x) => Some(x),
            Goal::CeilingAbovePeer(x) => Some(lowest? + x),
            Goal::CeilingTimesPeer(x) => Some(lowest? * x),
            Goal::FloorTimesPeer(x) => Some(highest? * x),
        }
    }

    /// Whether bwos's median must be at least the bound (else at most).
    fn is_floor(self) -> bool {
        matches!(self, Goal::Floor(_) | Goal::FloorTimesPeer(_))
    }

    /// Whether `bwos` meets it with the peers' medians `peers`; `None`
    /// when a median is missing.
    fn met(self, bwos: f64, peers: &[f64]) -> Option<bool> {
        let bound = self.bound(peers)?;
        if bwos.is_nan() || bound.is_nan() {
            return None;
        }
        Some(if self.is_floor() {
            bwos >= bound
        } else {
            bwos <= bound
        })
    }
}

/// A row of the table.
struct Metric {
    workload: Workload,
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    digits: usize,
    goal: Option<Goal>,
}

const fn metric(
    workload: Workload,
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    digits: usize,
    goal: Option<Goal>,
) -> Metric {
    Metric {
        workload,
        key,
        label,
        unit,
        digits,
        goal,
    }
}

/// The table's rows, in order, with the goals of issue 47.
const METRICS: [Metric; 19] = [
    metric(
        Workload::BlockedParent,
        "ran_during_block",
        "tasks of 20 run during the block",
        "tasks",
        0,
        Some(Goal::Floor(20.0)),
    ),
    metric(
        Workload::Bursts,
        "short_delay_p50_ms",
        "short task start delay p50",
        "ms",
        3,
        Some(Goal::CeilingAbovePeer(0.5)),
    ),
    metric(
        Workload::Bursts,
        "short_delay_p99_ms",
        "short task start delay p99",
        "ms",
        3,
        None,
    ),
    metric(
        Workload::Bursts,
        "makespan_p50_ms",
        "round makespan p50",
        "ms",
        3,
        Some(Goal::CeilingTimesPeer(1.1)),
    ),
    metric(
        Workload::Timers,
        "ticks_during_block",
        "10 ms ticks seen during the 500 ms block",
        "ticks",
        0,
        Some(Goal::FloorTimesPeer(0.9)),
    ),
    metric(
        Workload::Timers,
        "longest_tick_gap_ms",
        "longest gap between ticks",
        "ms",
        1,
        None,
    ),
    metric(
        Workload::HotSocket,
        "counter_steps",
        "counter steps during the echo (1 worker)",
        "steps",
        0,
        None,
    ),
    metric(
        Workload::HotSocket,
        "echo_mb_per_s",
        "echo throughput",
        "MB/s",
        0,
        None,
    ),
    metric(
        Workload::HotSocket,
        "echo_pending",
        "echo reads and writes that returned Pending",
        "polls",
        0,
        None,
    ),
    metric(
        Workload::MixedServer,
        "light_p50_ms",
        "light request latency p50",
        "ms",
        3,
        Some(Goal::Ceiling(0.2)),
    ),
    metric(
        Workload::MixedServer,
        "light_p99_ms",
        "light request latency p99",
        "ms",
        3,
        Some(Goal::CeilingTimesPeer(1.0)),
    ),
    metric(
        Workload::MixedServer,
        "heavy_per_s",
        "heavy requests answered",
        "req/s",
        1,
        Some(Goal::FloorTimesPeer(0.95)),
    ),
    metric(
        Workload::MixedServer,
        "heavy_p50_ms",
        "heavy request latency p50",
        "ms",
        1,
        None,
    ),
    metric(
        Workload::MixedServer,
        "light_per_s",
        "light requests answered (offered: --light-rate)",
        "req/s",
        0,
        None,
    ),
    metric(
        Workload::MixedServer,
        "heavy_share_pct",
        "heavy share of requests",
        "%",
        1,
        None,
    ),
    metric(
        Workload::MixedServer,
        "cpu_ms_per_request",
        "server CPU per request (all kinds)",
        "ms",
        3,
        None,
    ),
    metric(
        Workload::MixedServer,
        "errors",
        "failed requests (sum over repetitions)",
        "",
        0,
        None,
    ),
    metric(
        Workload::NestedBlockOn,
        "call_us",
        "a task's block_on of a ready task, per call (2 workers)",
        "us",
        1,
        Some(Goal::CeilingTimesPeer(1.0)),
    ),
    metric(
        Workload::NestedBlockOn,
        "finished",
        "two block_ons that wait for each other's tasks finish (1 worker)",
        "of 1",
        0,
        Some(Goal::Floor(1.0)),
    ),
];

/// `runtime`'s values of `key` in `workload`, by repetition.
fn series(samples: &[Sample], workload: Workload, runtime: &str, key: &str) -> Vec<f64> {
    let mut picked: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.workload == workload.name() && s.runtime == runtime)
        .collect();
    picked.sort_by_key(|s| s.repetition);
    picked
        .iter()
        .filter_map(|s| s.metrics.get(key).copied())
        .collect()
}

/// The result table: per workload and metric, each set-up's median
/// [min-max] over repetitions, bwos's paired ratios to its peers, and
/// the goal for bwos.
pub fn tables(experiment: &Experiment) -> String {
    let settings = &experiment.settings;
    let samples = &experiment.samples;
    let mut out = format!(
        "\n## Latency under blocking, bursts, hot sockets and CPU work: bwos vs tokio (2 workers; hot socket: 1)\n\
         median [min-max] over {} repetitions; bwos/peer: median [min-max] of the paired ratios; \
         goal: what bwos's median must reach (issue 47)\n\
         mixed server: tokio = heavy sum in spawn_blocking (serial), tokio+rayon = on a 2-thread rayon pool; \
         one heavy sum: {:.1} ms serial here; light requests open loop at {}/s, heavy closed loop on {} connections, \
         {} ms counted after {} ms of warm-up\n\n\
         | workload | metric | bwos | tokio | tokio+rayon | bwos/tokio | bwos/tokio+rayon | goal for bwos | met |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        settings.repetitions,
        settings.heavy_serial_ms,
        settings.light_rate,
        settings.heavy_connections,
        settings.mixed_window_ms,
        settings.mixed_warmup_ms,
    );
    for metric in &METRICS {
        if !settings.workloads.contains(&metric.workload) {
            continue;
        }
        let values: Vec<Vec<f64>> = SETUPS
            .iter()
            .map(|setup| series(samples, metric.workload, setup, metric.key))
            .collect();
        let digits = metric.digits;
        let sum_only = metric.key == "errors";
        let cell = |values: &[f64]| match Summary::of(values) {
            _ if sum_only && !values.is_empty() => format!("{}", values.iter().sum::<f64>()),
            Some(s) => format!(
                "{:.digits$} [{:.digits$}-{:.digits$}]",
                s.median, s.min, s.max
            ),
            None => "-".into(),
        };
        let ratio = |peer: &[f64]| match Summary::of_ratios(&values[0], peer) {
            Some(r) if !sum_only => format!("{:.2} [{:.2}-{:.2}]", r.median, r.min, r.max),
            _ => "-".into(),
        };
        let (goal, met) = match metric.goal {
            Some(goal) => {
                let peers = &metric.workload.setups()[1..];
                let peer = if peers.len() > 1 {
                    "best tokio"
                } else {
                    "tokio"
                };
                let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
                let peer_medians: Vec<f64> = (1..=peers.len())
                    .map(|i| median(&values[i]))
                    .filter(|m| !m.is_nan())
                    .collect();
                let met = match goal.met(median(&values[0]), &peer_medians) {
                    Some(true) => "met",
                    Some(false) => "NOT MET",
                    None => "-",
                };
                let mut text = goal.describe(peer, metric.unit);
                // Relative goals: the bound they come to in this run.
                if let (
                    Goal::CeilingAbovePeer(_) | Goal::CeilingTimesPeer(_) | Goal::FloorTimesPeer(_),
                    Some(bound),
                ) = (goal, goal.bound(&peer_medians))
                {
                    let _ = write!(text, " = {bound:.digits$}");
                }
                (text, met)
            }
            None => ("-".into(), ""),
        };
        let unit = if metric.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", metric.unit)
        };
        let _ = writeln!(
            out,
            "| {} | {}{unit} | {} | {} | {} | {} | {} | {goal} | {met} |",
            metric.workload.name(),
            metric.label,
            cell(&values[0]),
            cell(&values[1]),
            cell(&values[2]),
            ratio(&values[1]),
            ratio(&values[2]),
        );
    }
    out
}

/// Which way a metric is better; `None`: neither (an offered rate, a
/// share, a count that only explains the others), and it is not plotted.
fn better(key: &str) -> Option<Better> {
    match key {
        "ran_during_block" | "ticks_during_block" | "counter_steps" | "echo_mb_per_s"
        | "heavy_per_s" => Some(Better::Higher),
        "short_delay_p50_ms"
        | "short_delay_p99_ms"
        | "makespan_p50_ms"
        | "longest_tick_gap_ms"
        | "light_p50_ms"
        | "light_p99_ms"
        | "heavy_p50_ms"
        | "cpu_ms_per_request" => Some(Better::Lower),
        _ => None,
    }
}

/// One bar chart of medians per workload and unit
/// (`latency-<workload>-<unit>.svg`); a chart's metrics share their unit
/// and the way they are better.
pub fn figures(experiment: &Experiment) -> Vec<Figure> {
    let samples = &experiment.samples;
    let mut figures = Vec::new();
    for &workload in &experiment.settings.workloads {
        let mut charts: Vec<(&str, Better)> = Vec::new();
        for metric in METRICS.iter().filter(|m| m.workload == workload) {
            if let Some(better) = better(metric.key)
                && !charts.contains(&(metric.unit, better))
            {
                charts.push((metric.unit, better));
            }
        }
        for (unit, direction) in charts {
            let metrics: Vec<&Metric> = METRICS
                .iter()
                .filter(|m| {
                    m.workload == workload && m.unit == unit && better(m.key) == Some(direction)
                })
                .collect();
            let series: Vec<BarSeries> = workload
                .setups()
                .iter()
                .map(|&setup| {
                    let medians = metrics
                        .iter()
                        .map(|m| {
                            Summary::of(&series(samples, workload, setup, m.key))
                                .map(|s| s.median)
                                .filter(|v| v.is_finite())
                        })
                        .collect();
                    BarSeries::new(setup, medians)
                })
                .collect();
            let slug: String = unit
                .replace('%', "percent")
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            figures.push(Figure {
                file: format!("latency-{}-{}.svg", workload.name(), slug.trim_matches('-')),
                title: format!("Latency experiment, {}: medians in {unit}", workload.name()),
                better: direction,
                note: format!(
                    "medians over {} repetitions",
                    experiment.settings.repetitions
                ),
                chart: Chart::Bars {
                    value_label: format!("median ({unit})"),
                    categories: metrics.iter().map(|m| m.label.to_string()).collect(),
                    series,
                    reference: None,
                },
            });
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_compare_with_the_best_peer() {
        assert_eq!(Goal::Floor(20.0).met(20.0, &[]), Some(true));
        assert_eq!(Goal::Floor(20.0).met(19.0, &[]), Some(false));
        assert_eq!(Goal::Ceiling(0.2).met(0.3, &[]), Some(false));
        // The best peer: the lowest for ceilings, the highest for floors.
        assert_eq!(
            Goal::CeilingTimesPeer(1.0).met(2.0, &[3.0, 1.5]),
            Some(false)
        );
        assert_eq!(
            Goal::CeilingAbovePeer(0.5).met(1.9, &[3.0, 1.5]),
            Some(true)
        );
        assert_eq!(
            Goal::FloorTimesPeer(0.95).met(95.0, &[100.0, 50.0]),
            Some(true)
        );
        assert_eq!(
            Goal::FloorTimesPeer(0.95).met(94.0, &[100.0, 50.0]),
            Some(false)
        );
        assert_eq!(Goal::FloorTimesPeer(0.9).met(45.0, &[]), None);
        assert_eq!(Goal::Ceiling(0.2).met(f64::NAN, &[]), None);
    }

    fn sample(
        workload: Workload,
        runtime: &'static str,
        repetition: u32,
        metrics: Metrics,
    ) -> Sample {
        Sample {
            workload: workload.name(),
            runtime,
            repetition,
            metrics: metrics.into_iter().collect(),
        }
    }

    #[test]
    fn the_table_has_medians_ratios_and_goals() {
        let settings = Settings {
            repetitions: 2,
            workloads: vec![Workload::BlockedParent, Workload::MixedServer],
            burst_rounds: 1,
            hot_socket_window_ms: 1,
            mixed_warmup_ms: 1,
            mixed_window_ms: 1,
            light_rate: 1,
            heavy_connections: 1,
            heavy_rounds: 1,
            heavy_serial_ms: 1.0,
        };
        let mut samples = Vec::new();
        for repetition in 0..2 {
            let blocked = Workload::BlockedParent;
            samples.push(sample(
                blocked,
                BWOS,
                repetition,
                vec![("ran_during_block", 0.0)],
            ));
            samples.push(sample(
                blocked,
                TOKIO,
                repetition,
                vec![("ran_during_block", 19.0)],
            ));
            let mixed = Workload::MixedServer;
            for (runtime, heavy) in [(BWOS, 96.0), (TOKIO, 100.0), (TOKIO_RAYON, 80.0)] {
                samples.push(sample(
                    mixed,
                    runtime,
                    repetition,
                    vec![("heavy_per_s", heavy), ("errors", 1.0)],
                ));
            }
        }
        let table = tables(&Experiment { settings, samples });
        assert!(
            table.contains("| blocked-parent | tasks of 20 run during the block (tasks) | 0 [0-0] | 19 [19-19] | - | 0.00 [0.00-0.00] | - | >= 20 tasks | NOT MET |"),
            "{table}"
        );
        assert!(
            table.contains("| 96.0 [96.0-96.0] | 100.0 [100.0-100.0] | 80.0 [80.0-80.0] | 0.96 [0.96-0.96] | 1.20 [1.20-1.20] | >= 0.95x best tokio = 95.0 | met |"),
            "{table}"
        );
        // Errors are summed over repetitions.
        assert!(
            table.contains("(sum over repetitions) | 2 | 2 | 2 |"),
            "{table}"
        );
        // Workloads not run have no rows.
        assert!(!table.contains("| bursts |"), "{table}");
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut values, 0.50), 50.0);
        assert_eq!(percentile(&mut values, 0.99), 99.0);
        assert!(percentile(&mut [], 0.5).is_nan());
    }
}
