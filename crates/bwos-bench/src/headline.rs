//! `bwos-bench headline`: the README's table of bwos against the peers
//! users would pick instead, from short runs of `queue` (crossbeam-deque),
//! `forkjoin` (rayon, chili), `async` and `http` (tokio, smol), measured in
//! one run. Each row is the geometric mean, over the workloads of its
//! experiment, of the median paired ratio per workload (repetitions
//! alternate between runtimes), with the range of those medians: above 1,
//! bwos is faster. `--write FILE` replaces the table between the markers
//! in FILE, so the README's numbers are generated, never typed.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;

use crate::asyncrt;
use crate::forkjoin;
use crate::header::Header;
use crate::http;
use crate::options::{PlotOption, RunOptions, ThreadCounts, WorkerThreads};
use crate::queue;
use crate::stats::Summary;

/// The markers around the generated part of a file.
pub const BEGIN: &str = "<!-- headline:begin -->";
/// See [`BEGIN`].
pub const END: &str = "<!-- headline:end -->";

#[derive(Debug, Clone, Args)]
pub struct HeadlineArgs {
    /// A smoke run (about a minute): one repetition, short measurements
    #[arg(long)]
    pub quick: bool,
    /// Replace the part of this file between `<!-- headline:begin -->` and
    /// `<!-- headline:end -->` with the table (the README's way)
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub peer: &'static str,
    pub workload: String,
    /// Geometric mean over workloads of the median bwos/peer speed ratio.
    pub geomean: f64,
    /// The smallest and largest per-workload median.
    pub min: f64,
    pub max: f64,
    pub workloads: usize,
    /// Repetitions (pairs) per workload, at most.
    pub repetitions: usize,
}

/// One measured value of one runtime in one repetition of one workload.
#[derive(Debug, Clone)]
pub struct Point {
    pub workload: String,
    pub runtime: &'static str,
    pub repetition: u32,
    pub value: f64,
}

/// Whether a larger value is better (throughput) or worse (time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// The row comparing `bwos` with `peer` over `points`: per workload, the
/// median over repetitions of the paired speed ratio (bwos's speed over
/// the peer's), then their geometric mean. `None` if no workload has both.
pub fn compare(
    points: &[Point],
    bwos: &str,
    peer: &'static str,
    better: Better,
    workload: &str,
) -> Option<Row> {
    let mut workloads: Vec<&str> = Vec::new();
    for point in points {
        if !workloads.contains(&point.workload.as_str()) {
            workloads.push(&point.workload);
        }
    }
    let series = |name: &str, runtime: &str| -> Vec<(u32, f64)> {
        let mut values: Vec<(u32, f64)> = points
            .iter()
            .filter(|p| p.workload == name && p.runtime == runtime)
            .map(|p| (p.repetition, p.value))
            .collect();
        values.sort_by_key(|&(repetition, _)| repetition);
        values
    };
    let mut repetitions = 0;
    let medians: Vec<f64> = workloads
        .iter()
        .filter_map(|&name| {
            let (ours, theirs) = (series(name, bwos), series(name, peer));
            // Pairs of the same repetition only.
            let (a, b): (Vec<f64>, Vec<f64>) = ours
                .iter()
                .filter_map(|&(rep, value)| {
                    let other = theirs.iter().find(|&&(r, _)| r == rep)?.1;
                    Some(match better {
                        Better::Higher => (value, other),
                        Better::Lower => (other, value),
                    })
                })
                .unzip();
            repetitions = repetitions.max(a.len());
            Summary::of_ratios(&a, &b).map(|s| s.median)
        })
        .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
        .collect();
    if medians.is_empty() {
        return None;
    }
    let geomean = (medians.iter().map(|r| r.ln()).sum::<f64>() / medians.len() as f64).exp();
    Some(Row {
        peer,
        workload: workload.to_string(),
        geomean,
        min: medians.iter().copied().fold(f64::INFINITY, f64::min),
        max: medians.iter().copied().fold(0.0, f64::max),
        workloads: medians.len(),
        repetitions,
    })
}

