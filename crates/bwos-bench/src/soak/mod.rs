//! `bwos-bench soak`: a mixed workload on one bwos pool for a long time
//! (60 s by default, an hour with `--duration 1h`), checking that nothing
//! the process holds grows while it runs. The workload (`workload.rs`):
//! HTTP on loopback (a hyper server on `bwos::net` and client tasks that
//! open, use and close connections), fork/join (`join`, `scope`), work
//! lists, timers (`sleep`, `timeout`, `interval`), `spawn_blocking`, and
//! tasks spawned and dropped (detached, aborted, cancelled with their
//! `JoinSet`).
//!
//! Every `--interval` it samples the process's resident memory (`VmRSS`),
//! threads (`/proc/self/task`), open descriptors (`/proc/self/fd`), the
//! workload's live tasks (futures spawned and not yet dropped: `PoolStats`
//! has no such figure, so the workload counts them) and the operations
//! each part completed. Samples taken in the first `--warmup` (a fifth of
//! the run) are shown but not checked.
//!
//! # The verdict
//! The run passes when every check below does; otherwise the command
//! exits non-zero after the table, the checks and the JSON.
//!
//! - **Flat figures.** Of the `n` samples after warm-up, `k = min(5, n/2)`:
//!   the *first* value is the median of the first `k`, the *last* the
//!   median of the last `k` (a spike in one sample does not move it); growth is last - first. A figure passes when growth
//!   ≤ max(`--tolerance` (5) % of first, its slack). The slack covers what
//!   the workload holds for a moment by design, so that a figure sampled
//!   at a busy instant does not look like a leak: RSS 1 MiB (page-grain
//!   jitter of the allocator and of threads' stacks), threads 4 (room for
//!   blocking threads beyond the 4 that the part's closures in flight
//!   need: the blocking pool counts a thread on its way back as a taker
//!   and starts none under this load, but a surplus would exit after its
//!   keep-alive, while a leak outgrows any constant), descriptors 2 × `--connections` + 4
//!   (both ends of each connection, opened and closed continually), live
//!   tasks a timer batch + a dropped round + 3 × `--connections` (the
//!   most the workload holds at once beyond its steady loops). A leak
//!   outgrows them within minutes: these bounds are per run, not per op.
//! - **Progress.** Every part, and every HTTP client, completed
//!   operations in every interval after warm-up (nothing hung). A client
//!   without an answer is also printed under its row as the sample is
//!   taken, with its step and its connection's two sockets as the kernel
//!   sees them (state, bytes queued to send and to read): bytes waiting
//!   to be read by a task that sleeps are a lost wake-up.
//! - **No errors.** Every error of the workload (a failed request or
//!   connection, a wrong result, a panic, a timer that misbehaved) is
//!   counted and the first 20 are kept with their message; any fails
//!   the run.
//! - **Stop.** After the run, every loop, thread and task of the workload
//!   ends within 10 s and the live-task count is back to 0.
//! - **Pool drop.** Dropping the pool then brings threads and descriptors
//!   back to what they were before it was built (within 5 s).

pub mod probe;
mod workload;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::experiment::Run;
use crate::header::Header;
use crate::options::{ThreadsHelp, WorkerThreads};
use crate::output;
use probe::Resources;
use workload::{Part, Running};

/// The run's length without `--duration`.
const DEFAULT_DURATION: Duration = Duration::from_secs(60);
/// The run's length with `--quick`.
const QUICK_DURATION: Duration = Duration::from_secs(6);
/// How long the workload may take to stop, and the pool to let go.
const STOP_GRACE: Duration = Duration::from_secs(10);
const DROP_GRACE: Duration = Duration::from_secs(5);
/// Absolute slack of the RSS check, KiB.
const RSS_SLACK_KIB: f64 = 1024.0;
/// Absolute slack of the thread check.
const THREAD_SLACK: f64 = 4.0;

