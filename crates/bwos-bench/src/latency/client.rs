//! The mixed server's load generator: one thread of this process running
//! a hyper client on tokio's current-thread runtime (the same client for
//! every server), with two kinds of load at once:
//!
//! - **light** requests (`GET /`) **open loop**: dispatched at a fixed
//!   rate (`--light-rate`) whatever the server does, each on an idle
//!   keep-alive connection or, when none is idle, a new one (up to
//!   [`MAX_LIGHT_CONNECTIONS`]; beyond that a request waits for one).
//!   Its latency runs from its dispatch to the end of its response, so
//!   waiting for a connection counts. A server that stalls therefore
//!   shows as latency of the requests that arrive meanwhile, not as
//!   fewer requests sent. (A closed-loop client, wrk included, stops
//!   sending on a connection whose response is late, so a stall costs it
//!   one slow sample per connection and hides the rest; wrk also gives
//!   one latency distribution per run, for every request class at once.)
//! - **heavy** requests (`GET /heavy`) **closed loop** on
//!   `--heavy-connections` connections, each sending the next as soon as
//!   the last is answered: enough to keep the server's cores busy, so
//!   their rate is the server's heavy throughput, measured under the
//!   light load.
//!
//! Requests dispatched (light) or answered (heavy) during the warm-up
//! are not counted. The client competes with the server for the
//! machine's cores, as any loopback load generator does; its own CPU
//! time is taken out of the server's.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bwos_testkit::proc;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::sync::Notify;

use super::{Metrics, percentile};

/// Light connections at most; then a light request waits for one.
pub const MAX_LIGHT_CONNECTIONS: usize = 256;
/// How long after the load the last answers may take; requests still
/// unanswered then count as failed (and are dropped).
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// Light connections opened before the load starts.
const PREOPENED: usize = 16;

/// What load to generate.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Light requests per second.
    pub light_rate: f64,
    /// Connections sending heavy requests back to back.
    pub heavy_connections: u32,
    /// Load before the counted window.
    pub warmup: Duration,
    /// The counted window.
    pub window: Duration,
}

/// What the client saw.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Latencies of the light requests dispatched in the window, ms.
    light_ms: Vec<f64>,
    /// Latencies of the heavy requests answered in the window, ms.
    heavy_ms: Vec<f64>,
    /// Failed requests and connections, and error responses.
    errors: u64,
    window: Duration,
    /// The server's CPU time during the window: this process's less the
    /// client thread's.
    server_cpu: Duration,
}

impl LoadReport {
    /// The mixed server's metrics.
    pub fn metrics(mut self) -> Metrics {
        let seconds = self.window.as_secs_f64();
        let (light, heavy) = (self.light_ms.len() as f64, self.heavy_ms.len() as f64);
        vec![
            ("light_p50_ms", percentile(&mut self.light_ms, 0.50)),
            ("light_p99_ms", percentile(&mut self.light_ms, 0.99)),
            ("light_per_s", light / seconds),
            ("heavy_per_s", heavy / seconds),
            ("heavy_p50_ms", percentile(&mut self.heavy_ms, 0.50)),
            ("heavy_share_pct", 100.0 * heavy / (light + heavy).max(1.0)),
            (
                "cpu_ms_per_request",
                self.server_cpu.as_secs_f64() * 1e3 / (light + heavy).max(1.0),
            ),
            ("errors", self.errors as f64),
        ]
    }
}

/// The client's shared state (one thread: `Rc<RefCell<..>>`).
#[derive(Default)]
struct State {
    idle: Vec<SendRequest<Empty<Bytes>>>,
    /// Light connections open, idle or busy.
    open: usize,
    report: LoadReport,
}

type Shared = Rc<RefCell<State>>;
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Loads the server at `address` as `plan` says, from a thread of its
/// own; returns when every request dispatched has been answered.
pub fn load(address: SocketAddr, plan: &LoadPlan) -> std::io::Result<LoadReport> {
    let plan = plan.clone();
    std::thread::Builder::new()
        .name("latency-client".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, drive(address, plan))
        })?
        .join()
        .map_err(|_| std::io::Error::other("the latency client panicked"))?
}

/// CPU ticks of (this process, this thread).
fn cpu_now() -> std::io::Result<(u64, u64)> {
    Ok((
        proc::cpu_ticks(Path::new("/proc/self/stat"))?,
        proc::cpu_ticks(Path::new("/proc/thread-self/stat"))?,
    ))
}

