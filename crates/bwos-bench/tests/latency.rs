//! A smoke run of `bwos-bench latency` with tiny settings: every workload
//! runs on every set-up and lands in the JSON file with its metrics.
//! Numbers are not checked (no timing asserts): only that they are there.

#![cfg(not(bwos_loom))]

use std::process::Command;
use std::time::Duration;

use wait_timeout::ChildExt as _;

/// Every workload with its set-ups and the metrics each sample must hold.
const EXPECTED: [(&str, &[&str], &[&str]); 5] = [
    ("blocked-parent", &["bwos", "tokio"], &["ran_during_block"]),
    (
        "bursts",
        &["bwos", "tokio"],
        &[
            "short_delay_p50_ms",
            "short_delay_p99_ms",
            "makespan_p50_ms",
        ],
    ),
    (
        "timers",
        &["bwos", "tokio"],
        &["ticks_during_block", "longest_tick_gap_ms"],
    ),
    (
        "hot-socket",
        &["bwos", "tokio"],
        &["counter_steps", "echo_mb_per_s", "echo_pending"],
    ),
    (
        "mixed-server",
        &["bwos", "tokio", "tokio+rayon"],
        &[
            "light_p50_ms",
            "light_p99_ms",
            "light_per_s",
            "heavy_per_s",
            "heavy_p50_ms",
            "heavy_share_pct",
            "cpu_ms_per_request",
            "errors",
        ],
    ),
];

#[test]
fn a_quick_latency_run_covers_every_workload_and_runtime() {
    bwos_testkit::watchdog(
        "a_quick_latency_run_covers_every_workload_and_runtime",
        || {
            let dir =
                std::env::temp_dir().join(format!("bwos-bench-latency-{}", std::process::id()));
            let json = dir.join("latency.json");
            let mut child = Command::new(env!("CARGO_BIN_EXE_bwos-bench"))
                .args([
                    "latency",
                    "--quick",
                    "--rounds",
                    "10",
                    "--window-ms",
                    "20",
                    "--seconds",
                    "1",
                    "--light-rate",
                    "200",
                    "--heavy-ms",
                    "2",
                    "--json",
                ])
                .arg(&json)
                .arg("--plot")
                .arg(&dir)
                .spawn()
                .expect("bwos-bench starts");
            // Kill a hung run before the watchdog ends this process, so that
            // no orphan keeps running.
            let limit = bwos_testkit::timeout().saturating_sub(Duration::from_secs(10));
            let Some(status) = child.wait_timeout(limit).expect("waiting for bwos-bench") else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("bwos-bench latency --quick did not finish in {limit:?}");
            };
            assert!(status.success(), "bwos-bench latency failed: {status}");
            let text = std::fs::read_to_string(&json).expect("the JSON file");
            let plots: Vec<_> = std::fs::read_dir(&dir)
                .expect("the plot directory")
                .filter_map(|entry| entry.ok())
                .filter(|entry| entry.path().extension().is_some_and(|e| e == "svg"))
                .collect();
            std::fs::remove_dir_all(&dir).expect("removing the output");
            let report: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
            assert!(report["header"]["command_line"].is_string(), "{report}");
            let samples = report["samples"].as_array().expect("a samples array");
            for (workload, runtimes, metrics) in EXPECTED {
                for runtime in runtimes {
                    let sample = samples
                        .iter()
                        .find(|s| s["workload"] == workload && s["runtime"] == *runtime)
                        .unwrap_or_else(|| panic!("no {workload} sample of {runtime}"));
                    for metric in metrics {
                        assert!(
                            sample["metrics"].get(metric).is_some(),
                            "{workload} on {runtime} lacks {metric}: {sample}"
                        );
                    }
                }
            }
            assert!(!plots.is_empty(), "no plots written");
        },
    );
}
