//! **mixed server**: hyper HTTP/1.1 on loopback, two kinds of request.
//! `GET /` answers "hello" (light); `GET /heavy` computes the [`Heavy`]
//! sum (about `--heavy-ms` of one core's time) and answers it.
//!
//! Set-ups, each a server with 2 workers:
//! - **bwos**: `bwos::net` sockets through `TokioIo`, `bwos::join`
//!   straight in the handler, in the connection's task;
//! - **tokio**: tokio's sockets, the serial sum in
//!   `tokio::task::spawn_blocking` (what a tokio user does with CPU work);
//! - **tokio+rayon**: tokio's sockets, the recursive sum on a 2-thread
//!   rayon pool (`rayon::join`), its result back through a
//!   `tokio::sync::oneshot`.
//!
//! The load comes from the built-in client of [`super::client`] on a
//! thread of this process (see there why not wrk): light requests open
//! loop at a fixed rate, heavy requests closed loop on a few connections.
//! Measured, after a warm-up: the light requests' p50 and p99 latency,
//! the heavy requests' throughput and p50 latency, the share of heavy
//! requests among those answered, and the server's CPU time per request
//! (this process's user + system time, less the client thread's).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::client::{self, LoadPlan};
use super::heavy::Heavy;
use super::{Metrics, SETTLE};
use crate::r#async::runtime::{AsyncRuntime, Bwos, Tokio};

/// Where a server computes its heavy requests.
#[derive(Clone)]
enum Compute {
    /// `bwos::join` in the handler.
    Join,
    /// The serial sum in `tokio::task::spawn_blocking`.
    SpawnBlocking,
    /// `rayon::join` on this pool, the result through a oneshot.
    Rayon(Arc<rayon::ThreadPool>),
}

/// The service of every set-up.
async fn respond(
    request: Request<Incoming>,
    heavy: Arc<Heavy>,
    compute: Compute,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.uri().path() != "/heavy" {
        return Ok(Response::new(Full::new(Bytes::from_static(
            b"Hello, world!\n",
        ))));
    }
    let sum = match compute {
        Compute::Join => Some(heavy.bwos()),
        Compute::SpawnBlocking => {
            let heavy = Arc::clone(&heavy);
            tokio::task::spawn_blocking(move || heavy.serial())
                .await
                .ok()
        }
        Compute::Rayon(pool) => {
            let (send, receive) = tokio::sync::oneshot::channel();
            let for_pool = Arc::clone(&heavy);
            pool.spawn(move || {
                let _ = send.send(for_pool.rayon());
            });
            receive.await.ok()
        }
    };
    // A wrong or lost sum is an error the client counts, not a panic.
    let mut response = Response::new(Full::new(Bytes::from(format!("{sum:?}\n"))));
    if sum != Some(heavy.expected) {
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    }
    Ok(response)
}

/// Serves one connection until the client closes it.
async fn serve_connection<IO>(io: IO, heavy: Arc<Heavy>, compute: Compute)
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin,
{
    let service = service_fn(move |request| respond(request, Arc::clone(&heavy), compute.clone()));
    // A client that goes away mid-request ends its connection quietly.
    let _ = http1::Builder::new().serve_connection(io, service).await;
}

/// Starts the bwos server's accept loop on `rt`.
fn serve_bwos(rt: &Bwos, listener: std::net::TcpListener, heavy: Arc<Heavy>) {
    rt.spawn_detached(async move {
        let listener = match bwos::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(error) => return eprintln!("latency: bwos listener: {error}"),
        };
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let heavy = Arc::clone(&heavy);
                    drop(bwos::task::spawn(serve_connection(
                        TokioIo::new(stream),
                        heavy,
                        Compute::Join,
                    )));
                }
                Err(error) => {
                    eprintln!("latency: accept failed: {error}");
                    bwos::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}

/// Starts a tokio server's accept loop on `rt`.
fn serve_tokio(rt: &Tokio, listener: std::net::TcpListener, heavy: Arc<Heavy>, compute: Compute) {
    rt.spawn_detached(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(error) => return eprintln!("latency: tokio listener: {error}"),
        };
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let heavy = Arc::clone(&heavy);
                    drop(tokio::spawn(serve_connection(
                        TokioIo::new(stream),
                        heavy,
                        compute.clone(),
                    )));
                }
                Err(error) => {
                    eprintln!("latency: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}

/// The set-ups, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    Bwos,
    TokioSpawnBlocking,
    TokioRayon,
}

/// One measurement: a fresh server of `setup`, loaded as `plan` says.
pub fn run(setup: Setup, heavy: &Arc<Heavy>, plan: &LoadPlan) -> std::io::Result<Metrics> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let heavy = Arc::clone(heavy);
    // The runtime (and the rayon pool) live until the load is over, and
    // go before the next set-up starts.
    let report = match setup {
        Setup::Bwos => {
            let rt = Bwos::start(2);
            serve_bwos(&rt, listener, heavy);
            std::thread::sleep(SETTLE);
            client::load(address, plan)
        }
        Setup::TokioSpawnBlocking => {
            let rt = Tokio::start(2);
            serve_tokio(&rt, listener, heavy, Compute::SpawnBlocking);
            std::thread::sleep(SETTLE);
            client::load(address, plan)
        }
        Setup::TokioRayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .map_err(std::io::Error::other)?;
            let rt = Tokio::start(2);
            serve_tokio(&rt, listener, heavy, Compute::Rayon(Arc::new(pool)));
            std::thread::sleep(SETTLE);
            client::load(address, plan)
        }
    }?;
    Ok(report.metrics())
}
