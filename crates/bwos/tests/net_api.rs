//! `bwos::net` as tokio users write it: names resolved, errors that name
//! the address, split and owned halves, UDP, Unix sockets.

#![cfg(all(feature = "io", not(bwos_loom)))]

use std::net::{Shutdown, SocketAddr};

use bwos::net::{TcpListener, TcpStream, UdpSocket};
use bwos_testkit::watchdog;
use futures_lite::{AsyncReadExt as _, AsyncWriteExt as _};

#[test]
fn connect_resolves_a_host_name() {
    watchdog("connect_resolves_a_host_name", || {
        bwos::block_on(async {
            let listener = TcpListener::bind("localhost:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let accept = bwos::task::spawn(async move { listener.accept().await.map(|_| ()) });
            // "localhost" is a name: resolved on a blocking thread.
            let stream = TcpStream::connect(("localhost", port)).await.unwrap();
            assert_eq!(stream.peer_addr().unwrap().port(), port);
            accept.await.unwrap().unwrap();
        });
    });
}

#[test]
fn binding_an_address_in_use_names_it() {
    watchdog("binding_an_address_in_use_names_it", || {
        bwos::block_on(async {
            let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = taken.local_addr().unwrap();
            let error = TcpListener::bind(address).await.expect_err("in use");
            assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
            assert!(
                error.to_string().contains(&address.to_string()),
                "the error names the address: {error}"
            );
            let error = TcpListener::bind("no-such-host.invalid:80")
                .await
                .expect_err("no such host");
            assert!(
                error.to_string().contains("no-such-host.invalid"),
                "{error}"
            );
        });
    });
}

#[test]
fn halves_read_and_write_in_two_tasks_and_reunite() {
    watchdog("halves_read_and_write", || {
        bwos::block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            // An echo server on owned halves: one task copies read to write.
            let server = bwos::task::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let (mut read, mut write) = stream.into_split();
                let mut buffer = vec![0u8; 4096];
                loop {
                    let n = read.read(&mut buffer).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    write.write_all(&buffer[..n]).await.unwrap();
                }
                // Back in one piece (reuniting shuts nothing down): end
                // the echo by hand.
                let stream = read.reunite(write).expect("halves of one stream");
                stream.shutdown(Shutdown::Write).unwrap();
                stream
            });
            let client = TcpStream::connect(address).await.unwrap();
            let payload: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
            let (mut read, mut write) = client.split();
            let writer = async {
                write.write_all(&payload).await.unwrap();
                client.shutdown(Shutdown::Write).unwrap();
            };
            let reader = async {
                let mut echoed = Vec::new();
                read.read_to_end(&mut echoed).await.unwrap();
                echoed
            };
            let ((), echoed) = futures_lite::future::zip(writer, reader).await;
            assert_eq!(echoed, payload);
            let reunited = server.await.unwrap();
            assert_eq!(reunited.local_addr().unwrap(), address);
        });
    });
}

#[test]
fn halves_of_two_streams_do_not_reunite() {
    watchdog("halves_of_two_streams", || {
        bwos::block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let first = TcpStream::connect(address).await.unwrap();
            let second = TcpStream::connect(address).await.unwrap();
            let (read, _) = first.into_split();
            let (_, write) = second.into_split();
            let error = read.reunite(write).expect_err("different streams");
            assert!(error.to_string().contains("different"));
        });
    });
}

#[test]
fn udp_round_trips_connected_and_not() {
    watchdog("udp_round_trips", || {
        bwos::block_on(async {
            let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let server_address = server.local_addr().unwrap();
            let mut buffer = [0u8; 64];
            // Unconnected: send_to / recv_from.
            client.send_to(b"one", server_address).await.unwrap();
            let (n, from) = server.recv_from(&mut buffer).await.unwrap();
            assert_eq!(
                (&buffer[..n], from),
                (&b"one"[..], client.local_addr().unwrap())
            );
            // Connected: send / recv, with the reply from the server.
            client.connect(server_address).await.unwrap();
            assert_eq!(client.peer_addr().unwrap(), server_address);
            client.send(b"two").await.unwrap();
            let (n, from) = server.recv_from(&mut buffer).await.unwrap();
            server.send_to(&buffer[..n], from).await.unwrap();
            let n = client.recv(&mut buffer).await.unwrap();
            assert_eq!(&buffer[..n], b"two");
            // Many datagrams, received by another task.
            let receiver = bwos::task::spawn(async move {
                let mut sum = 0u64;
                let mut buffer = [0u8; 8];
                for _ in 0..100 {
                    let (n, _) = server.recv_from(&mut buffer).await.unwrap();
                    sum += u64::from_le_bytes(buffer[..n].try_into().unwrap());
                }
                sum
            });
            for i in 0..100u64 {
                client.send(&i.to_le_bytes()).await.unwrap();
            }
            assert_eq!(receiver.await.unwrap(), 4950);
        });
    });
}

#[cfg(unix)]
#[test]
fn unix_streams_echo_and_pairs_talk() {
    use bwos::net::{UnixListener, UnixStream};
    watchdog("unix_streams", || {
        let dir = std::env::temp_dir().join(format!("bwos-unix-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let _ = std::fs::remove_file(&path);
        bwos::block_on(async {
            let listener = UnixListener::bind(&path).unwrap();
            let error = UnixListener::bind(&path).expect_err("the path exists");
            assert!(error.to_string().contains("s.sock"), "{error}");
            let server = bwos::task::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut line = [0u8; 5];
                stream.read_exact(&mut line).await.unwrap();
                stream.write_all(&line).await.unwrap();
            });
            let mut client = UnixStream::connect(&path).await.unwrap();
            client.write_all(b"hello").await.unwrap();
            let mut reply = [0u8; 5];
            client.read_exact(&mut reply).await.unwrap();
            assert_eq!(&reply, b"hello");
            server.await.unwrap();
            let (mut a, mut b) = UnixStream::pair().unwrap();
            a.write_all(b"pair").await.unwrap();
            a.close().await.unwrap();
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"pair");
        });
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

/// The deprecated `bwos::io` path still names the same types.
#[test]
#[allow(deprecated)]
fn the_old_io_path_still_works() {
    let _: fn(&bwos::io::TcpStream) -> std::io::Result<SocketAddr> =
        bwos::net::TcpStream::peer_addr;
}
