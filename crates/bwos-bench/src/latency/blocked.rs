//! **blocked parent**: a task spawns [`SPAWNED`] short tasks, then blocks
//! its worker for [`BLOCK`] with `std::thread::sleep` (user code that
//! should have used `spawn_blocking`). Measured: how many of the short
//! tasks ran while it blocked, read by the blocking task at the end of
//! its block. Only the other worker can run them; whatever it cannot
//! take (tokio: the one task in the blocked worker's LIFO slot) waits
//! for the block to end.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::runtimes::LatencyRuntime;
use super::{Metrics, SETTLE};

/// Short tasks the parent spawns.
pub const SPAWNED: u32 = 20;
/// How long the parent blocks its worker.
pub const BLOCK: Duration = Duration::from_millis(100);

/// One measurement on a fresh 2-worker `R`.
pub fn run<R: LatencyRuntime>() -> Metrics {
    let rt = R::start(2);
    // Both workers idle (asleep) before the parent arrives: the short
    // tasks find the other worker where a quiet service would have it.
    std::thread::sleep(SETTLE);
    let ran = rt.block_on(async {
        let ran = Arc::new(AtomicU32::new(0));
        for _ in 0..SPAWNED {
            let ran = Arc::clone(&ran);
            // Detached: the parent only counts.
            drop(R::spawn_here(async move {
                ran.fetch_add(1, Ordering::Relaxed);
            }));
        }
        std::thread::sleep(BLOCK);
        // A counter read 100 ms after the increments it counts; no other
        // data hangs on it, so relaxed is enough.
        ran.load(Ordering::Relaxed)
    });
    drop(rt);
    vec![("ran_during_block", f64::from(ran))]
}
