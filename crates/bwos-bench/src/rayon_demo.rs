//! `bwos-bench rayon-demo`: rayon's own benchmark suite (`rayon-demo`, from
//! the rayon repository at the 1.12.0 release) on stock rayon-core and on
//! the drop-in, both built with the **default** bench profile (what users
//! get), run alternately on each thread count; per-benchmark ratios and
//! their geometric mean.
//!
//! rayon-demo is not published and is never copied into this repository:
//! the command takes a checkout (`--source DIR`), copies it under
//! `target/rayon-demo/{stock,bwos}`, and changes the copies only as
//! needed to build here: the OpenGL visualizer of `nbody` (glium, winit)
//! is left out, and the `bwos` copy's rayon depends on
//! `crates/rayon-core` instead of its own. The suite's benchmarks use
//! `#![feature(test)]`, so they build with the nightly toolchain.
//!
//! One pass runs the whole suite binary (or the benchmarks matching
//! `--filter`) once; passes alternate between the builds, stock first in
//! even passes. A benchmark's ratio is stock ns/iter over bwos ns/iter per
//! pair of passes (above 1: bwos faster), summarised by its median.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::experiment::Run;
use crate::header::Header;
use crate::options::{ThreadCounts, ThreadsHelp};
use crate::output;
use crate::stats::Summary;

/// The rayon release whose rayon-demo the command runs.
pub const RAYON_VERSION: &str = "1.12.0";
/// Its commit in the rayon repository.
pub const RAYON_COMMIT: &str = "94d3d454";

/// Options of `bwos-bench rayon-demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct RayonDemoArgs {
    /// A checkout of the rayon repository at the 1.12.0 release
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,
    /// Passes per build and thread count (the builds alternate)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub passes: u32,
    /// Only the benchmarks whose name contains this (libtest's filter)
    #[arg(long)]
    pub filter: Option<String>,
    /// `--threads`.
    #[command(flatten)]
    pub threads: ThreadCounts<RayonDemoArgs>,
    /// Write every sample to this JSON file
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl ThreadsHelp for RayonDemoArgs {
    const THREADS: &'static str =
        "Thread counts (RAYON_NUM_THREADS), comma-separated or repeated (default: 2)";
}

impl Run for RayonDemoArgs {
    fn run(&self) -> io::Result<()> {
        let header = Header::collect();
        print!("{}", header.render());
        let rows = run(self)?;
        print!("{}", table(&rows));
        // The JSON body is an object: the header's fields sit beside `rows`.
        #[derive(Serialize)]
        struct Body<'a> {
            rows: &'a [Row],
        }
        if let Some(path) = &self.json {
            output::write_json(&header, &Body { rows: &rows }, path)?;
            println!("\nwrote {}", path.display());
        }
        Ok(())
    }
}

/// The two builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Build {
    Stock,
    Bwos,
}

impl Build {
    fn name(self) -> &'static str {
        match self {
            Build::Stock => "stock",
            Build::Bwos => "bwos",
        }
    }
}

/// One benchmark on one thread count: ns/iter per pass of each build.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub threads: usize,
    pub stock_ns: Vec<f64>,
    pub bwos_ns: Vec<f64>,
}

impl Row {
    /// Stock over bwos, pass by pass.
    pub fn speedup(&self) -> Option<Summary> {
        Summary::of_ratios(&self.stock_ns, &self.bwos_ns)
    }
}

/// What to say when `--source` is missing or is not rayon 1.12.0.
fn how_to_get_it() -> String {
    format!(
        "rayon-demo is not published; get the rayon repository at the {RAYON_VERSION} release \
         and pass it with --source:\n  git clone https://github.com/rayon-rs/rayon\n  \
         git -C rayon checkout {RAYON_COMMIT}\n  bwos-bench rayon-demo --source rayon\n\
         (the nightly toolchain builds it: rayon-demo's benchmarks use #![feature(test)])"
    )
}

/// Checks that `source` is a rayon checkout at the expected release.
fn check_source(source: &Path) -> io::Result<()> {
    let manifest = fs::read_to_string(source.join("Cargo.toml")).map_err(|error| {
        io::Error::other(format!(
            "{}: no Cargo.toml ({error})\n{}",
            source.display(),
            how_to_get_it()
        ))
    })?;
    let is_release = manifest.contains("name = \"rayon\"")
        && manifest.contains(&format!("version = \"{RAYON_VERSION}\""));
    if !is_release || !source.join("rayon-demo/Cargo.toml").is_file() {
        return Err(io::Error::other(format!(
            "{} is not the rayon repository at {RAYON_VERSION} with rayon-demo\n{}",
            source.display(),
            how_to_get_it()
        )));
    }
    Ok(())
}

