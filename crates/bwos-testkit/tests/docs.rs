//! Docs that cannot go stale silently: every repository path the docs
//! name exists, `docs/layout.md` names every file, and the lists that
//! claim to be whole are.
//!
//! Run alone (a few seconds; `scripts/test-all.sh` runs it first):
//! `cargo test -p bwos-testkit --test docs`. Each failure lists every
//! offending name as `file:line`, or every file left out, so one run says
//! all there is to fix.
//!
//! # What is read
//! Every Markdown file the repository tracks but `CHANGELOG.md` (history
//! names files that are gone), and the module docs (the leading `//!`
//! block) of every tracked `.rs` file but this one (its docs and fixtures
//! name made-up paths). Code blocks (between fences) are not read.
//!
//! # What counts as a path
//! * A backticked name made of letters, digits, `_ . - / *` that contains
//!   a `/` or ends in `.rs`, `.md`, `.sh` or `.toml`: `sched/latch.rs`,
//!   `tests/ui`, `Cargo.toml`, `worklist/`. A `*` matches within one
//!   path component and must match something.
//! * The target of a relative Markdown link, `[text](docs/usage.md)`,
//!   resolved from the linking file's directory only (as GitHub does).
//!
//! Not checked: absolute paths (`/proc/self/fd`: the system's), `target/`
//! (build output), and a name right after another project's possessive
//! (tokio's `runtime/task`; the projects are [`OTHER_PROJECTS`]).
//!
//! # Where a backticked name may be relative to (accepted forms)
//! A name is found if it exists relative to any of, in this order:
//! 1. in Markdown, the directories named in backticks by the first cell
//!    of its table row (`| \`task/\` | ... \`raw.rs\` |`) and by the
//!    headings above it (`### \`sched/\``), innermost first; then the
//!    directories of the paths with a `/` named before it in its paragraph
//!    (`\`crates/bwos/examples/http_server.rs\` and \`axum_server.rs\``),
//!    latest first;
//! 2. the naming file's directory (and, for `foo.rs`, `foo/`: its
//!    submodules);
//! 3. the naming file's package (the nearest directory below the root
//!    with a `Cargo.toml`) and that package's `src/`;
//! 4. the repository root;
//! 5. for files outside any package (`ARCHITECTURE.md`, `docs/*.md`):
//!    `crates/`, each `crates/<name>/` and each `crates/<name>/src/`.
//!
//! For `docs/layout.md`'s coverage a name stands for the first path it
//! resolves to in that order, so layout.md gives each directory a heading
//! that names it and lists the directory's files under it.
//!
//! # It fails
//! The fixtures below run the check on made-up trees and docs and assert
//! what it reports. Mutation, run on the real repository: writing the old
//! name `core.rs` back into the `worklist/` row of `ARCHITECTURE.md`'s
//! front-end table (the file is `spill.rs`) fails `named_paths_exist` with
//! "ARCHITECTURE.md:91: \`core.rs\` (looked for
//! crates/bwos/src/worklist/core.rs, ...)"; taking the name `net.rs` out
//! of `docs/layout.md` fails `layout_names_every_file` with
//! "docs/layout.md does not name 1 files: crates/bwos/tests/net.rs".

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Projects whose files the docs cite by their own paths: a name right
/// after `<project>'s ` is theirs and is not looked for here.
const OTHER_PROJECTS: &[&str] = &[
    "tokio",
    "rayon",
    "rayon-core",
    "crossbeam",
    "crossbeam-deque",
    "hyper",
    "mio",
    "smol",
    "loom",
    "stdexec",
    "chili",
];

/// This file, whose docs and fixtures name made-up paths: not read.
const THIS_FILE: &str = "crates/bwos-testkit/tests/docs.rs";

/// The file that names every other one.
const LAYOUT: &str = "docs/layout.md";

/// Lists other than layout.md that claim to be whole: `doc` names every
/// file of `dir` but `mod.rs` and `tests.rs` (a folder's own entry and its
/// unit tests).
const WHOLE_LISTS: &[(&str, &str, &str)] = &[
    (
        "ARCHITECTURE.md",
        "crates/bwos/src/sched",
        "the table of the scheduler core's files",
    ),
    (
        "ARCHITECTURE.md",
        "crates/bwos/src/loom_models",
        "the verification map's loom models",
    ),
    (
        "crates/bwos/src/lib.rs",
        "crates/bwos/src/loom_models",
        "the crate docs' list of model-checked protocols",
    ),
];

