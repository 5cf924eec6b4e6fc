//! An owner and three thieves exchanging items through a LIFO and a FIFO
//! BWoS queue, with a summary of who processed what.
//!
//! `cargo run --release -p bwos-queue --example exchange [items]`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use bwos_queue::{Config, Steal, fifo, lifo};

const THIEVES: usize = 3;

/// What one thread took out of the queue.
#[derive(Default)]
struct Tally {
    items: u64,
    sum: u64,
}

impl Tally {
    fn add(&mut self, item: u64) {
        self.items += 1;
        self.sum += item;
    }
}

/// Runs the exchange on one queue variant; `$variant` is `lifo` or `fifo`.
macro_rules! exchange {
    ($variant:ident, $items:expr) => {{
        let items: u64 = $items;
        let config = Config::default();
        let (worker, stealer) = $variant::new::<u64>(config);
        let done = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let thieves: Vec<_> = (0..THIEVES)
            .map(|_| {
                let stealer = stealer.clone();
                let done = done.clone();
                thread::spawn(move || {
                    // Each thief batches stolen items into a queue of its own.
                    let (own, _) = $variant::new::<u64>(config);
                    let mut tally = Tally::default();
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        match stealer.steal_batch_and_pop(&own) {
                            Steal::Success(item) => tally.add(item),
                            Steal::Empty if finished => break,
                            _ => thread::yield_now(),
                        }
                        while let Some(item) = own.pop() {
                            tally.add(item);
                        }
                    }
                    tally
                })
            })
            .collect();

        let mut owner = Tally::default();
        let mut refused = 0u64;
        for item in 1..=items {
            let mut item = item;
            // A full queue hands the item back: run something, then retry.
            while let Err(back) = worker.push(item) {
                refused += 1;
                item = back;
                if let Some(popped) = worker.pop() {
                    owner.add(popped);
                }
            }
            if item % 4 == 0 {
                if let Some(popped) = worker.pop() {
                    owner.add(popped);
                }
            }
        }
        while let Some(item) = worker.pop() {
            owner.add(item);
        }
        done.store(true, Ordering::Release);
        let tallies: Vec<Tally> = thieves.into_iter().map(|t| t.join().unwrap()).collect();
        let elapsed = start.elapsed();

        println!(
            "{} queue, {} blocks x {} entries, {items} items in {elapsed:.2?} ({refused} pushes refused while full):",
            stringify!($variant),
            config.num_blocks(),
            config.block_size()
        );
        println!("  owner    {:>9} items", owner.items);
        let mut total = owner.items;
        let mut sum = owner.sum;
        for (i, tally) in tallies.iter().enumerate() {
            println!("  thief {i}  {:>9} items", tally.items);
            total += tally.items;
            sum += tally.sum;
        }
        let expected = items * (items + 1) / 2;
        let verdict = if total == items && sum == expected { "every item exactly once" } else { "MISMATCH" };
        println!("  total    {total:>9} items, checksum {sum} (expected {expected}): {verdict}");
        total == items && sum == expected
    }};
}

fn main() {
    let items = match std::env::args().nth(1) {
        None => 2_000_000,
        Some(arg) => match arg.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("error: the item count must be a positive integer, got {arg:?}");
                std::process::exit(2);
            }
        },
    };
    let lifo_ok = exchange!(lifo, items);
    let fifo_ok = exchange!(fifo, items);
    if !(lifo_ok && fifo_ok) {
        std::process::exit(1);
    }
}
