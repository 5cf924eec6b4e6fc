//! `bwos-bench`: reproduces the experiments of the BWoS, Nowa and BWS papers
//! on this machine, with the libraries users would pick instead measured in
//! the same run. One subcommand per experiment; `report` runs them all.
//!
//! Every subcommand is a type that implements [`experiment::Run`]; an
//! experiment's type implements [`experiment::Experiment`] and its
//! subcommand takes `Options<ItsType>` (see `experiment.rs`). Adding an
//! experiment is its module and one line in [`subcommands!`] below; the
//! order of that list is `report`'s order.

mod r#async;
mod corun;
mod experiment;
mod forkjoin;
mod header;
mod headline;
mod http;
mod latency;
mod options;
mod output;
mod plot;
mod progress;
mod queue;
mod queues;
mod rayon;
mod rayon_apps;
mod rayon_demo;
mod report;
mod services;
mod small;
mod soak;
mod stats;
mod worklist;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use experiment::{Measure, Options, Run};

/// Benchmarks of the bwos queues and runtime against their peers.
#[derive(Debug, Parser)]
#[command(name = "bwos-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Declares [`Command`], one variant a subcommand (its doc comment is
/// the subcommand's help), with [`Command::run`], which runs any of
/// them, and [`experiments`], every subcommand that has a part in
/// `report`, in the order of the list.
macro_rules! subcommands {
    ($($(#[$meta:meta])* $variant:ident($args:ty),)*) => {
        #[derive(Debug, Subcommand)]
        enum Command {
            $($(#[$meta])* $variant($args),)*
        }

        impl Command {
            fn run(&self) -> std::io::Result<()> {
                match self {
                    $(Command::$variant(args) => args.run(),)*
                }
            }
        }

        /// The experiments of `report`, with `settings`, in order.
        pub fn experiments(settings: &report::Settings) -> Vec<Box<dyn Measure>> {
            let all: Vec<Option<Box<dyn Measure>>> =
                vec![$(<$args as Run>::in_report(settings),)*];
            all.into_iter().flatten().collect()
        }
    };
}

subcommands! {
    /// The BWoS paper's queue microbenchmarks (Figures 10-12) against
    /// crossbeam-deque, st3 and the sequential bounds.
    Queue(Options<queue::QueueArgs>),
    /// The Nowa paper's fork/join suite (16 kernels: the Cilk benchmarks,
    /// skynet, UTS, a sum) on the serial elision, bwos, rayon and chili,
    /// on 1, 2, 4 and 8 threads, each run in a process of its own.
    Forkjoin(Options<forkjoin::ForkJoinArgs>),
    /// tokio's scheduler microbenchmarks (spawn from inside and outside,
    /// ping-pong, yield, chained spawns) on bwos, tokio and smol.
    Async(Options<r#async::AsyncArgs>),
    /// A hyper server (hello world) on bwos, tokio and smol under load
    /// (wrk, or the built-in client) at 50, 200 and 1000 connections:
    /// requests/s, p50/p99, CPU per request.
    Http(Options<http::HttpArgs>),
    /// What blocking tasks, bursts of spawns, always-ready sockets, CPU
    /// work in request handlers and `block_on` inside tasks do to the
    /// other tasks' latency, on bwos, tokio and tokio with rayon: six
    /// workloads in one process, with their goals met or not.
    Latency(Options<latency::LatencyArgs>),
    /// The BWS paper's co-run experiment: two programs at once (fib, a
    /// tree sum, LOOP) on bwos with each idle policy, rayon and chili;
    /// plus solo costs, oversubscription and the stealing-policy table.
    Corun(Options<corun::CorunArgs>),
    /// rayon's parallel iterators on stock rayon-core and on the bwos
    /// drop-in (`crates/rayon-core`): eleven programs, two builds, run
    /// alternately on 1 and 2 threads.
    Rayon(Options<rayon::RayonArgs>),
    /// Parallel marking of synthetic heaps (the BWoS paper's GC use): a
    /// random graph, a wide and a deep tree, a linked list; serial marking,
    /// the bwos work list, a crossbeam-deque work list and rayon.
    Worklist(Options<worklist::WorklistArgs>),
    /// Timers (100,000 sleeping tasks, timeouts that fire and that do
    /// not) and spawn_blocking (10,000 short closures) on bwos and tokio.
    Services(Options<services::ServicesArgs>),
    /// The smallest units of parallel work against the serial loop: tiny
    /// scope spawns, spawns and join loops of 0.1 to 10 µs bodies, array
    /// and boxed trees (balanced, skewed, 255 to 65,535 nodes) summed back
    /// to back and entered from outside; bwos, rayon, chili, plain threads.
    Small(Options<small::SmallArgs>),
    /// rayon's own benchmark suite (rayon-demo of rayon 1.12.0, from a
    /// checkout given with `--source`) on stock rayon-core and on the
    /// drop-in, default bench profile, builds alternating: per-benchmark
    /// ratios and their geometric mean (nightly toolchain)
    RayonDemo(rayon_demo::RayonDemoArgs),
    /// Real rayon programs from crates.io (b3sum, oxipng, dssim, dust,
    /// tokei) built as published and with the drop-in, run alternately on
    /// generated inputs: identical outputs, wall and CPU time ratios.
    RayonApps(rayon_apps::RayonAppsArgs),
    /// A mixed workload on one pool for a while (60 s; `--duration 1h`):
    /// HTTP on loopback, fork/join, work lists, timers, spawn_blocking,
    /// tasks spawned and dropped. Samples memory, threads, descriptors and
    /// live tasks and fails if any grew after warm-up, if anything failed,
    /// or if the pool did not let everything go.
    Soak(soak::SoakArgs),
    /// Every experiment, one report: `queue`, the `forkjoin` suite (small
    /// inputs; `--full` for the paper's), short runs of `async`, `http`,
    /// `latency`, `corun` and `rayon`, then a short `worklist`; writes
    /// `target/report/index.html` (every table and plot, what each
    /// experiment measures, the papers' claims beside this machine's
    /// results), `report.md` (the tables), the SVG plots and the JSON files.
    Report(report::ReportArgs),
    /// The README's headline table: bwos against crossbeam-deque (queue),
    /// rayon and chili (fork/join), tokio and smol (async tasks, HTTP),
    /// from short runs in one process (about 8 minutes; `--quick`: one);
    /// `--write README.md` puts it between the README's markers.
    Headline(headline::HeadlineArgs),
    /// One HTTP server (started by `http`; not for direct use).
    #[command(hide = true)]
    HttpServer(http::ServerArgs),
    /// One program of a co-run (started by `corun`; not for direct use).
    #[command(hide = true)]
    CorunChild(corun::ChildArgs),
    /// One fork/join measurement (started by `forkjoin`; not for direct use).
    #[command(hide = true)]
    ForkjoinChild(forkjoin::child::ChildArgs),
    /// One small fork/join workload on one runtime, for callgrind and
    /// profiles of the join path (see `forkjoin/joinpath.rs`).
    #[command(hide = true)]
    Joinpath(forkjoin::joinpath::JoinPathArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::{CommandFactory, Parser};

    use super::{Cli, Command, report};

    fn parse(line: &str) -> Command {
        Cli::try_parse_from(line.split_whitespace())
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .command
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The command lines of `.ci/run` and the README still parse, to the
    /// same settings.
    #[test]
    fn documented_command_lines_parse() {
        let Command::Queue(args) =
            parse("bwos-bench queue --quick --json target/bench/queue.json --plot target/bench")
        else {
            panic!("not queue")
        };
        assert!(args.run.quick);
        assert_eq!(args.run.repetitions(2), 2);
        assert_eq!(
            args.run.json.as_deref(),
            Some("target/bench/queue.json".as_ref())
        );
        assert_eq!(args.run.plot.as_deref(), Some("target/bench".as_ref()));
        assert_eq!(args.own.threads, 8);
        for line in [
            "bwos-bench forkjoin --quick --json target/bench/forkjoin.json --plot target/bench",
            "bwos-bench corun --quick --json target/bench/corun.json --plot target/bench",
            "bwos-bench async --quick --json target/bench/async.json",
            "bwos-bench http --quick --json target/bench/http.json --plot target/bench",
            "bwos-bench http --quick --load-generator builtin",
            "bwos-bench latency --quick --json target/bench/latency.json --plot target/bench",
            "bwos-bench latency --workloads bursts,mixed-server --seconds 5 --light-rate 1000",
            "bwos-bench worklist --quick --json target/bench/worklist.json --plot target/bench",
            "bwos-bench small --quick --json target/bench/small.json --plot target/bench",
            "bwos-bench small --workload tree --storage boxed --nodes 1023 --calls back-to-back",
            "bwos-bench small --body-us 0.1,1 --shape skewed --serial-ms 20",
            "bwos-bench report --plot target/report",
            "bwos-bench report --quick",
            "bwos-bench report --json target/report/queue.json",
            "bwos-bench report --full",
            "bwos-bench corun --threads 2 --skip-policies",
            "bwos-bench soak --quick",
            "bwos-bench soak --duration 1h --json target/bench/soak.json",
            "bwos-bench soak --seconds 600 --interval 10s --warmup 2m --connections 16",
        ] {
            parse(line);
        }
        let Command::Report(args) = parse("bwos-bench report --threads 4 --repetitions 7 --full")
        else {
            panic!("not report")
        };
        assert_eq!(args.queue.threads, 4);
        assert_eq!(args.run.repetitions, Some(7));
        assert!(args.full);
    }

    /// Defaults come from the experiment; `--quick` overrides repetitions.
    #[test]
    fn repetitions_resolve_per_experiment() {
        let Command::Async(args) = parse("bwos-bench async") else {
            panic!("not async")
        };
        assert_eq!(args.run.repetitions(1), 7);
        assert_eq!(args.threads.count, 2);
        let Command::Http(args) = parse("bwos-bench http --repetitions 4 --threads 3") else {
            panic!("not http")
        };
        assert_eq!(args.run.repetitions(1), 4);
        assert_eq!(args.threads.count, 3);
        assert!(Cli::try_parse_from(["bwos-bench", "worklist", "--repetitions", "0"]).is_err());
    }

    /// `--threads` takes a comma-separated list, repeated or not.
    #[test]
    fn thread_lists_are_comma_separated_or_repeated() {
        for line in [
            "bwos-bench forkjoin --threads 1,2,4",
            "bwos-bench forkjoin --threads 1 --threads 2,4",
        ] {
            let Command::Forkjoin(args) = parse(line) else {
                panic!("not forkjoin")
            };
            assert_eq!(args.threads.or_else(Vec::new), [1, 2, 4]);
        }
        let Command::Rayon(args) = parse("bwos-bench rayon") else {
            panic!("not rayon")
        };
        assert_eq!(args.threads.or_else(|| vec![1, 2]), [1, 2]);
        assert!(Cli::try_parse_from(["bwos-bench", "corun", "--threads", "0"]).is_err());
    }

    /// `report` gives every experiment a JSON file next to the first's,
    /// in the report's directory unless `--json` says otherwise.
    #[test]
    fn report_names_the_json_files() {
        let Command::Report(args) = parse("bwos-bench report --json out/queue.json") else {
            panic!("not report")
        };
        let settings = report::Settings::of(&args);
        assert_eq!(
            settings.json_beside("forkjoin"),
            PathBuf::from("out/forkjoin.json")
        );
        assert_eq!(settings.dir, PathBuf::from(report::DEFAULT_DIR));
        let Command::Report(args) = parse("bwos-bench report --plot there") else {
            panic!("not report")
        };
        let settings = report::Settings::of(&args);
        assert_eq!(settings.json, PathBuf::from("there/queue.json"));
        let names: Vec<&str> = crate::experiments(&settings)
            .iter()
            .map(|e| e.name())
            .collect();
        assert_eq!(
            names,
            [
                "queue", "forkjoin", "async", "http", "latency", "corun", "rayon", "worklist"
            ]
        );
    }
}
