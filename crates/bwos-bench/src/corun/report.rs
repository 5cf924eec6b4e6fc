//! Tables, JSON and plots of `bwos-bench corun`.

use std::fmt::Write as _;

use super::child::{Config, Program, Selector};
use super::{PAIRS, Sample, Section};
use crate::plot::{BarSeries, Better, Chart, Figure};
use crate::stats::Summary;

fn program_name(program: Program) -> &'static str {
    match program {
        Program::Fib => "fib",
        Program::Tree => "tree",
        Program::Loop => "LOOP",
    }
}

/// Seconds per iteration of `program` alone with `threads` workers, in
/// `section` (`Corun`: the solo runs; `FairShare`: the fair-share
/// reference). LOOP runs are config-independent.
fn solo(
    samples: &[Sample],
    section: Section,
    program: Program,
    config: Config,
    threads: usize,
    rep: u32,
) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.section == section
                && s.programs == [program]
                && (program == Program::Loop || s.config == config)
                && s.threads == threads
                && s.repetition == rep
        })
        .map(|s| s.reports[0].seconds_per_iteration)
}

/// The repetition numbers of the samples.
fn repetitions(samples: &[Sample]) -> std::ops::RangeInclusive<u32> {
    0..=samples.iter().map(|s| s.repetition).max().unwrap_or(0)
}

/// Per repetition: the slowdowns of both programs of a co-run.
struct Corun {
    slowdowns: Vec<(f64, f64)>,
}

impl Corun {
    fn of(samples: &[Sample], pair: (Program, Program), config: Config, threads: usize) -> Corun {
        let slowdowns = samples
            .iter()
            .filter(|s| {
                s.section == Section::Corun
                    && s.programs == [pair.0, pair.1]
                    && s.config == config
                    && s.threads == threads
            })
            .filter_map(|s| {
                let ta = solo(
                    samples,
                    Section::Corun,
                    pair.0,
                    config,
                    threads,
                    s.repetition,
                )?;
                let tb = solo(
                    samples,
                    Section::Corun,
                    pair.1,
                    config,
                    threads,
                    s.repetition,
                )?;
                let ca = s.reports[0].seconds_per_iteration;
                let cb = s.reports[1].seconds_per_iteration;
                Some(((ca - ta) / ta, (cb - tb) / tb))
            })
            .collect();
        Corun { slowdowns }
    }

    /// The slowdowns a fair, waste-free split of the cores would give the
    /// pair: each program's fair-share time against its solo time.
    fn fair_share(
        samples: &[Sample],
        pair: (Program, Program),
        config: Config,
        threads: usize,
    ) -> Corun {
        let Some(&fair_workers) = thread_counts(samples, Section::FairShare).first() else {
            return Corun {
                slowdowns: Vec::new(),
            };
        };
        let slowdowns = repetitions(samples)
            .filter_map(|rep| {
                let ta = solo(samples, Section::Corun, pair.0, config, threads, rep)?;
                let tb = solo(samples, Section::Corun, pair.1, config, threads, rep)?;
                let fa = solo(
                    samples,
                    Section::FairShare,
                    pair.0,
                    config,
                    fair_workers,
                    rep,
                )?;
                let fb = solo(
                    samples,
                    Section::FairShare,
                    pair.1,
                    config,
                    fair_workers,
                    rep,
                )?;
                Some(((fa - ta) / ta, (fb - tb) / tb))
            })
            .collect();
        Corun { slowdowns }
    }

    fn unfairness(&self) -> Vec<f64> {
        self.slowdowns.iter().map(|(a, b)| (a - b).abs()).collect()
    }

    fn throughput(&self) -> Vec<f64> {
        self.slowdowns
            .iter()
            .map(|(a, b)| 1.0 / (1.0 + a) + 1.0 / (1.0 + b))
            .collect()
    }
}

fn percent(summary: Option<Summary>) -> String {
    summary.map_or("n/a".into(), |s| {
        format!(
            "{:.0}% [{:.0}-{:.0}]",
            s.median * 100.0,
            s.min * 100.0,
            s.max * 100.0
        )
    })
}

fn plain(summary: Option<Summary>) -> String {
    summary.map_or("n/a".into(), |s| {
        format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max)
    })
}

