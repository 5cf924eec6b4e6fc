//! `bwos-bench queue`: the BWoS paper's queue microbenchmarks (section 6.2,
//! Figures 10 to 12), with the peers measured in the same run.

mod no_thief;
mod one_thief;
mod policy;
mod pool;
mod report;

use std::io;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

pub use policy::Policy;

use crate::experiment::{self, About, Options, Paper, Results};
use crate::options::{NoThreads, OptionHelp};
use crate::output::Samples;
use crate::progress::{self, Bar};
use crate::queues::{
    BwosFifo, BwosLifo, CrossbeamFifo, CrossbeamLifo, Owner, SeqRing, SeqStack, St3Fifo, St3Lifo,
    Stealable,
};

/// Options of `bwos-bench queue` (`report` takes them too).
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
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

impl OptionHelp for QueueArgs {
    const QUICK: &'static str =
        "A short smoke run (under a minute): 2 repetitions, short measurements, fewer settings";
    const REPETITIONS: &'static str =
        "Repetitions of every configuration (interleaved across queues)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write SVG plots (throughput against the stolen share, and per \
         victim-selection policy in the pool) into this directory";
}

impl experiment::Experiment for QueueArgs {
    const NAME: &'static str = "queue";
    const ABOUT: About = About {
        measures: "Queue operations per second of the bwos queues against crossbeam-deque, st3 \
                   and sequential upper bounds: one owner alone, one owner with a thief at a \
                   tuned stolen share, and a pool of queues under six victim-selection policies.",
        better: "Higher throughput (Mops/s) is better; bwos / peer above 1 means bwos is faster.",
        paper: Some(Paper {
            figure: "BWoS (OSDI'23), Figures 10 and 11 (one queue), Figure 12 (a pool)",
            claim: "Without a thief LIFO BWoS has 4.55x the throughput of ABP; at a 10% stolen \
                    share LIFO BWoS outperforms ABP by 12.59x and FIFO BWoS outperforms Tokio's \
                    queue by 9.41x; in a pool of 8 queues with balancing factor 0, BWoS \
                    outperforms ABP by 4.69x and Tokio's queue by 2.68x.",
            machine: "Huawei FusionServer Pro 2288X V5 (x86, two sockets, 88 hyperthreads)",
            threads: "1 owner (Figures 10-11, plus one thief in the same L3 group), 8 threads \
                      (Figure 12)",
            differs: "The peers here are crossbeam-deque (a Chase-Lev deque) and st3 (Tokio's \
                      queue as a crate), not the paper's ABP and Tokio v1.17 builds, and a \
                      machine with few cores and one socket pays less for the cross-socket \
                      traffic that block-level synchronization avoids.",
        }),
    };
    type Threads = NoThreads;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        Plan::new(options).progress()
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Sample>>> {
        let samples = run(options, bar);
        let tables = report::tables(&samples);
        let figures = report::figures(&samples);
        let result = report::result(&samples);
        Ok(Results {
            result,
            figures,
            ..Results::new(Samples { samples }, tables)
        })
    }

    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json.clone(), report.repetitions),
            threads: NoThreads {},
            own: report.queue.clone(),
        })
    }
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
    wanted: Vec<Experiment>,
    shares: Vec<u32>,
    pool_threads: Vec<usize>,
    steal_percents: Vec<usize>,
    calibration_steps: u32,
    calibration_time: Duration,
}

/// The queues each experiment measures, LIFO then FIFO.
const NO_THIEF_QUEUES: u64 = 8;
const THIEF_QUEUES: u64 = 6;
/// How long the machine settles before the first measurement.
const WARM_UP: Duration = Duration::from_millis(300);

impl Plan {
    fn new(options: &Options<QueueArgs>) -> Plan {
        let args = &options.own;
        let cores = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .max(2);
        let mut pool_threads = vec![args.threads as usize];
        if !pool_threads.contains(&cores) {
            pool_threads.push(cores);
        }
        let repetitions = options.run.repetitions(2);
        let wanted = if args.only.is_empty() {
            vec![Experiment::NoThief, Experiment::OneThief, Experiment::Pool]
        } else {
            args.only.clone()
        };
        if options.run.quick {
            Plan {
                repetitions,
                duration: Duration::from_millis(40),
                wanted,
                shares: vec![0, 10, 50],
                pool_threads: vec![cores],
                steal_percents: vec![10, 100],
                calibration_steps: 5,
                calibration_time: Duration::from_millis(10),
            }
        } else {
            Plan {
                repetitions,
                duration: Duration::from_millis(args.millis),
                wanted,
                shares: vec![0, 1, 5, 10, 20, 50],
                pool_threads,
                steal_percents: vec![0, 10, 50, 100],
                calibration_steps: 8,
                calibration_time: Duration::from_millis(30),
            }
        }
    }

    fn wants(&self, experiment: Experiment) -> bool {
        self.wanted.contains(&experiment)
    }

