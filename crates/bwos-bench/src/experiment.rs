//! The one shape of an experiment. An experiment is a module with a type
//! of its own options (a `clap::Args` struct) that implements
//! [`Experiment`]: its name, what `--quick` and a repetition mean there
//! ([`OptionHelp`]), what it measures and which paper it reproduces
//! ([`About`]), its steps counted before it starts ([`Experiment::plan`]),
//! the run itself, returning [`Results`] (its JSON body, text tables and
//! figures), and optionally its settings within `bwos-bench report`.
//!
//! Everything else is shared: [`Options`] puts `--quick`,
//! `--repetitions`, `--json`, `--plot` and `--threads` in front of the
//! experiment's own options; [`Run`] prints the header, shows progress,
//! prints the tables and writes the JSON and plots; `report` collects the
//! [`Section`] each run leaves. `main.rs` dispatches every subcommand
//! through [`Run`], so adding an experiment is its module and one line in
//! `main.rs`'s list of subcommands.

use std::fmt::Debug;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::header::Header;
use crate::options::{OptionHelp, RunOptions};
use crate::output;
use crate::plot::Figure;
use crate::progress::{Bar, Plan, Progress};
use crate::report;

/// Printed above and below a `--quick` run, and written into the report.
pub const QUICK_BANNER: &str = "QUICK RUN: smoke-test settings (one or two repetitions, short \
     measurements, small inputs). These numbers show that the tool works; do not quote them.";

/// An experiment: implemented by the type of its own options.
pub trait Experiment: OptionHelp + clap::Args + Clone + Debug + Sized + 'static {
    /// Its subcommand.
    const NAME: &'static str;
    /// What the report says about it.
    const ABOUT: About;
    /// Its `--threads`: [`crate::options::WorkerThreads`],
    /// [`crate::options::ThreadCounts`] or [`crate::options::NoThreads`].
    type Threads: clap::Args + Clone + Debug;
    /// The body of its JSON file.
    type Body: Serialize;

    /// Its steps and a rough duration, from the settings alone.
    fn plan(options: &Options<Self>) -> Plan;

    /// Runs it, stepping `bar` as it goes. An error stops it; a failure it
    /// can carry on after goes into [`Results::failures`].
    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Self::Body>>;

    /// Its settings within `bwos-bench report`; `None` keeps it out.
    fn for_report(_report: &report::Settings) -> Option<Options<Self>> {
        None
    }
}

/// An experiment's options as typed: the shared ones, `--threads` in the
/// experiment's form, and its own.
#[derive(Debug, Clone, clap::Args)]
pub struct Options<E: Experiment> {
    #[command(flatten)]
    pub run: RunOptions<E>,
    #[command(flatten)]
    pub threads: E::Threads,
    #[command(flatten)]
    pub own: E,
}

/// What a run of an experiment produced.
pub struct Results<B> {
    /// Its JSON body (beside the header).
    pub body: B,
    /// Its tables as text: Markdown tables (lines starting with `|`) and
    /// preformatted lines.
    pub tables: String,
    /// Its plots.
    pub figures: Vec<Figure>,
    /// This machine's figure for the paper's claim (see [`Paper`]).
    pub result: Option<String>,
    /// What went wrong without stopping it; the command fails after the
    /// files are written.
    pub failures: Vec<String>,
}

impl<B> Results<B> {
    /// Results with nothing beyond the body and the tables.
    pub fn new(body: B, tables: String) -> Results<B> {
        Results {
            body,
            tables,
            figures: Vec::new(),
            result: None,
            failures: Vec::new(),
        }
    }
}

/// What an experiment measures, for the report.
#[derive(Debug)]
pub struct About {
    /// One line: what it measures, against whom.
    pub measures: &'static str,
    /// Which way its numbers are better.
    pub better: &'static str,
    /// The paper result it reproduces, if it reproduces one.
    pub paper: Option<Paper>,
}