fn configs_in(samples: &[Sample], section: Section) -> Vec<Config> {
    let mut configs = Vec::new();
    for sample in samples.iter().filter(|s| s.section == section) {
        if sample.programs != [Program::Loop] && !configs.contains(&sample.config) {
            configs.push(sample.config);
        }
    }
    configs
}

fn thread_counts(samples: &[Sample], section: Section) -> Vec<usize> {
    let mut counts: Vec<usize> = samples
        .iter()
        .filter(|s| s.section == section)
        .map(|s| s.threads)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// Average unfairness and throughput of `config` over the pairs (means of
/// the per-pair medians), measured or (`reference`) of the fair share.
fn averages(
    samples: &[Sample],
    config: Config,
    threads: usize,
    reference: bool,
) -> Option<(f64, f64)> {
    let mut unfairness = Vec::new();
    let mut throughput = Vec::new();
    for pair in PAIRS {
        let corun = if reference {
            Corun::fair_share(samples, pair, config, threads)
        } else {
            Corun::of(samples, pair, config, threads)
        };
        unfairness.push(Summary::of(&corun.unfairness())?.median);
        throughput.push(Summary::of(&corun.throughput())?.median);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some((mean(&unfairness), mean(&throughput)))
}

/// Every table of the experiment.
pub fn tables(samples: &[Sample]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n# Co-runs (BWS, EuroSys'12, Figures 2 and 3)\n");
    let _ = writeln!(
        out,
        "Two programs at once, as separate processes, each with the given number of workers.\n\
         slowdown: (T_c - T_s) / T_s; unfairness: larger slowdown - smaller; throughput: sum of\n\
         T_s / T_c (2.0 is perfect). Medians [min-max] over the repetitions. Fair share:\n\
         what an even, waste-free split of the cores would give (each program alone with\n\
         half the cores' worth of workers)."
    );
    let configs = configs_in(samples, Section::Corun);
    for threads in thread_counts(samples, Section::Corun) {
        let _ = writeln!(out, "\n## {threads} workers per program\n");
        let _ = writeln!(
            out,
            "| pair | configuration | slowdown 1st | slowdown 2nd | unfairness | throughput |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for pair in PAIRS {
            for &config in &configs {
                let corun = Corun::of(samples, pair, config, threads);
                let first: Vec<f64> = corun.slowdowns.iter().map(|s| s.0).collect();
                let second: Vec<f64> = corun.slowdowns.iter().map(|s| s.1).collect();
                let _ = writeln!(
                    out,
                    "| {} + {} | {} | {} | {} | {} | {} |",
                    program_name(pair.0),
                    program_name(pair.1),
                    config.name(),
                    percent(Summary::of(&first)),
                    percent(Summary::of(&second)),
                    percent(Summary::of(&corun.unfairness())),
                    plain(Summary::of(&corun.throughput())),
                );
            }
        }
        let _ = writeln!(out, "\n### Averages over the pairs, {threads} workers\n");
        let _ = writeln!(
            out,
            "| configuration | average unfairness | average throughput | throughput vs bwos yield | vs rayon | vs bwos park | fair share: unfairness / throughput |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        let reference = |c| averages(samples, c, threads, false).map(|a| a.1);
        for &config in &configs {
            let Some((unfairness, throughput)) = averages(samples, config, threads, false) else {
                continue;
            };
            let fair = averages(samples, config, threads, true)
                .map_or("n/a".into(), |(u, t)| format!("{:.0}% / {t:.2}", u * 100.0));
            let versus = |c| {
                reference(c).map_or("n/a".into(), |r: f64| {
                    format!("{:+.1}%", (throughput / r - 1.0) * 100.0)
                })
            };
            let _ = writeln!(
                out,
                "| {} | {:.0}% | {:.2} | {} | {} | {} | {fair} |",
                config.name(),
                unfairness * 100.0,
                throughput,
                versus(Config::BwosYield),
                versus(Config::Rayon),
                versus(Config::BwosPark),
            );
        }
    }
    solo_costs(&mut out, samples);
    oversubscribed(&mut out, samples);
    policies(&mut out, samples);
    stats(&mut out, samples);
    out
}

/// Solo time of each configuration, and of each bwos idle policy against
/// `Spin` (ratios of back-to-back runs).
fn solo_costs(out: &mut String, samples: &[Sample]) {
    let configs = configs_in(samples, Section::Corun);
    let _ = writeln!(
        out,
        "\n# Solo runs: each configuration alone, and its cost against bwos spin\n"
    );
    let _ = writeln!(
        out,
        "| workers | program | configuration | time per iteration | time / bwos spin's |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for threads in thread_counts(samples, Section::Corun) {
        for program in [Program::Fib, Program::Tree] {
            let series = |config| -> Vec<f64> {
                repetitions(samples)
                    .filter_map(|rep| solo(samples, Section::Corun, program, config, threads, rep))
                    .collect()
            };
            let spin = series(Config::BwosSpin);
            for &config in &configs {
                let times = series(config);
                let Some(summary) = Summary::of(&times) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "| {threads} | {} | {} | {:.2} ms [{:.2}-{:.2}] | {} |",
                    program_name(program),
                    config.name(),
                    summary.median * 1e3,
                    summary.min * 1e3,
                    summary.max * 1e3,
                    plain(Summary::of_ratios(&times, &spin)),
                );
            }
        }
    }
}

fn oversubscribed(out: &mut String, samples: &[Sample]) {
    let counts = thread_counts(samples, Section::Oversubscribed);
    let (Some(&few), Some(&many)) = (counts.first(), counts.last()) else {
        return;
    };
    let _ = writeln!(
        out,
        "\n# Oversubscribed: one program alone, {many} workers against {few} (only its threads alive)\n"
    );
    let _ = writeln!(
        out,
        "| configuration | program | time with {few} | time with {many} / time with {few} |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    for config in configs_in(samples, Section::Oversubscribed) {
        for program in [Program::Fib, Program::Tree] {
            let series = |threads| -> Vec<f64> {
                samples
                    .iter()
                    .filter(|s| {
                        s.section == Section::Oversubscribed
                            && s.config == config
                            && s.programs == [program]
                            && s.threads == threads
                    })
                    .map(|s| s.reports[0].seconds_per_iteration)
                    .collect()
            };
            let (base, over) = (series(few), series(many));
            let Some(summary) = Summary::of(&base) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.2} ms | {} |",
                config.name(),
                program_name(program),
                summary.median * 1e3,
                plain(Summary::of_ratios(&over, &base)),
            );
        }
    }
}

