//! `triage watch` against fake engines that hang while `/health` says 200: each is named right
//! within two intervals, recovery is seen, an idle engine is never called stalled; `--once`'s
//! exit statuses, usage errors, key hygiene and redirects; `--listen` scraped by a real
//! Prometheus; `deploy/watch/`'s alert rules through `promtool test rules`; and the simulator's
//! live engines (`triage sim --serve`): its scheduler deadlock and its healthy engine.
//!
//! Intervals are short here (`--every 1s --timeout 500ms`). Every fake engine and every watch
//! is bounded in time: the engines stop accepting by themselves, the watch is killed when its
//! handle drops.

mod fake;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fake::{Completion, vllm_metrics};
use serde_json::Value;
use triage_tests::prometheus as prom;

use crate::util::{repo, text, triage};

const KEY: &str = "sk-watch-secret-0123456789abcdef";

/// A watch running in the background, killed when dropped.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    errors: mpsc::Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Reports until `done` says enough, or `within` passes; every report read is returned.
    fn until(&self, within: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while !done(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => seen.push(serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"))),
                Err(_) => break,
            }
        }
        seen
    }

    /// The next stderr line holding `what`, within `within`.
    fn stderr_line(&self, what: &str, within: Duration) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            let l = self.errors.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok()?;
            if l.contains(what) {
                return Some(l);
            }
        }
    }
}

/// `triage watch BASE/v1 --model m --every 1s --timeout 500ms --format json` plus `extra`.
fn watch(base: &str, extra: &[&str]) -> Running {
    let mut c = triage();
    c.args(["watch", &format!("{base}/v1"), "--model", "m", "--every", "1s", "--timeout", "500ms"])
        .args(["--format", "json"])
        .args(extra)
        .env("OPENAI_API_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("starting triage watch");
    let (tx, lines) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let (etx, errors) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if etx.send(l).is_err() {
                break;
            }
        }
    });
    Running { child, lines, errors }
}

fn verdicts(reports: &[Value]) -> Vec<String> {
    reports.iter().map(|r| format!("#{} {} {}", r["tick"], r["verdict"], r["state"])).collect()
}

fn has(reports: &[Value], verdict: &str) -> bool {
    reports.iter().any(|r| r["verdict"] == verdict)
}

/// The first report with `verdict`, which must come within the first two intervals.
fn named_within_two<'a>(reports: &'a [Value], verdict: &str) -> &'a Value {
    let r = reports
        .iter()
        .find(|r| r["verdict"] == verdict)
        .unwrap_or_else(|| panic!("never {verdict}: {:?}", verdicts(reports)));
    assert!(r["tick"].as_u64().unwrap() <= 2, "{verdict} only at {:?}", verdicts(reports));
    r
}

#[test]
fn a_engine_that_accepts_and_never_answers_is_throughput_zero() {
    let engine = fake::start(|_| (Completion::Hang, String::new()));
    assert_eq!(fake::get(engine.port, "/health").map(|r| r.0), Some(200), "healthy by /health");
    let w = watch(&engine.base(), &[]);
    let reports = w.until(Duration::from_secs(8), |r| has(r, "THROUGHPUT_ZERO"));
    let r = named_within_two(&reports, "THROUGHPUT_ZERO");
    assert_eq!(r["state"], "stalled");
    assert_eq!(r["canary"]["error"]["kind"], "timeout_before_headers");
    assert_eq!(r["serving"], false);
    assert!(
        r["evidence"][0].as_str().unwrap().contains("no response headers within its 500 ms deadline"),
        "{r}"
    );
}

#[test]
fn b_headers_then_a_stall_is_throughput_zero() {
    let engine = fake::start(|_| (Completion::HeadersThenHang, String::new()));
    let w = watch(&engine.base(), &[]);
    let reports = w.until(Duration::from_secs(8), |r| has(r, "THROUGHPUT_ZERO"));
    let r = named_within_two(&reports, "THROUGHPUT_ZERO");
    assert_eq!((r["state"].as_str(), r["canary"]["status"].as_u64()), (Some("stalled"), Some(200)));
    assert_eq!(r["canary"]["error"]["kind"], "timeout_before_first_token");
    assert!(r["canary"]["headers_ms"].as_f64().unwrap() < 500.0);
    assert!(r["canary"]["ttft_ms"].is_null());
}