/// A paper's figure and claim, with where it was measured.
#[derive(Debug)]
pub struct Paper {
    /// The paper and figure: "BWoS (OSDI'23), Figure 10".
    pub figure: &'static str,
    /// The claim, with its number.
    pub claim: &'static str,
    /// The paper's machine.
    pub machine: &'static str,
    /// The thread count behind the claim.
    pub threads: &'static str,
    /// Why this machine's number may differ, in one sentence.
    pub differs: &'static str,
}

/// What one experiment's run leaves for the report.
#[derive(Debug)]
pub struct Section {
    pub name: &'static str,
    pub about: &'static About,
    pub quick: bool,
    pub tables: String,
    /// The plots written: file name and title.
    pub plots: Vec<(String, String)>,
    pub result: Option<String>,
    /// The JSON file written.
    pub json: Option<PathBuf>,
    pub failures: Vec<String>,
    pub elapsed: Duration,
}

impl Section {
    /// `Err` naming every failure, if there were any.
    pub fn outcome(&self) -> io::Result<()> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let mut message = format!("{}: {} failure(s):", self.name, self.failures.len());
        for failure in &self.failures {
            message.push_str("\n  ");
            message.push_str(failure);
        }
        Err(io::Error::other(message))
    }
}

/// An experiment ready to run, whatever its type: what `report` holds.
pub trait Measure {
    fn name(&self) -> &'static str;
    fn plan(&self) -> Plan;
    /// Runs it, prints its tables, writes its files; never fails: what
    /// went wrong is in the section's failures.
    fn measure(&self, header: &Header, bar: &Bar) -> Section;
}

impl<E: Experiment> Measure for Options<E> {
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn plan(&self) -> Plan {
        E::plan(self)
    }

    fn measure(&self, header: &Header, bar: &Bar) -> Section {
        let started = Instant::now();
        let mut section = Section {
            name: E::NAME,
            about: &E::ABOUT,
            quick: self.run.quick,
            tables: String::new(),
            plots: Vec::new(),
            result: None,
            json: None,
            failures: Vec::new(),
            elapsed: Duration::ZERO,
        };
        let results = E::run(self, bar);
        bar.finish();
        match results {
            Ok(results) => {
                bar.suspend(|| print!("{}", results.tables));
                section.tables = results.tables;
                section.result = results.result;
                section.failures = results.failures;
                if let Some(path) = &self.run.json {
                    match output::write_json(header, &results.body, path) {
                        Ok(()) => {
                            bar.suspend(|| println!("\nwrote {}", path.display()));
                            section.json = Some(path.clone());
                        }
                        Err(error) => section.failures.push(error.to_string()),
                    }
                }
                if let Some(dir) = &self.run.plot {
                    match output::draw_figures(&results.figures, dir) {
                        Ok(paths) => {
                            for (figure, path) in results.figures.iter().zip(paths) {
                                bar.suspend(|| println!("wrote {}", path.display()));
                                section
                                    .plots
                                    .push((figure.file.clone(), figure.title.clone()));
                            }
                        }
                        Err(error) => section.failures.push(error.to_string()),
                    }
                }
            }
            Err(error) => section.failures.push(error.to_string()),
        }
        section.elapsed = started.elapsed();
        section
    }
}

/// A subcommand: what `main` runs.
pub trait Run {
    /// Runs it; an error makes the process exit with status 1.
    fn run(&self) -> io::Result<()>;

    /// Its part of `bwos-bench report`, if it has one.
    fn in_report(_report: &report::Settings) -> Option<Box<dyn Measure>>
    where
        Self: Sized,
    {
        None
    }
}

impl<E: Experiment> Run for Options<E> {
    fn run(&self) -> io::Result<()> {
        let header = Header::collect();
        print!("{}", header.render());
        let quick = self.run.quick;
        if quick {
            println!("\n{QUICK_BANNER}");
        }
        let plan = self.plan();
        let progress = Progress::new(&[(E::NAME, plan)]);
        let section = self.measure(&header, &progress.experiment(0, plan.steps));
        progress.finish();
        if quick {
            println!("\n{QUICK_BANNER}");
        }
        section.outcome()
    }

    fn in_report(report: &report::Settings) -> Option<Box<dyn Measure>> {
        E::for_report(report).map(|options| Box::new(options) as Box<dyn Measure>)
    }
}