fn policies(out: &mut String, samples: &[Sample]) {
    let policy: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.section == Section::Policies)
        .collect();
    if policy.is_empty() {
        return;
    }
    let threads = policy[0].threads;
    let _ = writeln!(
        out,
        "\n# Stealing policies (bwos, idle policy park, {threads} workers, solo)\n"
    );
    let _ = writeln!(
        out,
        "time / baseline's: median of back-to-back ratios against random, one job, no P_accept (< 1: faster)."
    );
    let _ = writeln!(
        out,
        "\n| selector | P_accept | batch | fib | fib / baseline | tree | tree / baseline |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let series = |program, selector, probabilistic, block| -> Vec<f64> {
        policy
            .iter()
            .filter(|s| {
                s.programs == [program]
                    && s.selector == selector
                    && s.probabilistic == probabilistic
                    && s.block == block
            })
            .map(|s| s.reports[0].seconds_per_iteration)
            .collect()
    };
    for selector in Selector::ALL {
        for probabilistic in [false, true] {
            for block in [false, true] {
                let mut row = format!(
                    "| {} | {} | {} |",
                    selector.name(),
                    if probabilistic { "yes" } else { "no" },
                    if block { "block" } else { "one" }
                );
                for program in [Program::Fib, Program::Tree] {
                    let times = series(program, selector, probabilistic, block);
                    let base = series(program, Selector::Random, false, false);
                    let time = Summary::of(&times)
                        .map_or("n/a".into(), |s| format!("{:.2} ms", s.median * 1e3));
                    let _ = write!(
                        row,
                        " {time} | {} |",
                        plain(Summary::of_ratios(&times, &base))
                    );
                }
                let _ = writeln!(out, "{row}");
            }
        }
    }
}

