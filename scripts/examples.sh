#!/usr/bin/env bash
# The examples, built and run as a user would.
#
# First the README's recipes: each `Cargo.toml` block of the README is
# marked `<!-- examples/NAME/Cargo.toml [SECTION] -->`, and the section of
# that project must hold exactly those lines (the README's `../bwos/crates/`
# is the project's `../../crates/`); every project under examples/ must have
# its block. Then every project under examples/ is built on its own (its
# own dependency resolution and features, as a copy in a user's directory
# would be) and run: the servers against real clients, echo-server (bash's
# /dev/tcp), http-server (curl over HTTP/1.1 and HTTP/2 prior knowledge,
# then fan-out against it), axum-server (curl); bwos-app, queue-app and
# rayon-app (a rayon program patched onto the drop-in) check their own
# results. Then the examples of crates/bwos built with all features:
# metrics_server (curl: Prometheus' text format), join, scope, worklist and
# fork. Each server listens on port 0 and prints `listening on ADDR`; the
# script reads ADDR from that line.
#
# `--debug` builds without optimizations (the quick test tier reuses
# `cargo test`'s build that way); the default is `--release`.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
case "${1:-}" in
    "") ;;
    --debug) profile=debug ;;
    *)
        echo "usage: $0 [--debug]" >&2
        exit 2
        ;;
esac
cargo_profile=()
[[ $profile == release ]] && cargo_profile=(--release)

