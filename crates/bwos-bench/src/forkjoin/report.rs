//! Tables, JSON and plots of `bwos-bench forkjoin`.
//!
//! Ratios are "bwos faster by": the peer's time over bwos's time, taken
//! pair by pair (the same repetition, measured back to back) and
//! summarised by their median; above 1, bwos is faster. Averages over
//! kernels are geometric means of those medians, as in the Nowa paper,
//! with and without knapsack (whose work depends on execution order).

use std::fmt::Write as _;

use super::{Runtime, Sample, Suite};
use crate::plot::{BarSeries, Better, Chart, Figure, Series};
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
                let average = average_faster(&index, threads, peer, with_knapsack);
                let _ = write!(row, " {} |", or_na(average, |g| format!("{g:.2}x")));
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

/// The geometric mean over `kernels` of "bwos faster than `peer`" at
/// `threads`.
fn average_faster(index: &Index, threads: usize, peer: Runtime, knapsack: bool) -> Option<f64> {
    let ratios: Vec<f64> = index
        .kernels
        .iter()
        .filter(|&&k| knapsack || k != Suite::Knapsack)
        .filter_map(|&k| index.bwos_faster(k, threads, peer).map(|s| s.median))
        .collect();
    geomean(&ratios)
}

/// This machine's figure for the Nowa paper's averages: bwos against
/// rayon and chili at the largest thread count, with and without
/// knapsack.
pub fn result(samples: &[Sample]) -> Option<String> {
    let index = Index::new(samples);
    let most = *index.threads.last()?;
    let mut parts = Vec::new();
    for peer in [Runtime::Rayon, Runtime::Chili] {
        let all = average_faster(&index, most, peer, true)?;
        let without = average_faster(&index, most, peer, false)?;
        parts.push(format!(
            "{all:.2}x {} ({without:.2}x without knapsack)",
            peer.name()
        ));
    }
    Some(format!(
        "on {most} threads bwos averages {} over {} kernels (geometric mean of the paired \
         speed ratios; above 1, bwos is faster).",
        parts.join(" and "),
        index.kernels.len()
    ))
}

/// A plot per kernel of speedup against threads (Figure 7 of the Nowa
/// paper), and per thread count every kernel's speedup as bars.
pub fn figures(samples: &[Sample]) -> Vec<Figure> {
    let index = Index::new(samples);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut figures = Vec::new();
    let position = |threads: usize| index.threads.iter().position(|&t| t == threads);
    let ticks: Vec<(f64, String)> = index
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (i as f64, t.to_string()))
        .collect();
    let serial = Some((1.0, "as fast as the serial elision".to_string()));
    for &kernel in &index.kernels {
        let series: Vec<Series> = Runtime::PARALLEL
            .iter()
            .chain([&Runtime::Fork])
            .filter_map(|&runtime| {
                let points: Vec<(f64, f64)> = index
                    .threads
                    .iter()
                    .filter_map(|&t| {
                        Some((position(t)? as f64, index.speedup(kernel, t, runtime)?))
                    })
                    .collect();
                (!points.is_empty()).then(|| Series::new(runtime.name(), points))
            })
            .collect();
        figures.push(Figure {
            file: format!("forkjoin-{}.svg", kernel.name()),
            title: format!(
                "{}: speedup against worker threads on {cores} cores (Nowa Fig. 7)",
                index.label(kernel)
            ),
            better: Better::Higher,
            note: "medians over repetitions; fork: bwos::fork on the kernel's async form".into(),
            chart: Chart::Lines {
                x_label: "worker threads".into(),
                y_label: "speedup over the serial elision (T_S / T_n)".into(),
                x_ticks: Some(ticks.clone()),
                series,
                reference: serial.clone(),
            },
        });
    }
    let categories: Vec<String> = index.kernels.iter().map(|k| k.name().to_string()).collect();
    for &threads in &index.threads {
        let series: Vec<BarSeries> = Runtime::PARALLEL
            .iter()
            .map(|&runtime| {
                let values = index
                    .kernels
                    .iter()
                    .map(|&k| index.speedup(k, threads, runtime))
                    .collect();
                BarSeries::new(runtime.name(), values)
            })
            .collect();
        figures.push(Figure {
            file: format!("forkjoin-summary-{threads}-threads.svg"),
            title: format!(
                "Fork/join suite on {threads} worker thread(s), {cores} cores: speedup per kernel"
            ),
            better: Better::Higher,
            note: "medians over repetitions".into(),
            chart: Chart::Bars {
                value_label: "speedup over the serial elision (T_S / T_n)".into(),
                categories: categories.clone(),
                series,
                reference: serial.clone(),
            },
        });
    }
    figures
}
