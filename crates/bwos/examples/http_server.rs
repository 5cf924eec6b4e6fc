//! An HTTP server with hyper on bwos: HTTP/1.1 and HTTP/2 (h2c, prior
//! knowledge) on one port, a header-read timeout for slow or silent
//! clients, and an accept loop that survives accept errors.
//!
//! ```text
//! cargo run --release -p bwos --features hyper,tokio-io --example http_server -- 127.0.0.1:8080
//! curl http://127.0.0.1:8080/
//! curl --http2-prior-knowledge http://127.0.0.1:8080/
//! ```
//!
//! The first argument is the address to listen on (port 0: any free
//! port); the server prints `listening on ADDR` once it accepts. `GET /`
//! answers `Hello, world!`; `POST /echo` returns the request's body.

use std::convert::Infallible;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bwos::hyper::{Executor, Timer};
use bwos::net::TcpListener;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;

/// How long a client may take to send a request's head; the first one is
/// due this long after the connection is accepted.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    match bwos::block_on(serve(&address)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("http_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(address: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind(address).await?;
    println!("listening on {}", listener.local_addr()?);
    let mut builder = auto::Builder::new(Executor::default());
    builder
        .http1()
        .timer(Timer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    builder.http2().timer(Timer::new());
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors (EMFILE), or a connection reset in the
                // backlog: back off, keep serving the open connections.
                eprintln!("http_server: accept failed: {error}; retrying");
                bwos::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Small responses go out without Nagle's delay.
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        bwos::task::spawn(async move {
            // hyper's header-read timeout starts once hyper_util has told
            // HTTP/1 from HTTP/2 by the first bytes: a client that sends
            // nothing, or part of the HTTP/2 preface, would hold its
            // connection forever. So the first request is due within the
            // same time from the accept.
            let requested = Arc::new(AtomicBool::new(false));
            let service = service_fn({
                let requested = Arc::clone(&requested);
                move |request| {
                    // Relaxed, as the load after the timeout: the flag
                    // publishes nothing but itself.
                    requested.store(true, Ordering::Relaxed);
                    respond(request)
                }
            });
            let mut connection = pin!(builder.serve_connection(TokioIo::new(stream), service));
            let result = match bwos::time::timeout(HEADER_TIMEOUT, connection.as_mut()).await {
                Ok(result) => result,
                Err(_) if !requested.load(Ordering::Relaxed) => {
                    eprintln!(
                        "http_server: connection ended: no request within {HEADER_TIMEOUT:?}"
                    );
                    return;
                }
                Err(_) => connection.await,
            };
            if let Err(error) = result {
                // A client that goes away or stays silent: not the server's
                // failure, but worth a line.
                eprintln!("http_server: connection ended: {error}");
            }
        });
    }
}

async fn respond(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = match (request.method(), request.uri().path()) {
        (&Method::GET, "/") => Response::new(Full::new(Bytes::from_static(b"Hello, world!"))),
        (&Method::POST, "/echo") => match request.into_body().collect().await {
            Ok(body) => Response::new(Full::new(body.to_bytes())),
            Err(error) => status(StatusCode::BAD_REQUEST, format!("{error}\n")),
        },
        _ => status(StatusCode::NOT_FOUND, "not found\n".into()),
    };
    Ok(response)
}

fn status(code: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = code;
    response
}
