//! The rule of the loom-checked protocol files (`ARCHITECTURE.md`,
//! "Verification map"): a file that the loom build compiles imports, of
//! this crate, only `sched/sync.rs` and other protocol files, with no
//! `cfg(bwos_loom)` seam that hides an import of the rest from the models.
//!
//! The protocol files are read from `lib.rs`'s loom module tree (the
//! `#[cfg(bwos_loom)] mod ... { ... }` blocks) and the child modules those
//! files declare without `cfg(not(bwos_loom))`; every `crate::` and
//! `super::` path in their code (comments and test modules left out) must
//! resolve to one of them. The loom build alone does not catch a
//! violation: an import under `#[cfg(not(bwos_loom))]` compiles there.
#![cfg(not(bwos_loom))]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The file of module `path` (`["sched", "idle", "sleep"]`), if there is one.
fn module_file(path: &[String]) -> Option<PathBuf> {
    let mut dir = src();
    for segment in &path[..path.len() - 1] {
        dir.push(segment);
    }
    let last = path.last()?;
    [
        dir.join(format!("{last}.rs")),
        dir.join(last).join("mod.rs"),
    ]
    .into_iter()
    .find(|file| file.is_file())
}

/// `text` without comments (line comments, doc comments) and without the
/// test modules at the end of a file (`#[cfg(test)] mod tests`).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        {
            break;
        }
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The names of the module declarations (`mod name;`) in `code` that the
/// loom build compiles: not under `cfg(not(bwos_loom))` or `cfg(test)`.
fn loom_child_modules(code: &str) -> Vec<String> {
    let mut children = Vec::new();
    let mut excluded = false;
    for line in code.lines().map(str::trim) {
        if line.starts_with("#[cfg(") {
            excluded = line.contains("not(bwos_loom)") || line.contains("cfg(test)");
            continue;
        }
        let declaration = line
            .strip_prefix("pub(crate) mod ")
            .or_else(|| line.strip_prefix("pub mod "))
            .or_else(|| line.strip_prefix("mod "));
        if let Some(name) = declaration.and_then(|rest| rest.strip_suffix(';'))
            && !excluded
        {
            children.push(name.to_owned());
        }
        excluded = false;
    }
    children
}

/// The modules (as paths) that `lib.rs`'s `#[cfg(bwos_loom)]` blocks
/// declare, with the loom-built children of each, recursively.
fn protocol_modules() -> BTreeSet<Vec<String>> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut modules = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    let mut in_loom_block = false;
    let mut after_loom_cfg = false;
    for line in lib.lines().map(str::trim) {
        if line == "#[cfg(bwos_loom)]" {
            after_loom_cfg = true;
            continue;
        }
        let name_of = |rest: &str| {
            rest.trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .trim_start_matches("mod ")
                .trim_end_matches(" {")
                .trim_end_matches(';')
                .to_owned()
        };
        let is_mod = line.contains("mod ") && !line.starts_with("//");
        if is_mod && line.ends_with('{') && (after_loom_cfg || in_loom_block) {
            in_loom_block = true;
            stack.push(name_of(line));
        } else if is_mod && line.ends_with(';') && in_loom_block {
            let mut path = stack.clone();
            path.push(name_of(line));
            add_with_children(path, &mut modules);
        } else if line == "}" && in_loom_block {
            stack.pop();
            in_loom_block = !stack.is_empty();
        }
        after_loom_cfg = false;
    }
    modules
}

fn add_with_children(path: Vec<String>, modules: &mut BTreeSet<Vec<String>>) {
    let file = module_file(&path).unwrap_or_else(|| panic!("no file for module {path:?}"));
    let code = code_of(&std::fs::read_to_string(&file).expect("a module file"));
    if !modules.insert(path.clone()) {
        return;
    }
    if file.ends_with("mod.rs") {
        for child in loom_child_modules(&code) {
            let mut child_path = path.clone();
            child_path.push(child);
            add_with_children(child_path, modules);
        }
    }
}

/// The modules of this crate that `code` (of module `module`) names in
/// `crate::` and `super::` paths: the longest prefix of each path that has
/// a file.
fn named_modules(code: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let mut named = BTreeSet::new();
    let bytes = code.as_bytes();
    for head in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(offset) = code[from..].find(head) {
            let start = from + offset;
            from = start + head.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            // `super` of `a::b` is `a`, whether `b` is a file or a folder's
            // `mod.rs`.
            let base: Vec<String> = if head == "crate::" {
                Vec::new()
            } else {
                module[..module.len() - 1].to_vec()
            };
            let rest = &code[from..];
            // `super::{a::B, c}` and `crate::{..}`: each item is a path.
            let items: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end].split(',').collect()
            } else {
                vec![rest]
            };
            for item in items {
                let mut path = base.clone();
                for segment in item.trim().split("::") {
                    let name: String = segment
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if name.is_empty() || name == "self" {
                        break;
                    }
                    path.push(name);
                    if !segment
                        .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
                        .is_empty()
                    {
                        break;
                    }
                }
                while !path.is_empty() && module_file(&path).is_none() {
                    path.pop();
                }
                if !path.is_empty() {
                    named.insert(path);
                }
            }
        }
    }
    named
}

// Mutation caught: `use super::context;` added under `#[cfg(not(bwos_loom))]`
// to `sched/latch.rs` (the seam this file was split along) fails here,
// naming `sched::context`.
#[test]
fn loom_checked_protocol_files_import_only_sync_and_other_protocol_files() {
    let modules = protocol_modules();
    for expected in [
        &["sched", "sync"][..],
        &["sched", "latch"],
        &["sched", "idle", "sleep"],
        &["sched", "task", "state"],
        &["sched", "task", "inject"],
        &["sched", "time", "wheel"],
        &["sched", "blocking", "queue"],
        &["scope", "counter"],
        &["fork", "boundary"],
        &["worklist", "spill"],
    ] {
        let expected: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        assert!(
            modules.contains(&expected),
            "the loom module tree in lib.rs should hold {expected:?}; read: {modules:?}"
        );
    }
    assert!(
        !modules.contains(&vec![
            "sched".to_owned(),
            "task".to_owned(),
            "raw".to_owned()
        ]),
        "`sched/task/raw.rs` is declared under cfg(not(bwos_loom)): no protocol file"
    );
    let mut violations = Vec::new();
    for module in &modules {
        let file = module_file(module).expect("read above");
        let code = code_of(&std::fs::read_to_string(&file).expect("read above"));
        for named in named_modules(&code, module) {
            let is_ancestor = module.starts_with(&named);
            if !modules.contains(&named) && !is_ancestor {
                violations.push(format!(
                    "{} imports {} (not a loom-checked protocol file)",
                    file.strip_prefix(src()).unwrap_or(&file).display(),
                    named.join("::")
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "a loom-checked protocol file may import only sync.rs and other protocol files \
         (ARCHITECTURE.md, \"Verification map\"):\n{}",
        violations.join("\n")
    );
}
