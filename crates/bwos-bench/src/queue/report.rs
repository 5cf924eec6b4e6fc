//! The queue experiment's tables and figures.

use std::fmt::Write as _;

use crate::plot::{BarSeries, Better, Chart, Figure, Series};
use crate::queue::{Experiment, Order, Sample};
use crate::stats::Summary;

/// The samples of one queue in one setting.
struct Row<'a> {
    queue: &'static str,
    order: Order,
    samples: Vec<&'a Sample>,
}

impl Row<'_> {
    fn series(&self, field: impl Fn(&Sample) -> Option<f64>) -> Vec<f64> {
        self.samples.iter().filter_map(|s| field(s)).collect()
    }

    fn throughput(&self) -> Vec<f64> {
        self.series(|s| Some(s.ops_per_sec))
    }
}

/// Samples grouped by (experiment, setting), then by queue, in the order
/// they were measured.
fn groups(samples: &[Sample]) -> Vec<((Experiment, String), Vec<Row<'_>>)> {
    let mut groups: Vec<((Experiment, String), Vec<Row>)> = Vec::new();
    for sample in samples {
        let rows = entry(&mut groups, (sample.experiment, sample.setting.clone()));
        match rows.iter_mut().find(|r| r.queue == sample.queue) {
            Some(row) => row.samples.push(sample),
            None => rows.push(Row {
                queue: sample.queue,
                order: sample.order,
                samples: vec![sample],
            }),
        }
    }
    groups
}

/// The value stored under `key` in an insertion-ordered list of pairs,
/// inserted empty if missing (tables and plots keep measurement order).
fn entry<K: PartialEq, V: Default>(pairs: &mut Vec<(K, V)>, key: K) -> &mut V {
    let at = match pairs.iter().position(|(k, _)| *k == key) {
        Some(at) => at,
        None => {
            pairs.push((key, V::default()));
            pairs.len() - 1
        }
    };
    &mut pairs[at].1
}

fn title(experiment: Experiment) -> &'static str {
    match experiment {
        Experiment::NoThief => {
            "Experiment 1 (Fig. 10): one queue, no thief; push until full, pop until empty"
        }
        Experiment::OneThief => {
            "Experiment 2 (Fig. 11): one queue, one thief pausing between steals"
        }
        Experiment::Pool => {
            "Experiment 3 (Fig. 12): pool of N queues; fill, drain, steal k% of capacity"
        }
    }
}

fn mops(summary: Option<Summary>) -> String {
    summary.map_or("-".into(), |s| {
        format!(
            "{:8.1} [{:.1}-{:.1}]",
            s.median / 1e6,
            s.min / 1e6,
            s.max / 1e6
        )
    })
}

/// The tables: per setting, each queue's median throughput with its spread
/// and the ratio of the bwos queue of the same order to it, pair by pair.
pub fn tables(samples: &[Sample]) -> String {
    let mut out = String::new();
    let mut current = None;
    for ((experiment, setting), rows) in groups(samples) {
        if current != Some(experiment) {
            current = Some(experiment);
            let _ = writeln!(out, "\n{}", title(experiment));
            let _ = writeln!(
                out,
                "Mops/s: median [min-max] over repetitions; ratio: bwos / queue, median [min-max] of pairwise ratios"
            );
        }
        let _ = writeln!(out, "\n  {setting}");
        let extra = experiment == Experiment::OneThief;
        let _ = writeln!(
            out,
            "  {:<15} {:>22} {:>22}{}",
            "queue",
            "total Mops/s",
            "bwos / queue",
            if extra {
                "   owner Mops/s            stolen"
            } else {
                ""
            }
        );
        for row in &rows {
            let bwos = rows
                .iter()
                .find(|r| r.order == row.order && r.queue.starts_with("bwos"))
                .map(Row::throughput);
            let ratio = match bwos {
                Some(_) if row.queue.starts_with("bwos") => "-".to_string(),
                Some(bwos) => Summary::of_ratios(&bwos, &row.throughput())
                    .map_or("-".into(), |r| {
                        format!("{:.2}x [{:.2}-{:.2}]", r.median, r.min, r.max)
                    }),
                None => "-".into(),
            };
            let _ = write!(
                out,
                "  {:<15} {:>22} {:>22}",
                row.queue,
                mops(Summary::of(&row.throughput())),
                ratio
            );
            if extra {
                let owner = Summary::of(&row.series(|s| s.owner_ops_per_sec));
                let stolen = Summary::of(&row.series(|s| s.stolen_share));
                let _ = write!(
                    out,
                    "   {:>22} {:>7}",
                    mops(owner),
                    stolen.map_or("-".into(), |s| format!("{:.1}%", s.median * 100.0))
                );
            }
            out.push('\n');
        }
    }
    out
}

/// The median paired ratio of `a`'s throughput to `b`'s in one setting.
fn ratio(rows: &[Row], a: &str, b: &str) -> Option<f64> {
    let a = rows.iter().find(|r| r.queue == a)?;
    let b = rows.iter().find(|r| r.queue == b)?;
    Summary::of_ratios(&a.throughput(), &b.throughput()).map(|s| s.median)
}

/// This machine's numbers for the paper's claims: bwos against the
/// ABP-like crossbeam-deque (LIFO) and Tokio's queue st3 (FIFO), without
/// a thief and at a 10% stolen share.
pub fn result(samples: &[Sample]) -> Option<String> {
    let groups = groups(samples);
    let mut parts = Vec::new();
    for (setting, what) in [
        ("no thief", "without a thief"),
        ("target 10%", "at a 10% target share"),
    ] {
        let Some((_, rows)) = groups.iter().find(|((_, s), _)| s == setting) else {
            continue;
        };
        let lifo = ratio(rows, "bwos-lifo", "crossbeam-lifo");
        let fifo = ratio(rows, "bwos-fifo", "st3-fifo");
        if let (Some(lifo), Some(fifo)) = (lifo, fifo) {
            parts.push(format!(
                "{what} bwos-lifo {lifo:.2}x crossbeam-lifo and bwos-fifo {fifo:.2}x st3-fifo"
            ));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "{} (medians of paired throughput ratios).",
            parts.join("; ")
        )
    })
}

