//! Pool lifecycle: 10,000 pools built and dropped, each with work alive at
//! the drop (a task pending forever, a task blocked on a channel, a task
//! asleep on a timer an hour away, a `spawn_blocking` closure running and
//! one queued behind it, and with feature `io` a listener and a connected
//! pair of streams on the pool's I/O driver, with tasks waiting on them).
//! Each drop returns after the pool's workers have ended (their
//! thread-local destructors ran). After the drops nothing may be left: no thread (`/proc/self/task`), no
//! descriptor (`/proc/self/fd`), no memory (a counting global allocator:
//! the bytes outstanding after the 10,000 pools are those before them,
//! within a small bound).
//!
//! Why an allocator count rather than RSS: a leak of one small allocation
//! per pool (a task cell, a registry kept alive by a reference cycle, a
//! timer entry) is tens to hundreds of bytes, 10,000 of them a few MiB at
//! most, of the order of what RSS moves by anyway as the allocator keeps
//! freed pages and thread stacks come and go. The count sees every byte
//! and nothing else.
//!
//! A test binary of its own, with one test: thread and descriptor counts
//! are the whole process's, and the counting allocator sees every thread.

#![cfg(all(target_os = "linux", not(bwos_loom)))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bwos::ThreadPoolBuilder;
use bwos::task::JoinHandle;
use bwos_testkit::{proc, watchdog};

/// The allocator of this test binary: the system's, counting the bytes
/// outstanding.
struct Counting;

