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
//! The *limit* column measures what the machine allows: `threads`
//! serial markings of the same heap at once, each with its own mark bits
//! (no item crosses threads, no mark bit is shared), timed together; the
//! limit is `threads x serial time / that time`, the speedup over serial
//! that perfect work distribution would reach if sharing the mark bits
//! cost nothing. On a cache-resident heap it sits far below `threads`
//! when the cores share caches or memory bandwidth.
//!
//! Each
//! repetition runs every contender once, in rotating order, each on a
//! pool built for the measurement and dropped after it; every run checks
//! that exactly the reachable objects were marked.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::options::{PlotOption, RunOptions, WorkerThreads, repetitions_help};
use crate::stats::Summary;

/// Repetitions without `--repetitions`.
pub const REPETITIONS: u32 = 5;

/// Options of `bwos-bench worklist`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help("A smoke run: 200,000 and 20,000 objects, one repetition")),
    mut_arg("repetitions", repetitions_help("Repetitions (each runs every contender once)", REPETITIONS)),
    mut_arg("threads", |a| a.help("Worker threads of the parallel contenders")),
)]
pub struct WorklistArgs {
    /// `--quick`, `--repetitions`, `--json`.
    #[command(flatten)]
    pub run: RunOptions,
    /// `--plot`.
    #[command(flatten)]
    pub plot: PlotOption,
    /// `--threads`.
    #[command(flatten)]
    pub threads: WorkerThreads,
    /// Objects per heap (default: 10,000,000 and 200,000).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(2..=200_000_000))]
    pub objects: Vec<u32>,
}

impl WorklistArgs {
    /// The options `report` uses: 2,000,000 and 200,000 objects, 3
    /// repetitions, with the report's `run` and `plot` options.
    pub fn for_report(run: RunOptions, plot: PlotOption) -> Self {
        WorklistArgs {
            run: RunOptions {
                repetitions: Some(3),
                ..run
            },
            plot,
            threads: WorkerThreads { count: 2 },
            objects: vec![2_000_000, 200_000],
        }
    }
}

/// The heap shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Shape {
    RandomGraph,
    WideTree,
    DeepTree,
    LinkedList,
}

impl Shape {
    pub const ALL: [Shape; 4] = [
        Shape::RandomGraph,
        Shape::WideTree,
        Shape::DeepTree,
        Shape::LinkedList,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::RandomGraph => "random-graph",
            Shape::WideTree => "wide-tree",
            Shape::DeepTree => "deep-tree",
            Shape::LinkedList => "linked-list",
        }
    }
}

/// Objects and their references, in compressed sparse rows.
pub struct Heap {
    offsets: Vec<u32>,
    references: Vec<u32>,
    roots: Vec<u32>,
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A random permutation of `0..n` (Fisher-Yates).
fn permutation(n: usize, state: &mut u64) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        ids.swap(i, (xorshift(state) % (i as u64 + 1)) as usize);
    }
    ids
}

