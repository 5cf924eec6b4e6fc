//! The paused clock (feature `test-util`): timeouts of an hour that take
//! no time, intervals that tick as tokio's under `advance`, sleepers woken
//! in deadline order, auto-advance held by blocking closures and by a
//! polling `block_on`, resume, one clock per pool, and the panics of
//! misuse.
//!
//! "Did not wait an hour" is checked against the system clock with a
//! bound of a minute: a hang detector, not a timing assertion (the
//! watchdog bounds every test anyway).

#![cfg(all(feature = "test-util", not(bwos_loom)))]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use bwos::time::{self, Instant, MissedTickBehavior};
use bwos_testkit::{panic_message, watchdog};
use common::pool;

mod common;

const HOUR: Duration = Duration::from_secs(3600);
/// Far below an hour, far above any run of these tests: a hang detector.
const NOT_AN_HOUR: Duration = Duration::from_secs(60);

/// Polls `future` once (registering its waker); whether it was ready.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> bool {
    futures_lite::future::poll_once(future).await.is_some()
}

// Mutation caught: no auto-advance (`AutoAdvance::try_advance` returning
// `false`): the hour passes in real time, and the watchdog fails the test.
#[test]
fn a_timeout_of_an_hour_resolves_at_once() {
    watchdog("paused_hour_timeout", || {
        let real_start = std::time::Instant::now();
        let pool = pool(2);
        pool.block_on(async {
            time::pause();
            let start = Instant::now();
            let stuck = time::timeout(HOUR, std::future::pending::<()>()).await;
            assert!(stuck.is_err(), "the timeout fired");
            assert_eq!(
                start.elapsed(),
                HOUR,
                "the clock jumped exactly to the deadline"
            );
            // In a task too, and a sleep that ends before its timeout.
            let task = bwos::task::spawn(async {
                let start = Instant::now();
                let quick = time::timeout(HOUR, time::sleep(Duration::from_secs(59))).await;
                (quick, start.elapsed())
            });
            let (quick, elapsed) = task.await.unwrap();
            assert_eq!(quick, Ok(()));
            assert_eq!(elapsed, Duration::from_secs(59));
        });
        assert!(
            real_start.elapsed() < NOT_AN_HOUR,
            "{:?}",
            real_start.elapsed()
        );
    });
}

/// One interval script, written once for tokio's types and once for
/// bwos's: every tick's instant and the clock when it came, both from the
/// start. `advance` and `sleep` move the clock by hand and by auto-advance.
macro_rules! interval_script {
    ($time:path, $behavior:expr) => {{
        use $time as t;
        let start = t::Instant::now();
        let mut interval = t::interval(Duration::from_millis(10));
        interval.set_missed_tick_behavior($behavior);
        let mut ticks = Vec::new();
        let tick = async |interval: &mut t::Interval, ticks: &mut Vec<(Duration, Duration)>| {
            let at = interval.tick().await;
            ticks.push((at - start, t::Instant::now() - start));
        };
        tick(&mut interval, &mut ticks).await; // at once
        t::advance(Duration::from_millis(25)).await; // two periods late
        for _ in 0..4 {
            tick(&mut interval, &mut ticks).await;
        }
        t::advance(Duration::from_millis(3)).await; // within the 5 ms grace
        tick(&mut interval, &mut ticks).await;
        t::sleep(Duration::from_millis(47)).await;
        for _ in 0..3 {
            tick(&mut interval, &mut ticks).await;
        }
        t::advance(Duration::from_millis(104)).await;
        for _ in 0..4 {
            tick(&mut interval, &mut ticks).await;
        }
        interval.reset();
        tick(&mut interval, &mut ticks).await;
        t::advance(Duration::from_millis(7)).await;
        tick(&mut interval, &mut ticks).await;
        ticks
    }};
}

fn tokio_ticks(behavior: tokio::time::MissedTickBehavior) -> Vec<(Duration, Duration)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { interval_script!(tokio::time, behavior) })
}

fn bwos_ticks(
    pool: &bwos::ThreadPool,
    behavior: MissedTickBehavior,
    in_task: bool,
) -> Vec<(Duration, Duration)> {
    pool.block_on(async {
        time::pause();
        let ticks = if in_task {
            bwos::task::spawn(async move { interval_script!(bwos::time, behavior) })
                .await
                .unwrap()
        } else {
            interval_script!(bwos::time, behavior)
        };
        time::resume();
        ticks
    })
}

