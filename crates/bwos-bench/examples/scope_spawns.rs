//! Spawns of a ~1 us body in one `scope`, from inside a pool: the shape
//! of `bwos-bench small --workload spawn`, for `perf record`.
//!
//! ```text
//! cargo build --release -p bwos-bench --example scope_spawns
//! perf record -e cpu-clock -g target/release/examples/scope_spawns 2 100000 1
//! ```
//!
//! Arguments: threads (default 2), spawns (default 100,000), body in
//! microseconds (default 1). Prints the time per spawn against the serial
//! loop and plain threads given equal shares.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn spin(rounds: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..rounds {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

/// CPU time of every thread of this process so far, nanoseconds (from
/// `/proc/self/task/*/schedstat`; 0 where that is not available).
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(Ok(2), |a| a.parse())?;
    let spawns: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let body_us: f64 = args.next().map_or(Ok(1.0), |a| a.parse())?;
    let start = Instant::now();
    black_box(spin(1 << 20, 1));
    let rounds = ((1 << 20) as f64 / (start.elapsed().as_secs_f64() * 1e6) * body_us) as u64;
    let slots: Vec<AtomicU64> = (0..spawns).map(|_| AtomicU64::new(0)).collect();
    let body = |i: usize| slots[i].store(spin(rounds, i as u64), Ordering::Relaxed);
    let pool = bwos::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    pool.install(|| bwos::scope(|s| s.spawn(|_| ())));
    let cpu = cpu_ns();
    let start = Instant::now();
    pool.install(|| bwos::scope(|s| (0..spawns).for_each(|i| s.spawn(move |_| body(i)))));
    let parallel = start.elapsed();
    let parallel_cpu = cpu_ns() - cpu;
    let cpu = cpu_ns();
    let start = Instant::now();
    (0..spawns).for_each(|i| body(black_box(i)));
    let serial = start.elapsed();
    let serial_cpu = cpu_ns() - cpu;
    let share = spawns.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for first in (0..spawns).step_by(share) {
            s.spawn(move || (first..(first + share).min(spawns)).for_each(|i| body(black_box(i))));
        }
    });
    let ceiling = start.elapsed();
    let per = |d: std::time::Duration| d.as_nanos() as f64 / spawns as f64;
    println!(
        "{spawns} spawns of {body_us} us: {threads} thread(s) {:.0} ns per spawn, serial {:.0} ns, threads {:.0} ns: {:.2}x serial, {:.2}x the threads' ceiling; CPU time {:.2}x the serial loop's",
        per(parallel),
        per(serial),
        per(ceiling),
        serial.as_secs_f64() / parallel.as_secs_f64(),
        ceiling.as_secs_f64() / parallel.as_secs_f64(),
        parallel_cpu as f64 / serial_cpu.max(1) as f64,
    );
    eprintln!("{:?}", pool.stats());
    Ok(())
}
