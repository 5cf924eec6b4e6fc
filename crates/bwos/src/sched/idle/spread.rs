//! Spreading woken workers over the CPUs: a worker woken onto the CPU of
//! the worker that woke it moves to another one.
//!
//! # Why
//! A worker that shares work (a task queued behind a long poll, a burst of
//! spawns) wakes a sleeping worker to take it, and the kernel picks the
//! CPU the sleeper runs on. It may pick the waker's own CPU while another
//! CPU idles: Linux takes an idle CPU for a woken thread only if it looks
//! available, and a virtual machine's idle vCPU, halted by its host, may
//! not (`vcpu_is_preempted`); on the 2-vCPU VM these notes were measured
//! on that was the rule. The two workers then share one CPU until the
//! kernel's periodic balancing moves one (a tick: 4 ms at 250 Hz): either
//! the wakee preempts its waker and takes the oldest shared task, often
//! the long one the waker was about to run, or it waits behind the waker,
//! which runs that task. Either way the shared work waits for the long
//! poll it was shared to escape. A task that spawned a 2 ms task and 15
//! short ones, 200 rounds: the short ones waited for the long one in 64 to
//! 99% of the rounds; tokio's woken worker, in the same spot, preempted
//! the long task's worker and ran them in most rounds.
//!
//! # What it does
//! 1. A worker that wakes another records its CPU for the wakee (a store
//!    in the wake-up path; threads outside the pool record nothing: they
//!    block right after waking a worker, which may then have their CPU).
//! 2. The wakee, woken, compares that CPU with its own and, if they are the
//!    same, moves off it: its affinity becomes its allowed CPUs minus this
//!    one (the kernel moves it before the call returns), then all of them
//!    again, so the kernel stays free to place it afterwards.
//! 3. The waker, before its next poll (the cold path that shares the tasks
//!    queued behind it), yields its CPU once if the wakee has not resumed
//!    yet: a wakee queued behind it on its CPU then runs at once and moves
//!    off (step 2); one on another CPU costs the waker a system call that
//!    returns at once.
//!
//! With both steps the short tasks waited in 0 to 1 of 200 rounds (one step
//! alone: 50 to 99%). A pool with more workers than CPUs skips step 2:
//! there workers share CPUs anyway, and moving at every wake-up would cost
//! the migrations without freeing a CPU. Nor does a pool under
//! `IdlePolicy::Balanced`, the policy for machines shared with other
//! programs: there the other CPUs are busy with those programs rather than
//! idle, so a move frees nothing. (One co-run measurement, `bwos-bench
//! corun`, 2 workers per program, had Balanced's average unfairness go
//! from 40% to 72% with moves; co-runs vary by 10-30 points between runs,
//! so this is caution, not a measured loss.) Pinned workers (`ThreadPoolBuilder::pin_threads`) have one allowed CPU
//! and never move.
//!
//! Everything here is a hint: a lost or stale record costs at most one
//! needless move or yield, never a wake-up (those go through `sleep.rs`),
//! so relaxed atomics do.

use std::cell::Cell;
// Not `sched::sync`'s: hints, not a protocol loom checks (module docs).
use std::sync::atomic::{AtomicU32, Ordering};

use crate::sched::steal::topology::current_cpu;

/// No CPU recorded: the waker was not a worker, or its CPU is unknown.
const NO_CPU: u32 = u32::MAX;

thread_local! {
    /// Whether this thread is a worker (or its replacement): only workers'
    /// wake-ups are spread.
    static WORKER: Cell<bool> = const { Cell::new(false) };
    /// The worker this thread woke last (its pool's `WakeSpread`, by
    /// address, and its index there) and its resume count then, until this
    /// thread's next poll looks ([`WakeSpread::let_wakee_run`]). A worker
    /// wakes other pools' workers too (it installs into another pool, sets
    /// a latch another pool's worker waits on), so the index means nothing
    /// without its pool.
    static WOKE: Cell<Option<Woke>> = const { Cell::new(None) };
}

