//! `bwos-bench`: reproduces the experiments of the BWoS, Nowa and BWS papers
//! on this machine, with the libraries users would pick instead measured in
//! the same run. One subcommand per experiment; `report` runs them all.

mod forkjoin;
mod header;
mod queue;
mod queues;
mod report;
mod stats;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Benchmarks of the bwos queues and runtime against their peers.
#[derive(Debug, Parser)]
#[command(name = "bwos-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The BWoS paper's queue microbenchmarks (Figures 10-12) against
    /// crossbeam-deque, st3 and the sequential bounds.
    Queue(queue::QueueArgs),
    /// Fork/join workloads (fib, n-queens, tree sums) on serial code, bwos,
    /// rayon and chili, on one thread and on all cores.
    Forkjoin(forkjoin::ForkJoinArgs),
    /// Every experiment, one report: `queue`, then `forkjoin` (JSON of the
    /// latter next to the former's, as `forkjoin.json`).
    Report(queue::QueueArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let header = header::Header::collect();
    print!("{}", header.render());
    let outcome = match &cli.command {
        Command::Queue(args) => run_queue(&header, args),
        Command::Forkjoin(args) => run_forkjoin(&header, args),
        Command::Report(args) => run_queue(&header, args).and_then(|()| {
            let mut forkjoin_args =
                forkjoin::ForkJoinArgs::for_report(args.quick, args.repetitions, args.plot.clone());
            forkjoin_args.json = args
                .json
                .as_ref()
                .map(|path| path.with_file_name("forkjoin.json"));
            run_forkjoin(&header, &forkjoin_args)
        }),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run_queue(header: &header::Header, args: &queue::QueueArgs) -> std::io::Result<()> {
    let samples = queue::run(args);
    print!("{}", report::tables(&samples));
    report::write_outputs(header, &samples, args)
}

fn run_forkjoin(header: &header::Header, args: &forkjoin::ForkJoinArgs) -> std::io::Result<()> {
    let samples = forkjoin::run(args);
    print!("{}", forkjoin::tables(&samples));
    forkjoin::write_outputs(header, &samples, args)
}
