//! Diagnosis from Prometheus alone, against a real Prometheus: every simulator
//! scenario is written as a fleet's OpenMetrics time series (`triage sim --openmetrics`: three
//! replicas, one faulty, and their GPUs), backfilled with promtool into one TSDB — each incident
//! in its own two-hour window, hours before now — and served by `prometheus`; then
//! `triage analyze --prometheus URL --from T --to T` must name each fault whose evidence is in
//! metrics, on the right replica (and GPU), and call the healthy fleet HEALTHY with evidence.
//!
//! The scenarios whose fault cannot show in metrics are listed in [`NOT_IN_METRICS`] with the
//! reason; a test keeps the two lists equal to the catalogue. The harness is
//! `triage_tests::prometheus` (`tests/prometheus.rs`).

mod intervals;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prom::Prometheus;
use serde_json::Value;
use triage_sim::model::scenario;
use triage_tests::prometheus as prom;

use crate::util::triage;

/// Scenarios whose fault shows in the engines' and GPUs' metrics: each must be named from
/// Prometheus alone, on the faulty replica.
const NAMED: &[&str] = &[
    "long-prompt-no-chunking",
    "overload",
    "cold-start",
    "slow-gpu",
    "kv-pressure",
    "kv-leak",
    "kv-deadlock",
    "upstream-cut",
    "healthy",
];

/// Scenarios whose fault cannot show in metrics, and why.
const NOT_IN_METRICS: &[(&str, &str)] = &[
    (
        "oom-long-input",
        "one request's CUDA OOM is a traceback in the log; the engine keeps serving, vLLM counts no OOM, and the GPU's memory is vLLM's reservation either way",
    ),
    (
        "client-timeout",
        "the 10 s timeout is the client's setting: the engine sees aborted requests (finished_reason=\"abort\"), which do not say who gave up or why",
    ),
    (
        "client-retries",
        "the 429s come from the serving layer's rate limit before the engine, and the retries are the client's: the engine only sees the attempts it admitted",
    ),
];

/// How long one `triage analyze --prometheus` may take.
const ANALYZE_WITHIN: Duration = Duration::from_secs(120);
/// Two hours: one TSDB block range, one incident.
const WINDOW_S: u64 = 7200;

/// Where the incidents start: whole two-hour windows, the last ending two hours before now.
fn base_unix_s(count: u64) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    (now - (count + 1) * WINDOW_S) / WINDOW_S * WINDOW_S
}

/// `triage sim --scenario NAME --seed SEED --openmetrics FILE --start START --format json`: the
/// answer key.
fn write_fleet(dir: &Path, name: &str, seed: u64, start: u64) -> (PathBuf, Value) {
    write_fleet_for(dir, name, seed, start, None)
}

/// [`write_fleet`], simulating `duration` (`--duration`) instead of the scenario's own.
fn write_fleet_for(
    dir: &Path,
    name: &str,
    seed: u64,
    start: u64,
    duration: Option<&str>,
) -> (PathBuf, Value) {
    let file = dir.join(format!("{name}-{start}.om"));
    let mut sim = triage();
    sim.args(["sim", "--scenario", name, "--replicas", "3", "--format", "json", "--seed"])
        .arg(seed.to_string())
        .arg("--start")
        .arg(start.to_string())
        .arg("--openmetrics")
        .arg(&file);
    if let Some(d) = duration {
        sim.args(["--duration", d]);
    }
    let out = sim.output().unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fleet"]["start_unix_s"], start, "{v}");
    (file, v["fleet"].clone())
}

