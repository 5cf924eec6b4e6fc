#!/usr/bin/env bash
# Packs the library crates as crates.io would receive them and builds the
# packed sources (cargo package verifies by compiling the .crate files):
# bwos-queue and bwos together, since bwos depends on a bwos-queue that is
# not published yet. The rayon-core drop-in is not packed: its name is
# rayon-core's, so users take it by path or git (README).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo package -p bwos-queue -p bwos "$@"
for crate in bwos-queue bwos; do
    echo "-- target/package/$crate-0.1.0.crate:"
    tar -tzf "target/package/$crate-0.1.0.crate" | sed 's|^[^/]*/|    |' | sort | head -100
done
