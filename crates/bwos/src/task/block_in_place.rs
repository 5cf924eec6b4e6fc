//! [`block_in_place`]: run a closure that blocks on the calling worker's
//! thread while another thread runs the worker (`sched/replacement.rs`).

/// Runs `f`, which may block, on the calling thread, without holding up
/// the pool: called on a worker, the worker (its queued tasks and jobs,
/// and whatever it does when it sleeps: fire timers, poll sockets) moves
/// to a replacement thread before `f` runs, so nothing waits for `f`.
/// tokio's `block_in_place`.
///
/// When `f` returns, the calling thread takes its worker back once the
/// thread running it finishes the job or task poll it is in (and any
/// thread that waited for the worker longer has had its turn); a
/// replacement then waits for the next call, for the pool's
/// [`blocking_keep_alive`](crate::ThreadPoolBuilder::blocking_keep_alive).
/// Inside `f` the thread works for the pool as a blocking thread does: the
/// tasks, timers and joins `f` starts go to this pool. A panic in `f`
/// comes back out of `block_in_place` after the worker is back.
///
/// Use it where a task, or a `join` or `scope` closure, must call blocking
/// code in the middle of its work and cannot move it to
/// [`spawn_blocking`](crate::task::spawn_blocking) (which needs `'static`
/// data). Each call hands the worker to another thread and back: a spare
/// replacement thread kept from an earlier call for the pool's
/// [`blocking_keep_alive`](crate::ThreadPoolBuilder::blocking_keep_alive),
/// else a new one (tens of microseconds in all), so it suits calls that
/// block for longer than that. If a replacement's own closure blocks when
/// this one returns, the worker comes back from whichever thread runs it
/// then, not only once that closure returned. Called outside a worker (on a
/// plain thread, in [`block_on`](crate::block_on), on a blocking thread)
/// or on a pool's building thread
/// ([`use_current_thread`](crate::ThreadPoolBuilder::use_current_thread)),
/// it simply runs `f`; if the OS refuses to start a thread, it runs `f` in
/// place as well.
///
/// ```
/// let pool = bwos::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let answer = pool.block_on(async {
///     let handle = bwos::task::spawn(async {
///         // Blocks this worker's thread; the one worker keeps running the
///         // pool's other tasks on a replacement thread meanwhile.
///         bwos::task::block_in_place(|| {
///             std::thread::sleep(std::time::Duration::from_millis(10));
///             42
///         })
///     });
///     handle.await.unwrap()
/// });
/// assert_eq!(answer, 42);
/// ```
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    crate::sched::replacement::block_in_place(true, f)
}
