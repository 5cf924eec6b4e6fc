//! **timers during a blocking task injected from outside**: a task ticks
//! a [`PERIOD`] interval and notes when it sees each tick; once it has
//! ticked [`WARM_TICKS`] times, the benchmark's main thread (outside the
//! runtime) injects a task (`ThreadPool::spawn_task`, tokio's
//! `Runtime::spawn`) that blocks its worker for [`BLOCK`] with
//! `std::thread::sleep`. Measured: the ticks the interval task saw during
//! the block (between the blocking task's own clock readings before and
//! after its sleep; tokio: about [`BLOCK`] / [`PERIOD`] = 50), and the
//! longest gap between ticks seen from the first tick to shortly after
//! the block.
//!
//! Where the injected task lands decides the outcome on a runtime whose
//! timers stall with the worker that would fire them: the range over
//! repetitions shows both cases.
//!
//! Both intervals use `MissedTickBehavior::Skip`: a tick seen is a slot
//! of the schedule in which the task actually ran. With the default
//! (`Burst`) a timer stalled for most of the window would deliver its
//! missed ticks at once when it resumed, inside the window if the stall
//! ended before it, and hide the stall. Both runtimes count a tick as
//! missed when it comes more than 5 ms late, so the settings compare
//! like with like.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::runtimes::LatencyRuntime;
use super::{Metrics, SETTLE};

/// The interval's period.
pub const PERIOD: Duration = Duration::from_millis(10);
/// How long the injected task blocks its worker.
pub const BLOCK: Duration = Duration::from_millis(500);
/// Ticks seen before the blocking task is injected.
pub const WARM_TICKS: usize = 3;

/// One measurement on a fresh 2-worker `R`; an error if the interval
/// never ticks.
pub fn run<R: LatencyRuntime>() -> std::io::Result<Metrics> {
    let rt = R::start(2);
    std::thread::sleep(SETTLE);
    let seen = Arc::new(Mutex::new(Vec::new()));
    rt.spawn_detached(R::count_ticks(PERIOD, Arc::clone(&seen)));
    let waited = Instant::now();
    while seen.lock().expect("tick list").len() < WARM_TICKS {
        if waited.elapsed() > Duration::from_secs(10) {
            return Err(std::io::Error::other(format!(
                "timers: {}'s interval did not tick {WARM_TICKS} times in 10 s",
                R::NAME
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let (report, window) = mpsc::channel();
    rt.spawn_detached(async move {
        let start = Instant::now();
        std::thread::sleep(BLOCK);
        let _ = report.send((start, Instant::now()));
    });
    let (start, end) = window.recv_timeout(BLOCK * 20).map_err(|_| {
        std::io::Error::other(format!(
            "timers: {}'s injected task did not run to its end in {:?}",
            R::NAME,
            BLOCK * 20
        ))
    })?;
    // The ticks right after the block belong to the longest gap.
    std::thread::sleep(PERIOD * 3);
    drop(rt);
    let seen = seen.lock().expect("tick list");
    let during = seen.iter().filter(|&&t| start <= t && t <= end).count();
    let longest_gap = seen
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .max()
        .unwrap_or_default();
    Ok(vec![
        ("ticks_during_block", during as f64),
        ("longest_tick_gap_ms", longest_gap.as_secs_f64() * 1e3),
    ])
}
