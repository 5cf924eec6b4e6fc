//! `bwos-bench worklist`: parallel marking of synthetic heaps, the BWoS
//! paper's garbage-collector application (section 6.3.1), with the same
//! marking code on every contender.
//!
//! A heap is a graph of objects in compressed sparse rows; marking sets
//! an atomic mark bit (test, then test-and-set) on every object reachable
//! from the roots, pushing each newly marked object as an item. Shapes: a
//! random graph (2-4 references per object, ids shuffled, so every
//! reference is a cache miss once the heap outgrows the caches), a wide
//! shallow tree (64 children per node), a deep narrow one (64 chains
//! below a small binary tree), and one long linked list in shuffled order
//! (no parallelism at all: the overhead case).
//!
//! Contenders: serial depth-first marking (a `Vec` stack), the bwos work
//! list, a work list hand-written on crossbeam-deque (`Injector` +
//! `Worker` + `Stealer` with an idle-count termination, the standard
//! recipe), and rayon (`scope` with one `spawn` per object). chili is left
//! out: it offers only a binary `join`, so a work list on it would be a
//! hand-written splitting scheme, not a peer users would pick.
//!
//! The *limit* column is a reference for what the machine gives parallel
//! copies of the serial work: `threads` serial markings of the same heap
//! at once, each with its own mark bits (no item crosses threads, no mark
//! bit is shared), timed together; the limit is `threads x serial time /
//! that time`. It shows what shared caches, memory bandwidth and the
//! machine's other load cost copies of the same work at that moment; it
//! is not a bound (each copy has mark bits of its own to miss on, and it
//! is timed at another moment than the work lists), and a work list can
//! beat it, so the plots leave it out.
//!
//! Each repetition runs every contender once, in rotating order, each on a
//! pool built for the measurement and dropped after it; every run checks
//! that exactly the reachable objects were marked.

mod heap;
mod markers;

use std::fmt::Write as _;
use std::io;

use serde::Serialize;

use crate::experiment::{self, About, Options, Paper, Results};
use crate::options::{OptionHelp, WorkerThreads};
use crate::output::Samples;
use crate::plot::{BarSeries, Better, Chart, Figure, thousands};
use crate::progress::{self, Bar};
use crate::stats::Summary;
pub use heap::{Heap, Shape};
use markers::{Bwos, CONTENDERS, CrossbeamDeque, Marker, Serial, measure_limit, run_one};

/// Options of `bwos-bench worklist`.
#[derive(Debug, Clone, clap::Args)]
pub struct WorklistArgs {
    /// Objects per heap (default: 10,000,000 and 200,000).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(2..=200_000_000))]
    pub objects: Vec<u32>,
}

impl OptionHelp for WorklistArgs {
    const QUICK: &'static str = "A smoke run: 200,000 and 20,000 objects, one repetition";
    const REPETITIONS: &'static str = "Repetitions (each runs every contender once)";
    const DEFAULT_REPETITIONS: u32 = 5;
    const PLOT: &'static str = "Write SVG plots (each contender's speedup over serial marking, per heap size) into \
         this directory";
    const THREADS: &'static str = "Worker threads of the parallel contenders";
}

impl experiment::Experiment for WorklistArgs {
    const NAME: &'static str = "worklist";
    const ABOUT: About = About {
        measures: "Parallel marking of synthetic heaps (a random graph, a wide and a deep tree, \
                   a shuffled linked list), the garbage collector's use of a work-stealing \
                   queue: serial marking, the bwos work list, a crossbeam-deque work list and \
                   rayon, every run's marks checked against serial marking.",
        better: "Higher speedup over serial marking is better; bwos vs X above 1 means bwos is \
                 faster.",
        paper: Some(Paper {
            figure: "BWoS (OSDI'23), Figure 13 (section 6.3.1)",
            claim: "With BWoS as the task queue of Java's G1 collector, the 23 Renaissance \
                    benchmarks run on average 3.55% faster end to end (at most 25.3%); 17 of \
                    them improve.",
            machine: "Huawei FusionServer Pro 2288X V5 (x86, two sockets, 88 hyperthreads)",
            threads: "the JVM's default number of GC threads",
            differs: "The paper times whole Java programs, of which marking is a part, inside \
                      G1; this experiment times marking alone on synthetic heaps against other \
                      Rust work lists, so the same queue shows a much larger or smaller \
                      difference.",
        }),
    };
    type Threads = WorkerThreads<WorklistArgs>;
    type Body = Samples<Row>;

    fn plan(options: &Options<Self>) -> progress::Plan {
        let sizes = sizes(options);
        let per_heap = 1 + u64::from(options.run.repetitions(1)) * (CONTENDERS.len() as u64 + 1);
        let steps = sizes.len() as u64 * Shape::ALL.len() as u64 * per_heap;
        // About 50 ns an object for a marking, the heap's build 10x that.
        let objects: f64 = sizes.iter().map(|&n| n as f64).sum::<f64>() * Shape::ALL.len() as f64;
        let markings = objects * (per_heap as f64 + 10.0);
        progress::Plan {
            steps,
            seconds: markings * 50e-9,
        }
    }

