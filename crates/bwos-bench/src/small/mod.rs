//! `bwos-bench small`: the smallest units of parallel work, where a
//! runtime's fixed costs show and the serial loop is the bar to beat,
//! swept over body costs and tree shapes. Each runtime gets a pool of
//! `--threads` workers (2), built afresh for every measurement outside the
//! timed region and warmed with one call; the runtimes take turns in an
//! order that rotates with the repetition, and every point runs once per
//! repetition before the next repetition starts.
//!
//! - **spawn-tiny**: `--spawns` (1,000,000) `spawn`s of a tiny body (one
//!   store into the spawn's own slot) in one `scope`, on bwos and rayon;
//!   the serial loop stores the same slots. Nanoseconds per spawn.
//! - **spawn**: for each body cost of `--body-us` (0.1, 0.3, 1, 3, 10 µs of
//!   a dependent multiply-add chain, calibrated at start), as many spawns
//!   in one `scope` as take `--serial-ms` (100 ms) serially.
//! - **loop**: for each body cost, calls of a parallel loop over
//!   `--bodies` (1,024) bodies, split in halves with `join` down to single
//!   bodies (what `par_iter().for_each` does), also on chili.
//! - **tree**: trees of `--nodes` (255, 1,023, 4,095, 16,383, 65,535)
//!   nodes, array-backed or boxed, balanced or skewed (`trees.rs`), summed
//!   with one `join` per node.
//!
//! `loop` and `tree` run their calls two ways: **back to back** inside one
//! entry into the pool (`install`; chili: one `scope()`), and **entered**,
//! each call entering the pool from the main thread, which pays for the
//! entry and for waking the workers. A point makes as many calls as take
//! `--serial-ms` serially (entered: at most one call per 10 µs of it).
//!
//! Plain threads given equal shares of all the bodies up front (`threads`)
//! show the machine's ceiling for `spawn` and `loop`: the same bodies with
//! no runtime at all. Trees have no such reference (an equal split depends
//! on the shape); the serial sum is theirs.

mod table;
mod trees;

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::experiment::{self, About, Options, Results};
use crate::forkjoin::runtime::{self, ForkJoin, fan_out};
use crate::options::{OptionHelp, WorkerThreads};
use crate::output::Samples;
use crate::progress::{self, Bar};

use table::{figures, tables};
pub use trees::{Shape, Storage, Tree};

/// Serial work per point with `--quick`, milliseconds.
const QUICK_SERIAL_MS: u32 = 2;

/// The least time an entered call is planned to take: an entry into a
/// pool from outside costs microseconds, so a point of tiny entered calls
/// planned by their serial time alone would take many times its budget.
const ENTERED_CALL_FLOOR_NS: f64 = 10_000.0;

/// The default body costs of `spawn` and `loop`, microseconds.
const BODY_US: [f64; 5] = [0.1, 0.3, 1.0, 3.0, 10.0];

/// Options of `bwos-bench small`.
#[derive(Debug, Clone, clap::Args)]
pub struct SmallArgs {
    /// Spawns of the tiny body (spawn-tiny).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(10..=100_000_000))]
    pub spawns: u32,
    /// Body costs of spawn and loop, microseconds, comma-separated
    /// (each from 0.01 to 100,000) [default: 0.1,0.3,1,3,10]
    #[arg(long, value_delimiter = ',', value_parser = parse_body_us)]
    pub body_us: Vec<f64>,
    /// Bodies per call of loop.
    #[arg(long, default_value_t = 1_024, value_parser = clap::value_parser!(u32).range(2..=1_048_576))]
    pub bodies: u32,
    /// Tree sizes, nodes, comma-separated (each from 1 to 10,000,000)
    /// [default: 255,1023,4095,16383,65535]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub nodes: Vec<u32>,
    /// Tree storages, comma-separated [default: both]
    #[arg(long, value_delimiter = ',')]
    pub storage: Vec<Storage>,
    /// Tree shapes, comma-separated [default: both]
    #[arg(long, value_delimiter = ',')]
    pub shape: Vec<Shape>,
    /// How loop and tree calls are made, comma-separated [default: both]
    #[arg(long, value_delimiter = ',')]
    pub calls: Vec<Calls>,
    /// Serial work per point, milliseconds: each point makes as many
    /// spawns or calls as take that long serially [default: 100; --quick: 2]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub serial_ms: Option<u32>,
    /// Run only these workloads (comma-separated; default: all).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(WORKLOADS))]
    pub workload: Vec<String>,
}

