//! hyper on bwos: HTTP/2 (h2c) end to end with `bwos::hyper::{Executor,
//! Timer}` and `hyper_util::rt::TokioIo` over `bwos::net` streams (the
//! `tokio-io` feature), and HTTP/1's header-read timeout, which needs the
//! timer.

#![cfg(all(feature = "hyper", feature = "tokio-io", not(bwos_loom)))]

use std::convert::Infallible;
use std::time::Duration;

use bwos::hyper::{Executor, Timer};
use bwos::net::{TcpListener, TcpStream};
use bwos_testkit::watchdog;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

async fn hello(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello {}", request.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

#[test]
fn http2_round_trips_many_concurrent_streams() {
    watchdog("http2_round_trips", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let server = bwos::task::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                hyper::server::conn::http2::Builder::new(Executor::default())
                    .timer(Timer::new())
                    .keep_alive_interval(Duration::from_millis(50))
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await
            });
            let stream = TcpStream::connect(address).await.unwrap();
            let (sender, connection) =
                hyper::client::conn::http2::handshake(Executor::default(), TokioIo::new(stream))
                    .await
                    .unwrap();
            let driver = bwos::task::spawn(connection);
            // 100 requests as concurrent streams of one connection.
            let mut requests = bwos::task::JoinSet::new();
            for i in 0..100 {
                let mut sender = sender.clone();
                requests.spawn(async move {
                    let request = Request::get(format!("http://test/{i}"))
                        .body(Full::new(Bytes::new()))
                        .unwrap();
                    let response = sender.send_request(request).await.unwrap();
                    assert_eq!(response.version(), hyper::Version::HTTP_2);
                    let body = response.into_body().collect().await.unwrap().to_bytes();
                    assert_eq!(body, format!("hello /{i}"));
                });
            }
            let mut done = 0;
            while let Some(outcome) = requests.join_next().await {
                outcome.unwrap();
                done += 1;
            }
            assert_eq!(done, 100);
            // Keep-alive pings (the timer) pass while the connection idles.
            bwos::time::sleep(Duration::from_millis(150)).await;
            drop(sender);
            driver.await.unwrap().unwrap();
            // The client closed first: the server ends cleanly, or its last
            // write meets the closed socket (as on any runtime).
            match server.await.unwrap() {
                Ok(()) => {}
                Err(error) => {
                    let io = std::error::Error::source(&error)
                        .and_then(|source| source.downcast_ref::<std::io::Error>())
                        .map(std::io::Error::kind);
                    assert!(
                        matches!(
                            io,
                            Some(
                                std::io::ErrorKind::NotConnected
                                    | std::io::ErrorKind::BrokenPipe
                                    | std::io::ErrorKind::ConnectionReset
                            )
                        ),
                        "{error:?}"
                    );
                }
            }
        });
    });
}

#[test]
fn http1_header_read_timeout_closes_a_silent_connection() {
    watchdog("http1_header_read_timeout", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let server = bwos::task::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                hyper::server::conn::http1::Builder::new()
                    .timer(Timer::new())
                    .header_read_timeout(Duration::from_millis(50))
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await
            });
            // A client that connects and says nothing.
            let silent = TcpStream::connect(address).await.unwrap();
            let outcome = bwos::time::timeout(Duration::from_secs(30), server)
                .await
                .expect("the server gave up on the silent client");
            let error = outcome.unwrap().expect_err("timed out reading the header");
            assert!(error.is_timeout(), "{error}");
            drop(silent);
        });
    });
}

/// hyper's header-read timeout fires on time while another task blocks a
/// worker: a silent client connects, and once the server waits for its
/// header (its 50 ms timer set, both workers asleep), a task injected from
/// outside the pool blocks one of the two workers for up to 3 s. The
/// timeout must close the connection before that block ends (the timers'
/// watch is handed over when the worker that watched wakes for the
/// injected task). Five rounds, so that the injection meets the watcher.
#[test]
fn http1_header_read_timeout_fires_while_a_task_blocks_a_worker() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    watchdog("http1_header_read_timeout_during_block", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for round in 0..5 {
            let timed_out = Arc::new(AtomicBool::new(false));
            let (address_sender, address_receiver) = std::sync::mpsc::channel();
            let server = pool.spawn_task({
                let timed_out = timed_out.clone();
                async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                    address_sender.send(listener.local_addr().unwrap()).unwrap();
                    let (stream, _) = listener.accept().await.unwrap();
                    let outcome = hyper::server::conn::http1::Builder::new()
                        .timer(Timer::new())
                        .header_read_timeout(Duration::from_millis(50))
                        .serve_connection(TokioIo::new(stream), service_fn(hello))
                        .await;
                    timed_out.store(true, Ordering::SeqCst);
                    outcome
                }
            });
            let address = address_receiver.recv().unwrap();
            // A client that connects and says nothing, from outside the pool.
            let silent = std::net::TcpStream::connect(address).unwrap();
            // The server accepts and sets its header timer; the workers
            // fall asleep (a shorter wait only makes the test weaker).
            std::thread::sleep(Duration::from_millis(15));
            let (done_sender, done_receiver) = std::sync::mpsc::channel();
            pool.spawn_task({
                let timed_out = timed_out.clone();
                async move {
                    let deadline = std::time::Instant::now() + Duration::from_secs(3);
                    while std::time::Instant::now() < deadline && !timed_out.load(Ordering::SeqCst)
                    {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    done_sender.send(timed_out.load(Ordering::SeqCst)).unwrap();
                }
            });
            assert!(
                done_receiver.recv().unwrap(),
                "round {round}: the header-read timeout did not fire during the 3 s block"
            );
            let error = pool
                .block_on(server)
                .unwrap()
                .expect_err("timed out reading the header");
            assert!(error.is_timeout(), "{error}");
            drop(silent);
        }
    });
}
