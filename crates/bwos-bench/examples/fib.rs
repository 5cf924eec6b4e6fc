//! Recursive Fibonacci on a pool: the join fast path in a loop. Run it
//! under `valgrind --tool=callgrind` for instruction counts per join:
//!
//! ```text
//! cargo build --release -p bwos-bench --example fib
//! valgrind --tool=callgrind target/release/examples/fib 1 25
//! ```
//!
//! Arguments: threads (default 1) and n (default 30).

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_serial(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    fib_serial(n - 1) + fib_serial(n - 2)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let n: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    let pool = bwos::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let start = std::time::Instant::now();
    let value = pool.install(|| fib(std::hint::black_box(n)));
    let parallel = start.elapsed();
    let start = std::time::Instant::now();
    let expected = fib_serial(std::hint::black_box(n));
    let serial = start.elapsed();
    assert_eq!(value, expected);
    println!("fib({n}) = {value}: {threads} thread(s) {parallel:?}, serial {serial:?}");
    Ok(())
}