/// Runs the experiments and returns the table's rows.
pub fn run(args: &HeadlineArgs) -> io::Result<Vec<Row>> {
    let run = RunOptions {
        quick: args.quick,
        repetitions: Some(3),
        json: None,
    };
    let mut rows = Vec::new();
    // One row per peer of an experiment, bwos against each.
    let mut add = |points: &[Point], peers: &[&'static str], better: Better, workload: &str| {
        rows.extend(
            peers
                .iter()
                .filter_map(|&peer| compare(points, "bwos", peer, better, workload)),
        );
    };

    eprintln!("headline: queue (owner alone and with one thief)");
    let samples = queue::run(&queue::QueueArgs {
        run: run.clone(),
        plot: PlotOption::default(),
        queue: queue::QueueOptions {
            millis: if args.quick { 20 } else { 100 },
            threads: 2,
            only: vec![queue::Experiment::NoThief, queue::Experiment::OneThief],
        },
    });
    let points: Vec<Point> = samples
        .iter()
        .map(|s| Point {
            workload: format!("{:?} {} {:?}", s.experiment, s.setting, s.order),
            // Both flavours against crossbeam's of the same order.
            runtime: match s.queue {
                "bwos-lifo" | "bwos-fifo" => "bwos",
                "crossbeam-lifo" | "crossbeam-fifo" => "crossbeam-deque",
                other => other,
            },
            repetition: s.repetition,
            value: s.ops_per_sec,
        })
        .collect();
    add(
        &points,
        &["crossbeam-deque"],
        Better::Higher,
        "queue operations/s: owner alone and with one thief, LIFO and FIFO (BWoS Fig. 10-11)",
    );

    eprintln!("headline: forkjoin (16 kernels, 2 threads)");
    let mut forkjoin_args =
        forkjoin::ForkJoinArgs::for_report(run.clone(), PlotOption::default(), false);
    forkjoin_args.threads = ThreadCounts::of(&[2]);
    let outcome = forkjoin::run(&forkjoin_args);
    if !outcome.failures.is_empty() {
        return Err(io::Error::other(outcome.failures.join("\n")));
    }
    let points: Vec<Point> = outcome
        .samples
        .iter()
        .filter(|s| s.threads == 2)
        .map(|s| Point {
            workload: s.label.clone(),
            runtime: s.runtime.name(),
            repetition: s.repetition,
            value: s.seconds,
        })
        .collect();
    add(
        &points,
        &["rayon", "chili"],
        Better::Lower,
        "fork/join time: the Nowa suite's 16 kernels, 2 threads",
    );

    eprintln!("headline: async (tokio's scheduler benchmarks)");
    let samples = asyncrt::run(&asyncrt::AsyncArgs::for_report(run.clone()));
    let points: Vec<Point> = samples
        .iter()
        .map(|s| Point {
            workload: s.kernel.to_string(),
            runtime: s.runtime,
            repetition: s.repetition,
            value: s.micros,
        })
        .collect();
    add(
        &points,
        &["tokio", "smol"],
        Better::Lower,
        "async task time: tokio's 6 scheduler benchmarks, 2 workers",
    );

    eprintln!("headline: http (hyper hello world under wrk)");
    let mut http_args = http::HttpArgs::for_report(run.clone(), PlotOption::default());
    http_args.threads = WorkerThreads { count: 2 };
    http_args.connections = vec![50, 200];
    http_args.seconds = if args.quick { 1 } else { 3 };
    // `for_report` runs one repetition; the table wants pairs.
    http_args.run.repetitions = run.repetitions;
    let experiment = http::run(&http_args)?;
    let mut connections: Vec<String> = Vec::new();
    for sample in &experiment.samples {
        let count = sample.connections.to_string();
        if !connections.contains(&count) {
            connections.push(count);
        }
    }
    let points: Vec<Point> = experiment
        .samples
        .iter()
        .map(|s| Point {
            workload: format!("{} connections", s.connections),
            runtime: s.runtime,
            repetition: s.repetition,
            value: s.requests_per_sec,
        })
        .collect();
    add(
        &points,
        &["tokio", "smol"],
        Better::Higher,
        &format!(
            "HTTP/1.1 requests/s: hyper hello world, {} connections, {}",
            connections.join(" and "),
            experiment.load_generator.describe()
        ),
    );
    Ok(rows)
}