    fn run(options: &Options<Self>, bar: &Bar) -> io::Result<Results<Samples<Row>>> {
        let rows = run(options, bar)?;
        Ok(Results {
            tables: table(&rows),
            figures: figures(&rows),
            result: result(&rows),
            failures: Vec::new(),
            body: Samples { samples: rows },
        })
    }

    /// 2,000,000 and 200,000 objects, 3 repetitions, 2 threads.
    fn for_report(report: &crate::report::Settings) -> Option<Options<Self>> {
        Some(Options {
            run: report.run_options(report.json_beside(Self::NAME), Some(3)),
            threads: WorkerThreads::of(2),
            own: WorklistArgs {
                objects: vec![2_000_000, 200_000],
            },
        })
    }
}

/// The heap sizes, after `--quick` and the defaults.
fn sizes(options: &Options<WorklistArgs>) -> Vec<usize> {
    if options.run.quick {
        vec![200_000, 20_000]
    } else if options.own.objects.is_empty() {
        vec![10_000_000, 200_000]
    } else {
        options.own.objects.iter().map(|&n| n as usize).collect()
    }
}

/// One (shape, size) row: times per contender, items stolen by bwos.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub shape: Shape,
    pub objects: usize,
    pub reachable: usize,
    pub threads: usize,
    /// Milliseconds per contender (in [`CONTENDERS`] order), per repetition.
    pub ms: Vec<Vec<f64>>,
    /// Milliseconds of `threads` independent serial markings at once, per
    /// repetition (see the module docs: the machine's limit).
    pub limit_ms: Vec<f64>,
    pub bwos_items_stolen: Vec<u64>,
    pub crossbeam_items_stolen: Vec<u64>,
}

