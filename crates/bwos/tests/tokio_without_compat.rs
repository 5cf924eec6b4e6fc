//! Without the `tokio-compat` feature bwos threads are in no tokio
//! runtime context: a tokio call that needs one panics with tokio's own
//! message, unchanged, inside the task or `block_on` that made it. Built
//! only without the feature (`scripts/test-all.sh` runs it so).

#![cfg(all(not(feature = "tokio-compat"), not(bwos_loom)))]

use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use bwos_testkit::{panic_message, watchdog};

/// What tokio's panic says outside its runtimes.
const TOKIOS_MESSAGE: &str = "must be called from the context of a Tokio 1.x runtime";

/// Mutation caught: the task cell replacing a task's panic payload with
/// one of its own (the handle's `into_panic` would then not carry tokio's
/// message).
#[test]
fn tokio_sleep_panics_with_tokios_message_in_a_task_and_in_block_on() {
    watchdog("tokio_sleep_panics_with_tokios_message", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let error = pool
            .block_on(pool.spawn_task(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }))
            .unwrap_err();
        assert!(error.is_panic());
        let payload = error.into_panic();
        let message = panic_message(&payload);
        assert!(message.contains(TOKIOS_MESSAGE), "{message}");

        let payload = panic::catch_unwind(AssertUnwindSafe(|| {
            bwos::block_on(tokio::time::sleep(Duration::from_millis(1)));
        }))
        .unwrap_err();
        let message = panic_message(&payload);
        assert!(message.contains(TOKIOS_MESSAGE), "{message}");
    });
}
