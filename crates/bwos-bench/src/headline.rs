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

use clap::Args;

use crate::r#async;
use crate::experiment::{Measure, Options, Run};
use crate::forkjoin;
use crate::header::Header;
use crate::http;
use crate::options::{NoThreads, OptionHelp, RunOptions, ThreadCounts, WorkerThreads};
pub use crate::plot::Better;
use crate::progress::Progress;
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

/// The shared options of every experiment the table runs: `quick` as
/// asked, 3 repetitions (pairs for the ratios), no files.
fn run_options<H: OptionHelp>(quick: bool) -> RunOptions<H> {
    RunOptions {
        quick,
        repetitions: Some(3),
        ..RunOptions::default()
    }
}

/// Runs the experiments and returns the table's rows.
pub fn run(args: &HeadlineArgs) -> io::Result<Vec<Row>> {
    let quick = args.quick;
    let queue = Options {
        run: run_options(quick),
        threads: NoThreads {},
        own: queue::QueueArgs {
            millis: if quick { 20 } else { 100 },
            threads: 2,
            only: vec![queue::Experiment::NoThief, queue::Experiment::OneThief],
        },
    };
    let forkjoin = Options {
        run: run_options(quick),
        threads: ThreadCounts::of(&[2]),
        own: forkjoin::ForkJoinArgs::short(false),
    };
    let asynchronous = Options {
        run: run_options(quick),
        threads: WorkerThreads::of(2),
        own: r#async::AsyncArgs { iterations: 10 },
    };
    let http = Options {
        run: run_options(quick),
        threads: WorkerThreads::of(2),
        own: http::HttpArgs {
            connections: vec![50, 200],
            seconds: if quick { 1 } else { 3 },
            ..http::HttpArgs::short()
        },
    };
    let progress = Progress::new(&[
        ("queue (owner alone and with one thief)", queue.plan()),
        ("forkjoin (16 kernels, 2 threads)", forkjoin.plan()),
        ("async (tokio's scheduler benchmarks)", asynchronous.plan()),
        ("http (hyper hello world)", http.plan()),
    ]);
    let mut rows = Vec::new();
    // One row per peer of an experiment, bwos against each.
    let mut add = |points: &[Point], peers: &[&'static str], better: Better, workload: &str| {
        rows.extend(
            peers
                .iter()
                .filter_map(|&peer| compare(points, "bwos", peer, better, workload)),
        );
    };

    let bar = progress.experiment(0, queue.plan().steps);
    let samples = queue::run(&queue, &bar);
    bar.finish();
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

    let bar = progress.experiment(1, forkjoin.plan().steps);
    let outcome = forkjoin::run(&forkjoin, &bar);
    bar.finish();
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

    let bar = progress.experiment(2, asynchronous.plan().steps);
    let samples = r#async::run(&asynchronous, &bar);
    bar.finish();
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

    let bar = progress.experiment(3, http.plan().steps);
    let experiment = http::run(&http, &bar)?;
    bar.finish();
    progress.finish();
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
        header.date,
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

/// The headline table: printed, and written into `--write`'s file.
impl Run for HeadlineArgs {
    fn run(&self) -> io::Result<()> {
        let header = Header::collect();
        print!("{}", header.render());
        let rows = run(self)?;
        let generated = render(&header, &rows);
        print!("\n{generated}");
        if let Some(path) = &self.write {
            write_into(path, &generated)?;
            println!("\nwritten into {}", path.display());
        }
        Ok(())
    }
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
}
