//! [`spawn_blocking`]: a closure that may block, run on the pool's
//! blocking threads (`sched/blocking/`) as a task whose one poll calls
//! it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::sched::blocking;
use crate::sched::current::with_current_pool;
use crate::sched::handle::Handle;
use crate::sched::pool::ThreadPool;
use crate::sched::registry::Registry;
use crate::sched::task::raw::{self, JoinHandle, Notified, Schedule};

/// Runs `f` on a blocking thread of the current pool (the calling
/// worker's, the pool whose blocking thread calls or that the thread
/// entered, else the global pool)
/// and returns a handle to its result.
///
/// Use it for work that blocks: file and other synchronous I/O, DNS
/// lookups, a long computation that would otherwise hold a worker and
/// every task queued behind it. Blocking threads are started on demand
/// and apart from the workers (they never run pool work), up to
/// [`ThreadPoolBuilder::max_blocking_threads`](crate::ThreadPoolBuilder::max_blocking_threads);
/// beyond that, closures wait in a queue. An idle blocking thread exits
/// after [`ThreadPoolBuilder::blocking_keep_alive`](crate::ThreadPoolBuilder::blocking_keep_alive).
///
/// A panic in `f` comes back as a [`JoinError`](crate::task::JoinError)
/// with [`is_panic`](crate::task::JoinError::is_panic); the thread lives
/// on. [`JoinHandle::abort`] cancels a closure that has not started; one
/// that runs finishes (a thread cannot be interrupted). When the pool's
/// workers stop (the pool is dropped), closures not started yet are
/// cancelled and running ones finish on their threads, which nobody waits
/// for.
///
/// ```
/// let handle = bwos::task::spawn_blocking(|| {
///     std::thread::sleep(std::time::Duration::from_millis(10));
///     6 * 7
/// });
/// assert_eq!(bwos::block_on(handle).unwrap(), 42);
/// ```
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    with_current_pool(|registry| spawn_blocking_in(registry, f))
}

impl ThreadPool {
    /// Runs `f` on a blocking thread of this pool: see
    /// [`task::spawn_blocking`](crate::task::spawn_blocking).
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        spawn_blocking_in(&self.registry, f)
    }
}

impl Handle {
    /// Runs `f` on a blocking thread of this handle's pool: see
    /// [`task::spawn_blocking`](crate::task::spawn_blocking). Once the
    /// pool's workers have stopped (its `ThreadPool` dropped or shut down)
    /// the closure is not run: its handle reports
    /// [`is_cancelled`](crate::task::JoinError::is_cancelled).
    ///
    /// ```
    /// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build()?;
    /// let handle = pool.handle();
    /// let read = handle.spawn_blocking(|| std::env::temp_dir().exists());
    /// assert!(handle.block_on(read).unwrap());
    /// # Ok::<(), bwos::ThreadPoolBuildError>(())
    /// ```
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        spawn_blocking_in(&self.registry, f)
    }
}

fn spawn_blocking_in<F, R>(registry: &Arc<Registry>, f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (entry, handle) = raw::spawn(
        BlockingTask(Some(f)),
        BlockingScheduler(Arc::clone(registry)),
    );
    blocking::threads::push(registry, entry);
    handle
}

/// The future of a blocking closure: calls it in its first poll.
struct BlockingTask<F>(Option<F>);

// The closure is never pinned: it is moved out before it runs.
impl<F> Unpin for BlockingTask<F> {}

impl<F, R> Future for BlockingTask<F>
where
    F: FnOnce() -> R,
{
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<R> {
        let f = self
            .0
            .take()
            .expect("a blocking task is polled once: its first poll completes it");
        let output = f();
        // Before the output is published (by the task cell, after this
        // poll): the thread is counted as coming back before the waiter
        // can push its next closures.
        blocking::closure_returned();
        Poll::Ready(output)
    }
}

/// Where a blocking task's entry goes: its pool's blocking threads. The
/// task is never woken (its one poll completes it) except to be
/// cancelled, which the blocking pool does as it runs the entry.
struct BlockingScheduler(Arc<Registry>);

impl Schedule for BlockingScheduler {
    fn schedule(&self, task: Notified) {
        blocking::threads::push(&self.0, task);
    }
}

