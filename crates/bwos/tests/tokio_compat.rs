//! The `tokio-compat` feature: tokio libraries and tokio's own APIs called
//! from bwos tasks, blocking threads, `block_in_place` and `block_on`, and
//! what runs where (`src/sched/tokio_compat.rs`). Loopback servers only.
//!
//! Every test that calls tokio in a task catches the same mutation: a
//! worker thread that does not enter the compat runtime's context (the
//! `tokio_compat::enter()` call in `WorkerThread::main` removed), under
//! which every tokio call in a task panics with "there is no reactor
//! running" (run once: 7 of these 11 tests fail). The comment above a test
//! names the other mutations it catches.

#![cfg(all(feature = "tokio-compat", not(bwos_loom)))]

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use bwos::ThreadPoolBuilder;
use bwos_testkit::watchdog;
use common::pool;
use tokio::runtime::{Handle, RuntimeFlavor};

mod common;

/// The compat runtime's driver thread (`sched/tokio_compat.rs`).
const COMPAT_THREAD: &str = "bwos-tokio-compat";

/// Long enough that a wait for another thread never times out on a slow
/// machine; short enough that a regression fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);

fn thread_name() -> Option<String> {
    thread::current().name().map(str::to_owned)
}

/// The name of the thread on which `handle`'s runtime runs its tasks;
/// `None` if it runs none within [`PATIENCE`] (a runtime whose thread is
/// blocked, the caller's own).
fn runtime_thread(handle: &Handle) -> Option<String> {
    let spawned = handle.spawn(async { thread_name() });
    bwos::block_on(bwos::time::timeout(PATIENCE, spawned))
        .ok()?
        .unwrap()
}