// Mutation caught: `Interval::poll_tick` reading the system clock instead
// of the pool's (`Instant::now()` from std): every late tick is taken for
// on time. Also a `MissedTickBehavior::next` that differs from tokio's,
// or an `advance` that does not move `Instant::now()`.
#[test]
fn an_interval_advanced_by_hand_ticks_as_tokios() {
    watchdog("paused_interval_like_tokio", || {
        let pool = pool(2);
        for (ours, theirs) in [
            (
                MissedTickBehavior::Burst,
                tokio::time::MissedTickBehavior::Burst,
            ),
            (
                MissedTickBehavior::Delay,
                tokio::time::MissedTickBehavior::Delay,
            ),
            (
                MissedTickBehavior::Skip,
                tokio::time::MissedTickBehavior::Skip,
            ),
        ] {
            let expected = tokio_ticks(theirs);
            for in_task in [false, true] {
                assert_eq!(
                    bwos_ticks(&pool, ours, in_task),
                    expected,
                    "{ours:?} (in a task: {in_task}): (tick, now) from the start, against tokio's"
                );
            }
        }
    });
}

/// Spawns a sleeper per deadline (milliseconds after `start`, in this
/// order) on the current pool, each polled once so that its timer is
/// registered before this returns; each records its deadline and the
/// clock when it woke, in the order they woke.
async fn sleepers(
    start: Instant,
    deadlines: &[u64],
) -> (
    Vec<bwos::task::JoinHandle<()>>,
    Arc<Mutex<Vec<(u64, Duration)>>>,
) {
    let woken = Arc::new(Mutex::new(Vec::new()));
    let registered = Arc::new(AtomicUsize::new(0));
    let handles = deadlines
        .iter()
        .map(|&millis| {
            let (woken, registered) = (Arc::clone(&woken), Arc::clone(&registered));
            bwos::task::spawn(async move {
                let mut sleep = pin!(time::sleep_until(start + Duration::from_millis(millis)));
                assert!(!poll_once(&mut sleep).await, "no time has passed");
                registered.fetch_add(1, Ordering::SeqCst);
                sleep.await;
                woken.lock().unwrap().push((millis, start.elapsed()));
            })
        })
        .collect();
    // A polling `block_on` holds the clock: yielding here lets nothing
    // jump.
    while registered.load(Ordering::SeqCst) < deadlines.len() {
        bwos::task::yield_now().await;
    }
    (handles, woken)
}

const DEADLINES: [u64; 6] = [9, 3, 15, 1, 6, 12];

// Mutation caught: the timers' wakers woken in reverse (`fire_until`
// waking `wakers.into_iter().rev()`): with one worker the tasks run in
// the order they are woken. And an `advance` that fires but does not move
// the clock: the sleepers would then wake one auto-advance at a time, each
// at its own deadline, not all at 15 ms.
#[test]
fn advance_wakes_sleepers_in_deadline_order() {
    watchdog("paused_advance_order", || {
        // One worker: the tasks the timers wake run in the order they fire.
        let pool = pool(1);
        // The body is a task on that worker too: when it sees every
        // sleeper registered, none of them is still inside its poll. From
        // `block_on`'s thread the last one could be, and a timer that
        // fires under a running poll requeues its task on the worker's
        // own queue, ahead of the others (a CI run under AddressSanitizer
        // woke 12 ms first).
        let woken = pool.block_on(async {
            bwos::task::spawn(async {
                time::pause();
                let start = Instant::now();
                let (handles, woken) = sleepers(start, &DEADLINES).await;
                time::advance(Duration::from_millis(15)).await;
                for handle in handles {
                    handle.await.unwrap();
                }
                Arc::try_unwrap(woken).unwrap().into_inner().unwrap()
            })
            .await
            .unwrap()
        });
        let mut expected: Vec<_> = DEADLINES
            .iter()
            .map(|&millis| (millis, Duration::from_millis(15)))
            .collect();
        expected.sort();
        assert_eq!(woken, expected);
    });
}

// Mutation caught: a jump that fires every pending timer at once
// (`jump_to_next_deadline` processing up to the last deadline) or that
// moves the clock to a deadline other than the next: each sleeper must
// wake at its own deadline exactly, in order.
#[test]
fn auto_advance_wakes_each_sleeper_at_its_deadline() {
    watchdog("paused_auto_advance_order", || {
        for workers in [1, 3] {
            let pool = pool(workers);
            let woken = pool.block_on(async {
                time::pause();
                let start = Instant::now();
                let (handles, woken) = sleepers(start, &DEADLINES).await;
                for handle in handles {
                    handle.await.unwrap();
                }
                Arc::try_unwrap(woken).unwrap().into_inner().unwrap()
            });
            let mut expected: Vec<_> = DEADLINES
                .iter()
                .map(|&millis| (millis, Duration::from_millis(millis)))
                .collect();
            expected.sort();
            assert_eq!(woken, expected, "{workers} workers");
        }
    });
}

