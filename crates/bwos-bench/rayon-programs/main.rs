//! The parallel-iterator programs of `bwos-bench rayon`, built twice: once
//! against stock rayon and once with rayon-core patched onto bwos (see
//! `src/rayon.rs`). Not part of the bwos-bench crate: the bench
//! writes the two manifests and builds this file with each.
//!
//! Usage: `rayon-programs <program> <threads> <scale> [<idle ms>]`: runs
//! the program once to warm up, once timed, and prints `ns=<nanoseconds>
//! worker=<name of a worker thread>` (the worker name tells which runtime
//! the binary runs on). With `<idle ms>`, it then sleeps that long with
//! the pool idle and adds `idle_cpu_ns=<CPU time of all its threads
//! meanwhile>` (`getrusage`, microsecond
//! resolution; left out if the call fails).

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn fib(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// A few hundred nanoseconds of arithmetic per element.
fn heavy(x: f64) -> f64 {
    let mut acc = x;
    for _ in 0..32 {
        acc = (acc * 1.000_001 + 0.5).sqrt();
    }
    acc
}

/// Runs `program` at `scale` (1.0: the full size) and returns a value
/// that depends on all of its work.
fn run(program: &str, scale: f64) -> u64 {
    let n = |full: usize| ((full as f64 * scale) as usize).max(1000);
    match program {
        "sum-squares" => (0..n(10_000_000) as u64)
            .into_par_iter()
            // `black_box`: without it LLVM sums the squares of a whole
            // range in closed form.
            .map(|x| black_box(x).wrapping_mul(x))
            .reduce(|| 0, u64::wrapping_add),
        "sort" => {
            let mut state = 0x9E37_79B9_7F4A_7C15;
            let mut data: Vec<u64> = (0..n(10_000_000)).map(|_| xorshift(&mut state)).collect();
            let start = Instant::now();
            data.par_sort_unstable();
            // The timed part is the sort alone: report it through the
            // result's low bits would be confusing, so print here.
            SORT_NS.with(|ns| ns.set(start.elapsed().as_nanos() as u64));
            data[data.len() / 2]
        }
        "map-filter-collect" => {
            let kept: Vec<u64> = (0..n(10_000_000) as u64)
                .into_par_iter()
                .map(|x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
                .filter(|x| x % 3 == 0)
                .collect();
            kept.len() as u64
        }
        "chunks-heavy" => {
            let data: Vec<f64> = (0..n(1_000_000)).map(|i| i as f64).collect();
            let sum: f64 = data
                .par_chunks(1000)
                .map(|chunk| chunk.iter().map(|&x| heavy(x)).sum::<f64>())
                .sum();
            sum as u64
        }
        "nested" => {
            let outer = n(1_000) as u64 / 1000 * 1000;
            (0..outer.max(100))
                .into_par_iter()
                .map(|i| {
                    (0..10_000u64)
                        .into_par_iter()
                        .map(|j| black_box(i ^ j).wrapping_mul(j))
                        .reduce(|| 0, u64::wrapping_add)
                })
                .reduce(|| 0, u64::wrapping_add)
        }
        "join-fib" => fib(if scale >= 1.0 { 30 } else { 22 }),
        "par-bridge" => (0..n(200_000))
            .par_bridge()
            .map(|i| heavy(i as f64) as u64)
            .reduce(|| 0, u64::wrapping_add),
        other => {
            eprintln!(
                "unknown program {other:?}: sum-squares, sort, map-filter-collect, \
                 chunks-heavy, nested, join-fib, par-bridge"
            );
            std::process::exit(2);
        }
    }
}

thread_local! {
    static SORT_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !(4..=5).contains(&args.len()) {
        eprintln!("usage: {} <program> <threads> <scale> [<idle ms>]", args[0]);
        std::process::exit(2);
    }
    let program = &args[1];
    let threads: usize = args[2].parse().expect("threads: a whole number");
    let scale: f64 = args[3].parse().expect("scale: a number");
    let idle_ms: Option<u64> = args
        .get(4)
        .map(|ms| ms.parse().expect("idle ms: a whole number"));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("the global pool");
    let worker = rayon::broadcast(|_| std::thread::current().name().unwrap_or("").to_owned())
        .into_iter()
        .next()
        .unwrap_or_default();
    black_box(run(program, scale));
    let start = Instant::now();
    black_box(run(program, scale));
    let mut ns = start.elapsed().as_nanos() as u64;
    if program == "sort" {
        ns = SORT_NS.with(std::cell::Cell::get);
    }
    print!("ns={ns} worker={worker}");
    if let Some(idle_ms) = idle_ms {
        let before = process_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(idle_ms));
        if let (Some(before), Some(after)) = (before, process_cpu_ns()) {
            print!(" idle_cpu_ns={}", after.saturating_sub(before));
        }
    }
    println!();
}

/// CPU time consumed so far by all threads of this process (user and
/// system), in nanoseconds; `None` if the system does not say.
fn process_cpu_ns() -> Option<u64> {
    // SAFETY: all-zero bytes are a valid `rusage` (integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the call's duration.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let ns = |time: libc::timeval| time.tv_sec as u64 * 1_000_000_000 + time.tv_usec as u64 * 1000;
    Some(ns(usage.ru_utime) + ns(usage.ru_stime))
}
