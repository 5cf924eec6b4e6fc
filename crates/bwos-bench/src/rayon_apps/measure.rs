//! One run of one build: the child's wall time, its CPU time and context
//! switches from `wait4` (every thread it ran, spinning included), and
//! its output for the comparison between builds.

use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::apps::App;
use super::builds::Build;
use super::trees;

/// A run taking longer than this is killed and the command fails.
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// One run's costs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Run {
    /// From spawning the child to its exit.
    pub wall_ms: f64,
    /// User plus system time of all its threads.
    pub cpu_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
    /// Context switches: waits (sleeping, blocking) and preemptions.
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    /// Files written into the output directory: relative path, bytes.
    pub files: Vec<(PathBuf, Vec<u8>)>,
}

/// A run's costs and output.
#[derive(Debug)]
pub struct Outcome {
    pub run: Run,
    pub output: Output,
}

/// How a program runs: the same for both builds.
#[derive(Debug)]
pub struct Plan<'a> {
    pub app: &'a App,
    pub arguments: &'a [String],
    pub threads: u32,
    /// The working directory, which the arguments are relative to.
    pub work: &'a Path,
    /// Where the run's stdout and stderr go (`runs/BINARY`).
    pub dir: &'a Path,
    /// Where it writes files, relative to `work`, emptied before every
    /// run (`None`: nowhere).
    pub out: Option<&'a Path>,
}

impl Plan<'_> {
    /// Runs `build` once.
    pub fn run(&self, build: &Build) -> io::Result<Outcome> {
        fs::create_dir_all(self.dir)?;
        let out = self.out.map(|out| self.work.join(out));
        if let Some(out) = &out {
            if out.exists() {
                fs::remove_dir_all(out)?;
            }
            fs::create_dir_all(out)?;
        }
        let stdout_path = self.dir.join("stdout");
        let stderr_path = self.dir.join("stderr");
        let mut command = Command::new(&build.binary);
        command
            .args(self.arguments)
            .current_dir(self.work)
            .env("RAYON_NUM_THREADS", self.threads.to_string())
            .env_remove("BWOS_NUM_THREADS")
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout_path)?)
            .stderr(fs::File::create(&stderr_path)?);
        let start = Instant::now();
        let child = command.spawn()?;
        let (wall, status, usage) = wait_with_usage(&child, start, RUN_LIMIT)?;
        let describe = || {
            let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            format!(
                "{} ({:?}) {}: {status}; stderr ends with:\n{}",
                self.app.binary,
                build.variant,
                self.arguments.join(" "),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        };
        if wall >= RUN_LIMIT {
            return Err(io::Error::other(format!(
                "killed after {} s: {}",
                RUN_LIMIT.as_secs(),
                describe()
            )));
        }
        if !status.success() {
            return Err(io::Error::other(format!("failed: {}", describe())));
        }
        let mut files = Vec::new();
        if let Some(out) = &out {
            let mut paths = Vec::new();
            trees::walk(out, &mut |path| paths.push(path))?;
            for path in paths {
                let bytes = fs::read(&path)?;
                let relative = path.strip_prefix(out).unwrap_or(&path).to_path_buf();
                files.push((relative, bytes));
            }
        }
        let ms = |time: libc::timeval| time.tv_sec as f64 * 1e3 + time.tv_usec as f64 / 1e3;
        let (user_ms, sys_ms) = (ms(usage.ru_utime), ms(usage.ru_stime));
        Ok(Outcome {
            run: Run {
                wall_ms: wall.as_secs_f64() * 1e3,
                cpu_ms: user_ms + sys_ms,
                user_ms,
                sys_ms,
                voluntary_switches: usage.ru_nvcsw as u64,
                involuntary_switches: usage.ru_nivcsw as u64,
            },
            output: Output {
                stdout: fs::read(&stdout_path)?,
                files,
            },
        })
    }
}

