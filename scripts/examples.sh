#!/usr/bin/env bash
# Builds every example of crates/bwos with all features and runs the
# servers against real clients: echo_server (bash's /dev/tcp), http_server
# (curl over HTTP/1.1 and HTTP/2 prior knowledge, then fan_out against it),
# axum_server (curl), metrics_server (curl: Prometheus' text format).
# Each server listens on port 0 and prints `listening on ADDR`; the
# script reads ADDR from that line. Then the
# join, scope, worklist and fork examples, and examples/rayon-app (a rayon
# program patched onto the drop-in).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p bwos --examples --all-features
bin=target/release/examples
log=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$log"' EXIT

# Starts example $1 on port 0 and prints the address it listens on.
start() {
    local name=$1
    "$bin/$name" 127.0.0.1:0 >"$log/$name.out" 2>"$log/$name.err" &
    pids+=($!)
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

echo_addr=$(start echo_server)
exec 3<>"/dev/tcp/${echo_addr%:*}/${echo_addr##*:}"
printf 'ping\n' >&3
read -r reply <&3
exec 3>&-
expect "echo_server echoes a line" "$reply" "ping"

http_addr=$(start http_server)
expect "http_server over HTTP/1.1" "$(curl -sS --http1.1 "http://$http_addr/")" "Hello, world!"
expect "http_server over HTTP/2 (h2c)" \
    "$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_version}' "http://$http_addr/")" "2"
expect "http_server POST /echo" "$(curl -sS -d 'body text' "http://$http_addr/echo")" "body text"
expect "http_server 404" "$(curl -sS -o /dev/null -w '%{http_code}' "http://$http_addr/nope")" "404"
"$bin/fan_out" "$http_addr" 200
echo "ok   fan_out: 200 requests through JoinSet and timeout"

axum_addr=$(start axum_server)
expect "axum_server /" "$(curl -sS "http://$axum_addr/")" "Hello, world!"
expect "axum_server /users/7" "$(curl -sS "http://$axum_addr/users/7")" "user 7"

metrics_addr=$(start metrics_server)
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

echo "== examples/rayon-app: a rayon program on the drop-in through [patch]"
CARGO_TARGET_DIR=target/rayon-app cargo run --quiet --release --manifest-path examples/rayon-app/Cargo.toml
