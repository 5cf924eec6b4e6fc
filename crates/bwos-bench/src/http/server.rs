//! The HTTP service, written once, and its accept loops: each runtime
//! with the sockets its users would take: `bwos::net` for bwos (driven by
//! the pool's workers), `async-io` for smol (driven by `async-io`'s
//! reactor thread), tokio's own for tokio (driven by its workers).

use std::convert::Infallible;
use std::future::Future;
use std::net::TcpListener;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};

use crate::r#async::runtime::{AsyncRuntime, Bwos, Tokio};

/// Hello world; `POST /echo` returns the request body.
pub async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() == Method::POST && request.uri().path() == "/echo" {
        let body = match request.into_body().collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => Bytes::new(),
        };
        return Ok(Response::new(Full::new(body)));
    }
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, world!\n",
    ))))
}

/// Serves one connection until the client closes it (errors end it
/// quietly: a load generator stopping mid-request is not news).
async fn serve_connection<IO>(io: IO)
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin,
{
    let _ = http1::Builder::new()
        .serve_connection(io, service_fn(handle))
        .await;
}

/// An accept error (out of descriptors, a connection reset in the
/// backlog) does not end the server: it says so and waits a little.
fn accept_failed(error: &std::io::Error) -> std::time::Duration {
    eprintln!("http-server: accept failed: {error}; retrying");
    std::time::Duration::from_millis(50)
}

/// Serves `listener` on `rt` with `async-io` sockets, each connection a
/// task, until the process is killed.
pub fn serve_async_io<R: AsyncRuntime>(rt: R, listener: TcpListener) -> std::io::Result<()> {
    let spawner = rt.clone();
    rt.block_on(async move {
        let listener = async_io::Async::new(listener)?;
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    async_io::Timer::after(accept_failed(&error)).await;
                    continue;
                }
            };
            spawner.spawn_detached(async move {
                serve_connection(smol_hyper::rt::FuturesIo::new(stream)).await;
            });
        }
    })
}

/// Accepts on `listener` with `bwos::net` sockets until the process is
/// killed, each connection a task that `serve` makes; an accept error
/// backs off (see [`accept_failed`]).
fn bwos_accept_loop<F, Fut>(rt: Bwos, listener: TcpListener, serve: F) -> std::io::Result<()>
where
    F: Fn(bwos::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    rt.block_on(async move {
        let listener = bwos::net::TcpListener::from_std(listener)?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => drop(bwos::task::spawn(serve(stream))),
                Err(error) => bwos::time::sleep(accept_failed(&error)).await,
            }
        }
    })
}

/// [`bwos_accept_loop`] on tokio with tokio's sockets.
fn tokio_accept_loop<F, Fut>(rt: Tokio, listener: TcpListener, serve: F) -> std::io::Result<()>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => drop(tokio::spawn(serve(stream))),
                Err(error) => tokio::time::sleep(accept_failed(&error)).await,
            }
        }
    })
}

/// Serves `listener` on bwos with `bwos::net` sockets (through `TokioIo`,
/// the `tokio-io` feature: reads go into hyper's buffer unzeroed), each
/// connection a task, until the process is killed.
pub fn serve_bwos(rt: Bwos, listener: TcpListener) -> std::io::Result<()> {
    bwos_accept_loop(rt, listener, |stream| {
        serve_connection(hyper_util::rt::TokioIo::new(stream))
    })
}

/// Serves `listener` on tokio with tokio's sockets.
pub fn serve_tokio(rt: Tokio, listener: TcpListener) -> std::io::Result<()> {
    tokio_accept_loop(rt, listener, |stream| {
        serve_connection(hyper_util::rt::TokioIo::new(stream))
    })
}

/// Serves `listener` over HTTP/2 (h2c) on bwos: `bwos::net` streams
/// through `TokioIo` (the `tokio-io` feature), `bwos::hyper`'s executor
/// and timer.
pub fn serve_bwos_h2(rt: Bwos, listener: TcpListener) -> std::io::Result<()> {
    bwos_accept_loop(rt, listener, |stream| async move {
        let _ = hyper::server::conn::http2::Builder::new(bwos::hyper::Executor::default())
            .timer(bwos::hyper::Timer::new())
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service_fn(handle))
            .await;
    })
}

/// Serves `listener` over HTTP/2 (h2c) on tokio: hyper-util's tokio
/// executor and timer.
pub fn serve_tokio_h2(rt: Tokio, listener: TcpListener) -> std::io::Result<()> {
    tokio_accept_loop(rt, listener, |stream| async move {
        let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::default())
            .timer(hyper_util::rt::TokioTimer::new())
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service_fn(handle))
            .await;
    })
}

/// The axum router of both axum servers: `GET /` says hello.
fn axum_router() -> axum::Router {
    axum::Router::new().route("/", axum::routing::get(|| async { "Hello, world!\n" }))
}

/// Serves an axum router on bwos as the `axum_server` example does: the
/// router through hyper-util's `TowerToHyperService`, HTTP/1.1 over
/// `bwos::net` streams (`TokioIo`).
pub fn serve_bwos_axum(rt: Bwos, listener: TcpListener) -> std::io::Result<()> {
    let service = hyper_util::service::TowerToHyperService::new(axum_router());
    bwos_accept_loop(rt, listener, move |stream| {
        let service = service.clone();
        async move {
            let _ = http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        }
    })
}

/// Serves the same router on tokio the way tokio users do: `axum::serve`.
pub fn serve_tokio_axum(rt: Tokio, listener: TcpListener) -> std::io::Result<()> {
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, axum_router()).await
    })
}
