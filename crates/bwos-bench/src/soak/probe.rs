//! What the soak samples about its own process: resident memory, threads
//! and open descriptors, read through `bwos_testkit::proc` (Linux's
//! `/proc`; elsewhere the figures are missing and not checked).

use bwos_testkit::proc;
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
            rss_kib: proc::rss_kib().ok(),
            threads: proc::threads().ok().map(|n| n as u64),
            fds: proc::descriptors().ok().map(|n| n as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn proc_tells_memory_threads_and_descriptors() {
        let now = Resources::now();
        assert!(now.rss_kib.expect("VmRSS") > 0);
        assert!(now.threads.expect("threads") >= 1);
        assert!(now.fds.is_some(), "descriptors");
    }
}
