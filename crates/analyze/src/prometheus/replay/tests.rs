//! Replay tests: hand-built range answers of a small fleet, through the unchanged rules.

use super::*;
use crate::prometheus::answer::parse_matrix;
use crate::rules::RuleId;

const T0: f64 = 1_764_460_800.0;
const STEP: f64 = 15.0;
const STEPS: usize = 9;

fn series(name: &str, labels: &[(&str, &str)], values: impl Fn(usize) -> f64) -> serde_json::Value {
    let mut metric = serde_json::Map::new();
    metric.insert("__name__".into(), name.into());
    for (k, v) in labels {
        metric.insert((*k).into(), (*v).into());
    }
    let values: Vec<serde_json::Value> =
        (0..STEPS).map(|k| serde_json::json!([T0 + k as f64 * STEP, format!("{}", values(k))])).collect();
    serde_json::json!({ "metric": metric, "values": values })
}

fn matrix(result: Vec<serde_json::Value>) -> Matrix {
    let body = serde_json::json!({"status": "success", "data": {"resultType": "matrix", "result": result}});
    parse_matrix(200, body.to_string().as_bytes(), &Secrets::new(), 10_000, 1_000_000).unwrap()
}

/// A vLLM replica: running, waiting, KV usage, generated tokens per step, TTFT buckets.
fn replica(instance: &str, waiting: f64, ttft_slow: bool, gen_per_step: f64) -> Vec<serde_json::Value> {
    let l = [("instance", instance), ("model_name", "qwen"), ("pod", "vllm-0"), ("job", "vllm")];
    let mut v = vec![
        series("vllm:num_requests_running", &l, |_| 32.0),
        series("vllm:num_requests_waiting", &l, |k| if k > 2 { waiting } else { 0.0 }),
        series("vllm:kv_cache_usage_perc", &l, |_| 0.4),
        // A counter reset in the middle (the new process had counted one step when scraped): the
        // increase is still gen_per_step a step.
        series("vllm:generation_tokens_total", &l, |k| {
            if k < 4 { 1e6 + k as f64 * gen_per_step } else { (k - 3) as f64 * gen_per_step }
        }),
    ];
    for (le, fast, slow) in
        [("0.1", 50.0, 1.0), ("1", 100.0, 2.0), ("10", 100.0, 100.0), ("+Inf", 100.0, 100.0)]
    {
        let per = if ttft_slow { slow } else { fast };
        let mut lb = l.to_vec();
        lb.push(("le", le));
        v.push(series("vllm:time_to_first_token_seconds_bucket", &lb, move |k| per * k as f64));
    }
    v
}

fn gpu(host: &str, index: &str, clock: f64, reasons: f64, temp: f64) -> Vec<serde_json::Value> {
    let uuid = format!("GPU-{host}-{index}");
    let l = [
        ("gpu", index),
        ("UUID", uuid.as_str()),
        ("Hostname", host),
        ("modelName", "NVIDIA H200"),
        ("instance", "dcgm:9400"),
    ];
    vec![
        series("DCGM_FI_DEV_SM_CLOCK", &l, |_| clock),
        series("DCGM_FI_DEV_GPU_UTIL", &l, |_| 100.0),
        series("DCGM_FI_DEV_GPU_TEMP", &l, |_| temp),
        series("DCGM_FI_DEV_POWER_USAGE", &l, |_| 600.0),
        series("DCGM_FI_DEV_FB_USED", &l, |_| 120_000.0),
        series("DCGM_FI_DEV_FB_FREE", &l, |_| 23_000.0),
        series("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", &l, |_| reasons),
    ]
}

fn asked() -> Asked {
    Asked {
        url: "http://prom:9090".into(),
        selector: String::new(),
        window: Window { start_s: T0, end_s: T0 + STEP * (STEPS - 1) as f64, step_s: STEP },
        queries: vec![],
        cut: vec![],
        // The hand-built answers are the series' samples, every 15 s.
        samples_from_s: T0,
        interval_s: Some(STEP),
    }
}

fn run(m: &Matrix, lang: Lang) -> Report {
    let secrets = Secrets::new();
    analyze(m, asked(), &Config { lang, slo: Slo::default(), secrets: &secrets }, None).unwrap()
}

