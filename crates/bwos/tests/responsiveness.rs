//! Tasks and timers keep moving while a task blocks, runs long or
//! computes in parallel: ready tasks are served between the jobs of a
//! fork/join computation that occupies every worker, timers fire during
//! it, and (see the other tests here) queued tasks are not stranded behind
//! a blocking poll.

#![cfg(not(bwos_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bwos::ThreadPoolBuilder;
use bwos_testkit::watchdog;

mod common;
use common::{pool, wait_until};

/// Busy for about `micros` microseconds of this thread's time.
fn spin_for(micros: u64) {
    let end = Instant::now() + Duration::from_micros(micros);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A fork/join computation of `leaves` leaves of `micros` each, split by
/// `bwos::join`; `started` counts the leaves run so far.
fn compute(leaves: usize, micros: u64, started: &AtomicUsize) {
    if leaves == 1 {
        started.fetch_add(1, Ordering::SeqCst);
        spin_for(micros);
        return;
    }
    let half = leaves / 2;
    bwos::join(
        || compute(half, micros, started),
        || compute(leaves - half, micros, started),
    );
}

/// A task waiting on a socket runs when its bytes arrive, while a parallel
/// computation keeps both workers busy: the workers poll the I/O driver
/// and serve ready tasks between their jobs. Without that, the bytes were
/// seen only when the computation ended (about 400 ms of work here) or a
/// worker happened to look at the injector.
#[test]
#[cfg(feature = "io")]
fn a_task_woken_by_io_runs_while_a_computation_occupies_every_worker() {
    use futures_lite::AsyncReadExt as _;
    use std::io::Write as _;

    watchdog("io_task_during_computation", || {
        let pool = pool(2);
        for round in 0..5 {
            let listener = pool
                .block_on(bwos::net::TcpListener::bind("127.0.0.1:0"))
                .unwrap();
            let address = listener.local_addr().unwrap();
            let mut client = std::net::TcpStream::connect(address).unwrap();
            let read = Arc::new(AtomicBool::new(false));
            let reader = pool.spawn_task({
                let read = read.clone();
                async move {
                    let (mut stream, _) = listener.accept().await.unwrap();
                    let mut byte = [0u8; 1];
                    stream.read_exact(&mut byte).await.unwrap();
                    read.store(true, Ordering::SeqCst);
                }
            });
            let started = Arc::new(AtomicUsize::new(0));
            let computation = pool.spawn_task({
                let (started, read) = (started.clone(), read.clone());
                async move {
                    compute(8192, 50, &started);
                    read.load(Ordering::SeqCst)
                }
            });
            // Both workers are in the computation once a thief ran leaves.
            while started.load(Ordering::SeqCst) < 64 {
                std::thread::sleep(Duration::from_millis(1));
            }
            client.write_all(b"!").unwrap();
            let served_during = pool.block_on(computation).unwrap();
            pool.block_on(reader).unwrap();
            assert!(
                served_during,
                "round {round}: the reading task waited for the whole computation"
            );
        }
    });
}

/// A timer set by a task before a computation occupies both workers fires
/// during the computation, and the task it wakes runs then too.
#[test]
fn a_timer_fires_while_a_computation_occupies_every_worker() {
    watchdog("timer_during_computation", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for round in 0..5 {
            let started = Arc::new(AtomicUsize::new(0));
            let woke = Arc::new(AtomicBool::new(false));
            let sleeper = pool.spawn_task({
                let woke = woke.clone();
                async move {
                    bwos::time::sleep(Duration::from_millis(5)).await;
                    woke.store(true, Ordering::SeqCst);
                }
            });
            let computation = pool.spawn_task({
                let (started, woke) = (started.clone(), woke.clone());
                async move {
                    compute(8192, 50, &started);
                    woke.load(Ordering::SeqCst)
                }
            });
            let fired_during = pool.block_on(computation).unwrap();
            pool.block_on(sleeper).unwrap();
            assert!(
                fired_during,
                "round {round}: the 5 ms sleep waited for the whole computation"
            );
        }
    });
}

