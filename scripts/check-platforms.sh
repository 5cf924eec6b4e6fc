#!/usr/bin/env bash
# Builds (cargo check) the library crates for the platforms that are only
# compiled, not tested, here: macOS, FreeBSD and Windows (GNU), with every
# feature and with none; and each feature alone on Linux. `fork`'s stack
# switching (stacker's psm) assembles a little code with the target's C
# compiler: clang for macOS, MinGW for Windows.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(x86_64-apple-darwin x86_64-unknown-freebsd x86_64-pc-windows-gnu)
rustup target add "${targets[@]}" >/dev/null

export CC_x86_64_apple_darwin=clang
export CARGO_TARGET_DIR=target/platforms
for target in "${targets[@]}"; do
    echo "-- $target: all features, then none"
    cargo check --quiet -p bwos-queue -p bwos --all-features --target "$target"
    cargo check --quiet -p bwos --no-default-features --target "$target"
    cargo check --quiet --manifest-path crates/rayon-core/Cargo.toml --target "$target"
done

echo "-- Linux: bwos with no feature, then each feature alone"
cargo check --quiet -p bwos --no-default-features
for feature in io fork hyper tokio-io tokio-compat serde test-util macros; do
    cargo check --quiet -p bwos --no-default-features --features "$feature"
done
