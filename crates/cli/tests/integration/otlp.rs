//! OTLP export: `triage probe --otlp FILE` against the scripted reference server, the file read
//! back with OpenTelemetry's own protobuf definitions (`tests/interop/otlp_check.py` in the
//! interop venv); `--otlp-endpoint URL` posting to a local receiver (a raw 127.0.0.1 server that
//! stops by itself), which must get both paths, bodies that parse, and neither the API key nor
//! a `--header` value; a receiver that refuses, hangs or is not there gives a classified error
//! within the deadline, after the probe's results are printed.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use triage_sim::{Fault, Record, Script, ScriptedServer, ServerConfig};

use crate::interop::{py, run_bounded};
use crate::util::{TempDir, free_port, json, serve, text, triage};

const KEY: &str = "sk-otlp-test-key-0123456789abcdef";
const HEADER_SECRET: &str = "hdr-secret-value-42";
const COLLECTOR_TOKEN: &str = "collector-token-7";

/// Six tokens, quickly; the fourth request the server gets is refused with a 503.
fn script(i: usize) -> Script {
    let fault = if i == 3 {
        Fault::Status {
            code: 503,
            content_type: "application/json".into(),
            body: r#"{"error":"overloaded"}"#.into(),
            retry_after: None,
        }
    } else {
        Fault::None
    };
    Script {
        ttft: Duration::from_millis(5),
        gaps: vec![Duration::from_millis(2)],
        tokens: 6,
        fault,
        ..Script::default()
    }
}

/// `triage probe SERVER -n 4 -c 2 --format json …args` against a scripted server, with an API
/// key and a secret `--header`; the output and what the server saw.
fn probe(args: &[&str]) -> (Output, Vec<Record>) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: 10, lifetime: Duration::from_secs(60) },
        ))
        .unwrap();
    let mut cmd: Command = triage();
    cmd.args(["probe", &server.base_url(), "--model", "m", "-n", "4", "-c", "2", "--format", "json"])
        .args(["--header", &format!("x-extra: {HEADER_SECRET}")])
        .args(args)
        .env("OPENAI_API_KEY", KEY);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let records = server.records();
    drop(server);
    (out, records)
}

/// Lines of OTLP/JSON: the metrics request and the trace requests, parsed.
fn lines(text: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let mut it = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let metrics = it.next().expect("a metrics line");
    assert!(metrics.get("resourceMetrics").is_some(), "{metrics}");
    let traces: Vec<_> = it.collect();
    assert!(traces.iter().all(|t| t.get("resourceSpans").is_some()));
    (metrics, traces)
}

fn spans(traces: &[serde_json::Value]) -> Vec<serde_json::Value> {
    traces
        .iter()
        .flat_map(|t| t["resourceSpans"].as_array().unwrap().clone())
        .flat_map(|rs| rs["scopeSpans"].as_array().unwrap().clone())
        .flat_map(|ss| ss["spans"].as_array().unwrap().clone())
        .collect()
}

/// The official definitions' verdict on `otlp` against the probe's report (`--format json`).
fn check_with_official_definitions(dir: &Path, otlp: &Path, out: &Output) -> serde_json::Value {
    let report = dir.join("report.json");
    std::fs::write(&report, &out.stdout).unwrap();
    let mut c = py("otlp_check.py");
    c.arg(otlp).arg(&report);
    let checked = run_bounded(c, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
    assert!(checked.status.success(), "the official definitions refused the export:\n{}", text(&checked));
    serde_json::from_slice(&checked.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&checked)))
}

/// Every (trace id, parent id) of the `traceparent`s the server saw.
fn sent_ids(seen: &[Record]) -> BTreeSet<(String, String)> {
    seen.iter()
        .map(|r| {
            let v: Vec<&str> = r.header("traceparent").expect("a traceparent").split('-').collect();
            (v[1].to_owned(), v[2].to_owned())
        })
        .collect()
}

