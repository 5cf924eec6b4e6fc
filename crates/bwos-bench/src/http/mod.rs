//! `bwos-bench http`: a hyper 1.x server (hello world; POST /echo echoes)
//! on bwos, tokio and smol, the same service code, loaded on loopback by
//! wrk (or, where wrk is not installed, the built-in client of
//! [`client`]) with 50, 200 and 1000 connections for a fixed time per
//! point. With `--workload h2`: the same service over HTTP/2 (h2c) on
//! bwos and tokio (hyper's executor and timer of each: `bwos::hyper` and
//! hyper-util's tokio ones), loaded by `h2load` with 50, 200 and 1000
//! concurrent streams (10 connections, streams / 10 each). With
//! `--workload axum`: an axum router over HTTP/1.1, on bwos through
//! hyper-util's `TowerToHyperService`, on tokio with `axum::serve`.
//!
//! Each server runs in a process of its own (`bwos-bench http-server`),
//! started afresh per point and runtime, in rotating order. Reported:
//! requests per second, p50 and p99 latency (wrk's `--latency`), and the
//! server's CPU time per request from its own `/proc/<pid>/stat` (user +
//! system, all its threads). The load generator runs one thread on the
//! same two cores as the server: its CPU competes with the server's, as
//! in any loopback test, and the table says so.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::r#async::runtime::{AsyncRuntime, Bwos, Smol, Tokio};
use crate::experiment::{self, About, Options, Paper, Results, Run};
use crate::options::{OptionHelp, WorkerThreads};
use crate::progress::{self, Bar};
use crate::stats::Summary;

pub mod client;
pub mod server;
pub mod svg;

/// Which program loads the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadGenerator {
    /// wrk when it is installed, else the built-in client.
    Auto,
    /// `wrk -t1` (an error if it is not installed).
    Wrk,
    /// The built-in client: a hyper client on one thread.
    Builtin,
}

impl LoadGenerator {
    /// Resolves `Auto`; an error if wrk is asked for and missing.
    pub fn resolve(self) -> std::io::Result<LoadGenerator> {
        let wrk_installed = Command::new("wrk").arg("--version").output().is_ok();
        match self {
            LoadGenerator::Auto if wrk_installed => Ok(LoadGenerator::Wrk),
            LoadGenerator::Auto => Ok(LoadGenerator::Builtin),
            LoadGenerator::Wrk if !wrk_installed => Err(std::io::Error::other(
                "--load-generator wrk: wrk is not installed (Debian: apt-get install wrk); \
                 --load-generator builtin needs nothing",
            )),
            chosen => Ok(chosen),
        }
    }

    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            LoadGenerator::Wrk => "wrk -t1",
            LoadGenerator::Builtin => "the built-in client (hyper on one thread)",
            LoadGenerator::Auto => "wrk -t1 if installed, else the built-in client",
        }
    }
}

/// What the servers serve and how they are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// hyper HTTP/1.1 hello world: bwos, tokio and smol; `--connections`
    /// are connections (wrk or the built-in client).
    H1,
    /// hyper HTTP/2 without TLS (prior knowledge): bwos and tokio, loaded
    /// by h2load; `--connections` are concurrent streams.
    H2,
    /// An axum `Router` (`GET /`) over HTTP/1.1: on bwos through
    /// hyper-util's `TowerToHyperService` (the `axum_server` example's
    /// way), on tokio with `axum::serve`; wrk.
    Axum,
}

impl Workload {
    fn runtimes(self) -> &'static [&'static str] {
        match self {
            Workload::H1 => &RUNTIMES,
            Workload::H2 | Workload::Axum => &RUNTIMES[..2],
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Workload::H1 => "h1",
            Workload::H2 => "h2",
            Workload::Axum => "axum",
        }
    }
}

/// Connections h2load opens; the streams of a point are spread over them.
const H2_CONNECTIONS: u32 = 10;

