//! The HTTP plots, in the shape of the BWoS paper's Figure 14: one line
//! per runtime through its load points (each labelled with its connection
//! count), median throughput across against median p99 latency up, and
//! against median server CPU time per request.

use super::{Experiment, RUNTIMES, Sample, Workload};
use crate::plot::{Better, Chart, Figure, Series};
use crate::stats::Summary;

/// A plot's file, what it shows, its y axis and the y value of a sample.
type Plot = (&'static str, &'static str, &'static str, fn(&Sample) -> f64);

/// `http-latency.svg` and `http-cpu.svg`.
pub fn figures(experiment: &Experiment) -> Vec<Figure> {
    let plots: [Plot; 2] = [
        ("http-latency.svg", "p99 latency", "p99 latency (ms)", |s| {
            s.p99_ms
        }),
        (
            "http-cpu.svg",
            "server CPU time per request",
            "server CPU time per request (µs)",
            |s| s.cpu_us_per_request,
        ),
    ];
    let (what, unit) = match experiment.workload {
        Workload::H1 => ("HTTP/1.1 hello world", "connections"),
        Workload::H2 => ("HTTP/2 hello world", "streams"),
        Workload::Axum => ("axum Router", "connections"),
    };
    plots
        .into_iter()
        .filter_map(|(file, shows, y_label, pick)| {
            let series: Vec<Series> = RUNTIMES
                .iter()
                .map(|&runtime| Series {
                    name: runtime.to_string(),
                    points: line(&experiment.samples, runtime, pick, unit),
                })
                .filter(|series| !series.points.is_empty())
                .collect();
            (!series.is_empty()).then(|| Figure {
                file: file.to_string(),
                title: format!("{what}: {shows} against throughput (BWoS Fig. 14)"),
                better: Better::Lower,
                note: format!(
                    "each point: one load, labelled with its {unit}; further right: more requests \
                     per second; load from {}",
                    experiment.load_generator.describe()
                ),
                chart: Chart::Lines {
                    x_label: "throughput (thousand req/s)".into(),
                    y_label: y_label.into(),
                    x_ticks: None,
                    series,
                    reference: None,
                },
            })
        })
        .collect()
}

/// `runtime`'s (median kreq/s, median `pick`, "N connections") per
/// connection count, in the order of the connection counts.
fn line(
    samples: &[Sample],
    runtime: &str,
    pick: fn(&Sample) -> f64,
    unit: &str,
) -> Vec<(f64, f64, Option<String>)> {
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
            Some((x.median, y.median, Some(format!("{c} {unit}"))))
        })
        .collect()
}
