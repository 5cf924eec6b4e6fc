//! Turning samples into tables, a JSON file and SVG plots.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use crate::header::Header;
use crate::options::{PlotOption, RunOptions};
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

/// An experiment's JSON file: the header, then the fields of its body.
#[derive(Serialize)]
struct JsonReport<'a, B> {
    header: &'a Header,
    #[serde(flatten)]
    body: &'a B,
}

/// The JSON body of an experiment that writes nothing but its samples.
#[derive(Serialize)]
struct Samples<'a, S> {
    samples: &'a [S],
}

/// Writes every experiment's files: the header and the fields of `body`
/// as JSON to `json`, and the plots that `plots` draws into `plot` (it
/// returns the files it wrote), each if asked for; prints what it wrote.
pub fn write_outputs<B: Serialize>(
    header: &Header,
    json: Option<&Path>,
    body: &B,
    plot: Option<&Path>,
    plots: impl FnOnce(&Path) -> io::Result<Vec<String>>,
) -> io::Result<()> {
    if let Some(path) = json {
        write_json(path, &JsonReport { header, body })?;
    }
    if let Some(dir) = plot {
        fs::create_dir_all(dir).map_err(|e| annotate(e, dir))?;
        for written in plots(dir)? {
            println!("wrote {written}");
        }
    }
    Ok(())
}

/// [`write_outputs`] for the experiments whose JSON body is their samples
/// (`"samples": [..]`) and whose `plots` are drawn from them, as `run` and
/// `plot` ask.
pub fn write_samples<S: Serialize>(
    header: &Header,
    run: &RunOptions,
    plot: &PlotOption,
    samples: &[S],
    plots: fn(&[S], &Path) -> io::Result<Vec<String>>,
) -> io::Result<()> {
    write_outputs(
        header,
        run.json.as_deref(),
        &Samples { samples },
        plot.dir.as_deref(),
        |dir| plots(samples, dir),
    )
}

/// Writes `report` as pretty JSON to `path`, creating its directory.
fn write_json(path: &Path, report: &impl Serialize) -> io::Result<()> {
    let json = serde_json::to_string_pretty(report).map_err(io::Error::other)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| annotate(e, parent))?;
    }
    fs::write(path, json).map_err(|e| annotate(e, path))?;
    println!("\nwrote {}", path.display());
    Ok(())
}

fn annotate(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// A queue's line in a plot: (x, median throughput) points.
pub(crate) type Series = (&'static str, Vec<(f64, f64)>);

/// Draws the queue experiment's SVG plots into `dir`; returns the files
/// written.
pub fn plots(samples: &[Sample], dir: &Path) -> io::Result<Vec<String>> {
    let groups = groups(samples);
    let mut written = Vec::new();
    // Experiment 2: throughput against the stolen share reached.
    for order in [Order::Lifo, Order::Fifo] {
        let mut series: Vec<Series> = Vec::new();
        for ((experiment, _), rows) in &groups {
            if *experiment != Experiment::OneThief {
                continue;
            }
            for row in rows.iter().filter(|r| r.order == order) {
                let share = Summary::of(&row.series(|s| s.stolen_share)).map(|s| s.median * 100.0);
                let ops = Summary::of(&row.throughput()).map(|s| s.median / 1e6);
                let (Some(share), Some(ops)) = (share, ops) else {
                    continue;
                };
                entry(&mut series, row.queue).push((share, ops));
            }
        }
        if series.is_empty() {
            continue;
        }
        for (_, points) in &mut series {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let name = format!("one-thief-{order:?}.svg").to_lowercase();
        let caption = format!("{order:?}: one queue, one thief");
        line_plot(
            &dir.join(&name),
            &caption,
            "stolen share (%)",
            "throughput (Mops/s)",
            &series,
            None,
        )?;
        written.push(dir.join(name).display().to_string());
    }
    // Experiment 3: throughput per policy, one plot per pool size and k.
    let mut pool_plots: Vec<(String, Vec<Series>)> = Vec::new();
    for ((experiment, setting), rows) in &groups {
        if *experiment != Experiment::Pool {
            continue;
        }
        // Settings read "N=<n> k=<k>% <policy>".
        let Some((prefix, policy)) = setting.rsplit_once(' ') else {
            continue;
        };
        let x = crate::queue::Policy::ALL
            .iter()
            .position(|p| p.name() == policy)
            .unwrap_or(0) as f64;
        let series = entry(&mut pool_plots, prefix.to_string());
        for row in rows {
            let Some(ops) = Summary::of(&row.throughput()).map(|s| s.median / 1e6) else {
                continue;
            };
            entry(series, row.queue).push((x, ops));
        }
    }
    for (prefix, series) in pool_plots {
        let name = format!("pool-{}.svg", prefix.replace(['=', '%', ' '], ""));
        let caption = format!("pool {prefix}: throughput per victim-selection policy");
        line_plot(
            &dir.join(&name),
            &caption,
            "policy",
            "throughput (Mops/s)",
            &series,
            Some(&policy_label),
        )?;
        written.push(dir.join(name).display().to_string());
    }
    Ok(written)
}

fn policy_label(x: &f64) -> String {
    crate::queue::Policy::ALL
        .get(x.round() as usize)
        .map_or(String::new(), |p| p.name().to_string())
}

pub(crate) fn line_plot(
    path: &Path,
    caption: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_names: Option<&dyn Fn(&f64) -> String>,
) -> io::Result<()> {
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let points = series.iter().flat_map(|(_, p)| p.iter());
        let x_max = points.clone().map(|p| p.0).fold(1.0, f64::max);
        let y_max = points.map(|p| p.1).fold(1.0, f64::max);
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            // Headroom above the data for the legend, so that it covers none.
            .build_cartesian_2d(-0.2..x_max * 1.05 + 0.2, 0.0..y_max * 1.4)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16));
        if let Some(names) = x_names {
            mesh.x_labels(series.iter().map(|s| s.1.len()).max().unwrap_or(1))
                .x_label_formatter(names);
        }
        mesh.draw()?;
        for (i, (queue, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(*queue)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 15))
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| io::Error::other(format!("{}: {e}", path.display())))
}