/// Options of `bwos-bench http`.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpArgs {
    /// Open connections per load point.
    #[arg(long, value_delimiter = ',', default_values_t = [50u32, 200, 1000])]
    pub connections: Vec<u32>,
    /// Seconds of load per point.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub seconds: u32,
    /// The program that loads the servers (HTTP/1.1; HTTP/2 always uses
    /// h2load).
    #[arg(long, value_enum, default_value_t = LoadGenerator::Auto)]
    pub load_generator: LoadGenerator,
    /// hyper HTTP/1.1, hyper HTTP/2 (h2c, loaded by h2load), or an axum
    /// router over HTTP/1.1.
    #[arg(long, value_enum, default_value_t = Workload::H1)]
    pub workload: Workload,
}

impl OptionHelp for HttpArgs {
    const QUICK: &'static str = "A smoke run: one repetition of one second at 50 connections";
    const REPETITIONS: &'static str = "Repetitions of every point";
    const DEFAULT_REPETITIONS: u32 = 3;
    const PLOT: &'static str = "Write SVG plots (p99 latency and CPU per request against \
         throughput, as the BWoS paper's Figure 14) into this directory";
    const THREADS: &'static str = "Worker threads of every server runtime";
}

impl experiment::Experiment for HttpArgs {
    const NAME: &'static str = "http";
    const ABOUT: About = About {
        measures: "A hyper server (hello world) on bwos, tokio and smol, each in a process of \
                   its own, loaded on loopback by wrk (or the built-in client) at each \
                   connection count: requests per second, p50 and p99 latency, the server's CPU \
                   time per request.",
        better: "Higher requests/s is better; lower latency and CPU per request are better; \
                 bwos/peer req/s above 1 means bwos serves more.",
        paper: Some(Paper {
            figure: "BWoS (OSDI'23), Figure 14",
            claim: "Hyper on Tokio with the BWoS run queue, at 1k connections: 12.3% more \
                    throughput with 6.74% lower latency and 60.9% lower CPU utilization than \
                    Tokio's own queue.",
            machine: "two x86 machines (88 hyperthreads each) over 10 Gbps Ethernet: the server \
                      on one, wrk on the other",
            threads: "the server runtime's default (a worker per hyperthread), 100 to 10k \
                      connections",
            differs: "Here the load generator shares the machine's few cores with the server \
                      over loopback (its CPU competes with the server's), bwos is a different \
                      runtime rather than Tokio with another queue, and a --quick run measures \
                      one second at 50 connections.",
        }),
    };
    type Threads = WorkerThreads<HttpArgs>;
    type Body = Experiment;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let (connections, seconds) = points(options);
        let runtimes = options.own.workload.runtimes().len();
        let steps = (connections.len() * runtimes) as u64 * u64::from(options.run.repetitions(1));
        progress::Plan::steps(steps, f64::from(seconds) + 0.3)
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Experiment>> {
        let experiment = run(options, bar)?;
        Ok(Results {
            tables: tables(&experiment),
            figures: svg::figures(&experiment),
            result: result(&experiment),
            failures: Vec::new(),
            body: experiment,
        })
    }

    /// Every runtime at 200 and 1000 connections, one repetition of two
    /// seconds (one second at 50 connections with `--quick`).
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), Some(1)),
            threads: WorkerThreads::of(2),
            own: HttpArgs::short(),
        })
    }
}

impl HttpArgs {
    /// The short run of `report` and `headline`: 200 and 1000
    /// connections, two seconds a point, HTTP/1.1.
    pub fn short() -> HttpArgs {
        HttpArgs {
            connections: vec![200, 1000],
            seconds: 2,
            load_generator: LoadGenerator::Auto,
            workload: Workload::H1,
        }
    }
}

/// The connection counts and seconds per point, after `--quick`.
fn points(options: &Options<HttpArgs>) -> (Vec<u32>, u32) {
    if options.run.quick {
        (vec![50], 1)
    } else {
        (options.own.connections.clone(), options.own.seconds)
    }
}

