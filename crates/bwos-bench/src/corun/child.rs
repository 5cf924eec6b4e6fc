//! One program of a co-run, in a process of its own (`bwos-bench
//! corun-child`, started by `bwos-bench corun`).
//!
//! Protocol on stdin/stdout, one line each: the child builds its pool,
//! warms up and calibrates, prints `ready`; on `go` it runs its measured
//! iterations and prints `done <seconds per iteration> <PoolStats JSON>`,
//! then keeps running unmeasured iterations (so that a co-runner still
//! being measured never runs alone) until it reads `stop` or end of input.

use std::hint::black_box;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::forkjoin::kernels::Kernel;
use crate::forkjoin::kernels::recursive::{Fib, TreeSum};
use crate::forkjoin::runtime::{Bwos, Chili, ForkJoin, Rayon, Serial};

/// The programs of the co-run experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// fib(30) with one join per call: fine-grained, scales well.
    Fib,
    /// The sum of a 10M-node tree (80 MB): memory-bound, scales less.
    Tree,
    /// The BWS paper's LOOP: plain threads that only spin on their own
    /// share of the work, no stealing, a barrier per iteration.
    Loop,
}

/// The runtime configurations a fork/join program runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Config {
    BwosSpin,
    BwosYield,
    BwosPark,
    BwosBalanced,
    /// `Balanced` without yielding to a preempted victim.
    BwosBalancedNoYtv,
    Rayon,
    Chili,
}

impl Config {
    pub fn name(self) -> &'static str {
        match self {
            Config::BwosSpin => "bwos spin",
            Config::BwosYield => "bwos yield",
            Config::BwosPark => "bwos park",
            Config::BwosBalanced => "bwos balanced",
            Config::BwosBalancedNoYtv => "bwos balanced, no yield-to-victim",
            Config::Rayon => "rayon",
            Config::Chili => "chili",
        }
    }

    fn idle_policy(self) -> Option<bwos::IdlePolicy> {
        match self {
            Config::BwosSpin => Some(bwos::IdlePolicy::Spin),
            Config::BwosYield => Some(bwos::IdlePolicy::Yield),
            Config::BwosPark => Some(bwos::IdlePolicy::Park),
            Config::BwosBalanced | Config::BwosBalancedNoYtv => Some(bwos::IdlePolicy::Balanced),
            Config::Rayon | Config::Chili => None,
        }
    }
}

/// The victim selectors, for the policy table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Selector {
    Random,
    Sequential,
    LastVictim,
    BestOfTwo,
    BestOfMany,
    Topology,
}

impl Selector {
    pub const ALL: [Selector; 6] = [
        Selector::Random,
        Selector::Sequential,
        Selector::LastVictim,
        Selector::BestOfTwo,
        Selector::BestOfMany,
        Selector::Topology,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Selector::Random => "random",
            Selector::Sequential => "sequential",
            Selector::LastVictim => "last-victim",
            Selector::BestOfTwo => "best-of-two",
            Selector::BestOfMany => "best-of-many(4)",
            Selector::Topology => "topology",
        }
    }

    fn policy(self) -> bwos::StealPolicy {
        match self {
            Selector::Random => bwos::StealPolicy::Random,
            Selector::Sequential => bwos::StealPolicy::Sequential,
            Selector::LastVictim => bwos::StealPolicy::LastVictim,
            Selector::BestOfTwo => bwos::StealPolicy::BestOfTwo,
            Selector::BestOfMany => bwos::StealPolicy::BestOfMany { candidates: 4 },
            Selector::Topology => bwos::StealPolicy::Topology,
        }
    }
}

/// Options of the hidden `corun-child` subcommand.
#[derive(Debug, Clone, Args, Serialize, Deserialize, PartialEq)]
pub struct ChildArgs {
    #[arg(long, value_enum)]
    pub program: Program,
    #[arg(long, value_enum, default_value = "bwos-park")]
    pub config: Config,
    #[arg(long)]
    pub threads: usize,
    /// Target seconds of measured iterations (solo).
    #[arg(long, default_value_t = 0.5)]
    pub seconds: f64,
    /// Smaller inputs (smoke runs).
    #[arg(long)]
    pub quick: bool,
    /// bwos victim selector.
    #[arg(long, value_enum, default_value = "random")]
    pub selector: Selector,
    /// bwos: probabilistic acceptance of victims.
    #[arg(long)]
    pub probabilistic: bool,
    /// bwos: steal a block instead of one job.
    #[arg(long)]
    pub block: bool,
}

/// What a child reports after its measured iterations.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChildReport {
    pub seconds_per_iteration: f64,
    pub iterations: u32,
    /// bwos pools only.
    pub stats: Option<bwos::PoolStats>,
}

/// One program instance, ready to run iterations.
trait Runner {
    fn iteration(&mut self);
    fn stats(&self) -> Option<bwos::PoolStats> {
        None
    }
}

/// A fork/join kernel on one runtime's pool; every iteration checks its
/// result.
struct KernelRunner<K: 'static, R: ForkJoin> {
    kernel: &'static K,
    pool: R::Pool,
    expected: u64,
}

