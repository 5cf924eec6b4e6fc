//! The options the experiment subcommands share: `--quick`,
//! `--repetitions N`, `--json FILE`, `--plot DIR` and `--threads`.
//!
//! Each is declared once here; [`crate::experiment::Options`] puts them in
//! front of an experiment's own options. What differs between experiments
//! (what `--quick` shortens, the default repetitions, what `--threads`
//! counts) is said by the experiment's [`OptionHelp`] constants and
//! resolved by the experiment: the types here hold only what the user
//! typed.

use std::fmt::Debug;
use std::marker::PhantomData;
use std::path::PathBuf;

use clap::Args;

/// What the shared options say in one experiment's `--help`.
pub trait OptionHelp {
    /// What `--quick` does.
    const QUICK: &'static str;
    /// What a repetition covers.
    const REPETITIONS: &'static str;
    /// Repetitions without `--repetitions`.
    const DEFAULT_REPETITIONS: u32;
    /// What `--plot` draws.
    const PLOT: &'static str = "Write SVG plots into this directory";
    /// What `--threads` counts, where the experiment has it.
    const THREADS: &'static str = "Worker threads";
}

/// What `--threads` counts, for its help: an experiment's
/// [`OptionHelp::THREADS`], or a subcommand's own.
pub trait ThreadsHelp {
    /// `--threads`' help.
    const THREADS: &'static str;
}

impl<H: OptionHelp> ThreadsHelp for H {
    const THREADS: &'static str = <H as OptionHelp>::THREADS;
}

/// `--repetitions`' help: what a repetition covers and the default.
fn repetitions_help<H: OptionHelp>() -> String {
    format!("{} [default: {}]", H::REPETITIONS, H::DEFAULT_REPETITIONS)
}

/// `--quick`, `--repetitions`, `--json` and `--plot`: every experiment
/// takes them; `H` says what they mean there.
#[derive(Debug, Clone, Args)]
pub struct RunOptions<H: OptionHelp> {
    #[arg(long, help = H::QUICK)]
    pub quick: bool,
    #[arg(long, help = repetitions_help::<H>(), value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repetitions: Option<u32>,
    /// Write every sample to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[arg(id = "plot", long = "plot", value_name = "DIR", help = H::PLOT)]
    pub plot: Option<PathBuf>,
    /// Whose help the options show.
    #[arg(skip)]
    pub help: PhantomData<H>,
}

impl<H: OptionHelp> Default for RunOptions<H> {
    fn default() -> Self {
        RunOptions {
            quick: false,
            repetitions: None,
            json: None,
            plot: None,
            help: PhantomData,
        }
    }
}

impl<H: OptionHelp> RunOptions<H> {
    /// The repetitions to run: `quick` with `--quick`, else the
    /// `--repetitions` asked for, else the experiment's default.
    pub fn repetitions(&self, quick: u32) -> u32 {
        if self.quick {
            quick
        } else {
            self.repetitions.unwrap_or(H::DEFAULT_REPETITIONS)
        }
    }

    /// The same settings for another experiment (`report`'s way of giving
    /// each its options).
    pub fn to<G: OptionHelp>(&self) -> RunOptions<G> {
        RunOptions {
            quick: self.quick,
            repetitions: self.repetitions,
            json: self.json.clone(),
            plot: self.plot.clone(),
            help: PhantomData,
        }
    }
}

/// No `--threads`: the experiments that fix their thread counts.
#[derive(Debug, Clone, Default, Args)]
pub struct NoThreads {}

/// `--threads N,N,..`: the thread counts an experiment runs, comma-separated
/// or repeated (`--threads 1,2 --threads 4`).
#[derive(Debug, Clone, Args)]
pub struct ThreadCounts<H: ThreadsHelp> {
    #[arg(long, help = H::THREADS, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,
    #[arg(skip)]
    help: PhantomData<H>,
}

impl<H: ThreadsHelp> Default for ThreadCounts<H> {
    fn default() -> Self {
        ThreadCounts::of(&[])
    }
}

impl<H: ThreadsHelp> ThreadCounts<H> {
    /// The counts `threads`, as if typed.
    pub fn of(threads: &[u32]) -> Self {
        ThreadCounts {
            threads: threads.to_vec(),
            help: PhantomData,
        }
    }

    /// The counts asked for, or `default()` if none were.
    pub fn or_else(&self, default: impl FnOnce() -> Vec<usize>) -> Vec<usize> {
        if self.threads.is_empty() {
            default()
        } else {
            self.threads.iter().map(|&t| t as usize).collect()
        }
    }
}

/// `--threads N`: the worker threads of an experiment that runs one count
/// (2 unless given).
#[derive(Debug, Clone, Args)]
pub struct WorkerThreads<H: ThreadsHelp> {
    #[arg(id = "threads", long = "threads", value_name = "THREADS", help = H::THREADS, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub count: u32,
    #[arg(skip)]
    help: PhantomData<H>,
}

impl<H: ThreadsHelp> WorkerThreads<H> {
    /// `count` workers, as if typed.
    pub fn of(count: u32) -> Self {
        WorkerThreads {
            count,
            help: PhantomData,
        }
    }
}
