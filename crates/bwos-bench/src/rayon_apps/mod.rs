//! `bwos-bench rayon-apps`: real rayon programs from crates.io, built from
//! their published source twice (stock rayon-core, and rayon-core patched
//! to the drop-in `crates/rayon-core`), run on generated inputs, their
//! outputs compared byte for byte, their wall and CPU times compared.
//!
//! - **Source**: each program's `.crate` as published (`apps.rs` pins the
//!   version), downloaded once into `target/rayon-apps/downloads`,
//!   unpacked twice (into `stock` and `bwos` directories). The only change to the published
//!   files is an empty `[workspace]` table appended to `Cargo.toml`, so
//!   that cargo does not take the package for a member of this repository's
//!   workspace (the copies live under its `target/`).
//! - **Builds** (`builds.rs`): the program's own `Cargo.lock` (`--locked`;
//!   a program that publishes none is resolved once, and the table says
//!   so), its own release profile, `cargo build --release`. The `bwos`
//!   copy adds `--config patch.crates-io.rayon-core.path=...`; the build
//!   then checks that its lock keeps every package of the published lock
//!   at its version except rayon-core (the drop-in's own dependencies are
//!   added) and that the binary carries the bwos runtime. Both builds share
//!   one target directory, so only the crates above rayon-core build twice;
//!   reruns rebuild nothing unless the drop-in or bwos changed.
//! - **Inputs** (`inputs.rs`): generated from fixed seeds and kept under
//!   `target/rayon-apps/inputs`: random files of several sizes (hashing),
//!   PNG images drawn like photos, screenshots, posters and scanned pages
//!   (compression, comparison), a directory tree shaped like a home
//!   directory (disk usage) and a source tree in six languages (line
//!   counting).
//! - **Runs** (`measure.rs`): one unmeasured warm-up run per build, then
//!   `--repetitions` rounds; each round runs every program once per
//!   build, back to back, the build that goes first alternating between
//!   rounds. Wall time is measured around the child; CPU time is its user
//!   plus system time from `wait4` (all its threads, spinning included);
//!   context switches come from the same `rusage`. Every run's output
//!   (stdout and any files it writes) must equal the first stock run's,
//!   byte for byte, or the command fails.
//! - **Ratios** (`table.rs`): stock / bwos per round (above 1: bwos
//!   faster, or cheaper), summarised by their median; their geometric
//!   mean over the programs.
//!
//! `RAYON_NUM_THREADS` is `--threads` (2) for both builds; `BWOS_NUM_THREADS`
//! is removed from the children's environment, so the drop-in takes
//! rayon's variable as stock rayon-core does.

mod apps;
mod builds;
mod images;
mod inputs;
mod measure;
mod table;
mod trees;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::header::Header;

use apps::App;
pub use apps::AppName;
use builds::{Build, Variant};
use measure::Run;

/// Rounds without `--repetitions`.
pub const REPETITIONS: u32 = 10;

/// Options of `bwos-bench rayon-apps`.
#[derive(Debug, Clone, clap::Args)]
pub struct RayonAppsArgs {
    /// A smoke run: b3sum only (unless --apps), small inputs, 2 rounds
    #[arg(long)]
    pub quick: bool,
    /// Rounds of runs, each running every program once per build [default: 10]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repetitions: Option<u32>,
    /// Programs to run, comma-separated [default: all; with --quick: b3sum]
    #[arg(long, value_enum, value_delimiter = ',')]
    pub apps: Vec<AppName>,
    /// Worker threads of both builds (RAYON_NUM_THREADS)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Where sources, builds and inputs are kept [default: target/rayon-apps]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write every sample to this JSON file
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl RayonAppsArgs {
    /// The programs to run, in the table's order.
    pub fn apps(&self) -> Vec<AppName> {
        if !self.apps.is_empty() {
            let mut chosen = self.apps.clone();
            chosen.sort();
            chosen.dedup();
            return chosen;
        }
        if self.quick {
            vec![AppName::B3sum]
        } else {
            AppName::ALL.to_vec()
        }
    }

    /// The rounds to run.
    pub fn rounds(&self) -> u32 {
        match (self.quick, self.repetitions) {
            (_, Some(rounds)) => rounds,
            (true, None) => 2,
            (false, None) => REPETITIONS,
        }
    }

    /// The working directory.
    fn work_dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/rayon-apps")
        })
    }
}

/// One program's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The program (its binary's name).
    pub app: &'static str,
    /// The published package and version.
    pub package: String,
    /// Which lock the builds started from (the published one, as is or
    /// updated where stale, or none).
    pub lock: String,
    /// The packages the drop-in added to the lock (its own dependencies).
    pub added_to_lock: Vec<String>,
    /// The command line the program ran, arguments after the binary.
    pub arguments: Vec<String>,
    /// Stock runs, round by round.
    pub stock: Vec<Run>,
    /// Drop-in runs, round by round.
    pub bwos: Vec<Run>,
}

/// A program ready to run: its builds, arguments, run directory and
/// output directory.
type Prepared = (App, Build, Build, Vec<String>, PathBuf, Option<PathBuf>);

