#!/usr/bin/env bash
# ThreadSanitizer, then AddressSanitizer (with LeakSanitizer), over the
# threaded tests of the queue and of the runtime: nightly, the standard
# library rebuilt with the sanitizer (-Zbuild-std, so std's own
# synchronization is instrumented too), debug builds.
#
#   scripts/sanitizers.sh            both halves
#   scripts/sanitizers.sh thread     ThreadSanitizer only
#   scripts/sanitizers.sh address    AddressSanitizer only
#
# Each half has its own target directory (a sanitizer's RUSTFLAGS would
# otherwise invalidate every other build): target/tsan and target/asan,
# or TSAN_TARGET_DIR and ASAN_TARGET_DIR.
#
# Needs the nightly toolchain with rust-src (CI adds both for Miri).
#
# The tests (the same in both halves, plus the queue's drop tests under
# AddressSanitizer):
#   bwos-queue: its unit tests and tests/stress.rs (an owner against three
#     thieves, every steal flavor, on tiny, small and default geometries);
#     under ASan also tests/drop.rs (every item dropped exactly once, heap
#     items freed).
#   bwos: its unit tests (fork, frame cache, jobs, raw tasks and their
#     state, join sets, blocking threads, work-list spill, timer wheel,
#     readiness) and the integration tests join, scope, tasks, fork,
#     worklist, net, time, panics, hyper, broadcast, fifo (FIFO spawns,
#     breadth first), policies (steal and idle policies), handlers (start
#     and exit handlers, spawn handlers, use_current_thread, detaching
#     pools), pool (install across pools, shutdown, dropping a pool on
#     its own worker), block_in_place (a worker handed to a replacement
#     thread and back), responsiveness (tasks shared with idle workers,
#     tasks served between fork/join jobs), coop (the budget), handle
#     (handles and enter guards, on plain threads and on workers), shutdown
#     (shutdown_timeout, shutdown_background), task_api (AbortHandle,
#     JoinSet's try_join_next, join_all, spawn_blocking) and paused_clock
#     (the paused clock's jumps: idle workers, blocking closures and
#     block_on deciding together).
#   Not run: doc tests (they would need RUSTDOCFLAGS and a rustdoc build of
#   every example for little threading), the loom models (no real
#   threads), net_api (the socket API's surface: names, errors, UDP, Unix
#   sockets), env and emfile (one process setting each), and idle (it
#   bounds the CPU time idle workers use within 100 ms of the last job, a
#   bound the sanitizers' slowdown would make flaky; parking and waking
#   run in every other test).
#
# Skipped tests:
#   fork::a_million_levels_deep, fork::a_million_levels_deep_in_a_region,
#   fork::a_deep_recursion_outside_pools: the only tests whose recursion
#   is deep enough for `fork` to continue on fresh stack segments
#   (stacker, `sched/stack.rs`). ThreadSanitizer is not told about those
#   stack switches and crashes (SEGV inside its runtime, then a hang or
#   "nested bug in the same thread"); a 200,000-level plain recursion
#   on one big stack runs fine under it, the same recursion through
#   `stacker::maybe_grow` crashes. Under AddressSanitizer they pass but
#   take 45 to 155 s each, more than the whole rest of the half.
#   policies::every_policy_combination_runs_the_stress_workloads_correctly:
#   96 pools, one per combination of steal, batch and idle policy and
#   thread count, each running the stress workloads: 94 s under TSan. The
#   rest of policies.rs (block steals on a tiny queue, pinned workers, the
#   counters) and every other test's default policies still run.
#   join::quicksort_matches_serial_sort_on_1_2_and_8_threads (TSan only):
#   nine sorts of 200,000 values, 40 to 50 s under TSan, a sixth of the
#   half; join's fib tests (1, 2 and 8 threads) and
#   fib_and_quicksort_without_lazy_queueing (a 50,000-value sort on 1, 2
#   and 4 threads) and fork's borrowing_children_sort_in_place still run.
#   pool::a_recursion_that_fits_the_main_thread_fits_a_worker (ASan only):
#   it sizes its recursion from the distance between two frames' locals,
#   and detect_stack_use_after_return puts locals on ASan's heap-allocated
#   fake stack: it measures 48 calls for 4 MiB and fails its own sanity
#   check. It passes under TSan.
#   time::sleeps_never_end_early_and_end_in_deadline_order (TSan only):
#   its six sleeps are 2 ms apart and it asserts the order they end in;
#   under ThreadSanitizer spawning the six tasks takes longer than that, a
#   deadline is already past when its task first polls, and the order is
#   the polling order. Timing, not a race: it passes under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
    set -- thread address