/// Copies `from` into `to` (created), leaving out `.git` and `target`.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" || name == "target" {
            continue;
        }
        let (source, destination) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            copy_tree(&source, &destination)?;
        } else {
            fs::copy(&source, &destination)?;
        }
    }
    Ok(())
}

/// Replaces `old` with `new` in the file at `path`; an error naming the
/// file if `old` is not there (the checkout is not the expected release).
fn replace_in(path: &Path, old: &str, new: &str) -> io::Result<()> {
    let text = fs::read_to_string(path)?;
    if !text.contains(old) {
        return Err(io::Error::other(format!(
            "{}: expected {old:?}, not found: is this rayon {RAYON_VERSION}?",
            path.display()
        )));
    }
    fs::write(path, text.replacen(old, new, 1))
}

/// Prepares the copy for `which` and builds its benchmarks; returns the
/// suite binary.
fn build(source: &Path, which: Build) -> io::Result<PathBuf> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate_dir.join("../../target/rayon-demo").join(which.name());
    // A fresh copy of the sources; the copy's `target` stays, so that a
    // second run rebuilds only what changed (the drop-in).
    if dir.exists() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_name() == "target" {
                continue;
            }
            if entry.file_type()?.is_dir() {
                fs::remove_dir_all(entry.path())?;
            } else {
                fs::remove_file(entry.path())?;
            }
        }
    }
    copy_tree(source, &dir)?;
    // The visualizer needs OpenGL and a window system: left out.
    let demo_manifest = dir.join("rayon-demo/Cargo.toml");
    let manifest = fs::read_to_string(&demo_manifest)?;
    let kept: Vec<&str> = manifest
        .lines()
        .filter(|line| !line.starts_with("glium") && !line.starts_with("winit"))
        .collect();
    fs::write(&demo_manifest, kept.join("\n") + "\n")?;
    fs::write(
        dir.join("rayon-demo/src/nbody/visualize.rs"),
        "//! Left out by bwos-bench rayon-demo (OpenGL).\n\
         pub fn visualize_benchmarks(_bodies: usize, _mode: super::ExecutionMode) {\n    \
         eprintln!(\"built without the visualizer\");\n    std::process::exit(2);\n}\n",
    )?;
    if which == Build::Bwos {
        let drop_in = crate_dir.join("../rayon-core").canonicalize()?;
        let root = dir.join("Cargo.toml");
        replace_in(
            &root,
            "rayon-core = { version = \"1.13.0\", path = \"rayon-core\" }",
            &format!("rayon-core = {{ version = \"1.13.0\", path = {drop_in:?} }}"),
        )?;
        // The stock rayon-core leaves the workspace: one package per name.
        replace_in(
            &root,
            "members = [\"rayon-demo\", \"rayon-core\"]",
            "members = [\"rayon-demo\"]",
        )?;
    }
    eprintln!(
        "building rayon-demo ({}) with the default bench profile ...",
        which.name()
    );
    let output = Command::new("cargo")
        .args(["+nightly", "bench", "--no-run", "-p", "rayon-demo"])
        .current_dir(&dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "building rayon-demo ({}) failed:\n{stderr}",
            which.name()
        )));
    }
    // cargo names the suite's binary on its `Executable benches
    // src/main.rs (PATH)` line, relative to the directory it ran in.
    stderr
        .lines()
        .find_map(|line| {
            let line = line.trim();
            line.strip_prefix("Executable ")?
                .strip_prefix("benches src/main.rs")?;
            let start = line.rfind('(')? + 1;
            Some(PathBuf::from(&line[start..line.len() - 1]))
        })
        .map(|binary| {
            if binary.is_absolute() {
                binary
            } else {
                dir.join(binary)
            }
        })
        .ok_or_else(|| io::Error::other(format!("no Executable line in cargo's output:\n{stderr}")))
}

/// Parses libtest's `test NAME ... bench: N ns/iter (+/- M)` lines.
pub fn parse_bench_output(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (name, result) = rest.split_once(" ... bench:")?;
            let number: String = result
                .split("ns/iter")
                .next()?
                .chars()
                .filter(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            Some((name.trim().to_string(), number.parse().ok()?))
        })
        .collect()
}