/// This machine's figures for the paper's claim: bwos against tokio at
/// the largest connection count.
fn result(experiment: &Experiment) -> Option<String> {
    let most = experiment.samples.iter().map(|s| s.connections).max()?;
    let of = |runtime: &str, pick: fn(&Sample) -> f64| -> Vec<f64> {
        let mut picked: Vec<&Sample> = experiment
            .samples
            .iter()
            .filter(|s| s.runtime == runtime && s.connections == most)
            .collect();
        picked.sort_by_key(|s| s.repetition);
        picked.iter().map(|s| pick(s)).collect()
    };
    let ratio = |pick: fn(&Sample) -> f64| {
        Summary::of_ratios(&of(Bwos::NAME, pick), &of(Tokio::NAME, pick)).map(|r| r.median)
    };
    let rps = ratio(|s| s.requests_per_sec)?;
    let p99 = ratio(|s| s.p99_ms)?;
    let cpu = ratio(|s| s.cpu_us_per_request)?;
    Some(format!(
        "at {most} connections bwos serves {rps:.2}x tokio's requests/s, with {p99:.2}x its p99 \
         latency and {cpu:.2}x its CPU time per request (medians of paired ratios; load from {})",
        experiment.load_generator.describe()
    ))
}

/// The samples of one run and the program that produced the load; it
/// serializes as the body of `http`'s JSON file.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    /// Serialized as its description (`wrk -t1`, ..).
    #[serde(serialize_with = "describe")]
    pub load_generator: LoadGenerator,
    pub workload: Workload,
    pub samples: Vec<Sample>,
}

fn describe<S: serde::Serializer>(
    load_generator: &LoadGenerator,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(load_generator.describe())
}

/// One load point on one runtime in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub runtime: &'static str,
    pub connections: u32,
    pub repetition: u32,
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Server CPU time (user + system) per request, in microseconds.
    pub cpu_us_per_request: f64,
    /// Non-2xx responses and socket errors wrk reported.
    pub errors: u64,
}

const RUNTIMES: [&str; 3] = [Bwos::NAME, Tokio::NAME, Smol::NAME];

/// Runs the experiment; an error if the asked-for load generator is
/// missing or a server fails.
pub fn run(options: &Options<HttpArgs>, bar: &Bar) -> std::io::Result<Experiment> {
    let args = &options.own;
    let load_generator = match args.workload {
        Workload::H1 => args.load_generator.resolve()?,
        Workload::Axum => LoadGenerator::Wrk.resolve()?,
        Workload::H2 => {
            if Command::new("h2load").arg("--version").output().is_err() {
                return Err(std::io::Error::other(
                    "--workload h2: h2load is not installed (Debian: apt-get install nghttp2-client)",
                ));
            }
            LoadGenerator::Wrk
        }
    };
    let runtimes = args.workload.runtimes();
    let repetitions = options.run.repetitions(1);
    let (connections, seconds) = points(options);
    let mut samples = Vec::new();
    for &connections in &connections {
        for repetition in 0..repetitions {
            for offset in 0..runtimes.len() {
                let runtime = runtimes[(repetition as usize + offset) % runtimes.len()];
                bar.set_message(format!(
                    "{runtime} at {connections} connections, repetition {} of {repetitions}",
                    repetition + 1
                ));
                let point = Point {
                    runtime,
                    threads: options.threads.count,
                    connections,
                    seconds,
                    repetition,
                    load_generator,
                    workload: args.workload,
                };
                samples.push(measure(&point)?);
                bar.step();
            }
        }
    }
    Ok(Experiment {
        load_generator,
        workload: args.workload,
        samples,
    })
}

/// One measurement to take.
struct Point {
    runtime: &'static str,
    threads: u32,
    connections: u32,
    seconds: u32,
    repetition: u32,
    load_generator: LoadGenerator,
    workload: Workload,
}