impl OptionHelp for SmallArgs {
    const QUICK: &'static str =
        "A smoke run: one repetition, 2 ms of serial work per point, 20,000 tiny spawns";
    const REPETITIONS: &'static str = "Repetitions (each builds every pool afresh)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write speedup plots (body costs; tree sizes per storage, shape \
         and calling) into this directory";
    const THREADS: &'static str = "Worker threads of every pool";
}

impl experiment::Experiment for SmallArgs {
    const NAME: &'static str = "small";
    const ABOUT: About = About {
        measures: "The smallest units of parallel work against the serial loop: tiny scope \
                   spawns, spawns and join loops of 0.1 to 10 µs bodies, array and boxed trees \
                   summed with a join per node, on bwos, rayon, chili and plain threads.",
        better: "Higher speedup over serial is better; bwos/peer above 1 means bwos is faster.",
        paper: None,
    };
    type Threads = WorkerThreads<SmallArgs>;
    type Body = Samples<Sample>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let measurements: usize = points(options).iter().map(|p| p.runtimes().len()).sum();
        let measurements = measurements as u64 * u64::from(options.run.repetitions(1));
        progress::Plan {
            steps: 1 + measurements,
            seconds: 1.0 + measurements as f64 * budget_ns(options) * 1.5e-9,
        }
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Sample>>> {
        let (round_trip_ns, samples) = run(options, bar);
        let tables = format!(
            "cache line round trip between two threads: {round_trip_ns:.0} ns (median of 5; a \
             steal moves several lines from the victim's core to the thief's and back)\n{}",
            tables(&samples, options.threads.count)
        );
        Ok(Results {
            figures: figures(&samples),
            ..Results::new(Samples { samples }, tables)
        })
    }
}

/// A body cost in microseconds, from 0.01 to 100,000.
fn parse_body_us(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of microseconds (e.g. 0.3)"))?;
    if (0.01..=100_000.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "a body cost of {value} µs is out of range: from 0.01 to 100000 µs"
        ))
    }
}

const WORKLOADS: [&str; 4] = ["spawn-tiny", "spawn", "loop", "tree"];

/// How the calls of a `loop` or `tree` point are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Calls {
    /// All calls inside one entry into the pool.
    BackToBack,
    /// Each call enters the pool from the main thread.
    Entered,
}

impl Calls {
    pub const ALL: [Calls; 2] = [Calls::BackToBack, Calls::Entered];

    pub fn name(self) -> &'static str {
        match self {
            Calls::BackToBack => "back to back",
            Calls::Entered => "entered",
        }
    }
}

/// One measured configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "workload", rename_all = "kebab-case")]
pub enum Point {
    SpawnTiny,
    Spawn {
        body_us: f64,
    },
    Loop {
        body_us: f64,
        bodies: u32,
        calls: Calls,
    },
    Tree {
        storage: Storage,
        shape: Shape,
        nodes: u32,
        calls: Calls,
    },
}

impl Point {
    /// The runtimes this point runs on: spawns have no chili counterpart
    /// (chili has only `join`); plain threads only where an equal split is
    /// the ceiling (independent bodies).
    pub fn runtimes(self) -> &'static [&'static str] {
        match self {
            Point::SpawnTiny => &["serial", "bwos", "rayon"],
            Point::Spawn { .. } => &["serial", "threads", "bwos", "rayon"],
            Point::Loop { .. } => &["serial", "threads", "bwos", "rayon", "chili"],
            Point::Tree { .. } => &["serial", "bwos", "rayon", "chili"],
        }
    }

    /// How the tables name it.
    pub fn label(self) -> String {
        match self {
            Point::SpawnTiny => "spawn-tiny".into(),
            Point::Spawn { body_us } => format!("spawn {body_us} µs"),
            Point::Loop {
                body_us,
                bodies,
                calls,
            } => format!("loop {bodies} x {body_us} µs, {}", calls.name()),
            Point::Tree {
                storage,
                shape,
                nodes,
                calls,
            } => format!(
                "tree {} {} {nodes}, {}",
                storage.name(),
                shape.name(),
                calls.name()
            ),
        }
    }

    /// The body cost, for `spawn` and `loop`.
    pub fn body_us(self) -> Option<f64> {
        match self {
            Point::Spawn { body_us } | Point::Loop { body_us, .. } => Some(body_us),
            _ => None,
        }
    }
}