/// Runs the experiment. Fails if a contender marks a different set of
/// objects than serial marking.
pub fn run(options: &Options<WorklistArgs>, bar: &Bar) -> std::io::Result<Vec<Row>> {
    let sizes = sizes(options);
    let repetitions = options.run.repetitions(1) as usize;
    let threads = options.threads.count as usize;
    let mut rows = Vec::new();
    for &objects in &sizes {
        for shape in Shape::ALL {
            bar.set_message(format!(
                "{} of {objects} objects: building it, serial reference",
                shape.name()
            ));
            let heap = Heap::new(shape, objects);
            let (_, _, reference) = run_one(Serial::NAME, &heap, 1);
            bar.step();
            let mut row = Row {
                shape,
                objects,
                reachable: reference.iter().filter(|&&b| b).count(),
                threads,
                ms: vec![Vec::new(); CONTENDERS.len()],
                limit_ms: Vec::new(),
                bwos_items_stolen: Vec::new(),
                crossbeam_items_stolen: Vec::new(),
            };
            // The limit takes the last slot of the rotation.
            let slots = CONTENDERS.len() + 1;
            for repetition in 0..repetitions {
                for k in 0..slots {
                    let which = (k + repetition) % slots;
                    bar.set_message(format!(
                        "{} of {objects} objects: {}, repetition {} of {repetitions}",
                        shape.name(),
                        CONTENDERS.get(which).unwrap_or(&"limit"),
                        repetition + 1
                    ));
                    if which == CONTENDERS.len() {
                        let (ms, copies) = measure_limit(&heap, threads);
                        if copies.iter().any(|bits| *bits != reference) {
                            return Err(std::io::Error::other(format!(
                                "an independent serial marking marked a different set of objects \
                                 on {} ({objects} objects)",
                                shape.name()
                            )));
                        }
                        row.limit_ms.push(ms);
                        bar.step();
                        continue;
                    }
                    let name = CONTENDERS[which];
                    let (ms, stolen, bits) = run_one(name, &heap, threads);
                    if bits != reference {
                        return Err(std::io::Error::other(format!(
                            "{name} marked a different set of objects than serial marking on {} \
                             ({objects} objects)",
                            shape.name()
                        )));
                    }
                    row.ms[which].push(ms);
                    match (name, stolen) {
                        (Bwos::NAME, Some(n)) => row.bwos_items_stolen.push(n),
                        (CrossbeamDeque::NAME, Some(n)) => row.crossbeam_items_stolen.push(n),
                        _ => {}
                    }
                    bar.step();
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The table: medians per contender, speedups over serial, and the ratios
/// of bwos against each peer (pair by pair).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "parallel marking (ms: median; speedup = serial/contender; limit = threads x serial / \
         time of that many independent serial markings at once: what the machine gives parallel \
         copies of the serial work, a reference and not a bound; bwos vs X = X time / bwos \
         time, median of pairwise ratios; stolen: items, median)\n",
    );
    writeln!(
        out,
        "{:<13} {:>9} {:>9} {:>3} {:>9} {:>6} {:>16} {:>16} {:>16} {:>9} {:>9} {:>9}",
        "heap",
        "objects",
        "reachable",
        "thr",
        "serial",
        "limit",
        "bwos (x serial)",
        "crossbeam (x)",
        "rayon (x)",
        "bwos/cb",
        "bwos/ray",
        "stolen"
    )
    .expect("writing to a String");
    for row in rows {
        let median = |k: usize| Summary::of(&row.ms[k]).map_or(f64::NAN, |s| s.median);
        let serial = median(0);
        let cell = |k: usize| format!("{:.1} ({:.2}x)", median(k), serial / median(k));
        let versus =
            |k: usize| Summary::of_ratios(&row.ms[k], &row.ms[1]).map_or(f64::NAN, |s| s.median);
        let stolen: Vec<f64> = row.bwos_items_stolen.iter().map(|&n| n as f64).collect();
        writeln!(
            out,
            "{:<13} {:>9} {:>9} {:>3} {:>9.1} {:>5.2}x {:>16} {:>16} {:>16} {:>8.2}x {:>8.2}x {:>9.0}",
            row.shape.name(),
            row.objects,
            row.reachable,
            row.threads,
            serial,
            limit(row),
            cell(1),
            cell(2),
            cell(3),
            versus(2),
            versus(3),
            Summary::of(&stolen).map_or(f64::NAN, |s| s.median)
        )
        .expect("writing to a String");
    }
    out
}

/// The machine's limit for `row`: `threads x serial / limit time`, medians.
fn limit(row: &Row) -> f64 {
    let median = |samples: &[f64]| Summary::of(samples).map_or(f64::NAN, |s| s.median);
    row.threads as f64 * median(&row.ms[0]) / median(&row.limit_ms)
}

/// The median paired ratio of `peer`'s time to bwos's over the rows of
/// the largest heap.
fn versus(row: &Row, peer: usize) -> Option<f64> {
    Summary::of_ratios(&row.ms[peer], &row.ms[1]).map(|s| s.median)
}

/// This machine's figures: bwos against the crossbeam-deque work list and
/// rayon, geometric means over the shapes of the largest heap.
fn result(rows: &[Row]) -> Option<String> {
    let largest = rows.iter().map(|row| row.objects).max()?;
    let rows: Vec<&Row> = rows.iter().filter(|row| row.objects == largest).collect();
    let geomean = |peer: usize| -> Option<f64> {
        let logs: Vec<f64> = rows
            .iter()
            .filter_map(|row| versus(row, peer))
            .map(f64::ln)
            .collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    };
    Some(format!(
        "marking alone, {largest} objects on {} threads: bwos {:.2}x as fast as the \
         crossbeam-deque work list and {:.2}x rayon (geometric means over the {} shapes of the \
         paired ratios).",
        rows.first()?.threads,
        geomean(2)?,
        geomean(3)?,
        rows.len()
    ))
}

/// Per heap size, each parallel contender's speedup over serial marking.
fn figures(rows: &[Row]) -> Vec<Figure> {
    let mut sizes: Vec<usize> = rows.iter().map(|row| row.objects).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|objects| {
            let rows: Vec<&Row> = rows.iter().filter(|row| row.objects == objects).collect();
            let series = (1..CONTENDERS.len())
                .map(|k| {
                    let values = rows
                        .iter()
                        .map(|row| {
                            let serial = Summary::of(&row.ms[0])?.median;
                            Some(serial / Summary::of(&row.ms[k])?.median)
                        })
                        .collect();
                    BarSeries::new(CONTENDERS[k], values)
                })
                .collect();
            let threads = rows.first().map_or(0, |row| row.threads);
            Figure {
                file: format!("worklist-{objects}.svg"),
                title: format!(
                    "Parallel marking of {} objects on {threads} threads: speedup over serial \
                     marking",
                    thousands(objects)
                ),
                better: Better::Higher,
                note: "medians over repetitions".into(),
                chart: Chart::Bars {
                    value_label: "speedup over serial depth-first marking (serial time / time)"
                        .into(),
                    categories: rows
                        .iter()
                        .map(|row| row.shape.name().to_string())
                        .collect(),
                    series,
                    reference: Some((1.0, "as fast as serial marking".into())),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_marks_exactly_the_reachable_objects() {
        for shape in Shape::ALL {
            let heap = Heap::new(shape, 5_000);
            let (_, _, reference) = run_one(Serial::NAME, &heap, 1);
            assert!(reference.iter().any(|&b| b));
            for name in CONTENDERS {
                let (_, _, bits) = run_one(name, &heap, 2);
                assert!(bits == reference, "{name} on {}", shape.name());
            }
        }
    }

    #[test]
    fn every_independent_marking_of_the_limit_marks_the_reachable_objects() {
        let heap = Heap::new(Shape::RandomGraph, 5_000);
        let (_, _, reference) = run_one(Serial::NAME, &heap, 1);
        let (ms, copies) = measure_limit(&heap, 3);
        assert!(ms >= 0.0);
        assert_eq!(copies.len(), 3);
        assert!(copies.iter().all(|bits| *bits == reference));
    }

    #[test]
    fn trees_and_lists_are_fully_reachable() {
        for shape in [Shape::WideTree, Shape::DeepTree, Shape::LinkedList] {
            let heap = Heap::new(shape, 1_000);
            let (_, _, bits) = run_one(Serial::NAME, &heap, 1);
            assert!(bits.iter().all(|&b| b), "{}", shape.name());
        }
    }
}
