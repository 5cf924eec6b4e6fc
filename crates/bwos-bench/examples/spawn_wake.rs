//! Async tasks on one worker: spawn many small tasks, let each yield (a
//! self-wake) a few times, await them all. A steady loop of the task
//! path (spawn, schedule, poll, wake, complete, join-handle wake-up), for
//! instruction counts of the executor:
//!
//! ```text
//! cargo build --release -p bwos-bench --example spawn_wake
//! valgrind --tool=callgrind target/release/examples/spawn_wake [tasks] [yields]
//! ```
//!
//! Prints the sum of the tasks' outputs, which the run checks.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(tasks), Some(yields)) = (
        parse(args.next(), 10_000, "tasks"),
        parse(args.next(), 3, "yields"),
    ) else {
        return ExitCode::FAILURE;
    };
    let pool = match bwos::ThreadPoolBuilder::new().num_threads(1).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("spawn_wake: cannot build the pool: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The root is a task of the pool, so that the spawns, wakes and joins
    // measured are a worker's (block_on itself polls on this thread).
    let root = pool.spawn_task(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                bwos::task::spawn(async move {
                    for _ in 0..yields {
                        bwos::task::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        let mut sum = 0u64;
        for handle in handles {
            sum += handle
                .await
                .expect("a task of this example neither panics nor is aborted");
        }
        sum
    });
    let sum = pool
        .block_on(root)
        .expect("the root task of this example neither panics nor is aborted");
    let expected = tasks * tasks.saturating_sub(1) / 2;
    println!("{tasks} tasks x {yields} yields: sum {sum} (expected {expected})");
    if sum == expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `arg` as a number, `default` when absent; `None` (after a message) when
/// it is not a number.
fn parse(arg: Option<String>, default: u64, name: &str) -> Option<u64> {
    match arg {
        None => Some(default),
        Some(text) => match text.parse() {
            Ok(value) => Some(value),
            Err(_) => {
                eprintln!("spawn_wake: {name} must be a whole number, got {text:?}");
                None
            }
        },
    }
}