/// The scheduler counters of the bwos configurations in the fib + tree
/// co-run (first repetition, fewest workers).
fn stats(out: &mut String, samples: &[Sample]) {
    let Some(&threads) = thread_counts(samples, Section::Corun).first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n# PoolStats in the fib + tree co-run ({threads} workers, first repetition; every run's are in the JSON)\n"
    );
    let _ = writeln!(
        out,
        "| configuration | program | steals | failed attempts | sleeps | wake-ups | credits earned / spent | yields to victim |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for sample in samples.iter().filter(|s| {
        s.section == Section::Corun
            && s.programs == [Program::Fib, Program::Tree]
            && s.threads == threads
            && s.repetition == 0
    }) {
        for (program, report) in sample.programs.iter().zip(&sample.reports) {
            let Some(st) = &report.stats else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} / {} | {} |",
                sample.config.name(),
                program_name(*program),
                st.steals,
                st.failed_steals,
                st.sleeps,
                st.wakeups,
                st.credits_earned,
                st.credits_spent,
                st.yields_to_victim
            );
        }
    }
}

/// This machine's figures for the BWS paper's averages: per-pair
/// unfairness and throughput averaged over the pairs, at the first worker
/// count (the core count), for each configuration, and the fair share's.
pub fn result(samples: &[Sample]) -> Option<String> {
    let threads = *thread_counts(samples, Section::Corun).first()?;
    let configs = configs_in(samples, Section::Corun);
    let described: Vec<String> = configs
        .iter()
        .filter_map(|&config| {
            let (unfairness, throughput) = averages(samples, config, threads, false)?;
            Some(format!(
                "{} {:.0}% / {throughput:.2}",
                config.name(),
                unfairness * 100.0
            ))
        })
        .collect();
    let fair = configs
        .first()
        .and_then(|&config| averages(samples, config, threads, true))
        .map_or(String::new(), |(u, t)| {
            format!(
                "; an even, waste-free split of the cores would give {:.0}% / {t:.2}",
                u * 100.0
            )
        });
    (!described.is_empty()).then(|| {
        format!(
            "with {threads} workers per program, average unfairness / throughput over the {} \
             pairs: {}{fair}.",
            PAIRS.len(),
            described.join(", ")
        )
    })
}

/// Per worker count, the average unfairness and the average throughput of
/// every configuration, each a figure of its own, with the fair-share
/// reference beside each bar.
pub fn figures(samples: &[Sample]) -> Vec<Figure> {
    let configs = configs_in(samples, Section::Corun);
    let categories: Vec<String> = configs.iter().map(|c| c.name().to_string()).collect();
    let mut figures = Vec::new();
    for threads in thread_counts(samples, Section::Corun) {
        let values = |reference: bool, pick: fn((f64, f64)) -> f64| -> Vec<Option<f64>> {
            configs
                .iter()
                .map(|&c| averages(samples, c, threads, reference).map(pick))
                .collect()
        };
        let has_reference = values(true, |a| a.0).iter().any(Option::is_some);
        let series = |pick: fn((f64, f64)) -> f64| {
            let mut series = vec![BarSeries::new("co-run", values(false, pick))];
            if has_reference {
                series.push(BarSeries::new(
                    "fair-share reference (each alone on half the cores)",
                    values(true, pick),
                ));
            }
            series
        };
        figures.push(Figure {
            file: format!("corun-{threads}-workers-unfairness.svg"),
            title: format!(
                "Co-runs, {threads} workers per program: unfairness per configuration (BWS Fig. 2)"
            ),
            better: Better::Lower,
            note: format!(
                "the larger slowdown minus the smaller, averaged over the {} pairs",
                PAIRS.len()
            ),
            chart: Chart::Bars {
                value_label: "average unfairness (%)".into(),
                categories: categories.clone(),
                series: series(|a| a.0 * 100.0),
                reference: None,
            },
        });
        figures.push(Figure {
            file: format!("corun-{threads}-workers-throughput.svg"),
            title: format!(
                "Co-runs, {threads} workers per program: throughput per configuration (BWS Fig. 3)"
            ),
            better: Better::Higher,
            note: "weighted speedup, the sum of T_solo / T_corun over the pair; 2 is perfect"
                .into(),
            chart: Chart::Bars {
                value_label: "average throughput (weighted speedup)".into(),
                categories: categories.clone(),
                series: series(|a| a.1),
                reference: Some((
                    1.0,
                    "no better than running them one after the other".into(),
                )),
            },
        });
    }
    figures
}
