//! `bwos-bench rayon`: the same rayon programs (`rayon-programs/main.rs`)
//! built twice, against stock rayon-core and against the drop-in
//! (`crates/rayon-core`, on bwos), run alternately in processes of their
//! own, on 1 and 2 threads.
//!
//! Each repetition runs every (program, threads) pair once per build,
//! back to back, the build order alternating between repetitions; the
//! ratio is stock time / bwos time per repetition (above 1: bwos faster),
//! summarised by its median. A build runs its programs on its own global
//! pool, which dies with the process, so no pool is left spinning into
//! the next measurement. Each child reports the name of one of its
//! workers: the bench checks that the patched build really runs on bwos.
//!
//! A run's time is the whole second call of the program, except where
//! making the input takes longer than the work (the sort's 10 M keys,
//! `find-any-middle`'s 10 M haystack, the merge sorts' inputs): there
//! only the sort, the 100 `find_any` calls or the merge sorts are timed.
//!
//! After its timed run, each `join-fib` child sleeps [`IDLE_WINDOW_MS`]
//! with its pool idle and reports the CPU time its threads used meanwhile
//! (`getrusage`): what a pool costs the machine once its work is done,
//! spinning before sleeping included.
//!
//! Both builds use the default release profile, as a user's program does
//! (rustc's 16 codegen units). `--codegen-units N` sets a count for both,
//! to separate what the runtime costs from where rustc's partitioning puts
//! a program's generic code: with 16 units the fold of a rayon program may
//! or may not be inlined into rayon's splitting function depending on
//! which units the linked code lands in (`map-filter-collect` once ran 2x
//! faster on stock rayon for that reason alone; with one unit both builds
//! ran the same loop, 40.9 M and 40.2 M instructions at scale 0.1).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::experiment::{self, About, Options, Results};
use crate::options::{OptionHelp, ThreadCounts};
use crate::plot::{BarSeries, Better, Chart, Figure};
use crate::progress::{self, Bar};
use crate::stats::Summary;

/// The programs, in the order of the table.
pub const PROGRAMS: [&str; 11] = [
    "sum-squares",
    "sort",
    "map-filter-collect",
    "chunks-heavy",
    "nested",
    "join-fib",
    "par-bridge",
    "find-any-middle",
    "sort-descending",
    "merge-sort-big",
    "merge-sort-mostly-ascending",
];

/// Options of `bwos-bench rayon`.
#[derive(Debug, Clone, clap::Args)]
pub struct RayonArgs {
    /// Codegen units of both release builds (default: the default release
    /// profile's, which users get; see the module docs)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub codegen_units: Option<u32>,
}

impl OptionHelp for RayonArgs {
    const QUICK: &'static str = "A smoke run: small inputs, one repetition";
    const REPETITIONS: &'static str = "Repetitions per program, build and thread count";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write an SVG plot (each program's speed on the drop-in \
         relative to stock rayon-core) into this directory";
    const THREADS: &'static str = "Thread counts, comma-separated or repeated (default: 1 and 2)";
}

impl experiment::Experiment for RayonArgs {
    const NAME: &'static str = "rayon";
    const ABOUT: About = About {
        measures: "Eleven rayon programs (parallel iterators, sorts, find_any, join) built twice, against \
                   stock rayon-core and against the bwos drop-in (`crates/rayon-core`), run \
                   alternately in processes of their own; and the CPU a pool burns while idle \
                   after its work.",
        better: "Higher speedup (stock time / bwos time) is better: above 1, the drop-in is \
                 faster; less idle CPU is better.",
        paper: None,
    };
    type Threads = ThreadCounts<RayonArgs>;
    type Body = Body;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let runs = 2 * PROGRAMS.len() * threads(options).len();
        let runs = runs as u64 * u64::from(options.run.repetitions(1));
        let run_seconds = if options.run.quick { 0.05 } else { 0.5 };
        progress::Plan {
            steps: 2 + runs,
            seconds: 2.0 * BUILD_SECONDS + runs as f64 * run_seconds,
        }
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Body>> {
        let rows = run(options, bar)?;
        let codegen_units = options.own.codegen_units;
        let tables = format!(
            "both builds: release, codegen-units = {}\n{}",
            codegen_units.map_or("the profile's default (16)".to_string(), |n| n.to_string()),
            table(&rows)
        );
        Ok(Results {
            figures: vec![figure(&rows)],
            ..Results::new(
                Body {
                    codegen_units,
                    rows,
                },
                tables,
            )
        })
    }

