//! Tables, JSON and plots of `bwos-bench forkjoin`.
//!
//! Ratios are "bwos faster by": the peer's time over bwos's time, taken
//! pair by pair (the same repetition, measured back to back) and
//! summarised by their median; above 1, bwos is faster. Averages over
//! kernels are geometric means of those medians, as in the Nowa paper,
//! with and without knapsack (whose work depends on execution order).

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use super::{Runtime, Sample, Suite};
use crate::report::{Bars, Series, grouped_bars, line_plot};
use crate::stats::Summary;

/// The samples, indexed by kernel, thread count and runtime.
struct Index<'a> {
    samples: &'a [Sample],
    kernels: Vec<Suite>,
    threads: Vec<usize>,
}

impl<'a> Index<'a> {
    fn new(samples: &'a [Sample]) -> Index<'a> {
        let mut kernels: Vec<Suite> = Vec::new();
        let mut threads: Vec<usize> = Vec::new();
        for sample in samples {
            if !kernels.contains(&sample.kernel) {
                kernels.push(sample.kernel);
            }
            if sample.runtime != Runtime::Serial && !threads.contains(&sample.threads) {
                threads.push(sample.threads);
            }
        }
        threads.sort_unstable();
        Index {
            samples,
            kernels,
            threads,
        }
    }

    fn cell(
        &self,
        kernel: Suite,
        threads: usize,
        runtime: Runtime,
    ) -> impl Iterator<Item = &'a Sample> {
        let threads = if runtime == Runtime::Serial {
            1
        } else {
            threads
        };
        self.samples
            .iter()
            .filter(move |s| s.kernel == kernel && s.threads == threads && s.runtime == runtime)
    }

    /// Seconds per run in repetition order (NaN where a run failed), so
    /// that index `i` of two series was measured back to back.
    fn seconds(&self, kernel: Suite, threads: usize, runtime: Runtime) -> Vec<f64> {
        let mut series = Vec::new();
        for sample in self.cell(kernel, threads, runtime) {
            let repetition = sample.repetition as usize;
            if series.len() <= repetition {
                series.resize(repetition + 1, f64::NAN);
            }
            series[repetition] = sample.seconds;
        }
        series
    }

    fn time(&self, kernel: Suite, threads: usize, runtime: Runtime) -> Option<Summary> {
        let seconds: Vec<f64> = self
            .seconds(kernel, threads, runtime)
            .into_iter()
            .filter(|s| s.is_finite())
            .collect();
        Summary::of(&seconds)
    }

    /// The serial elision's median time over this runtime's median time.
    fn speedup(&self, kernel: Suite, threads: usize, runtime: Runtime) -> Option<f64> {
        let serial = self.time(kernel, 1, Runtime::Serial)?.median;
        Some(serial / self.time(kernel, threads, runtime)?.median)
    }

    /// How much faster bwos is than `peer`, pair by pair.
    fn bwos_faster(&self, kernel: Suite, threads: usize, peer: Runtime) -> Option<Summary> {
        self.faster(kernel, threads, Runtime::Bwos, peer)
    }

    /// How much faster `runtime` is than `peer` (`peer`'s time over
    /// `runtime`'s), pair by pair.
    fn faster(
        &self,
        kernel: Suite,
        threads: usize,
        runtime: Runtime,
        peer: Runtime,
    ) -> Option<Summary> {
        let bwos = self.seconds(kernel, threads, runtime);
        let peer = self.seconds(kernel, threads, peer);
        let ratios: Vec<f64> = peer
            .iter()
            .zip(&bwos)
            .map(|(p, b)| p / b)
            .filter(|r| r.is_finite())
            .collect();
        Summary::of(&ratios)
    }

    /// "median time (speedup)", or "n/a".
    fn time_cell(&self, kernel: Suite, threads: usize, runtime: Runtime) -> String {
        self.time(kernel, threads, runtime)
            .map_or("n/a".into(), |t| {
                format!(
                    "{} ({})",
                    time(t.median),
                    or_na(self.speedup(kernel, threads, runtime), |s| format!(
                        "{s:.2}x"
                    ))
                )
            })
    }

    fn peak_mib(&self, kernel: Suite, threads: usize, runtime: Runtime) -> Option<f64> {
        self.cell(kernel, threads, runtime)
            .filter_map(|s| s.peak_rss_kib)
            .max()
            .map(|kib| kib as f64 / 1024.0)
    }

