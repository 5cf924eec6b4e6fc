//! Records the git revision the binary is built from, so every report names
//! the code that produced it (not whatever the checkout holds when it runs).

use std::path::PathBuf;
use std::process::Command;

/// `git <args>`'s output, trimmed; `None` if git fails or is missing.
fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    let revision =
        git(&["describe", "--always", "--dirty"]).unwrap_or_else(|| "unknown revision".into());
    println!("cargo:rustc-env=BWOS_GIT_REVISION={revision}");
    // Rebuild when the checked-out commit or the staged state changes. In
    // a worktree `.git` is a file naming the real git directory, and the
    // branch refs live in the common one: ask git for both.
    let mut watched: Vec<PathBuf> = Vec::new();
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        watched.push(dir.join("HEAD"));
        watched.push(dir.join("index"));
    }
    // The branch HEAD names: a commit moves it, not HEAD.
    if let (Some(common), Some(branch)) = (
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        watched.push(PathBuf::from(common).join(branch));
    }
    for path in watched.iter().filter(|path| path.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
