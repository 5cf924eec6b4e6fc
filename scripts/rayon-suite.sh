#!/usr/bin/env bash
# Runs rayon's own test suite and rayon-core's integration tests against
# the drop-in `crates/rayon-core`, with the sources of the pinned releases
# taken from cargo's registry cache (nothing of rayon is copied into this
# repository).
#
#   scripts/rayon-suite.sh            # everything
#   RAYON_SUITE_SKIP_DOCTESTS=1 ...   # without rayon's doc tests
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rayon_version=1.12.0
rayon_core_version=1.13.0
work="$repo/target/rayon-suite"
export CARGO_TARGET_DIR="$work/target"
mkdir -p "$work"

echo "== fetch rayon $rayon_version and rayon-core $rayon_core_version into cargo's registry cache"
fetch="$work/fetch"
mkdir -p "$fetch/src"
cat > "$fetch/Cargo.toml" <<TOML
[package]
name = "rayon-suite-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rayon = "=$rayon_version"
rayon-core = "=$rayon_core_version"

[workspace]
TOML
touch "$fetch/src/lib.rs"
cargo fetch --manifest-path "$fetch/Cargo.toml" --quiet

cargo_home="${CARGO_HOME:-$HOME/.cargo}"
crate_file() {
    local found
    found=$(find "$cargo_home/registry/cache" -name "$1-$2.crate" | head -n 1)
    if [ -z "$found" ]; then
        echo "rayon-suite: $1-$2.crate is not in $cargo_home/registry/cache after cargo fetch" >&2
        exit 1
    fi
    echo "$found"
}

echo "== unpack and patch rayon-core to $repo/crates/rayon-core"
rm -rf "$work/rayon-$rayon_version" "$work/rayon-core-$rayon_core_version"
tar -xzf "$(crate_file rayon "$rayon_version")" -C "$work"
tar -xzf "$(crate_file rayon-core "$rayon_core_version")" -C "$work"
patch_section="
[patch.crates-io]
rayon-core = { path = \"$repo/crates/rayon-core\" }

[workspace]
"
printf '%s' "$patch_section" >> "$work/rayon-$rayon_version/Cargo.toml"

# rayon-core's integration tests, as a package of their own that depends
# on the drop-in (their dev-dependencies are those of rayon-core).
core_tests="$work/rayon-core-tests"
rm -rf "$core_tests"
mkdir -p "$core_tests/src"
touch "$core_tests/src/lib.rs"
{
    cat <<TOML
[package]
name = "rayon-core-tests"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rayon-core = "=$rayon_core_version"

[dev-dependencies]
crossbeam-utils = "0.8"
libc = "0.2"
rand = "0.9"
rand_xorshift = "0.4"
scoped-tls = "1.0"
TOML
    for test in "$work/rayon-core-$rayon_core_version"/tests/*.rs; do
        name=$(basename "$test" .rs)
        printf '\n[[test]]\nname = "%s"\npath = "%s"\n' "$name" "$test"
    done
    printf '%s' "$patch_section"
} > "$core_tests/Cargo.toml"

# Every test binary must end: a hang fails the run after this long.
timeout_per_run=${RAYON_SUITE_TIMEOUT:-1200}

echo "== rayon-core $rayon_core_version integration tests on bwos"
timeout "$timeout_per_run" cargo test --manifest-path "$core_tests/Cargo.toml" --tests

echo "== rayon $rayon_version unit and integration tests on bwos"
timeout "$timeout_per_run" cargo test --manifest-path "$work/rayon-$rayon_version/Cargo.toml" --lib --tests

if [ -z "${RAYON_SUITE_SKIP_DOCTESTS:-}" ]; then
    echo "== rayon $rayon_version doc tests on bwos"
    timeout "$timeout_per_run" cargo test --manifest-path "$work/rayon-$rayon_version/Cargo.toml" --doc
fi