    /// The largest peak RSS over the repetitions and, in parentheses, the
    /// largest anonymous peak (heap and stacks), MiB.
    fn peak_cell(&self, kernel: Suite, threads: usize, runtime: Runtime) -> String {
        let anon = self
            .cell(kernel, threads, runtime)
            .filter_map(|s| s.peak_anon_kib)
            .max()
            .map(|kib| kib as f64 / 1024.0);
        let rss = or_na(self.peak_mib(kernel, threads, runtime), |m| {
            format!("{m:.1}")
        });
        match anon {
            Some(anon) => format!("{rss} ({anon:.2})"),
            None => rss,
        }
    }

    fn label(&self, kernel: Suite) -> &'a str {
        self.samples
            .iter()
            .find(|s| s.kernel == kernel)
            .map_or("", |s| s.label.as_str())
    }
}

/// Why the memory columns show the anonymous part of the peak.
const MEMORY_NOTE: &str = "The rest of the RSS is file-backed, mostly pages of this binary's code, which holds every \
runtime: which of them a run touches follows the code path and the link layout, not the memory the runtime uses.";

fn time(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

fn ratio(summary: Option<Summary>) -> String {
    summary.map_or("n/a".to_string(), |s| {
        format!("{:.2}x [{:.2}-{:.2}]", s.median, s.min, s.max)
    })
}

fn or_na(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or("n/a".to_string(), format)
}

fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// The tables: one per kernel, then work overhead, peak memory, the
/// averages over kernels, and bwos's counters.
pub fn tables(samples: &[Sample]) -> String {
    let index = Index::new(samples);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n# Fork/join suite: serial elision, bwos, rayon, chili\n"
    );
    let _ = writeln!(
        out,
        "Per kernel: median time per run and speedup over the serial elision (T_S / T_n);\n\
         \"bwos faster than X\": X's time / bwos's time, pair by pair, median [min-max]\n\
         (> 1: bwos is faster). Every runtime ran in its own process."
    );
    for &kernel in &index.kernels {
        let serial = index.time(kernel, 1, Runtime::Serial);
        let _ = writeln!(out, "\n## {}\n", index.label(kernel));
        let _ = writeln!(
            out,
            "serial elision: {}, peak RSS {}\n",
            serial.map_or("n/a".into(), |s| format!(
                "{} [{}-{}]",
                time(s.median),
                time(s.min),
                time(s.max)
            )),
            or_na(index.peak_mib(kernel, 1, Runtime::Serial), |m| format!(
                "{m:.1} MiB"
            )),
        );
        let _ = writeln!(
            out,
            "| threads | bwos | rayon | chili | bwos faster than rayon | bwos faster than chili |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for &threads in &index.threads {
            let mut row = format!("| {threads} |");
            for runtime in Runtime::PARALLEL {
                let _ = write!(row, " {} |", index.time_cell(kernel, threads, runtime));
            }
            for peer in [Runtime::Rayon, Runtime::Chili] {
                let _ = write!(
                    row,
                    " {} |",
                    ratio(index.bwos_faster(kernel, threads, peer))
                );
            }
            let _ = writeln!(out, "{row}");
        }
    }

    let _ = writeln!(
        out,
        "\n## Work overhead on one thread (T_1 / T_S) and peak memory (MiB)\n"
    );
    let most = index.threads.last().copied().unwrap_or(1);
    let _ = writeln!(
        out,
        "RSS: the process's largest peak over the repetitions, at {most} threads for the parallel runtimes; \
         in parentheses its anonymous part (heap and stacks) over the timed runs. {MEMORY_NOTE}\n"
    );
    let _ = writeln!(
        out,
        "| kernel | bwos T_1/T_S | rayon T_1/T_S | chili T_1/T_S | serial RSS | bwos RSS | rayon RSS | chili RSS |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for &kernel in &index.kernels {
        let mut row = format!("| {} |", kernel.name());
        for runtime in Runtime::PARALLEL {
            let overhead = index.speedup(kernel, 1, runtime).map(|s| 1.0 / s);
            let _ = write!(row, " {} |", or_na(overhead, |o| format!("{o:.2}")));
        }
        for runtime in Runtime::SYNC {
            let _ = write!(row, " {} |", index.peak_cell(kernel, most, runtime));
        }
        let _ = writeln!(out, "{row}");
    }

    let _ = writeln!(
        out,
        "\n## Averages over kernels: geometric mean of \"bwos faster than X\"\n"
    );
    let _ = writeln!(
        out,
        "| threads | vs rayon | vs rayon, no knapsack | vs chili | vs chili, no knapsack | kernels where bwos is > 5% slower than the best peer |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for &threads in &index.threads {
        let mut row = format!("| {threads} |");
        for peer in [Runtime::Rayon, Runtime::Chili] {
            for with_knapsack in [true, false] {
                let ratios: Vec<f64> = index
                    .kernels
                    .iter()
                    .filter(|&&k| with_knapsack || k != Suite::Knapsack)
                    .filter_map(|&k| index.bwos_faster(k, threads, peer).map(|s| s.median))
                    .collect();
                let _ = write!(
                    row,
                    " {} |",
                    or_na(geomean(&ratios), |g| format!("{g:.2}x"))
                );
            }
        }
        let slower: Vec<String> = index
            .kernels
            .iter()
            .filter_map(|&k| {
                let best = [Runtime::Rayon, Runtime::Chili]
                    .into_iter()
                    .filter_map(|peer| index.bwos_faster(k, threads, peer).map(|s| s.median))
                    .reduce(f64::min)?;
                (best < 0.95).then(|| format!("{} {best:.2}x", k.name()))
            })
            .collect();
        let _ = writeln!(
            out,
            "{row} {} |",
            if slower.is_empty() {
                "none".to_string()
            } else {
                slower.join(", ")
            }
        );
    }

    fork_tables(&index, &mut out);

    let _ = writeln!(
        out,
        "\n## bwos's counters per run (PoolStats / runs, median repetition)\n"
    );
    let _ = writeln!(
        out,
        "| kernel | threads | steals | failed steals | sleeps | wake-ups | yields to victim |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for &kernel in &index.kernels {
        for &threads in index.threads.iter().filter(|&&t| t > 1) {
            let mut cell: Vec<&Sample> = index
                .cell(kernel, threads, Runtime::Bwos)
                .filter(|s| s.stats.is_some())
                .collect();
            cell.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let Some(sample) = cell.get(cell.len() / 2) else {
                continue;
            };
            let stats = sample.stats.as_ref().expect("filtered");
            let runs = f64::from(sample.iterations + 1);
            let per_run = |count: u64| format!("{:.0}", count as f64 / runs);
            let _ = writeln!(
                out,
                "| {} | {threads} | {} | {} | {} | {} | {} |",
                kernel.name(),
                per_run(stats.steals),
                per_run(stats.failed_steals),
                per_run(stats.sleeps),
                per_run(stats.wakeups),
                per_run(stats.yields_to_victim),
            );
        }
    }
    out
}