/// A GET with reqwest (hyper-util's client, tokio's sockets, its
/// connection task `tokio::spawn`ed) from a bwos task, against a server
/// built as the `http_server` example is (`bwos::net` and
/// `bwos::hyper::Executor`, which the feature leaves alone: its
/// connection tasks run on the workers).
#[cfg(all(feature = "hyper", feature = "tokio-io"))]
#[test]
fn reqwest_gets_from_a_bwos_http_server() {
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bwos::hyper::{Executor, Timer};
    use bwos::net::TcpListener;
    use http_body_util::Full;
    use hyper::body::{Bytes, Incoming};
    use hyper::service::service_fn;
    use hyper::{Method, Request, Response, StatusCode};
    use hyper_util::rt::TokioIo;
    use hyper_util::server::conn::auto;

    // The `http_server` example's handler (its `GET /`).
    async fn respond(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
        let response = match (request.method(), request.uri().path()) {
            (&Method::GET, "/") => Response::new(Full::new(Bytes::from_static(b"Hello, world!"))),
            _ => {
                let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
                *response.status_mut() = StatusCode::NOT_FOUND;
                response
            }
        };
        Ok(response)
    }

    watchdog("reqwest_gets_from_a_bwos_http_server", || {
        let pool = pool(2);
        // Requests the server answered on a bwos worker.
        let served_on_workers = Arc::new(AtomicUsize::new(0));
        let served = Arc::clone(&served_on_workers);
        let executor = Executor::new(pool.handle());
        let (body, client_on_worker) = pool.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            bwos::task::spawn(async move {
                let builder = auto::Builder::new(executor);
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let builder = builder.clone();
                    let served = Arc::clone(&served);
                    bwos::task::spawn(async move {
                        let service = service_fn(move |request| {
                            if bwos::current_thread_index().is_some() {
                                served.fetch_add(1, Ordering::Relaxed);
                            }
                            respond(request)
                        });
                        let mut builder = builder;
                        builder.http1().timer(Timer::new());
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            let client = bwos::task::spawn(async move {
                let response = reqwest::get(format!("http://{address}/")).await.unwrap();
                assert_eq!(response.status(), reqwest::StatusCode::OK);
                let body = response.text().await.unwrap();
                (body, bwos::current_thread_index().is_some())
            });
            client.await.unwrap()
        });
        assert_eq!(body, "Hello, world!");
        assert!(client_on_worker, "the client task resumed off the workers");
        assert_eq!(served_on_workers.load(Ordering::Relaxed), 1);
    });
}

/// `tokio::fs` (tokio's blocking threads behind it) from a bwos task.
#[test]
fn tokio_fs_reads_a_file_in_a_task() {
    watchdog("tokio_fs_reads_a_file_in_a_task", || {
        let path = std::env::temp_dir().join(format!(
            "bwos-tokio-compat-{}-read_to_string.txt",
            std::process::id()
        ));
        std::fs::write(&path, "read by tokio::fs on bwos").unwrap();
        let pool = pool(2);
        let read = pool.block_on(pool.spawn_task({
            let path = path.clone();
            async move { tokio::fs::read_to_string(path).await }
        }));
        let _ = std::fs::remove_file(&path);
        assert_eq!(read.unwrap().unwrap(), "read by tokio::fs on bwos");
    });
}

/// `tokio::time::timeout` in a bwos task: it fires around a future that
/// never ends, and lets through one that ends first.
///
/// Mutation caught: the compat runtime without a thread that drives it
/// (its `block_on(pending())` replaced by a thread that parks holding the
/// runtime): tokio's timer never fires, and bwos's own
/// timeout around it reports that instead of a hang.
#[test]
fn tokio_timeout_fires_and_lets_a_finished_future_through() {
    watchdog(
        "tokio_timeout_fires_and_lets_a_finished_future_through",
        || {
            let pool = pool(2);
            pool.block_on(pool.spawn_task(async {
                let never =
                    tokio::time::timeout(Duration::from_millis(10), std::future::pending::<()>());
                let fired = bwos::time::timeout(PATIENCE, never)
                    .await
                    .expect("tokio's timer fires (is the compat runtime driven?)");
                assert!(fired.is_err(), "a timeout around a pending future fired");
                assert!(bwos::current_thread_index().is_some());

                let finished = tokio::time::timeout(Duration::from_secs(3600), async {
                    bwos::time::sleep(Duration::from_millis(10)).await;
                    7
                })
                .await;
                assert_eq!(finished.unwrap(), 7);
            }))
            .unwrap();
        },
    );
}

/// `tokio::sync::mpsc::Sender::send_timeout` (a tokio timer under a
/// runtime-agnostic channel): times out on a full channel, succeeds when
/// another bwos task makes room in time.
#[test]
fn mpsc_send_timeout_times_out_then_succeeds() {
    use tokio::sync::mpsc::error::SendTimeoutError;

    watchdog("mpsc_send_timeout_times_out_then_succeeds", || {
        let pool = pool(2);
        let received = pool.block_on(pool.spawn_task(async {
            let (sender, mut receiver) = tokio::sync::mpsc::channel(1);
            sender.send(1).await.unwrap();
            let full = sender.send_timeout(2, Duration::from_millis(10)).await;
            assert!(
                matches!(full, Err(SendTimeoutError::Timeout(2))),
                "{full:?}"
            );
            let reader = bwos::task::spawn(async move {
                bwos::time::sleep(Duration::from_millis(10)).await;
                let first = receiver.recv().await;
                let second = receiver.recv().await;
                (first, second)
            });
            sender
                .send_timeout(3, Duration::from_secs(3600))
                .await
                .unwrap();
            drop(sender);
            reader.await.unwrap()
        }));
        assert_eq!(received.unwrap(), (Some(1), Some(3)));
    });
}

/// `tokio::spawn` from a bwos task runs the future on the compat
/// runtime's thread, and the bwos task awaits its `JoinHandle`;
/// `tokio::task::spawn_blocking` runs on that runtime's blocking threads.
///
/// Mutation caught: the driver thread left unnamed (what the docs say
/// runs where is what runs there; two other tests fail too).
#[test]
fn tokio_spawn_runs_on_the_compat_thread() {
    watchdog("tokio_spawn_runs_on_the_compat_thread", || {
        let pool = pool(2);
        let (spawned, blocking, back_on_worker) = pool
            .block_on(pool.spawn_task(async {
                let spawned = tokio::spawn(async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    (thread_name(), bwos::current_thread_index())
                })
                .await
                .unwrap();
                let blocking = tokio::task::spawn_blocking(thread_name).await.unwrap();
                (spawned, blocking, bwos::current_thread_index().is_some())
            }))
            .unwrap();
        assert_eq!(spawned, (Some(COMPAT_THREAD.to_owned()), None));
        assert_eq!(blocking.as_deref(), Some("bwos-tokio-compat-blocking"));
        assert!(back_on_worker, "the bwos task resumed off the workers");
    });
}

/// `tokio::net` from bwos tasks: a listener and a stream, each task polled
/// on the workers, tokio's reactor on the compat thread.
#[test]
fn tokio_net_round_trips_between_two_tasks() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    watchdog("tokio_net_round_trips_between_two_tasks", || {
        let pool = pool(2);
        let echoed = pool.block_on(pool.spawn_task(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let server = bwos::task::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut buffer = [0; 5];
                stream.read_exact(&mut buffer).await.unwrap();
                stream.write_all(&buffer).await.unwrap();
                bwos::current_thread_index().is_some()
            });
            let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
            stream.write_all(b"hello").await.unwrap();
            let mut buffer = [0; 5];
            stream.read_exact(&mut buffer).await.unwrap();
            assert!(server.await.unwrap(), "the server resumed off the workers");
            buffer
        }));
        assert_eq!(&echoed.unwrap(), b"hello");
    });
}

