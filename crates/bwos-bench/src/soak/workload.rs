//! The soak's mixed workload on one pool, every part a loop that runs until
//! told to stop:
//!
//! - **http**: a hyper HTTP/1.1 server on `bwos::net` (an accept loop, a
//!   task per connection) and `connections` client tasks on the same pool,
//!   each opening a connection, sending 1 to 32 `GET /` on it, checking the
//!   answers and closing it, then opening the next. One op: one answer.
//! - **fork/join**: a thread outside the pool that `install`s a `join`
//!   recursion (fib 18) and a `scope` of 256 spawns, again and again. One
//!   op: one round, its results checked.
//! - **worklist**: a thread that runs `ThreadPool::worklist` over a binary
//!   tree of 4,095 items, again and again. One op: one run, its count
//!   checked.
//! - **timers**: batches of 64 tasks (a `JoinSet`) that sleep 0 to 20 ms,
//!   then await a `timeout` that fires and one that does not; and a task
//!   ticking an `interval` of 5 ms. One op: one checked task or tick.
//! - **blocking**: a task that runs 4 `spawn_blocking` closures at a time
//!   (one sleeps 1 ms) and awaits them. One op: one checked closure.
//! - **dropped**: a task that, each round, detaches 16 tasks (handle
//!   dropped), aborts 16 tasks asleep on a far timer, drops a `JoinSet` of
//!   16 forever-pending tasks and detaches a task blocked on a channel
//!   whose sender it then drops. One op: one task seen to end.
//!
//! Every future spawned here carries a guard that counts it live until it
//! is dropped (finished, aborted or cancelled): the live-task figure the
//! pool does not keep itself. Errors never panic: each is counted under its
//! part, and the first few are kept with their message.

use std::future::Future;
use std::net::SocketAddr;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bwos::ThreadPool;
use bwos::task::{JoinHandle, JoinSet};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Serialize;

/// The parts of the workload, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Http,
    ForkJoin,
    Worklist,
    Timers,
    Blocking,
    Dropped,
}

impl Part {
    /// Every part, in table order.
    pub const ALL: [Part; 6] = [
        Part::Http,
        Part::ForkJoin,
        Part::Worklist,
        Part::Timers,
        Part::Blocking,
        Part::Dropped,
    ];

    /// The part's name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Part::Http => "http",
            Part::ForkJoin => "fork/join",
            Part::Worklist => "worklist",
            Part::Timers => "timers",
            Part::Blocking => "blocking",
            Part::Dropped => "dropped",
        }
    }
}

/// Tasks of one timer batch.
pub const TIMER_BATCH: usize = 64;
/// Tasks each round of the dropped part spawns.
pub const DROPPED_ROUND: usize = 16 * 3 + 1;
/// The most requests a client sends on one connection.
const MAX_REQUESTS_PER_CONNECTION: u64 = 32;
/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);
/// Error messages kept (the rest are only counted).
const KEPT_MESSAGES: usize = 20;
/// What the server answers (`crate::http::server::handle`).
const HELLO: &[u8] = b"Hello, world!\n";

/// What the parts share: the stop flag, the counters, the kept errors.
pub struct Shared {
    stop: AtomicBool,
    ops: [AtomicU64; Part::ALL.len()],
    errors: [AtomicU64; Part::ALL.len()],
    live: AtomicI64,
    messages: Mutex<Vec<String>>,
}

/// Per part: operations completed and errors, at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub ops: [u64; Part::ALL.len()],
    pub errors: [u64; Part::ALL.len()],
}

impl Counts {
    /// Errors of all parts.
    pub fn total_errors(&self) -> u64 {
        self.errors.iter().sum()
    }
}

