//! Faults against the `http_server` example, run as a child process (the
//! binary that `cargo test` builds next to the test executables): the
//! server out of file descriptors, thousands of idle connections,
//! malformed and truncated requests, clients that vanish mid-response,
//! and clients too slow with their headers or silent. Each test starts its
//! own server on a free loopback port and kills it on every path.
//!
//! Run with `--nocapture` to see the figures measured (CPU time at the
//! descriptor limit, latency with idle connections, the slow client's cut,
//! descriptor counts).

// Linux: the server's descriptors and CPU time are read from /proc.
#![cfg(all(
    unix,
    target_os = "linux",
    feature = "hyper",
    feature = "tokio-io",
    not(bwos_loom)
))]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use bwos_testkit::{proc, watchdog};

/// How long a client waits for any one read or write before the test
/// calls the server stuck.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The example's binary: `target/<profile>/examples/http_server`, next to
/// the `deps` directory that holds this test executable.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the path of this test executable");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable sits in target/<profile>/deps");
    let binary = profile_dir.join("examples").join("http_server");
    assert!(
        binary.is_file(),
        "{} is missing: run `cargo build -p bwos --all-features --example http_server` \
         (or `cargo test --workspace --all-features`, which builds the examples) first",
        binary.display()
    );
    binary
}

fn nofile_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to an rlimit.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(status, 0, "getrlimit: {}", io::Error::last_os_error());
    limit
}

/// The running example; killed (and reaped) when dropped.
struct Server {
    child: Child,
    address: SocketAddr,
    /// Everything the server wrote to stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the server on `127.0.0.1:0`, with its descriptor limit's
    /// soft value lowered to `fd_limit` if given, and waits for its
    /// `listening on ADDR` line.
    fn start(fd_limit: Option<libc::rlim_t>) -> Server {
        let mut command = Command::new(example_binary());
        command
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let limit = fd_limit.map(|soft| libc::rlimit {
            rlim_cur: soft,
            rlim_max: nofile_limit().rlim_max,
        });
        // SAFETY: the closure runs in the forked child before exec and
        // only calls prctl and setrlimit (both async-signal-safe) on
        // values it owns; it allocates nothing and takes no lock.
        unsafe {
            command.pre_exec(move || {
                // The server dies with the thread that started it, even if
                // the watchdog ends the test process before `Drop` runs.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(limit) = &limit
                    && libc::setrlimit(libc::RLIMIT_NOFILE, limit) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("the http_server example starts");
        // Both pipes are drained for the server's whole life: a full pipe
        // would block its logging and so the server itself.
        let stdout = child.stdout.take().expect("piped stdout");
        let (address_tx, address_rx) = mpsc::channel();
        thread::spawn(move || {
            let mut address_tx = Some(address_tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(address) = line.strip_prefix("listening on ")
                    && let Some(tx) = address_tx.take()
                {
                    let _ = tx.send(address.trim().to_owned());
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        // The guard exists before the wait, so a server that never says
        // where it listens is still killed.
        let mut server = Server {
            child,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr,
        };
        let address = address_rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| {
                panic!(
                    "the server printed no `listening on` line; stderr: {}",
                    server.stderr_tail()
                )
            });
        server.address = address.parse().expect("a socket address");
        server
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The end of the server's stderr (its last 2,000 bytes or so), for
    /// failure messages.
    fn stderr_tail(&self) -> String {
        let stderr = self.stderr_text();
        let mut start = stderr.len().saturating_sub(2000);
        while !stderr.is_char_boundary(start) {
            start += 1;
        }
        stderr[start..].to_owned()
    }

    /// Panics if the server has exited.
    fn assert_running(&mut self) {
        match self.child.try_wait() {
            Ok(None) => {}
            Ok(Some(status)) => panic!(
                "the server exited ({status}); stderr: {}",
                self.stderr_tail()
            ),
            Err(error) => panic!("cannot poll the server: {error}"),
        }
    }

    /// Panics if the server has exited or reported a panic.
    fn assert_healthy(&mut self) {
        self.assert_running();
        let stderr = self.stderr_text();
        if let Some(at) = stderr.find("panicked") {
            let report: String = stderr[at..].lines().take(10).collect::<Vec<_>>().join("\n");
            panic!("the server panicked: {report}");
        }
    }

    /// How many descriptors the server has open.
    fn fd_count(&self) -> usize {
        proc::descriptors_of(self.pid()).unwrap()
    }

    /// The server's CPU time so far (user + system).
    fn cpu_time(&self) -> Duration {
        proc::cpu_time(Path::new(&format!("/proc/{}/stat", self.pid()))).unwrap()
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.address).expect("connects to the server");
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        stream
    }

    /// `GET /` on a fresh connection.
    fn get(&self) -> io::Result<Response> {
        let mut stream = self.connect();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")?;
        read_response(&mut stream)
    }

    /// Panics unless `GET /` is answered normally.
    fn assert_serves(&self) {
        let response = self.get().expect("GET / is answered");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"Hello, world!");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `condition` every 20 ms until it holds (true) or `limit` passes
/// (false).
fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug)]
struct Response {
    status: u16,
    body: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one HTTP/1.1 response: the head, then a `content-length` body
/// (or, without one, everything up to the end of the stream).
fn read_response(stream: &mut TcpStream) -> io::Result<Response> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = find(&data, b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "closed inside the response head: {:?}",
                    String::from_utf8_lossy(&data)
                ),
            ));
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other(format!("not an HTTP/1.1 response: {head:?}")))?;
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    let mut body = data.split_off(head_end);
    match length {
        Some(length) => {
            while body.len() < length {
                let n = stream.read(&mut buf)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                body.extend_from_slice(&buf[..n]);
            }
            body.truncate(length);
        }
        None => {
            stream.read_to_end(&mut body)?;
        }
    }
    Ok(Response { status, body })
}

/// Reads until the server closes the connection (end of stream or a
/// reset); returns what came before. Panics if the server neither closes
/// nor stops within [`IO_TIMEOUT`].
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return data,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                panic!(
                    "the server neither answered nor closed within {IO_TIMEOUT:?}; got {:?}",
                    String::from_utf8_lossy(&data)
                )
            }
            // Reset by the server: closed too.
            Err(_) => return data,
        }
    }
}