/// One bar series of a grouped bar chart: a name and one value per group
/// (`None`: no bar).
pub(crate) type Bars = (&'static str, Vec<Option<f64>>);

/// A grouped bar chart: one group per entry of `groups` along x, one bar
/// per series in each group. For comparisons across unrelated workloads,
/// where lines between neighbours would mean nothing. The y range leaves
/// room above the bars for the legend, so the legend covers no data.
pub(crate) fn grouped_bars(
    path: &Path,
    caption: &str,
    y_label: &str,
    groups: &[String],
    series: &[Bars],
) -> io::Result<()> {
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let y_max = series
            .iter()
            .flat_map(|(_, values)| values.iter().flatten())
            .copied()
            .fold(1.0, f64::max);
        // Wide enough for horizontal group names (rotated ones were
        // clipped by the plot area): about 90 pixels per group.
        let width = (90 * groups.len() as u32 + 120).max(800);
        let root = SVGBackend::new(path, (width, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 22))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..groups.len() as f64, 0.0..y_max * 1.3)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len() * 2 + 1)
            .x_label_formatter(&|x| {
                // Labels at group centres only.
                let centre = x - x.floor();
                if (centre - 0.5).abs() < 1e-6 {
                    groups.get(x.floor() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(("sans-serif", 15))
            .y_label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .y_desc(y_label)
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        for (i, (name, values)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(values.iter().enumerate().filter_map(|(group, value)| {
                    let left = group as f64 + 0.1 + i as f64 * width;
                    value.map(|v| {
                        Rectangle::new([(left, 0.0), (left + width * 0.9, v)], color.filled())
                    })
                }))?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 15))
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| io::Error::other(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body's fields follow the header as if they were declared next
    /// to it: the files read as before the writer was shared.
    #[test]
    fn json_files_are_the_header_then_the_body() {
        #[derive(Serialize)]
        struct Flat<'a> {
            header: &'a Header,
            load_generator: &'static str,
            samples: &'a [u32],
        }
        #[derive(Serialize)]
        struct Body<'a> {
            load_generator: &'static str,
            samples: &'a [u32],
        }
        let header = Header::collect();
        let dir = std::env::temp_dir().join(format!("bwos-bench-json-{}", std::process::id()));
        let path = dir.join("nested").join("out.json");
        let body = Body {
            load_generator: "wrk -t1",
            samples: &[1, 2],
        };
        write_outputs(&header, Some(&path), &body, None, |_| unreachable!()).unwrap();
        let written = fs::read_to_string(&path).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let flat = Flat {
            header: &header,
            load_generator: "wrk -t1",
            samples: &[1, 2],
        };
        assert_eq!(written, serde_json::to_string_pretty(&flat).unwrap());
    }
}
