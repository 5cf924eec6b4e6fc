//! Trees drawn from seeds: a home directory for a disk-usage tool (deep
//! chains of small directories next to a few wide flat ones, sizes spread
//! over six orders of magnitude) and a source tree for a line counter
//! (files in six languages with comments, blank lines and strings that
//! hold comment markers).
//!
//! The home directory's files are sparse: their length is set, nothing is
//! written, so the tree costs inodes, not disk space (the disk-usage tool
//! runs with apparent sizes).

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::inputs::Rng;

/// How big a home directory is.
#[derive(Debug, Clone)]
pub struct HomeShape {
    /// Projects, each a source tree with a build directory.
    pub projects: u32,
    /// Packages in a dependency directory, each nesting its own.
    pub packages: u32,
    /// Files in the one flat directory (a mail or cache spool).
    pub spool_files: u32,
    /// Photo folders (one per month).
    pub photo_months: u32,
}

impl HomeShape {
    /// The shape of the full run (about 41,000 entries), or of `--quick`.
    pub fn at(full: bool) -> HomeShape {
        if full {
            HomeShape {
                projects: 24,
                packages: 500,
                spool_files: 12_000,
                photo_months: 60,
            }
        } else {
            HomeShape {
                projects: 2,
                packages: 30,
                spool_files: 500,
                photo_months: 4,
            }
        }
    }
}

/// Writes a home directory of `shape` under `root`.
pub fn write_home_directory(root: &Path, shape: &HomeShape, seed: u64) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    for project in 0..shape.projects {
        let dir = root.join(format!("projects/project-{project:02}"));
        let depth = 2 + rng.below(3) as u32;
        source_dirs(&dir.join("src"), depth, &mut rng)?;
        // A build directory: many small objects in hashed subdirectories.
        let objects = 20 + rng.below(200);
        for object in 0..objects {
            let sub = dir.join(format!("target/deps/{:02x}", object % 16));
            let size = rng.log_normal(40_000.0, 1.5) as u64;
            sparse_file(&sub.join(format!("obj-{object}.o")), size)?;
        }
    }
    for package in 0..shape.packages {
        let mut dir = root.join(format!("node_modules/pkg-{package:03}"));
        // Nested dependencies: a chain of a few levels, a few files each.
        let levels = 1 + rng.below(6);
        for level in 0..levels {
            for file in 0..(2 + rng.below(8)) {
                let size = rng.log_normal(3_000.0, 1.2) as u64;
                sparse_file(&dir.join(format!("file-{file}.js")), size)?;
            }
            dir = dir.join(format!("node_modules/dep-{level}"));
        }
    }
    let spool = root.join("mail/inbox");
    for message in 0..shape.spool_files {
        let size = rng.log_normal(6_000.0, 1.0) as u64;
        sparse_file(&spool.join(format!("{message:06}.eml")), size)?;
    }
    for month in 0..shape.photo_months {
        let dir = root.join(format!(
            "photos/{}/{:02}",
            2015 + month / 12,
            1 + month % 12
        ));
        for photo in 0..(5 + rng.below(60)) {
            let size = rng.log_normal(4_000_000.0, 0.5) as u64;
            sparse_file(&dir.join(format!("IMG_{photo:04}.jpg")), size)?;
        }
    }
    Ok(())
}

fn source_dirs(dir: &Path, depth: u32, rng: &mut Rng) -> io::Result<()> {
    for file in 0..(3 + rng.below(25)) {
        let size = rng.log_normal(8_000.0, 1.3) as u64;
        sparse_file(&dir.join(format!("module_{file}.rs")), size)?;
    }
    if depth > 0 {
        for sub in 0..(1 + rng.below(4)) {
            source_dirs(&dir.join(format!("sub_{sub}")), depth - 1, rng)?;
        }
    }
    Ok(())
}

fn sparse_file(path: &Path, size: u64) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::File::create(path)?.set_len(size)
}

/// How big a source tree is.
#[derive(Debug, Clone)]
pub struct SourceShape {
    /// Files in the tree.
    pub files: u32,
    /// Median lines per file (log-normal spread: a few files are long).
    pub median_lines: f64,
}

impl SourceShape {
    /// The shape of the full run (about 6,000 files, 70 MB), or of
    /// `--quick`.
    pub fn at(full: bool) -> SourceShape {
        SourceShape {
            files: if full { 6_000 } else { 300 },
            median_lines: 150.0,
        }
    }
}

/// A language's comment syntax.
struct Language {
    extension: &'static str,
    line_comment: &'static str,
    block_comment: Option<(&'static str, &'static str)>,
    keywords: &'static [&'static str],
}

const LANGUAGES: [Language; 6] = [
    Language {
        extension: "rs",
        line_comment: "//",
        block_comment: Some(("/*", "*/")),
        keywords: &["let", "fn", "match", "impl", "pub", "return"],
    },
    Language {
        extension: "py",
        line_comment: "#",
        block_comment: None,
        keywords: &["def", "return", "for", "in", "if", "import"],
    },
    Language {
        extension: "c",
        line_comment: "//",
        block_comment: Some(("/*", "*/")),
        keywords: &["int", "static", "return", "for", "if", "struct"],
    },
    Language {
        extension: "js",
        line_comment: "//",
        block_comment: Some(("/*", "*/")),
        keywords: &["const", "function", "return", "await", "if", "export"],
    },
    Language {
        extension: "go",
        line_comment: "//",
        block_comment: Some(("/*", "*/")),
        keywords: &["func", "return", "var", "range", "if", "defer"],
    },
    Language {
        extension: "sh",
        line_comment: "#",
        block_comment: None,
        keywords: &["local", "echo", "if", "then", "fi", "for"],
    },
];

