//! Recursive Fibonacci with async fork/join: `fork::join` (a parent waits
//! for a thief's poll of its child) against `Region::join` (the parent
//! suspends), with `fork::boxed` frames, against `bwos::join`. Prints the
//! median of several runs of each, interleaved:
//!
//! ```text
//! cargo run --release -p bwos-bench --example fork_fib -- 2 27 9
//! ```
//!
//! Arguments: threads (default 2), n (default 27), runs (default 9).

use bwos::fork::{self, Boxed, Region};

fn fib_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = bwos::join(|| fib_join(n - 1), || fib_join(n - 2));
    a + b
}

fn fib_fork(n: u64) -> Boxed<'static, u64> {
    fork::boxed(async move {
        if n < 2 {
            return n;
        }
        let (a, b) = fork::join(fib_fork(n - 1), fib_fork(n - 2)).await;
        a + b
    })
}

fn fib_region<'s, 'env>(region: Region<'s, 'env>, n: u64) -> Boxed<'s, u64> {
    fork::boxed(async move {
        if n < 2 {
            return n;
        }
        let (a, b) = region
            .join(fib_region(region, n - 1), fib_region(region, n - 2))
            .await;
        a + b
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::{Duration, Instant};

    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(Ok(2), |a| a.parse())?;
    let n: u64 = args.next().map_or(Ok(27), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(9), |a| a.parse())?;
    let pool = bwos::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let n = std::hint::black_box(n);
    let mut times: [Vec<Duration>; 3] = Default::default();
    let mut values = [0; 3];
    for _ in 0..runs {
        let start = Instant::now();
        values[0] = pool.install(|| fib_join(n));
        times[0].push(start.elapsed());
        let start = Instant::now();
        values[1] = pool.block_on(fib_fork(n));
        times[1].push(start.elapsed());
        let start = Instant::now();
        values[2] = pool.install(|| fork::block_on(|region| fib_region(region, n)));
        times[2].push(start.elapsed());
    }
    assert!(values.iter().all(|&v| v == values[0]), "{values:?}");
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let [join, fork, region] = times.each_mut().map(median);
    println!(
        "fib({n}) = {} on {threads} thread(s), median of {runs}: bwos::join {join:?}, \
         fork::join {fork:?} ({:.2}x join), Region::join {region:?} ({:.2}x join, {:.2}x fork::join)",
        values[0],
        fork.as_secs_f64() / join.as_secs_f64(),
        region.as_secs_f64() / join.as_secs_f64(),
        region.as_secs_f64() / fork.as_secs_f64(),
    );
    Ok(())
}