/// The generated block: when, where, how, then the table.
pub fn render(header: &Header, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Measured {} on {} ({} cores, {}), revision `{}`, with `{}`. \
         Each row: the geometric mean over its workloads of the median ratio \
         of bwos's speed to the peer's in paired repetitions (the runtimes \
         alternate); above 1, bwos is faster. Range: the per-workload medians.\n",
        today(),
        header.cpu_model,
        header.cores,
        header.os,
        header.git_revision,
        header_command(header),
    );
    out.push_str(
        "| bwos against | workload | bwos speed / peer speed | range | workloads | repetitions |\n",
    );
    out.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | **{:.2}x** | {:.2}-{:.2} | {} | {} |",
            row.peer, row.workload, row.geomean, row.min, row.max, row.workloads, row.repetitions
        );
    }
    out
}

/// The command as a user types it: the program's file name, not the path
/// cargo built it at.
fn header_command(header: &Header) -> String {
    let mut words = header.command_line.split_whitespace();
    let program = words.next().unwrap_or("bwos-bench");
    let name = program.rsplit('/').next().unwrap_or(program);
    std::iter::once(name)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Replaces the text between [`BEGIN`] and [`END`] in `text` with
/// `generated`; an error that names the markers if they are missing.
pub fn splice(text: &str, generated: &str) -> Result<String, String> {
    let begin = text
        .find(BEGIN)
        .ok_or_else(|| format!("no `{BEGIN}` marker"))?;
    let after_begin = begin + BEGIN.len();
    let end = text[after_begin..]
        .find(END)
        .map(|at| after_begin + at)
        .ok_or_else(|| format!("no `{END}` marker after `{BEGIN}`"))?;
    Ok(format!(
        "{}\n{}{}",
        &text[..after_begin],
        generated,
        &text[end..]
    ))
}

/// Writes `generated` into `path` between the markers.
pub fn write_into(path: &std::path::Path, generated: &str) -> io::Result<()> {
    let text = fs::read_to_string(path)?;
    let spliced = splice(&text, generated)
        .map_err(|why| io::Error::other(format!("{}: {why}", path.display())))?;
    fs::write(path, spliced)
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
fn today() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The proleptic Gregorian date of day `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(workload: &str, runtime: &'static str, repetition: u32, value: f64) -> Point {
        Point {
            workload: workload.into(),
            runtime,
            repetition,
            value,
        }
    }

    #[test]
    fn rows_are_geometric_means_of_paired_medians() {
        let points = [
            point("a", "bwos", 0, 1.0),
            point("a", "peer", 0, 2.0),
            point("a", "bwos", 1, 1.0),
            point("a", "peer", 1, 2.0),
            point("b", "bwos", 0, 4.0),
            point("b", "peer", 0, 2.0),
            // No pair: ignored.
            point("c", "bwos", 0, 1.0),
        ];
        let row = compare(&points, "bwos", "peer", Better::Lower, "w").unwrap();
        // Time: a is 2x faster on bwos, b 2x slower; geomean 1.
        assert!((row.geomean - 1.0).abs() < 1e-12);
        assert_eq!(
            (row.min, row.max, row.workloads, row.repetitions),
            (0.5, 2.0, 2, 2)
        );
        let row = compare(&points, "bwos", "peer", Better::Higher, "w").unwrap();
        assert_eq!((row.min, row.max), (0.5, 2.0));
        assert!(compare(&points, "bwos", "absent", Better::Higher, "w").is_none());
    }

    #[test]
    fn splice_replaces_between_the_markers_and_names_a_missing_one() {
        let text = format!("top\n{BEGIN}\nold\n{END}\nbottom\n");
        assert_eq!(
            splice(&text, "new\n").unwrap(),
            format!("top\n{BEGIN}\nnew\n{END}\nbottom\n")
        );
        assert!(splice("no markers", "x").unwrap_err().contains(BEGIN));
        assert!(splice(BEGIN, "x").unwrap_err().contains(END));
    }

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(20_417), (2025, 11, 25));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
