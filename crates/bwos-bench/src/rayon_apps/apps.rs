//! The programs: published command-line tools whose parallel work runs on
//! rayon, each pinned to a release whose `Cargo.lock` locks rayon-core
//! 1.12 or 1.13 (so the drop-in, 1.13.0, patches it), chosen so that their
//! parallel work differs in grain and balance:
//!
//! | program | work | parallel shape |
//! | --- | --- | --- |
//! | b3sum | BLAKE3 of files of 64 KiB to 512 MiB | a fine `join` tree (blake3 splits the input in halves down to a few chunks of 1 KiB): balanced, microseconds per leaf |
//! | oxipng | lossless PNG recompression | coarse and unbalanced: a `spawn` per reduction trial and `par_iter` over filters and files, deflate trials of very different cost, and a `yield_local` loop waiting for them |
//! | dssim | image similarity of a photo and four distortions | `join` and data-parallel loops over pixels (1,024 per piece), channels and scales of each comparison, entered from outside the pool; images decoded on two threads of its own meanwhile |
//! | dust | disk usage of a directory tree | fine and unbalanced: a scope `spawn` per directory and a `par_iter` over each directory's entries (a `stat` each), on a tree with deep chains and wide flat directories |
//! | tokei | lines of code of a source tree | `par_bridge` over a channel that the ignore crate's own walker threads fill: files of very different length parsed as they arrive |

use std::path::Path;

use serde::Serialize;

use super::inputs::{Kind, Prepared};

/// The programs `--apps` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AppName {
    /// BLAKE3 hashing (b3sum).
    B3sum,
    /// PNG recompression (oxipng).
    Oxipng,
    /// Image similarity (dssim).
    Dssim,
    /// Disk usage (dust, package du-dust).
    Dust,
    /// Lines of code (tokei).
    Tokei,
}

impl AppName {
    /// Every program, in the table's order.
    pub const ALL: [AppName; 5] = [
        AppName::B3sum,
        AppName::Oxipng,
        AppName::Dssim,
        AppName::Dust,
        AppName::Tokei,
    ];
}

/// One program: where its source comes from and how it runs.
#[derive(Debug, Clone)]
pub struct App {
    /// The package on crates.io.
    pub package: &'static str,
    /// The release built.
    pub version: &'static str,
    /// The binary target run.
    pub binary: &'static str,
    /// The input it runs on.
    pub input: Kind,
    /// Whether the program writes files (into the output directory its
    /// arguments name); they are part of its output.
    pub writes_files: bool,
    name: AppName,
}

impl App {
    /// The catalog entry of `name`.
    pub fn of(name: AppName) -> App {
        let (package, version, binary, input, writes_files) = match name {
            AppName::B3sum => ("b3sum", "1.8.7", "b3sum", Kind::Files, false),
            AppName::Oxipng => ("oxipng", "10.2.1", "oxipng", Kind::Images, true),
            AppName::Dssim => ("dssim", "3.5.1", "dssim", Kind::ImagePairs, false),
            AppName::Dust => ("du-dust", "1.2.7", "dust", Kind::DirectoryTree, false),
            AppName::Tokei => ("tokei", "15.0.0", "tokei", Kind::SourceTree, false),
        };
        App {
            package,
            version,
            binary,
            input,
            writes_files,
            name,
        }
    }

    /// The program's arguments on `input`, with `out` as its output
    /// directory if it writes files. Threads come from
    /// `RAYON_NUM_THREADS`, which every program honours.
    pub fn arguments(&self, input: &Prepared, out: &Path) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        let files = || input.files.iter().map(|f| path(f)).collect::<Vec<_>>();
        let mut arguments: Vec<String> = Vec::new();
        match self.name {
            AppName::B3sum => arguments.extend(files()),
            AppName::Oxipng => {
                // The default level (2): 8 filter trials per reduction;
                // quiet; every output written, even where not smaller.
                for a in ["-o", "2", "-q", "--force", "--dir"] {
                    arguments.push(a.into());
                }
                arguments.push(path(out));
                arguments.extend(files());
            }
            AppName::Dssim => arguments.extend(files()),
            AppName::Dust => {
                // Apparent sizes (file lengths, not blocks: independent of
                // the file system), no bars, colours or progress, full
                // paths, a fixed width and line count.
                for a in ["-s", "-b", "-c", "-P", "-p", "-w", "120", "-n", "80"] {
                    arguments.push(a.into());
                }
                arguments.push(path(&input.root));
            }
            AppName::Tokei => {
                for a in ["--sort", "code"] {
                    arguments.push(a.into());
                }
                arguments.push(path(&input.root));
            }
        }
        arguments
    }
}