#[test]
fn the_queued_replica_is_named_and_ranked_first() {
    let mut r = replica("10.0.0.1:8000", 0.0, false, 500.0);
    r.extend(replica("10.0.0.2:8000", 40.0, true, 300.0));
    let report = run(&matrix(r), Lang::En);
    assert_eq!(report.verdict, Verdict::TtftHigh, "{:#?}", report.findings);
    let top = &report.findings[0];
    assert_eq!(top.rule, RuleId::QueueingExceedsCapacity);
    let about = top.subject.as_ref().unwrap();
    assert_eq!(about.instance.as_deref(), Some("10.0.0.2:8000"));
    assert_eq!((about.pod.as_deref(), about.model_name.as_deref()), (Some("vllm-0"), Some("qwen")));
    let p = report.prometheus.as_ref().unwrap();
    assert_eq!(p.fleet.ranked_by, "ttft_p99");
    assert_eq!(p.fleet.replicas[0].subject.instance.as_deref(), Some("10.0.0.2:8000"));
    assert_eq!(p.fleet.replicas[0].waiting_max, Some(40.0));
    assert!(
        p.fleet.replicas[0].ttft_p99.as_deref().unwrap().contains("between 1 and 10"),
        "{:?}",
        p.fleet.replicas[0]
    );
    // The reset counter still gives 300 tokens a step (20/s).
    assert_eq!(p.fleet.replicas[0].generation_tokens_per_s, Some(20.0));
    // The evidence line is cited: series, time, value, a link.
    let e = &top.evidence[0];
    let c = p.citations.iter().find(|c| *c.input == *e.input && c.line == e.line).unwrap();
    assert_eq!(c.labels["__name__"], "vllm:num_requests_waiting");
    assert_eq!(c.value, 40.0);
    assert_eq!(c.at, query::iso(T0 + STEP * 8.0));
    assert!(
        c.graph_url.starts_with("http://prom:9090/graph?g0.expr=vllm%3Anum_requests_waiting%7B"),
        "{}",
        c.graph_url
    );
    // Each replica twice: the whole window and its recent tail.
    assert_eq!(p.groups.len(), 4);
    // The tail holds four scrapes (15 s apart) or more.
    assert_eq!(p.groups.iter().filter(|g| g.input.ends_with("(last 30 s)")).count(), 2);
    let scraping = p.scraping.as_ref().unwrap();
    assert_eq!((scraping.interval_s, scraping.tail_s, scraping.stale_series), (15.0, Some(30.0), 0));
    assert!(report.figures.keys().any(|k| k.starts_with("prometheus replica 10.0.0.2:8000 · ")));
}

#[test]
fn the_straggler_gpu_is_named_among_its_peers() {
    let mut r = replica("10.0.0.1:8000", 0.0, false, 500.0);
    for i in 0..4 {
        let slow = i == 2;
        r.extend(gpu(
            "node-a",
            &i.to_string(),
            if slow { 840.0 } else { 1980.0 },
            if slow { 8.0 } else { 0.0 },
            if slow { 87.0 } else { 60.0 },
        ));
    }
    for i in 0..2 {
        r.extend(gpu("node-b", &i.to_string(), 1980.0, 0.0, 55.0));
    }
    let report = run(&matrix(r), Lang::En);
    assert_eq!(report.verdict, Verdict::TbtTail, "{:#?}", report.findings);
    let top = &report.findings[0];
    assert_eq!(top.rule, RuleId::SlowGpu);
    let about = top.subject.as_ref().unwrap();
    assert_eq!(
        (about.hostname.as_deref(), about.gpu.as_deref(), about.uuid.as_deref()),
        (Some("node-a"), Some("2"), Some("GPU-node-a-2"))
    );
    let p = report.prometheus.as_ref().unwrap();
    assert_eq!(p.fleet.gpus[0].subject.gpu.as_deref(), Some("2"));
    assert!(p.fleet.gpus[0].ratio.unwrap() < 0.5);
    let c = p
        .citations
        .iter()
        .find(|c| *c.input == *top.evidence[0].input && c.line == top.evidence[0].line)
        .unwrap();
    assert_eq!((c.labels["__name__"].as_str(), c.value), ("DCGM_FI_DEV_SM_CLOCK", 840.0));
    assert_eq!(p.fleet.gpus[0].peers.as_deref(), Some("node"));
    // node-b's GPUs have node peers; a lone GPU is compared with the fleet's.
    let mut lone = replica("10.0.0.1:8000", 0.0, false, 500.0);
    lone.extend(gpu("node-c", "0", 1000.0, 0.0, 60.0));
    lone.extend(gpu("node-d", "0", 1980.0, 0.0, 60.0));
    lone.extend(gpu("node-e", "0", 1980.0, 0.0, 60.0));
    let r = run(&matrix(lone), Lang::En);
    assert_eq!(r.verdict, Verdict::Healthy, "no rule compares GPUs of different nodes: {:#?}", r.findings);
    let g = &r.prometheus.as_ref().unwrap().fleet.gpus[0];
    assert_eq!(
        (g.subject.hostname.as_deref(), g.peers.as_deref(), g.ratio),
        (Some("node-c"), Some("fleet"), Some(0.505))
    );
    // Chinese: the same verdict, subjects and citations.
    let zh = run(&matrix(replica("10.0.0.1:8000", 0.0, false, 500.0)), Lang::Zh);
    assert_eq!(zh.verdict, Verdict::Healthy);
}