    /// The steps: the warm-up, every calibration and every measurement.
    fn progress(&self) -> progress::Plan {
        let repetitions = u64::from(self.repetitions);
        let measure = self.duration.as_secs_f64() + 0.002;
        let mut steps = 1;
        let mut seconds = WARM_UP.as_secs_f64();
        if self.wants(Experiment::NoThief) {
            steps += NO_THIEF_QUEUES * repetitions;
            seconds += (NO_THIEF_QUEUES * repetitions) as f64 * measure;
        }
        if self.wants(Experiment::OneThief) {
            for &share in &self.shares {
                if share > 0 {
                    steps += THIEF_QUEUES;
                    seconds += THIEF_QUEUES as f64
                        * f64::from(self.calibration_steps)
                        * self.calibration_time.as_secs_f64();
                }
                steps += THIEF_QUEUES * repetitions;
                seconds += (THIEF_QUEUES * repetitions) as f64 * measure;
            }
        }
        if self.wants(Experiment::Pool) {
            let per_setting: u64 = Policy::ALL.iter().map(|&p| pool_queues(p)).sum();
            let settings = (self.pool_threads.len() * self.steal_percents.len()) as u64;
            steps += settings * per_setting * repetitions;
            seconds += (settings * per_setting * repetitions) as f64 * measure;
        }
        progress::Plan { steps, seconds }
    }
}

/// How many queues of the pool experiment support `policy`.
fn pool_queues(policy: Policy) -> u64 {
    fn supports<Q: Stealable>(policy: Policy) -> u64 {
        u64::from(policy.supports::<Q>(&Q::create().thief()))
    }
    supports::<BwosLifo>(policy)
        + supports::<CrossbeamLifo>(policy)
        + supports::<St3Lifo>(policy)
        + supports::<BwosFifo>(policy)
        + supports::<CrossbeamFifo>(policy)
        + supports::<St3Fifo>(policy)
}

/// Runs the selected experiments; returns every sample.
pub fn run(options: &Options<QueueArgs>, bar: &Bar) -> Vec<Sample> {
    let plan = Plan::new(options);
    let mut samples = Vec::new();
    // Let the machine settle (frequency, caches, page faults) before the
    // first measurement: on a shared machine the first runs are otherwise
    // slower for everybody, and that skews the first experiment.
    bar.set_message("warming up");
    no_thief::run::<SeqStack>(plan.duration.max(WARM_UP));
    bar.step();
    if plan.wants(Experiment::NoThief) {
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
        let setting = Setting {
            experiment: Experiment::NoThief,
            name: "no thief",
        };
        measure(&setting, contestants, &plan, bar, &mut samples);
    }
    if plan.wants(Experiment::OneThief) {
        for &share in &plan.shares {
            bar.set_message(format!("one thief: calibrating the pauses for {share}%"));
            let contestants = vec![
                with_thief::<BwosLifo>(Order::Lifo, share, &plan, bar),
                with_thief::<CrossbeamLifo>(Order::Lifo, share, &plan, bar),
                with_thief::<St3Lifo>(Order::Lifo, share, &plan, bar),
                with_thief::<BwosFifo>(Order::Fifo, share, &plan, bar),
                with_thief::<CrossbeamFifo>(Order::Fifo, share, &plan, bar),
                with_thief::<St3Fifo>(Order::Fifo, share, &plan, bar),
            ];
            let name = format!("target {share}%");
            let setting = Setting {
                experiment: Experiment::OneThief,
                name: &name,
            };
            measure(&setting, contestants, &plan, bar, &mut samples);
        }
    }
    if plan.wants(Experiment::Pool) {
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
                    let name = format!("N={threads} k={percent}% {}", policy.name());
                    let setting = Setting {
                        experiment: Experiment::Pool,
                        name: &name,
                    };
                    measure(&setting, contestants, &plan, bar, &mut samples);
                }
            }
        }
    }
    samples
}

fn owner_only<'a, Q: Owner>(order: Order, duration: Duration) -> Contestant<'a> {
    Contestant {
        queue: Q::NAME,
        order,
        measure: Box::new(move || Measured::throughput(no_thief::run::<Q>(duration))),
    }
}

/// Calibrates the thief's pause for `share` (a step of `bar`) unless it
/// is 0.
fn with_thief<'a, Q: Stealable>(
    order: Order,
    share: u32,
    plan: &Plan,
    bar: &Bar,
) -> Contestant<'a> {
    let pause = (share > 0).then(|| {
        let pause = one_thief::calibrate::<Q>(
            f64::from(share) / 100.0,
            plan.calibration_steps,
            plan.calibration_time,
        );
        bar.step();
        pause
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

/// Where a measurement belongs.
struct Setting<'a> {
    experiment: Experiment,
    name: &'a str,
}

/// Measures every contestant `repetitions` times, interleaved (A B C, then
/// C B A, ...) so that drift in the machine hits all of them alike.
fn measure(
    setting: &Setting,
    mut contestants: Vec<Contestant>,
    plan: &Plan,
    bar: &Bar,
    samples: &mut Vec<Sample>,
) {
    let experiment = match setting.experiment {
        Experiment::NoThief => "no thief",
        Experiment::OneThief => "one thief",
        Experiment::Pool => "pool",
    };
    for repetition in 0..plan.repetitions {
        let order: Vec<usize> = if repetition % 2 == 0 {
            (0..contestants.len()).collect()
        } else {
            (0..contestants.len()).rev().collect()
        };
        for i in order {
            let contestant = &mut contestants[i];
            bar.set_message(format!(
                "{experiment}, {}: {}, repetition {} of {}",
                setting.name,
                contestant.queue,
                repetition + 1,
                plan.repetitions
            ));
            let measured = (contestant.measure)();
            samples.push(Sample {
                experiment: setting.experiment,
                setting: setting.name.to_string(),
                queue: contestant.queue,
                order: contestant.order,
                repetition,
                ops_per_sec: measured.ops_per_sec,
                owner_ops_per_sec: measured.owner_ops_per_sec,
                stolen_share: measured.stolen_share,
            });
            bar.step();
        }
    }
}
