#!/usr/bin/env bash
# The minimum supported Rust version, from the workspace's rust-version:
# the library crates (bwos-macros through bwos's `macros` feature) and the
# drop-in compile with it (all features).
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
rustup toolchain install "$msrv" --profile minimal >/dev/null
echo "-- rust $msrv"
CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check -p bwos-queue -p bwos-macros -p bwos --all-features
CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --manifest-path crates/rayon-core/Cargo.toml
