//! Per-worker metrics and pool gauges (`PoolStats::workers`, the depth and
//! gauge fields): each count is checked against work whose size the test
//! knows, and each gauge against a state the test holds still with a
//! channel, a barrier or a long timer (never with a sleep).
//!
//! The bounds on queue depths come from the documented rule
//! (`sched/stats.rs`): a depth counts every queued entry but those in the
//! one block the worker has to itself, 32 entries in the default
//! geometry.

#![cfg(not(bwos_loom))]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use bwos::{PoolStats, ThreadPoolBuilder, WorkerStats};
use bwos_testkit::watchdog;
use common::{fib, pool, wait_until};

/// Entries per block of a worker's job and task queues (the defaults):
/// the most a depth leaves out.
const BLOCK: usize = 32;

fn sum(stats: &PoolStats, field: impl Fn(&WorkerStats) -> u64) -> u64 {
    stats.workers.iter().map(field).sum()
}

// Mutation caught: `WorkerCounters::read_into` adding `failed_steals` to
// the `steals` sum (a slip only the per-worker values show); polls counted
// where a wake-up queues the task (`push_task`) instead of where it is
// polled (400 instead of 600).
#[test]
fn per_worker_counts_add_up_to_the_sums() {
    watchdog("per_worker_counts_add_up_to_the_sums", || {
        let pool = pool(2);
        assert_eq!(pool.install(|| fib(22)), 17_711);
        let handles: Vec<_> = (0..200)
            .map(|i| {
                pool.spawn_task(async move {
                    bwos::task::yield_now().await;
                    bwos::task::yield_now().await;
                    i
                })
            })
            .collect();
        for handle in handles {
            pool.block_on(handle).unwrap();
        }
        let stats = pool.stats();
        assert_eq!(stats.workers.len(), 2);
        assert_eq!(stats.steals, sum(&stats, |w| w.steals), "{stats}");
        assert_eq!(stats.failed_steals, sum(&stats, |w| w.failed_steals));
        assert_eq!(stats.sleeps, sum(&stats, |w| w.sleeps));
        assert_eq!(stats.wakeups, sum(&stats, |w| w.wakeups));
        assert_eq!(stats.long_polls, sum(&stats, |w| w.long_polls));
        // Each task was polled three times (two self-wakes), on some worker.
        assert_eq!(sum(&stats, |w| w.poll_count), 600, "{stats}");
        // The `install` job at least went through a scheduler loop.
        assert!(sum(&stats, |w| w.job_count) >= 1, "{stats}");
        // Every steal took something from some victim.
        let stolen = sum(&stats, |w| w.tasks_stolen_from + w.jobs_stolen_from);
        assert!(stolen >= stats.steals, "{stats}");
    });
}

// Mutation caught: the job count taken before the task/job branch in
// `run_until` (task polls counted as jobs: 10 jobs after the task alone),
// or the poll count missing there (0 polls).
#[test]
fn a_one_worker_pool_counts_each_poll_and_each_job_once() {
    watchdog(
        "a_one_worker_pool_counts_each_poll_and_each_job_once",
        || {
            let pool = pool(1);
            let task = pool.spawn_task(async {
                for _ in 0..9 {
                    bwos::task::yield_now().await;
                }
            });
            pool.block_on(task).unwrap();
            let stats = pool.stats();
            assert_eq!(stats.workers[0].poll_count, 10, "{stats}");
            assert_eq!(stats.workers[0].job_count, 0, "{stats}");

            let (sender, receiver) = mpsc::channel();
            for i in 0..5 {
                let sender = sender.clone();
                pool.spawn(move || sender.send(i).unwrap());
            }
            for _ in 0..5 {
                receiver.recv().unwrap();
            }
            let stats = pool.stats();
            assert_eq!(stats.workers[0].job_count, 5, "{stats}");
            assert_eq!(stats.workers[0].poll_count, 10, "{stats}");
        },
    );
}

