//! Downloading, unpacking and building a program twice: as published
//! (stock rayon-core) and with rayon-core patched to the drop-in.
//!
//! Layout under the working directory (`target/rayon-apps`):
//! `target/rayon-apps/downloads/NAME-VERSION.crate`,
//! `target/rayon-apps/NAME-VERSION/{stock,bwos}/` (the unpacked source),
//! `target/rayon-apps/NAME-VERSION/target/` (one cargo target directory
//! for both: only the crates that depend on rayon-core differ) and
//! `target/rayon-apps/NAME-VERSION/bin/{stock,bwos}/BINARY` (each build's
//! binary, copied out because the two builds uplift to the same
//! `target/release/BINARY`).

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use serde::Serialize;

use super::apps::App;

/// Which rayon-core a build links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// rayon-core from crates.io, as the program's lock has it.
    Stock,
    /// rayon-core patched to `crates/rayon-core`.
    Bwos,
}

impl Variant {
    /// The variant's directory name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Stock => "stock",
            Variant::Bwos => "bwos",
        }
    }
}

/// One built binary.
#[derive(Debug, Clone)]
pub struct Build {
    /// Which rayon-core it links.
    pub variant: Variant,
    /// The binary, copied out of the target directory.
    pub binary: PathBuf,
    /// Which lock it was built with: the published one, as is or as
    /// cargo had to update it, or none.
    pub lock: String,
    /// Packages (`name version`) in this build's lock and not in the
    /// published one: for the drop-in, its own dependencies.
    pub added_to_lock: Vec<String>,
}

/// What the published crate's address is on the registry's static host.
pub fn crate_url(package: &str, version: &str) -> String {
    format!("https://static.crates.io/crates/{package}/{package}-{version}.crate")
}

/// The `--config` value that patches rayon-core to `drop_in`: a TOML
/// dotted key with the path as a basic string.
pub fn patch_config(drop_in: &Path) -> String {
    let mut quoted = String::from("\"");
    for c in drop_in.display().to_string().chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    format!("patch.crates-io.rayon-core.path={quoted}")
}

/// What is appended to the unpacked `Cargo.toml`: the package is its own
/// workspace, not a member of the repository's around `target/`.
pub const WORKSPACE_TABLE: &str =
    "\n# Appended by bwos-bench rayon-apps: a workspace of its own.\n[workspace]\n";

