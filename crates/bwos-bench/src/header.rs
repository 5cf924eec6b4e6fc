//! What every report starts with: machine, command line, revision.

use serde::Serialize;

/// Where and how a report was produced.
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub command_line: String,
    pub cpu_model: String,
    pub cores: usize,
    pub os: String,
    pub git_revision: String,
    pub optimized: bool,
}

impl Header {
    /// Collects the header for this process.
    pub fn collect() -> Header {
        Header {
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown CPU".into()),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            git_revision: env!("BWOS_GIT_REVISION").to_string(),
            optimized: !cfg!(debug_assertions),
        }
    }

    /// The header as text lines.
    pub fn render(&self) -> String {
        let mut out = format!(
            "command:  {}\nmachine:  {} ({} cores, {})\nrevision: {}\n",
            self.command_line, self.cpu_model, self.cores, self.os, self.git_revision
        );
        if !self.optimized {
            out.push_str("WARNING:  debug build; run with --release for meaningful numbers\n");
        }
        out
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split(':').nth(1))
        .map(|model| model.trim().to_string())
}
