//! The soak's mixed workload on one pool, every part a loop that runs until
//! told to stop:
//!
//! - **http**: a hyper HTTP/1.1 server on `bwos::net` (an accept loop
//!   that ends after the clients, a task per connection) and `connections`
//!   client tasks on the same pool,
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
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bwos::ThreadPool;
use bwos::task::{JoinHandle, JoinSet};
use bwos_testkit::panic_message;
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

/// What a tracked future is: the live count is kept per kind, so that a
/// stop that leaves tasks behind says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    AcceptLoop,
    ClientLoop,
    ClientConnection,
    ServerConnection,
    TimersLoop,
    TimerTask,
    IntervalLoop,
    BlockingLoop,
    DroppedLoop,
    Detached,
    Sleeper,
    SetMember,
    ChannelWaiter,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 13] = [
        Kind::AcceptLoop,
        Kind::ClientLoop,
        Kind::ClientConnection,
        Kind::ServerConnection,
        Kind::TimersLoop,
        Kind::TimerTask,
        Kind::IntervalLoop,
        Kind::BlockingLoop,
        Kind::DroppedLoop,
        Kind::Detached,
        Kind::Sleeper,
        Kind::SetMember,
        Kind::ChannelWaiter,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::AcceptLoop => "accept loop",
            Kind::ClientLoop => "http client loop",
            Kind::ClientConnection => "client connection",
            Kind::ServerConnection => "server connection",
            Kind::TimersLoop => "timers loop",
            Kind::TimerTask => "timer task",
            Kind::IntervalLoop => "interval loop",
            Kind::BlockingLoop => "blocking loop",
            Kind::DroppedLoop => "dropped loop",
            Kind::Detached => "detached task",
            Kind::Sleeper => "aborted sleeper",
            Kind::SetMember => "dropped set's task",
            Kind::ChannelWaiter => "channel waiter",
        }
    }
}

/// Where an HTTP client is, for a stop that finds it still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum ClientStep {
    Connecting,
    Handshake,
    AwaitingReady,
    AwaitingResponse,
    ReadingBody,
    AwaitingConnectionEnd,
    BackingOff,
    Between,
}

impl ClientStep {
    const ALL: [ClientStep; 8] = [
        ClientStep::Connecting,
        ClientStep::Handshake,
        ClientStep::AwaitingReady,
        ClientStep::AwaitingResponse,
        ClientStep::ReadingBody,
        ClientStep::AwaitingConnectionEnd,
        ClientStep::BackingOff,
        ClientStep::Between,
    ];

    fn name(self) -> &'static str {
        match self {
            ClientStep::Connecting => "connecting",
            ClientStep::Handshake => "in the handshake",
            ClientStep::AwaitingReady => "awaiting the sender's readiness",
            ClientStep::AwaitingResponse => "awaiting a response",
            ClientStep::ReadingBody => "reading a body",
            ClientStep::AwaitingConnectionEnd => "awaiting its connection task's end",
            ClientStep::BackingOff => "backing off after an error",
            ClientStep::Between => "between connections",
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
    /// Live tracked futures per [`Kind`].
    live: [AtomicI64; Kind::ALL.len()],
    /// Each HTTP client's [`ClientStep`].
    client_steps: Vec<AtomicU8>,
    /// Answers each HTTP client received: a client whose count stands
    /// still over an interval is stuck.
    client_answers: Vec<AtomicU64>,
    /// The local port of each HTTP client's current connection (0: none),
    /// to find its sockets in `/proc/net/tcp` when it is stuck.
    client_ports: Vec<AtomicU16>,
    /// HTTP client loops not yet ended: the accept loop outlives them.
    clients_running: AtomicUsize,
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
    fn new(connections: u32) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            ops: Default::default(),
            errors: Default::default(),
            live: Default::default(),
            client_steps: (0..connections)
                .map(|_| AtomicU8::new(ClientStep::Between as u8))
                .collect(),
            client_answers: (0..connections).map(|_| AtomicU64::new(0)).collect(),
            client_ports: (0..connections).map(|_| AtomicU16::new(0)).collect(),
            clients_running: AtomicUsize::new(connections as usize),
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
        self.live_by_kind().iter().map(|(_, n)| n).sum()
    }

