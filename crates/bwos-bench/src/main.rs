//! `bwos-bench`: reproduces the experiments of the BWoS, Nowa and BWS papers
//! on this machine, with the libraries users would pick instead measured in
//! the same run. One subcommand per experiment; `report` runs them all.

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
    /// Every experiment, one report (for now: `queue`).
    Report(queue::QueueArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let header = header::Header::collect();
    let args = match &cli.command {
        Command::Queue(args) | Command::Report(args) => args,
    };
    print!("{}", header.render());
    let samples = queue::run(args);
    print!("{}", report::tables(&samples));
    if let Err(error) = report::write_outputs(&header, &samples, args) {
        eprintln!("error: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