#[test]
fn a_healthy_fleet_is_healthy_with_evidence() {
    let mut r = replica("10.0.0.1:8000", 0.0, false, 500.0);
    r.extend(replica("10.0.0.2:8000", 0.0, false, 450.0));
    for i in 0..4 {
        r.extend(gpu("node-a", &i.to_string(), 1980.0, 0.0, 60.0));
    }
    let report = run(&matrix(r), Lang::En);
    assert_eq!(report.verdict, Verdict::Healthy, "{:#?}", report.findings);
    let p = report.prometheus.as_ref().unwrap();
    assert!(p.groups.iter().all(|g| g.verdict == Verdict::Healthy));
    assert!(report.inputs.iter().any(|i| i.kind == InputKind::PromMetrics));
    assert!(report.inputs.iter().any(|i| i.kind == InputKind::NvidiaSmi));
    assert!(
        report.figures.keys().any(|k| k.ends_with("metrics.generation_tokens")),
        "{:?}",
        report.figures.keys()
    );
}

#[test]
fn a_stalled_replica_and_a_leaking_one_are_named() {
    let l = [("instance", "stuck:8000")];
    let stalled = vec![
        series("vllm:num_requests_running", &l, |_| 12.0),
        series("vllm:generation_tokens_total", &l, |_| 5000.0),
        series("vllm:num_requests_waiting", &l, |_| 0.0),
    ];
    let report = run(&matrix(stalled), Lang::En);
    assert_eq!(report.verdict, Verdict::ThroughputZero);
    assert_eq!(report.findings[0].rule, RuleId::SchedulerStall);
    assert_eq!(report.findings[0].subject.as_ref().unwrap().instance.as_deref(), Some("stuck:8000"));
    // A stall that began in the window's last steps: the whole window still shows tokens, its
    // tail (its last three samples) does not.
    let l = [("instance", "late:8000")];
    let late = vec![
        series("vllm:num_requests_running", &l, |_| 12.0),
        series("vllm:generation_tokens_total", &l, |k| 500.0 * k.min(3) as f64),
    ];
    let report = run(&matrix(late), Lang::En);
    assert_eq!(report.verdict, Verdict::ThroughputZero, "{:#?}", report.findings);
    assert_eq!(report.findings[0].rule, RuleId::SchedulerStall);
    assert!(
        report.findings[0].evidence[0].input.ends_with("(last 30 s)"),
        "{:?}",
        report.findings[0].evidence
    );
    assert_eq!(report.findings.iter().filter(|f| f.rule == RuleId::SchedulerStall).count(), 1);
    let l = [("instance", "leak:8000")];
    let leak = vec![
        series("vllm:num_requests_running", &l, |_| 0.0),
        series("vllm:kv_cache_usage_perc", &l, |_| 0.97),
        series("vllm:generation_tokens_total", &l, |_| 5000.0),
    ];
    let report = run(&matrix(leak), Lang::En);
    assert_eq!(report.findings[0].rule, RuleId::KvLeak, "{:#?}", report.findings);
}

