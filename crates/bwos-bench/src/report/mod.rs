//! `bwos-bench report`: every experiment that has a part in it (see
//! `main.rs`'s list), in turn, each with its short settings, under one
//! progress display; then the report in one directory (`--plot DIR`,
//! `target/report` by default): `index.html` (one static page: the
//! machine, every table and plot, what each experiment measures and which
//! way is better, the papers' claims beside this machine's results),
//! report.md (the same tables), the SVG plots and the JSON files. The
//! page is checked after it is written (`page::check`): every plot it
//! shows exists, every experiment has its tables.

pub mod page;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::experiment::{QUICK_BANNER, Run};
use crate::header::Header;
use crate::options::{OptionHelp, RunOptions};
use crate::progress::Progress;
use crate::queue::QueueArgs;

/// Where the report goes without `--plot`.
pub const DEFAULT_DIR: &str = "target/report";

/// Options of `bwos-bench report`: the shared ones apply to every
/// experiment, the queue experiment's only to it.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub run: RunOptions<ReportArgs>,
    /// Run the fork/join suite on the paper's inputs (Table I) instead of
    /// small ones: hours instead of minutes.
    #[arg(long)]
    pub full: bool,
    #[command(flatten, next_help_heading = "Queue experiment")]
    pub queue: QueueArgs,
}

impl OptionHelp for ReportArgs {
    const QUICK: &'static str = "A smoke run of every experiment (each one's --quick): a few \
         minutes, and numbers that only show the tool works (the report says so)";
    const REPETITIONS: &'static str = "Repetitions of the queue experiment and, up to 3, of the \
         fork/join suite and rayon; the others run a fixed number (async 3, http 1, latency 3, \
         corun 1, worklist 3)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "The report's directory: index.html, report.md, the SVG plots \
         and (without --json) the JSON files [default: target/report]";
}

/// What every experiment's part of the report is made from: the report's
/// options, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub quick: bool,
    pub repetitions: Option<u32>,
    /// The report's directory.
    pub dir: PathBuf,
    /// The first experiment's JSON file; the others' go beside it.
    pub json: PathBuf,
    /// The fork/join suite on the paper's inputs.
    pub full: bool,
    /// The queue experiment's own options.
    pub queue: QueueArgs,
}

impl Settings {
    pub fn of(args: &ReportArgs) -> Settings {
        let dir = args
            .run
            .plot
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        Settings {
            quick: args.run.quick,
            repetitions: args.run.repetitions,
            json: args
                .run
                .json
                .clone()
                .unwrap_or_else(|| dir.join("queue.json")),
            dir,
            full: args.full,
            queue: args.queue.clone(),
        }
    }

    /// The JSON file of experiment `name`: `<name>.json` beside the first
    /// experiment's.
    pub fn json_beside(&self, name: &str) -> PathBuf {
        self.json.with_file_name(format!("{name}.json"))
    }

    /// An experiment's shared options in the report: `--quick` as given,
    /// `repetitions`, its JSON file `json`, its plots into the report's
    /// directory.
    pub fn run_options<H: OptionHelp>(
        &self,
        json: PathBuf,
        repetitions: Option<u32>,
    ) -> RunOptions<H> {
        RunOptions {
            quick: self.quick,
            repetitions,
            json: Some(json),
            plot: Some(self.dir.clone()),
            ..RunOptions::default()
        }
    }
}

impl Run for ReportArgs {
    fn run(&self) -> io::Result<()> {
        let started = Instant::now();
        let header = Header::collect();
        print!("{}", header.render());
        let settings = Settings::of(self);
        if settings.quick {
            println!("\n{QUICK_BANNER}");
        }
        let experiments = crate::experiments(&settings);
        let plans: Vec<_> = experiments.iter().map(|e| (e.name(), e.plan())).collect();
        let progress = Progress::new(&plans);
        let mut sections = Vec::new();
        for (index, experiment) in experiments.iter().enumerate() {
            let bar = progress.experiment(index, plans[index].1.steps);
            let section = experiment.measure(&header, &bar);
            for failure in &section.failures {
                bar.note(&format!("{}: FAILED: {failure}", section.name));
            }
            sections.push(section);
        }
        progress.finish();
        let report = page::Report {
            header: &header,
            sections: &sections,
            elapsed: started.elapsed(),
        };
        let written = page::write(&report, &settings.dir)?;
        for path in &written {
            println!("wrote {}", path.display());
        }
        page::check(&settings.dir, &sections).map_err(|problems| {
            io::Error::other(format!(
                "the report's page is broken:\n  {}",
                problems.join("\n  ")
            ))
        })?;
        if settings.quick {
            println!("\n{QUICK_BANNER}");
        }
        println!(
            "\nthe report: {}",
            absolute(&settings.dir.join("index.html")).display()
        );
        let failed: Vec<String> = sections
            .iter()
            .filter_map(|s| s.outcome().err())
            .map(|e| e.to_string())
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(io::Error::other(failed.join("\n")))
        }
    }
}

/// `path` from the filesystem root, for a link a terminal can open.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
