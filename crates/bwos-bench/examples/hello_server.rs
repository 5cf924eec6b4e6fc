//! An HTTP server on bwos: hyper 1.x serving "Hello, world!" (and echoing
//! the body of a POST to /echo), each connection an async task on the
//! global pool, sockets from `bwos::net` (their readiness is polled by the
//! pool's own workers; an idle server sleeps in `epoll_wait`).
//!
//! ```text
//! cargo run --release --example hello_server [ADDRESS]   # default 127.0.0.1:3000
//! curl http://127.0.0.1:3000/
//! curl -d 'some text' http://127.0.0.1:3000/echo
//! ```
//!
//! The handler may call `bwos::join` or `bwos::scope` directly: it runs on
//! the pool that serves fork/join work.

use std::convert::Infallible;
use std::net::SocketAddr;

use bwos::net::TcpListener;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use smol_hyper::rt::FuturesIo;

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() == Method::POST && request.uri().path() == "/echo" {
        return Ok(match request.into_body().collect().await {
            Ok(body) => Response::new(Full::new(body.to_bytes())),
            Err(error) => Response::builder()
                .status(400)
                .body(Full::new(Bytes::from(format!(
                    "bad request body: {error}\n"
                ))))
                .expect("a valid response"),
        });
    }
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, world!\n",
    ))))
}

fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_string());
    let address: SocketAddr = address.parse().map_err(|error| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{address:?} is not a socket address such as 127.0.0.1:3000: {error}"),
        )
    })?;
    let listener = bwos::block_on(TcpListener::bind(address))?;
    println!(
        "serving http://{} on {} bwos workers",
        listener.local_addr()?,
        bwos::current_num_threads()
    );
    bwos::block_on(async move {
        loop {
            let (stream, _) = listener.accept().await?;
            bwos::task::spawn(async move {
                let served = http1::Builder::new()
                    .serve_connection(FuturesIo::new(stream), service_fn(handle))
                    .await;
                if let Err(error) = served {
                    eprintln!("connection error: {error}");
                }
            });
        }
    })
}
