//! `bwos-bench`: reproduces the experiments of the BWoS, Nowa and BWS papers
//! on this machine, with the libraries users would pick instead measured in
//! the same run. One subcommand per experiment; `report` runs them all.

mod asyncrt;
mod corun;
mod forkjoin;
mod header;
mod headline;
mod http;
mod latency;
mod options;
mod queue;
mod queues;
mod rayon_apps;
mod rayon_demo;
mod rayon_dropin;
mod report;
mod services;
mod small;
mod soak;
mod stats;
mod worklist;

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
    /// The Nowa paper's fork/join suite (16 kernels: the Cilk benchmarks,
    /// skynet, UTS, a sum) on the serial elision, bwos, rayon and chili,
    /// on 1, 2, 4 and 8 threads, each run in a process of its own.
    Forkjoin(forkjoin::ForkJoinArgs),
    /// The BWS paper's co-run experiment: two programs at once (fib, a
    /// tree sum, LOOP) on bwos with each idle policy, rayon and chili;
    /// plus solo costs, oversubscription and the stealing-policy table.
    Corun(corun::CorunArgs),
    /// tokio's scheduler microbenchmarks (spawn from inside and outside,
    /// ping-pong, yield, chained spawns) on bwos, tokio and smol.
    Async(asyncrt::AsyncArgs),
    /// A hyper server (hello world) on bwos, tokio and smol under load
    /// (wrk, or the built-in client) at 50, 200 and 1000 connections:
    /// requests/s, p50/p99, CPU per request.
    Http(http::HttpArgs),
    /// What blocking tasks, bursts of spawns, always-ready sockets and
    /// CPU work in request handlers do to the other tasks' latency, on
    /// bwos, tokio and tokio with rayon: five workloads in one process,
    /// with the goals of issue 47 met or not.
    Latency(latency::LatencyArgs),
    /// One HTTP server (started by `http`; not for direct use).
    #[command(hide = true)]
    HttpServer(http::ServerArgs),
    /// Timers (100,000 sleeping tasks, timeouts that fire and that do
    /// not) and spawn_blocking (10,000 short closures) on bwos and tokio.
    Services(services::ServicesArgs),
    /// The smallest units of parallel work against the serial loop: tiny
    /// scope spawns, spawns and join loops of 0.1 to 10 us bodies, array
    /// and boxed trees (balanced, skewed, 255 to 65,535 nodes) summed back
    /// to back and entered from outside; bwos, rayon, chili, plain threads.
    Small(small::SmallArgs),
    /// rayon's parallel iterators on stock rayon-core and on the bwos
    /// drop-in (`crates/rayon-core`): seven programs, two builds, run
    /// alternately on 1 and 2 threads.
    Rayon(rayon_dropin::RayonArgs),
    /// rayon's own benchmark suite (rayon-demo of rayon 1.12.0, from a
    /// checkout given with `--source`) on stock rayon-core and on the
    /// drop-in, default bench profile, builds alternating: per-benchmark
    /// ratios and their geometric mean (nightly toolchain)
    RayonDemo(rayon_demo::RayonDemoArgs),
    /// Real rayon programs from crates.io (b3sum, oxipng, dssim, dust,
    /// tokei) built as published and with the drop-in, run alternately on
    /// generated inputs: identical outputs, wall and CPU time ratios.
    RayonApps(rayon_apps::RayonAppsArgs),
    /// Parallel marking of synthetic heaps (the BWoS paper's GC use): a
    /// random graph, a wide and a deep tree, a linked list; serial marking,
    /// the bwos work list, a crossbeam-deque work list and rayon.
    Worklist(worklist::WorklistArgs),
    /// A mixed workload on one pool for a while (60 s; `--duration 1h`):
    /// HTTP on loopback, fork/join, work lists, timers, spawn_blocking,
    /// tasks spawned and dropped. Samples memory, threads, descriptors and
    /// live tasks and fails if any grew after warm-up, if anything failed,
    /// or if the pool did not let everything go.
    Soak(soak::SoakArgs),
    /// Every experiment, one report: `queue`, the `forkjoin` suite (small
    /// inputs; `--full` for the paper's), a short `async`, a short `http`,
    /// a short `latency`, a short `corun`, `rayon`, then a short
    /// `worklist` (JSON of the others next to the first's, as
    /// `forkjoin.json`, `async.json`, `http.json`, `latency.json`,
    /// `corun.json`, `rayon.json` and `worklist.json`).
    Report(ReportArgs),
    /// The README's headline table: bwos against crossbeam-deque (queue),
    /// rayon and chili (fork/join), tokio and smol (async tasks, HTTP),
    /// from short runs in one process (about 8 minutes; `--quick`: one);
    /// `--write README.md` puts it between the README's markers.
    Headline(headline::HeadlineArgs),
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