/// One pass of the suite binary of one build on `threads` threads.
fn run_pass(
    binary: &Path,
    which: Build,
    threads: usize,
    filter: Option<&str>,
) -> io::Result<Vec<(String, f64)>> {
    let mut command = Command::new(binary);
    command.arg("--bench");
    if let Some(filter) = filter {
        command.arg(filter);
    }
    // rayon-demo reads its data files relative to its package.
    if let Some(demo_dir) = binary
        .ancestors()
        .find(|dir| dir.join("rayon-demo").is_dir())
    {
        command.current_dir(demo_dir.join("rayon-demo"));
    }
    let output = command
        .env("RAYON_NUM_THREADS", threads.to_string())
        .env_remove("BWOS_NUM_THREADS")
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "rayon-demo ({}) on {threads} threads failed ({}):\n{stdout}\n{}",
            which.name(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(parse_bench_output(&stdout))
}

/// Builds both copies and runs the passes.
pub fn run(args: &RayonDemoArgs) -> io::Result<Vec<Row>> {
    let source = args
        .source
        .as_deref()
        .ok_or_else(|| io::Error::other(how_to_get_it()))?;
    check_source(source)?;
    let stock = build(source, Build::Stock)?;
    let bwos = build(source, Build::Bwos)?;
    let threads = args.threads.or_else(|| vec![2]);
    let mut rows: BTreeMap<(usize, String), Row> = BTreeMap::new();
    for pass in 0..args.passes {
        for &count in &threads {
            let order = if pass % 2 == 0 {
                [Build::Stock, Build::Bwos]
            } else {
                [Build::Bwos, Build::Stock]
            };
            for which in order {
                eprintln!(
                    "rayon-demo pass {} of {}: {} on {count} threads",
                    pass + 1,
                    args.passes,
                    which.name()
                );
                let binary = if which == Build::Stock { &stock } else { &bwos };
                for (benchmark, ns) in run_pass(binary, which, count, args.filter.as_deref())? {
                    let row = rows
                        .entry((count, benchmark.clone()))
                        .or_insert_with(|| Row {
                            benchmark,
                            threads: count,
                            ..Row::default()
                        });
                    match which {
                        Build::Stock => row.stock_ns.push(ns),
                        Build::Bwos => row.bwos_ns.push(ns),
                    }
                }
            }
        }
    }
    Ok(rows.into_values().collect())
}

/// Per thread count: every benchmark's medians and ratio, slowest ratio
/// first, then the geometric mean and the count below 0.90x.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "rayon-demo (rayon 1.12.0), default bench profile: stock rayon-core vs the bwos drop-in \
         (ns/iter: median of passes; ratio = stock/bwos, median of pairwise ratios; above 1, \
         bwos is faster)\n",
    );
    let mut thread_counts: Vec<usize> = rows.iter().map(|row| row.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    for threads in thread_counts {
        let mut measured: Vec<(&Row, Summary)> = rows
            .iter()
            .filter(|row| row.threads == threads)
            .filter_map(|row| Some((row, row.speedup()?)))
            .collect();
        measured.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
        let _ = writeln!(out, "\n{threads} threads\n");
        let _ = writeln!(
            out,
            "| benchmark | stock ns/iter | bwos ns/iter | stock/bwos (min-max) |"
        );
        let _ = writeln!(out, "|---|---|---|---|");
        for (row, ratio) in &measured {
            let median = |values: &[f64]| Summary::of(values).map_or(f64::NAN, |s| s.median);
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.0} | {:.2} ({:.2}-{:.2}) |",
                row.benchmark,
                median(&row.stock_ns),
                median(&row.bwos_ns),
                ratio.median,
                ratio.min,
                ratio.max
            );
        }
        if !measured.is_empty() {
            let geomean = (measured.iter().map(|(_, r)| r.median.ln()).sum::<f64>()
                / measured.len() as f64)
                .exp();
            let below = measured.iter().filter(|(_, r)| r.median < 0.90).count();
            let _ = writeln!(
                out,
                "\ngeometric mean on {threads} threads: {geomean:.3}x over {} benchmarks; \
                 {below} below 0.90x",
                measured.len()
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_bench_lines_are_parsed() {
        let text = "running 3 tests\n\
            test fibonacci::fibonacci_join_1_2 ... bench:   1,234,567.50 ns/iter (+/- 12,345.00)\n\
            test join_microbench::increment_all ... bench:      15,123 ns/iter (+/- 1,234)\n\
            test sort::par_sort_ascending ... ignored\n\
            test result: ok. 0 passed; 0 failed; 1 ignored; 2 measured\n";
        assert_eq!(
            parse_bench_output(text),
            vec![
                ("fibonacci::fibonacci_join_1_2".to_string(), 1_234_567.5),
                ("join_microbench::increment_all".to_string(), 15_123.0),
            ]
        );
    }

    #[test]
    fn a_missing_or_wrong_source_says_how_to_get_it() {
        let missing = check_source(Path::new("/nonexistent/rayon")).unwrap_err();
        assert!(missing.to_string().contains(RAYON_COMMIT));
        let not_rayon = check_source(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap_err();
        assert!(
            not_rayon
                .to_string()
                .contains("is not the rayon repository")
        );
    }
}