/// `Handle::current()` is the compat runtime's in a task, on a blocking
/// thread (`bwos::task::spawn_blocking`) and in `bwos::block_on` on a
/// plain thread.
///
/// Mutations caught: the blocking threads' `enter()` removed (this test
/// alone); `block_on`'s `enter()` removed (this test and the next).
#[test]
fn handle_current_is_the_compat_runtime_in_tasks_blocking_threads_and_block_on() {
    watchdog(
        "handle_current_in_tasks_blocking_threads_and_block_on",
        || {
            let pool = pool(2);
            let in_task = pool
                .block_on(pool.spawn_task(async { Handle::current() }))
                .unwrap();
            let in_blocking = pool
                .block_on(pool.spawn_task(async {
                    bwos::task::spawn_blocking(Handle::try_current)
                        .await
                        .unwrap()
                }))
                .unwrap()
                .expect("a blocking thread is in the compat context");
            // This test's thread is no worker and was in no tokio context.
            assert!(Handle::try_current().is_err());
            let in_block_on = bwos::block_on(async { Handle::try_current() })
                .expect("block_on's caller is in the compat context");
            assert!(Handle::try_current().is_err(), "block_on left its context");
            for handle in [in_task, in_blocking, in_block_on] {
                assert_eq!(handle.runtime_flavor(), RuntimeFlavor::CurrentThread);
                assert_eq!(runtime_thread(&handle).as_deref(), Some(COMPAT_THREAD));
            }
        },
    );
}

/// A `bwos::block_on` inside a user's tokio runtime polls with the compat
/// context and gives the user's back when it returns (tokio requires its
/// context guards to be dropped in order).
///
/// Mutations caught: `block_on`'s guard leaked (`mem::forget(enter())`):
/// tokio panics when the user's runtime drops its own guard, now out of
/// order; `block_on`'s `enter()` removed: the future polls with the user's
/// runtime, whose one thread is blocked in that `block_on`, and its task
/// does not run.
#[test]
fn block_on_inside_a_users_runtime_restores_its_context() {
    watchdog(
        "block_on_inside_a_users_runtime_restores_its_context",
        || {
            let user = thread::Builder::new()
                .name("users-runtime".into())
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    runtime.block_on(async {
                        let inside = bwos::block_on(async { runtime_thread(&Handle::current()) });
                        let after = tokio::spawn(async { thread_name() }).await.unwrap();
                        (inside, after)
                    })
                })
                .unwrap();
            let (inside, after) = user.join().unwrap();
            assert_eq!(inside.as_deref(), Some(COMPAT_THREAD));
            assert_eq!(after.as_deref(), Some("users-runtime"));
        },
    );
}

