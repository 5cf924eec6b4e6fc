//! A boxed binary tree summed with one `join` per node, called back to
//! back inside one `install`: the shape of issue 49's cliff (a 1,023-node
//! pointer tree at 0.62-0.70x the serial sum). For `perf record` and
//! `valgrind --tool=callgrind`:
//!
//! ```text
//! cargo build --release -p bwos-bench --example boxed_tree
//! perf record -e cpu-clock -g target/release/examples/boxed_tree 2 1023 200000
//! ```
//!
//! Arguments: threads (default 2), nodes (default 1,023), calls (default
//! 100,000), and `entered` to enter the pool for each call (`install` from
//! the main thread) instead of calling back to back inside one `install`.
//! `bwos-bench small --workload tree` measures the same shapes against the
//! peers.

use std::hint::black_box;
use std::time::Instant;

struct Node {
    value: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

fn build(next: &mut u64, nodes: usize) -> Option<Box<Node>> {
    if nodes == 0 {
        return None;
    }
    let value = *next;
    *next += 1;
    let below = nodes - 1;
    let left = build(next, below / 2);
    let right = build(next, below - below / 2);
    Some(Box::new(Node { value, left, right }))
}

fn sum(node: &Node) -> u64 {
    let (left, right) = bwos::join(
        || node.left.as_deref().map_or(0, sum),
        || node.right.as_deref().map_or(0, sum),
    );
    node.value + left + right
}

fn sum_serial(node: &Node) -> u64 {
    let left = node.left.as_deref().map_or(0, sum_serial);
    let right = node.right.as_deref().map_or(0, sum_serial);
    node.value + left + right
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(Ok(2), |a| a.parse())?;
    let nodes: usize = args.next().map_or(Ok(1_023), |a| a.parse())?;
    let calls: u32 = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let entered = args.next().is_some_and(|a| a == "entered");
    let tree = build(&mut 0, nodes).ok_or("a tree needs a node")?;
    let expected = (nodes * (nodes - 1) / 2) as u64;
    let pool = bwos::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let parallel = if entered {
        let start = Instant::now();
        for _ in 0..calls {
            assert_eq!(pool.install(|| sum(black_box(&tree))), expected);
        }
        start.elapsed()
    } else {
        pool.install(|| {
            let start = Instant::now();
            for _ in 0..calls {
                assert_eq!(sum(black_box(&tree)), expected);
            }
            start.elapsed()
        })
    };
    let start = Instant::now();
    for _ in 0..calls {
        assert_eq!(sum_serial(black_box(&tree)), expected);
    }
    let serial = start.elapsed();
    println!(
        "{calls} sums of {nodes} boxed nodes{}: {threads} thread(s) {:.0} ns per call, serial {:.0} ns: {:.2}x serial",
        if entered { ", entered" } else { "" },
        parallel.as_nanos() as f64 / f64::from(calls),
        serial.as_nanos() as f64 / f64::from(calls),
        serial.as_secs_f64() / parallel.as_secs_f64()
    );
    eprintln!("{:?}", pool.stats());
    Ok(())
}