/// A server process, killed when dropped.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn measure(point: &Point) -> std::io::Result<Sample> {
    let Point {
        runtime,
        threads,
        connections,
        seconds,
        repetition,
        load_generator,
        workload,
    } = *point;
    let mut child = ServerProcess(
        Command::new(std::env::current_exe()?)
            .args([
                "http-server",
                "--runtime",
                runtime,
                "--threads",
                &threads.to_string(),
                "--workload",
                workload.arg(),
            ])
            .stdout(Stdio::piped())
            .spawn()?,
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let port: u16 = line
        .strip_prefix("PORT ")
        .and_then(|port| port.trim().parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("the {runtime} server said {line:?}")))?;
    // Let the server's workers fall asleep before the load starts.
    std::thread::sleep(Duration::from_millis(100));
    let cpu_before = cpu_ticks(child.0.id())?;
    let parsed = if workload == Workload::H2 {
        h2load(port, connections, seconds)?
    } else if load_generator == LoadGenerator::Builtin {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        client::load(address, connections, Duration::from_secs(seconds.into()))?
    } else {
        let output = Command::new("wrk")
            .args([
                "-t1",
                &format!("-c{connections}"),
                &format!("-d{seconds}s"),
                "--latency",
                &format!("http://127.0.0.1:{port}/"),
            ])
            .output()?;
        let report = String::from_utf8_lossy(&output.stdout);
        LoadReport::parse_wrk(&report)
            .ok_or_else(|| std::io::Error::other(format!("unreadable wrk output:\n{report}")))?
    };
    let cpu_after = cpu_ticks(child.0.id())?;
    // Linux reports CPU time in USER_HZ ticks, 100 per second on every ABI.
    let cpu_us = (cpu_after - cpu_before) as f64 * 10_000.0;
    Ok(Sample {
        runtime,
        connections,
        repetition,
        requests_per_sec: parsed.requests_per_sec,
        p50_ms: parsed.p50_ms,
        p99_ms: parsed.p99_ms,
        cpu_us_per_request: cpu_us / parsed.requests.max(1) as f64,
        errors: parsed.errors,
    })
}

/// Loads `port` with h2load: `streams` concurrent streams over
/// [`H2_CONNECTIONS`] connections for `seconds`, one thread; latency
/// percentiles from its per-request log.
fn h2load(port: u16, streams: u32, seconds: u32) -> std::io::Result<LoadReport> {
    let connections = H2_CONNECTIONS.min(streams);
    let per_connection = streams.div_ceil(connections);
    let log = std::env::temp_dir().join(format!("bwos-bench-h2load-{}.log", std::process::id()));
    let output = Command::new("h2load")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-m{per_connection}"),
            &format!("-D{seconds}"),
            "--log-file",
            log.to_str().expect("a UTF-8 temporary path"),
            &format!("http://127.0.0.1:{port}/"),
        ])
        .output()?;
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    LoadReport::parse_h2load(&report, &log_text)
        .ok_or_else(|| std::io::Error::other(format!("unreadable h2load output:\n{report}")))
}

/// User plus system CPU ticks of process `pid`, all threads.
fn cpu_ticks(pid: u32) -> std::io::Result<u64> {
    bwos_testkit::proc::cpu_ticks(std::path::Path::new(&format!("/proc/{pid}/stat")))
}

/// What the report needs from a load generator.
#[derive(Debug, PartialEq)]
pub struct LoadReport {
    requests: u64,
    requests_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

impl LoadReport {
    /// Reads wrk's `--latency` output.
    fn parse_wrk(text: &str) -> Option<LoadReport> {
        let mut report = LoadReport {
            requests: 0,
            requests_per_sec: f64::NAN,
            p50_ms: f64::NAN,
            p99_ms: f64::NAN,
            errors: 0,
        };
        for line in text.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["Requests/sec:", value, ..] => report.requests_per_sec = value.parse().ok()?,
                ["50%", value, ..] => report.p50_ms = millis(value)?,
                ["99%", value, ..] => report.p99_ms = millis(value)?,
                [count, "requests", "in", ..] => report.requests = count.parse().ok()?,
                ["Non-2xx", "or", "3xx", "responses:", count, ..] => {
                    report.errors += count.parse::<u64>().ok()?;
                }
                ["Socket", "errors:", rest @ ..] => {
                    report.errors += rest
                        .iter()
                        .filter_map(|word| word.trim_end_matches(',').parse::<u64>().ok())
                        .sum::<u64>();
                }
                _ => {}
            }
        }
        (!report.requests_per_sec.is_nan()).then_some(report)
    }
}

