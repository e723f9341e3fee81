//! The deployment files in `deploy/runner/` agree with the runner: alert rules pass
//! `promtool check rules` and their unit tests, every metric the dashboard and the alerts read
//! is one the runner exports, and every flag the systemd unit and the DaemonSet pass exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use triage_core::analyze::report::Class;
use triage_core::gpu::{GpuFinding, GpuSample, XidEvent};
use triage_runner::export::{Counters, render};

fn deploy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/runner").join(name)
}

/// Metric names (`DCGM_FI_…`, `triage_…`) used in a text.
fn metric_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if (rest.starts_with("DCGM_FI_") || rest.starts_with("triage_"))
            && (i == 0
                || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b'-'))
        {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let name = &rest[..end];
            if !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
            i += end;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The exposition with every field present.
fn full_exposition() -> String {
    let s = GpuSample {
        t: 1.0,
        gpu: 0,
        uuid: Some("GPU-x".into()),
        sm_clock_mhz: Some(1),
        graphics_clock_mhz: Some(1),
        mem_clock_mhz: Some(1),
        max_sm_clock_mhz: Some(1),
        power_mw: Some(1),
        power_limit_mw: Some(1),
        util_gpu_pct: Some(1),
        util_mem_pct: Some(1),
        mem_used_bytes: Some(1),
        mem_total_bytes: Some(2),
        temp_c: Some(1),
        pstate: Some(0),
        clock_event_reasons: Some(4),
        violation_power_ns: Some(1),
        violation_thermal_ns: Some(1),
        ecc_uncorrected: Some(0),
        pcie_tx_kbps: None,
        pcie_rx_kbps: None,
        xid: vec![XidEvent { t: 1.0, code: 79 }],
    };
    let f = GpuFinding {
        t: 1.0,
        gpu: Some(0),
        class: Class::TbtTail,
        rule: "slow-gpu".into(),
        title: "x".into(),
        confidence: 0.5,
        evidence: vec![],
        remediation: String::new(),
    };
    let mut c = Counters { engine_up: Some(true), ..Counters::default() };
    c.raised.insert("slow-gpu".into(), 1);
    c.plugin_calls.insert("gpu-rules".into(), 1);
    c.plugin_failures.insert(("gpu-rules".into(), "trap".into()), 1);
    let status = triage_runner::host::PluginStatus {
        name: "gpu-rules".into(),
        world: triage_runner::host::World::GpuRules,
        disabled: false,
        failures_total: 1,
        last_call: std::time::Duration::from_micros(5),
    };
    render(None, &[s], &[("gpu-rules".into(), f)], &[status], &c)
}

#[test]
fn dashboard_and_alerts_read_only_metrics_the_runner_exports() {
    let exposition = full_exposition();
    let exported: Vec<String> = exposition
        .lines()
        .filter_map(|l| {
            l.strip_prefix("# TYPE ").and_then(|r| r.split_whitespace().next()).map(str::to_owned)
        })
        .collect();
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(deploy("grafana-dashboard.json")).unwrap()).unwrap();
    assert_eq!(dashboard["uid"], "llm-triage-runner");
    let mut exprs = String::new();
    for p in dashboard["panels"].as_array().unwrap() {
        assert!(p["title"].as_str().is_some_and(|t| !t.is_empty()));
        for t in p["targets"].as_array().unwrap() {
            exprs.push_str(t["expr"].as_str().unwrap());
            exprs.push('\n');
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        exprs.push_str(v["query"].as_str().unwrap_or(""));
    }
    // The site's Prometheus link: the dashboard's time range, the Prometheus as the browser
    // reaches it, both from dashboard variables.
    let link = "${site_url}#/triage?prometheus=${prometheus_url:percentencode}&from=${__from}&to=${__to}";
    assert_eq!(dashboard["links"][0]["url"], link);
    assert_eq!(dashboard["panels"][0]["links"][0]["url"], link);
    let vars: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(vars.contains(&"site_url") && vars.contains(&"prometheus_url"), "{vars:?}");
    let alerts = std::fs::read_to_string(deploy("alerts.yml")).unwrap();
    let mut used = metric_names(&exprs);
    used.extend(metric_names(&alerts));
    assert!(used.len() >= 10, "{used:?}");
    for name in used {
        assert!(
            exported.contains(&name),
            "{name} is read by the dashboard or the alerts but not exported ({exported:?})"
        );
    }
    // Every rule id in the alerts is one the GPU rules can raise.
    for rule in triage_core::gpu::GpuRule::ALL.map(triage_core::gpu::GpuRule::as_str) {
        if rule != triage_core::gpu::GpuRule::GpuPowerCap.as_str() {
            assert!(alerts.contains(&format!("rule=\"{rule}\"")), "no alert for {rule}");
        }
    }
}

#[test]
fn alert_rules_pass_promtool_check_and_their_unit_tests() {
    let Some((_, promtool)) = triage_tests::prometheus::tools() else { return };
    let check = Command::new(&promtool).args(["check", "rules"]).arg(deploy("alerts.yml")).output().unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("SUCCESS: 9 rules found"));
    let test = Command::new(&promtool)
        .current_dir(deploy(""))
        .args(["test", "rules", "alerts_test.yml"])
        .output()
        .unwrap();
    assert!(
        test.status.success(),
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
}

#[test]
fn the_unit_and_the_daemonset_pass_flags_the_runner_has() {
    let help = Command::new(env!("CARGO_BIN_EXE_triage-runner")).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for file in ["triage-runner.service", "daemonset.yaml"] {
        let text = std::fs::read_to_string(deploy(file)).unwrap();
        let code: String =
            text.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
        let flags: Vec<&str> = code
            .split(|c: char| c.is_whitespace() || c == '=')
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .collect();
        assert!(flags.len() >= 4, "{file}: {flags:?}");
        for f in flags {
            assert!(
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
                "{file} passes {f}, which `triage-runner run` does not have"
            );
        }
        assert!(text.contains("9477"), "{file}: the metrics port");
    }
    let ds = std::fs::read_to_string(deploy("daemonset.yaml")).unwrap();
    for needle in
        ["kind: DaemonSet", "apiVersion: apps/v1", "hostNetwork: true", "NVIDIA_VISIBLE_DEVICES", "- run"]
    {
        assert!(ds.contains(needle), "daemonset.yaml lacks {needle}");
    }
    let unit = std::fs::read_to_string(deploy("triage-runner.service")).unwrap();
    assert!(unit.contains("RestartPreventExitStatus=3"), "exit 3 (no driver) must not restart in a loop");
}
