//! A hyper server on bwos answering real requests from a real client (a
//! hyper client, also on bwos), over loopback sockets from `bwos::net`
//! (driven by the pool's workers).

#![cfg(not(bwos_loom))]

use std::convert::Infallible;
use std::net::SocketAddr;

use bwos::net::{TcpListener, TcpStream};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use smol_hyper::rt::FuturesIo;

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match (request.method(), request.uri().path()) {
        (&Method::POST, "/echo") => request.into_body().collect().await.unwrap().to_bytes(),
        // A handler that forks and joins on the same pool.
        (&Method::GET, "/sum") => {
            let (a, b) = bwos::join(|| (1..=50u64).sum::<u64>(), || (51..=100u64).sum::<u64>());
            Bytes::from((a + b).to_string())
        }
        _ => Bytes::from_static(b"Hello, world!"),
    };
    Ok(Response::new(Full::new(body)))
}

/// Serves connections from `listener` forever, each in a task.
async fn serve(listener: TcpListener) {
    loop {
        let (stream, _) = listener.accept().await.expect("accept");
        bwos::task::spawn(async move {
            http1::Builder::new()
                .serve_connection(FuturesIo::new(stream), service_fn(handle))
                .await
                .expect("the connection is served");
        });
    }
}

/// Sends `requests` over one connection; returns the response bodies.
async fn client(address: SocketAddr, requests: Vec<Request<Full<Bytes>>>) -> Vec<String> {
    let stream = TcpStream::connect(address).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(FuturesIo::new(stream))
        .await
        .expect("handshake");
    let connection = bwos::task::spawn(connection);
    let mut bodies = Vec::new();
    for request in requests {
        // After a response the connection task may not have taken the next
        // request slot yet: hyper cancels a request sent before `ready`.
        sender
            .ready()
            .await
            .expect("the connection takes another request");
        let response = sender.send_request(request).await.expect("a response");
        assert_eq!(response.status(), 200);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        bodies.push(String::from_utf8(body.to_vec()).expect("UTF-8"));
    }
    drop(sender);
    connection
        .await
        .unwrap()
        .expect("the client connection closes cleanly");
    bodies
}

fn request(method: Method, path: &str, body: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

#[test]
fn a_hyper_server_on_bwos_answers_real_requests() {
    bwos_testkit::watchdog("a_hyper_server_on_bwos_answers_real_requests", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let listener = pool
            .block_on(TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))))
            .unwrap();
        let address = listener.local_addr().unwrap();
        let server = pool.spawn_task(serve(listener));
        let clients: Vec<_> = (0..8)
            .map(|i| {
                pool.spawn_task(client(
                    address,
                    vec![
                        request(Method::GET, "/", ""),
                        request(Method::POST, "/echo", &format!("client {i}")),
                        request(Method::GET, "/sum", ""),
                    ],
                ))
            })
            .collect();
        let bodies = pool.block_on(async move {
            let mut bodies = Vec::new();
            for client in clients {
                bodies.push(client.await.unwrap());
            }
            bodies
        });
        for (i, bodies) in bodies.iter().enumerate() {
            assert_eq!(bodies[0], "Hello, world!");
            assert_eq!(bodies[1], format!("client {i}"));
            assert_eq!(bodies[2], "5050");
        }
        server.abort();
        assert!(pool.block_on(server).unwrap_err().is_cancelled());
    });
}
