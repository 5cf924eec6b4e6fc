#!/usr/bin/env bash
# Packs the library crates as crates.io would receive them and builds the
# packed sources (cargo package verifies by compiling the .crate files):
# bwos-queue, bwos-macros and bwos together, since bwos depends on a
# bwos-queue and (feature `macros`) a bwos-macros that are not published
# yet. The rayon-core drop-in is not packed: its name is
# rayon-core's, so users take it by path or git (README).
set -euo pipefail
cd "$(dirname "$0")/.."

# Cargo verifies bwos against the packed bwos-queue through a local
# registry whose sources it unpacks under its home and builds in the
# workspace's target directory, once per name and version (registry crates
# never change): a copy unpacked or built by an earlier run (same version,
# older code) would be used instead of this one.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
for crate in bwos-queue bwos-macros; do
    rm -rf "$cargo_home"/registry/src/-*/"$crate"-0.1.0 "$cargo_home"/registry/cache/-*/"$crate"-0.1.0.crate
    cargo clean -q -p "$crate"
done
rm -rf target/package

cargo package -p bwos-queue -p bwos-macros -p bwos "$@"
# The whole listing: cutting it with `head` would end `sort` with SIGPIPE
# once the list outgrows one pipe write, and pipefail makes that exit 141
# (a CI run failed so when bwos reached 165 files).
for crate in bwos-queue bwos-macros bwos; do
    echo "-- target/package/$crate-0.1.0.crate:"
    tar -tzf "target/package/$crate-0.1.0.crate" | sed 's|^[^/]*/|    |' | sort
done