/// Traffic stopped reaching one replica mid-window (its counters flat from the fifth step,
/// nothing running, the cache empty, `up` 1) while a peer that never served sits idle: the whole
/// window's run sees the rise, the recent tail's start between its first and last scrape sees the
/// stop — `upstream-cut` names the first, its evidence cited at the tail's start; the idle peer
/// (never served) is quiet.
#[test]
fn a_replica_that_traffic_stopped_reaching_is_named() {
    let cut = [("instance", "cut:8000")];
    let idle = [("instance", "idle:8000")];
    let mut r = vec![
        series("vllm:request_success_total", &cut, |k| 100.0 + 40.0 * k.min(4) as f64),
        series("vllm:generation_tokens_total", &cut, |k| 1e4 + 5e3 * k.min(4) as f64),
        series("vllm:num_requests_running", &cut, |k| if k > 4 { 0.0 } else { 8.0 }),
        series("vllm:num_requests_waiting", &cut, |_| 0.0),
        series("vllm:kv_cache_usage_perc", &cut, |k| if k > 4 { 0.0 } else { 0.3 }),
        series("up", &cut, |_| 1.0),
    ];
    r.extend([
        series("vllm:request_success_total", &idle, |_| 7.0),
        series("vllm:num_requests_running", &idle, |_| 0.0),
        series("vllm:num_requests_waiting", &idle, |_| 0.0),
        series("vllm:kv_cache_usage_perc", &idle, |_| 0.0),
        series("up", &idle, |_| 1.0),
    ]);
    let report = run(&matrix(r), Lang::En);
    assert_eq!(report.verdict, Verdict::ThroughputZero, "{:#?}", report.findings);
    let top = &report.findings[0];
    assert_eq!(top.rule, RuleId::UpstreamCut, "{:#?}", report.findings);
    assert_eq!(top.subject.as_ref().unwrap().instance.as_deref(), Some("cut:8000"));
    assert_eq!(report.findings.iter().filter(|f| f.rule == RuleId::UpstreamCut).count(), 1);
    let p = report.prometheus.as_ref().unwrap();
    let cited: Vec<(&str, f64, String)> = top
        .evidence
        .iter()
        .map(|e| {
            let c = p.citations.iter().find(|c| *c.input == *e.input && c.line == e.line).unwrap();
            (c.labels["__name__"].as_str(), c.value, c.at.clone())
        })
        .collect();
    // The window's start, the tail's start (30 s before the end) and the end.
    assert_eq!(
        cited,
        vec![
            ("vllm:request_success_total", 100.0, query::iso(T0)),
            ("vllm:request_success_total", 260.0, query::iso(T0 + STEP * 6.0)),
            ("vllm:request_success_total", 260.0, query::iso(T0 + STEP * 8.0)),
            ("vllm:num_requests_running", 0.0, query::iso(T0 + STEP * 8.0)),
        ]
    );
}

/// A target that stopped answering (its series end at the fifth scrape, `up` 0 after) is not a
/// counter that stopped: no `scheduler-stall` on it, the series counted stale; the same one-sample
/// series is written once, never as two equal scrapes (which would read as a counter that stopped).
#[test]
fn a_target_that_went_away_is_stale_not_stalled() {
    let gone = [("instance", "gone:8000")];
    let mut r = vec![
        series("vllm:num_requests_running", &gone, |_| 12.0),
        series("vllm:generation_tokens_total", &gone, |k| 1e4 + 500.0 * k as f64),
        series("up", &gone, |k| if k > 4 { 0.0 } else { 1.0 }),
    ];
    // Its samples stop after the fifth scrape.
    for s in r.iter_mut().take(2) {
        s["values"].as_array_mut().unwrap().truncate(5);
    }
    r.extend(replica("10.0.0.1:8000", 0.0, false, 500.0));
    let report = run(&matrix(r), Lang::En);
    assert!(!report.findings.iter().any(|f| f.rule == RuleId::SchedulerStall), "{:#?}", report.findings);
    let p = report.prometheus.as_ref().unwrap();
    assert_eq!(p.scraping.as_ref().unwrap().stale_series, 2, "{:?}", p.scraping);
    // A single sample in the window: one scrape of it, not two equal ones.
    let one = vec![
        series("vllm:num_requests_running", &[("instance", "one:8000")], |_| 12.0),
        series("vllm:generation_tokens_total", &[("instance", "one:8000")], |_| 5000.0),
    ];
    let mut one = one;
    for s in &mut one {
        let last = s["values"].as_array().unwrap().last().unwrap().clone();
        s["values"] = serde_json::json!([last]);
    }
    let report = run(&matrix(one), Lang::En);
    assert!(!report.findings.iter().any(|f| f.rule == RuleId::SchedulerStall), "{:#?}", report.findings);
}