/// One point on one runtime in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    #[serde(flatten)]
    pub point: Point,
    pub runtime: &'static str,
    pub repetition: u32,
    /// Items (spawns or calls) timed.
    pub items: u32,
    /// Wall time over the items, nanoseconds per item.
    pub ns_per_item: f64,
}

/// A point with its input, built once before the repetitions.
struct Planned {
    point: Point,
    items: u32,
    work: Work,
}

enum Work {
    SpawnTiny,
    Spawn { rounds: u64 },
    Loop(Loop),
    Tree(Tree),
}

/// Runs the benchmark; returns the cache line round trip (ns) and the
/// samples.
pub fn run(options: &Options<SmallArgs>, bar: &Bar) -> (f64, Vec<Sample>) {
    let repetitions = options.run.repetitions(1);
    let threads = options.threads.count as usize;
    bar.set_message("calibrating the body's spin and planning the points");
    let spin_per_us = calibrate_spin();
    let round_trip_ns = cache_line_round_trip_ns();
    let plan = plan(options, spin_per_us);
    bar.step();
    let mut samples = Vec::new();
    for repetition in 0..repetitions {
        for planned in &plan {
            let runtimes = planned.point.runtimes();
            for turn in 0..runtimes.len() {
                let runtime = runtimes[(turn + repetition as usize) % runtimes.len()];
                bar.set_message(format!(
                    "{} on {runtime}, repetition {} of {repetitions}",
                    planned.point.label(),
                    repetition + 1
                ));
                let seconds = measure(planned, runtime, threads);
                samples.push(Sample {
                    point: planned.point,
                    runtime,
                    repetition,
                    items: planned.items,
                    ns_per_item: seconds * 1e9 / f64::from(planned.items),
                });
                bar.step();
            }
        }
    }
    (round_trip_ns, samples)
}

fn wants(args: &SmallArgs, workload: &str) -> bool {
    args.workload.is_empty() || args.workload.iter().any(|w| w == workload)
}

fn or_all<T: Copy>(picked: &[T], all: &[T]) -> Vec<T> {
    if picked.is_empty() {
        all.to_vec()
    } else {
        picked.to_vec()
    }
}

/// Serial work per point, nanoseconds.
fn budget_ns(options: &Options<SmallArgs>) -> f64 {
    let default = if options.run.quick {
        QUICK_SERIAL_MS
    } else {
        100
    };
    f64::from(options.own.serial_ms.unwrap_or(default)) * 1e6
}

/// The points `options` ask for, in the order they run.
fn points(options: &Options<SmallArgs>) -> Vec<Point> {
    let args = &options.own;
    let body_us = or_all(&args.body_us, &BODY_US);
    let calls = or_all(&args.calls, &Calls::ALL);
    let mut points = Vec::new();
    if wants(args, "spawn-tiny") {
        points.push(Point::SpawnTiny);
    }
    if wants(args, "spawn") {
        points.extend(body_us.iter().map(|&body_us| Point::Spawn { body_us }));
    }
    if wants(args, "loop") {
        for &body_us in &body_us {
            for &how in &calls {
                points.push(Point::Loop {
                    body_us,
                    bodies: args.bodies,
                    calls: how,
                });
            }
        }
    }
    if wants(args, "tree") {
        let nodes = or_all(&args.nodes, &[255, 1_023, 4_095, 16_383, 65_535]);
        for storage in or_all(&args.storage, &Storage::ALL) {
            for shape in or_all(&args.shape, &Shape::ALL) {
                for &nodes in &nodes {
                    for &how in &calls {
                        points.push(Point::Tree {
                            storage,
                            shape,
                            nodes,
                            calls: how,
                        });
                    }
                }
            }
        }
    }
    points
}