/// Options of `bwos-bench report`: the shared ones apply to every
/// experiment, the queue experiment's only to it.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help("A smoke run of every experiment (each one's --quick)")),
    mut_arg("repetitions", |a| a.help("Repetitions of the queue experiment [default: 5] and, up to 3, of the fork/join suite and rayon [default: 3]; the others run a fixed number (async 3, http 1, latency 3, corun 1, worklist 3)")),
    mut_arg("json", |a| a.help("Write every sample as JSON: the queue experiment's to FILE, the others' next to it as forkjoin.json, async.json, http.json, latency.json, corun.json, rayon.json and worklist.json")),
    mut_arg("plot", |a| a.help("Write the SVG plots of every experiment that draws them (all but async and rayon) into this directory")),
)]
struct ReportArgs {
    #[command(flatten)]
    run: options::RunOptions,
    #[command(flatten)]
    plot: options::PlotOption,
    /// Run the fork/join suite on the paper's inputs (Table I) instead of
    /// small ones: hours instead of minutes.
    #[arg(long)]
    full: bool,
    #[command(flatten, next_help_heading = "Queue experiment")]
    queue: queue::QueueOptions,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A child's stdout is the protocol with its parent: no header.
    let child = match &cli.command {
        Command::CorunChild(args) => Some(corun::child::run(args)),
        Command::ForkjoinChild(args) => Some(forkjoin::child::run(args)),
        Command::Joinpath(args) => {
            forkjoin::joinpath::run(args);
            Some(Ok(()))
        }
        Command::HttpServer(args) => Some(http::serve(args)),
        _ => None,
    };
    if let Some(outcome) = child {
        return match outcome {
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
        Command::Async(args) => run_async(&header, args),
        Command::Http(args) => run_http(&header, args),
        Command::Latency(args) => run_latency(&header, args),
        Command::Services(args) => run_services(&header, args),
        Command::Small(args) => run_small(&header, args),
        Command::Rayon(args) => run_rayon(&header, args),
        Command::RayonDemo(args) => run_rayon_demo(&header, args),
        Command::RayonApps(args) => rayon_apps::run(&header, args),
        Command::Worklist(args) => run_worklist(&header, args),
        Command::Soak(args) => run_soak(&header, args),
        Command::CorunChild(_)
        | Command::ForkjoinChild(_)
        | Command::Joinpath(_)
        | Command::HttpServer(_) => {
            unreachable!("handled above")
        }
        Command::Report(args) => run_report(&header, args),
        Command::Headline(args) => run_headline(&header, args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The headline table: printed, and written into `--write`'s file.
fn run_headline(header: &header::Header, args: &headline::HeadlineArgs) -> std::io::Result<()> {
    let rows = headline::run(args)?;
    let generated = headline::render(header, &rows);
    print!("\n{generated}");
    if let Some(path) = &args.write {
        headline::write_into(path, &generated)?;
        println!("\nwritten into {}", path.display());
    }
    Ok(())
}

/// Every experiment in turn, with `report`'s settings.
fn run_report(header: &header::Header, args: &ReportArgs) -> std::io::Result<()> {
    let (run, plot) = (&args.run, &args.plot);
    run_queue(
        header,
        &queue::QueueArgs {
            run: run.clone(),
            plot: plot.clone(),
            queue: args.queue.clone(),
        },
    )?;
    let forkjoin_args = forkjoin::ForkJoinArgs::for_report(
        run.json_beside("forkjoin.json"),
        plot.clone(),
        args.full,
    );
    run_forkjoin(header, &forkjoin_args)?;
    run_async(
        header,
        &asyncrt::AsyncArgs::for_report(run.json_beside("async.json")),
    )?;
    run_http(
        header,
        &http::HttpArgs::for_report(run.json_beside("http.json"), plot.clone()),
    )?;
    run_latency(
        header,
        &latency::LatencyArgs::for_report(run.json_beside("latency.json"), plot.clone()),
    )?;
    run_corun(
        header,
        &corun::CorunArgs::for_report(run.json_beside("corun.json"), plot.clone()),
    )?;
    run_rayon(
        header,
        &rayon_dropin::RayonArgs::for_report(run.json_beside("rayon.json")),
    )?;
    run_worklist(
        header,
        &worklist::WorklistArgs::for_report(run.json_beside("worklist.json"), plot.clone()),
    )
}

fn run_queue(header: &header::Header, args: &queue::QueueArgs) -> std::io::Result<()> {
    let samples = queue::run(args);
    print!("{}", report::tables(&samples));
    report::write_samples(header, &args.run, &args.plot, &samples, report::plots)
}

fn run_forkjoin(header: &header::Header, args: &forkjoin::ForkJoinArgs) -> std::io::Result<()> {
    let outcome = forkjoin::run(args);
    let samples = &outcome.samples;
    print!("{}", forkjoin::tables(samples));
    report::write_samples(header, &args.run, &args.plot, samples, forkjoin::plots)?;
    if outcome.failures.is_empty() {
        return Ok(());
    }
    let mut message = format!(
        "{} fork/join measurement(s) failed:",
        outcome.failures.len()
    );
    for failure in &outcome.failures {
        message.push_str("\n  ");
        message.push_str(failure);
    }
    Err(std::io::Error::other(message))
}

fn run_async(header: &header::Header, args: &asyncrt::AsyncArgs) -> std::io::Result<()> {
    let samples = asyncrt::run(args);
    print!("{}", asyncrt::tables(&samples));
    let no_plots = &options::PlotOption::default();
    report::write_samples(header, &args.run, no_plots, &samples, |_, _| Ok(Vec::new()))
}

fn run_services(header: &header::Header, args: &services::ServicesArgs) -> std::io::Result<()> {
    let samples = services::run(args);
    print!("{}", services::tables(&samples));
    let no_plots = &options::PlotOption::default();
    report::write_samples(header, &args.run, no_plots, &samples, |_, _| Ok(Vec::new()))
}

fn run_small(header: &header::Header, args: &small::SmallArgs) -> std::io::Result<()> {
    let samples = small::run(args);
    print!("{}", small::tables(&samples, args.threads.count));
    report::write_samples(header, &args.run, &args.plot, &samples, small::plots)
}

fn run_http(header: &header::Header, args: &http::HttpArgs) -> std::io::Result<()> {
    let experiment = http::run(args)?;
    print!("{}", http::tables(&experiment));
    report::write_outputs(
        header,
        args.run.json.as_deref(),
        &experiment,
        args.plot.dir.as_deref(),
        |dir| http::svg::plot(&experiment, dir),
    )
}

fn run_latency(header: &header::Header, args: &latency::LatencyArgs) -> std::io::Result<()> {
    let experiment = latency::run(args)?;
    print!("{}", latency::tables(&experiment));
    report::write_outputs(
        header,
        args.run.json.as_deref(),
        &experiment,
        args.plot.dir.as_deref(),
        |dir| latency::plots(&experiment, dir),
    )
}

fn run_rayon(header: &header::Header, args: &rayon_dropin::RayonArgs) -> std::io::Result<()> {
    let rows = rayon_dropin::run(args)?;
    println!(
        "both builds: release, codegen-units = {}",
        args.codegen_units
            .map_or("the profile's default (16)".to_string(), |n| n.to_string())
    );
    print!("{}", rayon_dropin::table(&rows));
    #[derive(serde::Serialize)]
    struct Body<'a> {
        codegen_units: Option<u32>,
        rows: &'a [rayon_dropin::Row],
    }
    let body = Body {
        codegen_units: args.codegen_units,
        rows: &rows,
    };
    report::write_outputs(header, args.run.json.as_deref(), &body, None, |_| {
        Ok(Vec::new())
    })
}

fn run_rayon_demo(
    header: &header::Header,
    args: &rayon_demo::RayonDemoArgs,
) -> std::io::Result<()> {
    let rows = rayon_demo::run(args)?;
    print!("{}", rayon_demo::table(&rows));
    // The JSON body is an object: the header's fields sit beside `rows`.
    #[derive(serde::Serialize)]
    struct Body<'a> {
        rows: &'a [rayon_demo::Row],
    }
    let body = Body { rows: &rows };
    report::write_outputs(
        header,
        args.json.as_deref(),
        &body,
        None,
        |_| Ok(Vec::new()),
    )
}

fn run_worklist(header: &header::Header, args: &worklist::WorklistArgs) -> std::io::Result<()> {
    let rows = worklist::run(args)?;
    print!("{}", worklist::table(&rows));
    report::write_samples(header, &args.run, &args.plot, &rows, worklist::plots)
}

/// The soak: its samples and checks are printed as they come; a failed
/// check makes the command fail, after the JSON is written.
fn run_soak(header: &header::Header, args: &soak::SoakArgs) -> std::io::Result<()> {
    let outcome = soak::run(args)?;
    report::write_outputs(header, args.json.as_deref(), &outcome, None, |_| {
        Ok(Vec::new())
    })?;
    if outcome.passed {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "soak failed: {}",
        outcome.failed().join(", ")
    )))
}