const IDENTIFIERS: [&str; 12] = [
    "count", "buffer", "node", "index", "result", "config", "queue", "parser", "value", "total",
    "worker", "offset",
];

/// Writes a source tree of `shape` under `root`: packages of nested
/// directories, each file in one language.
pub fn write_source_tree(root: &Path, shape: &SourceShape, seed: u64) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    let mut text = String::new();
    for file in 0..shape.files {
        let language = rng.pick(&LANGUAGES);
        let package = rng.below(u64::from(shape.files / 40 + 1));
        let depth = rng.below(4);
        let mut dir = root.join(format!("pkg-{package:03}"));
        for level in 0..depth {
            dir = dir.join(format!("d{}", (file as u64 + level) % 5));
        }
        let lines = rng.log_normal(shape.median_lines, 1.1).min(40_000.0) as u32 + 1;
        text.clear();
        source_text(&mut text, language, lines, &mut rng);
        fs::create_dir_all(&dir)?;
        fs::write(
            dir.join(format!("file_{file:05}.{}", language.extension)),
            &text,
        )?;
    }
    Ok(())
}

fn source_text(out: &mut String, language: &Language, lines: u32, rng: &mut Rng) {
    let mut line = 0;
    while line < lines {
        let indent = "    ".repeat(rng.below(4) as usize);
        match rng.below(20) {
            0..=1 => out.push('\n'),
            2..=4 => {
                let words = 3 + rng.below(8);
                out.push_str(&indent);
                out.push_str(language.line_comment);
                for _ in 0..words {
                    out.push(' ');
                    let word: &&str = rng.pick(&IDENTIFIERS);
                    out.push_str(word);
                }
                out.push('\n');
            }
            5 if language.block_comment.is_some() => {
                let (open, close) = language.block_comment.expect("checked");
                let body = 1 + rng.below(6) as u32;
                writeln!(out, "{indent}{open}").expect("a String");
                for _ in 0..body {
                    writeln!(
                        out,
                        "{indent} * {} {}",
                        rng.pick(&IDENTIFIERS),
                        rng.pick(&IDENTIFIERS)
                    )
                    .expect("a String");
                }
                writeln!(out, "{indent} {close}").expect("a String");
                line += body + 1;
            }
            6 => {
                // A string holding comment markers: not a comment.
                let marker = language
                    .block_comment
                    .map_or(language.line_comment, |(open, _)| open);
                writeln!(
                    out,
                    "{indent}{} {} = \"{} {marker} not a comment\"",
                    rng.pick(language.keywords),
                    rng.pick(&IDENTIFIERS),
                    rng.pick(&IDENTIFIERS)
                )
                .expect("a String");
            }
            _ => {
                writeln!(
                    out,
                    "{indent}{} {} = {}({}, {}) + {}",
                    rng.pick(language.keywords),
                    rng.pick(&IDENTIFIERS),
                    rng.pick(&IDENTIFIERS),
                    rng.pick(&IDENTIFIERS),
                    rng.below(1000),
                    rng.pick(&IDENTIFIERS)
                )
                .expect("a String");
            }
        }
        line += 1;
    }
}

/// Calls `visit` with every file under `root`, in name order (tests: an
/// input's digest).
pub fn walk(root: &Path, visit: &mut dyn FnMut(PathBuf)) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(root)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk(&path, visit)?;
        } else {
            visit(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches a tree drawn from anything but its seed (e.g. a
    /// `HashMap`'s iteration order or the clock).
    #[test]
    fn trees_are_drawn_from_their_seed_alone() {
        let base = std::env::temp_dir().join(format!("bwos-bench-trees-{}", std::process::id()));
        let listing = |root: &Path| {
            let mut files = Vec::new();
            walk(root, &mut |path| {
                let length = fs::metadata(&path).unwrap().len();
                // The home directory's files are sparse: lengths only.
                let bytes = if root.ends_with("src") {
                    fs::read(&path).unwrap()
                } else {
                    Vec::new()
                };
                files.push((
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    length,
                    bytes,
                ));
            })
            .unwrap();
            files
        };
        let home = HomeShape {
            projects: 1,
            packages: 5,
            spool_files: 20,
            photo_months: 1,
        };
        let source = SourceShape {
            files: 40,
            median_lines: 30.0,
        };
        for run in ["a", "b"] {
            write_home_directory(&base.join(run).join("home"), &home, 5).unwrap();
            write_source_tree(&base.join(run).join("src"), &source, 6).unwrap();
        }
        for tree in ["home", "src"] {
            let (a, b) = (
                listing(&base.join("a").join(tree)),
                listing(&base.join("b").join(tree)),
            );
            assert!(a.len() >= 40, "{tree}: {}", a.len());
            assert_eq!(a, b, "{tree}");
        }
        fs::remove_dir_all(&base).unwrap();
    }
}