/// The points `options` ask for, with their inputs and item counts.
fn plan(options: &Options<SmallArgs>, spin_per_us: u64) -> Vec<Planned> {
    let args = &options.own;
    let budget_ns = budget_ns(options);
    let rounds = |body_us: f64| ((spin_per_us as f64 * body_us).round() as u64).max(1);
    // A serial call's time, measured once per input (both callings use it).
    let mut serial_ns: Vec<(Point, f64)> = Vec::new();
    let mut serial_once =
        |key: Point, call: &dyn Fn() -> f64| match serial_ns.iter().find(|(k, _)| *k == key) {
            Some(&(_, ns)) => ns,
            None => {
                let ns = call();
                serial_ns.push((key, ns));
                ns
            }
        };
    points(options)
        .into_iter()
        .map(|point| match point {
            Point::SpawnTiny => Planned {
                point,
                items: if options.run.quick {
                    args.spawns.min(20_000)
                } else {
                    args.spawns
                },
                work: Work::SpawnTiny,
            },
            Point::Spawn { body_us } => Planned {
                point,
                items: count_for(budget_ns, body_us * 1e3),
                work: Work::Spawn {
                    rounds: rounds(body_us),
                },
            },
            Point::Loop {
                body_us,
                bodies,
                calls,
            } => {
                let work = Loop::new(bodies as usize, rounds(body_us));
                let key = Point::Spawn { body_us };
                let ns = serial_once(key, &|| {
                    serial_call_ns(&|| work.call::<runtime::Serial>(&mut ()))
                });
                Planned {
                    point,
                    items: calls_for(budget_ns, ns, calls),
                    work: Work::Loop(work),
                }
            }
            Point::Tree {
                storage,
                shape,
                nodes,
                calls,
            } => {
                let tree = Tree::new(storage, shape, nodes as usize);
                let key = Point::Tree {
                    storage,
                    shape,
                    nodes,
                    calls: Calls::BackToBack,
                };
                let ns = serial_once(key, &|| {
                    serial_call_ns(&|| tree.sum::<runtime::Serial>(&mut ()))
                });
                Planned {
                    point,
                    items: calls_for(budget_ns, ns, calls),
                    work: Work::Tree(tree),
                }
            }
        })
        .collect()
}

/// How many items of `item_ns` fit in `budget_ns` (at least 10).
fn count_for(budget_ns: f64, item_ns: f64) -> u32 {
    (budget_ns / item_ns).clamp(10.0, 1e8) as u32
}

/// The calls a point makes: as many as take `budget_ns` serially, or, for
/// entered calls, as many of at least [`ENTERED_CALL_FLOOR_NS`].
fn calls_for(budget_ns: f64, serial_call_ns: f64, how: Calls) -> u32 {
    match how {
        Calls::BackToBack => count_for(budget_ns, serial_call_ns),
        Calls::Entered => count_for(budget_ns, serial_call_ns.max(ENTERED_CALL_FLOOR_NS)),
    }
}

/// The serial time of one call of `call` here: the median of five timings
/// of enough calls to take a millisecond.
fn serial_call_ns(call: &dyn Fn() -> u64) -> f64 {
    let start = Instant::now();
    black_box(call());
    let once = start.elapsed().as_secs_f64().max(1e-8);
    let calls = ((1e-3 / once) as u32).clamp(1, 1_000_000);
    let mut timings: Vec<f64> = (0..5)
        .map(|_| {
            timed(|| {
                for _ in 0..calls {
                    black_box(call());
                }
            }) * 1e9
                / f64::from(calls)
        })
        .collect();
    timings.sort_by(f64::total_cmp);
    timings[2]
}

/// Seconds for `planned` on `runtime`.
fn measure(planned: &Planned, runtime: &str, threads: usize) -> f64 {
    let items = planned.items;
    match (&planned.work, planned.point) {
        (Work::SpawnTiny, _) => spawn_tiny(runtime, threads, items),
        (Work::Spawn { rounds }, _) => spawn_spinning(runtime, threads, items, *rounds),
        (Work::Loop(work), _) if runtime == "threads" => work.on_threads(threads, items),
        (Work::Loop(work), Point::Loop { calls: how, .. }) => {
            calls_on(runtime, threads, work, items, how)
        }
        (Work::Tree(tree), Point::Tree { calls: how, .. }) => {
            calls_on(runtime, threads, tree, items, how)
        }
        _ => unreachable!("a point's work matches its kind"),
    }
}