// Mutation caught: blocking entries not counted as outside work
// (`Shared::entry_queued` doing nothing): the pool falls idle while the
// closure runs and the clock jumps an hour under it.
#[test]
fn auto_advance_waits_for_a_running_blocking_closure() {
    watchdog("paused_blocking_holds_clock", || {
        let real_start = std::time::Instant::now();
        let pool = pool(2);
        pool.block_on(async {
            time::pause();
            let start = Instant::now();
            let sleeper = bwos::task::spawn(async move {
                time::sleep(HOUR).await;
                start.elapsed()
            });
            let closure = bwos::task::spawn_blocking(move || {
                let before = Instant::now();
                // Long enough for the workers and this `block_on` to fall
                // idle many times over.
                std::thread::sleep(Duration::from_millis(200));
                Instant::now() - before
            });
            assert_eq!(
                closure.await.unwrap(),
                Duration::ZERO,
                "the clock moved under the closure"
            );
            assert_eq!(sleeper.await.unwrap(), HOUR);
        });
        assert!(real_start.elapsed() < NOT_AN_HOUR);
    });
}

// Mutation caught: a `block_on` off the workers not counted while it polls
// (`Signal::new` without a presence): the clock jumps in the middle of a
// poll that has not returned yet.
#[test]
fn a_polling_block_on_holds_the_clock() {
    watchdog("paused_block_on_holds_clock", || {
        let pool = pool(2);
        pool.block_on(async {
            time::pause();
            let start = Instant::now();
            let sleeper = bwos::task::spawn(async { time::sleep(HOUR).await });
            // The task registers its timer while this poll goes on.
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(
                start.elapsed(),
                Duration::ZERO,
                "the clock jumped during a poll"
            );
            sleeper.await.unwrap();
            assert_eq!(start.elapsed(), HOUR);
        });
    });
}

// Mutation caught: `resume` without waking the watcher
// (`Registry::clock_resumed` not called): the watcher, asleep without a
// deadline since the clock was paused, never fires the timer (the
// watchdog fails the test).
#[test]
fn a_resumed_clock_runs_and_fires_in_real_time() {
    watchdog("paused_then_resumed", || {
        let pool = pool(2);
        pool.block_on(async {
            time::pause();
            let start = Instant::now();
            // Holds the clock while the sleeper registers its timer.
            let (release, gate) = mpsc::channel::<()>();
            let holder = bwos::task::spawn_blocking(move || gate.recv().ok());
            let sleeper = bwos::task::spawn(async { time::sleep(Duration::from_millis(20)).await });
            std::thread::sleep(Duration::from_millis(50));
            time::resume();
            sleeper.await.unwrap();
            assert!(start.elapsed() >= Duration::from_millis(20));
            assert!(start.elapsed() < NOT_AN_HOUR);
            release.send(()).unwrap();
            holder.await.unwrap();
            // Paused again, advanced, resumed: the clock runs on from
            // there, ahead of the system clock.
            time::pause();
            time::advance(HOUR).await;
            let advanced = Instant::now();
            time::resume();
            assert!(Instant::now() >= advanced);
            assert!(Instant::now().into_std() > std::time::Instant::now() + HOUR / 2);
        });
    });
}

// Mutation caught: `Instant::now()` reading the global pool's clock (or the
// system's) instead of the pool the calling thread works for
// (`current::with_clock_of_current_pool` skipping the entered pool).
#[test]
fn each_pool_has_its_own_clock() {
    watchdog("paused_clock_per_pool", || {
        let (paused, running) = (pool(1), pool(1));
        paused.block_on(async {
            time::pause();
            let frozen = Instant::now();
            let running_reading = running.block_on(async {
                let before = Instant::now();
                time::sleep(Duration::from_millis(5)).await;
                before.elapsed()
            });
            assert!(running_reading >= Duration::from_millis(5));
            assert_eq!(Instant::now(), frozen, "the paused pool's clock moved");
        });
        // Outside the pools (the global pool not started by this test's
        // threads' clock reads): the system clock.
        let system = std::time::Instant::now();
        assert!(Instant::now() >= system);
    });
}

// Mutation caught: a second `pause` accepted silently (`PoolClock::pause`
// returning `Ok` on a paused clock).
#[test]
fn misuse_panics_with_a_message_that_says_what_is_wrong() {
    watchdog("paused_clock_misuse", || {
        let outside = catch_unwind(time::pause).expect_err("no pool");
        assert!(
            panic_message(&outside).contains("outside a bwos pool"),
            "{}",
            panic_message(&outside)
        );
        let pool = pool(1);
        pool.block_on(async {
            let resumed = catch_unwind(time::resume).expect_err("not paused");
            assert!(panic_message(&resumed).contains("not paused"));
            let advance = catch_unwind(AssertUnwindSafe(|| {
                bwos::block_on(time::advance(Duration::from_secs(1)))
            }))
            .expect_err("not paused");
            assert!(panic_message(&advance).contains("not paused"));
            time::pause();
            let twice = catch_unwind(time::pause).expect_err("paused twice");
            assert!(panic_message(&twice).contains("already paused"));
            time::resume();
        });
    });
}