/// The queue's family in a plot: its name without the order.
fn family(queue: &str) -> &str {
    match queue.split('-').next().unwrap_or(queue) {
        "crossbeam" => "crossbeam-deque",
        "seq" => "sequential bound",
        family => family,
    }
}

/// The queue experiment's figures: throughput without a thief, against
/// the stolen share reached (one per order), and per victim-selection
/// policy in each pool setting.
pub fn figures(samples: &[Sample]) -> Vec<Figure> {
    let groups = groups(samples);
    let mut figures = Vec::new();
    let median_mops = |row: &Row| Summary::of(&row.throughput()).map(|s| s.median / 1e6);
    // Experiment 1: LIFO and FIFO, a bar per queue family.
    if let Some((_, rows)) = groups
        .iter()
        .find(|((experiment, _), _)| *experiment == Experiment::NoThief)
    {
        let mut series: Vec<BarSeries> = Vec::new();
        for (i, order) in [Order::Lifo, Order::Fifo].into_iter().enumerate() {
            for row in rows.iter().filter(|r| r.order == order) {
                let name = family(row.queue);
                let at = match series.iter().position(|s| s.name == name) {
                    Some(at) => at,
                    None => {
                        series.push(BarSeries::new(name, vec![None, None]));
                        series.len() - 1
                    }
                };
                series[at].values[i] = median_mops(row);
            }
        }
        figures.push(Figure {
            file: "no-thief.svg".into(),
            title: "One queue, no thief: push until full, pop until empty (BWoS Fig. 10-11 at 0%)"
                .into(),
            better: Better::Higher,
            note: "median over repetitions".into(),
            chart: Chart::Bars {
                value_label: "throughput (million operations/s)".into(),
                categories: vec!["LIFO".into(), "FIFO".into()],
                series,
                reference: None,
            },
        });
    }
    // Experiment 2: throughput against the stolen share reached.
    for order in [Order::Lifo, Order::Fifo] {
        let mut series: Vec<Series> = Vec::new();
        for ((experiment, setting), rows) in &groups {
            if *experiment != Experiment::OneThief {
                continue;
            }
            let target = setting.strip_prefix("target ").unwrap_or(setting);
            for row in rows.iter().filter(|r| r.order == order) {
                let share = Summary::of(&row.series(|s| s.stolen_share)).map(|s| s.median * 100.0);
                let (Some(share), Some(ops)) = (share, median_mops(row)) else {
                    continue;
                };
                let label = Some(format!("target {target}"));
                match series.iter_mut().find(|s| s.name == row.queue) {
                    Some(line) => line.points.push((share, ops, label)),
                    None => series.push(Series {
                        name: row.queue.to_string(),
                        points: vec![(share, ops, label)],
                    }),
                }
            }
        }
        if series.is_empty() {
            continue;
        }
        for line in &mut series {
            line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let name = format!("{order:?}").to_lowercase();
        figures.push(Figure {
            file: format!("one-thief-{name}.svg"),
            title: format!(
                "One {} queue, one thief: throughput against the share stolen (BWoS Fig. {})",
                name.to_uppercase(),
                if order == Order::Lifo { 10 } else { 11 }
            ),
            better: Better::Higher,
            note: "each point: one target share (the thief's pause calibrated to it), medians"
                .into(),
            chart: Chart::Lines {
                x_label: "share of the items stolen (%)".into(),
                y_label: "throughput (million operations/s)".into(),
                x_ticks: None,
                series,
                reference: None,
            },
        });
    }
    // Experiment 3: throughput per policy, one figure per pool size and k.
    let mut pools: Vec<(String, Vec<BarSeries>)> = Vec::new();
    for ((experiment, setting), rows) in &groups {
        if *experiment != Experiment::Pool {
            continue;
        }
        // Settings read "N=<n> k=<k>% <policy>".
        let Some((prefix, policy)) = setting.rsplit_once(' ') else {
            continue;
        };
        let Some(at) = crate::queue::Policy::ALL
            .iter()
            .position(|p| p.name() == policy)
        else {
            continue;
        };
        let series = entry(&mut pools, prefix.to_string());
        for row in rows {
            let bars = match series.iter().position(|s| s.name == row.queue) {
                Some(i) => &mut series[i],
                None => {
                    let empty = vec![None; crate::queue::Policy::ALL.len()];
                    series.push(BarSeries::new(row.queue, empty));
                    series.last_mut().expect("just pushed")
                }
            };
            bars.values[at] = median_mops(row);
        }
    }
    for (prefix, series) in pools {
        figures.push(Figure {
            file: format!("pool-{}.svg", prefix.replace(['=', '%', ' '], "")),
            title: format!(
                "A pool of queues ({}), each stealing {} of its capacity: throughput per \
                 victim-selection policy (BWoS Fig. 12)",
                prefix.split(' ').next().unwrap_or(&prefix),
                prefix
                    .split(' ')
                    .nth(1)
                    .unwrap_or("")
                    .trim_start_matches("k=")
            ),
            better: Better::Higher,
            note: "a missing bar: the queue cannot serve the policy (st3 has no size estimate)"
                .into(),
            chart: Chart::Bars {
                value_label: "throughput (million operations/s)".into(),
                categories: crate::queue::Policy::ALL
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect(),
                series,
                reference: None,
            },
        });
    }
    figures
}