    /// At most 3 repetitions.
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        let repetitions = Some(report.repetitions.map_or(3, |n| n.min(3)));
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), repetitions),
            threads: ThreadCounts::default(),
            own: RayonArgs {
                codegen_units: None,
            },
        })
    }
}

/// A rough time for one build, to weigh the experiment against others
/// (a first build compiles rayon and bwos; later ones are incremental).
const BUILD_SECONDS: f64 = 20.0;

/// The JSON body: the builds' codegen units and every row.
#[derive(Debug, Serialize)]
pub struct Body {
    pub codegen_units: Option<u32>,
    pub rows: Vec<Row>,
}

fn threads(options: &Options<RayonArgs>) -> Vec<usize> {
    options.threads.or_else(|| vec![1, 2])
}

/// Each program's speedup on the drop-in, a bar per thread count.
fn figure(rows: &[Row]) -> Figure {
    let mut thread_counts: Vec<usize> = rows.iter().map(|row| row.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    let series = thread_counts
        .iter()
        .map(|&threads| {
            let values = PROGRAMS
                .iter()
                .map(|&program| {
                    rows.iter()
                        .find(|row| row.program == program && row.threads == threads)
                        .and_then(Row::speedup)
                        .map(|s| s.median)
                })
                .collect();
            BarSeries::new(format!("{threads} thread(s)"), values)
        })
        .collect();
    Figure {
        file: "rayon.svg".into(),
        title: "rayon programs: the bwos drop-in's speed against stock rayon-core".into(),
        better: Better::Higher,
        note: "stock time / bwos time, paired, median over repetitions; above 1, bwos is faster"
            .into(),
        chart: Chart::Bars {
            value_label: "stock time / bwos time".into(),
            categories: PROGRAMS.iter().map(|p| p.to_string()).collect(),
            series,
            reference: Some((1.0, "as fast as stock rayon-core".into())),
        },
    }
}

/// The two builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Build {
    /// rayon 1.12 with rayon-core 1.13 from crates.io.
    Stock,
    /// The same rayon with rayon-core patched to `crates/rayon-core`.
    Bwos,
}

/// The program whose runs end with an idle window.
pub const IDLE_PROBE_PROGRAM: &str = "join-fib";

/// How long the idle window lasts (a tenth of it with `--quick`).
pub const IDLE_WINDOW_MS: u64 = 500;

/// One program's times on one thread count.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub program: &'static str,
    pub threads: usize,
    pub stock_ms: Vec<f64>,
    pub bwos_ms: Vec<f64>,
    /// CPU milliseconds used during the idle window after each run
    /// (only for [`IDLE_PROBE_PROGRAM`]; empty where `getrusage` fails).
    pub stock_idle_cpu_ms: Vec<f64>,
    pub bwos_idle_cpu_ms: Vec<f64>,
}

impl Row {
    /// Stock time / bwos time, pair by pair.
    pub fn speedup(&self) -> Option<Summary> {
        Summary::of_ratios(&self.stock_ms, &self.bwos_ms)
    }
}