/// Waits for `child` (spawned at `start`), killing it after `limit`;
/// returns its wall time (until it exited), exit status and resource use.
///
/// The child is never waited for through std (its `Child` would reap it
/// and keep the resource use to itself): it waits with `waitid(WNOWAIT)`,
/// which leaves it a zombie so its pid cannot be reused while a watchdog
/// might still kill it, then reaps it with `wait4`, which reports its
/// resource use.
fn wait_with_usage(
    child: &std::process::Child,
    start: Instant,
    limit: Duration,
) -> io::Result<(Duration, ExitStatus, libc::rusage)> {
    let pid = child.id();
    let exited = Arc::new(Mutex::new(false));
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = {
        let exited = Arc::clone(&exited);
        std::thread::spawn(move || {
            if finished.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                let exited = exited.lock().unwrap_or_else(|e| e.into_inner());
                if !*exited {
                    // SAFETY: kill has no memory effects; `pid` is our
                    // child and not reaped (`exited` is set, under this
                    // lock, before anything reaps it), so the signal
                    // cannot reach a process that reused the pid.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
            }
        })
    };
    loop {
        // SAFETY: all-zero is a valid siginfo_t (plain old data).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid for writes; WNOWAIT leaves the child
        // unreaped.
        let waited =
            unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if waited == 0 {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let wall = start.elapsed();
    *exited.lock().unwrap_or_else(|e| e.into_inner()) = true;
    let _ = done.send(());
    let _ = watchdog.join();
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage (plain old data).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid for writes; the child has
        // exited and is still unreaped (only this function reaps it).
        let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if reaped == pid as libc::pid_t {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    Ok((wall, ExitStatus::from_raw(status), usage))
}

/// Fails, saying where, unless `output` equals `reference`.
pub fn require_identical(app: &str, reference: &Output, output: &Output) -> io::Result<()> {
    if reference == output {
        return Ok(());
    }
    let why = if reference.stdout != output.stdout {
        let first = reference
            .stdout
            .split(|&b| b == b'\n')
            .zip(output.stdout.split(|&b| b == b'\n'))
            .position(|(a, b)| a != b)
            .map_or("in length".to_string(), |line| {
                format!("at line {}", line + 1)
            });
        format!(
            "stdout differs {first} ({} bytes, reference {} bytes)",
            output.stdout.len(),
            reference.stdout.len()
        )
    } else {
        let names = |o: &Output| o.files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
        if names(reference) != names(output) {
            format!(
                "wrote files {:?}, reference {:?}",
                names(output),
                names(reference)
            )
        } else {
            let differing: Vec<String> = reference
                .files
                .iter()
                .zip(&output.files)
                .filter(|(a, b)| a.1 != b.1)
                .map(|(a, _)| a.0.display().to_string())
                .collect();
            format!("files differ: {}", differing.join(", "))
        }
    };
    Err(io::Error::other(format!(
        "{app}: the output differs from the first stock run's: {why}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(stdout: &str, files: &[(&str, &str)]) -> Output {
        Output {
            stdout: stdout.as_bytes().to_vec(),
            files: files
                .iter()
                .map(|(p, b)| (PathBuf::from(p), b.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// Catches a comparison that looks at stdout only (oxipng's output is
    /// its files).
    #[test]
    fn outputs_must_match_in_stdout_and_every_file() {
        let reference = output("a\nb\n", &[("x.png", "1")]);
        assert!(require_identical("t", &reference, &reference.clone()).is_ok());
        let stdout = require_identical("t", &reference, &output("a\nc\n", &[("x.png", "1")]));
        assert!(stdout.unwrap_err().to_string().contains("line 2"));
        let file = require_identical("t", &reference, &output("a\nb\n", &[("x.png", "2")]));
        assert!(file.unwrap_err().to_string().contains("x.png"));
        let missing = require_identical("t", &reference, &output("a\nb\n", &[]));
        assert!(missing.is_err());
    }
}
