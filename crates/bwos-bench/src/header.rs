//! What every report starts with: machine, command line, revision, date.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Where and how a report was produced.
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub command_line: String,
    pub cpu_model: String,
    pub cores: usize,
    pub os: String,
    pub git_revision: String,
    /// The checkout's revision when the run started, if it is not the
    /// binary's: `rayon`, `rayon-apps` and `rayon-demo` build the drop-in
    /// and their programs from the checkout at run time, so a stale binary
    /// measures newer code than `git_revision` says.
    pub checkout_revision: Option<String>,
    pub optimized: bool,
    /// The day of the run (UTC), `YYYY-MM-DD`.
    pub date: String,
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
            checkout_revision: checkout_revision()
                .filter(|checkout| checkout != env!("BWOS_GIT_REVISION")),
            optimized: !cfg!(debug_assertions),
            date: today(),
        }
    }

    /// The header as text lines.
    pub fn render(&self) -> String {
        let mut out = format!(
            "command:  {}\nmachine:  {} ({} cores, {})\nrevision: {}\ndate:     {}\n",
            self.command_line, self.cpu_model, self.cores, self.os, self.git_revision, self.date
        );
        if let Some(checkout) = self.checkout_note() {
            out.push_str(&format!("checkout: {checkout}\n"));
        }
        if !self.optimized {
            out.push_str("WARNING:  debug build; run with --release for meaningful numbers\n");
        }
        out
    }

    /// The checkout's revision and what comes from it, when it is not the
    /// binary's (see [`checkout_revision`](Self::checkout_revision)).
    pub fn checkout_note(&self) -> Option<String> {
        self.checkout_revision.as_ref().map(|checkout| {
            format!(
                "{checkout} (not the binary's revision: the rayon-core drop-in and its \
                 programs are built from the checkout at run time)"
            )
        })
    }
}

/// `git describe --always --dirty` of the checkout the binary was built
/// in, now; `None` without git or outside a checkout.
fn checkout_revision() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split(':').nth(1))
        .map(|model| model.trim().to_string())
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
fn today() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The proleptic Gregorian date of day `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(20_417), (2025, 11, 25));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