#[test]
fn nothing_in_the_window_is_an_error_and_labels_are_redacted() {
    let secrets = Secrets::new();
    let e = analyze(
        &Matrix::default(),
        asked(),
        &Config { lang: Lang::En, slo: Slo::default(), secrets: &secrets },
        None,
    )
    .unwrap_err();
    assert!(matches!(e, PromError::Empty(_)), "{e:?}");
    let secrets = Secrets::new().with("s3cr3t-bearer-token");
    let l = [("instance", "s3cr3t-bearer-token"), ("note", "line\nbreak")];
    let m = matrix(vec![
        series("vllm:num_requests_waiting", &l, |_| 50.0),
        series("vllm:num_requests_running", &l, |_| 1.0),
    ]);
    let r = analyze(&m, asked(), &Config { lang: Lang::En, slo: Slo::default(), secrets: &secrets }, None)
        .unwrap();
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("s3cr3t"), "{json}");
    assert_eq!(r.findings[0].rule, RuleId::QueueingExceedsCapacity);
}

#[test]
fn gateways_are_ranked_and_never_healthy_on_their_own() {
    let l = |route: &'static str, le: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("instance", "envoy-0:15090"), ("route", route), ("le", le)]
    };
    let mut r = Vec::new();
    // µs buckets: 99 of every 100 first tokens within 250 ms, one past 5 s.
    for (le, per) in [("100000", 50.0), ("250000", 99.0), ("5000000", 99.0), ("+Inf", 100.0)] {
        r.push(series(
            "envoy_wasmcustom_llm_stream_time_to_first_token_us_bucket",
            &l("chat", le),
            move |k| per * k as f64,
        ));
    }
    let gl = [("instance", "envoy-0:15090"), ("route", "chat")];
    r.push(series("llm_stream_requests_total", &gl, |k| 100.0 * k as f64));
    r.push(series("llm_stream_errors_total", &[("instance", "envoy-0:15090"), ("reason", "reset")], |k| {
        3.0 * k as f64
    }));
    let report = run(&matrix(r.clone()), Lang::En);
    assert_eq!(report.verdict, Verdict::Inconclusive, "{:#?}", report.findings);
    let p = report.prometheus.as_ref().unwrap();
    assert_eq!(p.groups[0].role, "gateway");
    let g = &p.fleet.gateways[0];
    assert_eq!(g.subject.instance.as_deref(), Some("envoy-0:15090"));
    assert_eq!(g.ttft_p99.as_deref(), Some("0.25 (between 0.1 and 0.25)"), "{g:?}");
    assert_eq!((g.requests_per_s, g.errors_per_s), (Some(6.667), Some(0.2)));
    // Next to a healthy replica the fleet is healthy: the gateway neither helps nor hurts.
    r.extend(replica("10.0.0.1:8000", 0.0, false, 500.0));
    assert_eq!(run(&matrix(r), Lang::En).verdict, Verdict::Healthy);
}

/// Any step and window: the recent tail has at least two steps and at most two minutes unless
/// two steps are longer — never crossed bounds (a step past a minute panicked in `clamp`).
#[test]
fn the_tail_fits_any_step() {
    for step_s in [1.0, 15.0, 60.0, 61.0, 120.0, 300.0, 3600.0, 86_400.0] {
        for len in [0.0, 30.0, 600.0, 3600.0, 7.0 * 86_400.0] {
            let w = Window { start_s: T0, end_s: T0 + len, step_s };
            if let Some(tail) = samples::tail_seconds(&w) {
                assert!(tail >= 2.0 * step_s && tail <= 120.0_f64.max(2.0 * step_s), "{step_s} {len} {tail}");
                assert!(len >= 2.0 * tail, "{step_s} {len} {tail}");
            }
        }
    }
}

