//! A real Prometheus (Debian's `prometheus` package) scrapes the runner on 127.0.0.1 while it
//! replays the eight-GPU fixture, and its query API returns the gauges and the straggler.
//!
//! Prometheus is started by `triage_tests::prometheus`, the launcher the CLI's tests use too:
//! it needs Debian's `prometheus` package (`.ci/run` installs it). Set `TRIAGE_SKIP_PROMETHEUS=1`
//! to skip on a machine without it; without either, the test fails and says how to get it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use triage_tests::process::{Killed, TempDir, temp_dir};
use triage_tests::prometheus::{self, Prometheus};

#[test]
fn prometheus_scrapes_the_runner_and_queries_the_gauges_and_findings() {
    let Some(tools) = prometheus::tools() else { return };
    let plugins = temp_dir("runner-prom");
    std::fs::copy(&triage_plugin_build::ensure_components()[0], plugins.join("gpu-rules.wasm")).unwrap();
    let series: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nvml/h200x8_one_slow.jsonl");

    // The runner: replay at 4× (the matmul phase, with GPU 5 slow, starts ~2.5 s in), then keep
    // serving until 40 s have passed. It stops by itself; dropped, it is killed.
    let mut runner = Command::new(env!("CARGO_BIN_EXE_triage-runner"))
        .args(["run", "--replay"])
        .arg(&series)
        .args(["--speed", "4", "--duration-s", "40", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&plugins)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = runner.stderr.take().unwrap();
    let runner = Killed(runner);
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("the runner says where it serves").unwrap();
        if let Some(rest) = line.strip_prefix("triage-runner: metrics on http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});

    let started = Instant::now();
    let prom = Prometheus::scraping(&tools, TempDir::new("runner-prom-data"), "triage-runner", &addr);

    let deadline = Instant::now() + Duration::from_secs(40);
    let (mut clocks, mut slow) = (Vec::new(), Vec::new());
    while Instant::now() < deadline && (clocks.len() < 8 || slow.is_empty()) {
        std::thread::sleep(Duration::from_millis(500));
        clocks = prom.poll("DCGM_FI_DEV_SM_CLOCK");
        slow = prom.poll("max_over_time(triage_finding_active{rule=\"slow-gpu\"}[5m])");
    }
    eprintln!("prometheus answered after {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(clocks.len(), 8, "8 GPUs' SM clocks: {clocks:?}");
    assert!(
        clocks
            .iter()
            .all(|r| r["metric"]["job"] == "triage-runner" && r["metric"]["modelName"] == "NVIDIA H200")
    );
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert_eq!(slow[0]["metric"]["gpu"], "5");
    assert_eq!(slow[0]["metric"]["class"], "TBT_TAIL");
    assert_eq!(slow[0]["value"][1], "1");
    let up = prom.poll("up{job=\"triage-runner\"}");
    assert_eq!(up[0]["value"][1], "1");
    drop(runner);
    let _ = std::fs::remove_dir_all(&plugins);
}