/// The time for one cache line to go from one thread to another and back
/// (two threads take turns incrementing one counter), nanoseconds: the
/// unit of every cross-core hand-off a runtime makes (a steal, a latch, a
/// wake-up flag), and so of what splitting a tiny call can cost here.
fn cache_line_round_trip_ns() -> f64 {
    const TURNS: u64 = 20_000;
    // Spins, yielding now and then: on a machine with a single free core
    // the other thread may not run until this one gives the core up.
    fn wait_for(counter: &AtomicU64, value: u64) {
        let mut spins = 0u32;
        while counter.load(Ordering::Acquire) != value {
            spins += 1;
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let mut timings: Vec<f64> = (0..5)
        .map(|_| {
            let counter = AtomicU64::new(0);
            let counter = &counter;
            let start = Instant::now();
            std::thread::scope(|s| {
                s.spawn(move || {
                    for turn in 0..TURNS {
                        wait_for(counter, 2 * turn + 1);
                        counter.store(2 * turn + 2, Ordering::Release);
                    }
                });
                for turn in 0..TURNS {
                    counter.store(2 * turn + 1, Ordering::Release);
                    wait_for(counter, 2 * turn + 2);
                }
            });
            start.elapsed().as_secs_f64() * 1e9 / TURNS as f64
        })
        .collect();
    timings.sort_by(f64::total_cmp);
    timings[2]
}

/// Rounds of [`spin`] that take about a microsecond here (the median of
/// a few timings, so a preempted one does not skew it).
fn calibrate_spin() -> u64 {
    const ROUNDS: u64 = 1 << 20;
    let mut per_us: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            black_box(spin(ROUNDS, 1));
            ROUNDS as f64 / (start.elapsed().as_secs_f64() * 1e6)
        })
        .collect();
    per_us.sort_by(f64::total_cmp);
    (per_us[2].round() as u64).max(1)
}

