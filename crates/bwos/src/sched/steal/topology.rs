//! Where CPUs sit: which ones share a last-level cache and which NUMA node
//! each belongs to, read from Linux's sysfs, and which CPU the calling
//! thread runs on.
//!
//! [`StealPolicy::Topology`](crate::StealPolicy::Topology) orders victims
//! by distance: same last-level cache first, then same node, then the
//! rest. Where sysfs says nothing (not Linux, a container without
//! `/sys`), every CPU is at the same distance and the policy behaves like
//! a random sweep.

use std::fs;
use std::path::Path;

/// How far apart two CPUs are, nearest first.
pub(crate) const TIERS: usize = 3;

/// The machine's CPU layout, indexed by CPU number.
#[derive(Debug, Default)]
pub(crate) struct Topology {
    /// A last-level-cache id per CPU (the lowest CPU sharing it).
    llc: Vec<u32>,
    /// The NUMA node of each CPU.
    node: Vec<u32>,
}

impl Topology {
    /// Reads the layout from `/sys/devices/system`; empty (flat) if absent.
    pub(crate) fn detect() -> Topology {
        Topology::read(Path::new("/sys/devices/system"))
    }

    fn read(root: &Path) -> Topology {
        let cpus = online_cpus(root).unwrap_or_default();
        let Some(&max) = cpus.iter().max() else {
            return Topology::default();
        };
        let size = max as usize + 1;
        let mut llc: Vec<u32> = (0..size as u32).collect();
        for &cpu in &cpus {
            if let Some(shared) = last_level_cache(root, cpu) {
                llc[cpu as usize] = shared.into_iter().min().unwrap_or(cpu);
            }
        }
        let mut node = vec![0; size];
        if let Ok(entries) = fs::read_dir(root.join("node")) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("node"))
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let list = fs::read_to_string(entry.path().join("cpulist")).unwrap_or_default();
                for cpu in parse_cpu_list(&list).unwrap_or_default() {
                    if let Some(slot) = node.get_mut(cpu as usize) {
                        *slot = id;
                    }
                }
            }
        }
        Topology { llc, node }
    }

    /// The distance tier between two CPUs: 0 (same last-level cache), 1
    /// (same node), 2 (further, or unknown CPUs). `None` for a CPU means
    /// "not known yet" and counts as near, so unknown workers are not
    /// starved of thieves.
    pub(crate) fn tier(&self, a: Option<u32>, b: Option<u32>) -> usize {
        let (Some(a), Some(b)) = (a, b) else {
            return 0;
        };
        let (a, b) = (a as usize, b as usize);
        if a >= self.llc.len() || b >= self.llc.len() {
            return 0;
        }
        if self.llc[a] == self.llc[b] {
            0
        } else if self.node[a] == self.node[b] {
            1
        } else {
            2
        }
    }
}

fn online_cpus(root: &Path) -> Option<Vec<u32>> {
    parse_cpu_list(&fs::read_to_string(root.join("cpu/online")).ok()?)
}

/// The CPUs sharing `cpu`'s highest-level cache.
fn last_level_cache(root: &Path, cpu: u32) -> Option<Vec<u32>> {
    let dir = root.join(format!("cpu/cpu{cpu}/cache"));
    let mut best: Option<(u32, Vec<u32>)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let level = fs::read_to_string(path.join("level"))
            .ok()
            .and_then(|l| l.trim().parse::<u32>().ok());
        let shared = fs::read_to_string(path.join("shared_cpu_list"))
            .ok()
            .and_then(|l| parse_cpu_list(&l));
        if let (Some(level), Some(shared)) = (level, shared)
            && best.as_ref().is_none_or(|(b, _)| level > *b)
        {
            best = Some((level, shared));
        }
    }
    best.map(|(_, shared)| shared)
}

/// Parses a Linux CPU list such as `0-3,8,10-11`.
fn parse_cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((low, high)) => {
                let (low, high): (u32, u32) = (low.parse().ok()?, high.parse().ok()?);
                if high < low || high - low > 1 << 16 {
                    return None;
                }
                cpus.extend(low..=high);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// The CPU the calling thread runs on now, if the OS says.
pub(crate) fn current_cpu() -> Option<u32> {
    // Miri does not model `sched_getcpu`: "unknown", as on other systems.
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: sched_getcpu has no preconditions; it returns -1 on error.
        let cpu = unsafe { libc::sched_getcpu() };
        u32::try_from(cpu).ok()
    }
    #[cfg(any(not(target_os = "linux"), miri))]
    {
        None
    }
}

/// Pins the calling thread to one CPU of those it may run on: the
/// `index`-th, modulo their number. Returns the CPU.
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread(index: usize) -> std::io::Result<u32> {
    use std::io;
    use std::mem;
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut allowed: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `allowed` is a valid cpu_set_t of the size passed; pid 0 is
    // the calling thread.
    if unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut allowed) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &allowed) })
        .collect();
    if cpus.is_empty() {
        return Err(io::Error::other("the thread may run on no CPU"));
    }
    let cpu = cpus[index % cpus.len()];
    // SAFETY: as above.
    let mut one: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `cpu` came from the set, so it is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: as for sched_getaffinity.
    if unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &one) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cpu as u32)
}

/// Pinning is implemented for Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_index: usize) -> std::io::Result<u32> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "pinning worker threads is supported on Linux only",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn a_fake_two_socket_machine_has_three_tiers() {
        let root = std::env::temp_dir().join(format!("bwos-topology-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write("cpu/online", "0-3\n");
        for cpu in 0..4 {
            let shared = if cpu < 2 { "0-1" } else { "2-3" };
            write(&format!("cpu/cpu{cpu}/cache/index0/level"), "1\n");
            write(
                &format!("cpu/cpu{cpu}/cache/index0/shared_cpu_list"),
                &format!("{cpu}\n"),
            );
            write(&format!("cpu/cpu{cpu}/cache/index3/level"), "3\n");
            write(
                &format!("cpu/cpu{cpu}/cache/index3/shared_cpu_list"),
                shared,
            );
        }
        write("node/node0/cpulist", "0-2\n");
        write("node/node1/cpulist", "3\n");
        let topology = Topology::read(&root);
        let _ = fs::remove_dir_all(&root);
        assert_eq!(topology.tier(Some(0), Some(1)), 0, "shared L3");
        assert_eq!(topology.tier(Some(0), Some(2)), 1, "same node, other L3");
        assert_eq!(topology.tier(Some(0), Some(3)), 2, "other node");
        assert_eq!(topology.tier(None, Some(3)), 0, "unknown counts as near");
    }

    #[test]
    fn a_machine_without_sysfs_is_flat() {
        let topology = Topology::read(Path::new("/nonexistent/bwos"));
        assert_eq!(topology.tier(Some(0), Some(7)), 0);
    }
}
