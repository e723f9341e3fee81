//! Closed loop, live: for every scenario, the simulator runs the incident over real HTTP, the
//! probe sees its symptom, and the analyzer — reading what the simulated service logged —
//! names the injected fault. Exactly the path of `triage demo SCENARIO`.
//!
//! These run in real time (each probe waits as a user would: up to its plan's timeout), so they
//! are kept to a few seconds each.

use triage_cli::sim::{ScenarioDemo, run_demo};
use triage_sim::model::scenario::DEFAULT_SEED;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn demo(name: &str) -> ScenarioDemo {
    let d = rt().block_on(run_demo(name, DEFAULT_SEED)).unwrap();
    let findings: Vec<String> = d
        .report
        .findings
        .iter()
        .map(|f| format!("{:.2} {} {}", f.confidence, f.class.as_str(), f.rule))
        .collect();
    assert!(d.found(), "{name}: the analyzer did not name {:?}: {findings:#?}", d.scenario.rules);
    d
}

fn failures(d: &ScenarioDemo, kind: &str) -> usize {
    d.probe.report.summary.failures.get(kind).copied().unwrap_or(0)
}

fn requests(d: &ScenarioDemo) -> usize {
    d.scenario.probe.requests as usize
}

#[test]
fn long_prompt_no_chunking() {
    let _cpu = crate::heavy();
    let d = demo("long-prompt-no-chunking");
    assert!(d.named());
    let ttft = d.probe.report.summary.ttft_ms.as_ref().unwrap();
    assert!(ttft.p50 > 800.0, "short prompts wait behind the burst: {ttft:?}");
}

#[test]
fn overload() {
    let _cpu = crate::heavy();
    let d = demo("overload");
    assert!(d.named());
    assert!(!d.probe.report.requests.is_empty(), "the probe sent requests");
    for r in &d.probe.report.requests {
        let queued = r.error.as_ref().is_some_and(|e| e.kind.as_str() == "timeout_before_first_token")
            || r.ttft_ms.is_some_and(|t| t > 3000.0);
        assert!(queued, "{r:?}");
    }
}

#[test]
fn cold_start() {
    let _cpu = crate::heavy();
    let d = demo("cold-start");
    assert!(d.named());
    let ttft = d.probe.report.summary.ttft_ms.as_ref().unwrap();
    assert!(ttft.min > 4000.0, "the probe waited for the replica to start: {ttft:?}");
}

#[test]
fn slow_gpu() {
    let _cpu = crate::heavy();
    let d = demo("slow-gpu");
    assert!(d.named());
    let itl = d.probe.report.summary.itl_ms.as_ref().unwrap();
    assert!(itl.p50 > 120.0, "every step waits for the throttled GPU: {itl:?}");
}

#[test]
fn kv_pressure() {
    let _cpu = crate::heavy();
    let d = demo("kv-pressure");
    let s = &d.probe.report.summary;
    assert!(s.stalls > 0 || s.ttft_ms.as_ref().is_some_and(|t| t.p50 > 1000.0), "{s:?}");
}

#[test]
fn oom_long_input() {
    let _cpu = crate::heavy();
    let d = demo("oom-long-input");
    assert!(d.named());
    assert_eq!(failures(&d, "stream_error_event"), requests(&d));
    let e = d.probe.report.requests[0].error.as_ref().unwrap();
    assert!(e.message.contains("CUDA out of memory"), "{}", e.message);
}

#[test]
fn kv_leak() {
    let _cpu = crate::heavy();
    let d = demo("kv-leak");
    assert!(d.named());
    assert_eq!(failures(&d, "timeout_before_first_token"), requests(&d));
}

#[test]
fn kv_deadlock() {
    let _cpu = crate::heavy();
    let d = demo("kv-deadlock");
    assert!(d.named());
    assert_eq!(failures(&d, "timeout_before_first_token"), requests(&d));
}

#[test]
fn upstream_cut() {
    let _cpu = crate::heavy();
    let d = demo("upstream-cut");
    assert!(d.named());
    assert!(requests(&d) > 0 && d.probe.report.requests.len() == requests(&d), "every request was sent");
    assert_eq!(failures(&d, "server_error"), requests(&d));
    assert!(d.probe.report.requests.iter().all(|r| r.status == Some(503)));
}

#[test]
fn client_timeout() {
    let _cpu = crate::heavy();
    let d = demo("client-timeout");
    assert!(d.named());
    assert_eq!(failures(&d, "timeout_mid_stream"), requests(&d));
}

#[test]
fn client_retries() {
    let _cpu = crate::heavy();
    let d = demo("client-retries");
    assert!(d.named());
    assert!(failures(&d, "rate_limited") > 0, "{:?}", d.probe.report.summary.failures);
}

#[test]
fn healthy_control() {
    let _cpu = crate::heavy();
    let d = demo("healthy");
    assert!(d.named() && d.report.findings.is_empty());
    let s = &d.probe.report.summary;
    assert_eq!(s.ok, requests(&d));
    assert!(s.ttft_ms.as_ref().unwrap().max < 1000.0, "{s:?}");
}