/// Closes `stream` with a reset (SO_LINGER 0) instead of a FIN.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is the stream's own, open while `stream`
    // lives; the pointer and length describe `linger`, which outlives the
    // call.
    let status = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast::<libc::c_void>(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(status, 0, "SO_LINGER: {}", io::Error::last_os_error());
    drop(stream);
}

/// p-th percentile (0..=100) of sorted samples.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// A connection with a request waiting for the last byte of its body (an
/// upload in progress): idle, and cut by no timeout of the server (the
/// header-read timeouts end with the head).
fn open_upload(server: &Server) -> TcpStream {
    let mut stream = server.connect();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\na")
        .unwrap();
    stream
}

/// Sends the last byte of [`open_upload`]'s body; the echo is `ab`.
fn finish_upload(stream: &mut TcpStream) -> io::Result<Response> {
    stream.write_all(b"b")?;
    read_response(stream)
}

#[test]
fn out_of_descriptors_neither_dies_nor_spins_and_recovers() {
    watchdog("http_server_out_of_descriptors", || {
        const LIMIT: libc::rlim_t = 64;
        const CLIENTS: usize = 200;
        let mut server = Server::start(Some(LIMIT));
        let baseline = server.fd_count();
        // Accepted first: a connection that is open when the limit is hit.
        let mut early = open_upload(&server);
        // More than the server can take: once it stops accepting, the
        // listen backlog (128) fills and the kernel drops further SYNs. A
        // connect that does not complete promptly ends the attempts if the
        // server was out of descriptors before it started (else the
        // backlog was full only until the server caught up: try again).
        let mut clients = Vec::with_capacity(CLIENTS);
        let deadline = Instant::now() + Duration::from_secs(10);
        while clients.len() < CLIENTS && Instant::now() < deadline {
            let at_limit = server.stderr_text().contains("accept failed");
            match TcpStream::connect_timeout(&server.address, Duration::from_millis(300)) {
                Ok(stream) => clients.push(stream),
                Err(_) if at_limit => break,
                Err(_) => {}
            }
        }
        assert!(
            clients.len() > LIMIT as usize,
            "only {} clients connected",
            clients.len()
        );
        assert!(
            wait_until(Duration::from_secs(10), || server
                .stderr_text()
                .contains("accept failed")),
            "the server never ran out of descriptors ({} open, limit {LIMIT})",
            server.fd_count()
        );
        let at_limit = server.fd_count();
        let failures = || server.stderr_text().matches("accept failed").count();
        let failures_before = failures();
        let window = Instant::now();
        let cpu_before = server.cpu_time();
        thread::sleep(Duration::from_millis(1500));
        let cpu = server.cpu_time() - cpu_before;
        let elapsed = window.elapsed();
        let share = cpu.as_secs_f64() / elapsed.as_secs_f64();
        let retries = failures() - failures_before;
        println!(
            "faults: at the descriptor limit ({at_limit} open, limit {LIMIT}, {} of {CLIENTS} \
             clients connected): server CPU {:.1}% of one core and {retries} failed accepts \
             over {elapsed:?}",
            clients.len(),
            share * 100.0,
        );
        server.assert_healthy();
        assert!(
            share < 0.5,
            "the server spins at the descriptor limit: {:.1}% of a core",
            share * 100.0
        );
        // The example backs off 50 ms per failed accept (about 30 in the
        // window); a spinning accept loop fails thousands of times, also
        // when a busy machine keeps its CPU share down.
        assert!(
            retries < 500,
            "the server spins at the descriptor limit: {retries} failed accepts in {elapsed:?}"
        );
        // The connections it holds are still served.
        let response = finish_upload(&mut early).expect("an open connection is served");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"ab");
        drop(early);
        drop(clients);
        // Descriptors free up as the server sees the closes: new clients
        // are served again.
        assert!(
            wait_until(Duration::from_secs(10), || server
                .get()
                .is_ok_and(|r| r.status == 200)),
            "not serving after the clients left; stderr: {}",
            server.stderr_tail()
        );
        server.assert_healthy();
        let recovered = wait_until(Duration::from_secs(10), || server.fd_count() <= baseline);
        println!(
            "faults: descriptors: {baseline} at start, {at_limit} at the limit, {} after",
            server.fd_count()
        );
        assert!(recovered, "the server kept descriptors of closed clients");
    });
}