fi

# The host triple: -Zbuild-std needs an explicit --target, which also keeps
# RUSTFLAGS away from build scripts and proc macros.
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
case "$host" in
    x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu) ;;
    *)
        echo "sanitizers.sh: ThreadSanitizer and AddressSanitizer runs are set up for Linux on x86-64 and AArch64, not $host" >&2
        exit 1
        ;;
esac

# The watchdog's limit per test body (bwos-testkit; 120 s by default): the
# sanitizers make the runtime 3 to 15 times slower, more on a busy machine.
export BWOS_TEST_TIMEOUT_SECS=600
# Smaller sizes for the tests that read one from the environment (set per
# half below): BWOS_STRESS_ITEMS, the values per queue stress run
# (2,000,000 by default), and BWOS_PANIC_TREE_CASES, the random panic
# trees (10,000 by default).
# The panic tests panic hundreds of times on purpose; with backtraces on,
# each panic symbolizes its stack in an instrumented binary (join's tests
# took 93 s instead of 55 s, fork's panic tests 12 s each instead of
# well under one). A failing test still prints its message and location,
# and a sanitizer report prints its own stacks.
export RUST_BACKTRACE=0

common_tests=(
    --lib
    --test stress
    --test join --test scope --test tasks --test fork --test worklist
    --test net --test time --test panics --test hyper --test broadcast
    --test fifo --test policies --test handlers --test pool
    --test block_in_place --test responsiveness --test coop --test paused_clock
    --test handle --test shutdown --test task_api
)
common_skips=(
    --skip a_million_levels_deep
    --skip a_deep_recursion_outside_pools
    --skip every_policy_combination_runs_the_stress_workloads_correctly
)

run() {
    local rustflags=$1 target_dir=$2
    shift 2
    RUSTFLAGS="$rustflags" CARGO_TARGET_DIR="$target_dir" \
        cargo +nightly test -Zbuild-std --target "$host" \
        -p bwos-queue -p bwos --all-features "$@"
}

for half in "$@"; do
    case "$half" in
        thread)
            echo "== ThreadSanitizer: the queue's stress tests, the runtime's unit and threaded integration tests"
            # halt_on_error: the first report fails the run, with its stacks
            # at the end of the output. second_deadlock_stack: both stacks of
            # a lock-order inversion. No suppressions: these tests give no
            # report, the standalone fences TSan does not model (the
            # runtime's SeqCst fences, crossbeam's) included.
            # 200,000 values per stress run: some 50,000 to 80,000 steals
            # and up to 50,000 full-queue refusals per geometry, 10 s for
            # the six runs; 500 panic trees, 10 s.
            TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
                BWOS_STRESS_ITEMS=200000 BWOS_PANIC_TREE_CASES=500 \
                run "-Zsanitizer=thread" "${TSAN_TARGET_DIR:-target/tsan}" "${common_tests[@]}" -- \
                "${common_skips[@]}" \
                --skip quicksort_matches_serial_sort_on_1_2_and_8_threads \
                --skip sleeps_never_end_early_and_end_in_deadline_order
            ;;
        address)
            echo "== AddressSanitizer and LeakSanitizer: the same tests and the queue's drop tests"
            # detect_leaks: on (LeakSanitizer), with two narrow suppressions
            # of leaks made on purpose (scripts/lsan.supp says which and why); the workers' thread-locals and
            # the global pool's never-ending threads give no report (LSan
            # scans live threads' stacks and TLS). detect_stack_use_after_return
            # (the default of recent LLVMs on Linux, explicit so it stays on):
            # a job or latch on a caller's stack (join, scope, install) that
            # a thief touches after the caller returned is reported. 500,000
            # values per stress run, 1,000 panic trees. Frame pointers: ASan
            # records allocation stacks with its fast frame-pointer unwinder,
            # which otherwise skips frames (and LSan's suppressions match
            # those frames).
            ASAN_OPTIONS="detect_leaks=1 detect_stack_use_after_return=1" \
                LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp print_suppressions=0" \
                BWOS_STRESS_ITEMS=500000 BWOS_PANIC_TREE_CASES=1000 \
                run "-Zsanitizer=address -Cforce-frame-pointers=yes" "${ASAN_TARGET_DIR:-target/asan}" "${common_tests[@]}" --test drop -- \
                "${common_skips[@]}" \
                --skip a_recursion_that_fits_the_main_thread_fits_a_worker
            ;;
        *)
            echo "sanitizers.sh: unknown half $half (thread or address)" >&2
            exit 1
            ;;
    esac
done
