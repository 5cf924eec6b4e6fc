//! `bwos-bench queue`: the BWoS paper's queue microbenchmarks (section 6.2,
//! Figures 10 to 12), with the peers measured in the same run.

mod no_thief;
mod one_thief;
mod policy;
mod pool;

use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

pub use policy::Policy;

use crate::options::{PlotOption, RunOptions, repetitions_help};
use crate::queues::{
    BwosFifo, BwosLifo, CrossbeamFifo, CrossbeamLifo, Owner, SeqRing, SeqStack, St3Fifo, St3Lifo,
    Stealable,
};

/// Repetitions of every configuration without `--repetitions`.
pub const REPETITIONS: u32 = 5;

/// Options of `bwos-bench queue`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("quick", |a| a.help("A short smoke run (under a minute): 2 repetitions, short measurements, fewer settings")),
    mut_arg("repetitions", repetitions_help("Repetitions of every configuration (interleaved across queues)", REPETITIONS)),
)]
pub struct QueueArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--plot`.
    #[command(flatten)]
    pub plot: PlotOption,
    /// The queue experiment's own options.
    #[command(flatten)]
    pub queue: QueueOptions,
}

/// The options only the queue experiment has (`report` takes them too).
#[derive(Debug, Clone, Args)]
pub struct QueueOptions {
    /// Milliseconds per measurement.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub millis: u64,
    /// Threads in the pool experiment (the core count is always run too).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..=1024))]
    pub threads: u32,
    /// Experiments to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Experiment>,
}

/// The three experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// One queue, no thief (Figure 10).
    NoThief,
    /// One queue, one thief at a tuned stolen share (Figure 11).
    OneThief,
    /// A pool of queues stealing from each other (Figure 12).
    Pool,
}

/// LIFO or FIFO: which BWoS variant a peer is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Lifo,
    Fifo,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub experiment: Experiment,
    /// The setting within the experiment, e.g. `target 10%`.
    pub setting: String,
    pub queue: &'static str,
    pub order: Order,
    pub repetition: u32,
    pub ops_per_sec: f64,
    /// Experiment 2: the owner's operations per second.
    pub owner_ops_per_sec: Option<f64>,
    /// Experiment 2: the share of items stolen.
    pub stolen_share: Option<f64>,
}

/// A queue in one configuration, ready to be measured.
struct Contestant<'a> {
    queue: &'static str,
    order: Order,
    measure: Box<dyn FnMut() -> Measured + 'a>,
}

struct Measured {
    ops_per_sec: f64,
    owner_ops_per_sec: Option<f64>,
    stolen_share: Option<f64>,
}

impl Measured {
    fn throughput(ops_per_sec: f64) -> Measured {
        Measured {
            ops_per_sec,
            owner_ops_per_sec: None,
            stolen_share: None,
        }
    }
}

/// Settings after applying `--quick`.
struct Plan {
    repetitions: u32,
    duration: Duration,
    shares: Vec<u32>,
    pool_threads: Vec<usize>,
    steal_percents: Vec<usize>,
    calibration_steps: u32,
    calibration_time: Duration,
}

impl Plan {
    fn new(args: &QueueArgs) -> Plan {
        let cores = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .max(2);
        let mut pool_threads = vec![args.queue.threads as usize];
        if !pool_threads.contains(&cores) {
            pool_threads.push(cores);
        }
        let repetitions = args.run.repetitions(REPETITIONS, 2);
        if args.run.quick {
            Plan {
                repetitions,
                duration: Duration::from_millis(40),
                shares: vec![0, 10, 50],
                pool_threads: vec![cores],
                steal_percents: vec![10, 100],
                calibration_steps: 5,
                calibration_time: Duration::from_millis(10),
            }
        } else {
            Plan {
                repetitions,
                duration: Duration::from_millis(args.queue.millis),
                shares: vec![0, 1, 5, 10, 20, 50],
                pool_threads,
                steal_percents: vec![0, 10, 50, 100],
                calibration_steps: 8,
                calibration_time: Duration::from_millis(30),
            }
        }
    }
}

/// Runs the selected experiments; returns every sample.
pub fn run(args: &QueueArgs) -> Vec<Sample> {
    let plan = Plan::new(args);
    let wanted = |e: Experiment| args.queue.only.is_empty() || args.queue.only.contains(&e);
    let mut samples = Vec::new();
    let progress = ProgressBar::new(0);
    progress.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    // Let the machine settle (frequency, caches, page faults) before the
    // first measurement: on a shared machine the first runs are otherwise
    // slower for everybody, and that skews the first experiment.
    progress.set_message("warming up");
    no_thief::run::<SeqStack>(plan.duration.max(Duration::from_millis(300)));
    if wanted(Experiment::NoThief) {
        progress.set_prefix("no thief");
        let d = plan.duration;
        let contestants = vec![
            owner_only::<BwosLifo>(Order::Lifo, d),
            owner_only::<CrossbeamLifo>(Order::Lifo, d),
            owner_only::<St3Lifo>(Order::Lifo, d),
            owner_only::<SeqStack>(Order::Lifo, d),
            owner_only::<BwosFifo>(Order::Fifo, d),
            owner_only::<CrossbeamFifo>(Order::Fifo, d),
            owner_only::<St3Fifo>(Order::Fifo, d),
            owner_only::<SeqRing>(Order::Fifo, d),
        ];
        measure(
            Experiment::NoThief,
            "no thief",
            contestants,
            &plan,
            &progress,
            &mut samples,
        );
    }
    if wanted(Experiment::OneThief) {
        progress.set_prefix("one thief");
        for &share in &plan.shares {
            progress.set_message(format!("calibrating {share}%"));
            let contestants = vec![
                with_thief::<BwosLifo>(Order::Lifo, share, &plan),
                with_thief::<CrossbeamLifo>(Order::Lifo, share, &plan),
                with_thief::<St3Lifo>(Order::Lifo, share, &plan),
                with_thief::<BwosFifo>(Order::Fifo, share, &plan),
                with_thief::<CrossbeamFifo>(Order::Fifo, share, &plan),
                with_thief::<St3Fifo>(Order::Fifo, share, &plan),
            ];
            let setting = format!("target {share}%");
            measure(
                Experiment::OneThief,
                &setting,
                contestants,
                &plan,
                &progress,
                &mut samples,
            );
        }
    }
    if wanted(Experiment::Pool) {
        progress.set_prefix("pool");
        for &threads in &plan.pool_threads {
            for &percent in &plan.steal_percents {
                for policy in Policy::ALL {
                    let d = plan.duration;
                    let contestants: Vec<Contestant> = [
                        in_pool::<BwosLifo>(Order::Lifo, threads, percent, policy, d),
                        in_pool::<CrossbeamLifo>(Order::Lifo, threads, percent, policy, d),
                        in_pool::<St3Lifo>(Order::Lifo, threads, percent, policy, d),
                        in_pool::<BwosFifo>(Order::Fifo, threads, percent, policy, d),
                        in_pool::<CrossbeamFifo>(Order::Fifo, threads, percent, policy, d),
                        in_pool::<St3Fifo>(Order::Fifo, threads, percent, policy, d),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    let setting = format!("N={threads} k={percent}% {}", policy.name());
                    measure(
                        Experiment::Pool,
                        &setting,
                        contestants,
                        &plan,
                        &progress,
                        &mut samples,
                    );
                }
            }
        }
    }
    progress.finish_and_clear();
    samples
}

fn owner_only<'a, Q: Owner>(order: Order, duration: Duration) -> Contestant<'a> {
    Contestant {
        queue: Q::NAME,
        order,
        measure: Box::new(move || Measured::throughput(no_thief::run::<Q>(duration))),
    }
}

fn with_thief<'a, Q: Stealable>(order: Order, share: u32, plan: &Plan) -> Contestant<'a> {
    let pause = (share > 0).then(|| {
        one_thief::calibrate::<Q>(
            f64::from(share) / 100.0,
            plan.calibration_steps,
            plan.calibration_time,
        )
    });
    let duration = plan.duration;
    Contestant {
        queue: Q::NAME,
        order,
        measure: Box::new(move || {
            let outcome = one_thief::run::<Q>(pause, duration);
            Measured {
                ops_per_sec: outcome.total_ops_per_sec,
                owner_ops_per_sec: Some(outcome.owner_ops_per_sec),
                stolen_share: Some(outcome.stolen_share),
            }
        }),
    }
}

/// `None` when the queue lacks what the policy needs (st3 has no size
/// estimate on its stealer).
fn in_pool<'a, Q: Stealable>(
    order: Order,
    threads: usize,
    percent: usize,
    policy: Policy,
    duration: Duration,
) -> Option<Contestant<'a>> {
    let sample = Q::create();
    if !policy.supports::<Q>(&sample.thief()) {
        return None;
    }
    Some(Contestant {
        queue: Q::NAME,
        order,
        measure: Box::new(move || {
            Measured::throughput(pool::run::<Q>(threads, percent, policy, duration))
        }),
    })
}

/// Measures every contestant `repetitions` times, interleaved (A B C, then
/// C B A, ...) so that drift in the machine hits all of them alike.
fn measure(
    experiment: Experiment,
    setting: &str,
    mut contestants: Vec<Contestant>,
    plan: &Plan,
    progress: &ProgressBar,
    samples: &mut Vec<Sample>,
) {
    progress.inc_length(u64::from(plan.repetitions) * contestants.len() as u64);
    progress.set_message(setting.to_string());
    for repetition in 0..plan.repetitions {
        let order: Vec<usize> = if repetition % 2 == 0 {
            (0..contestants.len()).collect()
        } else {
            (0..contestants.len()).rev().collect()
        };
        for i in order {
            let contestant = &mut contestants[i];
            let measured = (contestant.measure)();
            samples.push(Sample {
                experiment,
                setting: setting.to_string(),
                queue: contestant.queue,
                order: contestant.order,
                repetition,
                ops_per_sec: measured.ops_per_sec,
                owner_ops_per_sec: measured.owner_ops_per_sec,
                stolen_share: measured.stolen_share,
            });
            progress.inc(1);
        }
    }
}
