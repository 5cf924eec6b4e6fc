//! The repository README's Rust snippets, compiled and run as doc tests
//! (`cargo test -p bwos-bench --doc`): this crate depends on everything
//! they use. The benchmark tool itself is the `bwos-bench` binary.

/// The README's quick starts.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