fn run_corun(header: &header::Header, args: &corun::CorunArgs) -> std::io::Result<()> {
    let samples = corun::run(args);
    print!("{}", corun::tables(&samples));
    report::write_samples(header, &args.run, &args.plot, &samples, corun::plots)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command};

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
        assert_eq!(args.run.repetitions(5, 2), 2);
        assert_eq!(
            args.run.json.as_deref(),
            Some("target/bench/queue.json".as_ref())
        );
        assert_eq!(args.plot.dir.as_deref(), Some("target/bench".as_ref()));
        assert_eq!(args.queue.threads, 8);
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
        assert_eq!(args.run.repetitions(7, 1), 7);
        assert_eq!(args.threads.count, 2);
        let Command::Http(args) = parse("bwos-bench http --repetitions 4 --threads 3") else {
            panic!("not http")
        };
        assert_eq!(args.run.repetitions(3, 1), 4);
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

    /// `report` gives every experiment a JSON file next to its own.
    #[test]
    fn report_names_the_json_files() {
        let Command::Report(args) = parse("bwos-bench report --json out/queue.json") else {
            panic!("not report")
        };
        let forkjoin = args.run.json_beside("forkjoin.json");
        assert_eq!(forkjoin.json.as_deref(), Some("out/forkjoin.json".as_ref()));
        let Command::Report(args) = parse("bwos-bench report") else {
            panic!("not report")
        };
        assert_eq!(args.run.json_beside("forkjoin.json").json, None);
    }
}
