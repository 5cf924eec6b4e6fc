//! The programs' inputs, generated from fixed seeds into
//! `target/rayon-apps/inputs/KIND-SCALE/` once and reused while their
//! stamp (the generator's version) matches.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{images, trees};

/// Bumped whenever a generator's output changes, so stale inputs are
/// regenerated instead of reused.
const GENERATOR_VERSION: u32 = 1;

/// What a program runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Random files of several sizes (hashing).
    Files,
    /// PNG images of four kinds (recompression).
    Images,
    /// A photo and four distortions of it (comparison).
    ImagePairs,
    /// A directory tree shaped like a home directory (disk usage).
    DirectoryTree,
    /// A source tree in several languages (line counting).
    SourceTree,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Files => "files",
            Kind::Images => "images",
            Kind::ImagePairs => "image-pairs",
            Kind::DirectoryTree => "directory-tree",
            Kind::SourceTree => "source-tree",
        }
    }
}

/// How big the inputs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// `--quick`: seconds of work in all.
    Quick,
    /// The measured run.
    Full,
}

impl Scale {
    fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }

    /// For the report's header line.
    pub fn describe(self) -> &'static str {
        match self {
            Scale::Quick => "quick (small)",
            Scale::Full => "full",
        }
    }
}

/// A generated input.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Its directory, relative to the work directory.
    pub root: PathBuf,
    /// The files a program takes as arguments, in order, relative to the
    /// work directory (empty for the trees, which programs take by their
    /// root).
    pub files: Vec<PathBuf>,
}

/// The input of `kind` at `scale` under `dir` (relative to `base`),
/// generated if missing or stale; its paths are relative to `base`.
pub fn prepare(dir: &Path, kind: Kind, scale: Scale, base: &Path) -> io::Result<Prepared> {
    let relative = dir.join(format!("{}-{}", kind.name(), scale.name()));
    let names = file_names(kind, scale);
    let prepared = Prepared {
        files: names.iter().map(|name| relative.join(name)).collect(),
        root: relative.clone(),
    };
    let root = base.join(&relative);
    let stamp = format!("generator {GENERATOR_VERSION}\n");
    let stamp_path = root.join(".complete");
    if fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(prepared);
    }
    eprintln!("generating {} ...", root.display());
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    fs::create_dir_all(&root)?;
    generate(&root, kind, scale)?;
    fs::write(&stamp_path, stamp)?;
    Ok(prepared)
}

/// The files of a generated input that programs take as arguments.
fn file_names(kind: Kind, scale: Scale) -> Vec<String> {
    match kind {
        Kind::Files => file_sizes(scale)
            .iter()
            .enumerate()
            .map(|(i, size)| file_name(i, *size))
            .collect(),
        Kind::Images => images::SUBJECTS
            .iter()
            .map(|subject| format!("{}.png", subject.name()))
            .collect(),
        Kind::ImagePairs => std::iter::once("reference.png".to_string())
            .chain(
                images::DISTORTIONS
                    .iter()
                    .map(|distortion| format!("{}.png", distortion.name())),
            )
            .collect(),
        Kind::DirectoryTree | Kind::SourceTree => Vec::new(),
    }
}

fn generate(root: &Path, kind: Kind, scale: Scale) -> io::Result<()> {
    let divisor = match scale {
        Scale::Quick => 4,
        Scale::Full => 1,
    };
    match kind {
        Kind::Files => {
            let mut rng = Rng::new(0xb3);
            for (i, size) in file_sizes(scale).into_iter().enumerate() {
                write_random_file(&root.join(file_name(i, size)), size, &mut rng)?;
            }
            Ok(())
        }
        Kind::Images => {
            for (i, subject) in images::SUBJECTS.iter().enumerate() {
                let (width, height) = subject.size();
                let image = subject.draw(width / divisor, height / divisor, 0x0c + i as u64);
                images::write_png(&root.join(format!("{}.png", subject.name())), &image)?;
            }
            Ok(())
        }
        Kind::ImagePairs => {
            let reference = images::Subject::Photo.draw(1600 / divisor, 1200 / divisor, 0xd5);
            images::write_png(&root.join("reference.png"), &reference)?;
            for (i, distortion) in images::DISTORTIONS.iter().enumerate() {
                let distorted = distortion.apply(&reference, 0xd6 + i as u64);
                images::write_png(&root.join(format!("{}.png", distortion.name())), &distorted)?;
            }
            Ok(())
        }
        Kind::DirectoryTree => {
            trees::write_home_directory(root, &trees::HomeShape::at(scale == Scale::Full), 0xd0)
        }
        Kind::SourceTree => {
            trees::write_source_tree(root, &trees::SourceShape::at(scale == Scale::Full), 0x70)
        }
    }
}