/// Bytes allocated and not yet freed, by every thread of the process.
static OUTSTANDING: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// (so `System`'s guarantees are the caller's) and only adds a counter
// update, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller's contract for `alloc` holds.
        let block = unsafe { System.alloc(layout) };
        if !block.is_null() {
            // Relaxed: a statistic, read after the threads that allocate
            // have been joined or are idle (see `outstanding`).
            OUTSTANDING.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller's contract for `alloc_zeroed` holds.
        let block = unsafe { System.alloc_zeroed(layout) };
        if !block.is_null() {
            // Relaxed: as in `alloc`.
            OUTSTANDING.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `block` was allocated here with `layout`.
        unsafe { System.dealloc(block, layout) };
        // Relaxed: as in `alloc`.
        OUTSTANDING.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded; `block` was allocated here with `layout`.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if !moved.is_null() {
            // Relaxed: as in `alloc`.
            OUTSTANDING.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes outstanding now.
fn outstanding() -> isize {
    // Relaxed: the pools whose allocations matter are dropped and their
    // threads joined (joining orders their counter updates before this
    // load); the blocking threads have exited (waited for by
    // `settle`), and their exit is observed through `/proc`, which does
    // not order memory: the bound below absorbs a late update or two.
    OUTSTANDING.load(Ordering::Relaxed)
}

/// Pools built and dropped, and checked.
const POOLS: usize = 10_000;
/// Pools built and dropped before the counts are taken: the process's
/// one-time allocations (std's and the libraries' lazily built state,
/// thread-local caches) happen here.
const WARM_UP: usize = 200;
/// How far the bytes outstanding may move across the 10,000 pools: under
/// one byte a pool, so that one leaked allocation per pool, of any size,
/// fails. (Measured on this machine: they moved by 0 and by 1,920 bytes.)
const MEMORY_BOUND: isize = 8 * 1024;
/// How long threads and descriptors may take to go after the last drop
/// (blocking threads exit on their own, after their closure).
const SETTLE: Duration = Duration::from_secs(20);

/// Threads and open descriptors of the process, now.
fn threads_and_descriptors() -> (usize, usize) {
    (proc::threads().unwrap(), proc::descriptors().unwrap())
}

/// Waits until threads and descriptors are down to the baseline (or
/// [`SETTLE`] passes); returns them.
fn settle(threads_before: usize, descriptors_before: usize) -> (usize, usize) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = threads_and_descriptors();
        if (now.0 <= threads_before && now.1 <= descriptors_before) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A one-value channel: the receiver waits as a future, the sender is a
/// plain value that may outlive the pool of the waiting task (it then
/// wakes a task of a pool that is gone).
#[derive(Default)]
struct Slot {
    value: Option<u32>,
    waker: Option<Waker>,
}

struct Receiver(Arc<Mutex<Slot>>);
struct Sender(Arc<Mutex<Slot>>);

fn channel() -> (Sender, Receiver) {
    let slot = Arc::new(Mutex::new(Slot::default()));
    (Sender(Arc::clone(&slot)), Receiver(slot))
}

impl Sender {
    fn send(self, value: u32) {
        let waker = {
            let mut slot = self.0.lock().unwrap();
            slot.value = Some(value);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Future for Receiver {
    type Output = u32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        let mut slot = self.0.lock().unwrap();
        match slot.value.take() {
            Some(value) => Poll::Ready(value),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Awaits `handle` outside any pool (its pool is gone): it must say the
/// task was cancelled.
fn assert_cancelled<T: std::fmt::Debug>(handle: JoinHandle<T>, what: &str) {
    // The drop has cancelled it already; a task it missed would never end.
    assert!(
        handle.is_finished(),
        "{what}: not finished after its pool was dropped"
    );
    match futures_lite::future::block_on(handle) {
        Err(error) => assert!(error.is_cancelled(), "{what}: {error}"),
        Ok(value) => panic!("{what}: finished with {value:?} in a dropped pool"),
    }
}

/// Set on a worker by the pool's start handler; its destructor, the last
/// thing the thread runs, counts the worker as ended.
struct EndMark(Arc<AtomicUsize>);

impl Drop for EndMark {
    fn drop(&mut self) {
        // Release: pairs with the Acquire load after the pool's drop.
        self.0.fetch_add(1, Ordering::Release);
    }
}

thread_local! {
    static END_MARK: RefCell<Option<EndMark>> = const { RefCell::new(None) };
}

/// What one pool leaves behind at its drop, to settle after it.
struct Leftovers {
    handles: Vec<(JoinHandle<()>, &'static str)>,
    waiting_for_a_value: JoinHandle<u32>,
    sender: Sender,
    blocking_gate: mpsc::Sender<()>,
    blocking_running: JoinHandle<u32>,
    blocking_queued: JoinHandle<u32>,
    #[cfg(feature = "io")]
    client: bwos::net::TcpStream,
}

/// Builds a pool, leaves work alive in it, drops it.
fn one_pool() -> Leftovers {
    let ended = Arc::new(AtomicUsize::new(0));
    let marks = Arc::clone(&ended);
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("lifecycle-{i}"))
        .start_handler(move |_| {
            END_MARK.with(|mark| *mark.borrow_mut() = Some(EndMark(Arc::clone(&marks))));
        })
        .max_blocking_threads(1)
        .build()
        .expect("a pool");
    // Fork/join work that finishes, so that the workers have run, and
    // with scope spawns, whose jobs come from the workers' frame caches.
    let (a, b) = pool.install(|| bwos::join(|| 20, || 22));
    assert_eq!(a + b, 42);
    let sum = AtomicUsize::new(0);
    pool.install(|| {
        bwos::scope(|scope| {
            for i in 0..16 {
                let sum = &sum;
                // Relaxed: the scope's end orders the adds before the load.
                scope.spawn(move |_| {
                    sum.fetch_add(i, Ordering::Relaxed);
                });
            }
        });
    });
    assert_eq!(sum.into_inner(), 120);
    let pending = pool.spawn_task(std::future::pending::<()>());
    let (sender, receiver) = channel();
    let waiting_for_a_value = pool.spawn_task(receiver);
    // Made in the task, so that the timer is this pool's (made here, it
    // would be the global pool's).
    let asleep = pool.spawn_task(async { bwos::time::sleep(Duration::from_secs(3600)).await });
    // One closure blocks its thread until the gate opens (after the drop);
    // with one blocking thread at most, the next one waits in the queue.
    let (blocking_gate, gate) = mpsc::channel::<()>();
    let (started, has_started) = mpsc::channel::<()>();
    let blocking_running = pool.spawn_blocking(move || {
        started.send(()).expect("the test waits");
        let _ = gate.recv();
        7
    });
    let blocking_queued = pool.spawn_blocking(|| 8);
    has_started.recv().expect("the blocking closure starts");
    #[cfg_attr(not(feature = "io"), allow(unused_mut))]
    let mut handles = vec![
        (pending, "a pending task"),
        (asleep, "a task asleep for an hour"),
    ];
    #[cfg(feature = "io")]
    let client = {
        use bwos::net::{TcpListener, TcpStream};
        use futures_lite::AsyncReadExt as _;
        let (listener, client, server) = pool
            .block_on(async {
                let listener = TcpListener::bind("127.0.0.1:0").await?;
                let client = TcpStream::connect(listener.local_addr()?).await?;
                let (server, _) = listener.accept().await?;
                Ok::<_, std::io::Error>((listener, client, server))
            })
            .expect("a connected pair on loopback");
        handles.push((
            pool.spawn_task(async move {
                let _ = listener.accept().await;
            }),
            "a task accepting",
        ));
        handles.push((
            pool.spawn_task(async move {
                let mut server = server;
                let mut byte = [0u8];
                let _ = server.read(&mut byte).await;
            }),
            "a task reading",
        ));
        client
    };
    // Let the tasks reach their wait.
    std::thread::sleep(Duration::from_micros(200));
    drop(pool);
    // The drop joined the workers: their thread-local destructors ran.
    // Acquire: pairs with `EndMark::drop`.
    assert_eq!(
        ended.load(Ordering::Acquire),
        2,
        "the pool's drop returned before its workers ended"
    );
    Leftovers {
        handles,
        waiting_for_a_value,
        sender,
        blocking_gate,
        blocking_running,
        blocking_queued,
        #[cfg(feature = "io")]
        client,
    }
}

/// After the drop: every task was cancelled, the queued closure too, the
/// running one finishes once let go; the sender wakes a task of a pool
/// that is gone; the client stream outlives its driver's pool.
fn settle_leftovers(leftovers: Leftovers) {
    for (handle, what) in leftovers.handles {
        assert_cancelled(handle, what);
    }
    leftovers.sender.send(1);
    assert_cancelled(leftovers.waiting_for_a_value, "a task waiting on a channel");
    assert_cancelled(leftovers.blocking_queued, "a queued blocking closure");
    leftovers.blocking_gate.send(()).expect("the closure waits");
    let ran = futures_lite::future::block_on(leftovers.blocking_running);
    assert_eq!(ran.expect("a running closure finishes"), 7);
    #[cfg(feature = "io")]
    {
        // Its pool is gone: reading fails at once, it does not hang.
        use futures_lite::AsyncReadExt as _;
        let mut client = leftovers.client;
        let mut byte = [0u8];
        let read = futures_lite::future::block_on(client.read(&mut byte));
        assert!(read.is_err(), "a read on a dead pool's socket: {read:?}");
    }
}

#[test]
fn ten_thousand_pools_leave_nothing_behind() {
    watchdog("ten_thousand_pools_leave_nothing_behind", || {
        // With feature `tokio-compat`, the first pool starts the process's
        // tokio runtime, which stays (its thread and its epoll
        // descriptors): part of the baseline, not of any pool.
        #[cfg(feature = "tokio-compat")]
        drop(ThreadPoolBuilder::new().num_threads(1).build().unwrap());
        // The baseline: this thread, the harness's, the watchdog's.
        let (threads_before, descriptors_before) = threads_and_descriptors();
        for _ in 0..WARM_UP {
            settle_leftovers(one_pool());
        }
        let settled = settle(threads_before, descriptors_before);
        assert_eq!(
            settled,
            (threads_before, descriptors_before),
            "threads and descriptors after the warm-up pools; threads: {:?}",
            proc::thread_names().unwrap()
        );
        let bytes_before = outstanding();
        let start = Instant::now();
        let mut most_threads = 0;
        for i in 0..POOLS {
            settle_leftovers(one_pool());
            if i % 100 == 0 {
                most_threads = most_threads.max(proc::threads().unwrap());
            }
        }
        let elapsed = start.elapsed();
        let settled = settle(threads_before, descriptors_before);
        let bytes_after = outstanding();
        eprintln!(
            "{POOLS} pools in {elapsed:?}; threads {threads_before} -> {} (at most {most_threads} \
             while they ran), descriptors {descriptors_before} -> {}, bytes outstanding \
             {bytes_before} -> {bytes_after}",
            settled.0, settled.1
        );
        assert_eq!(
            settled.0,
            threads_before,
            "threads left after {POOLS} pools: {:?}",
            proc::thread_names().unwrap()
        );
        assert_eq!(
            settled.1, descriptors_before,
            "descriptors left after {POOLS} pools"
        );
        // A pool's workers are joined at its drop; blocking threads exit
        // after their closure: a few at a time at most, never a pile.
        assert!(
            most_threads <= threads_before + 8,
            "{most_threads} threads while pools came and went (baseline {threads_before})"
        );
        let grown = bytes_after - bytes_before;
        assert!(
            grown.abs() <= MEMORY_BOUND,
            "{grown} bytes more outstanding after {POOLS} pools than before (bound \
             {MEMORY_BOUND}): about {} a pool",
            grown / POOLS as isize
        );
    });
}