async fn drive(address: SocketAddr, plan: LoadPlan) -> std::io::Result<LoadReport> {
    let state: Shared = Rc::default();
    let returned = Rc::new(Notify::new());
    for _ in 0..PREOPENED {
        let sender = connect(address)
            .await
            .map_err(|e| std::io::Error::other(format!("latency client: {e}")))?;
        let mut state = state.borrow_mut();
        state.idle.push(sender);
        state.open += 1;
    }
    let start = Instant::now();
    let window_start = start + plan.warmup;
    let deadline = window_start + plan.window;
    let heavy: Vec<_> = (0..plan.heavy_connections)
        .map(|_| {
            tokio::task::spawn_local(heavy_loop(
                address,
                window_start,
                deadline,
                Rc::clone(&state),
            ))
        })
        .collect();
    let cpu = tokio::task::spawn_local(async move {
        tokio::time::sleep_until(window_start.into()).await;
        let before = cpu_now()?;
        tokio::time::sleep_until(deadline.into()).await;
        let after = cpu_now()?;
        let process = after.0.saturating_sub(before.0);
        let client = after.1.saturating_sub(before.1);
        // USER_HZ: 100 ticks per second.
        Ok::<_, std::io::Error>(Duration::from_millis(process.saturating_sub(client) * 10))
    });
    // The default missed-tick behaviour (burst) keeps the rate when the
    // client thread runs late: what was due goes out at once.
    let mut schedule = tokio::time::interval_at(
        start.into(),
        Duration::from_secs_f64(1.0 / plan.light_rate.max(0.001)),
    );
    let mut light = Vec::new();
    loop {
        schedule.tick().await;
        let dispatched = Instant::now();
        if dispatched >= deadline {
            break;
        }
        light.push(tokio::task::spawn_local(light_request(
            address,
            dispatched,
            dispatched >= window_start,
            Rc::clone(&state),
            Rc::clone(&returned),
        )));
    }
    // A server that stopped answering must not hang the benchmark: what
    // is unanswered after the grace period counts as failed.
    let give_up = tokio::time::Instant::from(deadline + DRAIN_LIMIT);
    for task in light.into_iter().chain(heavy) {
        if tokio::time::timeout_at(give_up, task).await.is_err() {
            state.borrow_mut().report.errors += 1;
        }
    }
    let server_cpu = cpu.await.map_err(std::io::Error::other)??;
    // Closing the idle connections ends their server tasks.
    let mut state = state.borrow_mut();
    state.idle.clear();
    let mut report = std::mem::take(&mut state.report);
    report.window = plan.window;
    report.server_cpu = server_cpu;
    Ok(report)
}

/// A keep-alive HTTP/1.1 connection to `address`, its driver spawned.
async fn connect(address: SocketAddr) -> Result<SendRequest<Empty<Bytes>>, Failure> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    drop(tokio::task::spawn_local(driver));
    Ok(sender)
}

fn get(path: &str) -> Result<Request<Empty<Bytes>>, Failure> {
    Ok(Request::get(path)
        .header(hyper::header::HOST, "127.0.0.1")
        .body(Empty::new())?)
}

/// Sends `path` on `sender`; whether the answer was a success.
async fn exchange(sender: &mut SendRequest<Empty<Bytes>>, path: &str) -> Result<bool, Failure> {
    // hyper cancels a request sent before the connection is ready for it.
    sender.ready().await?;
    let response = sender.send_request(get(path)?).await?;
    let ok = response.status().is_success();
    response.into_body().collect().await?;
    Ok(ok)
}

/// A light connection: an idle one, a new one, or the next one returned.
async fn acquire(
    address: SocketAddr,
    state: &Shared,
    returned: &Notify,
) -> Result<SendRequest<Empty<Bytes>>, Failure> {
    loop {
        {
            let mut state = state.borrow_mut();
            if let Some(sender) = state.idle.pop() {
                return Ok(sender);
            }
            if state.open < MAX_LIGHT_CONNECTIONS {
                state.open += 1;
                break;
            }
        }
        returned.notified().await;
    }
    let opened = connect(address).await;
    if opened.is_err() {
        state.borrow_mut().open -= 1;
        returned.notify_one();
    }
    opened
}

async fn light_request(
    address: SocketAddr,
    dispatched: Instant,
    counted: bool,
    state: Shared,
    returned: Rc<Notify>,
) {
    let Ok(mut sender) = acquire(address, &state, &returned).await else {
        state.borrow_mut().report.errors += 1;
        return;
    };
    let outcome = exchange(&mut sender, "/").await;
    let latency = dispatched.elapsed();
    let mut shared = state.borrow_mut();
    match outcome {
        Ok(ok) => {
            shared.idle.push(sender);
            if !ok {
                shared.report.errors += 1;
            } else if counted {
                shared.report.light_ms.push(latency.as_secs_f64() * 1e3);
            }
        }
        Err(_) => {
            shared.open -= 1;
            shared.report.errors += 1;
        }
    }
    drop(shared);
    returned.notify_one();
}

/// One heavy connection's request loop until `deadline`, reconnecting
/// after errors.
async fn heavy_loop(address: SocketAddr, window_start: Instant, deadline: Instant, state: Shared) {
    while Instant::now() < deadline {
        let Ok(mut sender) = connect(address).await else {
            state.borrow_mut().report.errors += 1;
            // Do not spin on a server that refuses connections.
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        while Instant::now() < deadline {
            let sent = Instant::now();
            let outcome = exchange(&mut sender, "/heavy").await;
            let answered = Instant::now();
            let mut shared = state.borrow_mut();
            match outcome {
                Ok(true) => {
                    if answered >= window_start && answered <= deadline {
                        shared
                            .report
                            .heavy_ms
                            .push((answered - sent).as_secs_f64() * 1e3);
                    }
                }
                Ok(false) => shared.report.errors += 1,
                Err(_) => {
                    shared.report.errors += 1;
                    break;
                }
            }
        }
    }
}