/// The async fork/join section: `bwos::fork` on the kernels' async forms,
/// against bwos `join`, rayon and chili on the synchronous ones; its work
/// overhead against the serial elision, `Box::pin`'s against the same
/// boxed code run serially, and peak memory.
fn fork_tables(index: &Index<'_>, out: &mut String) {
    let kernels: Vec<Suite> = index
        .kernels
        .iter()
        .copied()
        .filter(|&k| {
            index.cell(k, 1, Runtime::AsyncSerial).next().is_some()
                || index
                    .threads
                    .iter()
                    .any(|&t| index.cell(k, t, Runtime::Fork).next().is_some())
        })
        .collect();
    if kernels.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## Async fork/join: bwos::fork on the kernels' async forms\n\n\
         fork: `fork::join` with `fork::boxed_with` frames (the documented way); fork-box-pin: the same \
         with `Box::pin`; async-serial: the `Box::pin` code run serially by a trivial executor. \
         Time per run (speedup over the serial elision); \"fork faster than X\": X's time / \
         fork's, pair by pair, median [min-max].\n"
    );
    let _ = writeln!(
        out,
        "| kernel | threads | fork | fork-box-pin | fork faster than bwos join | fork faster than rayon | fork faster than chili |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for &kernel in &kernels {
        for &threads in &index.threads {
            let mut row = format!("| {} | {threads} |", kernel.name());
            for runtime in [Runtime::Fork, Runtime::ForkBoxPin] {
                let _ = write!(row, " {} |", index.time_cell(kernel, threads, runtime));
            }
            for peer in Runtime::PARALLEL {
                let _ = write!(
                    row,
                    " {} |",
                    ratio(index.faster(kernel, threads, Runtime::Fork, peer))
                );
            }
            let _ = writeln!(out, "{row}");
        }
    }
    let most = index.threads.last().copied().unwrap_or(1);
    let _ = writeln!(
        out,
        "\n### Async fork/join: work overhead on one thread and peak memory (MiB, at {most} threads)\n\n\
         fork T_1/T_S: against the serial elision (goal on fib: at most 5); fork-box-pin T_1 / \
         async-serial: what the runtime adds to boxing (goal: at most 2). Memory: peak RSS \
         (anonymous part). {MEMORY_NOTE}\n"
    );
    let _ = writeln!(
        out,
        "| kernel | fork T_1/T_S | fork-box-pin T_1/T_S | fork-box-pin T_1 / async-serial | fork RSS | fork-box-pin RSS | bwos join RSS | rayon RSS |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for &kernel in &kernels {
        let mut row = format!("| {} |", kernel.name());
        for runtime in [Runtime::Fork, Runtime::ForkBoxPin] {
            let overhead = index.speedup(kernel, 1, runtime).map(|s| 1.0 / s);
            let _ = write!(row, " {} |", or_na(overhead, |o| format!("{o:.2}")));
        }
        let boxing = index
            .time(kernel, 1, Runtime::AsyncSerial)
            .zip(index.time(kernel, 1, Runtime::ForkBoxPin))
            .map(|(serial, fork)| fork.median / serial.median);
        let _ = write!(row, " {} |", or_na(boxing, |o| format!("{o:.2}")));
        for runtime in [
            Runtime::Fork,
            Runtime::ForkBoxPin,
            Runtime::Bwos,
            Runtime::Rayon,
        ] {
            let _ = write!(row, " {} |", index.peak_cell(kernel, most, runtime));
        }
        let _ = writeln!(out, "{row}");
    }
}

