//! The tables, goals and plots of `bwos-bench small`.

use std::fmt::Write as _;

use super::{Calls, Point, Sample, Shape, Storage};
use crate::plot::{Better, Chart, Figure, Series};
use crate::stats::Summary;

/// The runtimes compared with the serial loop, in table order.
const PARALLEL: [&str; 4] = ["bwos", "rayon", "chili", "threads"];

/// The points of `samples`, in the order they were measured.
fn points(samples: &[Sample]) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for sample in samples {
        if !points.contains(&sample.point) {
            points.push(sample.point);
        }
    }
    points
}

/// Nanoseconds per item of `runtime` at `point`, by repetition.
fn series(samples: &[Sample], point: Point, runtime: &str) -> Vec<f64> {
    let mut picked: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.point == point && s.runtime == runtime)
        .collect();
    picked.sort_by_key(|s| s.repetition);
    picked.iter().map(|s| s.ns_per_item).collect()
}

/// `slow / fast` paired by repetition: the speed of `fast` relative to
/// `slow` (above 1: `fast` is faster).
fn speed(samples: &[Sample], point: Point, fast: &str, slow: &str) -> Option<Summary> {
    Summary::of_ratios(&series(samples, point, slow), &series(samples, point, fast))
}

fn cell(summary: Option<Summary>) -> String {
    summary.map_or("-".into(), |r| {
        format!("{:.2} ({:.2}-{:.2})", r.median, r.min, r.max)
    })
}

fn ns(summary: Option<Summary>) -> String {
    summary.map_or("-".into(), |s| {
        format!("{:.1} ({:.1}-{:.1})", s.median, s.min, s.max)
    })
}

/// The result tables and the goals of issue 49, met or not.
pub fn tables(samples: &[Sample], threads: u32) -> String {
    let mut out = format!(
        "\n## Small work: spawns, loops and trees, {threads} threads\n\
         ns per item (spawn or call) and speedups: median over repetitions (min-max); \
         speedup = serial / runtime (above 1: faster than serial); \
         bwos/rayon = rayon / bwos and bwos/threads = threads / bwos (above 1: bwos faster), \
         paired by repetition\n\n\
         | point | items | serial ns | bwos ns | bwos | rayon | chili | threads | bwos/rayon | bwos/threads |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    for point in points(samples) {
        let items = samples
            .iter()
            .find(|s| s.point == point)
            .map_or(0, |s| s.items);
        let mut row = format!(
            "| {} | {items} | {} | {} |",
            point.label(),
            ns(Summary::of(&series(samples, point, "serial"))),
            ns(Summary::of(&series(samples, point, "bwos"))),
        );
        for runtime in PARALLEL {
            let _ = write!(row, " {} |", cell(speed(samples, point, runtime, "serial")));
        }
        let _ = write!(
            row,
            " {} | {} |",
            cell(speed(samples, point, "bwos", "rayon")),
            cell(speed(samples, point, "bwos", "threads")),
        );
        let _ = writeln!(out, "{row}");
    }
    out.push_str(&goals(samples));
    out
}

/// One goal: the worst point against the bar, and whether every point
/// reaches it.
struct Goal {
    what: &'static str,
    bar: f64,
    /// (point, paired ratio) for every point the goal covers.
    ratios: Vec<(Point, Summary)>,
}

impl Goal {
    fn row(&self) -> String {
        let below: Vec<&(Point, Summary)> = self
            .ratios
            .iter()
            .filter(|(_, r)| r.median < self.bar)
            .collect();
        let worst = self
            .ratios
            .iter()
            .min_by(|a, b| a.1.median.total_cmp(&b.1.median));
        let (worst_label, worst_value) = worst.map_or(("-".into(), "-".into()), |(p, r)| {
            (
                p.label(),
                format!("{:.2} ({:.2}-{:.2})", r.median, r.min, r.max),
            )
        });
        let verdict = if self.ratios.is_empty() {
            "not measured".to_string()
        } else if below.is_empty() {
            format!("met ({} points)", self.ratios.len())
        } else {
            format!(
                "NOT MET ({} of {} points below {:.2})",
                below.len(),
                self.ratios.len(),
                self.bar
            )
        };
        format!(
            "| {} | {worst_label} | {worst_value} | {verdict} |\n",
            self.what
        )
    }
}

