#!/usr/bin/env bash
# The whole test suite: the docs' paths; unit, property, drop, stress and
# doc tests; the loom models of the queue protocol and of the runtime's
# protocol cores; the queue's tests under Miri; ThreadSanitizer and
# AddressSanitizer over the threaded tests; rayon's own test suite run on
# the rayon-core drop-in.
#
# `--quick`: the tier for a contributor who changed a few files: formatting,
# clippy, `cargo test --workspace --all-features` and the examples (built
# without optimizations, reusing the test build). Under 10 minutes cold on
# 2 cores; no nightly, no loom, Miri, sanitizers or rayon's suites.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
    "") quick=false ;;
    --quick) quick=true ;;
    *)
        echo "usage: $0 [--quick]" >&2
        exit 2
        ;;
esac

echo "== docs: every path they name exists, docs/layout.md names every file, the lists that claim to be whole are (seconds)"
cargo test -p bwos-testkit --test docs

if $quick; then
    echo "== quick tier: formatting"
    cargo fmt --all --check
    echo "== quick tier: clippy (workspace, all features)"
    cargo clippy --workspace --all-targets --all-features -- -D warnings
    echo "== quick tier: cargo test: unit, property, drop, stress and doc tests"
    cargo test --workspace --all-features
    echo "== quick tier: the examples, unoptimized"
    ./scripts/examples.sh --debug
    echo "== quick tier passed (the whole suite: ./scripts/test-all.sh)"
    exit 0
fi

echo "== cargo test: unit, property, drop, stress and doc tests"
cargo test --workspace --all-features

echo "== without tokio-compat: a tokio call in a bwos task panics with tokio's own message (built empty with all features)"
cargo test -p bwos --test tokio_without_compat

echo "== the examples of crates/bwos, built with all features, servers run against real clients"
./scripts/examples.sh

echo "== the rayon-core drop-in: its own tests, then rayon's and rayon-core's test suites on it"
cargo test --manifest-path crates/rayon-core/Cargo.toml
./scripts/rayon-suite.sh

echo "== loom models of the BWoS protocol (bounded preemptions, a few minutes)"
# A separate target directory keeps the --cfg bwos_loom build from invalidating
# the normal one.
RUSTFLAGS="--cfg bwos_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p bwos-queue --release --test loom_models -- --test-threads 1

echo "== loom models of peers' real queue bugs, replayed on BWoS: stdexec #1967 and #2130, tokio #5041, crossbeam-deque GHSA-pqqp-xmhj-wgcw (about 1.5 minutes)"
RUSTFLAGS="--cfg bwos_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p bwos-queue --release --test loom_regressions -- --test-threads 1

echo "== loom models of the runtime: one per protocol, in crates/bwos/src/loom_models/ (about a minute)"
RUSTFLAGS="--cfg bwos_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p bwos --release --lib -- --test-threads 1

echo "== a user's crate that runs its own loom models (RUSTFLAGS=\"--cfg loom\", loom's switch) keeps bwos's whole API"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/downstream-loom \
    cargo test --manifest-path tests/downstream-loom/Cargo.toml

echo "== Miri: the queue's non-loom tests, the frame cache and the heap jobs in it (spawns in a scope), the async task allocation's, fork's frames and cancellation, the work list's item storage"
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup component add --toolchain nightly miri rust-src
fi
cargo +nightly miri test -p bwos-queue
cargo +nightly miri test -p bwos --lib -- sched::frame_cache sched::job scope::tests
cargo +nightly miri test -p bwos --lib task::
cargo +nightly miri test -p bwos --lib fork::
cargo +nightly miri test -p bwos --lib worklist::

echo "== ThreadSanitizer, then AddressSanitizer with LeakSanitizer: the queue's stress tests, the runtime's unit and threaded integration tests (scripts/sanitizers.sh names what it runs and skips; about 8 minutes cold)"
./scripts/sanitizers.sh