/// Options of `bwos-bench soak`.
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// A smoke run: 6 s, a sample every 0.5 s, warm-up 1.2 s.
    #[arg(long)]
    pub quick: bool,
    /// How long the workload runs: 90, 90s, 1500ms, 10m, 1h (a bare number
    /// is seconds) [default: 60s].
    #[arg(long, visible_alias = "seconds", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Time between samples [default: a twentieth of the run, between 1 s
    /// and 30 s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,
    /// Samples taken this early are not checked [default: a fifth of the
    /// run].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// HTTP client connections open at once (each reconnects after 1 to 32
    /// requests).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub connections: u32,
    /// The pool's `max_blocking_threads` (default: the pool's own
    /// default). The blocking part keeps 4 closures in flight; threads
    /// started beyond those exit after their keep-alive, and a count that
    /// ratchets up fails the thread check.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(4..=512))]
    pub max_blocking_threads: u32,
    /// Growth allowed, percent of a figure's first samples after warm-up.
    #[arg(long, default_value_t = 5.0)]
    pub tolerance: f64,
    /// `--threads`.
    #[command(flatten)]
    pub threads: WorkerThreads<SoakArgs>,
    /// Write the settings, samples, checks and errors to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl ThreadsHelp for SoakArgs {
    const THREADS: &'static str = "Worker threads of the pool";
}

/// The soak: its samples and checks are printed as they come; a failed
/// check makes the command fail, after the JSON is written.
impl Run for SoakArgs {
    fn run(&self) -> std::io::Result<()> {
        let header = Header::collect();
        print!("{}", header.render());
        let outcome = run(self)?;
        if let Some(path) = &self.json {
            output::write_json(&header, &outcome, path)?;
            println!("\nwrote {}", path.display());
        }
        if outcome.passed {
            return Ok(());
        }
        Err(std::io::Error::other(format!(
            "soak failed: {}",
            outcome.failed().join(", ")
        )))
    }
}

/// `90`, `90s`, `1500ms`, `10m`, `1h`, `0.5s`: a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a number and a unit (ms, s, m, h), e.g. 60s"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("{text:?}: unknown unit {other:?} (ms, s, m, h)")),
    };
    let seconds = value * scale;
    if !(0.0..=1e7).contains(&seconds) {
        return Err(format!("{text:?}: out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The settings a run resolved from its options.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub duration_s: f64,
    pub interval_s: f64,
    pub warmup_s: f64,
    pub threads: u32,
    pub connections: u32,
    pub max_blocking_threads: u32,
    pub tolerance_percent: f64,
}

impl Settings {
    /// Resolves `args`; an error says which option to change.
    pub fn of(args: &SoakArgs) -> Result<Settings, String> {
        let duration = args.duration.unwrap_or(if args.quick {
            QUICK_DURATION
        } else {
            DEFAULT_DURATION
        });
        if duration.is_zero() {
            return Err("--duration must be positive".into());
        }
        let interval = args.interval.unwrap_or(if args.quick {
            Duration::from_millis(500)
        } else {
            (duration / 20).clamp(Duration::from_secs(1), Duration::from_secs(30))
        });
        if interval < Duration::from_millis(10) {
            return Err("--interval must be at least 10ms".into());
        }
        let warmup = args.warmup.unwrap_or(duration / 5);
        // Samples are taken at 0, interval, 2 interval, .. up to duration;
        // those at warm-up or later are checked.
        let (d, w, i) = (
            duration.as_secs_f64(),
            warmup.as_secs_f64(),
            interval.as_secs_f64(),
        );
        let checked = (d / i).floor() - (w / i).ceil() + 1.0;
        if checked < 2.0 {
            return Err(format!(
                "{} sample(s) after a warm-up of {warmup:?} in {duration:?}, one every \
                 {interval:?}: the checks need 2 or more (a shorter --interval or --warmup, or \
                 a longer --duration)",
                checked.max(0.0)
            ));
        }
        if !(args.tolerance >= 0.0 && args.tolerance.is_finite()) {
            return Err("--tolerance must be a percentage, 0 or more".into());
        }
        Ok(Settings {
            duration_s: duration.as_secs_f64(),
            interval_s: interval.as_secs_f64(),
            warmup_s: warmup.as_secs_f64(),
            threads: args.threads.count,
            connections: args.connections,
            max_blocking_threads: args.max_blocking_threads,
            tolerance_percent: args.tolerance,
        })
    }
}

/// One sample of the running workload.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the workload started.
    pub at_s: f64,
    /// Taken during warm-up: shown, not checked.
    pub warmup: bool,
    #[serde(flatten)]
    pub resources: Resources,
    /// Futures the workload spawned and has not yet dropped.
    pub live_tasks: i64,
    /// Operations completed since the start, per part (`parts` order).
    pub ops: Vec<u64>,
    /// Errors since the start, all parts.
    pub errors: u64,
    /// The HTTP clients that received no answer since the sample before,
    /// each with its step and its connection's sockets as the kernel sees
    /// them (`Shared::client_report`).
    pub stalled_clients: Vec<String>,
}

/// One check of the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    /// Flat figures only: the medians of the first and last samples after
    /// warm-up, and the growth allowed.
    pub first: Option<f64>,
    pub last: Option<f64>,
    pub allowed_growth: Option<f64>,
    pub detail: String,
}