/// A plot per kernel of speedup against threads (Figure 7 of the Nowa
/// paper), and a summary of every kernel's speedup at each thread count
/// as grouped bars.
pub fn plots(samples: &[Sample], dir: &Path) -> io::Result<Vec<String>> {
    let index = Index::new(samples);
    let mut written = Vec::new();
    let position = |threads: usize| index.threads.iter().position(|&t| t == threads);
    let thread_label = |x: &f64| {
        let at = x.round();
        if (x - at).abs() > 1e-6 {
            return String::new();
        }
        index
            .threads
            .get(at as usize)
            .map_or(String::new(), |t| t.to_string())
    };
    for &kernel in &index.kernels {
        let series: Vec<Series> = Runtime::PARALLEL
            .iter()
            .chain([&Runtime::Fork])
            .map(|&runtime| {
                let points = index
                    .threads
                    .iter()
                    .filter_map(|&t| {
                        Some((position(t)? as f64, index.speedup(kernel, t, runtime)?))
                    })
                    .collect();
                (runtime.name(), points)
            })
            .collect();
        let name = format!("forkjoin-{}.svg", kernel.name());
        line_plot(
            &dir.join(&name),
            &format!("{}: speedup against threads (2 cores)", index.label(kernel)),
            "worker threads",
            "speedup over the serial elision (T_S / T_n)",
            &series,
            Some(&thread_label),
        )?;
        written.push(dir.join(name).display().to_string());
    }
    let groups: Vec<String> = index.kernels.iter().map(|k| k.name().to_string()).collect();
    for &threads in &index.threads {
        let series: Vec<Bars> = Runtime::PARALLEL
            .iter()
            .map(|&runtime| {
                let values = index
                    .kernels
                    .iter()
                    .map(|&k| index.speedup(k, threads, runtime))
                    .collect();
                (runtime.name(), values)
            })
            .collect();
        let name = format!("forkjoin-summary-{threads}-threads.svg");
        grouped_bars(
            &dir.join(&name),
            &format!("fork/join suite on {threads} worker thread(s): speedup per kernel"),
            "speedup over the serial elision (T_S / T_n)",
            &groups,
            &series,
        )?;
        written.push(dir.join(name).display().to_string());
    }
    Ok(written)
}
