//! The HTTP service, written once, and its accept loops: each runtime
//! with the sockets its users would take: `bwos::net` for bwos (driven by
//! the pool's workers), `async-io` for smol (driven by `async-io`'s
//! reactor thread), tokio's own for tokio (driven by its workers).

use std::convert::Infallible;
use std::net::TcpListener;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};

use crate::asyncrt::runtime::{AsyncRuntime, Bwos, Tokio};

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

/// Serves `listener` on `rt` with `async-io` sockets, each connection a
/// task, until the process is killed.
pub fn serve_async_io<R: AsyncRuntime>(rt: R, listener: TcpListener) -> std::io::Result<()> {
    let spawner = rt.clone();
    rt.block_on(async move {
        let listener = async_io::Async::new(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            spawner.spawn_detached(async move {
                serve_connection(smol_hyper::rt::FuturesIo::new(stream)).await;
            });
        }
    })
}

/// Serves `listener` on bwos with `bwos::net` sockets, each connection a
/// task, until the process is killed.
pub fn serve_bwos(rt: Bwos, listener: TcpListener) -> std::io::Result<()> {
    rt.block_on(async move {
        let listener = bwos::net::TcpListener::from_std(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            bwos::task::spawn(async move {
                serve_connection(smol_hyper::rt::FuturesIo::new(stream)).await;
            });
        }
    })
}

/// Serves `listener` on tokio with tokio's sockets.
pub fn serve_tokio(rt: Tokio, listener: TcpListener) -> std::io::Result<()> {
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            tokio::spawn(async move {
                serve_connection(hyper_util::rt::TokioIo::new(stream)).await;
            });
        }
    })
}