#[test]
fn thousands_of_idle_connections_do_not_slow_active_clients() {
    watchdog("http_server_idle_connections", || {
        const IDLE: usize = 5000;
        const ACTIVE_THREADS: usize = 8;
        const REQUESTS: usize = 50;
        // Room for the idle connections on both ends (the server inherits
        // the raised limit).
        let mut limit = nofile_limit();
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: a valid pointer to an rlimit.
        let status = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
        assert_eq!(status, 0, "setrlimit: {}", io::Error::last_os_error());
        assert!(
            limit.rlim_cur as usize > IDLE + 1000,
            "descriptor limit {} too low for {IDLE} connections",
            limit.rlim_cur
        );
        let mut server = Server::start(None);
        let baseline = server.fd_count();
        // In batches smaller than the listen backlog (128), each accepted
        // before the next: a full backlog drops SYNs, and the kernel
        // retries a dropped one only after a second.
        const BATCH: usize = 100;
        let connecting = Instant::now();
        let mut idle: Vec<TcpStream> = Vec::with_capacity(IDLE);
        while idle.len() < IDLE {
            idle.extend((0..BATCH.min(IDLE - idle.len())).map(|_| open_upload(&server)));
            assert!(
                wait_until(Duration::from_secs(10), || server.fd_count()
                    >= baseline + idle.len()),
                "the server accepted only {} of {} connections",
                server.fd_count() - baseline,
                idle.len()
            );
        }
        println!(
            "faults: {IDLE} idle connections open and accepted in {:?}",
            connecting.elapsed()
        );
        let server_ref = &server;
        let mut latencies: Vec<Duration> = thread::scope(|scope| {
            let workers: Vec<_> = (0..ACTIVE_THREADS)
                .map(|i| {
                    scope.spawn(move || {
                        let mut samples = Vec::with_capacity(REQUESTS);
                        // Half the clients keep one connection, half open
                        // a new one per request.
                        let mut kept = (i % 2 == 0).then(|| server_ref.connect());
                        for _ in 0..REQUESTS {
                            let start = Instant::now();
                            let response = match &mut kept {
                                Some(stream) => {
                                    stream
                                        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
                                        .unwrap();
                                    read_response(stream)
                                }
                                None => server_ref.get(),
                            }
                            .expect("an active client is served");
                            samples.push(start.elapsed());
                            assert_eq!(response.status, 200);
                            assert_eq!(response.body, b"Hello, world!");
                        }
                        samples
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect()
        });
        latencies.sort();
        let p50 = percentile(&latencies, 50);
        let p99 = percentile(&latencies, 99);
        let max = *latencies.last().unwrap();
        println!(
            "faults: {IDLE} idle connections, {} requests from {ACTIVE_THREADS} active clients: \
             p50 {p50:?}, p99 {p99:?}, max {max:?}",
            latencies.len()
        );
        server.assert_healthy();
        assert!(
            p99 < Duration::from_secs(2),
            "p99 {p99:?} with {IDLE} idle connections"
        );
        // The idle connections were open all along, and are served too.
        assert!(
            server.fd_count() >= baseline + IDLE,
            "the server dropped idle connections: {} open",
            server.fd_count()
        );
        for stream in idle.iter_mut().step_by(IDLE / 10) {
            let response = finish_upload(stream).expect("an idle connection is served");
            assert_eq!(response.body, b"ab");
        }
        drop(idle);
    });
}

#[test]
fn malformed_and_truncated_requests_are_refused_and_serving_goes_on() {
    watchdog("http_server_malformed", || {
        let mut server = Server::start(None);
        let huge_header = {
            let mut request = b"GET / HTTP/1.1\r\nHost: test\r\nX-Huge: ".to_vec();
            request.resize(request.len() + (1 << 20), b'a');
            request.extend_from_slice(b"\r\n\r\n");
            request
        };
        let many_headers = {
            let mut request = b"GET / HTTP/1.1\r\nHost: test\r\n".to_vec();
            for i in 0..500 {
                request.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
            }
            request.extend_from_slice(b"\r\n");
            request
        };
        // (name, bytes, then shut down the writing half: a truncated request)
        let cases: Vec<(&str, Vec<u8>, bool)> = vec![
            ("garbage", b"\x00\xff\x13\x37 garbage \x01\r\n\r\n".to_vec(), false),
            ("bad request line", b"GET\r\n\r\n".to_vec(), false),
            ("request line without a version", b"GET /\r\nHost: test\r\n\r\n".to_vec(), false),
            ("bad method", b"G(T / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(), false),
            ("bad target", b"GET /a b HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(), false),
            ("header without a colon", b"GET / HTTP/1.1\r\nHost: test\r\nNoColon\r\n\r\n".to_vec(), false),
            ("space in a header name", b"GET / HTTP/1.1\r\nHost: test\r\nBad Name: v\r\n\r\n".to_vec(), false),
            ("control byte in a header value", b"GET / HTTP/1.1\r\nHost: test\r\nX: a\x00b\r\n\r\n".to_vec(), false),
            ("huge header (1 MiB)", huge_header, false),
            ("500 headers", many_headers, false),
            ("conflicting content-lengths", b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".to_vec(), false),
            ("negative content-length", b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: -1\r\n\r\n".to_vec(), false),
            ("invalid chunk size", b"POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n".to_vec(), false),
            ("chunk longer than its size", b"POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcdef\r\n0\r\n\r\n".to_vec(), false),
            ("truncated request line, then close", b"GET / HT".to_vec(), true),
            ("truncated headers, then close", b"GET / HTTP/1.1\r\nHost: test\r\nX-Part".to_vec(), true),
            ("truncated body, then close", b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nabc".to_vec(), true),
            ("truncated chunked body, then close", b"POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc".to_vec(), true),
            ("HTTP/2 preface, then garbage", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xde\xad\xbe\xef garbage garbage garbage".to_vec(), false),
            ("HTTP/2 preface, then a frame with a bad length", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\x04\x00\x00\x00\x00\x00".to_vec(), false),
            ("broken HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec(), false),
            ("truncated HTTP/2 preface, then close", b"PRI * HTTP/2.0\r\n".to_vec(), true),
        ];
        // Concurrently: a case the server sat on would cost the read
        // timeout once, not once per case.
        let outcomes: Vec<(&str, String)> = thread::scope(|scope| {
            let runs: Vec<_> = cases
                .iter()
                .map(|(name, bytes, truncated)| {
                    let server = &server;
                    scope.spawn(move || {
                        let mut stream = server.connect();
                        // The server may refuse and close before taking
                        // all of a big request: a failed write is fine.
                        let _ = stream.write_all(bytes);
                        if *truncated {
                            let _ = stream.shutdown(Shutdown::Write);
                        }
                        let reply = read_until_closed(&mut stream);
                        (*name, reply)
                    })
                })
                .collect();
            runs.into_iter()
                .map(|run| {
                    let (name, reply) = run.join().unwrap();
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let outcome = if reply.is_empty() {
                        "closed".to_owned()
                    } else if let Some(status) = text.strip_prefix("HTTP/1.1 ") {
                        let code = status.get(..3).unwrap_or_default().to_owned();
                        assert!(
                            code.starts_with('4'),
                            "{name}: answered {:?}",
                            text.lines().next()
                        );
                        code
                    } else {
                        // HTTP/2: frames (a GOAWAY), then the close.
                        assert!(
                            name.contains("HTTP/2"),
                            "{name}: neither an HTTP/1.1 response nor a close: {text:?}"
                        );
                        format!("{} bytes of HTTP/2 frames, closed", reply.len())
                    };
                    (name, outcome)
                })
                .collect()
        });
        for (name, outcome) in &outcomes {
            println!("faults: malformed request: {name}: {outcome}");
        }
        server.assert_healthy();
        server.assert_serves();
        // A valid request on the same server after all that.
        let mut stream = server.connect();
        stream
            .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap();
        let response = read_response(&mut stream).unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"hello");
    });
}

#[test]
fn clients_that_vanish_mid_response_leak_nothing() {
    watchdog("http_server_vanishing_clients", || {
        const THREADS: usize = 4;
        const ROUNDS: usize = 50;
        const BIG: usize = 2 << 20;
        let mut server = Server::start(None);
        let baseline = server.fd_count();
        let big_post = {
            let mut request =
                format!("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: {BIG}\r\n\r\n")
                    .into_bytes();
            request.resize(request.len() + BIG, b'x');
            request
        };
        let peak = Mutex::new(0usize);
        thread::scope(|scope| {
            for t in 0..THREADS {
                let (server, big_post, peak) = (&server, &big_post, &peak);
                scope.spawn(move || {
                    for round in 0..ROUNDS {
                        let mut stream = server.connect();
                        match (t + round) % 4 {
                            // The whole body sent, the echo never read:
                            // the close with unread data is a reset while
                            // the server writes.
                            0 => {
                                let _ = stream.write_all(big_post);
                                drop(stream);
                            }
                            // Half the body, then a reset mid-request.
                            1 => {
                                let _ = stream.write_all(&big_post[..big_post.len() / 2]);
                                reset(stream);
                            }
                            // A request, then a reset before the answer
                            // is read.
                            2 => {
                                let _ = stream.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n");
                                reset(stream);
                            }
                            // Part of the echo read, then a reset.
                            _ => {
                                let _ = stream.write_all(big_post);
                                let mut buf = [0u8; 65536];
                                let _ = stream.read(&mut buf);
                                reset(stream);
                            }
                        }
                        let mut peak = peak.lock().unwrap();
                        *peak = (*peak).max(server.fd_count());
                    }
                });
            }
        });
        server.assert_healthy();
        server.assert_serves();
        let settled = wait_until(Duration::from_secs(10), || server.fd_count() <= baseline);
        let stderr = server.stderr_text();
        let ended: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("connection ended"))
            .collect();
        let mut kinds: Vec<&str> = ended
            .iter()
            .map(|line| line.rsplit(": ").next().unwrap_or(line))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        println!(
            "faults: {} vanishing clients: descriptors {baseline} at start, peak {}, {} after; \
             {} connections ended in errors: {kinds:?}",
            THREADS * ROUNDS,
            peak.lock().unwrap(),
            server.fd_count(),
            ended.len()
        );
        assert!(
            settled,
            "descriptors leaked: {} open, {baseline} at start",
            server.fd_count()
        );
        server.assert_healthy();
    });
}

/// Sends `prelude` (complete requests, each answered before the next
/// goes), then a request head that never ends, a byte every
/// `byte_every`, until the server closes the connection. Returns how long
/// after the slow head began it was cut, how many of its bytes went, and
/// how the client saw the close.
fn slow_client(
    server: &Server,
    prelude: &[&[u8]],
    byte_every: Duration,
) -> (Duration, usize, String) {
    let mut stream = server.connect();
    for request in prelude {
        stream.write_all(request).unwrap();
        let response = read_response(&mut stream).expect("the prelude is answered");
        assert_eq!(response.status, 200);
    }
    // A head that never ends: the timeout, not a parse error, must cut
    // the client.
    let head = b"GET / HTTP/1.1\r\nHost: test\r\nX-Slow: ";
    stream.set_read_timeout(Some(byte_every)).unwrap();
    let start = Instant::now();
    let mut sent = 0usize;
    loop {
        let byte = head.get(sent).copied().unwrap_or(b'a');
        if let Err(error) = stream.write_all(&[byte]) {
            return (start.elapsed(), sent, format!("write failed: {error}"));
        }
        sent += 1;
        let mut buf = [0u8; 1024];
        match stream.read(&mut buf) {
            Ok(0) => return (start.elapsed(), sent, "end of stream".to_owned()),
            Ok(n) => panic!(
                "the server answered an unfinished request: {:?}",
                String::from_utf8_lossy(&buf[..n])
            ),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(error) => return (start.elapsed(), sent, format!("read failed: {error}")),
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the slow client was not cut after {:?} ({sent} bytes sent)",
            start.elapsed()
        );
    }
}

#[test]
fn clients_too_slow_with_their_headers_are_cut_by_the_server() {
    watchdog("http_server_slow_headers", || {
        const BYTE_EVERY: Duration = Duration::from_millis(500);
        let mut server = Server::start(None);
        let (first, second) = thread::scope(|scope| {
            let server = &server;
            // Slow from its first byte on.
            let first = scope.spawn(move || slow_client(server, &[], BYTE_EVERY));
            // One request served, then a slow second one on the same
            // connection: hyper's header-read timeout alone applies.
            let second = scope.spawn(move || {
                slow_client(
                    server,
                    &[b"GET / HTTP/1.1\r\nHost: test\r\n\r\n"],
                    BYTE_EVERY,
                )
            });
            (first.join().unwrap(), second.join().unwrap())
        });
        for (name, (cut_after, sent, how)) in
            [("first request", &first), ("second request", &second)]
        {
            println!(
                "faults: slow client ({name}, a byte every {BYTE_EVERY:?}) cut after \
                 {cut_after:?}, {sent} bytes sent ({how})"
            );
            assert!(*cut_after < Duration::from_secs(15));
        }
        // The server says why it closed: hyper's header-read timeout (for
        // the second client at least), or the example's own deadline for
        // a first request.
        assert!(
            wait_until(Duration::from_secs(5), || server
                .stderr_text()
                .contains("read header from client timeout")),
            "no header-timeout line from the server; stderr: {}",
            server.stderr_tail()
        );
        server.assert_healthy();
        server.assert_serves();
    });
}

#[test]
fn silent_clients_are_cut_by_the_server() {
    watchdog("http_server_silent_clients", || {
        let mut server = Server::start(None);
        // Before any of these bytes, hyper_util is still telling HTTP/1
        // from HTTP/2 and hyper's own header-read timeout has not started.
        let cases: [(&str, &[u8]); 3] = [
            ("nothing sent", b""),
            ("part of the HTTP/2 preface", b"PRI * HTTP/2.0\r\n"),
            (
                "HTTP/2 preface, no request",
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            ),
        ];
        let cuts: Vec<(&str, Duration)> = thread::scope(|scope| {
            let runs: Vec<_> = cases
                .iter()
                .map(|&(name, bytes)| {
                    let server = &server;
                    scope.spawn(move || {
                        let mut stream = server.connect();
                        let start = Instant::now();
                        stream.write_all(bytes).unwrap();
                        // Whatever the server sends (HTTP/2 settings), then
                        // its close; we never close first.
                        read_until_closed(&mut stream);
                        (name, start.elapsed())
                    })
                })
                .collect();
            runs.into_iter().map(|run| run.join().unwrap()).collect()
        });
        for (name, cut_after) in &cuts {
            println!("faults: silent client ({name}) cut after {cut_after:?}");
            assert!(
                *cut_after < Duration::from_secs(15),
                "{name}: cut only after {cut_after:?}"
            );
        }
        server.assert_healthy();
        server.assert_serves();
    });
}
