//! A client that fans out: `REQUESTS` concurrent HTTP/1 GETs to one
//! server, each a task of a `JoinSet` with its own `timeout`, collected
//! in the order they finish.
//!
//! ```text
//! cargo run --release -p bwos --features hyper,tokio-io --example fan_out -- 127.0.0.1:8080 100
//! ```
//!
//! Arguments: the server's address (a name is resolved on a blocking
//! thread) and the number of requests (default 50). Prints how many
//! succeeded, failed and timed out; exits with failure unless all
//! succeeded.

use std::process::ExitCode;
use std::time::Duration;

use bwos::net::TcpStream;
use bwos::task::JoinSet;
use http_body_util::{BodyExt as _, Empty};
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// How long one request may take, connection included.
const PER_REQUEST: Duration = Duration::from_secs(5);

#[derive(Debug)]
enum Outcome {
    Ok(usize),
    Failed(String),
    TimedOut,
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let requests = match args.next().map(|text| text.parse::<usize>()) {
        None => 50,
        Some(Ok(requests)) if requests > 0 => requests,
        Some(_) => {
            eprintln!("fan_out: the number of requests must be a whole number above 0");
            return ExitCode::FAILURE;
        }
    };
    let (ok, failed, timed_out, bytes) = bwos::block_on(fan_out(&address, requests));
    println!(
        "{requests} requests to {address}: {ok} ok ({bytes} bytes), {failed} failed, {timed_out} timed out"
    );
    if ok == requests {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn fan_out(address: &str, requests: usize) -> (usize, usize, usize, usize) {
    let mut set = JoinSet::new();
    for i in 0..requests {
        let address = address.to_owned();
        set.spawn(async move {
            match bwos::time::timeout(PER_REQUEST, get(&address, i)).await {
                Ok(Ok(bytes)) => Outcome::Ok(bytes),
                Ok(Err(error)) => Outcome::Failed(error),
                Err(_) => Outcome::TimedOut,
            }
        });
    }
    let (mut ok, mut failed, mut timed_out, mut bytes) = (0, 0, 0, 0);
    while let Some(outcome) = set.join_next().await {
        match outcome {
            Ok(Outcome::Ok(body)) => {
                ok += 1;
                bytes += body;
            }
            Ok(Outcome::Failed(error)) => {
                eprintln!("fan_out: {error}");
                failed += 1;
            }
            Ok(Outcome::TimedOut) => timed_out += 1,
            Err(error) => {
                eprintln!("fan_out: a request task failed: {error}");
                failed += 1;
            }
        }
    }
    (ok, failed, timed_out, bytes)
}

/// One GET of `/` on a connection of its own; the body's length.
async fn get(address: &str, i: usize) -> Result<usize, String> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(|error| format!("request {i}: connect: {error}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| format!("request {i}: handshake: {error}"))?;
    let driver = bwos::task::spawn(connection);
    let request = Request::get("/")
        .header("host", address)
        .body(Empty::<Bytes>::new())
        .map_err(|error| format!("request {i}: {error}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| format!("request {i}: {error}"))?;
    if !response.status().is_success() {
        return Err(format!("request {i}: status {}", response.status()));
    }
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("request {i}: body: {error}"))?
        .to_bytes();
    drop(sender);
    let _ = driver.await;
    Ok(body.len())
}
