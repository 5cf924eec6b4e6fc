//! `#[bwos::test]` (feature `macros`): tests written with the attribute,
//! each on a pool of its own. `#[bwos::main]` is `macros_main.rs`'s (it
//! builds the global pool, which wants a process of its own); the compile
//! errors of bad arguments are `crates/bwos-macros/tests/ui`'s.
//!
//! Each body starts a watchdog guard: the body runs inside the
//! attribute's `block_on`, where the closure form does not fit.

#![cfg(all(feature = "macros", not(bwos_loom)))]

use std::time::Duration;

use bwos_testkit::watchdog_guard;

// Mutation caught: `run_test` ignoring `worker_threads` (a pool of the
// default size, one worker per core: 5 is no common core count).
#[bwos::test(worker_threads = 5)]
async fn a_test_runs_on_a_pool_of_the_threads_asked_for() {
    let _watchdog = watchdog_guard("macros_worker_threads");
    let threads = bwos::task::spawn(async { bwos::current_num_threads() });
    assert_eq!(threads.await.unwrap(), 5);
}

// Mutation caught: `run_test` running the body on the global pool
// (`bwos::block_on`): the spawned task would run on the same threads as
// the global pool's.
#[bwos::test(worker_threads = 1)]
async fn a_test_runs_on_a_pool_of_its_own() {
    let _watchdog = watchdog_guard("macros_own_pool");
    let here = bwos::task::spawn(async { std::thread::current().id() })
        .await
        .unwrap();
    let global = std::thread::spawn(|| {
        bwos::block_on(bwos::task::spawn(async { std::thread::current().id() })).unwrap()
    })
    .join()
    .unwrap();
    assert_ne!(here, global);
}

#[bwos::test]
async fn a_test_may_return_a_result() -> Result<(), std::num::ParseIntError> {
    let _watchdog = watchdog_guard("macros_result");
    let value: u32 = bwos::task::spawn(async { "7".parse() }).await.unwrap()?;
    assert_eq!(value, 7);
    Ok(())
}

#[bwos::test]
#[should_panic(expected = "the body's panic")]
async fn other_attributes_are_kept() {
    let _watchdog = watchdog_guard("macros_should_panic");
    bwos::task::yield_now().await;
    panic!("the body's panic");
}

// Mutation caught: `start_paused = true` not pausing (the expansion
// without its `bwos::time::pause()` call): the sleep would take an hour,
// and the watchdog ends the run.
#[cfg(feature = "test-util")]
#[bwos::test(start_paused = true)]
async fn start_paused_makes_an_hour_pass_at_once() {
    let _watchdog = watchdog_guard("macros_start_paused");
    let real_start = std::time::Instant::now();
    let start = bwos::time::Instant::now();
    bwos::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(3600));
    assert!(real_start.elapsed() < Duration::from_secs(60));
}

// Mutation caught: the expansion pausing whatever `start_paused` says.
#[cfg(feature = "test-util")]
#[bwos::test(start_paused = false, worker_threads = 2)]
async fn start_paused_false_leaves_the_clock_running() {
    let _watchdog = watchdog_guard("macros_start_running");
    let resume = std::panic::catch_unwind(bwos::time::resume);
    assert!(resume.is_err(), "the clock was paused");
    let start = bwos::time::Instant::now();
    bwos::time::sleep(Duration::from_millis(5)).await;
    assert!(start.elapsed() >= Duration::from_millis(5));
}