// Mutation caught: busy time not stopped when the worker parks
// (`WorkerCounters::fell_asleep` without `stop_busy`): it keeps growing
// while the worker sleeps, and no two snapshots agree.
#[test]
fn a_parked_worker_counts_the_park_and_is_not_busy() {
    watchdog("a_parked_worker_counts_the_park_and_is_not_busy", || {
        let pool = pool(1);
        assert_eq!(pool.install(|| fib(20)), 6_765);
        assert!(
            wait_until(|| pool.stats().workers[0].sleeps >= 1),
            "the idle worker never parked: {}",
            pool.stats()
        );
        // Parked with nothing to do, it stays parked (a spurious wake-up
        // parks again within the same sleep): two snapshots a little
        // apart agree on its busy time.
        let settled = wait_until(|| {
            let before = pool.stats().workers[0].clone();
            std::thread::sleep(Duration::from_millis(5));
            let after = pool.stats().workers[0].clone();
            before.sleeps == after.sleeps && before.busy_duration == after.busy_duration
        });
        let stats = pool.stats();
        assert!(settled, "busy time grows while the worker sleeps: {stats}");
        assert!(stats.workers[0].busy_duration > Duration::ZERO, "{stats}");
        assert_eq!(stats.sleeps, stats.workers[0].sleeps);

        // Woken for work, it parks again afterwards: one more park.
        let parks = stats.workers[0].sleeps;
        pool.install(|| ());
        assert!(
            wait_until(|| pool.stats().workers[0].sleeps > parks),
            "{}",
            pool.stats()
        );
    });
}