impl LoadReport {
    /// Reads h2load's summary (`finished in 3.00s, 1234.5 req/s, ..`,
    /// `requests: N total, .. S succeeded, F failed, E errored, T timeout`)
    /// and its `--log-file` (one request a line: start, status, duration
    /// in microseconds) for the latency percentiles.
    fn parse_h2load(summary: &str, log: &str) -> Option<LoadReport> {
        let mut report = LoadReport {
            requests: 0,
            requests_per_sec: f64::NAN,
            p50_ms: f64::NAN,
            p99_ms: f64::NAN,
            errors: 0,
        };
        for line in summary.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["finished", "in", _, rate, "req/s,", ..] => {
                    report.requests_per_sec = rate.parse().ok()?;
                }
                [
                    "requests:",
                    _,
                    "total,",
                    _,
                    "started,",
                    _,
                    "done,",
                    succeeded,
                    "succeeded,",
                    failed,
                    "failed,",
                    errored,
                    "errored,",
                    timeout,
                    "timeout",
                ] => {
                    report.requests = succeeded.parse().ok()?;
                    report.errors = failed.parse::<u64>().ok()?
                        + errored.parse::<u64>().ok()?
                        + timeout.parse::<u64>().ok()?;
                }
                _ => {}
            }
        }
        let mut micros: Vec<f64> = log
            .lines()
            .filter_map(|line| line.split_whitespace().nth(2)?.parse().ok())
            .collect();
        micros.sort_by(f64::total_cmp);
        let quantile = |q: f64| {
            let rank = ((micros.len() as f64 * q).ceil() as usize).clamp(1, micros.len());
            micros[rank - 1] / 1000.0
        };
        if !micros.is_empty() {
            report.p50_ms = quantile(0.50);
            report.p99_ms = quantile(0.99);
        }
        (!report.requests_per_sec.is_nan()).then_some(report)
    }
}

/// A wrk duration (`812.00us`, `1.23ms`, `2.00s`) in milliseconds.
fn millis(value: &str) -> Option<f64> {
    let split = value.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => number / 1000.0,
        "ms" => number,
        "s" => number * 1000.0,
        "m" => number * 60_000.0,
        _ => return None,
    })
}

/// Tables: per connection count and runtime the medians (min-max) of
/// throughput, latency and CPU per request, and each peer's paired ratio.
pub fn tables(experiment: &Experiment) -> String {
    let samples = &experiment.samples;
    let (title, load, unit) = match experiment.workload {
        Workload::H1 => (
            "HTTP/1.1",
            experiment.load_generator.describe(),
            "connections",
        ),
        Workload::Axum => (
            "HTTP/1.1, an axum Router",
            experiment.load_generator.describe(),
            "connections",
        ),
        Workload::H2 => (
            "HTTP/2 (h2c)",
            "h2load -t1 (10 connections, streams / 10 concurrent streams each)",
            "streams",
        ),
    };
    let mut out = format!(
        "\n## {title}: hyper hello world on loopback, load from {load} (1 thread, sharing the machine's cores with the server)\n\
         medians over repetitions (min-max); bwos/peer is the paired ratio of requests per second\n\n\
         | {unit} | runtime | req/s | p50 ms | p99 ms | CPU µs/req | errors | bwos/peer req/s |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut points: Vec<u32> = samples.iter().map(|s| s.connections).collect();
    points.dedup();
    for connections in points {
        let of = |runtime: &str, pick: fn(&Sample) -> f64| -> Vec<f64> {
            let mut picked: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.runtime == runtime && s.connections == connections)
                .collect();
            picked.sort_by_key(|s| s.repetition);
            picked.iter().map(|s| pick(s)).collect()
        };
        let bwos_rps = of(Bwos::NAME, |s| s.requests_per_sec);
        for &runtime in experiment.workload.runtimes() {
            let cell = |values: Vec<f64>, digits: usize| match Summary::of(&values) {
                Some(s) => format!(
                    "{:.digits$} ({:.digits$}-{:.digits$})",
                    s.median, s.min, s.max
                ),
                None => "-".into(),
            };
            let errors: u64 = samples
                .iter()
                .filter(|s| s.runtime == runtime && s.connections == connections)
                .map(|s| s.errors)
                .sum();
            let ratio = if runtime == Bwos::NAME {
                "-".to_string()
            } else {
                match Summary::of_ratios(&bwos_rps, &of(runtime, |s| s.requests_per_sec)) {
                    Some(r) => format!("{:.2} ({:.2}-{:.2})", r.median, r.min, r.max),
                    None => "-".into(),
                }
            };
            let _ = writeln!(
                out,
                "| {connections} | {runtime} | {} | {} | {} | {} | {errors} | {ratio} |",
                cell(of(runtime, |s| s.requests_per_sec), 0),
                cell(of(runtime, |s| s.p50_ms), 2),
                cell(of(runtime, |s| s.p99_ms), 2),
                cell(of(runtime, |s| s.cpu_us_per_request), 1),
            );
        }
    }
    out
}

