//! `triage analyze --prometheus` against a real Prometheus and against hostile servers.
//!
//! The real one: a small fleet written here as OpenMetrics, backfilled into TSDB blocks with
//! `promtool tsdb create-blocks-from openmetrics`, served by `prometheus` on a free port of
//! 127.0.0.1 (killed on drop; `triage_tests::prometheus`). Needs Debian's `prometheus` package
//! (`.ci/run` installs it); set `TRIAGE_SKIP_PROMETHEUS=1` to skip the real-server test on a
//! machine without it.
//!
//! The hostile ones: a thread on 127.0.0.1 per test that answers a bounded number of
//! connections with raw bytes and stops by itself (slow, erroring, flooding, not Prometheus,
//! redirecting, echoing the token).

use std::io::Write;
use std::net::TcpStream;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use triage_tests::prometheus::{self, Prometheus};

use crate::util::{self, Seen, TempDir, free_port, json, text, triage, wait_with_peak_rss};

const STEP: u64 = 15;
const POINTS: u64 = 41;

/// One series of the fleet: name, labels, value at step k.
type Gen = (&'static str, Vec<(&'static str, String)>, Box<dyn Fn(u64) -> f64>);

fn replica(
    fleet: &'static str,
    instance: &str,
    waiting: f64,
    slow_ttft: bool,
    gen_per_step: f64,
) -> Vec<Gen> {
    let l = |extra: &[(&'static str, &str)]| {
        let mut v = vec![
            ("fleet", fleet.to_owned()),
            ("instance", instance.to_owned()),
            ("job", "vllm".to_owned()),
            ("model_name", "Qwen/Qwen3-8B".to_owned()),
            ("pod", format!("vllm-{}", instance.split(':').next().unwrap_or(""))),
        ];
        v.extend(extra.iter().map(|(k, x)| (*k, (*x).to_owned())));
        v
    };
    let mut out: Vec<Gen> = vec![
        ("vllm:num_requests_running", l(&[]), Box::new(|_| 32.0)),
        ("vllm:num_requests_waiting", l(&[]), Box::new(move |k| if k > 10 { waiting } else { 0.0 })),
        ("vllm:kv_cache_usage_perc", l(&[]), Box::new(|_| 0.45)),
        ("vllm:generation_tokens_total", l(&[]), Box::new(move |k| 1e5 + k as f64 * gen_per_step)),
        ("vllm:num_preemptions_total", l(&[]), Box::new(|_| 3.0)),
    ];
    for (le, fast, slow) in
        [("0.1", 50.0, 1.0), ("1.0", 100.0, 2.0), ("10.0", 100.0, 100.0), ("+Inf", 100.0, 100.0)]
    {
        let per = if slow_ttft { slow } else { fast };
        out.push((
            "vllm:time_to_first_token_seconds_bucket",
            l(&[("le", le)]),
            Box::new(move |k| per * k as f64),
        ));
    }
    out
}

fn node(fleet: &'static str, host: &str, slow: Option<u32>) -> Vec<Gen> {
    let mut out: Vec<Gen> = Vec::new();
    for gpu in 0..4u32 {
        let l = vec![
            ("Hostname", host.to_owned()),
            ("UUID", format!("GPU-{host}-000{gpu}")),
            ("fleet", fleet.to_owned()),
            ("gpu", gpu.to_string()),
            ("instance", format!("{host}:9400")),
            ("job", "dcgm".to_owned()),
            ("modelName", "NVIDIA H200".to_owned()),
        ];
        let is_slow = slow == Some(gpu);
        let c =
            |v: f64, s: f64| -> Box<dyn Fn(u64) -> f64> { Box::new(move |_| if is_slow { s } else { v }) };
        out.push(("DCGM_FI_DEV_SM_CLOCK", l.clone(), c(1980.0, 840.0)));
        out.push(("DCGM_FI_DEV_GPU_UTIL", l.clone(), c(100.0, 100.0)));
        out.push(("DCGM_FI_DEV_GPU_TEMP", l.clone(), c(62.0, 87.0)));
        out.push(("DCGM_FI_DEV_POWER_USAGE", l.clone(), c(650.0, 420.0)));
        out.push(("DCGM_FI_DEV_FB_USED", l.clone(), c(126_000.0, 126_000.0)));
        out.push(("DCGM_FI_DEV_FB_FREE", l.clone(), c(17_000.0, 17_000.0)));
        out.push(("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", l, c(0.0, 8.0)));
    }
    out
}

/// The fleets: `queue` (replica b of two queues, its TTFT tail long), `gpu` (GPU 2 of node-g
/// throttled, next to a healthy replica), `stall` (a replica running with no tokens out),
/// `restart` (a replica that started inside the window, down at first, its first requests slow),
/// `healthy`.
fn fleet(t0: u64) -> Vec<Gen> {
    let mut v = Vec::new();
    v.extend(replica("queue", "queue-a:8000", 0.0, false, 600.0));
    v.extend(replica("queue", "queue-b:8000", 45.0, true, 300.0));
    v.extend(replica("gpu", "gpu-a:8000", 0.0, false, 600.0));
    v.extend(node("gpu", "node-g", Some(2)));
    v.extend(replica("healthy", "ok-a:8000", 0.0, false, 600.0));
    v.extend(replica("healthy", "ok-b:8000", 0.0, false, 550.0));
    v.extend(node("healthy", "node-h", None));
    v.push((
        "vllm:num_requests_running",
        vec![("fleet", "stall".to_owned()), ("instance", "stuck:8000".to_owned())],
        Box::new(|_| 12.0),
    ));
    v.push((
        "vllm:generation_tokens_total",
        vec![("fleet", "stall".to_owned()), ("instance", "stuck:8000".to_owned())],
        Box::new(|_| 77_000.0),
    ));
    let restart = |extra: &[(&'static str, &'static str)]| {
        let mut l = vec![("fleet", "restart".to_owned()), ("instance", "fresh:8000".to_owned())];
        l.extend(extra.iter().map(|(k, x)| (*k, (*x).to_owned())));
        l
    };
    v.push(("up", restart(&[]), Box::new(|k| if k < 3 { 0.0 } else { 1.0 })));
    v.push(("process_start_time_seconds", restart(&[]), Box::new(move |_| t0 as f64 + 10.0)));
    v.push(("vllm:num_requests_running", restart(&[]), Box::new(|_| 8.0)));
    v.push(("vllm:generation_tokens_total", restart(&[]), Box::new(|k| 400.0 * k as f64)));
    for (le, per) in [("0.25", 90.0), ("40.0", 90.0), ("80.0", 100.0), ("+Inf", 100.0)] {
        v.push((
            "vllm:time_to_first_token_seconds_bucket",
            restart(&[("le", le)]),
            Box::new(move |k| per * k as f64),
        ));
    }
    v
}

/// OpenMetrics text of the fleet from `t0` (unix s): every sample of a series together, in time
/// order, as promtool wants it.
fn openmetrics(t0: u64) -> String {
    let mut gens = fleet(t0);
    gens.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::new();
    for (name, labels, f) in &gens {
        let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        for k in 0..POINTS {
            out.push_str(&format!("{name}{{{}}} {} {}\n", l.join(","), f(k), t0 + k * STEP));
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Backfill the fleet at `t0` and start Prometheus on it; `None` when skipped.
fn start_prometheus(t0: u64) -> Option<Prometheus> {
    let tools = prometheus::tools()?;
    let dir = TempDir::new("prom-fleet");
    let om = dir.path().join("fleet.om");
    std::fs::write(&om, openmetrics(t0)).unwrap();
    Some(Prometheus::start(&tools, dir, &[om]))
}

fn analyze(url: &str, extra: &[&str]) -> Output {
    triage().args(["analyze", "--prometheus", url]).args(extra).output().unwrap()
}

#[test]
fn a_real_prometheus_names_the_fault_and_the_replica_or_gpu() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let t0 = (now - 3 * 3600) / STEP * STEP;
    let Some(prom) = start_prometheus(t0) else { return };
    let (from, to) = (t0.to_string(), (t0 + (POINTS - 1) * STEP).to_string());
    let window = ["--from", from.as_str(), "--to", to.as_str(), "--step", "15s", "--format", "json"];
    let run = |fleet: &str| {
        let sel = format!("{{fleet=\"{fleet}\"}}");
        let out = analyze(&prom.url(), &[&window[..], &["--selector", &sel]].concat());
        assert!(out.status.success(), "{fleet}: {}", text(&out));
        json(&out)
    };

    let r = run("queue");
    assert_eq!(r["verdict"], "TTFT_HIGH", "{r:#}");
    assert_eq!(r["findings"][0]["rule"], "queueing-exceeds-capacity");
    assert_eq!(r["findings"][0]["subject"]["instance"], "queue-b:8000");
    assert_eq!(r["findings"][0]["subject"]["model_name"], "Qwen/Qwen3-8B");
    let p = &r["prometheus"];
    assert_eq!(p["kind"], "prometheus");
    assert_eq!(p["fleet"]["replicas"][0]["subject"]["instance"], "queue-b:8000");
    assert_eq!(p["series"], 18);
    // Series, the raw recent slice, range, and the engines' `up` /
    // `process_start_time_seconds` (none here).
    assert_eq!(p["queries"].as_array().unwrap().len(), 4);
    assert_eq!(p["queries"][1]["api"], "/api/v1/query");
    assert_eq!(p["scraping"]["interval_s"], 15.0, "{p:#}");
    let e = &r["findings"][0]["evidence"][0];
    let c = p["citations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["input"] == e["input"] && c["line"] == e["line"])
        .unwrap();
    assert_eq!(c["labels"]["__name__"], "vllm:num_requests_waiting");
    assert_eq!(c["value"], 45.0);
    assert_eq!(c["at_unix_s"].as_f64(), Some((t0 + (POINTS - 1) * STEP) as f64));
    // The graph link opens the same series in Prometheus's own UI, which answers it.
    let link = c["graph_url"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("{}/graph?g0.expr=vllm%3Anum_requests_waiting%7B", prom.url())),
        "{link}"
    );

    let r = run("gpu");
    assert_eq!(r["verdict"], "TBT_TAIL", "{r:#}");
    assert_eq!(r["findings"][0]["rule"], "slow-gpu");
    let about = &r["findings"][0]["subject"];
    assert_eq!(
        (&about["Hostname"], &about["gpu"], &about["UUID"]),
        (&"node-g".into(), &"2".into(), &"GPU-node-g-0002".into())
    );
    assert_eq!(r["prometheus"]["fleet"]["gpus"][0]["subject"]["gpu"], "2");

    let r = run("stall");
    assert_eq!(r["verdict"], "THROUGHPUT_ZERO", "{r:#}");
    assert_eq!(r["findings"][0]["rule"], "scheduler-stall");
    assert_eq!(r["findings"][0]["subject"]["instance"], "stuck:8000");

    // A restart inside the window: named from `up` and `process_start_time_seconds`, which are
    // asked for the engines' instances only.
    let r = run("restart");
    assert_eq!(r["verdict"], "TTFT_HIGH", "{r:#}");
    assert_eq!(r["findings"][0]["rule"], "cold-start");
    assert_eq!(r["findings"][0]["subject"]["instance"], "fresh:8000");
    let q = &r["prometheus"]["queries"][3];
    assert_eq!(
        q["expr"],
        "{__name__=~\"up|process_start_time_seconds\",fleet=\"restart\",instance=~\"fresh:8000\"}"
    );
    assert_eq!(q["series"], 2);

    let r = run("healthy");
    assert_eq!(r["verdict"], "HEALTHY", "{r:#}");
    assert!(r["findings"].as_array().unwrap().is_empty(), "{r:#}");
    assert!(r["inputs"].as_array().unwrap().len() >= 3, "evidence of health: {r:#}");
    assert!(r["prometheus"]["groups"].as_array().unwrap().iter().all(|g| g["verdict"] == "HEALTHY"));

    // Text names the replica and links the graph.
    let out = analyze(&prom.url(), &["--from", &from, "--to", &to, "--selector", "{fleet=\"queue\"}"]);
    let t = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(t.contains("about: instance=\"queue-b:8000\""), "{t}");
    assert!(t.contains("/graph?g0.expr="), "{t}");
    assert!(t.contains("fleet — replicas ranked by ttft_p99"), "{t}");
    // The scrape interval found, and what it limits.
    assert!(t.contains("scraping: one scrape every 15 s"), "{t}");
    let out = analyze(
        &prom.url(),
        &["--from", &from, "--to", &to, "--selector", "{fleet=\"gpu\"}", "--format", "markdown"],
    );
    let t = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(t.contains("## From Prometheus") && t.contains("| node-g | 2 | GPU-node-g-0002 | 840 |"), "{t}");
    assert!(t.contains("- scraping: one scrape every 15 s"), "{t}");

    // Files given alongside are analysed together with the window.
    let dir = std::env::temp_dir().join(format!("triage-cli-prom-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let oom = dir.join("oom.txt");
    std::fs::write(&oom, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.\n").unwrap();
    let out = analyze(
        &prom.url(),
        &[&window[..], &["--selector", "{fleet=\"healthy\"}"], &[oom.to_str().unwrap()]].concat(),
    );
    let r = json(&out);
    assert_eq!(r["verdict"], "OOM", "{r:#}");
    assert!(r["inputs"].as_array().unwrap().iter().any(|i| i["name"] == oom.to_str().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);

    // An empty window, a selector Prometheus refuses, a selector we refuse.
    let out = analyze(&prom.url(), &["--from", "1000000000", "--to", "1000000600"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no series in the window"), "{}", text(&out));
    let out = analyze(&prom.url(), &[&window[..], &["--selector", "{job=~\"(\"}"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad_data"), "{}", text(&out));
    let out = analyze(&prom.url(), &["--selector", "{job=vllm}"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad --selector"), "{}", text(&out));

    // Bounds: fewer series than match — whole instances are left out, and the report says so.
    let out = analyze(
        &prom.url(),
        &[&window[..], &["--selector", "{fleet=\"queue\"}", "--max-series", "10"]].concat(),
    );
    let r = json(&out);
    assert_eq!(r["prometheus"]["series"], 9, "{r:#}");
    assert!(r["prometheus"]["cut"][0].as_str().unwrap().contains("18 series in 2 instances match"), "{r:#}");
}

/// A server on 127.0.0.1 answering at most `max` connections within 10 s with `answer`, after
/// reading the request; records each request's head.
fn serve(max: usize, answer: impl Fn(&mut TcpStream) + Send + 'static) -> (String, Arc<Seen>) {
    let (port, seen) =
        util::serve(max, Duration::from_secs(10), Duration::from_secs(5), move |_, s| answer(s));
    (format!("http://127.0.0.1:{port}"), seen)
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

const TOKEN: &str = "prom-bearer-secret-0123456789";

#[test]
fn hostile_servers_end_in_clear_errors_within_the_deadlines() {
    // Slow: reads the request, answers nothing for 4 s.
    let (url, _) = serve(1, |_| std::thread::sleep(Duration::from_secs(4)));
    let started = Instant::now();
    let out = analyze(&url, &["--prometheus-query-timeout", "1s"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no complete answer within 1 s"), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());

    // The overall deadline is shorter than the per-query one.
    let (url, _) = serve(1, |_| std::thread::sleep(Duration::from_secs(4)));
    let out = analyze(&url, &["--prometheus-timeout", "1s"]);
    assert!(text(&out).contains("overall deadline"), "{}", text(&out));

    // An error status without Prometheus's JSON.
    let (url, _) =
        serve(1, |s| respond(s, "503 Service Unavailable", "text/plain", "upstream connect error"));
    let out = analyze(&url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("HTTP 503") && text(&out).contains("upstream connect error"),
        "{}",
        text(&out)
    );

    // Prometheus's own error that is not the user's fault.
    let (url, _) = serve(1, |s| {
        respond(
            s,
            "503 Service Unavailable",
            "application/json",
            r#"{"status":"error","errorType":"unavailable","error":"TSDB not ready"}"#,
        )
    });
    let out = analyze(&url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("Prometheus refused the query (HTTP 503, unavailable): TSDB not ready"),
        "{}",
        text(&out)
    );

    // Not Prometheus: a login page.
    let (url, _) = serve(1, |s| respond(s, "200 OK", "text/html", "<html><title>Grafana</title></html>"));
    let out = analyze(&url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("not a Prometheus server"), "{}", text(&out));

    // A flood: an endless answer is cut at the byte bound.
    let (url, _) = serve(1, |s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"status\":\"success\",\"data\":[");
        let chunk = "{\"__name__\":\"vllm:x\",\"instance\":\"a\"},".repeat(1000);
        let stop = Instant::now() + Duration::from_secs(5);
        while Instant::now() < stop && s.write_all(chunk.as_bytes()).is_ok() {}
    });
    let out = analyze(&url, &["--max-body-mib", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("larger than 1 MiB"), "{}", text(&out));

    // Unreachable: a port nobody listens on.
    let port = free_port();
    let out = analyze(&format!("http://127.0.0.1:{port}"), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("cannot connect"), "{}", text(&out));

    // A redirect is not followed (the token would go elsewhere).
    let (url, seen) = serve(2, |s| {
        let _ = s.write_all(b"HTTP/1.1 302 Found\r\nlocation: http://evil.example/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    let out = triage()
        .args(["analyze", "--prometheus", &url, "--prometheus-token-env", "PROM_TOKEN"])
        .env("PROM_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("redirects"), "{}", text(&out));
    assert_eq!(seen.heads.lock().unwrap().len(), 1);
}

#[test]
fn credentials_are_sent_and_never_printed() {
    // The server echoes the Authorization header back in its error: the token must not show.
    let (url, seen) = serve(1, |s| {
        respond(
            s,
            "400 Bad Request",
            "application/json",
            &format!(r#"{{"status":"error","errorType":"bad_data","error":"bad token Bearer {TOKEN}"}}"#),
        )
    });
    let out = triage()
        .args(["analyze", "--prometheus", &url, "--prometheus-token-env", "PROM_TOKEN", "--format", "json"])
        .env("PROM_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains(TOKEN), "{}", text(&out));
    assert!(text(&out).contains("bad_data"), "{}", text(&out));
    let head = seen.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.starts_with("post /api/v1/series "), "{head}");
    assert!(head.contains(&format!("authorization: bearer {}", TOKEN.to_ascii_lowercase())), "{head}");

    // Basic auth from USER:PASSWORD.
    let (url, seen) = serve(1, |s| respond(s, "401 Unauthorized", "text/plain", "Unauthorized"));
    let out = triage()
        .args(["analyze", "--prometheus", &url, "--prometheus-basic-auth-env", "PROM_AUTH"])
        .env("PROM_AUTH", "admin:s3cret-password-42")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains("s3cret"), "{}", text(&out));
    assert!(
        seen.heads.lock().unwrap()[0].to_ascii_lowercase().contains("authorization: basic "),
        "{:?}",
        seen.heads
    );

    // A body that echoes the token across byte 4,096 (the excerpt's cut): no fragment shows,
    // even once whitespace folding pulls it to the front.
    let echo = format!("{}{TOKEN} trailing words", " ".repeat(4096 - 12));
    let (url, _) = serve(1, move |s| respond(s, "200 OK", "text/plain", &echo));
    let out = triage()
        .args(["analyze", "--prometheus", &url, "--prometheus-token-env", "PROM_TOKEN"])
        .env("PROM_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains(&TOKEN[..8]), "{}", text(&out));

    // Basic auth echoed back, as the encoded header (JSON error and HTML): redacted.
    let encoded = "YWRtaW46czNjcmV0LXBhc3N3b3JkLTQy"; // base64("admin:s3cret-password-42")
    for (status, kind, body) in [
        (
            "401 Unauthorized",
            "application/json",
            format!(
                r#"{{"status":"error","errorType":"auth","error":"denied: Authorization: Basic {encoded}"}}"#
            ),
        ),
        ("401 Unauthorized", "text/html", format!("<html><pre>Authorization: Basic {encoded}</pre></html>")),
        ("401 Unauthorized", "text/plain", format!("you sent {encoded}")),
    ] {
        let (url, _) = serve(1, move |s| respond(s, status, kind, &body));
        let out = triage()
            .args([
                "analyze",
                "--prometheus",
                &url,
                "--prometheus-basic-auth-env",
                "PROM_AUTH",
                "--format",
                "json",
            ])
            .env("PROM_AUTH", "admin:s3cret-password-42")
            .output()
            .unwrap();
        assert!(!text(&out).contains("YWRtaW46") && !text(&out).contains("s3cret"), "{kind}: {}", text(&out));
    }

    // Usage errors: a variable that is not set, credentials in the URL, flags without --prometheus.
    let out = triage()
        .args([
            "analyze",
            "--prometheus",
            "http://127.0.0.1:9",
            "--prometheus-token-env",
            "TRIAGE_NO_SUCH_VAR",
        ])
        .env_remove("TRIAGE_NO_SUCH_VAR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out =
        triage().args(["analyze", "--prometheus", "http://admin:hunter22@127.0.0.1:9"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains("hunter22"), "{}", text(&out));
    let out = triage().args(["analyze", "--since", "30m"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = triage()
        .args(["analyze", "--prometheus", "http://127.0.0.1:9", "--from", "2000", "--to", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad window"), "{}", text(&out));
}

/// A step past a minute (`--step 2m`, or one widened for a long window) is analysed, never a
/// panic: the recent tail's bounds crossed and `clamp` aborted with exit 101.
#[test]
fn steps_past_a_minute_are_analysed() {
    let t0: u64 = 1_764_460_800;
    for (step, step_s) in [("61s", 61u64), ("2m", 120), ("10m", 600)] {
        let points = 40u64;
        let values: Vec<String> =
            (0..points).map(|k| format!("[{},\"{}\"]", t0 + k * step_s, 1000 + k * 500)).collect();
        let range = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"vllm:generation_tokens_total","instance":"a:8000"}},"values":[{}]}}]}}}}"#,
            values.join(",")
        );
        let series = r#"{"status":"success","data":[{"__name__":"vllm:generation_tokens_total","instance":"a:8000"}]}"#;
        let n = Arc::new(Mutex::new(0));
        let (url, seen) = serve(4, move |s| {
            let mut k = n.lock().unwrap();
            respond(s, "200 OK", "application/json", if *k == 0 { series } else { &range });
            *k += 1;
        });
        let (from, to) = (t0.to_string(), (t0 + (points - 1) * step_s).to_string());
        let out = analyze(&url, &["--from", &from, "--to", &to, "--step", step, "--format", "json"]);
        assert_ne!(out.status.code(), Some(101), "{step}: {} {:?}", text(&out), seen.heads.lock().unwrap());
        assert!(!text(&out).contains("panicked"), "{step}: {}", text(&out));
        assert!(out.status.success(), "{step}: {}", text(&out));
    }
}

/// A server that puts the run's token into a label value: the label is shown redacted, and so
/// are the queries built from it (the --max-series instance filter, the liveness matcher) and
/// their graph links, in every format.
#[test]
fn a_token_in_a_label_is_never_printed_in_the_queries_built_from_it() {
    let t0: u64 = 1_764_460_800;
    let instance = format!("10.0.0.1:8000/{TOKEN}");
    let other = format!("10.0.0.2:8000/{TOKEN}");
    let series = format!(
        r#"{{"status":"success","data":[{{"__name__":"vllm:generation_tokens_total","instance":"{instance}"}},{{"__name__":"vllm:num_requests_running","instance":"{instance}"}},{{"__name__":"vllm:generation_tokens_total","instance":"{other}"}},{{"__name__":"vllm:num_requests_running","instance":"{other}"}}]}}"#
    );
    let values: Vec<String> =
        (0..20u64).map(|k| format!("[{},\"{}\"]", t0 + k * 15, 1000 + k * 500)).collect();
    let range = format!(
        r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"vllm:generation_tokens_total","instance":"{instance}"}},"values":[{}]}}]}}}}"#,
        values.join(",")
    );
    for format in ["text", "markdown", "json"] {
        let (series, range) = (series.clone(), range.clone());
        let n = Arc::new(Mutex::new(0));
        let (url, _) = serve(6, move |s| {
            let mut k = n.lock().unwrap();
            let body = if *k == 0 { series.as_str() } else { range.as_str() };
            respond(s, "200 OK", "application/json", body);
            *k += 1;
        });
        let (from, to) = (t0.to_string(), (t0 + 19 * 15).to_string());
        let out = triage()
            .args(["analyze", "--prometheus", &url, "--prometheus-token-env", "PROM_TOKEN"])
            .args(["--from", &from, "--to", &to, "--step", "15s", "--max-series", "2", "--format", format])
            .env("PROM_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {}", text(&out));
        assert!(!text(&out).contains(&TOKEN[..12]), "{format}: {}", text(&out));
    }
}

/// Writes a close-delimited 200 answer: `head`, then `count` elements made by `element` (into a
/// reused buffer, written 1 MiB at a time), then `tail`.
fn stream_answer(s: &mut TcpStream, head: &str, count: u64, element: impl Fn(u64, &mut Vec<u8>), tail: &str) {
    let _ = write!(s, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{head}");
    let mut buf = Vec::with_capacity(2 << 20);
    for k in 0..count {
        if k > 0 {
            buf.push(b',');
        }
        element(k, &mut buf);
        if buf.len() >= 1 << 20 {
            if s.write_all(&buf).is_err() {
                return;
            }
            buf.clear();
        }
    }
    buf.extend_from_slice(tail.as_bytes());
    let _ = s.write_all(&buf);
}

/// Eight decimal digits of `n`, without `format!` (the server must outrun the client).
fn digits(n: u64, buf: &mut Vec<u8>) {
    for p in (0..8).rev() {
        buf.push(b'0' + (n / 10u64.pow(p) % 10) as u8);
    }
}

/// Runs `triage` to its end; its exit code, output, peak resident memory in MiB (see
/// [`wait_with_peak_rss`]) and how long it took.
fn run_measured(args: &[&str]) -> (Option<i32>, String, u64, Duration) {
    let dir = std::env::temp_dir().join(format!("triage-rss-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (dir.join("out"), dir.join("err"));
    let started = Instant::now();
    let mut child = triage()
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let (status, peak_mib) = wait_with_peak_rss(&mut child);
    let elapsed = started.elapsed();
    let text = std::fs::read_to_string(&out).unwrap_or_default()
        + &std::fs::read_to_string(&err).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (status.code(), text, peak_mib, elapsed)
}

const ONE_SERIES: &str =
    r#"{"status":"success","data":[{"__name__":"vllm:num_requests_running","instance":"a:8000"}]}"#;
const NO_SERIES: &str = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
const MATRIX_HEAD: &str = r#"{"status":"success","data":{"resultType":"matrix","result":["#;

/// Answers within `--max-body-mib` (the default 256) that once took gigabytes — seven million
/// label sets, ten million empty series, 26 million points — are read in bounded memory: the
/// answer streams through core's reader, which keeps only what the bounds allow.
#[test]
fn answers_within_the_body_bound_are_read_in_bounded_memory() {
    // `/api/v1/series`: 7.3 M tiny label sets (63 MiB); each instance its own, scrambled.
    let url = serve_paths(4, |head, s| {
        if head.contains("/api/v1/series") {
            stream_answer(
                s,
                r#"{"status":"success","data":["#,
                7_300_000,
                |k, b| {
                    b.extend_from_slice(br#"{"instance":""#);
                    digits(k * 7919 % 7_300_000, b);
                    b.extend_from_slice(br#""}"#);
                },
                "]}",
            );
        } else {
            respond(s, "200 OK", "application/json", NO_SERIES);
        }
    });
    let (code, out, rss, took) = run_measured(&[
        "analyze",
        "--prometheus",
        &url,
        "--prometheus-query-timeout",
        "300s",
        "--prometheus-timeout",
        "600s",
    ]);
    eprintln!("series: {rss} MiB peak, {took:?}");
    assert!(rss < 512, "{rss} MiB: {out}");
    // Once refused as "larger than 64 MiB (--max-body-mib)" whatever the flag said.
    assert!(!out.contains("larger than"), "{out}");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no series in the window"), "{out}");

    // A raw range vector of 9.4 M empty series (250 MiB), labels scrambled so every one is
    // compared with those kept.
    let url = serve_paths(4, |head, s| {
        if head.contains("/api/v1/series") {
            respond(s, "200 OK", "application/json", ONE_SERIES);
        } else if head.contains("/api/v1/query ") {
            stream_answer(
                s,
                MATRIX_HEAD,
                9_400_000,
                |k, b| {
                    b.extend_from_slice(br#"{"metric":{"i":""#);
                    digits(k * 7919 % 9_400_000, b);
                    b.extend_from_slice(br#""}}"#);
                },
                "]}}",
            );
        } else {
            respond(s, "200 OK", "application/json", NO_SERIES);
        }
    });
    let (code, out, rss, took) = run_measured(&[
        "analyze",
        "--prometheus",
        &url,
        "--prometheus-query-timeout",
        "300s",
        "--prometheus-timeout",
        "600s",
    ]);
    eprintln!("empty series: {rss} MiB peak, {took:?}");
    assert!(rss < 512, "{rss} MiB: {out}");
    assert!(!out.contains("larger than"), "{out}");
    assert_eq!(code, Some(1), "{out}");

    // 26 M points in 13 series (208 MiB): --max-points holds while the answer is read.
    let url = serve_paths(4, |head, s| {
        if head.contains("/api/v1/series") {
            respond(s, "200 OK", "application/json", ONE_SERIES);
        } else if head.contains("/api/v1/query_range") {
            stream_answer(
                s,
                MATRIX_HEAD,
                13,
                |k, b| {
                    b.extend_from_slice(
                        br#"{"metric":{"__name__":"vllm:num_requests_running","instance":"a:8000","k":""#,
                    );
                    digits(k, b);
                    b.extend_from_slice(br#""},"values":["#);
                    for t in 0..2_000_000u64 {
                        b.extend_from_slice(if t == 0 { b"[1,\"1\"]" } else { b",[1,\"1\"]" });
                    }
                    b.extend_from_slice(b"]}");
                },
                "]}}",
            );
        } else {
            respond(s, "200 OK", "application/json", NO_SERIES);
        }
    });
    let (code, out, rss, took) = run_measured(&[
        "analyze",
        "--prometheus",
        &url,
        "--format",
        "json",
        "--prometheus-query-timeout",
        "300s",
        "--prometheus-timeout",
        "600s",
    ]);
    eprintln!("points: {rss} MiB peak, {took:?}");
    assert!(rss < 512, "{rss} MiB: {out}");
    assert!(out.contains("24000000 points dropped: at most 2000000 are read"), "{code:?} {out}");
}

/// The deadline covers the reading of the answer: a fast server whose 250 MiB answer takes
/// longer to read than `--prometheus-query-timeout` ends at the deadline, and the message says
/// the time ran out in this tool's reading, not at the server.
#[test]
fn the_deadline_covers_reading_and_says_whose_time_ran_out() {
    let url = serve_paths(2, |head, s| {
        if head.contains("/api/v1/series") {
            respond(s, "200 OK", "application/json", ONE_SERIES);
        } else {
            // The same bytes over and over: written as fast as the client takes them.
            let element = br#"{"metric":{"i":"x"},"values":[[1,"1"],[2,"2"],[3,"3"],[4,"4"]]},"#;
            let chunk: Vec<u8> = element.repeat((1 << 20) / element.len());
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{MATRIX_HEAD}"
            );
            for _ in 0..250 {
                if s.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
    });
    let started = Instant::now();
    let out = analyze(&url, &["--prometheus-query-timeout", "1s"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("the time ran out in this tool's reading of it, not at the server"),
        "{}",
        text(&out)
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// Like `serve`, the request's first line handed to `answer`; answers up to `max` connections
/// within two minutes, one at a time.
fn serve_paths(max: usize, answer: impl Fn(&str, &mut TcpStream) + Send + 'static) -> String {
    let (port, _) = util::serve(max, Duration::from_secs(120), Duration::from_secs(30), move |head, s| {
        answer(head.lines().next().unwrap_or(""), s)
    });
    format!("http://127.0.0.1:{port}")
}

/// A gzip body nobody asked for is named as such, without its bytes; a series answer past
/// `--max-body-mib` names the bound the flag set.
#[test]
fn compressed_and_oversized_answers_are_named_with_the_bound_used() {
    let url = serve_paths(1, |_, s| {
        let gz =
            [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0xae, 0x05, 0x00, 0x43, 0xbf];
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            gz.len()
        );
        let _ = s.write_all(&gz);
    });
    let out = analyze(&url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("gzip-compressed content"), "{}", text(&out));
    assert!(
        !text(&out).contains("not a Prometheus server") && !text(&out).contains("\\u{1f}"),
        "{}",
        text(&out)
    );

    let url = serve_paths(1, |_, s| {
        stream_answer(
            s,
            r#"{"status":"success","data":["#,
            200_000,
            |_, b| b.extend_from_slice(br#"{"instance":"a"}"#),
            "]}",
        );
    });
    let out = analyze(&url, &["--max-body-mib", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("/api/v1/series: the answer is larger than 2 MiB (--max-body-mib)"),
        "{}",
        text(&out)
    );
}
