//! GPU recordings through `triage analyze`: every recording in the repository
//! (`tests/data/nvml/*.jsonl`) and in the shared captures (`../shared/data/h200/*.jsonl`, when
//! present) gives the (rule, GPU) pairs `triage-runner replay` gives — the same GPU rules over
//! the whole recording — and the 8-GPU fixture names its straggler. nvidia-smi series (`--query-gpu
//! … -l`, `dmon`) are read as recordings too: the real H200 captures are HEALTHY with the power cap
//! as context, and the 8-GPU fixture written as a `--query-gpu` loop names GPU 5 with its span.

use std::path::{Path, PathBuf};

use serde_json::Value;
use triage_core::gpu::{Series, WatchConfig, replay};

use crate::util::{repo, triage};

fn recordings() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in [repo().join("tests/data/nvml"), repo().join("../shared/data/h200")] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

fn analyze(path: &Path) -> Value {
    let out = triage().args(["analyze", "--format", "json"]).arg(path).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {}", path.display(), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn every_recording_gives_the_runners_rule_and_gpu_pairs() {
    let all = recordings();
    assert!(all.len() >= 2, "{all:?}");
    for path in all {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut want: Vec<(String, Option<String>)> =
            replay(&Series::parse(&text), None, WatchConfig::default())
                .into_iter()
                .map(|f| (f.rule, f.gpu.map(|g| g.to_string())))
                .collect();
        let report = analyze(&path);
        let mut got: Vec<(String, Option<String>)> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (f["rule"].as_str().unwrap().to_owned(), f["subject"]["gpu"].as_str().map(str::to_owned))
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{}", path.display());
        assert_eq!(report["inputs"][0]["kind"], "gpu_series", "{}", path.display());
    }
}

#[test]
fn the_eight_gpu_fixture_is_tbt_tail_naming_gpu_5() {
    let r = analyze(&repo().join("tests/data/nvml/h200x8_one_slow.jsonl"));
    assert_eq!(r["verdict"], "TBT_TAIL", "{r:#}");
    let top = &r["findings"][0];
    assert_eq!(
        (&top["rule"], &top["subject"]["gpu"]),
        (&Value::from("slow-gpu"), &Value::from("5")),
        "{top:#}"
    );
}

/// The real H200 series as `--query-gpu -l` and dmon captured them: at its power limit under
/// load, the runner's `gpu-power-cap` for GPU 0 (context), HEALTHY, and its clock over time.
#[test]
fn the_real_nvidia_smi_series_are_recordings_at_the_power_limit() {
    for (file, span) in [
        ("smi_query_series_load.csv", "nvidia-smi --query-gpu series"),
        ("smi_dmon_load.txt", "nvidia-smi dmon series"),
    ] {
        let r = analyze(&repo().join("tests/data/smi").join(file));
        assert_eq!(r["verdict"], "HEALTHY", "{file}: {r:#}");
        let findings = r["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{file}: {r:#}");
        assert_eq!(
            (&findings[0]["rule"], &findings[0]["subject"]["gpu"]),
            (&Value::from("gpu-power-cap"), &Value::from("0"))
        );
        assert!(findings[0]["summary"].as_str().unwrap().contains(span), "{file}: {r:#}");
        assert!(r["series"]["gpu.sm_clock_mhz.0"].as_array().is_some_and(|p| p.len() >= 3), "{file}: {r:#}");
    }
}

#[test]
fn a_query_gpu_loop_names_the_straggler_with_its_span() {
    let r = analyze(&repo().join("tests/data/smi/query_loop_8gpu_one_slow.csv"));
    assert_eq!(r["verdict"], "TBT_TAIL", "{r:#}");
    let top = &r["findings"][0];
    assert_eq!(
        (&top["rule"], &top["subject"]["gpu"]),
        (&Value::from("slow-gpu"), &Value::from("5")),
        "{top:#}"
    );
    assert!(top["summary"].as_str().unwrap().contains("Over the series: raised 12.9 s"), "{top:#}");
    let slow = r["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == "slow-gpu").count();
    assert_eq!(slow, 1, "{r:#}");
}
