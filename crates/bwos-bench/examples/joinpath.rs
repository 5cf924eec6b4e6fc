//! The fork/join workloads of `bwos-bench forkjoin` on one runtime, for
//! instruction counts and profiles of the join path:
//!
//! ```text
//! cargo build --release -p bwos-bench --example joinpath
//! valgrind --tool=callgrind target/release/examples/joinpath <runtime> <workload> [threads] [runs]
//! ```
//!
//! `runtime` is `serial`, `bwos`, `rayon` or `chili`; `workload` is `fib`
//! (fib(25), 121,392 joins) or `tree` (a tree of 2^20 nodes, one join per
//! node). The difference to `serial`, divided by the join count, gives the
//! instructions one join costs. It prints the median time of a run, which
//! is only meaningful outside valgrind.

#[path = "../src/forkjoin/workloads.rs"]
#[allow(dead_code)]
mod workloads;

use std::hint::black_box;
use std::num::NonZero;
use std::time::{Duration, Instant};

use workloads::{Tree, serial, with_bwos, with_chili, with_rayon};

/// Times `runs` calls of `work` and returns the last result and the median.
fn median_of(runs: usize, work: &mut dyn FnMut() -> u64) -> (u64, Duration) {
    let mut value = 0;
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            value = work();
            start.elapsed()
        })
        .collect();
    times.sort();
    (value, times[times.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runtime = args.next().unwrap_or_else(|| "bwos".into());
    let workload = args.next().unwrap_or_else(|| "fib".into());
    let threads: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let tree = Tree::balanced(1 << 20);
    let fib = workload == "fib";
    if !fib && workload != "tree" {
        return Err(format!("unknown workload {workload:?} (fib or tree)").into());
    }
    // One run of the workload on `$module`'s join, with context `$ctx`.
    macro_rules! workload {
        ($module:ident, $ctx:expr) => {
            &mut || {
                if fib {
                    $module::fib(black_box(25), $ctx)
                } else {
                    $module::tree_sum(black_box(&tree.values), 0, $ctx)
                }
            }
        };
    }
    let (value, median) = match runtime.as_str() {
        "serial" => median_of(runs, workload!(serial, &mut ())),
        "bwos" => bwos::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?
            .install(|| median_of(runs, workload!(with_bwos, &mut ()))),
        "rayon" => rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?
            .install(|| median_of(runs, workload!(with_rayon, &mut ()))),
        "chili" => {
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: NonZero::new(threads),
                ..chili::Config::default()
            });
            let mut scope = pool.scope();
            median_of(runs, workload!(with_chili, &mut scope))
        }
        other => {
            return Err(format!("unknown runtime {other:?} (serial, bwos, rayon or chili)").into());
        }
    };
    println!("{runtime} {workload} on {threads} thread(s): {value}, median {median:?}");
    Ok(())
}
