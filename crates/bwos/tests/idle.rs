//! Idle workers park: a pool with nothing to do accumulates (almost) no
//! CPU time, and parked workers wake up for new work.
//!
//! CPU time is read per thread from `/proc/self/task/<tid>/stat` (Linux),
//! in clock ticks; the bound is generous and nothing depends on wall time
//! except how long the idle window lasts.
#![cfg(all(target_os = "linux", not(bwos_loom)))]

use std::time::Duration;

use bwos::ThreadPoolBuilder;
use bwos_testkit::{proc, watchdog};
use common::fib;

mod common;

/// Total user + system CPU time, in clock ticks, of the threads whose
/// `/proc/self/task/<tid>` directories are `tasks` (from
/// [`proc::tasks_named`]).
fn cpu_ticks(tasks: &[std::path::PathBuf]) -> u64 {
    tasks
        .iter()
        .map(|task| proc::cpu_ticks(&task.join("stat")).unwrap())
        .sum()
}

#[test]
fn an_idle_pool_uses_no_cpu_and_wakes_for_work() {
    watchdog("an_idle_pool_uses_no_cpu_and_wakes_for_work", || {
        let pool = ThreadPoolBuilder::new()
            .num_threads(4)
            .thread_name(|i| format!("idle-probe-{i}"))
            .build()
            .unwrap();
        for round in 0..3 {
            // Work that involves every worker, then silence.
            assert_eq!(pool.install(|| fib(27)), 196_418);
            std::thread::sleep(Duration::from_millis(100));
            let workers = proc::tasks_named("idle-probe-", 4).unwrap();
            let before = cpu_ticks(&workers);
            std::thread::sleep(Duration::from_secs(1));
            let after = cpu_ticks(&workers);
            // A clock tick is usually 10 ms: 4 spinning threads would add about
            // 400 ticks over 1 s (200 on 2 cores); parked ones add none. Allow 5.
            let used = after - before;
            assert!(
                used <= 5,
                "round {round}: idle workers used {used} ticks in 1 s"
            );
        }
    });
}

#[test]
fn an_idle_pool_uses_no_cpu_under_every_idle_policy() {
    watchdog("an_idle_pool_uses_no_cpu_under_every_idle_policy", || {
        for policy in [
            bwos::IdlePolicy::Spin,
            bwos::IdlePolicy::Yield,
            bwos::IdlePolicy::Park,
            bwos::IdlePolicy::Balanced,
        ] {
            let prefix = format!("idle-{policy:?}-");
            let name = prefix.clone();
            let pool = ThreadPoolBuilder::new()
                .num_threads(4)
                .idle_policy(policy)
                .thread_name(move |i| format!("{name}{i}"))
                .build()
                .unwrap();
            assert_eq!(pool.install(|| fib(25)), 75_025);
            // Let the workers pass the sleep threshold and fall asleep.
            std::thread::sleep(Duration::from_millis(200));
            let workers = proc::tasks_named(&prefix, 4).unwrap();
            let before = cpu_ticks(&workers);
            std::thread::sleep(Duration::from_secs(1));
            let after = cpu_ticks(&workers);
            let used = after - before;
            assert!(
                used <= 5,
                "{policy:?}: idle workers used {used} ticks in 1 s"
            );
            // And they wake up for new work.
            assert_eq!(pool.install(|| fib(20)), 6765);
        }
    });
}
