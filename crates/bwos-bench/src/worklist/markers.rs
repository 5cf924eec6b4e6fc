//! The contenders of `bwos-bench worklist`: the same marking step on
//! serial marking, the bwos work list, a crossbeam-deque work list and
//! rayon, and the machine's reference (independent serial markings at
//! once).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::heap::Heap;

/// The mark bits, and the marking step every contender runs.
pub struct Marks(Vec<AtomicBool>);

impl Marks {
    pub fn new(objects: usize) -> Self {
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

    pub fn bits(&self) -> Vec<bool> {
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
pub(super) fn measure_one<M: Marker>(heap: &Heap, threads: usize) -> (f64, Option<u64>, Vec<bool>) {
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
pub fn measure_limit(heap: &Heap, threads: usize) -> (f64, Vec<Vec<bool>>) {
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

pub fn run_one(name: &str, heap: &Heap, threads: usize) -> (f64, Option<u64>, Vec<bool>) {
    match name {
        Serial::NAME => measure_one::<Serial>(heap, threads),
        Bwos::NAME => measure_one::<Bwos>(heap, threads),
        CrossbeamDeque::NAME => measure_one::<CrossbeamDeque>(heap, threads),
        _ => measure_one::<Rayon>(heap, threads),
    }
}
