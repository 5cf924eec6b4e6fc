//! Sockets driven by the pool's workers: every byte arrives exactly once
//! in order (large transfers force short reads and writes), wake-ups from
//! the network reach a sleeping pool, a pool's shutdown fails its
//! sockets' waiting operations, and socket tasks can fork and join.

#![cfg(all(feature = "io", not(bwos_loom)))]

use std::net::SocketAddr;
use std::time::Duration;

use bwos::ThreadPoolBuilder;
use bwos::net::{TcpListener, TcpStream};
use bwos_testkit::watchdog;
use futures_lite::{AsyncReadExt, AsyncWriteExt};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Deterministic bytes that differ per connection and position.
fn payload(connection: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ connection.wrapping_mul(131)) as u8)
        .collect()
}

/// Many connections at once, some with payloads far larger than the
/// kernel's socket buffers (so reads and writes come back short and the
/// edge-triggered readiness must be cleared and re-armed correctly): the
/// echo of every connection equals what it sent.
#[test]
fn echo_server_returns_every_byte_on_many_connections() {
    watchdog("echo_server_returns_every_byte_on_many_connections", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let connections = 48;
        let sizes = |c: usize| match c % 4 {
            0 => 1,
            1 => 1000,
            2 => 64 * 1024,
            _ => 3 * 1024 * 1024,
        };
        let echoed = pool.block_on(async move {
            let listener = TcpListener::bind(loopback()).await.unwrap();
            let address = listener.local_addr().unwrap();
            let server = bwos::task::spawn(async move {
                let mut served = Vec::new();
                for _ in 0..connections {
                    let (stream, _) = listener.accept().await.unwrap();
                    served.push(bwos::task::spawn(async move {
                        // Echo until the client shuts its half down.
                        let (mut reader, mut writer) = (&stream, &stream);
                        let copied = futures_lite::io::copy(&mut reader, &mut writer)
                            .await
                            .unwrap();
                        writer.close().await.unwrap();
                        copied
                    }));
                }
                let mut total = 0;
                for handle in served {
                    total += handle.await.unwrap();
                }
                total
            });
            let clients: Vec<_> = (0..connections)
                .map(|c| {
                    bwos::task::spawn(async move {
                        let stream = TcpStream::connect(address).await.unwrap();
                        stream.set_nodelay(true).unwrap();
                        let sent = payload(c, sizes(c));
                        // Write and read concurrently: a large echo
                        // cannot be written whole before it is read.
                        let writer = {
                            let sent = sent.clone();
                            let stream = &stream;
                            async move {
                                let mut writer = stream;
                                writer.write_all(&sent).await.unwrap();
                                writer.close().await.unwrap();
                            }
                        };
                        let reader = async {
                            let mut received = Vec::new();
                            let mut reader = &stream;
                            reader.read_to_end(&mut received).await.unwrap();
                            received
                        };
                        let ((), received) = futures_lite::future::zip(writer, reader).await;
                        (sent, received)
                    })
                })
                .collect();
            let mut bytes = 0;
            for client in clients {
                let (sent, received) = client.await.unwrap();
                assert_eq!(sent.len(), received.len(), "an echo lost or gained bytes");
                assert!(sent == received, "an echo came back altered");
                bytes += sent.len() as u64;
            }
            (bytes, server.await.unwrap())
        });
        let expected: u64 = (0..connections).map(|c| sizes(c) as u64).sum();
        assert_eq!(echoed, (expected, expected));
    });
}

/// The pool falls asleep (one worker in the driver's poll) with a task
/// waiting in `accept`; a connection from a plain thread much later wakes
/// it. Then the same with a task waiting to read.
#[test]
fn a_sleeping_pool_wakes_for_a_connection_and_for_data() {
    watchdog(
        "a_sleeping_pool_wakes_for_a_connection_and_for_data",
        || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let listener = pool.block_on(TcpListener::bind(loopback())).unwrap();
            let address = listener.local_addr().unwrap();
            let server = pool.spawn_task(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut byte = [0u8; 1];
                stream.read_exact(&mut byte).await.unwrap();
                byte[0]
            });
            // Long enough for both workers to fall asleep.
            std::thread::sleep(Duration::from_millis(300));
            let mut client = std::net::TcpStream::connect(address).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            assert!(!server.is_finished(), "read a byte nobody sent");
            std::io::Write::write_all(&mut client, &[42]).unwrap();
            assert_eq!(bwos::block_on(server).unwrap(), 42);
        },
    );
}

