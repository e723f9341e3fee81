//! The `triage` binary as users run it: contracts of its JSON output, exit codes, key hygiene.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use triage_core::endpoint::Api;
use triage_sim::{Fault, Script, ScriptedServer, ServerConfig};

use crate::util::{temp_dir, text, triage};

const KEY: &str = "sk-cli-secret-0123456789";

/// Run the binary while a scripted server serves on this test's runtime.
fn with_server(script: fn(usize) -> Script, args: impl FnOnce(&str) -> Command) -> Output {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: 50, lifetime: Duration::from_secs(30) },
        ))
        .unwrap();
    let mut cmd = args(&server.base_url());
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    drop(server);
    out
}

fn ok_script(_: usize) -> Script {
    Script { ttft: Duration::from_millis(30), tokens: 5, ..Script::default() }
}

#[test]
fn probe_json_follows_the_contract_and_never_prints_the_key() {
    let dir = temp_dir("probe");
    let jsonl = dir.join("requests.jsonl");
    let out = with_server(ok_script, |url| {
        let mut c = triage();
        c.args(["probe", url, "--model", "m", "-n", "3", "-c", "2", "--format", "json", "--out"]).arg(&jsonl);
        c.env("OPENAI_API_KEY", KEY);
        c
    });
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains(KEY));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "triage.probe/v1");
    assert!(v["url"].as_str().unwrap().ends_with("/v1/chat/completions"));
    let reqs = v["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 3);
    for r in reqs {
        for field in [
            "ok",
            "status",
            "error",
            "ttft_ms",
            "ttfo_ms",
            "gaps_ms",
            "tpot_ms",
            "e2e_ms",
            "output_tokens",
            "token_source",
            "finish_reason",
        ] {
            assert!(r.get(field).is_some(), "request lacks {field}: {r}");
        }
        assert_eq!(r["gaps_ms"].as_array().unwrap().len(), 4);
    }
    for fig in ["ttft_ms", "ttfo_ms", "itl_ms", "tpot_ms", "e2e_ms"] {
        for q in ["p50", "p90", "p99", "mean", "max"] {
            assert!(v["summary"][fig][q].is_number(), "summary.{fig}.{q}");
        }
    }
    assert_eq!((v["summary"]["ok"].as_u64(), v["summary"]["failed"].as_u64()), (Some(3), Some(0)));
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 3);
    assert!(!lines.contains(KEY));
}

fn unauthorized(_: usize) -> Script {
    Script {
        api: Api::Openai,
        fault: Fault::Status {
            code: 401,
            content_type: "application/json".into(),
            body: format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\"}}}}"),
            retry_after: None,
        },
        ..Script::default()
    }
}