/// Two replicas whose `instance` values are equal once cleaned for display (the same first 200
/// characters; a control character where the other has a space) stay two replicas: the queued
/// one's finding is not merged away.
#[test]
fn replicas_equal_once_cleaned_stay_apart() {
    let long = "r".repeat(220);
    for (a, b) in [(format!("{long}-a"), format!("{long}-b")), ("pod a".to_owned(), "pod\u{1}a".to_owned())] {
        let mut r = replica(&a, 0.0, false, 500.0);
        r.extend(replica(&b, 40.0, true, 300.0));
        let report = run(&matrix(r), Lang::En);
        assert_eq!(report.verdict, Verdict::TtftHigh, "{:#?}", report.findings);
        let p = report.prometheus.as_ref().unwrap();
        assert_eq!(p.fleet.replicas.len(), 2, "{:?}", p.fleet.replicas);
        let names: Vec<_> = p.fleet.replicas.iter().map(|r| r.subject.instance.clone()).collect();
        assert_ne!(names[0], names[1], "{names:?}");
    }
}

/// A label name that Prometheus 3 allows (any UTF-8) but the text format cannot carry as it is
/// does not forge the values the rules read: no stall is invented on a healthy replica.
#[test]
fn a_hostile_label_name_forges_nothing() {
    let healthy = replica("10.0.0.1:8000", 0.0, false, 500.0);
    let clean = run(&matrix(healthy.clone()), Lang::En);
    let forged: Vec<serde_json::Value> = healthy
        .into_iter()
        .map(|mut s| {
            s["metric"]["x=\"1\"} 9999 0 #"] = "y".into();
            s
        })
        .collect();
    let report = run(&matrix(forged), Lang::En);
    assert_eq!(report.verdict, clean.verdict, "{:#?}", report.findings);
    let rules = |r: &Report| r.findings.iter().map(|f| f.rule.clone()).collect::<Vec<_>>();
    assert_eq!(rules(&report), rules(&clean));
}

/// Four replicas of one model, no queue anywhere: one's TTFT is ten times its peers'. No
/// replica's own analysis can see that; the peer comparison names it, cites its `_count` line
/// and decides the verdict. Three replicas alike, or two, say nothing.
#[test]
fn a_replica_slower_than_its_peers_on_the_same_model_is_named() {
    let slow = |instance: &str| {
        let l = [("instance", instance), ("model_name", "qwen"), ("job", "vllm")];
        let mut v = vec![series("vllm:num_requests_running", &l, |_| 32.0)];
        for (le, per) in [("0.1", 0.0), ("1", 0.0), ("2.5", 10.0), ("5", 100.0), ("+Inf", 100.0)] {
            let mut lb = l.to_vec();
            lb.push(("le", le));
            v.push(series("vllm:time_to_first_token_seconds_bucket", &lb, move |k| per * k as f64));
        }
        v.push(series("vllm:time_to_first_token_seconds_count", &l, |k| 100.0 * k as f64));
        v
    };
    let mut r = Vec::new();
    for i in 1..=3 {
        r.extend(replica(&format!("10.0.0.{i}:8000"), 0.0, false, 500.0));
    }
    r.extend(slow("10.0.0.9:8000"));
    let report = run(&matrix(r.clone()), Lang::En);
    assert_eq!(report.verdict, Verdict::TtftHigh, "{:#?}", report.findings);
    let f = report.findings.iter().find(|f| f.rule == RuleId::ReplicaTtftSkewed).unwrap();
    assert_eq!(f.subject.as_ref().and_then(|s| s.instance.as_deref()), Some("10.0.0.9:8000"));
    assert!(f.summary.contains("3 peers"), "{}", f.summary);
    let p = report.prometheus.as_ref().unwrap();
    let c = p
        .citations
        .iter()
        .find(|c| *c.input == *f.evidence[0].input && c.line == f.evidence[0].line)
        .unwrap();
    assert_eq!(c.labels["__name__"], "vllm:time_to_first_token_seconds_count");
    // Without the slow one, or with one peer only: nothing.
    let even = run(&matrix(r[..r.len() - 7].to_vec()), Lang::En);
    assert!(even.findings.iter().all(|f| f.rule != RuleId::ReplicaTtftSkewed), "{:#?}", even.findings);
    let mut two = replica("10.0.0.1:8000", 0.0, false, 500.0);
    two.extend(slow("10.0.0.9:8000"));
    assert!(run(&matrix(two), Lang::En).findings.iter().all(|f| f.rule != RuleId::ReplicaTtftSkewed));
}