/// Downloads, unpacks and builds `app` as `variant`; a no-op build (and
/// no download) when nothing changed since the last run. The stock build
/// goes first: the drop-in's starts from its lock.
pub fn build(work: &Path, app: &App, variant: Variant, drop_in: &Path) -> io::Result<Build> {
    let release = format!("{}-{}", app.package, app.version);
    let archive = download(work, app)?;
    let root = work.join(&release);
    let source = root.join(variant.name());
    unpack(&archive, &release, &source)?;
    let stock_lock = root.join("stock/Cargo.lock");
    let published = root.join(PUBLISHED_LOCK);
    let cargo = || {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command
            .current_dir(&source)
            .env("CARGO_TARGET_DIR", root.join("target"))
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS");
        command
    };
    match variant {
        Variant::Stock => {
            // A lock that no longer fits the published manifest (say, the
            // workspace it was made in had path dependencies): cargo
            // updates what must change, and the table names it.
            let current = cargo()
                .args(["metadata", "--locked", "--format-version", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?
                .success();
            if !current {
                eprintln!("{release}: resolving (no lock, or a stale one) ...");
                run(cargo()
                    .args(["metadata", "--format-version", "1"])
                    .stdout(Stdio::null()))
                .map_err(|why| io::Error::other(format!("{release}: resolving: {why}")))?;
            }
        }
        Variant::Bwos => {
            // Start from the stock build's lock until the patch is in. A
            // lock at rayon-core 1.12 keeps it (a patch whose version
            // differs from the locked one goes unused): `cargo update -p
            // rayon-core` moves rayon-core alone to the drop-in.
            let own = source.join("Cargo.lock");
            let patched = fs::read_to_string(&own)
                .is_ok_and(|lock| packages(&lock).iter().any(is_patched_core));
            if !patched {
                fs::write(&own, fs::read(&stock_lock)?)?;
                run(cargo()
                    .args(["update", "--package", "rayon-core", "--config"])
                    .arg(patch_config(drop_in)))
                .map_err(|why| {
                    io::Error::other(format!("{release}: patching rayon-core: {why}"))
                })?;
            }
        }
    }
    let binary = root.join("bin").join(variant.name()).join(app.binary);
    if is_up_to_date(&binary, variant, drop_in)? {
        eprintln!("{release} ({}): built before", variant.name());
    } else {
        eprintln!("building {release} ({}) ...", variant.name());
        let mut command = cargo();
        command.args(["build", "--release", "--bin", app.binary]);
        match variant {
            Variant::Stock => command.arg("--locked"),
            Variant::Bwos => command.arg("--config").arg(patch_config(drop_in)),
        };
        run(&mut command).map_err(|why| {
            io::Error::other(format!("building {release} ({}): {why}", variant.name()))
        })?;
        let built = root.join("target/release").join(app.binary);
        fs::create_dir_all(binary.parent().expect("a file in bin/"))?;
        fs::copy(&built, &binary)?;
    }
    let stock = packages(&fs::read_to_string(&stock_lock)?);
    let lock = match fs::read_to_string(&published) {
        Err(_) => "no Cargo.lock published: resolved here".to_string(),
        Ok(text) => {
            let published = packages(&text);
            let gone = names(published.difference(&stock));
            let came = names(stock.difference(&published));
            if gone.is_empty() && came.is_empty() {
                "its published Cargo.lock".to_string()
            } else {
                format!(
                    "its published Cargo.lock, stale: cargo replaced {} with {}",
                    gone.join(", "),
                    came.join(", ")
                )
            }
        }
    };
    let added_to_lock = match variant {
        Variant::Stock => Vec::new(),
        Variant::Bwos => {
            let patched = packages(&fs::read_to_string(source.join("Cargo.lock"))?);
            check_patched_lock(&stock, &patched)
                .map_err(|why| io::Error::other(format!("{release}: the drop-in's lock {why}")))?
        }
    };
    let carries_bwos = contains(&fs::read(&binary)?, BWOS_MARK);
    if carries_bwos != (variant == Variant::Bwos) {
        return Err(io::Error::other(format!(
            "{release} ({}): the binary {} the bwos runtime",
            variant.name(),
            if carries_bwos {
                "unexpectedly carries"
            } else {
                "does not carry"
            }
        )));
    }
    Ok(Build {
        variant,
        binary,
        lock,
        added_to_lock,
    })
}

/// The crates beside the drop-in (`crates/`) that its build compiles:
/// the drop-in itself and its path dependencies.
const DROP_IN_CRATES: [&str; 3] = ["rayon-core", "bwos", "bwos-queue"];

/// Whether `binary` was copied out of a build and, for the drop-in's,
/// is newer than every source file of [`DROP_IN_CRATES`]. Cargo would
/// find such a build fresh anyway, except for programs whose build script
/// writes into their own source directory (dust writes its completions
/// and man page there), which cargo then rebuilds every time.
fn is_up_to_date(binary: &Path, variant: Variant, drop_in: &Path) -> io::Result<bool> {
    let Ok(built) = fs::metadata(binary).and_then(|m| m.modified()) else {
        return Ok(false);
    };
    if variant == Variant::Stock {
        return Ok(true);
    }
    let crates = drop_in.parent().expect("the drop-in sits in crates/");
    let mut newest = SystemTime::UNIX_EPOCH;
    for name in DROP_IN_CRATES {
        newest = newest.max(newest_source(&crates.join(name))?);
    }
    Ok(newest < built)
}

/// The newest modification time of the files under `dir`, build outputs
/// (`target/`) left out.
fn newest_source(dir: &Path) -> io::Result<SystemTime> {
    let mut newest = SystemTime::UNIX_EPOCH;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "target" {
                newest = newest.max(newest_source(&entry.path())?);
            }
        } else {
            newest = newest.max(entry.metadata()?.modified()?);
        }
    }
    Ok(newest)
}