/// The hashed files' sizes: many small, a few large (b3sum hashes files
/// of 16 KiB and more in parallel).
pub fn file_sizes(scale: Scale) -> Vec<u64> {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    let counts: &[(u64, usize)] = match scale {
        Scale::Quick => &[(64 * KIB, 4), (MIB, 2), (16 * MIB, 1)],
        Scale::Full => &[
            (64 * KIB, 8),
            (MIB, 8),
            (16 * MIB, 4),
            (128 * MIB, 2),
            (512 * MIB, 1),
        ],
    };
    counts
        .iter()
        .flat_map(|&(size, count)| std::iter::repeat_n(size, count))
        .collect()
}

fn file_name(index: usize, size: u64) -> String {
    format!("{index:02}-{size}.bin")
}

fn write_random_file(path: &Path, size: u64, rng: &mut Rng) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 20, fs::File::create(path)?);
    let mut left = size;
    while left > 0 {
        let word = rng.next_u64().to_le_bytes();
        let take = left.min(8) as usize;
        out.write_all(&word[..take])?;
        left -= take as u64;
    }
    out.flush()
}

/// SplitMix64: a small, seedable generator; the inputs need
/// reproducibility, not cryptographic quality.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-normal with the given median and spread (sigma of the log).
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        // Box-Muller; 1 - unit() is in (0, 1], so the log is finite.
        let radius = (-2.0 * (1.0 - self.unit()).ln()).sqrt();
        let normal = radius * (std::f64::consts::TAU * self.unit()).cos();
        median * (sigma * normal).exp()
    }

    /// One of `items`, uniformly.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_reproducible_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let first: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        let again: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
        assert_eq!(first, again);
        assert_ne!(Rng::new(8).next_u64(), first[0]);
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            assert!(rng.below(3) < 3);
            let unit = rng.unit();
            assert!((0.0..1.0).contains(&unit));
            assert!(rng.log_normal(100.0, 1.0) > 0.0);
        }
    }

    #[test]
    fn the_full_hashing_input_spans_small_to_large_files() {
        let sizes = file_sizes(Scale::Full);
        assert_eq!(sizes.len(), 23);
        assert_eq!(
            sizes.iter().sum::<u64>(),
            (512 << 10) + ((8 + 64 + 256 + 512) << 20)
        );
        assert!(file_sizes(Scale::Quick).iter().sum::<u64>() < 32 << 20);
    }

    /// Catches a generator that is not deterministic (e.g. seeded from the
    /// clock or fed by a directory listing's order): generated twice, an
    /// input must be the same files with the same bytes.
    #[test]
    fn an_input_generated_twice_is_identical() {
        let base =
            std::env::temp_dir().join(format!("bwos-bench-rayon-apps-{}", std::process::id()));
        let digest = |root: &Path| {
            let mut entries = Vec::new();
            trees::walk(root, &mut |path| {
                let bytes = fs::read(&path).unwrap();
                entries.push((path.strip_prefix(root).unwrap().to_path_buf(), bytes))
            })
            .unwrap();
            entries.sort();
            entries
        };
        for (kind, scale) in [
            (Kind::Files, Scale::Quick),
            (Kind::ImagePairs, Scale::Quick),
        ] {
            let first = prepare(Path::new("a"), kind, scale, &base).unwrap();
            let second = prepare(Path::new("b"), kind, scale, &base).unwrap();
            let (da, db) = (
                digest(&base.join(first.root)),
                digest(&base.join(second.root)),
            );
            assert!(!da.is_empty());
            assert_eq!(da, db, "{kind:?}");
            for file in &first.files {
                assert!(base.join(file).is_file(), "{}", file.display());
            }
        }
        fs::remove_dir_all(&base).unwrap();
    }
}