/// A dependent chain of multiply-adds the optimizer cannot shorten.
#[inline]
fn spin(rounds: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..rounds {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

/// What one body of `loop` contributes to its call's sum: the top bits of
/// its spin, so that a call's sum of up to 2^20 bodies cannot overflow.
#[inline]
fn body(rounds: u64, index: usize) -> u64 {
    spin(rounds, index as u64) >> 24
}

/// Something a point calls repeatedly on each fork/join runtime.
trait Call: Sync {
    /// One call on `R`; returns a checksum.
    fn call<R: ForkJoin>(&self, ctx: &mut R::Ctx<'_>) -> u64;
    /// The checksum every call must return.
    fn expected(&self) -> u64;
}

impl Call for Tree {
    fn call<R: ForkJoin>(&self, ctx: &mut R::Ctx<'_>) -> u64 {
        self.sum::<R>(ctx)
    }

    fn expected(&self) -> u64 {
        Tree::expected(self)
    }
}

/// A parallel loop: `bodies` bodies of `rounds` spin rounds each, split
/// in halves with `join`.
#[derive(Clone)]
struct Loop {
    bodies: usize,
    rounds: u64,
    expected: u64,
}

impl Loop {
    fn new(bodies: usize, rounds: u64) -> Loop {
        Loop {
            bodies,
            rounds,
            expected: (0..bodies).map(|i| body(rounds, i)).sum(),
        }
    }

    /// Seconds for `calls` calls' bodies on plain threads, each thread
    /// given an equal share of all of them up front.
    fn on_threads(&self, threads: usize, calls: u32) -> f64 {
        let total = calls as usize * self.bodies;
        let share = total.div_ceil(threads).max(1);
        let sum = AtomicU64::new(0);
        let seconds = timed(|| {
            std::thread::scope(|s| {
                for first in (0..total).step_by(share) {
                    let sum = &sum;
                    s.spawn(move || {
                        let mut acc = 0u64;
                        let mut index = first % self.bodies;
                        for _ in first..(first + share).min(total) {
                            acc = acc.wrapping_add(body(self.rounds, black_box(index)));
                            index += 1;
                            if index == self.bodies {
                                index = 0;
                            }
                        }
                        sum.fetch_add(acc, Ordering::Relaxed);
                    });
                }
            })
        });
        assert_eq!(
            sum.into_inner(),
            self.expected.wrapping_mul(u64::from(calls)),
            "loop: the threads' bodies summed wrong"
        );
        seconds
    }
}

impl Call for Loop {
    fn call<R: ForkJoin>(&self, ctx: &mut R::Ctx<'_>) -> u64 {
        let rounds = self.rounds;
        fan_out::<R, _>(0..self.bodies, ctx, &|i, _| body(rounds, black_box(i)))
    }

    fn expected(&self) -> u64 {
        self.expected
    }
}

/// Seconds for `calls` calls of `work` on fork/join `runtime`, made as
/// `how` says.
fn calls_on<W: Call>(runtime: &str, threads: usize, work: &W, calls: u32, how: Calls) -> f64 {
    fn on<R: ForkJoin, W: Call>(threads: usize, work: &W, calls: u32, how: Calls) -> f64 {
        let pool = R::build(threads);
        let expected = work.expected();
        let check = |sum: u64| {
            assert_eq!(sum, expected, "a call came out wrong on {}", R::NAME);
        };
        check(R::run(&pool, |ctx| work.call::<R>(ctx)));
        match how {
            Calls::BackToBack => R::run(&pool, |ctx| {
                timed(|| (0..calls).for_each(|_| check(work.call::<R>(ctx))))
            }),
            Calls::Entered => timed(|| {
                for _ in 0..calls {
                    check(R::run(&pool, |ctx| work.call::<R>(ctx)));
                }
            }),
        }
    }
    match runtime {
        "serial" => on::<runtime::Serial, W>(threads, work, calls, how),
        "bwos" => on::<runtime::Bwos, W>(threads, work, calls, how),
        "rayon" => on::<runtime::Rayon, W>(threads, work, calls, how),
        "chili" => on::<runtime::Chili, W>(threads, work, calls, how),
        other => unreachable!("no fork/join runtime named {other}"),
    }
}

fn build_bwos(threads: usize) -> bwos::ThreadPool {
    runtime::Bwos::build(threads)
}

fn build_rayon(threads: usize) -> rayon::ThreadPool {
    runtime::Rayon::build(threads)
}

/// Every slot of `slots` holds what the body of spawn `i` stores.
fn check_slots(slots: &[AtomicU64], expected: impl Fn(u64) -> u64, workload: &str) {
    for (i, slot) in slots.iter().enumerate() {
        assert_eq!(
            slot.load(Ordering::Relaxed),
            expected(i as u64),
            "{workload}: spawn {i} did not run, or ran wrong"
        );
    }
}

/// Seconds for `spawns` tiny spawns in one scope on `runtime`.
fn spawn_tiny(runtime: &str, threads: usize, spawns: u32) -> f64 {
    let slots: Vec<AtomicU64> = (0..spawns).map(|_| AtomicU64::new(0)).collect();
    let slots = &slots[..];
    let body = |i: usize| slots[i].store(i as u64 + 1, Ordering::Relaxed);
    let seconds = spawn_all(runtime, threads, spawns as usize, &body);
    check_slots(slots, |i| i + 1, "spawn-tiny");
    seconds
}

/// Seconds for `spawns` spawns of a body of `rounds` spin rounds in one
/// scope on `runtime`.
fn spawn_spinning(runtime: &str, threads: usize, spawns: u32, rounds: u64) -> f64 {
    let slots: Vec<AtomicU64> = (0..spawns).map(|_| AtomicU64::new(0)).collect();
    let slots = &slots[..];
    let body = |i: usize| slots[i].store(spin(rounds, i as u64), Ordering::Relaxed);
    let seconds = spawn_all(runtime, threads, spawns as usize, &body);
    check_slots(slots, |i| spin(rounds, i), "spawn");
    seconds
}

/// Seconds for `body(0..n)`: each index spawned in one scope inside the
/// pool (bwos, rayon), called in a loop (serial), or split in equal
/// shares over plain threads (threads). The pool is warmed with one small
/// scope first.
fn spawn_all(runtime: &str, threads: usize, n: usize, body: &(dyn Fn(usize) + Sync)) -> f64 {
    match runtime {
        "serial" => timed(|| (0..n).for_each(|i| body(black_box(i)))),
        "threads" => {
            let share = n.div_ceil(threads).max(1);
            timed(|| {
                std::thread::scope(|s| {
                    for first in (0..n).step_by(share) {
                        s.spawn(move || {
                            (first..(first + share).min(n)).for_each(|i| body(black_box(i)))
                        });
                    }
                })
            })
        }
        "bwos" => {
            let pool = build_bwos(threads);
            pool.install(|| bwos::scope(|s| s.spawn(|_| black_box(()))));
            timed(|| {
                pool.install(|| bwos::scope(|s| (0..n).for_each(|i| s.spawn(move |_| body(i)))))
            })
        }
        "rayon" => {
            let pool = build_rayon(threads);
            pool.install(|| rayon::scope(|s| s.spawn(|_| black_box(()))));
            timed(|| {
                pool.install(|| rayon::scope(|s| (0..n).for_each(|i| s.spawn(move |_| body(i)))))
            })
        }
        other => unreachable!("no spawn workload on {other}"),
    }
}

/// Seconds that `work` takes.
fn timed(work: impl FnOnce()) -> f64 {
    let start = Instant::now();
    work();
    start.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;
    use crate::options::RunOptions;

    fn quick(own: SmallArgs) -> Options<SmallArgs> {
        Options {
            run: RunOptions {
                quick: true,
                ..RunOptions::default()
            },
            threads: WorkerThreads::of(2),
            own,
        }
    }

    fn quick_args() -> SmallArgs {
        SmallArgs {
            spawns: 2_000,
            body_us: vec![0.1, 1.0],
            bodies: 64,
            nodes: vec![63],
            storage: Vec::new(),
            shape: Vec::new(),
            calls: Vec::new(),
            serial_ms: Some(1),
            workload: Vec::new(),
        }
    }

    /// Also: the plan's step count is the run's (mutation: a plan that
    /// forgets the calibration step).
    #[test]
    fn a_quick_run_measures_every_point_on_each_of_its_runtimes() {
        let options = quick(quick_args());
        let bar = Bar::hidden();
        let (_, samples) = run(&options, &bar);
        // Every step planned is taken: the bar ends full.
        assert_eq!(bar.position(), SmallArgs::plan(&options).steps);
        // spawn-tiny: 3; spawn: 2 costs x 4; loop: 2 costs x 2 callings x 5;
        // tree: 2 storages x 2 shapes x 1 size x 2 callings x 4.
        assert_eq!(samples.len(), 3 + 2 * 4 + 2 * 2 * 5 + 2 * 2 * 2 * 4);
        assert!(samples.iter().all(|s| s.ns_per_item > 0.0 && s.items >= 10));
        let table = tables(&samples, 2);
        for row in [
            "| spawn-tiny |",
            "| spawn 1 µs |",
            "| loop 64 x 0.1 µs, entered |",
            "| tree boxed skewed 63, back to back |",
            "| tree array balanced 63, entered |",
        ] {
            assert!(table.contains(row), "{row} missing from\n{table}");
        }
        assert!(table.contains("never below rayon"), "{table}");
        let json = serde_json::to_string(&samples).unwrap();
        for field in [
            r#""workload":"spawn-tiny""#,
            r#""workload":"loop","body_us":0.1,"bodies":64,"calls":"back-to-back""#,
            r#""workload":"tree","storage":"array","shape":"skewed","nodes":63"#,
        ] {
            assert!(json.contains(field), "{field} missing from {json}");
        }
    }

    #[test]
    fn the_workload_and_shape_options_pick_points() {
        let args = SmallArgs {
            workload: vec!["tree".into()],
            storage: vec![Storage::Boxed],
            calls: vec![Calls::BackToBack],
            nodes: vec![15, 31],
            ..quick_args()
        };
        let plan = plan(&quick(args), 100);
        let labels: Vec<String> = plan.iter().map(|p| p.point.label()).collect();
        assert_eq!(
            labels,
            [
                "tree boxed balanced 15, back to back",
                "tree boxed balanced 31, back to back",
                "tree boxed skewed 15, back to back",
                "tree boxed skewed 31, back to back",
            ]
        );
    }

    #[test]
    fn body_costs_out_of_range_are_refused_with_the_range() {
        assert_eq!(parse_body_us("0.3"), Ok(0.3));
        let error = parse_body_us("0").unwrap_err();
        assert!(error.contains("from 0.01 to 100000"), "{error}");
        assert!(parse_body_us("fast").unwrap_err().contains("not a number"));
    }

    #[test]
    fn the_threads_split_sums_every_body_of_every_call() {
        let work = Loop::new(10, 3);
        // 7 calls of 10 bodies over 3 threads: shares cross call borders.
        assert!(work.on_threads(3, 7) >= 0.0);
    }

    #[test]
    fn the_spin_depends_on_its_seed_and_rounds() {
        assert_ne!(spin(10, 1), spin(10, 2));
        assert_ne!(spin(10, 1), spin(11, 1));
        assert_eq!(spin(0, 5), 5);
    }
}