/// Spawns `tasks` tasks from the calling worker that each count in `ran`.
fn spawn_counting(ran: &Arc<AtomicUsize>, tasks: usize) {
    for _ in 0..tasks {
        let ran = ran.clone();
        bwos::task::spawn(async move {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
}

/// Waits until a worker of the calling task's pool other than the calling
/// one is parked: its busy time (which grows while a worker searches or
/// runs, even while the kernel has it descheduled) stays the same across
/// a millisecond. Returns whether one was.
fn wait_for_a_parked_worker() -> bool {
    let handle = bwos::Handle::current();
    let me = bwos::current_thread_index();
    wait_until(|| {
        let before = handle.stats().workers;
        std::thread::sleep(Duration::from_millis(1));
        let after = handle.stats().workers;
        (0..before.len())
            .any(|i| Some(i) != me && before[i].busy_duration == after[i].busy_duration)
    })
}

/// A task spawns 20 short tasks and then blocks its worker (user code
/// misbehaving): the other, idle, worker runs all 20 during the block.
/// They sit in the blocked worker's consumer block, which thieves never
/// entered before: the worker now shares it when it pushes while another
/// worker is idle. (tokio runs 19 of the 20 here: its LIFO slot holds one.)
///
/// "Idle" is the condition: a worker busy while the 20 are pushed (on a
/// loaded machine, one the kernel descheduled before it marked itself
/// idle) and idle only once the parent blocks leaves the ones pushed into
/// the consumer block to the parent (the window the worker module's docs
/// list under "Tasks are never stranded"). CI hit it under load (10 and 11
/// of 20), so the task waits for the other worker to park first.
#[test]
fn tasks_spawned_before_a_block_run_on_the_idle_worker() {
    watchdog("blocked_parent", || {
        let pool = pool(2);
        for round in 0..20 {
            let ran = Arc::new(AtomicUsize::new(0));
            let all_ran = pool.block_on(pool.spawn_task({
                let ran = ran.clone();
                async move {
                    // Resumed after a wake-up, this task was popped from its
                    // worker's queue: the worker's consumer sits in the
                    // block its producer fills, where the 20 go.
                    bwos::task::spawn(async {}).await.unwrap();
                    assert!(wait_for_a_parked_worker(), "the other worker never parked");
                    spawn_counting(&ran, 20);
                    // Blocks this worker until the other ran them all.
                    wait_until(|| ran.load(Ordering::SeqCst) == 20);
                    ran.load(Ordering::SeqCst)
                }
            }));
            let during = all_ran.unwrap();
            assert_eq!(
                during, 20,
                "round {round}: {during} of 20 tasks ran while their parent blocked"
            );
        }
    });
}

/// The other worker is busy when a task's poll starts (so nothing is
/// shared then) and becomes idle during it; the tasks this poll queues
/// afterwards are shared as they are pushed, and the idle worker runs them
/// while the poll blocks.
#[test]
fn tasks_pushed_after_another_worker_went_idle_run_there() {
    watchdog("pushed_after_idle", || {
        let pool = pool(2);
        for round in 0..10 {
            let other_started = Arc::new(AtomicBool::new(false));
            let other_done = Arc::new(AtomicBool::new(false));
            // Occupies one worker for 30 ms.
            let other = pool.spawn_task({
                let (started, done) = (other_started.clone(), other_done.clone());
                async move {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    done.store(true, Ordering::SeqCst);
                }
            });
            assert!(wait_until(|| other_started.load(Ordering::SeqCst)));
            let ran = Arc::new(AtomicUsize::new(0));
            let parent = pool.spawn_task({
                let (ran, other_done) = (ran.clone(), other_done.clone());
                async move {
                    // As above: the worker's consumer sits in the block its
                    // producer fills.
                    bwos::task::spawn(async {}).await.unwrap();
                    // This poll started while the other worker was busy.
                    wait_until(|| other_done.load(Ordering::SeqCst));
                    // Idle by now (not a sleep's guess: see the test above).
                    assert!(wait_for_a_parked_worker(), "the other worker never parked");
                    spawn_counting(&ran, 20);
                    wait_until(|| ran.load(Ordering::SeqCst) == 20);
                    ran.load(Ordering::SeqCst)
                }
            });
            let during = pool.block_on(parent).unwrap();
            pool.block_on(other).unwrap();
            assert_eq!(
                during, 20,
                "round {round}: {during} of 20 tasks ran while their parent blocked"
            );
        }
    });
}

/// The running task spawns a task and waits for it, again and again, while
/// the other worker sleeps: each spawn queues a lone task on its worker,
/// which no thief could take, so the sleeping worker is left asleep.
/// Waking it for each (as pushes did) made it search in vain and start
/// yielding, to miss the share when the task then queued a second one: in
/// a burst of a long task followed by short ones, the short ones waited
/// for the long one (see `offer_pushed_task`).
// Mutation caught: `offer_pushed_task` notifying for a lone private task
// (the sleeper is woken at every step: it fell asleep 12 more times
// instead of at most once).
#[test]
fn a_lone_spawn_leaves_the_sleeping_worker_asleep() {
    watchdog("lone_spawns", || {
        let pool = pool(2);
        let woken = pool.block_on(pool.spawn_task(async {
            let handle = bwos::Handle::current();
            let other = 1 - bwos::current_thread_index().expect("a task runs on a worker");
            let counts = || {
                let stats = &handle.stats().workers[other];
                (
                    stats.sleeps,
                    stats.wakeups,
                    stats.failed_steals,
                    stats.poll_count,
                )
            };
            // Blocks this worker until the other is asleep and its counts
            // stay put (a worker counts its wake-up only once it runs).
            let settle = |step: u32| {
                assert!(
                    wait_until(|| {
                        let before = counts();
                        std::thread::sleep(Duration::from_millis(2));
                        before == counts() && before.0 > before.1
                    }),
                    "step {step}: the other worker never settled asleep"
                );
            };
            settle(0);
            let sleeps_before = counts().0;
            // 24 pushes (each step's spawn, then this task's wake-up) stay
            // within one block of the task queue but for at most one step,
            // whose task lands at the start of a new block and is stealable.
            for step in 0..12u32 {
                settle(step);
                let next = bwos::task::spawn(async move { step });
                assert_eq!(next.await.unwrap(), step);
            }
            settle(12);
            // Each wake-up ends in one more fall asleep.
            counts().0 - sleeps_before
        }));
        let woken = woken.unwrap();
        assert!(
            woken <= 1,
            "12 lone spawns woke the sleeping worker {woken} times"
        );
    });
}

/// A ready task gets its turn between the two halves of a `join` whose
/// halves are long leaves, on a worker with nothing else to run it: each
/// leaf of a computation ends at a look for ready tasks, so a light task
/// waits for at most one leaf (counted before the first half, two leaves
/// ran between looks, and the task waited for both).
// Mutation caught: counting the job before `a` in `join_in_worker` (the
// task ran only before a join's first half, never between the halves).
#[test]
fn a_ready_task_runs_between_the_halves_of_a_join() {
    const OUTSIDE: usize = 0;
    const IN_A: usize = 1;
    const BETWEEN: usize = 2;
    const IN_B: usize = 3;
    watchdog("between_halves", || {
        let pool = pool(1);
        let phase = Arc::new(AtomicUsize::new(OUTSIDE));
        let seen = Arc::new(AtomicUsize::new(usize::MAX));
        let ran_in = pool.block_on(pool.spawn_task({
            let (phase, seen) = (phase.clone(), seen.clone());
            async move {
                // Queued on this, the only, worker: it runs when the
                // worker looks for ready tasks.
                bwos::task::spawn({
                    let (phase, seen) = (phase.clone(), seen.clone());
                    async move { seen.store(phase.load(Ordering::SeqCst), Ordering::SeqCst) }
                });
                for _ in 0..10 {
                    bwos::join(
                        || {
                            phase.store(IN_A, Ordering::SeqCst);
                            // Longer than a task slice (100 µs).
                            spin_for(1000);
                            phase.store(BETWEEN, Ordering::SeqCst);
                        },
                        || phase.store(IN_B, Ordering::SeqCst),
                    );
                    phase.store(OUTSIDE, Ordering::SeqCst);
                    if seen.load(Ordering::SeqCst) != usize::MAX {
                        break;
                    }
                }
                seen.load(Ordering::SeqCst)
            }
        }));
        let ran_in = ran_in.unwrap();
        assert_eq!(
            ran_in, BETWEEN,
            "the ready task ran in phase {ran_in} (0: outside the joins, 1: in a first half, \
             3: in a second half, usize::MAX: never), not between the halves"
        );
    });
}