/// A socket created on a pool fails its waiting `accept` (awaited on a
/// plain thread, outside the pool) once the pool shuts down, and new
/// sockets cannot be made through a registration of that pool.
#[test]
fn a_pools_shutdown_fails_its_sockets_waiting_operations() {
    watchdog(
        "a_pools_shutdown_fails_its_sockets_waiting_operations",
        || {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let listener = pool.block_on(TcpListener::bind(loopback())).unwrap();
            let waiter = std::thread::spawn(move || {
                let result = futures_lite::future::block_on(listener.accept());
                (result.map(|_| ()), listener)
            });
            std::thread::sleep(Duration::from_millis(100));
            drop(pool);
            let (result, listener) = waiter.join().unwrap();
            let error = result.expect_err("accept on a shut-down pool succeeded");
            assert!(error.to_string().contains("shut down"), "{error}");
            let again = futures_lite::future::block_on(listener.accept());
            assert!(again.is_err(), "a later accept succeeded");
        },
    );
}

/// A connection's task calls `join` on the pool that drives its socket.
#[test]
fn a_socket_task_forks_and_joins_on_its_pool() {
    watchdog("a_socket_task_forks_and_joins_on_its_pool", || {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let sum = pool.block_on(async {
            let listener = TcpListener::bind(loopback()).await.unwrap();
            let address = listener.local_addr().unwrap();
            let server = bwos::task::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 8];
                stream.read_exact(&mut request).await.unwrap();
                let n = u64::from_le_bytes(request);
                let (a, b) =
                    bwos::join(|| (1..=n / 2).sum::<u64>(), || (n / 2 + 1..=n).sum::<u64>());
                stream.write_all(&(a + b).to_le_bytes()).await.unwrap();
            });
            let mut client = TcpStream::connect(address).await.unwrap();
            client.write_all(&1000u64.to_le_bytes()).await.unwrap();
            let mut reply = [0u8; 8];
            client.read_exact(&mut reply).await.unwrap();
            server.await.unwrap();
            u64::from_le_bytes(reply)
        });
        assert_eq!(sum, 500_500);
    });
}

/// Connecting to a closed port reports the refusal.
#[test]
fn connecting_to_a_closed_port_fails() {
    watchdog("connecting_to_a_closed_port_fails", || {
        let closed = std::net::TcpListener::bind(loopback()).unwrap();
        let address = closed.local_addr().unwrap();
        drop(closed);
        let result = bwos::block_on(TcpStream::connect(address));
        let error = result.expect_err("connected to a closed port");
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::ConnectionRefused,
            "{error}"
        );
    });
}

// Mutation caught: `ThreadLatch::for_current_thread` waking a worker waiter
// as a plain thread (`Waiter::Thread`: an unpark, which does not interrupt
// the driver's poll): the first round never ends, the watchdog fails it.
/// A worker waiting for another pool's work keeps running its own pool's
/// work, and falls asleep where its pool's idle workers sleep: in the I/O
/// driver once the pool has one. The other pool's worker that finishes
/// the work must wake it there (a thread unpark alone does not interrupt
/// the driver's poll, and a one-worker pool with nothing else to do would
/// never wake).
#[test]
fn a_worker_waiting_for_another_pool_wakes_in_its_io_driver() {
    watchdog(
        "a_worker_waiting_for_another_pool_wakes_in_its_io_driver",
        || {
            let waiting_pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let working_pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            // The first socket gives the waiting pool its I/O driver.
            let listener = waiting_pool
                .block_on(TcpListener::bind(loopback()))
                .unwrap();
            // The work finishes only once the waiter has fallen asleep
            // again (in the driver), so that every round tests a wake-up
            // there, however slow the machine (a fixed delay was too short
            // under AddressSanitizer on a loaded machine). A waiter that
            // never sleeps again hangs the round: the watchdog fails it.
            // (The count is read before the round starts: the waiter may
            // fall asleep before the working pool picks up the work.)
            let work = |round: u64, sleeps_before: u64| {
                while waiting_pool.stats().sleeps == sleeps_before {
                    std::thread::sleep(Duration::from_millis(1));
                }
                round
            };
            for round in 0..10u64 {
                let sleeps = waiting_pool.stats().sleeps;
                // Even rounds wait in `install`, odd ones for a scope of
                // the other pool run in place (its spawned job runs there).
                let got = waiting_pool.install(|| {
                    if round % 2 == 0 {
                        working_pool.install(|| work(round, sleeps))
                    } else {
                        let mut got = 0;
                        working_pool
                            .in_place_scope(|scope| scope.spawn(|_| got = work(round, sleeps)));
                        got
                    }
                });
                assert_eq!(got, round);
            }
            assert!(waiting_pool.stats().sleeps >= 10, "a sleep per round");
            drop(listener);
        },
    );
}
