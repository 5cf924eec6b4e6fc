//! Owner fast path of each queue, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/fastpath <queue> [cycles]`
//! runs `cycles` push-until-full / pop-until-empty cycles on one queue and
//! prints the operation count, so instructions per operation follow from
//! callgrind's total (the set-up is the same for every queue).

use std::hint::black_box;

use bwos_queue::{Config, fifo, lifo};

const CAPACITY: usize = 8192;

fn cycle(push: &mut dyn FnMut(u64) -> bool, pop: &mut dyn FnMut() -> Option<u64>) -> u64 {
    let mut ops = 0;
    while push(black_box(ops)) {
        ops += 1;
    }
    while let Some(v) = pop() {
        black_box(v);
        ops += 1;
    }
    ops
}

macro_rules! run {
    ($cycles:expr, $push:expr, $pop:expr) => {{
        let (mut push, mut pop) = ($push, $pop);
        (0..$cycles)
            .map(|_| cycle(&mut push, &mut pop))
            .sum::<u64>()
    }};
}

fn main() {
    let mut args = std::env::args().skip(1);
    let queue = args.next().unwrap_or_default();
    let cycles: u64 = match args.next().map(|c| c.parse()) {
        None => 100,
        Some(Ok(c)) => c,
        Some(Err(_)) => {
            eprintln!("error: cycles must be a positive integer");
            std::process::exit(2);
        }
    };
    let config = Config::new(8, CAPACITY / 8).expect("valid geometry");
    let ops = match queue.as_str() {
        "bwos-lifo" => {
            let (w, _s) = lifo::new::<u64>(config);
            run!(cycles, |v| w.push(v).is_ok(), || w.pop())
        }
        "bwos-fifo" => {
            let (w, _s) = fifo::new::<u64>(config);
            run!(cycles, |v| w.push(v).is_ok(), || w.pop())
        }
        "seq-lifo" => {
            let v = std::cell::RefCell::new(Vec::with_capacity(CAPACITY));
            run!(
                cycles,
                |x| {
                    let mut v = v.borrow_mut();
                    v.len() < CAPACITY && {
                        v.push(x);
                        true
                    }
                },
                || v.borrow_mut().pop()
            )
        }
        "crossbeam-lifo" => {
            let w = crossbeam_deque::Worker::new_lifo();
            let held = std::cell::Cell::new(0usize);
            run!(
                cycles,
                |x| held.get() < CAPACITY && {
                    held.set(held.get() + 1);
                    w.push(x);
                    true
                },
                || {
                    let v = w.pop();
                    held.set(if v.is_some() { held.get() - 1 } else { 0 });
                    v
                }
            )
        }
        "st3-lifo" => {
            let w = st3::lifo::Worker::new(CAPACITY);
            run!(cycles, |v| w.push(v).is_ok(), || w.pop())
        }
        other => {
            eprintln!(
                "error: unknown queue {other:?}; one of bwos-lifo, bwos-fifo, seq-lifo, crossbeam-lifo, st3-lifo"
            );
            std::process::exit(2);
        }
    };
    println!("{queue}: {ops} operations");
}
