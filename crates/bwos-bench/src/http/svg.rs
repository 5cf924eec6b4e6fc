//! The HTTP plots, in the shape of the BWoS paper's Figure 14: one line
//! per runtime through its load points (50, 200, 1000 connections),
//! median throughput on the x axis against median p99 latency, and
//! against median server CPU time per request.

use std::path::Path;

use super::{Experiment, RUNTIMES, Sample};
use crate::report::{Series, line_plot};
use crate::stats::Summary;

/// A plot's file name, y axis label and y value of a sample.
type Plot = (&'static str, &'static str, fn(&Sample) -> f64);

/// Writes `http-latency.svg` and `http-cpu.svg` into `dir`; returns the
/// files written.
pub fn plot(experiment: &Experiment, dir: &Path) -> std::io::Result<Vec<String>> {
    let plots: [Plot; 2] = [
        ("http-latency.svg", "p99 latency (ms)", |s| s.p99_ms),
        ("http-cpu.svg", "server CPU per request (us)", |s| {
            s.cpu_us_per_request
        }),
    ];
    let mut written = Vec::new();
    for (name, y_label, pick) in plots {
        let series: Vec<Series> = RUNTIMES
            .iter()
            .map(|&runtime| (runtime, line(&experiment.samples, runtime, pick)))
            .filter(|(_, points)| !points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let path = dir.join(name);
        line_plot(
            &path,
            &format!(
                "hyper hello world, load from {}",
                experiment.load_generator.describe()
            ),
            "throughput (thousand requests/s)",
            y_label,
            &series,
            None,
        )?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// `runtime`'s (median kreq/s, median `pick`) per connection count, in
/// the order of the connection counts.
fn line(samples: &[Sample], runtime: &str, pick: fn(&Sample) -> f64) -> Vec<(f64, f64)> {
    let mut connections: Vec<u32> = samples.iter().map(|s| s.connections).collect();
    connections.sort_unstable();
    connections.dedup();
    connections
        .into_iter()
        .filter_map(|c| {
            let point: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.runtime == runtime && s.connections == c)
                .collect();
            let x = Summary::of(
                &point
                    .iter()
                    .map(|s| s.requests_per_sec / 1e3)
                    .collect::<Vec<_>>(),
            )?;
            let y = Summary::of(&point.iter().map(|s| pick(s)).collect::<Vec<_>>())?;
            Some((x.median, y.median))
        })
        .collect()
}
