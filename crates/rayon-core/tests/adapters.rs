//! What the drop-in adds over plain re-exports: rayon-core's error texts,
//! the generic builder with spawn handlers, `build_scoped`, the deprecated
//! `Configuration`, and a pool drop that returns at once.

use std::error::Error;
use std::sync::mpsc;

use bwos_testkit::watchdog;
use rayon_core::ThreadPoolBuilder;

#[test]
fn errors_read_as_rayon_core_s() {
    watchdog("errors_read_as_rayon_core_s", || {
        std::thread::spawn(|| {
            let _pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .unwrap();
            let error = ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .unwrap_err();
            assert_eq!(
                error.to_string(),
                "The current thread is already part of another thread pool."
            );
            assert!(error.source().is_none());
        })
        .join()
        .unwrap();

        let error = ThreadPoolBuilder::new()
            .num_threads(2)
            .spawn_handler(|_| Err(std::io::Error::other("refused")))
            .build()
            .unwrap_err();
        assert_eq!(error.to_string(), "refused");
        assert_eq!(error.source().unwrap().to_string(), "refused");
    });
}

#[test]
fn spawn_handlers_and_scoped_pools_run_the_workers() {
    watchdog("spawn_handlers_and_scoped_pools_run_the_workers", || {
        let mut handles = Vec::new();
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .spawn_handler(|thread| {
                handles.push(std::thread::spawn(move || thread.run()));
                Ok(())
            })
            .build()
            .unwrap();
        assert_eq!(pool.broadcast(|context| context.index()), [0, 1]);
        drop(pool);
        for handle in handles {
            handle.join().unwrap();
        }

        let local = [1u32, 2, 3];
        let sum = ThreadPoolBuilder::new()
            .num_threads(2)
            .build_scoped(
                |thread| thread.run(),
                |pool| pool.install(|| local.iter().sum::<u32>()),
            )
            .unwrap();
        assert_eq!(sum, 6);
    });
}

#[test]
#[allow(deprecated)]
fn the_deprecated_configuration_still_builds() {
    watchdog("the_deprecated_configuration_still_builds", || {
        let pool =
            rayon_core::ThreadPool::new(rayon_core::Configuration::new().num_threads(2)).unwrap();
        assert_eq!(pool.current_num_threads(), 2);
        let pool = rayon_core::Configuration::new()
            .num_threads(1)
            .breadth_first()
            .build()
            .unwrap();
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
    });
}

#[test]
fn dropping_a_pool_returns_before_its_spawned_work_ends() {
    watchdog(
        "dropping_a_pool_returns_before_its_spawned_work_ends",
        || {
            let (release, released) = mpsc::channel::<()>();
            let (sender, receiver) = mpsc::channel();
            let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            pool.spawn(move || {
                released.recv().unwrap();
                sender.send(7).unwrap();
            });
            // With a drop that waited for the threads this would deadlock (the
            // watchdog would fail the test).
            drop(pool);
            release.send(()).unwrap();
            assert_eq!(receiver.recv().unwrap(), 7);
        },
    );
}