impl Heap {
    /// A heap of `objects` objects of `shape`.
    pub fn new(shape: Shape, objects: usize) -> Heap {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        // Children lists by object, in the order objects are built.
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); objects];
        let roots: Vec<u32> = match shape {
            Shape::RandomGraph => {
                for list in &mut children {
                    let count = 2 + xorshift(&mut state) % 3;
                    for _ in 0..count {
                        list.push((xorshift(&mut state) % objects as u64) as u32);
                    }
                }
                (0..16)
                    .map(|_| (xorshift(&mut state) % objects as u64) as u32)
                    .collect()
            }
            Shape::WideTree | Shape::DeepTree => {
                // Breadth-first numbering: node `next` is the next child.
                let mut next = 1usize;
                for (node, list) in children.iter_mut().enumerate() {
                    let fan_out = match shape {
                        Shape::WideTree => 64,
                        // A binary tree of depth 6, then one chain per leaf.
                        _ if node < 63 => 2,
                        _ => 1,
                    };
                    for _ in 0..fan_out {
                        if next >= objects {
                            break;
                        }
                        list.push(next as u32);
                        next += 1;
                    }
                }
                vec![0]
            }
            Shape::LinkedList => {
                for (node, list) in children.iter_mut().enumerate().take(objects - 1) {
                    list.push(node as u32 + 1);
                }
                vec![0]
            }
        };
        // Shuffle the ids of graphs and lists: no locality to lean on.
        let rename: Vec<u32> = if matches!(shape, Shape::RandomGraph | Shape::LinkedList) {
            permutation(objects, &mut state)
        } else {
            (0..objects as u32).collect()
        };
        let mut by_new_id: Vec<Vec<u32>> = vec![Vec::new(); objects];
        for (old, list) in children.into_iter().enumerate() {
            by_new_id[rename[old] as usize] =
                list.into_iter().map(|c| rename[c as usize]).collect();
        }
        let mut offsets = Vec::with_capacity(objects + 1);
        let mut references = Vec::new();
        offsets.push(0);
        for list in by_new_id {
            references.extend(list);
            offsets.push(references.len() as u32);
        }
        Heap {
            offsets,
            references,
            roots: roots.into_iter().map(|r| rename[r as usize]).collect(),
        }
    }

    pub fn objects(&self) -> usize {
        self.offsets.len() - 1
    }

    fn references(&self, object: u32) -> &[u32] {
        let o = object as usize;
        &self.references[self.offsets[o] as usize..self.offsets[o + 1] as usize]
    }
}

/// The mark bits, and the marking step every contender runs.
pub struct Marks(Vec<AtomicBool>);

impl Marks {
    fn new(objects: usize) -> Self {
        Marks((0..objects).map(|_| AtomicBool::new(false)).collect())
    }

    /// Marks `object`; true if this call marked it.
    #[inline]
    fn mark(&self, object: u32) -> bool {
        let bit = &self.0[object as usize];
        // Relaxed: the bit is the only shared state; test first to keep
        // marked objects' lines shared.
        !bit.load(Ordering::Relaxed) && !bit.swap(true, Ordering::Relaxed)
    }

    /// Marks the references of `object`, handing every newly marked one
    /// to `push`.
    #[inline]
    fn scan(&self, heap: &Heap, object: u32, mut push: impl FnMut(u32)) {
        for &child in heap.references(object) {
            if self.mark(child) {
                push(child);
            }
        }
    }

    /// Marks the roots; returns those this call marked.
    fn mark_roots(&self, heap: &Heap) -> Vec<u32> {
        heap.roots
            .iter()
            .copied()
            .filter(|&r| self.mark(r))
            .collect()
    }

    fn bits(&self) -> Vec<bool> {
        self.0.iter().map(|b| b.load(Ordering::Relaxed)).collect()
    }
}

/// One contender: builds its pool (outside the timed part), then marks
/// everything reachable in `heap`; returns the items stolen if it counts
/// them.
pub trait Marker {
    const NAME: &'static str;
    type Pool;
    fn pool(threads: usize) -> Self::Pool;
    fn mark(pool: &Self::Pool, heap: &Heap, marks: &Marks) -> Option<u64>;
}

pub struct Serial;
impl Marker for Serial {
    const NAME: &'static str = "serial";
    type Pool = ();
    fn pool(_threads: usize) {}
    fn mark(_pool: &(), heap: &Heap, marks: &Marks) -> Option<u64> {
        let mut stack = marks.mark_roots(heap);
        while let Some(object) = stack.pop() {
            marks.scan(heap, object, |child| stack.push(child));
        }
        None
    }
}

pub struct Bwos;
impl Marker for Bwos {
    const NAME: &'static str = "bwos";
    type Pool = bwos::ThreadPool;
    fn pool(threads: usize) -> bwos::ThreadPool {
        bwos::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a bwos pool")
    }
    fn mark(pool: &bwos::ThreadPool, heap: &Heap, marks: &Marks) -> Option<u64> {
        let roots = marks.mark_roots(heap);
        pool.worklist(roots, |object, sink| {
            marks.scan(heap, object, |child| sink.push(child))
        });
        Some(pool.stats().worklist_items_stolen)
    }
}

