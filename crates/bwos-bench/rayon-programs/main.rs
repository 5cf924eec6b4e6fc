//! The rayon programs of `bwos-bench rayon`, built twice: once
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

/// Sorts `v` stably with a merge sort whose halves sort in parallel
/// (`rayon::join`) down to 2,048 elements, which the standard library's
/// sort takes; `scratch` is as long as `v`.
fn merge_sort<T: Ord + Copy + Send>(v: &mut [T], scratch: &mut [T]) {
    if v.len() <= 2048 {
        v.sort();
        return;
    }
    let mid = v.len() / 2;
    {
        let (left, right) = v.split_at_mut(mid);
        let (left_scratch, right_scratch) = scratch.split_at_mut(mid);
        rayon::join(
            || merge_sort(left, left_scratch),
            || merge_sort(right, right_scratch),
        );
    }
    // The halves are sorted: merge them into `scratch`, then copy back.
    let (left, right) = v.split_at(mid);
    let (mut i, mut j) = (0, 0);
    for slot in scratch.iter_mut() {
        // Ties take the left element first: the sort stays stable.
        if j == right.len() || (i < left.len() && left[i] <= right[j]) {
            *slot = left[i];
            i += 1;
        } else {
            *slot = right[j];
            j += 1;
        }
    }
    v.copy_from_slice(scratch);
}

/// `calls` merge sorts of copies of `input`, back to back from outside
/// the pool; the time of the calls alone is the run's.
fn merge_sorts<T: Ord + Copy + Send>(input: &[T], calls: usize, key: impl Fn(&T) -> u64) -> u64 {
    let mut scratch = input.to_vec();
    let mut checked = input.to_vec();
    merge_sort(&mut checked, &mut scratch);
    let mut expected = input.to_vec();
    expected.sort();
    assert!(checked == expected, "the merge sort got its input wrong");
    timed(|| {
        (0..calls)
            .map(|_| {
                let mut data = input.to_vec();
                merge_sort(&mut data, &mut scratch);
                key(&data[data.len() / 3])
            })
            .fold(0, u64::wrapping_add)
    })
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
            timed(|| data.par_sort_unstable());
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
        // rayon-demo's `parallel_find_any_middle`: the needle sits where
        // the first split puts the second half, so a call is fast only if
        // another worker takes that half at once; back to back calls.
        "find-any-middle" => {
            let mut state = 0x2545_F491_4F6C_DD1D;
            let haystack: Vec<u32> = (0..n(10_000_000))
                .map(|_| xorshift(&mut state) as u32)
                .collect();
            let needle = haystack[haystack.len() / 2];
            timed(|| {
                (0..100)
                    .map(|_| {
                        let found = haystack.par_iter().find_any(|&&x| x == needle);
                        u64::from(*found.expect("the needle is in the haystack"))
                    })
                    .fold(0, u64::wrapping_add)
            })
        }
        // rayon-demo's `par_sort_descending`: 50,000 keys in descending
        // order (a sort that only checks and reverses), back to back.
        "sort-descending" => {
            let descending: Vec<u64> = (0..n(50_000) as u64).rev().collect();
            (0..1000)
                .map(|_| {
                    let mut data = descending.clone();
                    data.par_sort();
                    data[data.len() / 3]
                })
                .fold(0, u64::wrapping_add)
        }
        // rayon-demo's `demo_merge_sort_big`: a join-based merge sort of
        // 50,000 random 128-byte elements, back to back.
        "merge-sort-big" => {
            let mut state = 0x1405_7B7E_F767_814F;
            // At least 16,384 elements (a smoke run's scale too): the sort
            // splits down to 2,048, so smaller inputs would never join.
            let input: Vec<[u64; 16]> = (0..n(50_000).max(16_384))
                .map(|_| [xorshift(&mut state); 16])
                .collect();
            merge_sorts(&input, 60, |element| element[0])
        }
        // rayon-demo's `demo_merge_sort_mostly_ascending`: the same sort of
        // 50,000 ascending keys with sqrt(n) random pairs swapped.
        "merge-sort-mostly-ascending" => {
            // At least 16,384, as above.
            let len = n(50_000).max(16_384);
            let mut input: Vec<u64> = (0..len as u64).collect();
            let mut state = 0x9FB2_1C65_1E98_DF25;
            for _ in (0..len).take_while(|swaps| swaps * swaps <= len) {
                let x = xorshift(&mut state) as usize % len;
                let y = xorshift(&mut state) as usize % len;
                input.swap(x, y);
            }
            merge_sorts(&input, 400, |&key| key)
        }
        other => {
            eprintln!(
                "unknown program {other:?}: sum-squares, sort, map-filter-collect, \
                 chunks-heavy, nested, join-fib, par-bridge, find-any-middle, \
                 sort-descending, merge-sort-big, merge-sort-mostly-ascending"
            );
            std::process::exit(2);
        }
    }
}

thread_local! {
    /// The time of the part of a run that `timed` measured, for programs
    /// whose input takes longer to make than the work to time (the sort's
    /// 10M keys, find-any-middle's 10M haystack, the merge sorts'
    /// inputs); `None`: the whole run.
    static TIMED_NS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `work` and records its time as the run's timed part.
fn timed<R>(work: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let result = work();
    let ns = start.elapsed().as_nanos() as u64;
    TIMED_NS.with(|timed| timed.set(Some(ns)));
    result
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
    let whole = start.elapsed().as_nanos() as u64;
    let ns = TIMED_NS.with(std::cell::Cell::get).unwrap_or(whole);
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
