//! What the soak samples about its own process: resident memory, threads
//! and open descriptors, from `/proc/self` (Linux; elsewhere the figures
//! are missing and not checked).

use serde::Serialize;

/// The process's resources at one instant; `None` where `/proc` does not
/// tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Resources {
    /// Resident set size (`VmRSS` of `/proc/self/status`), KiB.
    pub rss_kib: Option<u64>,
    /// Threads of the process (entries of `/proc/self/task`).
    pub threads: Option<u64>,
    /// Open descriptors (entries of `/proc/self/fd`, less the one the
    /// listing itself holds open).
    pub fds: Option<u64>,
}

impl Resources {
    /// Reads them now.
    pub fn now() -> Resources {
        Resources {
            rss_kib: rss_kib(),
            threads: entries("/proc/self/task"),
            fds: entries("/proc/self/fd").map(|n| n.saturating_sub(1)),
        }
    }
}

/// The names of the process's threads (`/proc/self/task/*/comm`), sorted;
/// empty where `/proc` does not tell.
pub fn thread_names() -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut names: Vec<String> = tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim_end().to_string())
        .collect();
    names.sort();
    names
}

/// The IPv4 TCP sockets of this network namespace with `port` at either
/// end (`/proc/net/tcp`), each as "local -> remote STATE, send queue N,
/// receive queue M" (bytes the kernel holds: not yet acknowledged by the
/// peer, and not yet read by the process); empty where `/proc` does not
/// tell.
pub fn tcp_sockets_on_port(port: u16) -> Vec<String> {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return Vec::new();
    };
    table
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
        .collect()
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

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    // "VmRSS:     12345 kB"
    line.split_whitespace().nth(1)?.parse().ok()
}

fn entries(dir: &str) -> Option<u64> {
    let listing = std::fs::read_dir(dir).ok()?;
    Some(listing.filter(Result::is_ok).count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn proc_tells_memory_threads_and_descriptors() {
        // Other tests of this binary open and close descriptors meanwhile:
        // only bounds that hold whatever they do.
        let file = std::fs::File::open("/proc/self/status").expect("a descriptor");
        let now = Resources::now();
        assert!(now.rss_kib.expect("VmRSS") > 0);
        assert!(now.fds.expect("descriptors") >= 1, "the open file counts");
        assert!(now.threads.expect("threads") >= 1);
        drop(file);
    }

    #[cfg(target_os = "linux")]
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
        let sockets = bwos_testkit::watchdog("proc_net_tcp", || {
            loop {
                let sockets = tcp_sockets_on_port(port);
                if sockets.contains(&server_end) {
                    return sockets;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        assert!(
            sockets.iter().any(|s| s.starts_with(&client_end)),
            "{sockets:?}"
        );
        drop(server);
    }
}
