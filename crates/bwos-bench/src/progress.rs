//! What a run shows while it runs: one `indicatif` display for the whole
//! run, a bar per experiment ("experiment k of n", its steps, elapsed and
//! ETA) and, when there is more than one experiment, a line for the run
//! (elapsed and ETA overall).
//!
//! Every bar's length is known before its experiment starts: each
//! experiment counts its steps from its settings ([`Plan`]). The overall
//! line weighs each experiment by its rough duration estimate, so its ETA
//! is the estimate of what is left, corrected by how fast the estimates
//! have come true so far. When stderr is not a terminal (CI) nothing is
//! drawn; a line per experiment started and finished is printed instead.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What an experiment will do, counted before it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Steps its bar counts (measurements, builds, calibrations).
    pub steps: u64,
    /// A rough duration, only to weigh it against the others.
    pub seconds: f64,
}

impl Plan {
    /// `steps` steps of about `seconds_each`.
    pub fn steps(steps: u64, seconds_each: f64) -> Plan {
        Plan {
            steps,
            seconds: steps as f64 * seconds_each,
        }
    }
}

/// The display of one run of one or more experiments.
pub struct Progress {
    multi: MultiProgress,
    /// The run's line; `None` with one experiment.
    overall: Option<ProgressBar>,
    names: Vec<&'static str>,
    /// Each experiment's weight on the run's line and where it starts.
    weights: Vec<u64>,
    offsets: Vec<u64>,
    started: Instant,
    /// Made by [`Progress::hidden`]: no lines either.
    silent: bool,
}

/// Milliseconds of estimated time: the unit of the run's line.
fn weight(plan: &Plan) -> u64 {
    (plan.seconds * 1000.0).max(1.0) as u64
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("a valid template")
        .progress_chars("=> ")
}

impl Progress {
    /// The display for experiments `plans` (name and plan each, in the
    /// order they will run), drawn on stderr.
    pub fn new(plans: &[(&'static str, Plan)]) -> Progress {
        Progress::with_target(plans, ProgressDrawTarget::stderr(), false)
    }

    /// The same, drawing nothing and printing nothing (tests, `headline`'s
    /// inner runs).
    pub fn hidden(plans: &[(&'static str, Plan)]) -> Progress {
        Progress::with_target(plans, ProgressDrawTarget::hidden(), true)
    }

    fn with_target(
        plans: &[(&'static str, Plan)],
        target: ProgressDrawTarget,
        silent: bool,
    ) -> Progress {
        let multi = MultiProgress::with_draw_target(target);
        let weights: Vec<u64> = plans.iter().map(|(_, plan)| weight(plan)).collect();
        let offsets = weights
            .iter()
            .scan(0, |sum, w| {
                let start = *sum;
                *sum += w;
                Some(start)
            })
            .collect();
        let overall = (plans.len() > 1).then(|| {
            let bar = multi.add(ProgressBar::new(weights.iter().sum()));
            bar.set_style(style(
                "{prefix:>24} [{bar:30}] {msg}  elapsed {elapsed_precise}  ETA {eta_precise}",
            ));
            bar.set_prefix("all experiments");
            bar.enable_steady_tick(Duration::from_secs(1));
            bar
        });
        Progress {
            multi,
            overall,
            names: plans.iter().map(|(name, _)| *name).collect(),
            weights,
            offsets,
            started: Instant::now(),
            silent,
        }
    }

    /// The bar of experiment `index` (in the order of the plans), with
    /// `steps` steps (its plan's, unless it learned better since).
    pub fn experiment(&self, index: usize, steps: u64) -> Bar {
        let name = self.names[index];
        let position = format!("{} of {}", index + 1, self.names.len());
        let bar = self.multi.insert_from_back(
            usize::from(self.overall.is_some()),
            ProgressBar::new(steps.max(1)),
        );
        // What runs goes on a line of its own: it is long.
        bar.set_style(style(concat!(
            "{prefix:>24} [{bar:30}] {pos}/{len}  elapsed {elapsed_precise}  ETA {eta_precise}\n",
            "                            {wide_msg}"
        )));
        bar.set_prefix(format!("{position}: {name}"));
        bar.enable_steady_tick(Duration::from_secs(1));
        if let Some(overall) = &self.overall {
            overall.set_position(self.offsets[index]);
            overall.set_message(format!("experiment {position}: {name}"));
        }
        if self.multi.is_hidden() && !self.silent {
            eprintln!("experiment {position}: {name} ({steps} steps)");
        }
        Bar {
            bar,
            overall: self.overall.clone(),
            offset: self.offsets[index],
            weight: self.weights[index],
            steps: steps.max(1),
            name,
            started: Instant::now(),
            multi: self.multi.clone(),
            silent: self.silent,
        }
    }

    /// Ends the display: the run's line shows its total time.
    pub fn finish(&self) {
        if let Some(overall) = &self.overall {
            overall.finish_with_message(format!(
                "{} experiments done in {}",
                self.names.len(),
                minutes(self.started.elapsed())
            ));
        }
    }
}

/// `m:ss` (or `h:mm:ss`).
pub fn minutes(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    if seconds >= 3600 {
        format!(
            "{}:{:02}:{:02}",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        )
    } else {
        format!("{}:{:02}", seconds / 60, seconds % 60)
    }
}

/// One experiment's bar: experiments call [`Bar::step`] after each step
/// and [`Bar::set_message`] to say what runs.
#[derive(Clone)]
pub struct Bar {
    bar: ProgressBar,
    overall: Option<ProgressBar>,
    offset: u64,
    weight: u64,
    /// The steps planned.
    steps: u64,
    name: &'static str,
    started: Instant,
    multi: MultiProgress,
    silent: bool,
}

impl Bar {
    /// A bar that shows nothing (tests).
    pub fn hidden() -> Bar {
        Progress::hidden(&[("test", Plan::steps(1, 1.0))]).experiment(0, 1)
    }

    /// What runs now.
    pub fn set_message(&self, message: impl Into<Cow<'static, str>>) {
        self.bar.set_message(message);
    }

    /// One step done.
    pub fn step(&self) {
        self.bar.inc(1);
        if let Some(overall) = &self.overall {
            let steps = self.steps;
            let done = self.bar.position().min(steps);
            overall.set_position(self.offset + self.weight * done / steps);
        }
    }

    /// Prints `line` above the bars (to stderr when they are not drawn).
    pub fn note(&self, line: &str) {
        if self.silent {
            return;
        }
        if self.multi.is_hidden() {
            eprintln!("{line}");
        } else {
            let _ = self.multi.println(line);
        }
    }

    /// Runs `f` (which prints) with the bars out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    /// Steps done so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// The experiment is over: its bar stays, full, with its time (and
    /// the steps taken, if the plan counted them wrong).
    pub fn finish(&self) {
        let mut elapsed = minutes(self.started.elapsed());
        let (taken, planned) = (self.bar.position(), self.steps);
        if taken != planned {
            elapsed = format!("{elapsed} ({taken} of {planned} planned steps)");
        }
        self.bar.set_length(taken.max(1));
        self.bar.finish_with_message(format!("done in {elapsed}"));
        if let Some(overall) = &self.overall {
            overall.set_position(self.offset + self.weight);
        }
        if self.multi.is_hidden() && !self.silent {
            eprintln!("{} done in {elapsed}", self.name);
        }
    }
}
