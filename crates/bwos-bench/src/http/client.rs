//! The built-in load generator, used when wrk is not installed: like
//! `wrk -t1`, one thread keeps `connections` keep-alive HTTP/1.1
//! connections busy with `GET /` for a fixed time and records the latency
//! of every request.
//!
//! It is a hyper client on tokio's current-thread runtime (one thread, as
//! wrk runs here), so it does the same work whichever server it loads.
//! Connections that fail count as errors; a connection that fails is
//! opened again, as wrk does.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;

use super::LoadReport;

/// Loads `address` with `connections` connections for `duration`.
pub fn load(
    address: SocketAddr,
    connections: u32,
    duration: Duration,
) -> std::io::Result<LoadReport> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let recorder = Rc::new(RefCell::new(Recorder::default()));
    let start = Instant::now();
    let deadline = start + duration;
    local.block_on(&runtime, async {
        let connections: Vec<_> = (0..connections)
            .map(|_| tokio::task::spawn_local(connection(address, deadline, Rc::clone(&recorder))))
            .collect();
        for connection in connections {
            let _ = connection.await;
        }
    });
    let elapsed = start.elapsed();
    let mut recorder = recorder.take();
    recorder.latencies_us.sort_unstable();
    let requests = recorder.latencies_us.len() as u64;
    let percentile = |p: f64| -> f64 {
        if recorder.latencies_us.is_empty() {
            return f64::NAN;
        }
        let rank = ((p * requests as f64).ceil() as usize).clamp(1, recorder.latencies_us.len());
        f64::from(recorder.latencies_us[rank - 1]) / 1000.0
    };
    Ok(LoadReport {
        requests,
        requests_per_sec: requests as f64 / elapsed.as_secs_f64(),
        p50_ms: percentile(0.50),
        p99_ms: percentile(0.99),
        errors: recorder.errors,
    })
}

#[derive(Default)]
struct Recorder {
    latencies_us: Vec<u32>,
    errors: u64,
}

/// One connection's request loop until `deadline`, reconnecting after
/// errors.
async fn connection(address: SocketAddr, deadline: Instant, recorder: Rc<RefCell<Recorder>>) {
    while Instant::now() < deadline {
        if requests_on_one_connection(address, deadline, &recorder)
            .await
            .is_err()
        {
            recorder.borrow_mut().errors += 1;
            // Do not spin on a server that refuses connections.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn requests_on_one_connection(
    address: SocketAddr,
    deadline: Instant,
    recorder: &RefCell<Recorder>,
) -> Result<(), Failure> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::task::spawn_local(driver);
    let result = async {
        while Instant::now() < deadline {
            let request = Request::get("/")
                .header(hyper::header::HOST, "127.0.0.1")
                .body(Empty::<Bytes>::new())?;
            // hyper cancels a request sent before the connection task is
            // ready for it ("connection was not ready").
            sender.ready().await?;
            let sent = Instant::now();
            let response = sender.send_request(request).await?;
            let ok = response.status().is_success();
            response.into_body().collect().await?;
            let latency = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
            let mut recorder = recorder.borrow_mut();
            if ok {
                recorder.latencies_us.push(latency);
            } else {
                recorder.errors += 1;
            }
        }
        Ok::<(), Failure>(())
    }
    .await;
    drop(sender);
    let _ = driver.await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r#async::runtime::{AsyncRuntime, Bwos};

    /// The built-in client against the bwos server of the benchmark (in
    /// this process): requests are counted, answered without errors, and
    /// the percentiles are ordered; a closed port is an error per
    /// attempt, not a hang or a success.
    #[test]
    fn builtin_client_loads_a_server_and_counts_failures() {
        bwos_testkit::watchdog("builtin_client_loads_a_server_and_counts_failures", || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let address = listener.local_addr().unwrap();
            let runtime = Bwos::start(2);
            let server = std::thread::spawn(move || {
                let _ = crate::http::server::serve_bwos(runtime, listener);
            });
            let report = load(address, 8, Duration::from_millis(300)).unwrap();
            assert!(report.requests > 0, "{report:?}");
            assert_eq!(report.errors, 0, "{report:?}");
            assert!(report.p50_ms <= report.p99_ms, "{report:?}");
            assert!(report.requests_per_sec > 0.0, "{report:?}");
            // The server thread serves until the process ends.
            drop(server);

            let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let closed_address = closed.local_addr().unwrap();
            drop(closed);
            let report = load(closed_address, 2, Duration::from_millis(50)).unwrap();
            assert_eq!(report.requests, 0, "{report:?}");
            assert!(report.errors >= 2, "{report:?}");
            assert!(report.p99_ms.is_nan(), "{report:?}");
        });
    }
}