#[test]
fn c_frozen_counters_with_requests_running_are_throughput_zero_though_health_is_200() {
    let engine = fake::start(|_| (Completion::Stream { ttft_ms: 150 }, vllm_metrics(3, 0, 4096)));
    assert_eq!(fake::get(engine.port, "/health").map(|r| r.0), Some(200));
    let w = watch(&engine.base(), &["--metrics-url", &engine.metrics()]);
    let reports = w.until(Duration::from_secs(8), |r| has(r, "THROUGHPUT_ZERO"));
    let r = named_within_two(&reports, "THROUGHPUT_ZERO");
    assert_eq!(r["state"], "stalled");
    // The canary itself was answered: the metrics named it.
    assert_eq!(r["canary"]["ok"], true, "{r}");
    assert_eq!(r["engine"]["stalled"], true);
    assert_eq!(r["engine"]["running"], 3.0);
    assert_eq!(r["engine"]["moved"]["vllm:generation_tokens_total"], 0.0);
    assert!(r["evidence"][1].as_str().unwrap().contains("did not move"), "{r}");
    // The metrics request never carries the key.
    for h in engine.heads_of("/metrics") {
        assert!(!h.to_ascii_lowercase().contains("authorization"), "{h}");
    }
}

#[test]
fn d_a_stalled_engine_that_recovers_is_seen_recovering() {
    let engine = fake::start(|t| {
        if t < Duration::from_millis(1700) {
            (Completion::HeadersThenHang, vllm_metrics(2, 1, 100))
        } else {
            (Completion::Stream { ttft_ms: 30 }, vllm_metrics(1, 0, 100 + t.as_millis() as u64))
        }
    });
    let w = watch(&engine.base(), &["--metrics-url", &engine.metrics()]);
    let reports = w.until(Duration::from_secs(10), |r| {
        has(r, "THROUGHPUT_ZERO") && r.last().is_some_and(|l| l["verdict"] == "HEALTHY")
    });
    let stalled = named_within_two(&reports, "THROUGHPUT_ZERO");
    assert_eq!(stalled["state"], "stalled");
    let last = reports.last().unwrap();
    assert_eq!(
        (&last["verdict"], &last["state"]),
        (&Value::from("HEALTHY"), &Value::from("serving")),
        "{:?}",
        verdicts(&reports)
    );
    assert!(last["tick"].as_u64().unwrap() <= 4, "recovery seen late: {:?}", verdicts(&reports));
    assert!(last["engine"]["moved"]["vllm:generation_tokens_total"].as_f64().unwrap() > 0.0);
}

#[test]
fn e_an_idle_engine_with_flat_counters_stays_healthy() {
    let engine = fake::start(|_| (Completion::Stream { ttft_ms: 20 }, vllm_metrics(0, 0, 777)));
    let w = watch(&engine.base(), &["--metrics-url", &engine.metrics()]);
    let reports = w.until(Duration::from_secs(8), |r| r.len() >= 3);
    assert_eq!(reports.len(), 3, "{:?}", verdicts(&reports));
    for r in &reports {
        assert_eq!((&r["verdict"], r["serving"].as_bool()), (&Value::from("HEALTHY"), Some(true)), "{r}");
        assert_eq!(r["engine"]["stalled"], false);
    }
    assert!(reports[2]["evidence"][1].as_str().unwrap().contains("idle, not stalled"));
}