/// Files layout.md need not name: licenses, lock files, `.gitignore`, and
/// trybuild's expected compiler output (each beside the `.rs` it is for).
fn layout_exempt(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("LICENSE-")
        || name == "Cargo.lock"
        || name == ".gitignore"
        || name.ends_with(".stderr")
}

#[test]
fn named_paths_exist() {
    let repo = Repository::read();
    let stale: Vec<String> = repo
        .names()
        .into_iter()
        .filter(|name| name.resolved(&repo.tree).is_none())
        .map(|name| name.report())
        .collect();
    assert!(
        stale.is_empty(),
        "{} names in the docs name no file or directory of the repository:\n{}",
        stale.len(),
        stale.join("\n")
    );
}

#[test]
fn layout_names_every_file() {
    let repo = Repository::read();
    let named = repo.named_by(LAYOUT);
    let missing: Vec<&String> = repo
        .tree
        .files
        .iter()
        .filter(|file| !layout_exempt(file) && !named.contains(*file))
        .collect();
    assert!(
        missing.is_empty(),
        "{LAYOUT} does not name {} files:\n{}",
        missing.len(),
        missing
            .iter()
            .map(|file| format!("  {file}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn whole_lists_are_whole() {
    let repo = Repository::read();
    let mut missing = Vec::new();
    for &(doc, dir, list) in WHOLE_LISTS {
        let named = repo.named_by(doc);
        for file in repo.tree.files_under(dir) {
            let name = file.rsplit('/').next().unwrap_or(file);
            if name != "mod.rs" && name != "tests.rs" && !named.contains(file) {
                missing.push(format!("  {doc} ({list}) does not name {file}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} files left out of lists that claim to be whole:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// The files of the repository and the paths its docs name.
struct Repository {
    root: PathBuf,
    tree: Tree,
}

impl Repository {
    /// The files git tracks, and the new ones it does not ignore, that
    /// exist in the working tree.
    fn read() -> Repository {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(
            root.join("ARCHITECTURE.md").is_file(),
            "{} is not the repository root",
            root.display()
        );
        let output = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .output()
            .expect("git runs (the check lists the repository's files with it)");
        assert!(
            output.status.success(),
            "git ls-files: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let files = String::from_utf8(output.stdout)
            .expect("UTF-8 file names")
            .split('\0')
            .filter(|file| !file.is_empty() && root.join(file).is_file())
            .map(str::to_owned)
            .collect::<Vec<_>>();
        Repository {
            root,
            tree: Tree::new(files),
        }
    }

    /// The files whose names are read: Markdown but the changelog, and
    /// Rust sources (their `//!` docs).
    fn docs(&self) -> Vec<&String> {
        self.tree
            .files
            .iter()
            .filter(|file| {
                let read = (file.ends_with(".md") && file.as_str() != "CHANGELOG.md")
                    || file.ends_with(".rs");
                read && file.as_str() != THIS_FILE
            })
            .collect()
    }

    fn text(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    fn names(&self) -> Vec<Name> {
        self.docs()
            .into_iter()
            .flat_map(|file| names_in(file, &self.text(file), &self.tree))
            .collect()
    }

    /// The paths `doc` names, each as the first path it resolves to.
    fn named_by(&self, doc: &str) -> BTreeSet<String> {
        names_in(doc, &self.text(doc), &self.tree)
            .iter()
            .filter_map(|name| name.resolved(&self.tree))
            .collect()
    }
}

/// The repository's files, and the directories that hold them (without a
/// trailing `/`; the root is `""`).
struct Tree {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
}

impl Tree {
    fn new(files: impl IntoIterator<Item = String>) -> Tree {
        let files: BTreeSet<String> = files.into_iter().collect();
        let mut dirs = BTreeSet::from([String::new()]);
        for file in &files {
            let mut end = file.len();
            while let Some(slash) = file[..end].rfind('/') {
                dirs.insert(file[..slash].to_owned());
                end = slash;
            }
        }
        Tree { files, dirs }
    }

    fn exists(&self, path: &str) -> bool {
        if path.contains('*') {
            self.files
                .iter()
                .chain(&self.dirs)
                .any(|candidate| glob_matches(path, candidate))
        } else {
            self.files.contains(path) || self.dirs.contains(path)
        }
    }

    fn files_under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.files
            .iter()
            .filter(move |file| file.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))
    }

    /// The nearest directory above `file`, below the root, that holds a
    /// `Cargo.toml`.
    fn package_of(&self, file: &str) -> Option<String> {
        let mut dir = parent(file);
        while !dir.is_empty() {
            if self.files.contains(&format!("{dir}/Cargo.toml")) {
                return Some(dir.to_owned());
            }
            dir = parent(dir);
        }
        None
    }

    /// `crates/<name>` for each package there.
    fn crates(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .filter_map(|file| file.strip_suffix("/Cargo.toml"))
            .filter(|dir| {
                dir.strip_prefix("crates/")
                    .is_some_and(|n| !n.contains('/'))
            })
    }
}

/// One path named by a doc, and where it was looked for.
#[derive(Debug)]
struct Name {
    file: String,
    line: usize,
    text: String,
    /// Full paths it may stand for, most specific first.
    candidates: Vec<String>,
}

impl Name {
    /// The first candidate that exists.
    fn resolved(&self, tree: &Tree) -> Option<String> {
        self.candidates
            .iter()
            .find(|candidate| tree.exists(candidate))
            .cloned()
    }

    fn report(&self) -> String {
        let looked: Vec<&str> = self.candidates.iter().take(3).map(String::as_str).collect();
        let more = self.candidates.len().saturating_sub(looked.len());
        format!(
            "  {}:{}: `{}` (looked for {}{})",
            self.file,
            self.line,
            self.text,
            looked.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        )
    }
}

/// The paths `file` (with contents `text`) names.
fn names_in(file: &str, text: &str, tree: &Tree) -> Vec<Name> {
    let markdown = file.ends_with(".md");
    let bases = bases(file, tree);
    let mut names = Vec::new();
    let mut in_fence = false;
    // (heading level, the directories its backticked names resolve to).
    let mut headings: Vec<(usize, Vec<String>)> = Vec::new();
    // The directories of the paths named so far in this paragraph.
    let mut paragraph: Vec<String> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = if markdown {
            line
        } else if let Some(doc) = line.trim_start().strip_prefix("//!") {
            doc
        } else if line.trim().is_empty()
            || line.trim_start().starts_with("//")
            || line.starts_with("#![")
        {
            continue;
        } else {
            // The module docs are the file's leading `//!` block.
            break;
        };
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            paragraph.clear();
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let resolve_dirs = |spans: &[&str], contexts: &[String]| -> Vec<String> {
            spans
                .iter()
                .filter_map(|span| {
                    candidates(span, contexts, &bases)
                        .into_iter()
                        .find(|path| tree.dirs.contains(path))
                })
                .collect()
        };
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if markdown && (1..=6).contains(&level) && trimmed[level..].starts_with(' ') {
            headings.retain(|&(outer_level, _)| outer_level < level);
            paragraph.clear();
            let dirs = resolve_dirs(&path_spans(trimmed), &heading_dirs(&headings));
            headings.push((level, dirs));
        }
        let mut contexts = heading_dirs(&headings);
        if markdown && trimmed.starts_with('|') {
            // A table's rows are not one paragraph.
            paragraph.clear();
            let first_cell = trimmed[1..].split('|').next().unwrap_or("");
            let mut row = resolve_dirs(&path_spans(first_cell), &contexts);
            row.append(&mut contexts);
            contexts = row;
        }
        for span in path_spans(line) {
            let mut looked_in = contexts.clone();
            looked_in.extend(paragraph.iter().rev().cloned());
            let name = Name {
                file: file.to_owned(),
                line: index + 1,
                text: span.to_owned(),
                candidates: candidates(span, &looked_in, &bases),
            };
            if let Some(path) = name.resolved(tree).filter(|_| span.contains('/')) {
                let dir = if tree.dirs.contains(&path) {
                    path
                } else {
                    parent(&path).to_owned()
                };
                paragraph.push(dir);
            }
            names.push(name);
        }
        if markdown {
            for target in link_targets(line) {
                names.push(Name {
                    file: file.to_owned(),
                    line: index + 1,
                    text: target.to_owned(),
                    candidates: join(parent(file), target).into_iter().collect(),
                });
            }
        }
    }
    names
}

/// The directories the headings name, innermost first.
fn heading_dirs(headings: &[(usize, Vec<String>)]) -> Vec<String> {
    headings
        .iter()
        .rev()
        .flat_map(|(_, dirs)| dirs.iter().cloned())
        .collect()
}

/// Where a name in `file` may be relative to, after its contexts: rules 2
/// to 5 of the module docs.
fn bases(file: &str, tree: &Tree) -> Vec<String> {
    let dir = parent(file);
    let mut bases = vec![dir.to_owned()];
    let stem = file.rsplit('/').next().unwrap_or(file).strip_suffix(".rs");
    if let Some(stem) = stem.filter(|s| !["mod", "lib", "main"].contains(s)) {
        bases.extend(join(dir, stem));
    }
    match tree.package_of(file) {
        Some(package) => {
            bases.push(format!("{package}/src"));
            bases.push(package);
            bases.push(String::new());
        }
        None => {
            bases.push(String::new());
            bases.push("crates".to_owned());
            for krate in tree.crates() {
                bases.push(krate.to_owned());
                bases.push(format!("{krate}/src"));
            }
        }
    }
    bases
}

fn candidates(name: &str, contexts: &[String], bases: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for base in contexts.iter().chain(bases) {
        if let Some(path) = join(base, name)
            && !found.contains(&path)
        {
            found.push(path);
        }
    }
    found
}

/// The backticked names on `line` that look like repository paths.
fn path_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = line;
    let mut before_len = 0;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let span = &after[..close];
        let before = &line[..before_len + open];
        if is_path(span) && !after_other_project(before) {
            spans.push(span);
        }
        let consumed = open + 1 + close + 1;
        before_len += consumed;
        rest = &rest[consumed..];
    }
    spans
}

fn is_path(span: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_.-/*".contains(c);
    !span.is_empty()
        && span.chars().all(allowed)
        && span.chars().any(|c| c.is_ascii_alphabetic())
        && (span.contains('/')
            || [".rs", ".md", ".sh", ".toml"]
                .iter()
                .any(|e| span.len() > e.len() && span.ends_with(e)))
        && !span.starts_with('/')
        && !span.starts_with("target/")
}

/// Whether the text before a span ends with `<other project>'s `.
fn after_other_project(before: &str) -> bool {
    OTHER_PROJECTS
        .iter()
        .any(|project| before.ends_with(&format!("{project}'s ")))
}

/// The relative targets of the Markdown links on `line`, without their
/// `#fragment`.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let target = &line[at + 2..];
            let target = &target[..target.find(')')?];
            let target = target.split('#').next().unwrap_or("");
            let external = target.contains("://") || target.starts_with("mailto:");
            (!target.is_empty() && !external && !target.starts_with('/')).then_some(target)
        })
        .collect()
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |slash| &path[..slash])
}

/// `base/name` with `.`, `..` and a trailing `/` taken out; `None` if it
/// leaves the repository.
fn join(base: &str, name: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(name.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// `pattern` with `*` for any run of characters but `/`.
fn glob_matches(pattern: &str, path: &str) -> bool {
    let (pattern, path) = (pattern.split('/'), path.split('/'));
    pattern.clone().count() == path.clone().count()
        && pattern.zip(path).all(|(p, s)| component_matches(p, s))
}

fn component_matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head)
                && (head.len()..=text.len()).any(|at| component_matches(tail, &text[at..]))
        }
    }
}

// The check on made-up trees: it reports what is stale and only that.

fn fixture_tree() -> Tree {
    Tree::new(
        [
            "Cargo.toml",
            "ARCHITECTURE.md",
            "docs/layout.md",
            "crates/rt/Cargo.toml",
            "crates/rt/src/lib.rs",
            "crates/rt/src/sched/mod.rs",
            "crates/rt/src/sched/latch.rs",
            "crates/rt/src/worklist/mod.rs",
            "crates/rt/src/worklist/spill.rs",
            "crates/rt/tests/net.rs",
        ]
        .map(str::to_owned),
    )
}

/// Asserts that `text`, as `file` of the fixture tree, names exactly the
/// `expected` stale names (line, name).
fn assert_stale(file: &str, text: &str, expected: &[(usize, &str)]) {
    let tree = fixture_tree();
    let stale: Vec<(usize, String)> = names_in(file, text, &tree)
        .into_iter()
        .filter(|name| name.resolved(&tree).is_none())
        .map(|name| (name.line, name.text))
        .collect();
    let expected: Vec<(usize, String)> = expected
        .iter()
        .map(|&(line, name)| (line, name.to_owned()))
        .collect();
    assert_eq!(stale, expected, "stale names of {file}");
}

// Mutation caught: `Tree::exists` looking only at directories (a file
// path never found) reports the two good names too.
#[test]
fn a_stale_name_is_reported_with_its_line_and_a_good_one_is_not() {
    let doc = "# Map\n\
               `worklist/spill.rs` holds the protocol; `sched/latch.rs` too.\n\
               `worklist/core.rs` is gone.\n";
    assert_stale("ARCHITECTURE.md", doc, &[(3, "worklist/core.rs")]);
}

// Mutation caught: headings that give no directory (`headings.push((level,
// Vec::new()))`) report `latch.rs` on line 3.
#[test]
fn headings_and_table_rows_give_bare_names_their_directory() {
    let tree = fixture_tree();
    let doc = "## `crates/rt/src/sched/`\n\
               \n\
               - `latch.rs`: latches\n\
               - `spill.rs`: not here\n\
               ## Front ends\n\
               | `worklist/` | `spill.rs` |\n\
               | `sched/` | `spill.rs` |\n";
    assert_stale("ARCHITECTURE.md", doc, &[(4, "spill.rs"), (7, "spill.rs")]);
    let named: Vec<Option<String>> = names_in("ARCHITECTURE.md", doc, &tree)
        .iter()
        .map(|name| name.resolved(&tree))
        .collect();
    assert_eq!(named[1].as_deref(), Some("crates/rt/src/sched/latch.rs"));
}

// Mutation caught: reading every `//!` line of a file rather than its
// leading block reports the made-up name in the string on line 5.
#[test]
fn module_docs_resolve_from_their_module_and_crate() {
    let source = "//! The hand-over is in `spill.rs`; the latch in `sched/latch.rs`,\n\
                  //! the tests in `tests/net.rs`, not in `tests/io.rs`.\n\
                  // `not/a/module/doc.rs`\n\
                  const DOC: &str = \"\n\
                  //! `not/a/module/doc/either.rs`\";\n";
    assert_stale(
        "crates/rt/src/worklist/mod.rs",
        source,
        &[(2, "tests/io.rs")],
    );
}

// Mutation caught: links resolved from the repository root
// (`join("", target)`) let the broken `ARCHITECTURE.md` link from `docs/`
// pass.
#[test]
fn links_resolve_from_the_linking_file_only() {
    let doc = "[map](ARCHITECTURE.md), [map](../ARCHITECTURE.md#layers), \
               [site](https://example.com/x.md)\n";
    assert_stale("docs/layout.md", doc, &[(1, "ARCHITECTURE.md")]);
}

// Mutation caught: fences not skipped reports `gone/file.rs` on line 3.
#[test]
fn code_blocks_absolute_paths_and_other_projects_paths_are_not_checked() {
    let doc = "tokio's `runtime/task`, `/proc/self/fd`, `target/release/x`\n\
               ```sh\n\
               `gone/file.rs`\n\
               ```\n\
               `crates/*/src/lib.rs` and `crates/*/src/nothing.rs`\n";
    assert_stale("docs/layout.md", doc, &[(5, "crates/*/src/nothing.rs")]);
}

// Mutation caught: a heading's directory resolved without the headings
// above it (`resolve_dirs(.., &[])`) takes `task/` for `crates/rt/src/task/`
// rather than `crates/rt/src/sched/task/`, so `raw.rs` counts as missing.
#[test]
fn layout_coverage_counts_the_files_a_name_resolves_to() {
    let tree = Tree::new(
        [
            "crates/rt/Cargo.toml",
            "crates/rt/src/lib.rs",
            "crates/rt/src/sched/mod.rs",
            "crates/rt/src/sched/task/raw.rs",
            "crates/rt/src/task/mod.rs",
        ]
        .map(str::to_owned),
    );
    let doc = "## `crates/rt/src/`\n\
               \n\
               `lib.rs`\n\
               ### `sched/`\n\
               \n\
               `mod.rs`\n\
               #### `task/`\n\
               \n\
               `raw.rs`\n";
    let named: BTreeSet<String> = names_in(LAYOUT, doc, &tree)
        .iter()
        .filter_map(|name| name.resolved(&tree))
        .collect();
    let missing: Vec<&String> = tree
        .files
        .iter()
        .filter(|file| file.starts_with("crates/rt/src/") && !named.contains(*file))
        .collect();
    assert_eq!(missing, ["crates/rt/src/task/mod.rs"]);
}

// Mutation caught: a paragraph's directories kept past its blank line
// let `spill.rs` on line 3 resolve.
#[test]
fn a_bare_name_may_follow_a_path_of_its_directory_in_its_paragraph() {
    let doc = "`crates/rt/src/worklist/mod.rs` runs a list, `spill.rs` hands over.\n\
               \n\
               A new paragraph: `spill.rs` is nowhere near.\n";
    assert_stale("ARCHITECTURE.md", doc, &[(3, "spill.rs")]);
}