/// Where the published lock is kept, beside the two copies.
const PUBLISHED_LOCK: &str = "published.Cargo.lock";

/// Runs `command`, failing with its status unless it succeeds.
fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("failed ({status})"))
    }
}

/// `name version`, and `(path)` for a package from a path (a workspace
/// member when the lock was made, from the registry once published).
fn names<'a>(packages: impl Iterator<Item = &'a LockedPackage>) -> Vec<String> {
    packages
        .map(|p| {
            let path = if p.source.is_none() { " (path)" } else { "" };
            format!("{} {}{path}", p.name, p.version)
        })
        .collect()
}

fn is_patched_core(package: &LockedPackage) -> bool {
    package.name == "rayon-core" && package.source.is_none()
}

/// A string every binary with the bwos runtime carries (its worker
/// threads' default name), stripped or not.
const BWOS_MARK: &[u8] = b"bwos-worker-";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The `.crate` of `app`, downloaded once.
fn download(work: &Path, app: &App) -> io::Result<PathBuf> {
    let dir = work.join("downloads");
    fs::create_dir_all(&dir)?;
    let archive = dir.join(format!("{}-{}.crate", app.package, app.version));
    if archive.exists() {
        return Ok(archive);
    }
    let url = crate_url(app.package, app.version);
    eprintln!("downloading {url} ...");
    let partial = archive.with_extension("crate.part");
    let status = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--location"])
        .args(["--retry", "3", "--output"])
        .arg(&partial)
        .arg(&url)
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("running curl for {url}: {e}")))?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "downloading {url} failed (curl: {status})"
        )));
    }
    fs::rename(&partial, &archive)?;
    Ok(archive)
}

/// Unpacks `archive` (whose files sit under `release/`) into `source`,
/// once, and appends [`WORKSPACE_TABLE`] to its manifest.
fn unpack(archive: &Path, release: &str, source: &Path) -> io::Result<()> {
    if source.join("Cargo.toml").exists() {
        return Ok(());
    }
    let parent = source.parent().expect("a directory under the work dir");
    let staging = parent.join(format!("{}.unpacking", source.display()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging)?;
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(&staging)
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "unpacking {} failed (tar: {status})",
            archive.display()
        )));
    }
    let unpacked = staging.join(release);
    let manifest = unpacked.join("Cargo.toml");
    let mut text = fs::read_to_string(&manifest).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{} has no {release}/Cargo.toml: {e}", archive.display()),
        )
    })?;
    text.push_str(WORKSPACE_TABLE);
    fs::write(&manifest, text)?;
    if unpacked.join("Cargo.lock").exists() {
        fs::copy(unpacked.join("Cargo.lock"), parent.join(PUBLISHED_LOCK))?;
    }
    if source.exists() {
        fs::remove_dir_all(source)?;
    }
    fs::rename(&unpacked, source)?;
    fs::remove_dir_all(&staging)
}

/// One `[[package]]` of a `Cargo.lock`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockedPackage {
    pub name: String,
    pub version: String,
    /// `None` for path packages (the drop-in).
    pub source: Option<String>,
}

/// The packages of a `Cargo.lock`: its `[[package]]` tables' `name`,
/// `version` and `source` keys (the lock format is line-oriented TOML
/// that cargo writes one key per line).
pub fn packages(lock: &str) -> BTreeSet<LockedPackage> {
    let mut packages = BTreeSet::new();
    let mut current: Option<LockedPackage> = None;
    let value = |line: &str, key: &str| {
        let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?;
        Some(rest.trim().trim_matches('"').to_string())
    };
    for line in lock.lines().map(str::trim) {
        if line.starts_with('[') {
            packages.extend(current.take());
            if line == "[[package]]" {
                current = Some(LockedPackage {
                    name: String::new(),
                    version: String::new(),
                    source: None,
                });
            }
            continue;
        }
        let Some(package) = current.as_mut() else {
            continue;
        };
        if let Some(name) = value(line, "name") {
            package.name = name;
        } else if let Some(version) = value(line, "version") {
            package.version = version;
        } else if let Some(source) = value(line, "source") {
            package.source = Some(source);
        }
    }
    packages.extend(current);
    packages
}