/// A wake-up recorded for the waker's next poll (step 3).
#[derive(Clone, Copy)]
struct Woke {
    /// The address of the wakee's pool's [`WakeSpread`]: compared, never
    /// dereferenced (that pool may be gone).
    spread: usize,
    index: usize,
    resumes: u32,
}

/// Marks the calling thread as a worker thread: its wake-ups are spread.
pub(crate) fn mark_worker_thread() {
    WORKER.with(|worker| worker.set(true));
}

/// Per worker: the CPU of the worker that woke it last, and how often it
/// resumed from a sleep.
pub(crate) struct WakeSpread {
    waker_cpus: Box<[AtomicU32]>,
    resumes: Box<[AtomicU32]>,
}

impl WakeSpread {
    pub(crate) fn new(workers: usize) -> WakeSpread {
        WakeSpread {
            waker_cpus: (0..workers).map(|_| AtomicU32::new(NO_CPU)).collect(),
            resumes: (0..workers).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The calling thread is about to wake worker `index` (step 1).
    #[inline]
    pub(crate) fn waking(&self, index: usize) {
        if !WORKER.with(Cell::get) {
            return;
        }
        let cpu = current_cpu().unwrap_or(NO_CPU);
        // Relaxed: a hint (module docs); the wake-up that follows orders it
        // for the wakee in practice, and a stale value costs one move.
        self.waker_cpus[index].store(cpu, Ordering::Relaxed);
        let resumes = self.resumes[index].load(Ordering::Relaxed);
        let spread = std::ptr::from_ref(self) as usize;
        WOKE.with(|woke| {
            woke.set(Some(Woke {
                spread,
                index,
                resumes,
            }));
        });
    }

    /// Worker `index` resumes after a sleep; if `may_move` (another thread
    /// woke it, the pool has no more workers than CPUs and is not
    /// `Balanced`), it moves off
    /// its waker's CPU if it runs there (step 2).
    pub(crate) fn resumed(&self, index: usize, may_move: bool) {
        // Relaxed: hints, as above.
        self.resumes[index].fetch_add(1, Ordering::Relaxed);
        let waker_cpu = self.waker_cpus[index].swap(NO_CPU, Ordering::Relaxed);
        if may_move && waker_cpu != NO_CPU && current_cpu() == Some(waker_cpu) {
            move_off(waker_cpu);
        }
    }

    /// Before the calling worker's next poll: yields its CPU once if the
    /// worker it woke last, in this pool, has not resumed yet (step 3).
    /// Returns whether it yielded. A wake-up in another pool is forgotten:
    /// the wakee may well run on another CPU, and its index may not even
    /// exist here. (A pool freed and another built at its address is
    /// bounded by `get`, and costs at most one needless yield.)
    pub(crate) fn let_wakee_run(&self) -> bool {
        if let Some(woke) = WOKE.with(Cell::take)
            && woke.spread == std::ptr::from_ref(self) as usize
            // Relaxed: a hint, as above.
            && self
                .resumes
                .get(woke.index)
                .is_some_and(|resumes| resumes.load(Ordering::Relaxed) == woke.resumes)
        {
            std::thread::yield_now();
            return true;
        }
        false
    }
}

/// Moves the calling thread off `cpu`: restricts it to its allowed CPUs
/// but `cpu` (the kernel migrates it before the call returns), then allows
/// them all again. Returns the CPU it ran on in between, or `None` if it
/// stayed: a thread allowed on `cpu` alone, or an error from the kernel,
/// leaves it where it is.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn move_off(cpu: u32) -> Option<u32> {
    use std::mem;
    let size = mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut allowed: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `allowed` is a valid cpu_set_t of `size` bytes; pid 0 is the
    // calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return None;
    }
    let cpu = usize::try_from(cpu)
        .ok()
        .filter(|&cpu| cpu < libc::CPU_SETSIZE as usize)?;
    let mut others = allowed;
    // SAFETY: `cpu` is below CPU_SETSIZE, the set's size; `others` is a
    // valid set.
    unsafe { libc::CPU_CLR(cpu, &mut others) };
    // SAFETY: `others` is a valid set.
    if unsafe { libc::CPU_COUNT(&others) } == 0 {
        return None;
    }
    // SAFETY: as for sched_getaffinity; `others` is a valid set.
    if unsafe { libc::sched_setaffinity(0, size, &others) } != 0 {
        return None;
    }
    // Off `cpu` until the next call: the kernel moved the thread before
    // the call above returned.
    let moved_to = current_cpu();
    // SAFETY: as above. Failing here would leave the thread off `cpu` for
    // good, which only narrows the kernel's choice, never breaks anything.
    unsafe { libc::sched_setaffinity(0, size, &allowed) };
    moved_to
}