#[test]
fn the_otlp_file_decodes_with_the_official_definitions_and_joins_the_servers_traces() {
    let dir = TempDir::new("otlp-file");
    let file = dir.path().join("run.otlp.jsonl");
    let (out, seen) = probe(&["--otlp", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let report = json(&out);
    assert_eq!(report["summary"]["failed"], 1, "{report}");
    let (_, traces) = lines(&std::fs::read_to_string(&file).unwrap());
    // Each span is the parent of the server's: its trace id and span id are the ones sent.
    let spans = spans(&traces);
    let exported: BTreeSet<(String, String)> = spans
        .iter()
        .map(|s| (s["traceId"].as_str().unwrap().to_owned(), s["spanId"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(exported, sent_ids(&seen));
    let verdict = check_with_official_definitions(dir.path(), &file, &out);
    assert_eq!(verdict["spans"], 4, "{verdict}");
    assert_eq!(verdict["errors"], 1, "{verdict}");
    assert_eq!(verdict["joined"], 4, "{verdict}");
    assert_eq!(verdict["metrics"].as_array().unwrap().len(), 4, "{verdict}");
}

/// A receiver on 127.0.0.1 answering `status` (or, with `hang`, nothing for 5 s), at most 8
/// requests within 30 s.
fn receiver(status: u16, hang: bool) -> (u16, std::sync::Arc<crate::util::Seen>) {
    serve(8, Duration::from_secs(30), Duration::from_secs(5), move |_, stream| {
        if hang {
            std::thread::sleep(Duration::from_secs(5));
            return;
        }
        let body = if status == 200 { "{}" } else { r#"{"code":13,"message":"collector on fire"}"# };
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

#[test]
fn the_endpoint_gets_both_paths_parseable_bodies_and_no_key() {
    let (port, seen) = receiver(200, false);
    let url = format!("http://127.0.0.1:{port}");
    let token = format!("x-collector-token: {COLLECTOR_TOKEN}");
    let (out, probed) = probe(&["--otlp-endpoint", &url, "--otlp-header", &token]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(probed.iter().all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}"))));
    assert!(text(&out).contains("exported the run to"), "{}", text(&out));
    let heads = seen.heads.lock().unwrap().clone();
    let bodies = seen.bodies.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(heads[0].starts_with("POST /v1/metrics HTTP/1.1\r\n"), "{}", heads[0]);
    assert!(heads[1].starts_with("POST /v1/traces HTTP/1.1\r\n"), "{}", heads[1]);
    for (head, body) in heads.iter().zip(&bodies) {
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("content-type: application/json\r\n"), "{head}");
        assert!(lower.contains(&format!("x-collector-token: {COLLECTOR_TOKEN}")), "{head}");
        assert!(!lower.contains("authorization") && !lower.contains("x-extra"), "{head}");
        let all = format!("{head}{}", String::from_utf8_lossy(body));
        assert!(!all.contains(KEY) && !all.contains(HEADER_SECRET), "a secret reached the receiver: {all}");
    }
    // The bodies are the file's lines: the official definitions read them the same way.
    let dir = TempDir::new("otlp-endpoint");
    let file = dir.path().join("posted.otlp.jsonl");
    let mut posted = Vec::new();
    for b in &bodies {
        posted.extend_from_slice(b);
        posted.push(b'\n');
    }
    std::fs::write(&file, posted).unwrap();
    let verdict = check_with_official_definitions(dir.path(), &file, &out);
    assert_eq!(verdict["spans"], 4, "{verdict}");
    // The collector's token is a secret of the run too: never printed.
    assert!(!text(&out).contains(COLLECTOR_TOKEN), "{}", text(&out));
}

#[test]
fn a_receiver_that_fails_is_a_classified_error_within_the_deadline_and_loses_nothing() {
    let refused = free_port();
    let (failing, _) = receiver(500, false);
    let (hanging, hung) = receiver(200, true);
    for (port, kind, needs) in [
        (failing, "server_error", "HTTP 500"),
        (hanging, "timeout_before_headers", "--otlp-timeout"),
        (refused, "connection_refused", "nothing was exported"),
    ] {
        let dir = TempDir::new(&format!("otlp-fail-{kind}"));
        let file = dir.path().join("kept.otlp.jsonl");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let (out, _) =
            probe(&["--otlp-endpoint", &url, "--otlp-timeout", "700ms", "--otlp", file.to_str().unwrap()]);
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {}", text(&out));
        assert!(
            stderr.contains(&format!("the export failed ({kind})")) && stderr.contains(needs),
            "{kind}: {stderr}"
        );
        assert!(took < Duration::from_secs(4), "{kind}: took {took:?}, the deadline is 700 ms");
        // Nothing lost: the results are printed whole and the file is written.
        let report = json(&out);
        assert_eq!(report["requests"].as_array().unwrap().len(), 4, "{kind}");
        assert_eq!(spans(&lines(&std::fs::read_to_string(&file).unwrap()).1).len(), 4, "{kind}");
        assert!(!stderr.contains(KEY) && !stderr.contains(HEADER_SECRET), "{stderr}");
    }
    assert_eq!(
        hung.heads.lock().unwrap().len(),
        1,
        "the hanging receiver got the metrics request, then the run gave up"
    );
}

#[test]
fn a_bad_otlp_endpoint_or_file_is_a_usage_error_before_anything_is_sent() {
    for args in [
        &["--otlp-endpoint", "grpc://collector:4317"][..],
        &["--otlp-endpoint", "http://user:pw@collector:4318"][..],
        &["--otlp", "/nonexistent-dir/run.otlp.jsonl"][..],
        &["--otlp-endpoint", "http://127.0.0.1:9", "--otlp-header", "bad name: x"][..],
        &["--otlp-header", "x-token: t"][..],
    ] {
        let (out, seen) = probe(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(seen.is_empty(), "{args:?}: the probe ran");
        assert!(!text(&out).contains("pw@"), "{}", text(&out));
    }
}