/// Checks that `patched` keeps every package of `published` but
/// rayon-core, and has rayon-core from a path; returns the packages it
/// added (`name version`), or what is wrong.
pub fn check_patched_lock(
    published: &BTreeSet<LockedPackage>,
    patched: &BTreeSet<LockedPackage>,
) -> Result<Vec<String>, String> {
    let is_rayon_core = |p: &&LockedPackage| p.name == "rayon-core";
    let changed: Vec<String> = published
        .iter()
        .filter(|p| !is_rayon_core(p) && !patched.contains(*p))
        .map(|p| format!("{} {}", p.name, p.version))
        .collect();
    if !changed.is_empty() {
        return Err(format!(
            "changed packages besides rayon-core: {}",
            changed.join(", ")
        ));
    }
    let patched_core: Vec<&LockedPackage> = patched.iter().filter(is_rayon_core).collect();
    if patched_core.len() != 1 || !is_patched_core(patched_core[0]) {
        return Err(format!(
            "does not have exactly one rayon-core, from a path: {patched_core:?}"
        ));
    }
    Ok(patched
        .iter()
        .filter(|p| !is_rayon_core(p) && !published.contains(*p))
        .map(|p| format!("{} {}", p.name, p.version))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLISHED: &str = r#"
# This file is automatically @generated by Cargo.
version = 4

[[package]]
name = "blake3"
version = "1.8.2"
source = "registry+https://github.com/rust-lang/crates.io-index"
dependencies = [
 "rayon-core",
]

[[package]]
name = "rayon-core"
version = "1.12.1"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "1465873a3dfdaa8ae7cb14b4383657caab0b3e8a0aa9ae8e04b044854c8dfce2"
"#;

    fn package(name: &str, version: &str, source: Option<&str>) -> LockedPackage {
        LockedPackage {
            name: name.into(),
            version: version.into(),
            source: source.map(Into::into),
        }
    }

    const REGISTRY: &str = "registry+https://github.com/rust-lang/crates.io-index";

    #[test]
    fn a_lock_parses_into_its_packages() {
        let parsed = packages(PUBLISHED);
        let expected: BTreeSet<_> = [
            package("blake3", "1.8.2", Some(REGISTRY)),
            package("rayon-core", "1.12.1", Some(REGISTRY)),
        ]
        .into();
        assert_eq!(parsed, expected);
    }

    /// Catches a check that lets the patch move another package (e.g.
    /// one that compares names only, not versions).
    #[test]
    fn the_patched_lock_may_only_replace_rayon_core_and_add() {
        let published = packages(PUBLISHED);
        let mut patched: BTreeSet<_> = [
            package("blake3", "1.8.2", Some(REGISTRY)),
            package("rayon-core", "1.13.0", None),
            package("bwos", "0.1.0", None),
        ]
        .into();
        assert_eq!(
            check_patched_lock(&published, &patched),
            Ok(vec!["bwos 0.1.0".to_string()])
        );
        // Another package moved: refused, named.
        patched.remove(&package("blake3", "1.8.2", Some(REGISTRY)));
        patched.insert(package("blake3", "1.8.3", Some(REGISTRY)));
        let refused = check_patched_lock(&published, &patched).unwrap_err();
        assert!(refused.contains("blake3 1.8.2"), "{refused}");
        // rayon-core still from the registry: the patch did not apply.
        let unpatched = packages(PUBLISHED);
        assert!(check_patched_lock(&published, &unpatched).is_err());
    }

    #[test]
    fn the_patch_is_one_toml_dotted_key_with_the_path_quoted() {
        assert_eq!(
            patch_config(Path::new("/work/crates/rayon-core")),
            r#"patch.crates-io.rayon-core.path="/work/crates/rayon-core""#
        );
        assert_eq!(
            patch_config(Path::new(r#"/odd "dir"\x"#)),
            r#"patch.crates-io.rayon-core.path="/odd \"dir\"\\x""#
        );
        assert_eq!(
            crate_url("b3sum", "1.8.7"),
            "https://static.crates.io/crates/b3sum/b3sum-1.8.7.crate"
        );
    }
}
