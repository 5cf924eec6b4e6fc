//! What Linux's `/proc` tells about this process (and others): threads,
//! descriptors, thread names, resident memory, CPU time, TCP sockets.
//!
//! The tests that check nothing leaks (threads, descriptors) or that idle
//! workers use no CPU read these, and so does the soak's sampler. Every
//! probe returns an [`io::Result`]: on another OS it is an error of kind
//! [`io::ErrorKind::Unsupported`] that says so; on Linux a read that fails
//! is an error that names the file. Callers that check only on Linux gate
//! their test on `target_os = "linux"`; callers that report what they can
//! (the soak) take the error as "not known".
//!
//! ```
//! match bwos_testkit::proc::threads() {
//!     Ok(threads) => assert!(threads >= 1, "this thread counts"),
//!     Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::Unsupported),
//! }
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The directory of this process's threads, one `<tid>` directory each.
const TASKS: &str = "/proc/self/task";

/// Linux reports CPU time in `/proc` in USER_HZ ticks, 100 a second on
/// every architecture (the user-space ABI fixes it, whatever the kernel's
/// own tick).
pub const TICKS_PER_SECOND: u64 = 100;

/// How long [`tasks_named`] keeps listing before it gives up.
const TASKS_NAMED_PATIENCE: Duration = Duration::from_secs(30);

/// The threads of this process (entries of `/proc/self/task`).
///
/// One listing is not a snapshot (see [`tasks_named`]): a thread that
/// exits meanwhile can end it early, so the count is exact only while no
/// thread exits.
pub fn threads() -> io::Result<usize> {
    count_entries(TASKS)
}

/// The descriptors this process has open (entries of `/proc/self/fd`),
/// less the one the listing itself holds open.
pub fn descriptors() -> io::Result<usize> {
    Ok(count_entries("/proc/self/fd")?.saturating_sub(1))
}

/// The descriptors process `pid` has open (entries of `/proc/<pid>/fd`).
pub fn descriptors_of(pid: u32) -> io::Result<usize> {
    count_entries(&format!("/proc/{pid}/fd"))
}

/// The names of this process's threads (`/proc/self/task/*/comm`), sorted.
/// A thread that exits while they are read is left out.
pub fn thread_names() -> io::Result<Vec<String>> {
    let mut names: Vec<String> = list(TASKS)?
        .filter_map(|task| std::fs::read_to_string(task.join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The `/proc/self/task/<tid>` directories of the `expected` threads of
/// this process whose name starts with `prefix`.
///
/// One listing of `/proc/self/task` is not a snapshot: Linux ends it early
/// when a thread it has just listed exits meanwhile (any other test's
/// thread can), so a listing may miss threads that are alive. The threads
/// looked for here are alive for the whole call, so the listing is repeated
/// until it shows exactly `expected` of them; callers then read each
/// thread's files by path (its `stat` for [`cpu_ticks`]; whether it still
/// exists), which does not depend on a listing.
///
/// # Panics
///
/// If no listing within 30 s shows exactly `expected` such threads: the
/// test that expects them has found a bug (or named them wrong).
pub fn tasks_named(prefix: &str, expected: usize) -> io::Result<Vec<PathBuf>> {
    let deadline = Instant::now() + TASKS_NAMED_PATIENCE;
    loop {
        let tasks: Vec<PathBuf> = list(TASKS)?
            .filter(|task| {
                std::fs::read_to_string(task.join("comm"))
                    .is_ok_and(|name| name.starts_with(prefix))
            })
            .collect();
        if tasks.len() == expected {
            return Ok(tasks);
        }
        assert!(
            Instant::now() < deadline,
            "{TASKS} listed {} threads named {prefix}* for {} s, expected {expected}",
            tasks.len(),
            TASKS_NAMED_PATIENCE.as_secs()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// User plus system CPU time, in [`TICKS_PER_SECOND`] ticks, from a `stat`
/// file of `/proc`: a process's (`/proc/<pid>/stat`, all its threads), one
/// thread's (`<a tasks_named directory>/stat`, `/proc/thread-self/stat`).
pub fn cpu_ticks(stat: &Path) -> io::Result<u64> {
    linux_only(stat)?;
    let text = std::fs::read_to_string(stat).map_err(|error| naming(stat, error))?;
    // The command name, in parentheses, may hold spaces: the fields count
    // from after its `)`. There the state is field 3 of the line; utime
    // and stime are fields 14 and 15, so 12 and 13 after the name.
    let fields: Vec<&str> = text
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |index: usize, name: &str| {
        fields
            .get(index)
            .and_then(|value| value.parse::<u64>().ok())
            .ok_or_else(|| malformed(stat, &format!("no {name} (field {})", index + 3)))
    };
    Ok(field(11, "utime")? + field(12, "stime")?)
}

/// [`cpu_ticks`] as a duration.
pub fn cpu_time(stat: &Path) -> io::Result<Duration> {
    Ok(Duration::from_millis(
        cpu_ticks(stat)? * (1000 / TICKS_PER_SECOND),
    ))
}

/// A memory figure of `/proc/self/status` in KiB: `field` is its name
/// without the colon (`"VmRSS"`, `"RssAnon"`, `"VmHWM"`, ...).
pub fn status_kib(field: &str) -> io::Result<u64> {
    let path = Path::new("/proc/self/status");
    linux_only(path)?;
    let status = std::fs::read_to_string(path).map_err(|error| naming(path, error))?;
    // "VmRSS:     12345 kB"
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| malformed(path, &format!("no `{field}:` line in KiB")))
}

/// This process's resident set size (`VmRSS`), KiB.
pub fn rss_kib() -> io::Result<u64> {
    status_kib("VmRSS")
}

/// The IPv4 TCP sockets of this network namespace with `port` at either
/// end (`/proc/net/tcp`), each as "local -> remote STATE, send queue N,
/// receive queue M" (the ports; the bytes the kernel holds: not yet
/// acknowledged by the peer, and not yet read by the process).
pub fn tcp_sockets_on_port(port: u16) -> io::Result<Vec<String>> {
    let path = Path::new("/proc/net/tcp");
    linux_only(path)?;
    let table = std::fs::read_to_string(path).map_err(|error| naming(path, error))?;
    Ok(table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // "sl local rem st tx_queue:rx_queue ...", addresses as
            // "0100007F:1F90" (the IPv4 address little-endian, the port).
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, remote, state, queues) = (
                fields.get(1)?,
                fields.get(2)?,
                fields.get(3)?,
                fields.get(4)?,
            );
            let port_of = |address: &str| u16::from_str_radix(address.split(':').nth(1)?, 16).ok();
            if port_of(local)? != port && port_of(remote)? != port {
                return None;
            }
            let (send, receive) = queues.split_once(':')?;
            let bytes = |hex: &str| u64::from_str_radix(hex, 16).ok();
            Some(format!(
                "{} -> {} {}, send queue {}, receive queue {}",
                port_of(local)?,
                port_of(remote)?,
                tcp_state(state),
                bytes(send)?,
                bytes(receive)?
            ))
        })
        .collect())
}

/// The name of a `/proc/net/tcp` state (`include/net/tcp_states.h`).
fn tcp_state(hex: &str) -> &'static str {
    match hex {
        "01" => "ESTABLISHED",
        "02" => "SYN_SENT",
        "03" => "SYN_RECV",
        "04" => "FIN_WAIT1",
        "05" => "FIN_WAIT2",
        "06" => "TIME_WAIT",
        "07" => "CLOSE",
        "08" => "CLOSE_WAIT",
        "09" => "LAST_ACK",
        "0A" => "LISTEN",
        "0B" => "CLOSING",
        _ => "?",
    }
}

/// The entries of directory `dir` of `/proc`, as paths; entries that
/// vanish while listed are left out.
fn list(dir: &str) -> io::Result<impl Iterator<Item = PathBuf>> {
    let dir = Path::new(dir);
    linux_only(dir)?;
    let entries = std::fs::read_dir(dir).map_err(|error| naming(dir, error))?;
    Ok(entries.filter_map(|entry| Some(entry.ok()?.path())))
}

fn count_entries(dir: &str) -> io::Result<usize> {
    Ok(list(dir)?.count())
}

/// An error of kind [`io::ErrorKind::Unsupported`] off Linux: the probes
/// read Linux's `/proc` only.
fn linux_only(path: &Path) -> io::Result<()> {
    if cfg!(target_os = "linux") {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: the /proc probes need Linux, this is {}",
                path.display(),
                std::env::consts::OS
            ),
        ))
    }
}