/// Builds both binaries and runs the experiment.
pub fn run(options: &Options<RayonArgs>, bar: &Bar) -> std::io::Result<Vec<Row>> {
    let codegen_units = options.own.codegen_units;
    bar.set_message("building the programs against stock rayon-core");
    let stock = build(Build::Stock, codegen_units)?;
    bar.step();
    bar.set_message("building the programs against the bwos drop-in");
    let bwos = build(Build::Bwos, codegen_units)?;
    bar.step();
    let threads = threads(options);
    let scale = if options.run.quick { 0.02 } else { 1.0 };
    let repetitions = options.run.repetitions(1);
    let mut rows: Vec<Row> = threads
        .iter()
        .flat_map(|&threads| {
            PROGRAMS.iter().map(move |&program| Row {
                program,
                threads,
                stock_ms: Vec::new(),
                bwos_ms: Vec::new(),
                stock_idle_cpu_ms: Vec::new(),
                bwos_idle_cpu_ms: Vec::new(),
            })
        })
        .collect();
    let idle_window_ms = if options.run.quick {
        IDLE_WINDOW_MS / 10
    } else {
        IDLE_WINDOW_MS
    };
    for repetition in 0..repetitions {
        for row in &mut rows {
            let order = if repetition % 2 == 0 {
                [Build::Stock, Build::Bwos]
            } else {
                [Build::Bwos, Build::Stock]
            };
            for which in order {
                bar.set_message(format!(
                    "{} on {} thread(s), {which:?} build, repetition {} of {repetitions}",
                    row.program,
                    row.threads,
                    repetition + 1
                ));
                let binary = if which == Build::Stock { &stock } else { &bwos };
                let idle_ms = (row.program == IDLE_PROBE_PROGRAM).then_some(idle_window_ms);
                let run = run_child(binary, which, row.program, row.threads, scale, idle_ms)?;
                let (times, idle_cpu) = match which {
                    Build::Stock => (&mut row.stock_ms, &mut row.stock_idle_cpu_ms),
                    Build::Bwos => (&mut row.bwos_ms, &mut row.bwos_idle_cpu_ms),
                };
                times.push(run.ms);
                idle_cpu.extend(run.idle_cpu_ms);
                bar.step();
            }
        }
    }
    Ok(rows)
}

/// Writes the manifest of one build next to the others' target directory
/// and builds it in release mode (with `codegen_units` if given); returns
/// the binary.
fn build(which: Build, codegen_units: Option<u32>) -> std::io::Result<PathBuf> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = crate_dir.join("rayon-programs/main.rs");
    let drop_in = crate_dir.join("../rayon-core");
    let name = match which {
        Build::Stock => "stock",
        Build::Bwos => "bwos",
    };
    let dir = crate_dir.join("../../target/rayon-programs").join(name);
    std::fs::create_dir_all(&dir)?;
    let units = codegen_units.map_or(String::new(), |n| format!("codegen-units = {n}\n"));
    let mut manifest = format!(
        "[package]\nname = \"rayon-programs-{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[[bin]]\nname = \"rayon-programs\"\npath = {source:?}\n\n\
         [dependencies]\nrayon = \"=1.12.0\"\nlibc = \"0.2\"\n\n[profile.release]\ndebug = 1\n{units}\n\
         [workspace]\n"
    );
    if which == Build::Bwos {
        write!(
            manifest,
            "\n[patch.crates-io]\nrayon-core = {{ path = {:?} }}\n",
            drop_in.canonicalize()?
        )
        .expect("writing to a String");
    }
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "building the {name} rayon programs failed ({status})"
        )));
    }
    Ok(dir.join("target/release/rayon-programs"))
}

/// What one child reports.
struct ChildRun {
    /// The timed run.
    ms: f64,
    /// CPU time during the idle window, if one was asked for and the
    /// child could measure it.
    idle_cpu_ms: Option<f64>,
}

