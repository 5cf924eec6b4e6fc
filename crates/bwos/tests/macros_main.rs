//! `#[bwos::main]` (feature `macros`): it builds the global pool, so it
//! has this test binary to itself.

#![cfg(all(feature = "macros", not(bwos_loom)))]

mod program {
    // A `main` as a program would have it, called as a function here.
    #[bwos::main(worker_threads = 5)]
    pub async fn main() -> Result<usize, std::num::ParseIntError> {
        let parsed: usize = bwos::task::spawn(async { "37".parse() }).await.unwrap()?;
        let threads = bwos::task::spawn(async { bwos::current_num_threads() })
            .await
            .unwrap();
        Ok(parsed + threads)
    }
}

// Mutation caught: `run_main` ignoring `worker_threads` (a global pool of
// the default size, one worker per core: 5 is no common core count), or
// building a pool of its own instead of the global one (a `block_on` on
// another thread, below, would see the default size).
#[test]
fn main_runs_on_the_global_pool_built_with_its_threads() {
    bwos_testkit::watchdog("macros_main", || {
        assert_eq!(program::main(), Ok(42));
        // The global pool is main's, for every thread.
        let outside = std::thread::spawn(|| bwos::block_on(async { bwos::current_num_threads() }))
            .join()
            .unwrap();
        assert_eq!(outside, 5);
        assert_eq!(
            program::main(),
            Ok(42),
            "a second call runs on the same pool"
        );
    });
}