/// Moving a thread is implemented for Linux only.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn move_off(_cpu: u32) -> Option<u32> {
    None
}

#[cfg(all(test, target_os = "linux", not(miri), not(bwos_loom)))]
mod tests {
    use super::*;

    fn allowed() -> libc::cpu_set_t {
        // SAFETY: as in `move_off`.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as in `move_off`.
        let result =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        assert_eq!(result, 0, "sched_getaffinity failed");
        set
    }

    // Mutations caught: not restoring the allowed set (the thread stays
    // off the CPU for good), restoring it before the move (the kernel may
    // leave the thread where it is).
    #[test]
    fn move_off_leaves_the_cpu_and_restores_the_allowed_set() {
        let before = allowed();
        let cpu = current_cpu().expect("Linux knows the CPU");
        // SAFETY: `before` is a valid set.
        if unsafe { libc::CPU_COUNT(&before) } < 2 {
            // Nowhere to move to: it must say so and stay.
            assert_eq!(move_off(cpu), None);
            // SAFETY: both are valid sets.
            let unchanged = unsafe { libc::CPU_EQUAL(&before, &allowed()) };
            assert!(unchanged, "the allowed CPUs changed");
            return;
        }
        for _ in 0..10 {
            let cpu = current_cpu().expect("Linux knows the CPU");
            let moved_to = move_off(cpu).expect("a thread allowed on two CPUs moves");
            assert_ne!(
                moved_to, cpu,
                "still on CPU {cpu} while it was not allowed there"
            );
            // SAFETY: both are valid sets.
            let restored = unsafe { libc::CPU_EQUAL(&before, &allowed()) };
            assert!(restored, "the allowed CPUs were not restored");
        }
    }

    // Mutations caught: yielding whatever the wakee did (the resume
    // count not compared), yielding more than once per wake-up (the record
    // not cleared), recording the wake-ups of threads outside the pool.
    #[test]
    fn the_waker_yields_once_and_only_until_its_wakee_resumes() {
        mark_worker_thread();
        let spread = WakeSpread::new(2);
        // The wakee has not resumed: the waker yields, once.
        spread.waking(1);
        assert!(spread.let_wakee_run());
        assert!(!spread.let_wakee_run());
        // The wakee resumed first: no yield.
        spread.waking(1);
        spread.resumed(1, false);
        assert!(!spread.let_wakee_run());
        // A wake-up by a thread outside the pool records nothing.
        WORKER.with(|worker| worker.set(false));
        spread.waking(0);
        assert!(!spread.let_wakee_run());
        assert_eq!(spread.waker_cpus[0].load(Ordering::Relaxed), NO_CPU);
    }

    // The CI hang of stop 55: a worker of a two-worker pool installed into
    // a three-worker pool, woke its worker 2, and its own pool's
    // `let_wakee_run` indexed its resume counts with 2 and panicked inside
    // the scheduler loop. Mutations caught: not comparing the pools (this
    // pool yields for the other pool's worker 1), and that together with
    // indexing instead of `get` (the out-of-bounds panic of stop 55).
    #[test]
    fn a_wake_up_in_another_pool_is_not_looked_up_in_this_one() {
        mark_worker_thread();
        let this_pool = WakeSpread::new(2);
        let other_pool = WakeSpread::new(3);
        for index in [1, 2] {
            other_pool.waking(index);
            assert!(
                !this_pool.let_wakee_run(),
                "yielded for worker {index} of another pool"
            );
            // The record is used up either way.
            assert!(!other_pool.let_wakee_run());
        }
        // This pool's own wake-ups still count.
        this_pool.waking(1);
        assert!(this_pool.let_wakee_run());
    }
}
