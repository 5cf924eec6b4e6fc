//! An axum `Router` served by hyper on bwos: axum without its tokio
//! `serve` (axum's `tokio` feature is off), the router as a hyper service
//! through hyper-util's `TowerToHyperService`, connections over
//! `bwos::net` streams (`TokioIo`, the `tokio-io` feature).
//!
//! ```text
//! cargo run --release -p bwos --features hyper,tokio-io --example axum_server -- 127.0.0.1:3000
//! curl http://127.0.0.1:3000/
//! curl http://127.0.0.1:3000/users/7
//! ```
//!
//! The first argument is the address to listen on (port 0: any free
//! port); the server prints `listening on ADDR` once it accepts. Nothing
//! in this router needs tokio's runtime; axum features that do (its
//! `serve`, WebSocket upgrades through `tokio`) are not used.

use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::routing::get;
use bwos::hyper::{Executor, Timer};
use bwos::net::TcpListener;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;

fn main() -> ExitCode {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    match bwos::block_on(serve(&address)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("axum_server: {error}");
            ExitCode::FAILURE
        }
    }
}

fn router() -> Router {
    Router::new()
        .route("/", get(|| async { "Hello, world!" }))
        .route(
            "/users/{id}",
            get(|Path(id): Path<u64>| async move { format!("user {id}\n") }),
        )
}

async fn serve(address: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind(address).await?;
    println!("listening on {}", listener.local_addr()?);
    let service = TowerToHyperService::new(router());
    let mut builder = auto::Builder::new(Executor::default());
    builder
        .http1()
        .timer(Timer::new())
        .header_read_timeout(Duration::from_secs(5));
    builder.http2().timer(Timer::new());
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                eprintln!("axum_server: accept failed: {error}; retrying");
                bwos::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (builder, service) = (builder.clone(), service.clone());
        bwos::task::spawn(async move {
            if let Err(error) = builder
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                eprintln!("axum_server: connection ended: {error}");
            }
        });
    }
}