/// Everything a run found: the JSON body.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub settings: Settings,
    pub parts: Vec<&'static str>,
    /// Before the pool was built, and after it was dropped.
    pub before_pool: Resources,
    pub after_drop: Resources,
    pub samples: Vec<Sample>,
    pub checks: Vec<Check>,
    /// Errors per part (`parts` order) and the first messages.
    pub errors: Vec<u64>,
    pub error_messages: Vec<String>,
    pub passed: bool,
}

impl Outcome {
    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect()
    }
}

/// Runs the soak, printing each sample as it is taken, then the checks.
pub fn run(args: &SoakArgs) -> std::io::Result<Outcome> {
    let settings = Settings::of(args).map_err(std::io::Error::other)?;
    println!(
        "\n## Soak: a mixed workload on one pool ({} threads) for {:.0} s, a sample every {:.1} s, \
         checked after {:.1} s of warm-up",
        settings.threads, settings.duration_s, settings.interval_s, settings.warmup_s
    );
    println!(
        "parts: http ({} client connections), fork/join, worklist, timers, blocking (at most \
         {} threads), dropped; ops are per interval; rows marked w are warm-up\n",
        settings.connections, settings.max_blocking_threads
    );
    println!("{}", row_header());
    let before_pool = Resources::now();
    let pool = bwos::ThreadPoolBuilder::new()
        .num_threads(settings.threads as usize)
        .thread_name(|i| format!("soak worker {i}"))
        .max_blocking_threads(settings.max_blocking_threads as usize)
        .build()
        .map_err(std::io::Error::other)?;
    let pool = Arc::new(pool);
    let running = Running::start(Arc::clone(&pool), settings.connections)?;
    let shared = Arc::clone(running.shared());
    let start = Instant::now();
    let interval = Duration::from_secs_f64(settings.interval_s);
    let duration = Duration::from_secs_f64(settings.duration_s);
    let mut samples: Vec<Sample> = Vec::new();
    let mut tick = 0u32;
    let mut answers_before: Option<Vec<u64>> = None;
    loop {
        let at = start.elapsed();
        let counts = shared.counts();
        let answers = shared.client_answers();
        let stalled_clients: Vec<String> = match &answers_before {
            Some(before) => (0..answers.len())
                .filter(|&client| answers[client] == before[client])
                .map(|client| shared.client_report(client))
                .collect(),
            None => Vec::new(),
        };
        answers_before = Some(answers);
        let sample = Sample {
            at_s: at.as_secs_f64(),
            warmup: at.as_secs_f64() < settings.warmup_s,
            resources: Resources::now(),
            live_tasks: shared.live_tasks(),
            ops: counts.ops.to_vec(),
            errors: counts.total_errors(),
            stalled_clients,
        };
        println!("{}", render_row(&sample, samples.last()));
        for stalled in &sample.stalled_clients {
            println!("   no answer in this interval: {stalled}");
        }
        let _ = std::io::stdout().flush();
        samples.push(sample);
        tick += 1;
        let next = interval * tick;
        if next > duration + interval / 2 {
            break;
        }
        std::thread::sleep(next.saturating_sub(start.elapsed()));
    }
    let stuck = running.stop(STOP_GRACE);
    let live_after_stop = shared.live_tasks();
    // Which kinds of task outlived the stop: "server connection 5, ...".
    let live_kinds = shared
        .live_by_kind()
        .iter()
        .map(|(kind, n)| format!("{} {n}", kind.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let live_after_stop_text = if live_kinds.is_empty() {
        format!("{live_after_stop}")
    } else {
        format!("{live_after_stop} ({live_kinds})")
    };
    let after_drop = if stuck.is_empty() {
        drop_pool(pool, before_pool)
    } else {
        // Something still runs on the pool: dropping it could hang. The
        // process is about to exit anyway.
        std::mem::forget(pool);
        Resources::now()
    };
    let counts = shared.counts();
    let mut checks = flat_checks(&samples, &settings);
    checks.push(progress_check(&samples));
    checks.push(Check {
        name: "no errors".into(),
        passed: counts.total_errors() == 0,
        first: None,
        last: None,
        allowed_growth: None,
        detail: format!("{} error(s)", counts.total_errors()),
    });
    checks.push(Check {
        name: "stop".into(),
        passed: stuck.is_empty() && live_after_stop == 0,
        first: None,
        last: None,
        allowed_growth: None,
        detail: if stuck.is_empty() {
            format!("all stopped; live tasks after stop: {live_after_stop_text}")
        } else {
            format!(
                "{}; live tasks after stop: {live_after_stop_text}",
                stuck.join("; ")
            )
        },
    });
    checks.push(pool_drop_check(before_pool, after_drop));
    let passed = checks.iter().all(|c| c.passed);
    let outcome = Outcome {
        settings,
        parts: Part::ALL.iter().map(|p| p.name()).collect(),
        before_pool,
        after_drop,
        samples,
        checks,
        errors: counts.errors.to_vec(),
        error_messages: shared.messages(),
        passed,
    };
    print!("{}", summary(&outcome));
    Ok(outcome)
}

/// Drops the pool and waits up to [`DROP_GRACE`] for threads and
/// descriptors to come back to `before`; returns what they came to.
fn drop_pool(pool: Arc<bwos::ThreadPool>, before: Resources) -> Resources {
    drop(pool);
    let deadline = Instant::now() + DROP_GRACE;
    loop {
        let now = Resources::now();
        let back = now.threads <= before.threads && now.fds <= before.fds;
        if back || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pool_drop_check(before: Resources, after: Resources) -> Check {
    let show = |value: Option<u64>| value.map_or("?".into(), |v| v.to_string());
    let passed = after.threads <= before.threads && after.fds <= before.fds;
    let survivors = if passed {
        String::new()
    } else {
        format!(
            "; threads now: {}",
            bwos_testkit::proc::thread_names()
                .unwrap_or_default()
                .join(", ")
        )
    };
    Check {
        name: "pool drop".into(),
        passed,
        first: None,
        last: None,
        allowed_growth: None,
        detail: format!(
            "threads {} -> {}, descriptors {} -> {} (before the pool -> after its drop){survivors}",
            show(before.threads),
            show(after.threads),
            show(before.fds),
            show(after.fds)
        ),
    }
}

/// The medians of the first and last `k = min(5, n/2)` of `values` (the
/// samples after warm-up); `None` with fewer than 2. Medians, not means:
/// a leak grows every sample, while a figure the workload holds for a
/// moment (blocking threads started during a burst, which leave after
/// their keep-alive) spikes in one sample and would move a mean.
pub fn first_and_last(values: &[f64]) -> Option<(f64, f64)> {
    let k = (values.len() / 2).min(5);
    if k == 0 {
        return None;
    }
    let median = |part: &[f64]| {
        let mut sorted = part.to_vec();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        }
    };
    Some((median(&values[..k]), median(&values[values.len() - k..])))
}

/// The growth allowed on a figure whose first value is `first`.
pub fn allowed_growth(first: f64, tolerance_percent: f64, slack: f64) -> f64 {
    (first * tolerance_percent / 100.0).max(slack)
}

fn flat_checks(samples: &[Sample], settings: &Settings) -> Vec<Check> {
    let checked: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    let connections = f64::from(settings.connections);
    let live_slack = (workload::TIMER_BATCH + workload::DROPPED_ROUND) as f64 + 3.0 * connections;
    type Figure = (&'static str, f64, fn(&Sample) -> Option<f64>);
    let figures: [Figure; 4] = [
        ("RSS KiB", RSS_SLACK_KIB, |s| {
            s.resources.rss_kib.map(|v| v as f64)
        }),
        ("threads", THREAD_SLACK, |s| {
            s.resources.threads.map(|v| v as f64)
        }),
        ("descriptors", 2.0 * connections + 4.0, |s| {
            s.resources.fds.map(|v| v as f64)
        }),
        ("live tasks", live_slack, |s| Some(s.live_tasks as f64)),
    ];
    figures
        .into_iter()
        .map(|(name, slack, value)| {
            let values: Option<Vec<f64>> = checked.iter().map(|s| value(s)).collect();
            let Some((first, last)) = values.as_deref().and_then(first_and_last) else {
                return Check {
                    name: format!("flat {name}"),
                    passed: true,
                    first: None,
                    last: None,
                    allowed_growth: None,
                    detail: "not measured on this system".into(),
                };
            };
            let allowed = allowed_growth(first, settings.tolerance_percent, slack);
            let growth = last - first;
            Check {
                name: format!("flat {name}"),
                passed: growth <= allowed,
                first: Some(first),
                last: Some(last),
                allowed_growth: Some(allowed),
                detail: format!("grew {growth:.1} of {allowed:.1} allowed"),
            }
        })
        .collect()
}

fn progress_check(samples: &[Sample]) -> Check {
    let mut stalls = Vec::new();
    for pair in samples.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if after.warmup {
            continue;
        }
        for (i, part) in Part::ALL.iter().enumerate() {
            if after.ops[i] <= before.ops[i] {
                stalls.push(format!("{} at {:.1} s", part.name(), after.at_s));
            }
        }
        for client in &after.stalled_clients {
            stalls.push(format!("{client} at {:.1} s", after.at_s));
        }
    }
    Check {
        name: "progress".into(),
        passed: stalls.is_empty(),
        first: None,
        last: None,
        allowed_growth: None,
        detail: if stalls.is_empty() {
            "every part and every HTTP client completed operations in every interval".into()
        } else {
            format!("no operation in the interval ending: {}", stalls.join(", "))
        },
    }
}

fn row_header() -> String {
    let mut out = format!(
        "{:>8} {:>8} {:>7} {:>5} {:>6} |",
        "time s", "RSS MiB", "threads", "fds", "live"
    );
    for part in Part::ALL {
        let _ = write!(out, " {:>9}", part.name());
    }
    out.push_str(" | errors");
    out
}

fn render_row(sample: &Sample, previous: Option<&Sample>) -> String {
    let show = |value: Option<u64>| value.map_or("?".into(), |v| v.to_string());
    let mut out = format!(
        "{:>7.1}{} {:>8} {:>7} {:>5} {:>6} |",
        sample.at_s,
        if sample.warmup { "w" } else { " " },
        sample
            .resources
            .rss_kib
            .map_or("?".into(), |kib| format!("{:.1}", kib as f64 / 1024.0)),
        show(sample.resources.threads),
        show(sample.resources.fds),
        sample.live_tasks
    );
    for (i, &ops) in sample.ops.iter().enumerate() {
        let before = previous.map_or(0, |p| p.ops[i]);
        let _ = write!(out, " {:>9}", ops.saturating_sub(before));
    }
    let _ = write!(out, " | {}", sample.errors);
    out
}

/// The checks, the errors and the verdict.
pub fn summary(outcome: &Outcome) -> String {
    let mut out = String::from(
        "\n| check | first | last | allowed growth | result |\n|---|---|---|---|---|\n",
    );
    let number = |value: Option<f64>| value.map_or("-".into(), |v| format!("{v:.1}"));
    for check in &outcome.checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {}: {} |",
            check.name,
            number(check.first),
            number(check.last),
            number(check.allowed_growth),
            if check.passed { "pass" } else { "FAIL" },
            check.detail
        );
    }
    let last = outcome.samples.last();
    let _ = write!(out, "\noperations:");
    for (i, part) in outcome.parts.iter().enumerate() {
        let ops = last.map_or(0, |s| s.ops[i]);
        let _ = write!(out, " {part} {ops} ({} errors);", outcome.errors[i]);
    }
    out.push('\n');
    for message in &outcome.error_messages {
        let _ = writeln!(out, "  error: {message}");
    }
    if outcome.passed {
        out.push_str(
            "verdict: PASS (nothing grew, no errors, everything stopped and was released)\n",
        );
    } else {
        let _ = writeln!(out, "verdict: FAIL ({})", outcome.failed().join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn first_and_last_are_medians_of_up_to_five() {
        assert_eq!(first_and_last(&[1.0]), None);
        assert_eq!(first_and_last(&[1.0, 5.0]), Some((1.0, 5.0)));
        assert_eq!(
            first_and_last(&[1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 40.0]),
            Some((2.0, 30.0))
        );
        // One spike among the last five does not move it; steady growth does.
        let spike = [13.0, 13.0, 14.0, 13.0, 13.0, 13.0, 21.0, 13.0, 14.0, 13.0];
        assert_eq!(first_and_last(&spike), Some((13.0, 13.0)));
        let leak = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0];
        assert_eq!(first_and_last(&leak), Some((12.0, 17.0)));
        assert_eq!(allowed_growth(1000.0, 5.0, 4.0), 50.0);
        assert_eq!(allowed_growth(10.0, 5.0, 4.0), 4.0);
    }

    fn sample(at_s: f64, warmup: bool, rss_kib: u64, live_tasks: i64, ops: u64) -> Sample {
        Sample {
            at_s,
            warmup,
            resources: Resources {
                rss_kib: Some(rss_kib),
                threads: Some(10),
                fds: Some(20),
            },
            live_tasks,
            ops: vec![ops; Part::ALL.len()],
            errors: 0,
            stalled_clients: Vec::new(),
        }
    }

    fn settings() -> Settings {
        Settings {
            duration_s: 10.0,
            interval_s: 1.0,
            warmup_s: 2.0,
            threads: 2,
            connections: 8,
            max_blocking_threads: 8,
            tolerance_percent: 5.0,
        }
    }

    /// Warm-up growth is ignored; growth after it beyond the bound fails
    /// the figure, growth within it does not.
    #[test]
    fn only_growth_after_warm_up_beyond_the_bound_fails() {
        let mut samples: Vec<Sample> = (0..10u32)
            .map(|i| {
                sample(
                    f64::from(i),
                    i < 2,
                    20_000 + 100 * u64::from(i),
                    100,
                    u64::from(i),
                )
            })
            .collect();
        samples[0].resources.rss_kib = Some(1_000);
        let checks = flat_checks(&samples, &settings());
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");
        for (i, s) in samples.iter_mut().enumerate() {
            s.live_tasks = 100 + 50 * i as i64;
        }
        let checks = flat_checks(&samples, &settings());
        let live = checks.iter().find(|c| c.name == "flat live tasks").unwrap();
        assert!(!live.passed, "{live:?}");
        assert!(progress_check(&samples).passed);
        samples[6].ops = samples[5].ops.clone();
        let progress = progress_check(&samples);
        assert!(!progress.passed);
        assert!(progress.detail.contains("at 6.0 s"), "{}", progress.detail);
        // One HTTP client without an answer fails it too, named.
        samples[6].ops = vec![6; Part::ALL.len()];
        assert!(progress_check(&samples).passed);
        samples[8].stalled_clients = vec!["http client 3 (awaiting a response; ...)".into()];
        let progress = progress_check(&samples);
        assert!(!progress.passed);
        assert!(
            progress
                .detail
                .contains("http client 3 (awaiting a response; ...) at 8.0 s"),
            "{}",
            progress.detail
        );
    }

    #[test]
    fn settings_need_two_samples_after_warm_up() {
        let args = |line: &str| {
            #[derive(clap::Parser)]
            struct Cli {
                #[command(flatten)]
                soak: SoakArgs,
            }
            <Cli as clap::Parser>::try_parse_from(line.split_whitespace())
                .unwrap()
                .soak
        };
        let quick = Settings::of(&args("soak --quick")).unwrap();
        assert_eq!((quick.duration_s, quick.interval_s), (6.0, 0.5));
        let long = Settings::of(&args("soak --duration 1h")).unwrap();
        assert_eq!((long.interval_s, long.warmup_s), (30.0, 720.0));
        let seconds = Settings::of(&args("soak --seconds 100")).unwrap();
        assert_eq!(seconds.interval_s, 5.0);
        assert!(Settings::of(&args("soak --duration 2s --interval 1s")).is_ok());
        assert!(Settings::of(&args("soak --duration 2s --interval 1s --warmup 1.5s")).is_err());
        assert!(Settings::of(&args("soak --duration 10s --warmup 10s")).is_err());
    }

    /// A short run of the whole workload passes its checks.
    #[test]
    fn a_short_soak_passes() {
        bwos_testkit::watchdog("a_short_soak_passes", || {
            let args = SoakArgs {
                quick: true,
                duration: Some(Duration::from_secs(2)),
                interval: Some(Duration::from_millis(250)),
                warmup: Some(Duration::from_millis(500)),
                connections: 2,
                max_blocking_threads: 8,
                tolerance: 5.0,
                threads: WorkerThreads::of(2),
                json: None,
            };
            let outcome = run(&args).expect("the soak runs");
            assert_eq!(
                outcome.errors.iter().sum::<u64>(),
                0,
                "{:?}",
                outcome.error_messages
            );
            let last = outcome.samples.last().expect("samples");
            assert!(last.ops.iter().all(|&ops| ops > 0), "{:?}", last.ops);
            let stop = outcome.checks.iter().find(|c| c.name == "stop").unwrap();
            assert!(stop.passed, "{stop:?}");
        });
    }
}
