//! Tables, JSON and plots of `bwos-bench forkjoin`.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use super::{ForkJoinArgs, Runtime, Sample};
use crate::header::Header;
use crate::report::{Series, line_plot, write_files};
use crate::stats::Summary;

/// The samples of one workload at one thread count, per runtime, in
/// repetition order (so index `i` of two series was measured back to back).
struct Group<'a> {
    workload: &'a str,
    threads: usize,
    seconds: Vec<(Runtime, Vec<f64>)>,
}

impl Group<'_> {
    fn of(&self, runtime: Runtime) -> &[f64] {
        self.seconds
            .iter()
            .find(|(r, _)| *r == runtime)
            .map_or(&[], |(_, s)| s.as_slice())
    }
}

fn groups(samples: &[Sample]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    for sample in samples {
        let index = match groups
            .iter()
            .position(|g| g.workload == sample.workload && g.threads == sample.threads)
        {
            Some(index) => index,
            None => {
                groups.push(Group {
                    workload: &sample.workload,
                    threads: sample.threads,
                    seconds: Runtime::ALL.iter().map(|&r| (r, Vec::new())).collect(),
                });
                groups.len() - 1
            }
        };
        let series = groups[index]
            .seconds
            .iter_mut()
            .find(|(r, _)| *r == sample.runtime)
            .expect("every runtime has a series");
        let repetition = sample.repetition as usize;
        if series.1.len() <= repetition {
            series.1.resize(repetition + 1, f64::NAN);
        }
        series.1[repetition] = sample.seconds;
    }
    groups
}

fn time(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.2} µs", seconds * 1e6)
    }
}

fn ratio(summary: Option<Summary>) -> String {
    summary.map_or("n/a".to_string(), |s| {
        format!("{:.2}x [{:.2}-{:.2}]", s.median, s.min, s.max)
    })
}

/// One table per workload and thread count: median time per run, speedup
/// over serial code, and how much faster bwos is than each runtime
/// (medians of the ratios of back-to-back measurements, with their range).
pub fn tables(samples: &[Sample]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n# Fork/join: serial code, bwos, rayon, chili\n");
    let _ = writeln!(
        out,
        "time: median seconds per run [min-max] over the repetitions; speedup: serial time / time;\n\
         bwos faster by: this runtime's time / bwos's time (> 1: bwos is faster)."
    );
    for group in groups(samples) {
        let _ = writeln!(
            out,
            "\n## {}, {} thread(s)\n",
            group.workload, group.threads
        );
        let _ = writeln!(
            out,
            "| runtime | time | speedup over serial | bwos faster by |"
        );
        let _ = writeln!(out, "|---|---|---|---|");
        let serial = group.of(Runtime::Serial);
        let bwos = group.of(Runtime::Bwos);
        for runtime in Runtime::ALL {
            let seconds = group.of(runtime);
            let Some(summary) = Summary::of(seconds) else {
                continue;
            };
            let speedup = Summary::of_ratios(serial, seconds);
            let versus = if runtime == Runtime::Bwos {
                "-".to_string()
            } else {
                ratio(Summary::of_ratios(seconds, bwos))
            };
            let _ = writeln!(
                out,
                "| {} | {} [{}-{}] | {} | {} |",
                runtime.name(),
                time(summary.median),
                time(summary.min),
                time(summary.max),
                ratio(speedup),
                versus
            );
        }
    }
    out
}

/// Writes the JSON file and the plots the arguments ask for.
pub fn write_outputs(header: &Header, samples: &[Sample], args: &ForkJoinArgs) -> io::Result<()> {
    write_files(
        header,
        samples,
        args.json.as_deref(),
        args.plot.as_deref(),
        |dir| plots(samples, dir),
    )
}

/// One plot per thread count: speedup over serial per workload.
fn plots(samples: &[Sample], dir: &Path) -> io::Result<Vec<String>> {
    let groups = groups(samples);
    let mut thread_counts: Vec<usize> = groups.iter().map(|g| g.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    let mut workloads: Vec<&str> = Vec::new();
    for group in &groups {
        if !workloads.contains(&group.workload) {
            workloads.push(group.workload);
        }
    }
    let mut written = Vec::new();
    for threads in thread_counts {
        let series: Vec<Series> = Runtime::ALL
            .iter()
            .map(|&runtime| {
                let points = groups
                    .iter()
                    .filter(|g| g.threads == threads)
                    .filter_map(|g| {
                        let x = workloads.iter().position(|w| *w == g.workload)? as f64;
                        let speedup = Summary::of_ratios(g.of(Runtime::Serial), g.of(runtime))?;
                        Some((x, speedup.median))
                    })
                    .collect();
                (runtime.name(), points)
            })
            .collect();
        let name = format!("forkjoin-{threads}-threads.svg");
        let caption = format!("fork/join on {threads} thread(s): speedup over serial code");
        let label = |x: &f64| {
            workloads
                .get(x.round() as usize)
                .map_or(String::new(), |w| (*w).to_string())
        };
        line_plot(
            &dir.join(&name),
            &caption,
            "workload",
            "speedup over serial",
            &series,
            Some(&label),
        )?;
        written.push(dir.join(name).display().to_string());
    }
    Ok(written)
}
