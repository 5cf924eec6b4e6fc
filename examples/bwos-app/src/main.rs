//! A program on bwos alone: a parallel sum with `join`, borrowed writes in
//! a `scope`, async tasks with a timer, and a work list, all on the global
//! pool. It checks its own results and exits non-zero on a wrong one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn sum(values: &[u64]) -> u64 {
    if values.len() <= 1024 {
        return values.iter().sum();
    }
    let (left, right) = values.split_at(values.len() / 2);
    let (a, b) = bwos::join(|| sum(left), || sum(right));
    a + b
}

fn main() {
    let values: Vec<u64> = (0..1_000_000).collect();
    assert_eq!(sum(&values), 499_999_500_000);

    let mut squares = vec![0u64; 100];
    bwos::scope(|s| {
        for (i, square) in squares.iter_mut().enumerate() {
            s.spawn(move |_| *square = (i * i) as u64);
        }
    });
    assert_eq!(squares[9], 81);

    let answer = bwos::block_on(async {
        let task = bwos::task::spawn(async {
            bwos::time::sleep(Duration::from_millis(10)).await;
            let (a, b) = bwos::join(|| 6, || 7);
            a * b
        });
        bwos::time::timeout(Duration::from_secs(5), task).await
    });
    assert_eq!(answer.expect("in time").expect("no panic"), 42);

    let marked: Vec<AtomicBool> = (0..10_000).map(|_| AtomicBool::new(false)).collect();
    bwos::worklist::run([0usize], |node, sink| {
        if !marked[node].swap(true, Ordering::Relaxed) {
            for child in [2 * node + 1, 2 * node + 2] {
                if child < marked.len() {
                    sink.push(child);
                }
            }
        }
    });
    assert!(marked.iter().all(|m| m.load(Ordering::Relaxed)));

    println!(
        "join, scope, async tasks and a work list ran on {} workers",
        bwos::current_num_threads()
    );
}
