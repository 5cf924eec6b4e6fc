//! Records the git revision the binary is built from, so every report names
//! the code that produced it (not whatever the checkout holds when it runs).

use std::path::Path;
use std::process::Command;

fn main() {
    let revision = Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown revision".into());
    println!("cargo:rustc-env=BWOS_GIT_REVISION={revision}");
    // Rebuild when the checked-out commit or the staged state changes.
    let git = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.git");
    for file in ["HEAD", "index"] {
        let path = git.join(file);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