// Mutation caught: the task depth read from the job queue's stealer.
#[test]
fn depths_show_the_work_queued_behind_a_blocked_worker() {
    watchdog(
        "depths_show_the_work_queued_behind_a_blocked_worker",
        || {
            const TASKS: usize = 100;
            const JOBS: usize = 60;
            const INJECTED_TASKS: usize = 10;
            const INJECTED_JOBS: usize = 7;
            let pool = pool(1);
            let (blocked, is_blocked) = mpsc::channel();
            let (release, released) = mpsc::channel::<()>();
            let ran = Arc::new(AtomicUsize::new(0));
            let blocker = pool.spawn_task({
                let ran = Arc::clone(&ran);
                async move {
                    for _ in 0..TASKS {
                        let ran = Arc::clone(&ran);
                        drop(bwos::task::spawn(async move {
                            ran.fetch_add(1, Ordering::SeqCst);
                        }));
                    }
                    for _ in 0..JOBS {
                        let ran = Arc::clone(&ran);
                        bwos::spawn(move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    // The only worker blocks here, with all of it queued.
                    blocked.send(()).unwrap();
                    released.recv().unwrap();
                }
            });
            is_blocked.recv().unwrap();
            for _ in 0..INJECTED_TASKS {
                let ran = Arc::clone(&ran);
                drop(pool.spawn_task(async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            for _ in 0..INJECTED_JOBS {
                let ran = Arc::clone(&ran);
                pool.spawn(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            }
            let stats = pool.stats();
            let worker = &stats.workers[0];
            assert!(
                (TASKS - BLOCK..=TASKS).contains(&worker.task_queue_depth),
                "{stats}"
            );
            assert!(
                (JOBS - BLOCK..=JOBS).contains(&worker.job_queue_depth),
                "{stats}"
            );
            assert_eq!(stats.injection_queue_depth, INJECTED_TASKS, "{stats}");
            assert_eq!(stats.job_injection_queue_depth, INJECTED_JOBS, "{stats}");
            // The blocker, its spawns and the injected tasks.
            assert_eq!(stats.num_alive_tasks, 1 + TASKS + INJECTED_TASKS, "{stats}");
            assert_eq!(ran.load(Ordering::SeqCst), 0);

            release.send(()).unwrap();
            pool.block_on(blocker).unwrap();
            let all = TASKS + JOBS + INJECTED_TASKS + INJECTED_JOBS;
            assert!(wait_until(|| ran.load(Ordering::SeqCst) == all));
            let stats = pool.stats();
            assert_eq!(stats.workers[0].task_queue_depth, 0, "{stats}");
            assert_eq!(stats.workers[0].job_queue_depth, 0, "{stats}");
            assert_eq!(stats.injection_queue_depth, 0, "{stats}");
            assert_eq!(stats.job_injection_queue_depth, 0, "{stats}");
        },
    );
}

// Mutation caught: `BlockingQueue::gauges` not counting the idle stack
// (idle 0 at the end).
#[test]
fn blocking_gauges_while_closures_wait_on_a_barrier() {
    watchdog("blocking_gauges_while_closures_wait_on_a_barrier", || {
        const THREADS: usize = 3;
        const QUEUED: usize = 2;
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .max_blocking_threads(THREADS)
            .blocking_keep_alive(Duration::from_secs(600))
            .build()
            .unwrap();
        // The closures and this thread meet twice: once all run, and once
        // this thread has read the gauges.
        let barrier = Arc::new(Barrier::new(THREADS + 1));
        let mut handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                pool.spawn_blocking(move || {
                    barrier.wait();
                    barrier.wait();
                })
            })
            .collect();
        barrier.wait();
        // Every thread is taken: these wait in the queue.
        handles.extend((0..QUEUED).map(|_| pool.spawn_blocking(|| {})));
        let stats = pool.stats();
        assert_eq!(stats.num_blocking_threads, THREADS, "{stats}");
        assert_eq!(stats.num_idle_blocking_threads, 0, "{stats}");
        assert_eq!(stats.blocking_queue_depth, QUEUED, "{stats}");
        // Blocking closures are not async tasks.
        assert_eq!(stats.num_alive_tasks, 0, "{stats}");

        barrier.wait();
        for handle in handles {
            pool.block_on(handle).unwrap();
        }
        // The threads stay for the keep-alive, idle.
        assert!(
            wait_until(|| {
                let stats = pool.stats();
                stats.num_idle_blocking_threads == THREADS
                    && stats.num_blocking_threads == THREADS
                    && stats.blocking_queue_depth == 0
            }),
            "{}",
            pool.stats()
        );
    });
}

// Mutation caught: the gauge counting the wheel's entries (a timer that
// fired stays in the wheel until its `Sleep` is dropped: 5 instead of 4).
#[test]
fn pending_timers_are_the_ones_not_fired_yet() {
    watchdog("pending_timers_are_the_ones_not_fired_yet", || {
        let pool = pool(2);
        assert_eq!(pool.stats().num_pending_timers, 0);
        let (fired, has_fired) = mpsc::channel();
        let sleeper = pool.spawn_task(async move {
            let mut short = std::pin::pin!(bwos::time::sleep(Duration::from_millis(1)));
            short.as_mut().await;
            fired.send(()).unwrap();
            // `short` stays alive (fired) while this one waits.
            bwos::time::sleep(Duration::from_secs(3600)).await;
        });
        let others: Vec<_> = (0..3).map(|_| pool.spawn_task(sleep_an_hour())).collect();
        has_fired.recv().unwrap();
        assert!(
            wait_until(|| pool.stats().num_pending_timers == 4),
            "{}",
            pool.stats()
        );
        sleeper.abort();
        for other in &others {
            other.abort();
        }
        assert!(
            wait_until(|| pool.stats().num_pending_timers == 0),
            "{}",
            pool.stats()
        );
        assert!(pool.block_on(sleeper).unwrap_err().is_cancelled());
    });
}

// Mutation caught: `TaskList::remove` not lowering the live count (the
// gauge stays at 50).
#[test]
fn alive_tasks_go_back_to_zero() {
    watchdog("alive_tasks_go_back_to_zero", || {
        let pool = pool(2);
        let sleepers: Vec<_> = (0..50).map(|_| pool.spawn_task(sleep_an_hour())).collect();
        // Listed at the spawn, before they run.
        assert_eq!(pool.stats().num_alive_tasks, 50);
        for sleeper in &sleepers {
            sleeper.abort();
        }
        for sleeper in sleepers {
            assert!(pool.block_on(sleeper).unwrap_err().is_cancelled());
        }
        assert!(
            wait_until(|| pool.stats().num_alive_tasks == 0),
            "{}",
            pool.stats()
        );

        let finishers: Vec<_> = (0..50)
            .map(|i| {
                pool.spawn_task(async move {
                    bwos::task::yield_now().await;
                    i
                })
            })
            .collect();
        for finisher in finishers {
            pool.block_on(finisher).unwrap();
        }
        assert!(
            wait_until(|| pool.stats().num_alive_tasks == 0),
            "{}",
            pool.stats()
        );
    });
}

/// An hour's sleep on the pool that polls it (a `Sleep` made outside the
/// pools would go to the global pool).
async fn sleep_an_hour() {
    bwos::time::sleep(Duration::from_secs(3600)).await;
}

/// Runs `root` as a task of a two-worker pool and returns the stats after
/// it and the index of the worker that ran it.
fn stats_after_root(
    root: impl std::future::Future<Output = usize> + Send + 'static,
) -> (PoolStats, usize) {
    let pool = pool(2);
    let victim = pool.block_on(pool.spawn_task(root)).unwrap();
    (pool.stats(), victim)
}

// Mutation caught: the stolen-from count kept on the thief's line instead
// of the victim's (`StealView::steal` counting on `thief.index()`: the
// blocked worker shows none).
#[test]
fn tasks_stolen_from_a_blocked_worker_count_on_it() {
    watchdog("tasks_stolen_from_a_blocked_worker_count_on_it", || {
        const TASKS: usize = 64;
        let (stats, victim) = stats_after_root(async {
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..TASKS {
                let ran = Arc::clone(&ran);
                drop(bwos::task::spawn(async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            // Blocks its worker until the other one has run all but the
            // task this one may keep to itself (the one queued last).
            while ran.load(Ordering::SeqCst) < TASKS - 1 {
                std::thread::yield_now();
            }
            bwos::current_thread_index().unwrap()
        });
        let stolen = stats.workers[victim].tasks_stolen_from;
        assert!(stolen >= (TASKS - 1) as u64, "{stats}");
    });
}

// Mutation caught: as above, for jobs.
#[test]
fn a_job_stolen_from_a_blocked_worker_counts_on_it() {
    watchdog("a_job_stolen_from_a_blocked_worker_counts_on_it", || {
        let (stats, victim) = stats_after_root(async {
            let ran_on = Arc::new(AtomicUsize::new(usize::MAX));
            let job_ran_on = Arc::clone(&ran_on);
            bwos::spawn(move || {
                job_ran_on.store(bwos::current_thread_index().unwrap(), Ordering::SeqCst);
            });
            let me = bwos::current_thread_index().unwrap();
            // This worker blocks: only the other one can run the job.
            while ran_on.load(Ordering::SeqCst) == usize::MAX {
                std::thread::yield_now();
            }
            assert_ne!(ran_on.load(Ordering::SeqCst), me);
            me
        });
        assert!(stats.workers[victim].jobs_stolen_from >= 1, "{stats}");
    });
}

// Mutation caught: `IoDriver::dispatch` not counting (the count stays 0).
#[cfg(feature = "io")]
#[test]
fn io_events_handled_are_counted() {
    watchdog("io_events_handled_are_counted", || {
        let pool = pool(1);
        assert_eq!(pool.stats().io_driver_ready_count, 0);
        let (listener, client, server) = pool.block_on(async {
            let listener = bwos::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let accept = bwos::task::spawn(async move {
                let (server, _) = listener.accept().await.unwrap();
                (listener, server)
            });
            let client = bwos::net::TcpStream::connect(address).await.unwrap();
            let (listener, server) = accept.await.unwrap();
            (listener, client, server)
        });
        // The idle worker parks in the driver, which reports the sockets'
        // readiness (a registered socket is reported writable).
        assert!(
            wait_until(|| pool.stats().io_driver_ready_count > 0),
            "{}",
            pool.stats()
        );
        drop((listener, client, server));
    });
}