pub struct CrossbeamDeque;
impl Marker for CrossbeamDeque {
    const NAME: &'static str = "crossbeam-deque";
    /// Its threads are spawned per marking (scoped threads, as the recipe
    /// goes): a few tens of microseconds inside the timed part.
    type Pool = usize;
    fn pool(threads: usize) -> usize {
        threads
    }
    fn mark(&threads: &usize, heap: &Heap, marks: &Marks) -> Option<u64> {
        use crossbeam_deque::{Injector, Steal, Worker};
        let injector = Injector::new();
        for root in marks.mark_roots(heap) {
            injector.push(root);
        }
        let workers: Vec<Worker<u32>> = (0..threads).map(|_| Worker::new_lifo()).collect();
        let stealers: Vec<_> = workers.iter().map(Worker::stealer).collect();
        // Threads that hold no item and look for one; all idle: done.
        let idle = AtomicUsize::new(0);
        let stolen = AtomicUsize::new(0);
        let find = |local: &Worker<u32>, me: usize| -> Option<u32> {
            local.pop().or_else(|| {
                std::iter::repeat_with(|| {
                    injector.steal_batch_and_pop(local).or_else(|| {
                        (1..threads)
                            .map(|k| &stealers[(me + k) % threads])
                            .map(|s| {
                                let got = s.steal_batch_and_pop(local);
                                if got.is_success() {
                                    stolen.fetch_add(1 + local.len(), Ordering::Relaxed);
                                }
                                got
                            })
                            .collect::<Steal<u32>>()
                    })
                })
                .find(|s| !s.is_retry())
                .and_then(Steal::success)
            })
        };
        std::thread::scope(|scope| {
            for (me, local) in workers.into_iter().enumerate() {
                let (find, idle, injector, stealers) = (&find, &idle, &injector, &stealers);
                scope.spawn(move || {
                    loop {
                        if let Some(object) = find(&local, me) {
                            marks.scan(heap, object, |child| local.push(child));
                            continue;
                        }
                        idle.fetch_add(1, Ordering::SeqCst);
                        loop {
                            if idle.load(Ordering::SeqCst) == threads {
                                return;
                            }
                            let visible =
                                !injector.is_empty() || stealers.iter().any(|s| !s.is_empty());
                            if visible {
                                idle.fetch_sub(1, Ordering::SeqCst);
                                break;
                            }
                            std::hint::spin_loop();
                        }
                    }
                });
            }
        });
        Some(stolen.into_inner() as u64)
    }
}

pub struct Rayon;
impl Marker for Rayon {
    const NAME: &'static str = "rayon";
    type Pool = rayon::ThreadPool;
    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool")
    }
    fn mark(pool: &rayon::ThreadPool, heap: &Heap, marks: &Marks) -> Option<u64> {
        fn visit<'s>(scope: &rayon::Scope<'s>, heap: &'s Heap, marks: &'s Marks, object: u32) {
            marks.scan(heap, object, |child| {
                scope.spawn(move |scope| visit(scope, heap, marks, child))
            });
        }
        let roots = marks.mark_roots(heap);
        pool.scope(|scope| {
            for root in roots {
                scope.spawn(move |scope| visit(scope, heap, marks, root));
            }
        });
        None
    }
}

/// The contenders, in table order.
pub const CONTENDERS: [&str; 4] = [Serial::NAME, Bwos::NAME, CrossbeamDeque::NAME, Rayon::NAME];

/// One timed marking by `M` on a pool built for it (and dropped after).
fn measure<M: Marker>(heap: &Heap, threads: usize) -> (f64, Option<u64>, Vec<bool>) {
    let pool = M::pool(threads);
    let marks = Marks::new(heap.objects());
    let start = Instant::now();
    let stolen = M::mark(&pool, heap, &marks);
    let ms = start.elapsed().as_secs_f64() * 1e3;
    drop(pool);
    (ms, stolen, marks.bits())
}