/// `triage analyze --prometheus URL --from A --to B --format json`, within [`ANALYZE_WITHIN`].
fn analyze(url: &str, from: u64, to: u64) -> Result<Value, String> {
    let child = triage()
        .args(["analyze", "--prometheus", url, "--format", "json", "--from"])
        .arg(from.to_string())
        .arg("--to")
        .arg(to.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, ANALYZE_WITHIN);
    if !out.status.success() {
        return Err(format!("exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn wait_output(mut child: std::process::Child, within: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + within;
    // Read as it comes, so a large answer cannot block the child on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut b);
        b
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("triage analyze --prometheus took longer than {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

/// Whether `finding` names the replica (its pod or instance) and, when given, the GPU (its UUID,
/// or its node and index).
fn names(finding: &Value, replica: &Value, gpu: &Value) -> bool {
    let text = finding.to_string();
    let has = |v: &Value| v.as_str().is_some_and(|s| text.contains(s));
    let replica_named = has(&replica["pod"]) || has(&replica["instance"]);
    let gpu_named = gpu.is_null()
        || has(&gpu["UUID"])
        || has(&replica["Hostname"]) && {
            let n = &gpu["gpu"];
            [format!("GPU {n}"), format!("gpu=\\\"{n}\\\""), format!("gpu {n}")]
                .iter()
                .any(|p| text.contains(p))
        };
    replica_named && gpu_named
}

/// What the report must say about the incident, or why it does not.
fn judge(fleet: &Value, report: &Value) -> Result<(), String> {
    let class = fleet["class"].as_str().unwrap();
    let verdict = report["verdict"].as_str().unwrap_or_default();
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    if class == "HEALTHY" {
        if verdict != "HEALTHY" {
            return Err(format!("verdict {verdict}, findings {:?}", rules_of(&findings)));
        }
        let figures = report["figures"].as_object().map_or(0, serde_json::Map::len);
        if figures == 0 {
            return Err("HEALTHY without evidence: no figures".into());
        }
        return Ok(());
    }
    if verdict != class {
        return Err(format!("verdict {verdict}, want {class}; findings {:?}", rules_of(&findings)));
    }
    let rules: Vec<&str> = fleet["rules"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let Some(top) = findings.first() else { return Err("no finding".into()) };
    let top_rule = top["rule"].as_str().unwrap_or_default();
    if !rules.contains(&top_rule) {
        return Err(format!(
            "top finding {top_rule}, want one of {rules:?}; findings {:?}",
            rules_of(&findings)
        ));
    }
    let faulty = &fleet["replicas"][fleet["faulty"].as_u64().unwrap() as usize];
    if !names(top, faulty, &fleet["faulty_gpu"]) {
        return Err(format!(
            "{top_rule} does not name the faulty replica {} ({}) / GPU {}: {top}",
            faulty["pod"], faulty["instance"], fleet["faulty_gpu"]
        ));
    }
    Ok(())
}

fn rules_of(findings: &[Value]) -> Vec<String> {
    findings.iter().map(|f| f["rule"].as_str().unwrap_or_default().to_owned()).collect()
}

#[test]
fn every_scenario_is_either_named_or_listed_with_a_reason() {
    let mut listed: Vec<&str> = NAMED.iter().copied().chain(NOT_IN_METRICS.iter().map(|(n, _)| *n)).collect();
    listed.sort_unstable();
    let mut all: Vec<&str> = scenario::all().iter().map(|s| s.name).collect();
    all.sort_unstable();
    assert_eq!(listed, all);
}

#[test]
fn prometheus_serves_the_backfilled_fleet() {
    let Some(tools) = prom::tools() else { return };
    let dir = prom::TempDir::new("fleet");
    let start = base_unix_s(2);
    let (slow_file, slow) = write_fleet(dir.path(), "slow-gpu", scenario::DEFAULT_SEED, start);
    let (leak_file, leak) = write_fleet(dir.path(), "kv-leak", scenario::DEFAULT_SEED, start + WINDOW_S);
    let p = Prometheus::start(&tools, dir, &[slow_file, leak_file]);

    // slow-gpu: twelve GPUs on three nodes, the throttled one at ~840 MHz among 1980s.
    let t = slow["to_unix_s"].as_u64().unwrap();
    let clocks = p.query("DCGM_FI_DEV_SM_CLOCK", t);
    assert_eq!(clocks.len(), 12, "{clocks:?}");
    let uuid = slow["faulty_gpu"]["UUID"].as_str().unwrap();
    for c in &clocks {
        let mhz: f64 = c["value"][1].as_str().unwrap().parse().unwrap();
        assert_eq!(c["metric"]["UUID"] == uuid, mhz < 900.0, "{c}");
        assert_eq!(c["metric"]["job"], "dcgm-exporter");
    }
    // kv-leak: the faulty replica's cache is full and its GPU idle; its peers are serving.
    let t = leak["to_unix_s"].as_u64().unwrap();
    let faulty = &leak["replicas"][leak["faulty"].as_u64().unwrap() as usize];
    let usage = p.query("vllm:kv_cache_usage_perc", t);
    assert_eq!(usage.len(), 3, "{usage:?}");
    for u in &usage {
        let v: f64 = u["value"][1].as_str().unwrap().parse().unwrap();
        let is_faulty = u["metric"]["pod"] == faulty["pod"];
        assert_eq!(is_faulty, v > 0.95, "{u}");
        assert_eq!(u["metric"]["instance"] == faulty["instance"], is_faulty);
    }
    let util = p.query(&format!("avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod={}}}[2m])", faulty["pod"]), t);
    assert_eq!(util.len(), 1, "{util:?}");
    assert_eq!(util[0]["value"][1], "0", "{util:?}");
    // The counters are counters: a rate over the window.
    let rate = p.query("sum(rate(vllm:generation_tokens_total[5m]))", t);
    assert!(rate[0]["value"][1].as_str().unwrap().parse::<f64>().unwrap() > 10.0, "{rate:?}");
}

#[test]
fn every_fault_that_shows_in_metrics_is_named_from_prometheus_alone() {
    let Some(tools) = prom::tools() else { return };
    let help = triage().args(["analyze", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--prometheus"),
        "this test needs `triage analyze --prometheus` (issue #19, the CLI half)"
    );
    let names: Vec<&str> = scenario::all().iter().map(|s| s.name).collect();
    let dir = prom::TempDir::new("all");
    let base = base_unix_s(names.len() as u64);
    let mut files = Vec::new();
    let mut fleets = Vec::new();
    for (k, name) in names.iter().enumerate() {
        // A seed per scenario, so the faulty replica is not always in the same place.
        let seed = scenario::DEFAULT_SEED + k as u64;
        let (file, fleet) = write_fleet(dir.path(), name, seed, base + k as u64 * WINDOW_S);
        files.push(file);
        fleets.push((*name, fleet));
    }
    let places: std::collections::BTreeSet<u64> =
        fleets.iter().filter_map(|(_, f)| f["faulty"].as_u64()).collect();
    assert!(places.len() > 1, "the faulty replica moves between scenarios: {places:?}");
    let p = Prometheus::start(&tools, dir, &files);
    let mut failures = Vec::new();
    for (name, fleet) in &fleets {
        let (from, to) = (fleet["from_unix_s"].as_u64().unwrap(), fleet["to_unix_s"].as_u64().unwrap());
        let report = analyze(&p.url(), from, to);
        match (NAMED.contains(name), report) {
            (_, Err(e)) => failures.push(format!("{name}: {e}")),
            (true, Ok(r)) => {
                if let Err(e) = judge(fleet, &r) {
                    failures.push(format!("{name}: {e}"));
                }
            }
            (false, Ok(r)) => assert_eq!(r["schema"], "triage.report/v1", "{name}"),
        }
    }
    assert!(failures.is_empty(), "not named from Prometheus alone:\n{}", failures.join("\n"));
}
