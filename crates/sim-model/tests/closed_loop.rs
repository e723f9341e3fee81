//! Closed loop, offline: every scenario's files, fed to the analyzer, name the injected fault.
//!
//! One test per scenario, with the default seed (what `triage sim` and `triage demo` run), plus
//! a sweep over other seeds: the fault must be named whatever the random draws.

use triage_core::analyze::report::Report;
use triage_core::analyze::rules::{RuleId, listed};
use triage_sim_model::{Sim, scenario};

fn analyse(name: &str, seed: u64) -> (scenario::Scenario, Report) {
    let s = scenario::find(name).unwrap_or_else(|| panic!("no scenario {name}"));
    let mut sim = Sim::new(s.config(seed));
    sim.run(s.duration_ns());
    let files = sim.artifacts();
    let inputs: Vec<(&str, &str)> =
        files.iter().filter(|f| f.analyzable).map(|f| (f.name.as_str(), f.content.as_str())).collect();
    (s, triage_core::analyze::analyze(&inputs))
}

fn summary(r: &Report) -> String {
    r.findings.iter().map(|f| format!("{:.2} {} {}\n", f.confidence, f.class.as_str(), f.rule)).collect()
}

/// The injected fault is the top finding, and of the scenario's class.
fn names_it(name: &str) {
    let (s, r) = analyse(name, scenario::DEFAULT_SEED);
    let top = r.findings.first().unwrap_or_else(|| panic!("{name}: no finding"));
    assert!(listed(s.rules, &top.rule), "{name}: top finding {}\n{}", top.rule, summary(&r));
    assert_eq!(Some(top.class), s.class, "{name}");
    assert_eq!(r.verdict.as_str(), s.class_str());
    assert!(!top.evidence.is_empty(), "{name}: a finding without evidence");
    for input in r.inputs.iter().filter(|i| i.kind.as_str() != "unknown") {
        assert!(input.issues.is_empty(), "{name}: {} has issues: {:?}", input.name, input.issues);
    }
    assert!(r.inputs.iter().all(|i| i.kind.as_str() != "unknown"), "{name}: {:?}", r.inputs);
}

#[test]
fn long_prompt_no_chunking() {
    names_it("long-prompt-no-chunking");
    let (_, r) = analyse("long-prompt-no-chunking", scenario::DEFAULT_SEED);
    assert!(r.findings.iter().any(|f| f.rule == "chunked-prefill-off"), "{}", summary(&r));
}

#[test]
fn overload() {
    names_it("overload");
}

#[test]
fn cold_start() {
    names_it("cold-start");
}

#[test]
fn slow_gpu() {
    names_it("slow-gpu");
    let (_, r) = analyse("slow-gpu", scenario::DEFAULT_SEED);
    assert!(r.findings[0].summary.contains("GPU 2"), "{}", r.findings[0].summary);
}

#[test]
fn kv_pressure() {
    names_it("kv-pressure");
}

#[test]
fn oom_long_input() {
    names_it("oom-long-input");
    let (_, r) = analyse("oom-long-input", scenario::DEFAULT_SEED);
    assert!(r.findings[0].summary.contains("256.00 GiB"), "{}", r.findings[0].summary);
}

#[test]
fn kv_leak() {
    names_it("kv-leak");
}

/// A stall at a full cache: the stall is the incident (a full cache without preemptions is only
/// a hint for `kv-pressure-preemption`), so it is named first.
#[test]
fn kv_deadlock() {
    names_it("kv-deadlock");
    let (_, r) = analyse("kv-deadlock", scenario::DEFAULT_SEED);
    let stall = r.findings.iter().find(|f| f.rule == "scheduler-stall").expect("scheduler-stall");
    assert!(stall.summary.contains("0 tokens/s"), "{}", stall.summary);
}

#[test]
fn upstream_cut() {
    names_it("upstream-cut");
}

#[test]
fn client_timeout() {
    names_it("client-timeout");
}

#[test]
fn client_retries() {
    names_it("client-retries");
}

#[test]
fn healthy_control_has_no_finding() {
    let (_, r) = analyse("healthy", scenario::DEFAULT_SEED);
    assert_eq!(r.verdict.as_str(), "HEALTHY", "{}", summary(&r));
}

#[test]
fn every_fault_is_named_whatever_the_seed() {
    for s in scenario::faults() {
        for seed in 1..=4 {
            let (_, r) = analyse(s.name, seed);
            assert!(
                r.findings.iter().any(|f| listed(s.rules, &f.rule) && Some(f.class) == s.class),
                "{} seed {seed}:\n{}",
                s.name,
                summary(&r)
            );
        }
    }
}

#[test]
fn the_list_is_complete_and_unique() {
    let all = scenario::all();
    let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    let classes: Vec<&str> = scenario::faults().iter().map(|s| s.class_str()).collect();
    for c in ["TTFT_HIGH", "TBT_TAIL", "OOM", "THROUGHPUT_ZERO", "CONFIG"] {
        assert!(classes.contains(&c), "no scenario of class {c}");
    }
    let rule_ids: Vec<RuleId> = triage_core::analyze::rules::docs().map(|d| d.id).collect();
    for s in &all {
        for r in s.rules {
            assert!(rule_ids.contains(r), "{}: unknown rule {r}", s.name);
        }
        assert!(s.incident_at_s <= s.duration_s, "{}", s.name);
    }
}