    /// The kinds with live futures, and how many: "server connection 5".
    pub fn live_by_kind(&self) -> Vec<(Kind, i64)> {
        // Relaxed: a statistic; increments and decrements of one guard are
        // ordered by the task's own execution.
        Kind::ALL
            .iter()
            .map(|&kind| (kind, self.live[kind as usize].load(Ordering::Relaxed)))
            .filter(|&(_, n)| n != 0)
            .collect()
    }

    /// Whether the accept loop may end: told to stop, and every client
    /// loop has ended. A listener closed while a client still connects
    /// resets that connection (an error the run would count).
    fn server_may_stop(&self) -> bool {
        // Acquire: pairs with the Release decrement at a client loop's
        // end (its last connection was accepted and closed before).
        self.stopping() && self.clients_running.load(Ordering::Acquire) == 0
    }

    /// Client `client` is at `step` now.
    fn client_step(&self, client: u64, step: ClientStep) {
        // Relaxed: read only for a report, after the stop's grace.
        self.client_steps[client as usize].store(step as u8, Ordering::Relaxed);
    }

    /// Answers each HTTP client has received so far.
    pub fn client_answers(&self) -> Vec<u64> {
        // Relaxed: a statistic, as `op`.
        self.client_answers
            .iter()
            .map(|answers| answers.load(Ordering::Relaxed))
            .collect()
    }

    /// What HTTP client `client` is doing, for a report: its step and the
    /// kernel's view of its connection's sockets (both ends: state and
    /// bytes queued to send and to read), which tells a lost wake-up
    /// (bytes waiting to be read by a task that sleeps) from a peer that
    /// never sent.
    pub fn client_report(&self, client: usize) -> String {
        // Relaxed: read for a report; the port was stored before the
        // connection was used.
        let port = self.client_ports[client].load(Ordering::Relaxed);
        let sockets = if port == 0 {
            "no connection".to_string()
        } else {
            let lines = bwos_testkit::proc::tcp_sockets_on_port(port).unwrap_or_default();
            if lines.is_empty() {
                format!("port {port}: no socket in /proc/net/tcp")
            } else {
                lines.join("; ")
            }
        };
        format!(
            "http client {client} ({}; {sockets})",
            self.client_at(client)
        )
    }

    /// Where client `client` is.
    fn client_at(&self, client: usize) -> &'static str {
        // Relaxed: as in `client_step`.
        let step = self.client_steps[client].load(Ordering::Relaxed);
        ClientStep::ALL
            .iter()
            .find(|s| **s as u8 == step)
            .map_or("?", |s| s.name())
    }

    /// The first error messages.
    pub fn messages(&self) -> Vec<String> {
        self.messages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `future`, counted live as a `kind` from now until it is dropped.
    fn tracked<F: Future>(
        self: &Arc<Self>,
        kind: Kind,
        future: F,
    ) -> impl Future<Output = F::Output> + use<F> {
        let guard = Live::new(Arc::clone(self), kind);
        async move {
            let _guard = guard;
            future.await
        }
    }
}

/// Counts one live future of a kind: created with it, dropped with it.
struct Live(Arc<Shared>, Kind);

