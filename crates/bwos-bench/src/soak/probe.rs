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
}