/// The goals of issue 49 for small work: never below rayon; at least 0.95x
/// of plain threads' ceiling for bodies of 1 us and more; the 1,023-node
/// boxed balanced tree back to back at least as fast as serial.
fn goals(samples: &[Sample]) -> String {
    let points = points(samples);
    let ratios = |filter: &dyn Fn(Point) -> bool, fast: &str, slow: &str| {
        points
            .iter()
            .filter(|p| filter(**p))
            .filter_map(|&p| Some((p, speed(samples, p, fast, slow)?)))
            .collect::<Vec<_>>()
    };
    let goals = [
        Goal {
            what: "bwos never below rayon (bwos/rayon >= 1 at every point)",
            bar: 1.0,
            ratios: ratios(&|_| true, "bwos", "rayon"),
        },
        Goal {
            what: "bwos >= 0.95x plain threads' ceiling for bodies >= 1 us",
            bar: 0.95,
            ratios: ratios(
                &|p| p.body_us().is_some_and(|us| us >= 1.0),
                "bwos",
                "threads",
            ),
        },
        Goal {
            what: "1,023-node boxed balanced tree back to back: bwos >= 1.0x serial",
            bar: 1.0,
            ratios: ratios(
                &|p| {
                    p == Point::Tree {
                        storage: Storage::Boxed,
                        shape: Shape::Balanced,
                        nodes: 1_023,
                        calls: Calls::BackToBack,
                    }
                },
                "bwos",
                "serial",
            ),
        },
    ];
    let mut out = String::from(
        "\n## Goals (issue 49)\n\n| goal | worst point | its ratio | met |\n|---|---|---|---|\n",
    );
    for goal in &goals {
        out.push_str(&goal.row());
    }
    let below: Vec<String> = goals[0]
        .ratios
        .iter()
        .filter(|(_, r)| r.median < goals[0].bar)
        .map(|(p, r)| format!("{} {:.2}", p.label(), r.median))
        .collect();
    if !below.is_empty() {
        let _ = writeln!(out, "\nbelow rayon: {}", below.join("; "));
    }
    out
}

/// Speedup figures: one per body-cost workload and calling (x: body
/// cost), one per tree storage, shape and calling (x: nodes).
pub fn figures(samples: &[Sample]) -> Vec<Figure> {
    let points = points(samples);
    let mut figures = Vec::new();
    let mut figure = |file: String, title: String, x_label: &str, group: Vec<Point>| {
        let x_ticks: Vec<(f64, String)> = group
            .iter()
            .enumerate()
            .map(|(x, p)| {
                let label = match *p {
                    Point::Tree { nodes, .. } => nodes.to_string(),
                    p => format!("{} µs", p.body_us().unwrap_or(0.0)),
                };
                (x as f64, label)
            })
            .collect();
        let series: Vec<Series> = PARALLEL
            .iter()
            .filter_map(|&runtime| {
                let line: Vec<(f64, f64)> = group
                    .iter()
                    .enumerate()
                    .filter_map(|(x, &p)| {
                        Some((x as f64, speed(samples, p, runtime, "serial")?.median))
                    })
                    .collect();
                (!line.is_empty()).then(|| Series::new(runtime, line))
            })
            .collect();
        if series.is_empty() {
            return;
        }
        figures.push(Figure {
            file,
            title,
            better: Better::Higher,
            note: "medians over repetitions".into(),
            chart: Chart::Lines {
                x_label: x_label.into(),
                y_label: "speedup over serial (serial time / time)".into(),
                x_ticks: Some(x_ticks),
                series,
                reference: Some((1.0, "as fast as the serial loop".into())),
            },
        });
    };
    let spawn: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| matches!(p, Point::Spawn { .. }))
        .collect();
    figure(
        "small-spawn.svg".into(),
        "Spawns in one scope: speedup over the serial loop, by body cost".into(),
        "body cost (µs of work per spawn)",
        spawn,
    );
    for how in Calls::ALL {
        let group: Vec<Point> = points
            .iter()
            .copied()
            .filter(|p| matches!(p, Point::Loop { calls, .. } if *calls == how))
            .collect();
        figure(
            format!("small-loop-{}.svg", slug(how.name())),
            format!(
                "Join loop, calls {}: speedup over serial, by body cost",
                how.name()
            ),
            "body cost (µs of work per body)",
            group,
        );
    }
    for storage in Storage::ALL {
        for shape in Shape::ALL {
            for how in Calls::ALL {
                let group: Vec<Point> = points
                    .iter()
                    .copied()
                    .filter(|p| {
                        matches!(p, Point::Tree { storage: s, shape: h, calls, .. }
                            if *s == storage && *h == shape && *calls == how)
                    })
                    .collect();
                figure(
                    format!(
                        "small-tree-{}-{}-{}.svg",
                        storage.name(),
                        shape.name(),
                        slug(how.name())
                    ),
                    format!(
                        "Tree sum, {} and {}, calls {}: speedup over serial, by size",
                        storage.name(),
                        shape.name(),
                        how.name()
                    ),
                    "tree size (nodes)",
                    group,
                );
            }
        }
    }
    figures
}

fn slug(name: &str) -> String {
    name.replace(' ', "-")
}