/// The machine's limit: `threads` serial markings of `heap` at once,
/// each with its own marks, on threads started outside the timed part
/// (the calling thread is one of them). Returns the milliseconds from the
/// first start to the last finish, and each marking's marks.
fn measure_limit(heap: &Heap, threads: usize) -> (f64, Vec<Vec<bool>>) {
    let marks: Vec<Marks> = (0..threads).map(|_| Marks::new(heap.objects())).collect();
    let start_line = std::sync::Barrier::new(threads);
    let timed = |marks: &Marks| {
        start_line.wait();
        let start = Instant::now();
        Serial::mark(&(), heap, marks);
        (start, Instant::now())
    };
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
        let others: Vec<_> = marks[1..]
            .iter()
            .map(|marks| scope.spawn(|| timed(marks)))
            .collect();
        let mut spans = vec![timed(&marks[0])];
        spans.extend(
            others
                .into_iter()
                .map(|other| other.join().expect("a serial marking does not panic")),
        );
        spans
    });
    let first_start = spans.iter().map(|span| span.0).min().expect("one marking");
    let last_end = spans.iter().map(|span| span.1).max().expect("one marking");
    let ms = (last_end - first_start).as_secs_f64() * 1e3;
    (ms, marks.iter().map(Marks::bits).collect())
}

fn run_one(name: &str, heap: &Heap, threads: usize) -> (f64, Option<u64>, Vec<bool>) {
    match name {
        Serial::NAME => measure::<Serial>(heap, threads),
        Bwos::NAME => measure::<Bwos>(heap, threads),
        CrossbeamDeque::NAME => measure::<CrossbeamDeque>(heap, threads),
        _ => measure::<Rayon>(heap, threads),
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
pub fn run(args: &WorklistArgs) -> std::io::Result<Vec<Row>> {
    let sizes: Vec<usize> = if args.run.quick {
        vec![200_000, 20_000]
    } else if args.objects.is_empty() {
        vec![10_000_000, 200_000]
    } else {
        args.objects.iter().map(|&n| n as usize).collect()
    };
    let repetitions = args.run.repetitions(REPETITIONS, 1) as usize;
    let threads = args.threads.count as usize;
    let mut rows = Vec::new();
    for &objects in &sizes {
        for shape in Shape::ALL {
            eprintln!("{} with {objects} objects ...", shape.name());
            let heap = Heap::new(shape, objects);
            let (_, _, reference) = run_one(Serial::NAME, &heap, 1);
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
         time of that many independent serial markings at once, the machine's ceiling; bwos vs X \
         = X time / bwos time, median of pairwise ratios; stolen: items, median)\n",
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

/// Grouped bars of each contender's speedup over serial, per heap, and
/// the machine's limit.
pub fn plots(rows: &[Row], dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut sizes: Vec<usize> = rows.iter().map(|row| row.objects).collect();
    sizes.dedup();
    let mut written = Vec::new();
    for objects in sizes {
        let rows: Vec<&Row> = rows.iter().filter(|row| row.objects == objects).collect();
        let groups: Vec<String> = rows
            .iter()
            .map(|row| row.shape.name().to_string())
            .collect();
        let mut series: Vec<crate::report::Bars> = (1..CONTENDERS.len())
            .map(|k| {
                let values = rows
                    .iter()
                    .map(|row| {
                        let serial = Summary::of(&row.ms[0])?.median;
                        Some(serial / Summary::of(&row.ms[k])?.median)
                    })
                    .collect();
                (CONTENDERS[k], values)
            })
            .collect();
        series.push((
            "limit (independent serial markings)",
            rows.iter()
                .map(|row| Some(limit(row)).filter(|x| x.is_finite()))
                .collect(),
        ));
        let name = format!("worklist-{objects}.svg");
        crate::report::grouped_bars(
            &dir.join(&name),
            &format!("parallel marking, {objects} objects: speedup over serial marking"),
            "speedup over serial depth-first marking",
            &groups,
            &series,
        )?;
        written.push(dir.join(name).display().to_string());
    }
    Ok(written)
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