/// Options of the hidden `http-server` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// bwos, tokio or smol.
    #[arg(long)]
    pub runtime: String,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// What to serve.
    #[arg(long, value_enum, default_value_t = Workload::H1)]
    pub workload: Workload,
}

impl Run for ServerArgs {
    fn run(&self) -> io::Result<()> {
        serve(self)
    }
}

/// Serves on a free loopback port (printed as `PORT <n>`) until killed.
pub fn serve(args: &ServerArgs) -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    println!("PORT {}", listener.local_addr()?.port());
    match (args.runtime.as_str(), args.workload) {
        ("bwos", Workload::H1) => server::serve_bwos(Bwos::start(args.threads), listener),
        ("smol", Workload::H1) => server::serve_async_io(Smol::start(args.threads), listener),
        ("tokio", Workload::H1) => server::serve_tokio(Tokio::start(args.threads), listener),
        ("bwos", Workload::H2) => server::serve_bwos_h2(Bwos::start(args.threads), listener),
        ("tokio", Workload::H2) => server::serve_tokio_h2(Tokio::start(args.threads), listener),
        ("bwos", Workload::Axum) => server::serve_bwos_axum(Bwos::start(args.threads), listener),
        ("tokio", Workload::Axum) => server::serve_tokio_axum(Tokio::start(args.threads), listener),
        ("smol", Workload::H2 | Workload::Axum) => Err(std::io::Error::other(
            "the HTTP/2 and axum benchmarks run bwos and tokio only",
        )),
        other => Err(std::io::Error::other(format!(
            "unknown runtime {other:?} (expected bwos, tokio or smol)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2load_output_and_log_are_parsed() {
        let summary = "finished in 3.00s, 150000.50 req/s, 5.00MB/s\n\
                       requests: 450002 total, 450100 started, 450002 done, 449990 succeeded, 10 failed, 2 errored, 0 timeout\n";
        let log: String = (1..=100)
            .map(|i| format!("1700000000000000\t200\t{}\n", i * 10))
            .collect();
        let report = LoadReport::parse_h2load(summary, &log).unwrap();
        assert_eq!(report.requests_per_sec, 150000.50);
        assert_eq!(report.requests, 449990);
        assert_eq!(report.errors, 12);
        assert_eq!(report.p50_ms, 0.5);
        assert_eq!(report.p99_ms, 0.99);
        assert!(LoadReport::parse_h2load("garbage", "").is_none());
    }

    #[test]
    fn wrk_output_is_parsed() {
        let text = "Running 1s test @ http://127.0.0.1:1/\n  1 threads and 50 connections\n\
            Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
            Latency   812.00us  100.00us   2.00ms   90.00%\n\
            Latency Distribution\n     50%  800.00us\n     75%    1.00ms\n     90%    1.20ms\n     99%    1.50ms\n\
            45000 requests in 1.00s, 3.00MB read\n  Socket errors: connect 0, read 2, write 0, timeout 1\n\
            Requests/sec:  45000.00\nTransfer/sec:      3.00MB\n";
        let report = LoadReport::parse_wrk(text).unwrap();
        assert_eq!(
            report,
            LoadReport {
                requests: 45000,
                requests_per_sec: 45000.0,
                p50_ms: 0.8,
                p99_ms: 1.5,
                errors: 3,
            }
        );
        assert!(LoadReport::parse_wrk("garbage").is_none());
        assert_eq!(millis("2.00s"), Some(2000.0));
        assert_eq!(millis("12"), None);
    }
}