/// `error`, saying which file it was about.
fn naming(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

fn malformed(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    // Mutation caught: a missing `/proc/self/status` field read as 0
    // (`.unwrap_or(0)` for the error) passes `NoSuchField`.
    #[test]
    fn proc_tells_memory_threads_and_descriptors() {
        // Other tests of this binary open and close descriptors and start
        // threads meanwhile: only bounds that hold whatever they do.
        let file = std::fs::File::open("/proc/self/status").expect("a descriptor");
        assert!(rss_kib().expect("VmRSS") > 0);
        assert!(status_kib("RssAnon").expect("RssAnon") > 0);
        assert!(
            descriptors().expect("descriptors") >= 1,
            "the open file counts"
        );
        assert!(threads().expect("threads") >= 1);
        drop(file);
        let error = status_kib("NoSuchField").expect_err("not a field");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("NoSuchField"), "{error}");
    }

    // Mutation caught: `tasks_named` comparing the whole `comm` (which ends
    // in a newline) with the prefix finds no thread and fails after 30 s.
    #[test]
    fn a_named_thread_is_found_by_name_and_its_cpu_time_read() {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("testkit-probe".into())
            .spawn(move || stopped.recv())
            .unwrap();
        crate::watchdog("tasks_named", || {
            let tasks = tasks_named("testkit-probe", 1).expect("the thread is listed");
            assert!(
                thread_names()
                    .unwrap()
                    .contains(&"testkit-probe".to_owned())
            );
            cpu_ticks(&tasks[0].join("stat")).expect("its stat reads");
            cpu_time(Path::new("/proc/self/stat")).expect("the process's stat reads");
        });
        drop(stop);
        thread.join().unwrap().unwrap_err();
    }

    // Mutation caught: the address taken for the port (`nth(0)`) finds no
    // socket, and the watchdog fails the test.
    #[test]
    fn proc_net_tcp_shows_both_ends_of_a_connection_and_unread_bytes() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server_port = listener.local_addr().unwrap().port();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(b"hello").unwrap();
        let port = client.local_addr().unwrap().port();
        // The five bytes reach the server's receive queue (loopback) and
        // stay there: nobody reads them. Wait for them under the watchdog.
        // Other sockets of the machine may share a port number with this
        // connection's ends (other tests, TIME_WAIT remnants): only the
        // connection's own two lines are checked.
        let server_end =
            format!("{server_port} -> {port} ESTABLISHED, send queue 0, receive queue 5");
        let client_end = format!("{port} -> {server_port} ESTABLISHED");
        let sockets = crate::watchdog("proc_net_tcp", || {
            loop {
                let sockets = tcp_sockets_on_port(port).expect("/proc/net/tcp");
                if sockets.contains(&server_end) {
                    return sockets;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        assert!(
            sockets.iter().any(|s| s.starts_with(&client_end)),
            "{sockets:?}"
        );
        drop(server);
    }
}