impl Shared {
    fn new() -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            ops: Default::default(),
            errors: Default::default(),
            live: AtomicI64::new(0),
            messages: Mutex::new(Vec::new()),
        }
    }

    fn stopping(&self) -> bool {
        // Relaxed: the flag only ends loops; nothing is published with it
        // (the counters are read after the loops are joined or awaited).
        self.stop.load(Ordering::Relaxed)
    }

    fn op(&self, part: Part, n: u64) {
        // Relaxed: a statistic; the sampler needs some recent value.
        self.ops[part as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts an error of `part` and keeps its message if few are kept.
    pub fn error(&self, part: Part, message: impl std::fmt::Display) {
        // Relaxed: a statistic, as `op`.
        self.errors[part as usize].fetch_add(1, Ordering::Relaxed);
        let mut messages = self
            .messages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if messages.len() < KEPT_MESSAGES {
            messages.push(format!("{}: {message}", part.name()));
        }
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        // Relaxed loads: statistics (see `op`).
        Counts {
            ops: std::array::from_fn(|i| self.ops[i].load(Ordering::Relaxed)),
            errors: std::array::from_fn(|i| self.errors[i].load(Ordering::Relaxed)),
        }
    }

    /// Futures spawned by the workload and not yet dropped.
    pub fn live_tasks(&self) -> i64 {
        // Relaxed: a statistic; increments and decrements of one guard are
        // ordered by the task's own execution.
        self.live.load(Ordering::Relaxed)
    }

    /// The first error messages.
    pub fn messages(&self) -> Vec<String> {
        self.messages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `future`, counted live from now until it is dropped.
    fn tracked<F: Future>(self: &Arc<Self>, future: F) -> impl Future<Output = F::Output> + use<F> {
        let guard = Live::new(Arc::clone(self));
        async move {
            let _guard = guard;
            future.await
        }
    }
}

/// Counts one live future: created with it, dropped with it.
struct Live(Arc<Shared>);

impl Live {
    fn new(shared: Arc<Shared>) -> Live {
        // Relaxed: a statistic (see `Shared::live_tasks`).
        shared.live.fetch_add(1, Ordering::Relaxed);
        Live(shared)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Relaxed: as in `new`.
        self.0.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A small xorshift generator: the workload's varied sizes, reproducible.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// The workload running on a pool.
pub struct Running {
    pool: Arc<ThreadPool>,
    shared: Arc<Shared>,
    loops: Vec<(Part, JoinHandle<()>)>,
    threads: Vec<(Part, thread::JoinHandle<()>)>,
}

impl Running {
    /// Starts every part on `pool`, with `connections` HTTP clients.
    pub fn start(pool: Arc<ThreadPool>, connections: u32) -> std::io::Result<Running> {
        let shared = Arc::new(Shared::new());
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let mut loops = Vec::new();
        let spawn = |part: Part, future: BoxedLoop| (part, pool.spawn_task(shared.tracked(future)));
        loops.push(spawn(
            Part::Http,
            Box::pin(accept_loop(listener, Arc::clone(&shared))) as BoxedLoop,
        ));
        for client in 0..connections {
            let future = client_loop(address, Arc::clone(&shared), u64::from(client));
            loops.push(spawn(Part::Http, Box::pin(future)));
        }
        loops.push(spawn(
            Part::Timers,
            Box::pin(timers_loop(Arc::clone(&shared))),
        ));
        loops.push(spawn(
            Part::Timers,
            Box::pin(interval_loop(Arc::clone(&shared))),
        ));
        loops.push(spawn(
            Part::Blocking,
            Box::pin(blocking_loop(Arc::clone(&shared))),
        ));
        loops.push(spawn(
            Part::Dropped,
            Box::pin(dropped_loop(Arc::clone(&shared))),
        ));
        let mut threads = Vec::new();
        for (part, body) in [
            (Part::ForkJoin, fork_join_loop as fn(&ThreadPool, &Shared)),
            (Part::Worklist, worklist_loop),
        ] {
            let (pool, shared) = (Arc::clone(&pool), Arc::clone(&shared));
            let thread = thread::Builder::new()
                .name(format!("soak {}", part.name()))
                .spawn(move || body(&pool, &shared))?;
            threads.push((part, thread));
        }
        Ok(Running {
            pool,
            shared,
            loops,
            threads,
        })
    }

    /// The parts' shared counters.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Tells every part to stop and waits up to `grace` for the loops, the
    /// threads and every task they spawned to end. Returns what did not
    /// (empty if all ended); the pool is not dropped here.
    pub fn stop(self, grace: Duration) -> Vec<String> {
        let Running {
            pool,
            shared,
            loops,
            threads,
        } = self;
        // Relaxed: see `Shared::stopping`.
        shared.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + grace;
        let mut stuck = Vec::new();
        let loops_shared = Arc::clone(&shared);
        let all_ended = async move {
            for (part, handle) in loops {
                if let Err(error) = handle.await {
                    loops_shared.error(part, format!("a loop task ended with {error}"));
                }
            }
        };
        // The timer is made inside `block_on`, so that it is this pool's:
        // made here, outside any pool, it would start the global pool.
        let awaited = pool.block_on(async move { bwos::time::timeout(grace, all_ended).await });
        if awaited.is_err() {
            stuck.push(format!("loop tasks still running {grace:?} after stop"));
        }
        for (part, thread) in threads {
            while !thread.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            if !thread.is_finished() {
                stuck.push(format!(
                    "the {} thread still running after stop",
                    part.name()
                ));
                continue;
            }
            if thread.join().is_err() {
                shared.error(part, "its thread panicked");
            }
        }
        // Detached tasks finish on their own: give them until the deadline.
        while shared.live_tasks() != 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        stuck
    }
}

type BoxedLoop = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// The text of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = match bwos::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => return shared.error(Part::Http, format!("listener: {error}")),
    };
    while !shared.stopping() {
        match bwos::time::timeout(ACCEPT_POLL, listener.accept()).await {
            Err(_elapsed) => {}
            Ok(Ok((stream, _))) => {
                let _ = stream.set_nodelay(true);
                let serve = serve_connection(stream, Arc::clone(&shared));
                drop(bwos::task::spawn(shared.tracked(serve)));
            }
            Ok(Err(error)) => {
                shared.error(Part::Http, format!("accept: {error}"));
                bwos::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn serve_connection(stream: bwos::net::TcpStream, shared: Arc<Shared>) {
    let served = http1::Builder::new()
        .serve_connection(
            TokioIo::new(stream),
            service_fn(crate::http::server::handle),
        )
        .await;
    if let Err(error) = served {
        shared.error(Part::Http, format!("server connection: {error}"));
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn client_loop(address: SocketAddr, shared: Arc<Shared>, seed: u64) {
    let mut rng = Rng::new(seed);
    while !shared.stopping() {
        let requests = 1 + rng.below(MAX_REQUESTS_PER_CONNECTION);
        if let Err(error) = client_connection(address, requests, &shared).await {
            shared.error(Part::Http, format!("client: {error}"));
            // Do not spin on a server that refuses.
            bwos::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// One connection: `requests` requests (fewer if told to stop), then close.
async fn client_connection(
    address: SocketAddr,
    requests: u64,
    shared: &Arc<Shared>,
) -> Result<(), Failure> {
    let stream = bwos::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let connection = bwos::task::spawn(shared.tracked(connection));
    let result = async {
        for _ in 0..requests {
            if shared.stopping() {
                break;
            }
            let request = Request::get("/")
                .header(hyper::header::HOST, "127.0.0.1")
                .body(Empty::<Bytes>::new())?;
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            if !status.is_success() || body != HELLO {
                return Err(format!("answer {status} {body:?}").into());
            }
            shared.op(Part::Http, 1);
        }
        Ok::<(), Failure>(())
    }
    .await;
    // Closing: the connection task ends once the sender is gone.
    drop(sender);
    let closed = connection.await;
    result?;
    closed??;
    Ok(())
}

async fn timers_loop(shared: Arc<Shared>) {
    let mut rng = Rng::new(0x7153);
    while !shared.stopping() {
        let mut batch = JoinSet::new();
        for _ in 0..TIMER_BATCH {
            let wait = Duration::from_micros(rng.below(20_000));
            batch.spawn(shared.tracked(async move {
                bwos::time::sleep(wait).await;
                let never = std::future::pending::<()>();
                let fired = bwos::time::timeout(Duration::from_millis(1), never)
                    .await
                    .is_err();
                let kept = bwos::time::timeout(Duration::from_secs(1), async { 7 }).await;
                fired && matches!(kept, Ok(7))
            }));
        }
        while let Some(outcome) = batch.join_next().await {
            match outcome {
                Ok(true) => shared.op(Part::Timers, 1),
                Ok(false) => shared.error(Part::Timers, "a timeout fired early or not at all"),
                Err(error) => shared.error(Part::Timers, format!("a timer task: {error}")),
            }
        }
    }
}

async fn interval_loop(shared: Arc<Shared>) {
    let mut interval = bwos::time::interval(Duration::from_millis(5));
    while !shared.stopping() {
        interval.tick().await;
        shared.op(Part::Timers, 1);
    }
}

async fn blocking_loop(shared: Arc<Shared>) {
    while !shared.stopping() {
        let handles: Vec<_> = (0..4u64)
            .map(|i| {
                bwos::task::spawn_blocking(move || {
                    if i == 0 {
                        thread::sleep(Duration::from_millis(1));
                    }
                    std::hint::black_box(i * 3)
                })
            })
            .collect();
        for (i, handle) in (0..4u64).zip(handles) {
            match handle.await {
                Ok(value) if value == i * 3 => shared.op(Part::Blocking, 1),
                Ok(value) => shared.error(Part::Blocking, format!("{i} * 3 came back {value}")),
                Err(error) => shared.error(Part::Blocking, format!("a closure: {error}")),
            }
        }
    }
}

async fn dropped_loop(shared: Arc<Shared>) {
    while !shared.stopping() {
        // Detached at once; each counts when it ends.
        for _ in 0..16 {
            let counted = Arc::clone(&shared);
            drop(bwos::task::spawn(shared.tracked(async move {
                bwos::task::yield_now().await;
                bwos::task::yield_now().await;
                counted.op(Part::Dropped, 1);
            })));
        }
        // Aborted while asleep on a timer far away.
        let sleepers: Vec<_> = (0..16)
            .map(|_| {
                let far = bwos::time::sleep(Duration::from_secs(3600));
                bwos::task::spawn(shared.tracked(far))
            })
            .collect();
        bwos::task::yield_now().await;
        for sleeper in &sleepers {
            sleeper.abort();
        }
        for sleeper in sleepers {
            match sleeper.await {
                Err(error) if error.is_cancelled() => shared.op(Part::Dropped, 1),
                Err(error) => shared.error(Part::Dropped, format!("an aborted task: {error}")),
                Ok(()) => shared.error(Part::Dropped, "an aborted sleeper woke"),
            }
        }
        // A set dropped with its tasks pending (dropping it aborts them).
        let mut set = JoinSet::new();
        for _ in 0..16 {
            set.spawn(shared.tracked(std::future::pending::<()>()));
        }
        bwos::task::yield_now().await;
        drop(set);
        shared.op(Part::Dropped, 16);
        // Detached while blocked on a channel; its sender goes away.
        let (sender, receiver) = futures_channel::oneshot::channel::<()>();
        let counted = Arc::clone(&shared);
        drop(bwos::task::spawn(shared.tracked(async move {
            if receiver.await.is_err() {
                counted.op(Part::Dropped, 1);
            } else {
                counted.error(Part::Dropped, "a dropped sender sent");
            }
        })));
        drop(sender);
        bwos::time::sleep(Duration::from_millis(1)).await;
    }
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn scope_sum(n: u64) -> u64 {
    let total = AtomicU64::new(0);
    bwos::scope(|scope| {
        for i in 0..n {
            let total = &total;
            // Relaxed: the scope's end orders every add before the load.
            scope.spawn(move |_| {
                total.fetch_add(i, Ordering::Relaxed);
            });
        }
    });
    total.into_inner()
}

fn fork_join_loop(pool: &ThreadPool, shared: &Shared) {
    while !shared.stopping() {
        let round = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| bwos::join(|| fib(18), || scope_sum(256)))
        }));
        match round {
            Ok((2584, 32_640)) => shared.op(Part::ForkJoin, 1),
            Ok(wrong) => shared.error(Part::ForkJoin, format!("fib 18, sum 0..256: {wrong:?}")),
            Err(payload) => shared.error(Part::ForkJoin, panic_message(&*payload)),
        }
        // Leave the workers idle now and then: sleeping and waking is part
        // of what runs for hours.
        thread::sleep(Duration::from_millis(1));
    }
}

fn worklist_loop(pool: &ThreadPool, shared: &Shared) {
    while !shared.stopping() {
        let processed = AtomicU64::new(0);
        let run = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.worklist([0u32], |depth, sink| {
                // Relaxed: the run's end orders every add before the load.
                processed.fetch_add(1, Ordering::Relaxed);
                if depth < 11 {
                    sink.push(depth + 1);
                    sink.push(depth + 1);
                }
            });
        }));
        match run {
            Ok(()) if processed.into_inner() == 4095 => shared.op(Part::Worklist, 1),
            Ok(()) => shared.error(Part::Worklist, "a run missed or repeated items"),
            Err(payload) => shared.error(Part::Worklist, panic_message(&*payload)),
        }
        thread::sleep(Duration::from_millis(1));
    }
}