impl Live {
    fn new(shared: Arc<Shared>, kind: Kind) -> Live {
        // Relaxed: a statistic (see `Shared::live_by_kind`).
        shared.live[kind as usize].fetch_add(1, Ordering::Relaxed);
        Live(shared, kind)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Relaxed: as in `new`.
        self.0.live[self.1 as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

/// One loop task of the workload: its part, its name in reports ("http
/// client 3") and its handle.
struct Loop {
    part: Part,
    name: String,
    /// The HTTP client's index, for its step in a report.
    client: Option<usize>,
    handle: JoinHandle<()>,
}

/// The workload running on a pool.
pub struct Running {
    pool: Arc<ThreadPool>,
    shared: Arc<Shared>,
    loops: Vec<Loop>,
    threads: Vec<(Part, thread::JoinHandle<()>)>,
}

impl Running {
    /// Starts every part on `pool`, with `connections` HTTP clients.
    pub fn start(pool: Arc<ThreadPool>, connections: u32) -> std::io::Result<Running> {
        let shared = Arc::new(Shared::new(connections));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let mut loops = Vec::new();
        let spawn = |part: Part, kind: Kind, name: String, future: BoxedLoop| Loop {
            part,
            name,
            client: None,
            handle: pool.spawn_task(shared.tracked(kind, future)),
        };
        loops.push(spawn(
            Part::Http,
            Kind::AcceptLoop,
            "accept".into(),
            Box::pin(accept_loop(listener, Arc::clone(&shared))),
        ));
        for client in 0..connections {
            let future = client_loop(address, Arc::clone(&shared), u64::from(client));
            let name = format!("http client {client}");
            let mut client_loop = spawn(Part::Http, Kind::ClientLoop, name, Box::pin(future));
            client_loop.client = Some(client as usize);
            loops.push(client_loop);
        }
        let others: [(Part, Kind, &str, BoxedLoop); 4] = [
            (
                Part::Timers,
                Kind::TimersLoop,
                "timers",
                Box::pin(timers_loop(Arc::clone(&shared))),
            ),
            (
                Part::Timers,
                Kind::IntervalLoop,
                "interval",
                Box::pin(interval_loop(Arc::clone(&shared))),
            ),
            (
                Part::Blocking,
                Kind::BlockingLoop,
                "blocking",
                Box::pin(blocking_loop(Arc::clone(&shared))),
            ),
            (
                Part::Dropped,
                Kind::DroppedLoop,
                "dropped",
                Box::pin(dropped_loop(Arc::clone(&shared))),
            ),
        ];
        for (part, kind, name, future) in others {
            loops.push(spawn(part, kind, name.into(), future));
        }
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
    /// threads and every task they spawned to end. Returns what did not,
    /// by name (empty if all ended); the pool is not dropped here.
    pub fn stop(self, grace: Duration) -> Vec<String> {
        let Running {
            pool,
            shared,
            mut loops,
            threads,
        } = self;
        // Relaxed: see `Shared::stopping`.
        shared.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + grace;
        let mut stuck = Vec::new();
        let all_ended = async {
            for task in &mut loops {
                if let Err(error) = (&mut task.handle).await {
                    shared.error(task.part, format!("{} ended with {error}", task.name));
                }
            }
        };
        // The timer is made inside `block_on`, so that it is this pool's:
        // made here, outside any pool, it would start the global pool.
        let awaited = pool.block_on(async move { bwos::time::timeout(grace, all_ended).await });
        if awaited.is_err() {
            let running: Vec<String> = loops
                .iter()
                .filter(|task| !task.handle.is_finished())
                .map(|task| match task.client {
                    Some(client) => shared.client_report(client),
                    None => task.name.clone(),
                })
                .collect();
            stuck.push(format!(
                "loop tasks still running {grace:?} after stop: {}",
                running.join(", ")
            ));
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

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = match bwos::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => return shared.error(Part::Http, format!("listener: {error}")),
    };
    while !shared.server_may_stop() {
        match bwos::time::timeout(ACCEPT_POLL, listener.accept()).await {
            Err(_elapsed) => {}
            Ok(Ok((stream, _))) => {
                let _ = stream.set_nodelay(true);
                let serve = serve_connection(stream, Arc::clone(&shared));
                drop(bwos::task::spawn(
                    shared.tracked(Kind::ServerConnection, serve),
                ));
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

async fn client_loop(address: SocketAddr, shared: Arc<Shared>, client: u64) {
    let mut rng = fastrand::Rng::with_seed(client);
    while !shared.stopping() {
        let requests = 1 + rng.u64(..MAX_REQUESTS_PER_CONNECTION);
        if let Err(error) = client_connection(address, requests, &shared, client).await {
            shared.error(Part::Http, format!("client: {error}"));
            // Do not spin on a server that refuses.
            shared.client_step(client, ClientStep::BackingOff);
            bwos::time::sleep(Duration::from_millis(10)).await;
        }
        shared.client_step(client, ClientStep::Between);
    }
    // Release: pairs with the Acquire load in `server_may_stop`.
    shared.clients_running.fetch_sub(1, Ordering::Release);
}

/// One connection of client `client`: `requests` requests (fewer if told
/// to stop), then close.
async fn client_connection(
    address: SocketAddr,
    requests: u64,
    shared: &Arc<Shared>,
    client: u64,
) -> Result<(), Failure> {
    let step = |step| shared.client_step(client, step);
    step(ClientStep::Connecting);
    let stream = bwos::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    // Relaxed: read only for a report (`client_report`).
    shared.client_ports[client as usize].store(stream.local_addr()?.port(), Ordering::Relaxed);
    step(ClientStep::Handshake);
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let connection = bwos::task::spawn(shared.tracked(Kind::ClientConnection, connection));
    let result = async {
        for _ in 0..requests {
            if shared.stopping() {
                break;
            }
            let request = Request::get("/")
                .header(hyper::header::HOST, "127.0.0.1")
                .body(Empty::<Bytes>::new())?;
            step(ClientStep::AwaitingReady);
            sender.ready().await?;
            step(ClientStep::AwaitingResponse);
            let response = sender.send_request(request).await?;
            let status = response.status();
            step(ClientStep::ReadingBody);
            let body = response.into_body().collect().await?.to_bytes();
            if !status.is_success() || body != HELLO {
                return Err(format!("answer {status} {body:?}").into());
            }
            shared.op(Part::Http, 1);
            // Relaxed: a statistic, as `op`.
            shared.client_answers[client as usize].fetch_add(1, Ordering::Relaxed);
        }
        Ok::<(), Failure>(())
    }
    .await;
    // Closing: the connection task ends once the sender is gone.
    drop(sender);
    step(ClientStep::AwaitingConnectionEnd);
    let closed = connection.await;
    result?;
    closed??;
    Ok(())
}

async fn timers_loop(shared: Arc<Shared>) {
    let mut rng = fastrand::Rng::with_seed(0x7153);
    while !shared.stopping() {
        let mut batch = JoinSet::new();
        for _ in 0..TIMER_BATCH {
            let wait = Duration::from_micros(rng.u64(..20_000));
            batch.spawn(shared.tracked(Kind::TimerTask, async move {
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
            drop(bwos::task::spawn(shared.tracked(
                Kind::Detached,
                async move {
                    bwos::task::yield_now().await;
                    bwos::task::yield_now().await;
                    counted.op(Part::Dropped, 1);
                },
            )));
        }
        // Aborted while asleep on a timer far away.
        let sleepers: Vec<_> = (0..16)
            .map(|_| {
                let far = bwos::time::sleep(Duration::from_secs(3600));
                bwos::task::spawn(shared.tracked(Kind::Sleeper, far))
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
            set.spawn(shared.tracked(Kind::SetMember, std::future::pending::<()>()));
        }
        bwos::task::yield_now().await;
        drop(set);
        shared.op(Part::Dropped, 16);
        // Detached while blocked on a channel; its sender goes away.
        let (sender, receiver) = futures_channel::oneshot::channel::<()>();
        let counted = Arc::clone(&shared);
        drop(bwos::task::spawn(shared.tracked(
            Kind::ChannelWaiter,
            async move {
                if receiver.await.is_err() {
                    counted.op(Part::Dropped, 1);
                } else {
                    counted.error(Part::Dropped, "a dropped sender sent");
                }
            },
        )));
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
            Err(payload) => shared.error(Part::ForkJoin, panic_message(&payload)),
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
            Err(payload) => shared.error(Part::Worklist, panic_message(&payload)),
        }
        thread::sleep(Duration::from_millis(1));
    }
}