/// Runs one program in a child process, with an idle window of `idle_ms`
/// after its timed run if given.
fn run_child(
    binary: &Path,
    which: Build,
    program: &str,
    threads: usize,
    scale: f64,
    idle_ms: Option<u64>,
) -> std::io::Result<ChildRun> {
    let mut command = Command::new(binary);
    command.args([program, &threads.to_string(), &scale.to_string()]);
    if let Some(idle_ms) = idle_ms {
        command.arg(idle_ms.to_string());
    }
    let output = command
        .env_remove("BWOS_NUM_THREADS")
        .env_remove("RAYON_NUM_THREADS")
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let fail = |why: &str| {
        std::io::Error::other(format!(
            "{which:?} {program} on {threads} threads: {why} (status {}, stdout {stdout:?}, \
             stderr {:?})",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    };
    if !output.status.success() {
        return Err(fail("the program failed"));
    }
    let field = |key: &str| {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(key))
            .map(str::to_owned)
    };
    let ns: f64 = field("ns=")
        .and_then(|ns| ns.parse().ok())
        .ok_or_else(|| fail("no ns= in the output"))?;
    let worker = field("worker=").unwrap_or_default();
    let on_bwos = worker.starts_with("bwos-worker-");
    if on_bwos != (which == Build::Bwos) {
        return Err(fail(&format!(
            "the build runs on the wrong runtime (worker thread {worker:?})"
        )));
    }
    let idle_cpu_ms = field("idle_cpu_ns=")
        .and_then(|ns| ns.parse::<f64>().ok())
        .map(|ns| ns / 1e6);
    Ok(ChildRun {
        ms: ns / 1e6,
        idle_cpu_ms,
    })
}

/// The table: per program and thread count, both medians with their
/// spread and the speedup; the geometric mean of the speedups per thread
/// count.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "rayon programs, stock rayon-core vs the bwos drop-in (ms: median [min-max]; \
         speedup = stock/bwos, median of pairwise ratios)\n",
    );
    writeln!(
        out,
        "{:<28} {:>7} {:>24} {:>24} {:>8}",
        "program", "threads", "stock ms", "bwos ms", "speedup"
    )
    .expect("writing to a String");
    let mut thread_counts: Vec<usize> = rows.iter().map(|row| row.threads).collect();
    thread_counts.dedup();
    for threads in thread_counts {
        let mut log_sum = 0.0;
        let mut count = 0;
        for row in rows.iter().filter(|row| row.threads == threads) {
            let (Some(stock), Some(bwos), Some(speedup)) = (
                Summary::of(&row.stock_ms),
                Summary::of(&row.bwos_ms),
                row.speedup(),
            ) else {
                continue;
            };
            log_sum += speedup.median.ln();
            count += 1;
            writeln!(
                out,
                "{:<28} {:>7} {:>24} {:>24} {:>7.2}x",
                row.program,
                threads,
                format!("{:.2} [{:.2}-{:.2}]", stock.median, stock.min, stock.max),
                format!("{:.2} [{:.2}-{:.2}]", bwos.median, bwos.min, bwos.max),
                speedup.median
            )
            .expect("writing to a String");
        }
        if count > 0 {
            writeln!(
                out,
                "{:<28} {:>7} {:>24} {:>24} {:>7.2}x",
                "geometric mean",
                threads,
                "",
                "",
                (log_sum / count as f64).exp()
            )
            .expect("writing to a String");
        }
    }
    let idle_rows: Vec<&Row> = rows
        .iter()
        .filter(|row| !row.stock_idle_cpu_ms.is_empty() || !row.bwos_idle_cpu_ms.is_empty())
        .collect();
    if !idle_rows.is_empty() {
        writeln!(
            out,
            "\nCPU time of the whole process while its pool idles after {IDLE_PROBE_PROGRAM} \
             (ms: median [min-max])"
        )
        .expect("writing to a String");
        writeln!(
            out,
            "{:<28} {:>7} {:>24} {:>24}",
            "window", "threads", "stock cpu ms", "bwos cpu ms"
        )
        .expect("writing to a String");
        let cell = |samples: &[f64]| match Summary::of(samples) {
            Some(s) => format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max),
            None => "n/a".to_owned(),
        };
        for row in idle_rows {
            writeln!(
                out,
                "{:<28} {:>7} {:>24} {:>24}",
                "idle",
                row.threads,
                cell(&row.stock_idle_cpu_ms),
                cell(&row.bwos_idle_cpu_ms)
            )
            .expect("writing to a String");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_row_per_program_a_geometric_mean_and_the_idle_cpu() {
        let rows = vec![
            Row {
                program: "sort",
                threads: 1,
                stock_ms: vec![20.0, 22.0],
                bwos_ms: vec![10.0, 11.0],
                stock_idle_cpu_ms: Vec::new(),
                bwos_idle_cpu_ms: Vec::new(),
            },
            Row {
                program: "nested",
                threads: 1,
                stock_ms: vec![10.0, 10.0],
                bwos_ms: vec![20.0, 20.0],
                stock_idle_cpu_ms: vec![3.0, 5.0, 4.0],
                bwos_idle_cpu_ms: vec![0.0, 0.5, 0.25],
            },
        ];
        let table = table(&rows);
        assert!(table.contains("sort"), "{table}");
        assert!(table.contains("2.00x"), "{table}");
        assert!(table.contains("0.50x"), "{table}");
        // sqrt(2 * 0.5) = 1.
        assert!(
            table.contains("geometric mean") && table.contains("1.00x"),
            "{table}"
        );
        assert!(table.contains("4.00 [3.00-5.00]"), "{table}");
        assert!(table.contains("0.25 [0.00-0.50]"), "{table}");
    }
}
