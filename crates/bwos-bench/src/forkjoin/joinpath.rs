//! `bwos-bench joinpath`: one small fork/join workload on one runtime, in
//! this process, for instruction counts and profiles of the join path:
//!
//! ```text
//! cargo build --release -p bwos-bench
//! valgrind --tool=callgrind target/release/bwos-bench joinpath <runtime> <workload> [threads] [runs]
//! ```
//!
//! `workload` is `fib` (fib(25), 121,392 joins), `fib35` (fib(35), for
//! peak memory under `/usr/bin/time -v`) or `tree` (a tree of 2^20 nodes,
//! one join per node). The difference to `serial`, divided by the
//! join count, gives the instructions one join costs. It prints the median
//! time of a run, which is only meaningful outside valgrind.

use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};

use super::Runtime;
use super::asyncfork::{AsyncFork, AsyncSerial, Fork, ForkBoxPin};
use super::kernels::Kernel;
use super::kernels::recursive::{Fib, TreeSum};
use super::runtime::{Bwos, Chili, ForkJoin, Rayon, Serial};

/// The workloads of `joinpath`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// fib(25): 121,392 joins, almost no work per join.
    Fib,
    /// fib(35): 14,930,351 joins; for peak memory (`/usr/bin/time -v`).
    Fib35,
    /// The sum of a balanced tree of 2^20 nodes, one join per node.
    Tree,
}

/// Options of the hidden `joinpath` subcommand.
#[derive(Debug, Clone, Args)]
pub struct JoinPathArgs {
    #[arg(value_enum)]
    pub runtime: Runtime,
    #[arg(value_enum)]
    pub workload: Workload,
    #[arg(default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    #[arg(default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,
}

/// Times `runs` runs of `kernel` on `R` inside one entry into the pool;
/// returns the last result and the median time.
fn median_of<K: Kernel, R: ForkJoin>(kernel: &K, threads: usize, runs: u32) -> (u64, Duration) {
    let pool = R::build(threads);
    R::run(&pool, |ctx| {
        let mut value = 0;
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let mut scratch = kernel.scratch();
                let start = Instant::now();
                value = kernel.run::<R>(&mut scratch, ctx);
                start.elapsed()
            })
            .collect();
        times.sort();
        (value, times[times.len() / 2])
    })
}

/// [`median_of`] for the async form on `A`.
fn median_of_async<K: Kernel, A: AsyncFork>(
    kernel: &K,
    threads: usize,
    runs: u32,
) -> (u64, Duration) {
    let pool = A::build(threads);
    A::block_on(&pool, async {
        let mut value = 0;
        let mut times = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let mut scratch = kernel.scratch();
            let start = Instant::now();
            value = kernel.run_async::<A>(&mut scratch).await;
            times.push(start.elapsed());
        }
        times.sort();
        (value, times[times.len() / 2])
    })
}

fn on_runtime<K: Kernel>(kernel: &K, args: &JoinPathArgs) -> (u64, Duration) {
    let (threads, runs) = (args.threads as usize, args.runs);
    match args.runtime {
        Runtime::Serial => median_of::<K, Serial>(kernel, threads, runs),
        Runtime::Bwos => median_of::<K, Bwos>(kernel, threads, runs),
        Runtime::Rayon => median_of::<K, Rayon>(kernel, threads, runs),
        Runtime::Chili => median_of::<K, Chili>(kernel, threads, runs),
        Runtime::Fork => median_of_async::<K, Fork>(kernel, threads, runs),
        Runtime::ForkBoxPin => median_of_async::<K, ForkBoxPin>(kernel, threads, runs),
        Runtime::AsyncSerial => median_of_async::<K, AsyncSerial>(kernel, threads, runs),
    }
}

/// Runs the workload and prints its result and median time.
pub fn run(args: &JoinPathArgs) {
    let (value, median) = match args.workload {
        Workload::Fib => on_runtime(&Fib { n: 25 }, args),
        Workload::Fib35 => on_runtime(&Fib { n: 35 }, args),
        Workload::Tree => on_runtime(&TreeSum::balanced(1 << 20), args),
    };
    println!(
        "{} {:?} on {} thread(s): {value}, median {median:?}",
        args.runtime.name(),
        args.workload,
        args.threads
    );
}

impl crate::experiment::Run for JoinPathArgs {
    fn run(&self) -> std::io::Result<()> {
        run(self);
        Ok(())
    }
}