/// How `prepared` runs on `threads`.
fn plan<'a>(prepared: &'a Prepared, threads: u32, work: &'a Path) -> measure::Plan<'a> {
    let (app, _, _, arguments, dir, out) = prepared;
    measure::Plan {
        app,
        arguments,
        threads,
        work,
        dir,
        out: out.as_deref(),
    }
}

/// What the JSON file holds besides the header.
#[derive(Debug, Serialize)]
struct Body<'a> {
    threads: u32,
    rounds: u32,
    rows: &'a [Row],
}

/// Runs the experiment: prints the table, writes the JSON if asked.
pub fn run(header: &Header, args: &RayonAppsArgs) -> std::io::Result<()> {
    let work = args.work_dir();
    std::fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    let drop_in = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rayon-core")
        .canonicalize()?;
    let scale = if args.quick {
        inputs::Scale::Quick
    } else {
        inputs::Scale::Full
    };
    let runs_dir = work.join("runs");
    let mut rows = Vec::new();
    let mut prepared = Vec::new();
    for name in args.apps() {
        let app = App::of(name);
        let stock = builds::build(&work, &app, Variant::Stock, &drop_in)?;
        let bwos = builds::build(&work, &app, Variant::Bwos, &drop_in)?;
        // Programs run in the work directory, on paths relative to it:
        // the same arguments, and the same paths in outputs, for both
        // builds and on every machine.
        let input = inputs::prepare(Path::new("inputs"), app.input, scale, &work)?;
        let out_dir = Path::new("runs").join(app.binary).join("out");
        let out = app.writes_files.then(|| out_dir.clone());
        let arguments = app.arguments(&input, &out_dir);
        let dir = runs_dir.join(app.binary);
        rows.push(Row {
            app: app.binary,
            package: format!("{}-{}", app.package, app.version),
            lock: stock.lock.clone(),
            added_to_lock: bwos.added_to_lock.clone(),
            arguments: arguments.clone(),
            stock: Vec::new(),
            bwos: Vec::new(),
        });
        prepared.push((app, stock, bwos, arguments, dir, out));
    }
    let rounds = args.rounds();
    let mut references = Vec::new();
    for prepared in &prepared {
        let (app, stock, bwos, ..) = prepared;
        eprintln!("warming up {} ...", app.binary);
        let plan = plan(prepared, args.threads, &work);
        let reference = plan.run(stock)?.output;
        let again = plan.run(bwos)?.output;
        measure::require_identical(app.binary, &reference, &again)?;
        references.push(reference);
    }
    for round in 0..rounds {
        eprintln!("round {} of {rounds} ...", round + 1);
        for ((prepared, row), reference) in prepared.iter().zip(&mut rows).zip(&references) {
            let (app, stock, bwos, ..) = prepared;
            let plan = plan(prepared, args.threads, &work);
            let order: [&Build; 2] = if round % 2 == 0 {
                [stock, bwos]
            } else {
                [bwos, stock]
            };
            for build in order {
                let outcome = plan.run(build)?;
                measure::require_identical(app.binary, reference, &outcome.output)?;
                match build.variant {
                    Variant::Stock => row.stock.push(outcome.run),
                    Variant::Bwos => row.bwos.push(outcome.run),
                }
            }
        }
    }
    println!(
        "{} round(s), RAYON_NUM_THREADS={}, inputs: {}",
        rounds,
        args.threads,
        scale.describe()
    );
    print!("{}", table::render(&rows));
    if let Some(path) = &args.json {
        crate::output::write_json(
            header,
            &Body {
                threads: args.threads,
                rounds,
                rows: &rows,
            },
            path,
        )?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

impl crate::experiment::Run for RayonAppsArgs {
    fn run(&self) -> std::io::Result<()> {
        let header = Header::collect();
        print!("{}", header.render());
        run(&header, self)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RayonAppsArgs,
    }

    fn parse(line: &str) -> Result<RayonAppsArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("rayon-apps").chain(line.split_whitespace()))
            .map(|cli| cli.args)
    }

    /// The smoke run is b3sum alone, 2 rounds; `--apps` picks and orders
    /// the programs whatever `--quick` says; unknown names are refused
    /// with the list of known ones.
    #[test]
    fn the_options_choose_programs_rounds_and_threads() {
        let quick = parse("--quick --json target/bench/rayon-apps.json").unwrap();
        assert_eq!(
            (quick.apps(), quick.rounds(), quick.threads),
            (vec![AppName::B3sum], 2, 2)
        );
        let full = parse("").unwrap();
        assert_eq!(
            (full.apps(), full.rounds()),
            (AppName::ALL.to_vec(), REPETITIONS)
        );
        let chosen = parse("--apps tokei,b3sum,tokei --repetitions 3 --threads 4 --quick").unwrap();
        assert_eq!(chosen.apps(), [AppName::B3sum, AppName::Tokei]);
        assert_eq!((chosen.rounds(), chosen.threads), (3, 4));
        let unknown = parse("--apps ripgrep").unwrap_err().to_string();
        assert!(unknown.contains("oxipng"), "{unknown}");
        assert!(parse("--threads 0").is_err());
    }
}
