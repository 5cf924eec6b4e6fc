//! `bwos::worklist`: marks every object reachable from a root in a random
//! object graph, as a garbage collector's marking phase does. Each item
//! may push more items; the run ends when none is left, each processed
//! once.
//!
//! ```text
//! cargo run --release -p bwos --example worklist -- 1000000
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn main() {
    let objects: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000_000);
    // Object i points to i + 1 (so all are reachable from 0) and to two
    // pseudo-random others.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as usize % objects
    };
    let edges: Vec<[usize; 3]> = (0..objects)
        .map(|i| [(i + 1) % objects, next(), next()])
        .collect();
    let marked: Vec<AtomicBool> = (0..objects).map(|_| AtomicBool::new(false)).collect();
    let visits = AtomicUsize::new(0);

    let start = std::time::Instant::now();
    bwos::worklist::run([0], |object: usize, sink| {
        // Relaxed: the mark only decides who visits; nothing is published.
        if marked[object].swap(true, Ordering::Relaxed) {
            return;
        }
        visits.fetch_add(1, Ordering::Relaxed);
        for &target in &edges[object] {
            if !marked[target].load(Ordering::Relaxed) {
                sink.push(target);
            }
        }
    });
    let elapsed = start.elapsed();
    assert_eq!(visits.load(Ordering::Relaxed), objects, "every object once");
    println!(
        "marked {objects} objects on {} threads in {elapsed:?}",
        bwos::current_num_threads()
    );
}
