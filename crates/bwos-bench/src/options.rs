//! The options the experiment subcommands share: `--quick`,
//! `--repetitions N`, `--json FILE`, `--plot DIR` and `--threads N,N,..`.
//!
//! Each is declared once here and flattened into the experiments' option
//! structs. What differs between experiments (what `--quick` shortens, the
//! default repetitions, the default thread counts) is said in the
//! experiment's help with `#[command(mut_arg(..))]` and resolved by the
//! experiment: the types here hold only what the user typed.

use std::path::PathBuf;

use clap::{Arg, Args};

/// `--quick`, `--repetitions` and `--json`: every experiment takes them.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// A short smoke run.
    #[arg(long)]
    pub quick: bool,
    /// Repetitions of every configuration (default: the experiment's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repetitions: Option<u32>,
    /// Write every sample to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl RunOptions {
    /// The repetitions to run: `quick` with `--quick`, else the
    /// `--repetitions` asked for, else `default`.
    pub fn repetitions(&self, default: u32, quick: u32) -> u32 {
        if self.quick {
            quick
        } else {
            self.repetitions.unwrap_or(default)
        }
    }

    /// The same options with the JSON file renamed to `name` in the same
    /// directory: how `report` gives every experiment a file of its own.
    pub fn json_beside(&self, name: &str) -> RunOptions {
        RunOptions {
            json: self.json.as_ref().map(|path| path.with_file_name(name)),
            ..self.clone()
        }
    }
}

/// For `#[command(mut_arg("repetitions", ..))]`: `--repetitions`' help in
/// one experiment, `help` and the experiment's `default`.
pub fn repetitions_help(help: &'static str, default: u32) -> impl FnOnce(Arg) -> Arg {
    move |arg| arg.help(format!("{help} [default: {default}]"))
}

/// `--plot DIR`: the experiments that draw plots take it.
#[derive(Debug, Clone, Default, Args)]
pub struct PlotOption {
    /// Write SVG plots into this directory.
    #[arg(id = "plot", long = "plot", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `--threads N,N,..`: the thread counts an experiment runs, comma-separated
/// or repeated (`--threads 1,2 --threads 4`).
#[derive(Debug, Clone, Default, Args)]
pub struct ThreadCounts {
    /// Thread counts to run.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,
}

impl ThreadCounts {
    /// The counts `threads`, as if typed.
    pub fn of(threads: &[u32]) -> ThreadCounts {
        ThreadCounts {
            threads: threads.to_vec(),
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

/// `--threads N`: the worker threads of an experiment that runs one count.
#[derive(Debug, Clone, Args)]
pub struct WorkerThreads {
    /// Worker threads.
    #[arg(id = "threads", long = "threads", value_name = "THREADS", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub count: u32,
}