#[cfg(test)]
mod tests {
    use crate::ThreadPoolBuilder;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn closures_run_apart_from_the_workers_up_to_the_bound() {
        bwos_testkit::watchdog("spawn_blocking_bound", || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .max_blocking_threads(3)
                .build()
                .unwrap();
            // Three closures block together (a barrier of three): they can
            // only all pass if three threads run them at once, none of them
            // the pool's one worker.
            let barrier = Arc::new(Barrier::new(3));
            let running = Arc::new(AtomicUsize::new(0));
            let peak = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..9)
                .map(|i| {
                    let (barrier, running, peak) = (
                        Arc::clone(&barrier),
                        Arc::clone(&running),
                        Arc::clone(&peak),
                    );
                    pool.spawn_blocking(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert_eq!(crate::current_thread_index(), None, "not on a worker");
                        barrier.wait();
                        running.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                })
                .collect();
            let sum: usize = pool.block_on(async {
                let mut sum = 0;
                for handle in handles {
                    sum += handle.await.unwrap();
                }
                sum
            });
            assert_eq!(sum, 36);
            assert_eq!(peak.load(Ordering::SeqCst), 3, "at most 3 threads at once");
            assert!(pool.registry.blocking.threads() <= 3);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn a_panicking_closure_gives_a_join_error_and_the_thread_lives_on() {
        bwos_testkit::watchdog("spawn_blocking_panic", || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .max_blocking_threads(1)
                .build()
                .unwrap();
            let failed = pool.spawn_blocking(|| -> u32 { panic!("blocking closure failed") });
            let error = pool.block_on(failed).expect_err("the closure panicked");
            assert!(error.is_panic());
            assert_eq!(
                error.into_panic().downcast_ref::<&str>().copied(),
                Some("blocking closure failed")
            );
            // The one blocking thread still serves.
            assert_eq!(pool.block_on(pool.spawn_blocking(|| 5)).unwrap(), 5);
        });
    }

    /// Runs `threads` closures that wait for each other (a barrier), so
    /// the pool needs that many blocking threads at once, and waits for
    /// them to finish.
    fn run_on_blocking_threads_at_once(pool: &crate::ThreadPool, threads: usize) {
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                pool.spawn_blocking(move || {
                    barrier.wait();
                })
            })
            .collect();
        pool.block_on(async {
            for handle in handles {
                handle.await.unwrap();
            }
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn idle_blocking_threads_exit_after_the_keep_alive() {
        bwos_testkit::watchdog("spawn_blocking_keep_alive", || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .blocking_keep_alive(Duration::from_millis(20))
                .build()
                .unwrap();
            run_on_blocking_threads_at_once(&pool, 4);
            assert!(pool.registry.blocking.threads() >= 1);
            // No timing assert: wait (under the watchdog) until they left.
            while pool.registry.blocking.threads() != 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
            // A new closure starts a new thread.
            assert_eq!(pool.block_on(pool.spawn_blocking(|| 1)).unwrap(), 1);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn surplus_blocking_threads_exit_while_a_steady_load_goes_on() {
        bwos_testkit::watchdog("spawn_blocking_surplus_exit", || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .blocking_keep_alive(Duration::from_millis(30))
                .build()
                .unwrap();
            // Four threads, needed once.
            run_on_blocking_threads_at_once(&pool, 4);
            assert_eq!(pool.registry.blocking.threads(), 4);
            // Then one closure at a time, back to back: one thread is
            // enough (the thread that ran a closure counts as coming back
            // before its result is seen, so the next closure waits for it),
            // and the others must reach their keep-alive although closures
            // keep coming. No timing assert: the loop runs until they
            // left, under the watchdog.
            let mut closures = 0_u64;
            while pool.registry.blocking.threads() > 1 {
                closures += pool.block_on(pool.spawn_blocking(|| 1)).unwrap();
            }
            assert!(closures > 0);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn closures_run_a_few_at_a_time_need_no_more_threads_than_that() {
        bwos_testkit::watchdog("spawn_blocking_rounds", || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            // Rounds of four closures, each round pushed as soon as the
            // previous one's results are in: the four threads of the first
            // round come back for the next (each is counted as coming back
            // before its result is seen), so no round starts a thread. The
            // keep-alive (10 s) is far longer than the run. A pusher that
            // only saw idle threads started a new thread whenever the
            // finished ones were not back on the idle stack yet.
            let sum = pool.block_on(async {
                let mut sum = 0_u64;
                for _ in 0..3000 {
                    let handles: Vec<_> = (0..4_u64)
                        .map(|i| crate::task::spawn_blocking(move || i * 3))
                        .collect();
                    for handle in handles {
                        sum += handle.await.unwrap();
                    }
                }
                sum
            });
            assert_eq!(sum, 3000 * 18);
            let threads = pool.registry.blocking.threads();
            assert!(
                threads <= 4,
                "{threads} blocking threads for four closures at a time"
            );
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "a whole pool: OS calls Miri does not support")]
    fn queued_closures_are_cancelled_when_the_pool_stops_and_abort_cancels_them() {
        bwos_testkit::watchdog("spawn_blocking_shutdown", || {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .max_blocking_threads(1)
                .build()
                .unwrap();
            let (release, wait) = std::sync::mpsc::channel::<()>();
            let (started_tx, started) = std::sync::mpsc::channel::<()>();
            let running = pool.spawn_blocking(move || {
                started_tx.send(()).unwrap();
                wait.recv().unwrap();
                "ran"
            });
            started.recv().unwrap();
            // The one thread is busy: these wait in the queue.
            let aborted = pool.spawn_blocking(|| "aborted");
            aborted.abort();
            let queued = pool.spawn_blocking(|| "queued");
            drop(pool);
            release.send(()).unwrap();
            // The handles are futures like any other: the global pool awaits them.
            let outcome = crate::block_on;
            assert_eq!(outcome(running).unwrap(), "ran");
            assert!(outcome(aborted).unwrap_err().is_cancelled());
            // Queued when the pool stopped: cancelled, not lost, not run.
            assert!(outcome(queued).unwrap_err().is_cancelled());
        });
    }

    #[test]
    fn zero_blocking_threads_is_a_clear_error() {
        let error = ThreadPoolBuilder::new()
            .max_blocking_threads(0)
            .build()
            .expect_err("0 is refused");
        let message = error.to_string();
        assert!(message.contains("max_blocking_threads"), "{message}");
        assert!(message.contains("at least 1"), "{message}");
    }
}
