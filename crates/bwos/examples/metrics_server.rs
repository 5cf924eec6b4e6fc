//! A pool's metrics (`ThreadPool::stats`) on `/metrics`, in Prometheus'
//! text exposition format: per-worker counters and queue depths labelled
//! `worker="N"`, and the pool's gauges (injector depths, alive tasks,
//! blocking threads, pending timers, I/O events).
//!
//! ```text
//! cargo run --release -p bwos --features hyper,tokio-io --example metrics_server -- 127.0.0.1:9090
//! curl http://127.0.0.1:9090/metrics
//! ```
//!
//! The first argument is the address to listen on (default
//! `127.0.0.1:0`: any free port); the server prints `listening on ADDR`
//! once it accepts. A background task gives the pool something to do
//! (fork/join, tasks, timers, a blocking closure) so that the counters
//! move between scrapes.
//!
//! The format is written by hand (`Exposition` below) rather than with
//! the `prometheus-client` crate: that crate is built around metric
//! objects the program updates as it goes, while these values are a
//! snapshot the pool hands over at scrape time; serving a snapshot through
//! it takes a custom collector, about as much code as the text format
//! itself (`# HELP`, `# TYPE`, one `name{labels} value` line per sample),
//! and four more dependencies for an example.

use std::convert::Infallible;
use std::fmt::{Display, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bwos::net::TcpListener;
use bwos::{PoolStats, ThreadPool, ThreadPoolBuilder};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// The media type of the text exposition format.
const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

fn main() -> ExitCode {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let pool = match ThreadPoolBuilder::new().build() {
        Ok(pool) => Arc::new(pool),
        Err(error) => {
            eprintln!("metrics_server: cannot build the pool: {error}");
            return ExitCode::FAILURE;
        }
    };
    match pool.block_on(serve(&address, Arc::clone(&pool))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("metrics_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(address: &str, pool: Arc<ThreadPool>) -> std::io::Result<()> {
    let listener = TcpListener::bind(address).await?;
    println!("listening on {}", listener.local_addr()?);
    drop(bwos::task::spawn(keep_busy()));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                eprintln!("metrics_server: accept failed: {error}; retrying");
                bwos::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let pool = Arc::clone(&pool);
        drop(bwos::task::spawn(async move {
            let service = service_fn(move |request| {
                let pool = Arc::clone(&pool);
                async move { Ok::<_, Infallible>(respond(&request, &pool)) }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                eprintln!("metrics_server: connection failed: {error}");
            }
        }));
    }
}

fn respond(request: &Request<Incoming>, pool: &ThreadPool) -> Response<Full<Bytes>> {
    if request.method() != Method::GET || request.uri().path() != "/metrics" {
        let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let body = render(&pool.stats());
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(
        CONTENT_TYPE,
        CONTENT_TYPE_TEXT.parse().expect("a valid header"),
    );
    response
}

/// Some work every 100 ms, so that the metrics change between scrapes.
async fn keep_busy() {
    let mut tick = bwos::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        // Long enough (about a millisecond) for the other workers to wake
        // and steal part of it.
        let (a, b) = bwos::join(|| fib(25), || fib(24));
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                bwos::task::spawn(async move {
                    bwos::task::yield_now().await;
                    i
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
        let _ = bwos::task::spawn_blocking(move || a + b).await;
    }
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = bwos::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// The text exposition format of `stats`.
fn render(stats: &PoolStats) -> String {
    let mut out = Exposition::default();
    let workers = &stats.workers;

    type PerWorker = fn(&bwos::WorkerStats) -> f64;
    let per_worker: [(&str, &str, Kind, PerWorker); 12] = [
        (
            "bwos_worker_polls_total",
            "Task polls run by the worker.",
            Kind::Counter,
            |w| w.poll_count as f64,
        ),
        (
            "bwos_worker_jobs_total",
            "Fork/join jobs run by the worker's scheduler loop.",
            Kind::Counter,
            |w| w.job_count as f64,
        ),
        (
            "bwos_worker_steals_total",
            "Successful steals by the worker (a block counts once).",
            Kind::Counter,
            |w| w.steals as f64,
        ),
        (
            "bwos_worker_failed_steals_total",
            "Steal attempts by the worker that found nothing.",
            Kind::Counter,
            |w| w.failed_steals as f64,
        ),
        (
            "bwos_worker_tasks_stolen_from_total",
            "Tasks other workers stole from this worker's queue.",
            Kind::Counter,
            |w| w.tasks_stolen_from as f64,
        ),
        (
            "bwos_worker_jobs_stolen_from_total",
            "Fork/join jobs other workers stole from this worker's queue.",
            Kind::Counter,
            |w| w.jobs_stolen_from as f64,
        ),
        (
            "bwos_worker_parks_total",
            "Times the worker parked (slept until woken).",
            Kind::Counter,
            |w| w.sleeps as f64,
        ),
        (
            "bwos_worker_wakeups_total",
            "Times another thread woke the parked worker.",
            Kind::Counter,
            |w| w.wakeups as f64,
        ),
        (
            "bwos_worker_busy_seconds_total",
            "Time the worker was not parked.",
            Kind::Counter,
            |w| w.busy_duration.as_secs_f64(),
        ),
        (
            "bwos_worker_long_polls_total",
            "Task polls on the worker longer than the pool's long-poll threshold.",
            Kind::Counter,
            |w| w.long_polls as f64,
        ),
        (
            "bwos_worker_task_queue_depth",
            "Tasks queued on the worker (all but the block it holds privately).",
            Kind::Gauge,
            |w| w.task_queue_depth as f64,
        ),
        (
            "bwos_worker_job_queue_depth",
            "Fork/join jobs queued on the worker (all but the block it holds privately).",
            Kind::Gauge,
            |w| w.job_queue_depth as f64,
        ),
    ];
    for (name, help, kind, value) in per_worker {
        out.family(name, kind, help);
        for (index, worker) in workers.iter().enumerate() {
            out.sample(name, &[("worker", &index.to_string())], value(worker));
        }
    }

    out.family("bwos_workers", Kind::Gauge, "Worker threads of the pool.");
    out.sample("bwos_workers", &[], workers.len());
    out.family(
        "bwos_injection_queue_depth",
        Kind::Gauge,
        "Entries in the pool's injectors, queued from outside the pool.",
    );
    out.sample(
        "bwos_injection_queue_depth",
        &[("queue", "tasks")],
        stats.injection_queue_depth,
    );
    out.sample(
        "bwos_injection_queue_depth",
        &[("queue", "jobs")],
        stats.job_injection_queue_depth,
    );
    out.family(
        "bwos_alive_tasks",
        Kind::Gauge,
        "Async tasks spawned and not completed.",
    );
    out.sample("bwos_alive_tasks", &[], stats.num_alive_tasks);
    out.family(
        "bwos_blocking_threads",
        Kind::Gauge,
        "Threads of the blocking pool, running a closure (busy) or waiting for one (idle).",
    );
    let idle = stats.num_idle_blocking_threads;
    let busy = stats.num_blocking_threads.saturating_sub(idle);
    out.sample("bwos_blocking_threads", &[("state", "busy")], busy);
    out.sample("bwos_blocking_threads", &[("state", "idle")], idle);
    out.family(
        "bwos_blocking_queue_depth",
        Kind::Gauge,
        "Blocking closures waiting for a thread.",
    );
    out.sample("bwos_blocking_queue_depth", &[], stats.blocking_queue_depth);
    out.family(
        "bwos_pending_timers",
        Kind::Gauge,
        "Timers that have not fired yet.",
    );
    out.sample("bwos_pending_timers", &[], stats.num_pending_timers);
    out.family(
        "bwos_io_driver_ready_total",
        Kind::Counter,
        "Socket readiness events the I/O driver handled.",
    );
    out.sample(
        "bwos_io_driver_ready_total",
        &[],
        stats.io_driver_ready_count,
    );
    out.family(
        "bwos_unhandled_panics_total",
        Kind::Counter,
        "Panics of detached jobs that no panic handler took.",
    );
    out.sample("bwos_unhandled_panics_total", &[], stats.unhandled_panics);
    out.text
}

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
}

/// A document in the text exposition format, written family by family.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts the metric family `name`: its `# HELP` and `# TYPE` lines.
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        // In help text a backslash and a line feed are escaped.
        let help = help.replace('\\', r"\\").replace('\n', r"\n");
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample of the current family.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, label_value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                // In label values a backslash, a double quote and a line
                // feed are escaped.
                let escaped = label_value
                    .replace('\\', r"\\")
                    .replace('"', "\\\"")
                    .replace('\n', r"\n");
                let _ = write!(self.text, "{label}=\"{escaped}\"");
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}