#[test]
fn once_exits_0_when_serving_and_1_otherwise() {
    let ok = fake::start(|_| (Completion::Stream { ttft_ms: 10 }, String::new()));
    let out = triage()
        .args(["watch", &format!("{}/v1", ok.base()), "--model", "m", "--once", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one object: {stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (&v["schema"], &v["verdict"], &v["tick"]),
        (&Value::from("triage.watch/v1"), &Value::from("HEALTHY"), &Value::from(1))
    );
    assert_eq!(v["bounds"]["ttft_ms"], 2000.0);
    assert!(v["definitions"].as_array().unwrap().iter().any(|d| d["name"] == "TTFT"));

    // TTFT above the bound it states.
    let slow = fake::start(|_| (Completion::Stream { ttft_ms: 300 }, String::new()));
    let out = triage()
        .args(["watch", &format!("{}/v1", slow.base()), "--model", "m", "--once", "--format", "json"])
        .args(["--slo-ttft-ms", "100"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&v["verdict"], &v["state"]), (&Value::from("TTFT_HIGH"), &Value::from("slow")));
    assert!(v["evidence"][0].as_str().unwrap().contains("above the 100 ms bound"));

    // Refused: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = triage()
        .args(["watch", &format!("http://127.0.0.1:{port}/v1"), "--model", "m", "--once", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&v["verdict"], &v["state"]), (&Value::from("THROUGHPUT_ZERO"), &Value::from("down")));
    assert_eq!(v["canary"]["error"]["kind"], "connection_refused");

    // --once with --metrics-url compares two scrapes an interval apart.
    let frozen = fake::start(|_| (Completion::Stream { ttft_ms: 10 }, vllm_metrics(3, 2, 9)));
    let out = triage()
        .args([
            "watch",
            &format!("{}/v1", frozen.base()),
            "--model",
            "m",
            "--once",
            "--every",
            "1s",
            "--timeout",
            "500ms",
        ])
        .args(["--metrics-url", &frozen.metrics()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("THROUGHPUT_ZERO stalled"), "{t}");
    assert!(
        t.contains("TTFT: request sent -> first SSE event carrying any generated token"),
        "text states definitions: {t}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[&[&str]] = &[
        &["--every", "1s", "--timeout", "1s"],
        &["--every", "1s", "--timeout", "2s"],
        &["--max-tokens", "5"],
        &["--max-tokens", "0"],
        &["--every", "soon"],
        &["--metrics-url", "ftp://h/metrics"],
        &["--metrics-url", "not a url"],
        &["--listen", "not-an-address"],
        &["--api-key-env", "TRIAGE_WATCH_UNSET_VARIABLE"],
        &["--slo-ttft-ms", "-3"],
    ];
    for extra in cases {
        let out = triage()
            .args(["watch", "http://127.0.0.1:9/v1", "--model", "m", "--once"])
            .args(*extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text(&out));
    }
    let out = triage().args(["watch", "ftp://example.com/v1", "--model", "m", "--once"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = triage().args(["watch", "http://127.0.0.1:9/v1", "--once"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--model is required");
}

#[test]
fn the_key_is_never_printed_and_no_redirect_is_followed() {
    let echo = format!("{{\"error\":{{\"message\":\"bad key Bearer {KEY}\"}}}}");
    let engine = fake::start(move |_| (Completion::Status(500, echo.clone()), vllm_metrics(0, 0, 1)));
    for format in ["json", "text"] {
        let out = triage()
            .args(["watch", &format!("{}/v1", engine.base()), "--model", "m", "--once", "--format", format])
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let all = text(&out);
        assert!(!all.contains(KEY), "{all}");
        assert!(all.contains("THROUGHPUT_ZERO"), "{all}");
    }
    // The canary went out with the key, to the URL named only.
    assert!(engine.heads_of("POST").iter().all(|h| h.contains(KEY)));

    let target = fake::start(|_| (Completion::Stream { ttft_ms: 1 }, vllm_metrics(0, 0, 1)));
    let to = format!("{}/v1/chat/completions", target.base());
    let redirecting = fake::start(move |_| (Completion::Redirect(to.clone()), String::new()));
    let out = triage()
        .args(["watch", &format!("{}/v1", redirecting.base()), "--model", "m", "--once", "--format", "json"])
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&v["verdict"], &v["canary"]["error"]["kind"]),
        (&Value::from("CONFIG"), &Value::from("redirect"))
    );
    assert!(target.heads.lock().unwrap().is_empty(), "the redirect was followed");
}

#[test]
fn listen_serves_the_metrics_with_help_and_type_and_refuses_the_rest() {
    let engine = fake::start(|_| (Completion::Stream { ttft_ms: 5 }, vllm_metrics(1, 0, 5)));
    let w = watch(&engine.base(), &["--metrics-url", &engine.metrics(), "--listen", "127.0.0.1:0"]);
    let line = w.stderr_line("metrics on http://", Duration::from_secs(5)).expect("the address on stderr");
    let port: u16 = line.rsplit(':').next().unwrap().trim_end_matches("/metrics").parse().unwrap();
    w.until(Duration::from_secs(5), |r| !r.is_empty());
    let (status, body) = fake::get(port, "/metrics").unwrap();
    assert_eq!(status, 200);
    for name in [
        "triage_canary_up",
        "triage_canary_ttft_seconds",
        "triage_canary_failures_total",
        "triage_engine_stalled",
    ] {
        assert!(
            body.contains(&format!("# HELP {name} ")) && body.contains(&format!("# TYPE {name} ")),
            "{name}: {body}"
        );
    }
    assert!(body.contains("triage_canary_up 1\n"), "{body}");
    assert!(
        body.contains("triage_canary_ttft_seconds_count 1\n")
            || body.contains("triage_canary_ttft_seconds_count 2\n")
    );
    assert_eq!(fake::get(port, "/").map(|r| r.0), Some(404));
    // Connections are bounded: 16 idle ones take every slot, the next is closed unanswered,
    // and once they go the page is served again.
    let idle: Vec<std::net::TcpStream> =
        (0..16).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fake::get(port, "/metrics"), None, "a 17th connection is answered");
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fake::get(port, "/metrics").map(|r| r.0), Some(200));
    // A head that never ends is cut at its bound.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::{Read, Write};
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(format!("GET /metrics HTTP/1.1\r\nX: {}\r\n", "a".repeat(20_000)).as_bytes());
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
}

#[test]
fn a_real_prometheus_scrapes_listen_and_reads_the_canary_back() {
    let Some(tools) = prom::tools() else { return };
    let engine = fake::start(|_| (Completion::Stream { ttft_ms: 5 }, vllm_metrics(0, 0, 5)));
    let w = watch(&engine.base(), &["--metrics-url", &engine.metrics(), "--listen", "127.0.0.1:0"]);
    let line = w.stderr_line("metrics on http://", Duration::from_secs(5)).expect("the address on stderr");
    let addr = line.rsplit("http://").next().unwrap().trim_end_matches("/metrics").to_owned();
    let p = prom::Prometheus::scraping(&tools, prom::TempDir::new("watch-listen"), "triage-watch", &addr);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = Vec::new();
    while Instant::now() < deadline {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        last = p.query("triage_canary_up", now);
        if last.first().is_some_and(|r| r["value"][1] == "1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(last.first().map(|r| r["value"][1].clone()), Some(Value::from("1")), "{last:?}");
    assert_eq!(last[0]["metric"]["job"], "triage-watch");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stalled = p.query("triage_engine_stalled", now);
    assert_eq!(stalled.first().map(|r| r["value"][1].clone()), Some(Value::from("0")), "{stalled:?}");
    let hist = p.query("triage_canary_ttft_seconds_count", now);
    assert!(!hist.is_empty(), "the histogram is scraped");
}

fn deploy(name: &str) -> PathBuf {
    repo().join("deploy/watch").join(name)
}

#[test]
fn the_alert_rules_pass_promtool_check_and_their_unit_tests() {
    let Some((_, promtool)) = prom::tools() else { return };
    let check = Command::new(&promtool).args(["check", "rules"]).arg(deploy("alerts.yml")).output().unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let test = Command::new(&promtool)
        .current_dir(deploy(""))
        .args(["test", "rules", "alerts_test.yml"])
        .output()
        .unwrap();
    assert!(test.status.success(), "{}", text(&test));
}

#[test]
fn the_alerts_and_the_dashboard_read_only_metrics_the_watch_exports() {
    let mut w = triage_core::watch::Watch::new(triage_core::watch::WatchConfig::default());
    let scrape = triage_core::watch::EngineScrape::parse(&vllm_metrics(1, 1, 1), 0);
    w.observe(triage_core::watch::Tick { at_ns: 0, canary: None, metrics: Some(Ok(scrape)) });
    let exposition = w.exposition();
    let exported: Vec<&str> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ").and_then(|r| r.split_whitespace().next()))
        .collect();
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(deploy("grafana-dashboard.json")).unwrap()).unwrap();
    let mut read = std::fs::read_to_string(deploy("alerts.yml")).unwrap();
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            read.push_str(t["expr"].as_str().unwrap());
            read.push('\n');
        }
    }
    let mut names = Vec::new();
    for (i, _) in read.match_indices("triage_") {
        let rest = &read[i..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name =
            rest[..end].trim_end_matches("_bucket").trim_end_matches("_count").trim_end_matches("_sum");
        names.push(name.to_owned());
    }
    assert!(names.len() >= 5, "{names:?}");
    for n in names {
        assert!(exported.contains(&n.as_str()), "{n} is read but not exported: {exported:?}");
    }
}

/// `triage sim --scenario NAME --serve 0` (a live simulated vLLM with its own `/metrics`): the
/// child, killed when dropped, and its root URL.
fn simulate(scenario: &str) -> (Running, String) {
    let mut child = triage()
        .args(["sim", "--scenario", scenario, "--serve", "0", "--lifetime", "60s", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting triage sim --serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let first =
        lines.recv_timeout(Duration::from_secs(60)).expect("triage sim --serve said where it listens");
    let v: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    let root = v["listening"].as_str().unwrap().trim_end_matches("/v1").to_owned();
    let (_, errors) = mpsc::channel();
    (Running { child, lines, errors }, root)
}

/// The simulator's engines, not a fake: its scheduler deadlock (requests held, KV full, no token
/// made, `/metrics` answering) is THROUGHPUT_ZERO from the canary and the counters alike, and
/// its healthy engine is HEALTHY — `--once` exits 1 and 0.
#[test]
fn the_simulated_deadlock_is_throughput_zero_and_the_healthy_engine_serving() {
    for (scenario, verdict, code) in [("kv-deadlock", "THROUGHPUT_ZERO", 1), ("healthy", "HEALTHY", 0)] {
        let (_sim, root) = simulate(scenario);
        let out = triage()
            .args(["watch", &format!("{root}/v1"), "--model", "m", "--once", "--format", "json"])
            .args(["--every", "2s", "--timeout", "1500ms", "--metrics-url", &format!("{root}/metrics")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{scenario}: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        assert_eq!(v["verdict"], verdict, "{scenario}: {v:#}");
        assert_eq!(v["engine"]["family"], "vllm", "{scenario}: {v:#}");
        assert_eq!(v["engine"]["stalled"], scenario == "kv-deadlock", "{scenario}: {v:#}");
    }
}