#[test]
fn probe_exit_codes() {
    let out = with_server(unauthorized, |url| {
        let mut c = triage();
        c.args(["probe", url, "--model", "m"]).env("OPENAI_API_KEY", KEY);
        c
    });
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("unauthorized"));
    assert!(!text(&out).contains(KEY), "the key leaked: {}", text(&out));

    let out = triage().args(["probe", "ftp://example.invalid", "--model", "m"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = triage().args(["probe", "http://127.0.0.1:9/v1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--model is required");
    let out = triage()
        .args(["probe", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "5 parsecs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

const VLLM_LOG: &str = "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: 1500.0 tokens/s, Running: 64 reqs, Waiting: 20 reqs, GPU KV cache usage: 80.5%, Prefix cache hit rate: 2.0%\nINFO 11-29 10:00:15 [loggers.py:123] Engine 000: Avg prompt throughput: 950.0 tokens/s, Avg generation throughput: 1400.0 tokens/s, Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 81.1%, Prefix cache hit rate: 2.0%\n";

#[test]
fn analyze_json_text_markdown_and_stdin() {
    let dir = temp_dir("analyze");
    let log = dir.join("vllm.log");
    std::fs::write(&log, VLLM_LOG).unwrap();
    let out = triage().args(["analyze", "--format", "json"]).arg(&log).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "triage.report/v1");
    assert_eq!(v["verdict"], "TTFT_HIGH");
    let f = &v["findings"][0];
    assert_eq!(f["rule"], "queueing-exceeds-capacity");
    for field in ["class", "rule", "title", "confidence", "evidence", "remediation", "next_checks"] {
        assert!(f.get(field).is_some(), "finding lacks {field}");
    }
    assert_eq!(f["evidence"][0]["line"], 2);
    assert_eq!(v["inputs"][0]["kind"], "vllm_log");
    assert_eq!(v["inputs"][0]["lines"], serde_json::json!([1, 2]));

    let out = triage().arg("analyze").arg(&log).output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("verdict: TTFT_HIGH") && t.contains(":2  INFO 11-29 10:00:15"), "{t}");
    let out = triage().args(["analyze", "--format", "markdown"]).arg(&log).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# Triage: TTFT_HIGH"));

    let mut child = triage()
        .args(["analyze", "--format", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"hello there\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "INCONCLUSIVE");
    assert_eq!(v["inputs"][0]["name"], "stdin");
    assert_eq!(v["inputs"][0]["kind"], "unknown");
}

/// `--lang zh` writes the report's text in Chinese; everything a script reads stays the same.
#[test]
fn analyze_lang_zh_keeps_the_contract_and_changes_the_text() {
    let dir = temp_dir("analyze-lang");
    let log = dir.join("vllm.log");
    std::fs::write(&log, VLLM_LOG).unwrap();
    let json = |lang: &[&str]| -> serde_json::Value {
        let out = triage().args(["analyze", "--format", "json"]).args(lang).arg(&log).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (default, en, zh) = (json(&[]), json(&["--lang", "en"]), json(&["--lang", "zh"]));
    assert_eq!(default, en, "English is the default");
    let cjk =
        |s: &serde_json::Value| s.as_str().unwrap().chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    assert_eq!(zh["schema"], en["schema"]);
    assert_eq!(zh["verdict"], en["verdict"]);
    assert_eq!(zh["inputs"], en["inputs"]);
    let (e, z) = (&en["findings"][0], &zh["findings"][0]);
    for same in ["class", "rule", "confidence", "evidence"] {
        assert_eq!(z[same], e[same], "{same}");
    }
    assert!(cjk(&z["title"]) && cjk(&z["summary"]) && cjk(&z["remediation"][0]), "{z}");
    assert!(!cjk(&e["title"]) && !cjk(&e["summary"]), "{e}");
    // The summary carries the same numbers.
    assert!(z["summary"].as_str().unwrap().contains("37") && e["summary"].as_str().unwrap().contains("37"));

    let out = triage().args(["analyze", "--lang", "zh"]).arg(&log).output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.contains("结论：TTFT_HIGH") && t.contains("queueing-exceeds-capacity") && t.contains("证据："),
        "{t}"
    );
    let out = triage().args(["analyze", "--lang", "zh", "--format", "markdown"]).arg(&log).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# 排查结论: TTFT_HIGH"));
    let out = triage().args(["analyze", "--lang", "fr"]).arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn analyze_usage_errors_exit_2_and_inputs_are_only_read() {
    let out = triage().args(["analyze", "/definitely/not/here.log"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = triage().args(["analyze", "--format", "yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let dir = temp_dir("readonly");
    let log = dir.join("vllm.log");
    std::fs::write(&log, VLLM_LOG).unwrap();
    let before = std::fs::metadata(&log).unwrap().modified().unwrap();
    assert!(triage().arg("analyze").arg(&log).output().unwrap().status.success());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), VLLM_LOG);
    assert_eq!(std::fs::metadata(&log).unwrap().modified().unwrap(), before);
}

/// `--slo-ttft-ms` moves the line a benchmark's TTFT tail is judged against; a bad value is a
/// usage error.
#[test]
fn analyze_slo_ttft_ms_sets_the_target() {
    let dir = temp_dir("analyze-slo");
    let bench = dir.join("bench.txt");
    std::fs::write(
        &bench,
        "============ Serving Benchmark Result ============\nSuccessful requests:                     1000\nRequest throughput (req/s):              8.30\n---------------Time to First Token----------------\nMean TTFT (ms):                          700.00\nMedian TTFT (ms):                        650.00\nP99 TTFT (ms):                           1410.00\n==================================================\n",
    )
    .unwrap();
    let verdict = |extra: &[&str]| -> serde_json::Value {
        let out = triage().args(["analyze", "--format", "json"]).args(extra).arg(&bench).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["verdict"].clone()
    };
    assert_eq!(verdict(&[]), "HEALTHY");
    assert_eq!(verdict(&["--slo-ttft-ms", "1000"]), "TTFT_HIGH");
    let out = triage().args(["analyze", "--slo-ttft-ms", "-5"]).arg(&bench).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_runs_end_to_end() {
    let out = triage().arg("demo").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("11 ok, 1 failed"), "{t}");
    assert!(t.contains("rate_limited"));
    assert!(t.contains("probe vs server record: 528 token events matched"), "{t}");
}