/// A task that runs on a `block_in_place` replacement thread (one worker,
/// whose own thread blocks) is in the compat context.
///
/// Mutation caught: the replacement thread's `enter()` removed.
#[test]
fn block_in_place_replacement_thread_is_in_the_context() {
    watchdog(
        "block_in_place_replacement_thread_is_in_the_context",
        || {
            let pool = pool(1);
            let (inside, inside_now) = mpsc::channel();
            let (report, reported) = mpsc::channel();
            let blocker = pool.spawn_task(async move {
                bwos::task::block_in_place(move || {
                    inside.send(std::thread::current().id()).unwrap();
                    reported.recv_timeout(PATIENCE)
                })
            });
            let blocked = inside_now.recv_timeout(PATIENCE).unwrap();
            // The one worker's own thread blocks: this task runs on the
            // replacement.
            pool.spawn_task(async move {
                report
                    .send((std::thread::current().id(), Handle::try_current().is_ok()))
                    .unwrap();
            });
            let (ran_on, in_context) = pool
                .block_on(blocker)
                .unwrap()
                .expect("the task ran during block_in_place");
            assert_ne!(ran_on, blocked, "the task ran on the blocked thread");
            assert!(in_context, "the replacement thread has no tokio context");
        },
    );
}

/// A pool's building thread (`use_current_thread`), which runs the pool's
/// tasks while it waits, is in the compat context from `build` on; a
/// building thread in a user's tokio context keeps it.
///
/// Mutations caught: `enter_for_life()` removed from
/// `adopt_current_thread` (the task polled there has no context);
/// `enter_for_life` entering even when a context is there (the user's
/// guard is then dropped out of order, and tokio panics).
#[test]
fn the_building_thread_is_in_the_context_unless_it_has_one() {
    watchdog("the_building_thread_is_in_the_context", || {
        let plain = thread::spawn(|| {
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .unwrap();
            let task = pool.spawn_task(async {
                (bwos::current_thread_index(), Handle::try_current().is_ok())
            });
            // Only this thread runs the one worker.
            let end = std::time::Instant::now() + PATIENCE;
            while !task.is_finished() && std::time::Instant::now() < end {
                pool.yield_now();
            }
            assert!(task.is_finished(), "the building thread ran the task");
            pool.block_on(task).unwrap()
        });
        assert_eq!(plain.join().unwrap(), (Some(0), true));

        let users = thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let entered = runtime.enter();
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .unwrap();
            let flavor = Handle::current().runtime_flavor();
            drop(pool);
            // Would panic if a guard of bwos's were left above it.
            drop(entered);
            flavor
        });
        assert_eq!(users.join().unwrap(), RuntimeFlavor::CurrentThread);
    });
}

/// tokio's `block_in_place` (with tokio's `rt-multi-thread`) on a bwos
/// worker runs its closure in place, as tokio does outside its runtimes:
/// the documented behavior, which moves no worker (`bwos::task::
/// block_in_place` does).
#[test]
fn tokios_block_in_place_runs_in_place_on_a_worker() {
    watchdog("tokios_block_in_place_runs_in_place_on_a_worker", || {
        let pool = pool(2);
        let (before, inside) = pool
            .block_on(pool.spawn_task(async {
                let before = thread::current().id();
                let inside = tokio::task::block_in_place(|| thread::current().id());
                (before, inside)
            }))
            .unwrap();
        assert_eq!(before, inside);
    });
}