# Prints the lines of the README's block for project $1, section $2, in
# the project's terms.
readme_block() {
    awk -v marker="<!-- examples/$1/Cargo.toml [$2] -->" '
        $0 == marker { state = 1; next }
        state == 1 && /^```toml/ { state = 2; next }
        state == 2 && /^```/ { exit }
        state == 2 && !/^\[/ { print }
    ' README.md | sed 's#"\.\./bwos/crates/#"../../crates/#'
}

# Prints the lines of section $2 of examples/$1/Cargo.toml.
project_section() {
    awk -v header="[$2]" '
        $0 == header { inside = 1; next }
        inside && (/^\[/ || /^$/) { exit }
        inside { print }
    ' "examples/$1/Cargo.toml"
}

echo "== the README's Cargo.toml blocks are the example projects' lines"
for manifest in examples/*/Cargo.toml; do
    project=$(basename "$(dirname "$manifest")")
    marker=$(grep -o "<!-- examples/$project/Cargo.toml \[[a-z.-]*\] -->" README.md | head -1 || true)
    if [[ -z $marker ]]; then
        echo "FAIL examples/$project has no README block: add one marked <!-- examples/$project/Cargo.toml [dependencies] -->" >&2
        exit 1
    fi
    section=$(sed 's/.*\[\(.*\)\].*/\1/' <<<"$marker")
    if ! diff <(readme_block "$project" "$section") <(project_section "$project" "$section") >/dev/null; then
        echo "FAIL README's [$section] block for examples/$project differs from its Cargo.toml (< README, > project):" >&2
        diff <(readme_block "$project" "$section") <(project_section "$project" "$section") >&2 || true
        exit 1
    fi
    if [[ -z $(readme_block "$project" "$section") ]]; then
        echo "FAIL README's [$section] block for examples/$project is empty" >&2
        exit 1
    fi
    echo "ok   README [$section] = examples/$project/Cargo.toml"
done

echo "== the example projects, each built on its own"
for manifest in examples/*/Cargo.toml; do
    CARGO_TARGET_DIR=target/examples cargo build --quiet "${cargo_profile[@]}" --manifest-path "$manifest"
done
projects=target/examples/$profile

echo "== the examples of crates/bwos, with all features"
cargo build --quiet "${cargo_profile[@]}" -p bwos --examples --all-features
bin=target/$profile/examples
log=$(mktemp -d)
# `start` runs in a command substitution (a subshell), so the servers'
# process ids go to a file, not to a variable of this shell.
trap 'xargs -r kill 2>/dev/null <"$log/pids" || true; rm -rf "$log"' EXIT
: >"$log/pids"

# Starts the server binary $1 on port 0 and prints the address it listens
# on.
start() {
    local name
    name=$(basename "$1")
    "$1" 127.0.0.1:0 >"$log/$name.out" 2>"$log/$name.err" &
    echo $! >>"$log/pids"
    for _ in $(seq 1 100); do
        if grep -q '^listening on ' "$log/$name.out"; then
            sed -n 's/^listening on //p' "$log/$name.out" | head -1
            return
        fi
        sleep 0.1
    done
    echo "$name did not print 'listening on ADDR'" >&2
    cat "$log/$name.err" >&2
    exit 1
}

expect() {
    local what=$1 got=$2 want=$3
    if [[ "$got" != "$want" ]]; then
        echo "FAIL $what: got '$got', want '$want'" >&2
        exit 1
    fi
    echo "ok   $what"
}

echo_addr=$(start "$projects/echo_server")
exec 3<>"/dev/tcp/${echo_addr%:*}/${echo_addr##*:}"
printf 'ping\n' >&3
read -r reply <&3
exec 3>&-
expect "echo_server echoes a line" "$reply" "ping"

http_addr=$(start "$projects/http_server")
expect "http_server over HTTP/1.1" "$(curl -sS --http1.1 "http://$http_addr/")" "Hello, world!"
expect "http_server over HTTP/2 (h2c)" \
    "$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_version}' "http://$http_addr/")" "2"
expect "http_server POST /echo" "$(curl -sS -d 'body text' "http://$http_addr/echo")" "body text"
expect "http_server 404" "$(curl -sS -o /dev/null -w '%{http_code}' "http://$http_addr/nope")" "404"
"$projects/fan_out" "$http_addr" 200
echo "ok   fan-out: 200 requests through JoinSet and timeout"

axum_addr=$(start "$projects/axum_server")
expect "axum_server /" "$(curl -sS "http://$axum_addr/")" "Hello, world!"
expect "axum_server /users/7" "$(curl -sS "http://$axum_addr/users/7")" "user 7"

metrics_addr=$(start "$bin/metrics_server")
expect "metrics_server content type" \
    "$(curl -sS -o /dev/null -w '%{content_type}' "http://$metrics_addr/metrics")" \
    "text/plain; version=0.0.4; charset=utf-8"
metrics=$(curl -sS "http://$metrics_addr/metrics")
# Lines of the text exposition format that a pool of any size serves.
for line in \
    '^# TYPE bwos_worker_polls_total counter$' \
    '^bwos_worker_polls_total\{worker="0"\} [0-9]+$' \
    '^bwos_worker_busy_seconds_total\{worker="0"\} [0-9.]+$' \
    '^bwos_worker_task_queue_depth\{worker="0"\} [0-9]+$' \
    '^# TYPE bwos_alive_tasks gauge$' \
    '^bwos_alive_tasks [0-9]+$' \
    '^bwos_injection_queue_depth\{queue="tasks"\} [0-9]+$' \
    '^bwos_blocking_threads\{state="idle"\} [0-9]+$' \
    '^bwos_pending_timers [0-9]+$' \
    '^bwos_io_driver_ready_total [0-9]+$'; do
    if ! grep -Eq "$line" <<<"$metrics"; then
        echo "FAIL metrics_server /metrics has no line matching $line" >&2
        printf '%s\n' "$metrics" >&2
        exit 1
    fi
done
echo "ok   metrics_server /metrics (Prometheus text format)"
expect "metrics_server 404" "$(curl -sS -o /dev/null -w '%{http_code}' "http://$metrics_addr/nope")" "404"

# The fork/join, scope, work-list and async fork examples check their own
# results (assert) and exit non-zero on a wrong one.
for example in join scope worklist fork; do
    timeout 120 "$bin/$example" >"$log/$example.out"
    echo "ok   $example: $(head -1 "$log/$example.out")"
done

# The projects that check their own results.
for program in bwos-app queue-app rayon-app; do
    timeout 120 "$projects/$program" >"$log/$program.out"
    echo "ok   $program: $(head -1 "$log/$program.out")"
done