impl<K: Kernel, R: ForkJoin> Runner for KernelRunner<K, R>
where
    R::Pool: Sync,
{
    fn iteration(&mut self) {
        let kernel = self.kernel;
        let result = R::run(&self.pool, |ctx| {
            kernel.run::<R>(&mut kernel.scratch(), ctx)
        });
        assert_eq!(result, self.expected, "{} computed a wrong result", R::NAME);
    }

    fn stats(&self) -> Option<bwos::PoolStats> {
        R::stats(&self.pool)
    }
}

/// `kernel` on the configured runtime.
fn fork_join_runner<K: Kernel + 'static>(args: &ChildArgs, kernel: K) -> Box<dyn Runner> {
    // Leaked: the process ends with the program.
    let kernel: &'static K = Box::leak(Box::new(kernel));
    let expected = kernel.run::<Serial>(&mut kernel.scratch(), &mut ());
    match args.config.idle_policy() {
        Some(policy) => Box::new(KernelRunner::<K, Bwos> {
            kernel,
            pool: bwos_pool(args, policy),
            expected,
        }),
        None if args.config == Config::Rayon => Box::new(KernelRunner::<K, Rayon> {
            kernel,
            pool: Rayon::build(args.threads),
            expected,
        }),
        None => Box::new(KernelRunner::<K, Chili> {
            kernel,
            pool: Chili::build(args.threads),
            expected,
        }),
    }
}

/// LOOP: `threads` plain threads, each spinning through its share.
struct Loop {
    start: Arc<Barrier>,
    end: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Loop {
    fn new(threads: usize, total_work: u64) -> Loop {
        let start = Arc::new(Barrier::new(threads + 1));
        let end = Arc::new(Barrier::new(threads + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let share = total_work / threads as u64;
        let handles = (0..threads)
            .map(|_| {
                let (start, end, stop) = (start.clone(), end.clone(), stop.clone());
                thread::spawn(move || {
                    loop {
                        start.wait();
                        // Relaxed: set before the last start barrier.
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let mut x = 0u64;
                        for i in 0..share {
                            x = black_box(x.wrapping_add(i));
                        }
                        black_box(x);
                        end.wait();
                    }
                })
            })
            .collect();
        Loop {
            start,
            end,
            stop,
            threads: handles,
        }
    }
}

impl Runner for Loop {
    fn iteration(&mut self) {
        self.start.wait();
        self.end.wait();
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.start.wait();
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

fn bwos_pool(args: &ChildArgs, policy: bwos::IdlePolicy) -> bwos::ThreadPool {
    bwos::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .idle_policy(policy)
        .yield_to_victim(args.config != Config::BwosBalancedNoYtv)
        .steal_policy(args.selector.policy())
        .probabilistic_steal(args.probabilistic)
        .steal_batch(if args.block {
            bwos::StealBatch::Block
        } else {
            bwos::StealBatch::One
        })
        .build()
        .expect("a bwos pool")
}

/// The child's main: build, calibrate, report `ready`, wait for `go`,
/// measure, report `done`, fill until `stop`.
pub fn run(args: &ChildArgs) -> io::Result<()> {
    let mut runner: Box<dyn Runner> = match args.program {
        Program::Fib => {
            let n = if args.quick { 24 } else { 30 };
            fork_join_runner(args, Fib { n })
        }
        Program::Tree => {
            let nodes = if args.quick { 100_000 } else { 10_000_000 };
            fork_join_runner(args, TreeSum::balanced(nodes))
        }
        Program::Loop => {
            let work = if args.quick { 2_000_000 } else { 20_000_000 };
            Box::new(Loop::new(args.threads, work))
        }
    };
    // Warm up and calibrate: iterations for `seconds` of solo time.
    runner.iteration();
    let probe = Instant::now();
    let mut probes = 0u32;
    while probe.elapsed() < Duration::from_secs_f64(args.seconds / 10.0) || probes == 0 {
        runner.iteration();
        probes += 1;
    }
    let per_iteration = probe.elapsed().as_secs_f64() / f64::from(probes);
    let iterations = ((args.seconds / per_iteration) as u32).clamp(3, 1_000_000);

    let stop = Arc::new(AtomicBool::new(false));
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "ready")?;
    stdout.flush()?;
    let mut go = String::new();
    // `read_line` takes stdin's lock only for the call: the reader thread
    // below needs it afterwards.
    io::stdin().read_line(&mut go)?;
    if go.trim() != "go" {
        return Ok(());
    }
    // A reader thread turns `stop` (or end of input) into the flag.
    {
        let stop = stop.clone();
        thread::spawn(move || {
            for line in io::stdin().lock().lines() {
                match line {
                    Ok(line) if line.trim() != "stop" => continue,
                    _ => break,
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
    let start = Instant::now();
    for _ in 0..iterations {
        runner.iteration();
    }
    let report = ChildReport {
        seconds_per_iteration: start.elapsed().as_secs_f64() / f64::from(iterations),
        iterations,
        stats: runner.stats(),
    };
    writeln!(
        stdout,
        "done {}",
        serde_json::to_string(&report).expect("a serializable report")
    )?;
    stdout.flush()?;
    // Relaxed: a stop request carries no data.
    while !stop.load(Ordering::Relaxed) {
        runner.iteration();
    }
    drop(runner);
    Ok(())
}

impl crate::experiment::Run for ChildArgs {
    fn run(&self) -> io::Result<()> {
        run(self)
    }
}
