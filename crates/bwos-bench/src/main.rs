//! `bwos-bench`: reproduces the experiments of the BWoS, Nowa and BWS papers
//! on this machine, with the libraries users would pick instead measured in
//! the same run. One subcommand per experiment; `report` runs them all.

mod corun;
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
    /// The BWS paper's co-run experiment: two programs at once (fib, a
    /// tree sum, LOOP) on bwos with each idle policy, rayon and chili;
    /// plus solo costs, oversubscription and the stealing-policy table.
    Corun(corun::CorunArgs),
    /// Every experiment, one report: `queue`, `forkjoin`, then a short
    /// `corun` (JSON of the others next to the first's, as
    /// `forkjoin.json` and `corun.json`).
    Report(queue::QueueArgs),
    /// One program of a co-run (started by `corun`; not for direct use).
    #[command(hide = true)]
    CorunChild(corun::ChildArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::CorunChild(args) = &cli.command {
        // The child's stdout is the protocol with its parent: no header.
        return match corun::child::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let header = header::Header::collect();
    print!("{}", header.render());
    let outcome = match &cli.command {
        Command::Queue(args) => run_queue(&header, args),
        Command::Forkjoin(args) => run_forkjoin(&header, args),
        Command::Corun(args) => run_corun(&header, args),
        Command::CorunChild(_) => unreachable!("handled above"),
        Command::Report(args) => run_queue(&header, args).and_then(|()| {
            let mut forkjoin_args =
                forkjoin::ForkJoinArgs::for_report(args.quick, args.repetitions, args.plot.clone());
            forkjoin_args.json = args
                .json
                .as_ref()
                .map(|path| path.with_file_name("forkjoin.json"));
            run_forkjoin(&header, &forkjoin_args)?;
            // A short co-run: one repetition, the default sizes.
            let mut corun_args = corun::CorunArgs::for_report(args.quick, 1, args.plot.clone());
            corun_args.seconds = 0.3;
            corun_args.json = args
                .json
                .as_ref()
                .map(|path| path.with_file_name("corun.json"));
            run_corun(&header, &corun_args)
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

fn run_corun(header: &header::Header, args: &corun::CorunArgs) -> std::io::Result<()> {
    let samples = corun::run(args);
    print!("{}", corun::tables(&samples));
    corun::write_outputs(header, &samples, args)
}
