//! `BWOS_NUM_THREADS`: a valid value sets the default thread count, a bad
//! one is a typed error with a message, never a silent default. One test
//! in its own binary, because it changes the process environment.
#![cfg(not(bwos_loom))]

use bwos::{ThreadPoolBuildError, ThreadPoolBuilder};

fn set_env(value: &str) {
    // SAFETY: this binary's only test runs on one thread and nothing else
    // reads the environment concurrently.
    unsafe { std::env::set_var(bwos::NUM_THREADS_ENV, value) };
}

#[test]
fn num_threads_from_the_environment() {
    // RAYON_NUM_THREADS counts when BWOS_NUM_THREADS is not set, with
    // rayon's rules: a value that is not a positive number is ignored.
    let automatic = std::thread::available_parallelism().map_or(1, usize::from);
    // SAFETY: as in `set_env`.
    unsafe { std::env::set_var(bwos::RAYON_NUM_THREADS_ENV, "3") };
    assert_eq!(ThreadPoolBuilder::new().resolved_num_threads().unwrap(), 3);
    for ignored in ["0", "many", ""] {
        // SAFETY: as in `set_env`.
        unsafe { std::env::set_var(bwos::RAYON_NUM_THREADS_ENV, ignored) };
        assert_eq!(
            ThreadPoolBuilder::new().resolved_num_threads().unwrap(),
            automatic,
            "RAYON_NUM_THREADS={ignored:?}"
        );
    }
    // BWOS_NUM_THREADS wins.
    // SAFETY: as in `set_env`.
    unsafe { std::env::set_var(bwos::RAYON_NUM_THREADS_ENV, "5") };
    set_env("4");
    assert_eq!(ThreadPoolBuilder::new().resolved_num_threads().unwrap(), 4);
    // SAFETY: as in `set_env`.
    unsafe { std::env::remove_var(bwos::RAYON_NUM_THREADS_ENV) };

    set_env("3");
    assert_eq!(
        ThreadPoolBuilder::new()
            .build()
            .unwrap()
            .current_num_threads(),
        3
    );
    // An explicit number wins over the environment.
    assert_eq!(
        ThreadPoolBuilder::new()
            .num_threads(2)
            .resolved_num_threads()
            .unwrap(),
        2
    );

    set_env("0");
    assert_eq!(
        ThreadPoolBuilder::new().resolved_num_threads().unwrap(),
        automatic
    );

    for bad in ["three", "-1", "2.5", ""] {
        set_env(bad);
        let error = ThreadPoolBuilder::new().build().unwrap_err();
        assert!(
            matches!(&error, ThreadPoolBuildError::InvalidEnvironment { value } if value == bad)
        );
        let message = error.to_string();
        assert!(
            message.contains("BWOS_NUM_THREADS") && message.contains("whole number"),
            "{message}"
        );
    }

    set_env("70000");
    let error = ThreadPoolBuilder::new().build().unwrap_err();
    assert!(matches!(
        error,
        ThreadPoolBuildError::TooManyThreads { requested: 70000 }
    ));

    // The global pool cannot report an error, so a bad value makes its
    // creation panic with the message; the failure is kept, not retried.
    set_env("many");
    let global_error = || {
        let payload = std::panic::catch_unwind(bwos::current_num_threads).unwrap_err();
        payload
            .downcast_ref::<String>()
            .expect("a formatted message")
            .clone()
    };
    let first = global_error();
    assert!(first.contains("BWOS_NUM_THREADS=\"many\""), "{first}");
    assert!(first.contains("not retried"), "{first}");
    // A valid value now does not help: the first failure is reported again.
    set_env("2");
    assert_eq!(global_error(), first);
    let payload = std::panic::catch_unwind(|| bwos::join(|| 1, || 2)).unwrap_err();
    assert_eq!(bwos_testkit::panic_message(&payload), first);
    let error = ThreadPoolBuilder::new().build_global().unwrap_err();
    assert!(
        matches!(&error, ThreadPoolBuildError::GlobalPoolBuildFailed { reason } if reason.contains("\"many\"")),
        "{error:?}"
    );
    assert!(error.to_string().contains("not retried"), "{error}");
}
