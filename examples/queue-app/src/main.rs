//! The BWoS queue alone: an owner thread pushes and pops, a thief thread
//! steals, and every item is taken exactly once. It checks its own result
//! and exits non-zero on a wrong one.

use bwos_queue::{Config, Steal, lifo};

const ITEMS: u64 = 100_000;

fn main() {
    let (worker, stealer) = lifo::new::<u64>(Config::default());
    let thief = std::thread::spawn(move || {
        let (mut stolen, mut sum) = (0u64, 0u64);
        loop {
            match stealer.steal() {
                Steal::Success(item) if item == u64::MAX => return (stolen, sum),
                Steal::Success(item) => {
                    stolen += 1;
                    sum += item;
                }
                Steal::Empty | Steal::Retry => std::thread::yield_now(),
            }
        }
    });
    let (mut popped, mut sum) = (0u64, 0u64);
    for item in 0..ITEMS {
        while worker.push(item).is_err() {
            // Full: the owner takes its own newest item to make room.
            let own = worker.pop().expect("a full queue has items");
            popped += 1;
            sum += own;
        }
        if item % 64 == 0 {
            worker.share(); // open the private items to the thief
        }
    }
    while let Some(item) = worker.pop() {
        popped += 1;
        sum += item;
    }
    // The end marker: pushed and shared after every item is gone.
    while worker.push(u64::MAX).is_err() {}
    worker.share();
    let (stolen, stolen_sum) = thief.join().expect("the thief does not panic");
    assert_eq!(popped + stolen, ITEMS, "every item taken once");
    assert_eq!(sum + stolen_sum, ITEMS * (ITEMS - 1) / 2);
    println!("{ITEMS} items: the owner popped {popped}, the thief stole {stolen}");
}
