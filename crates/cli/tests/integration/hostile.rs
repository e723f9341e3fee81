//! `triage` against hostile servers and hostile inputs: nothing leaks, nothing hangs, nothing
//! grows without bound, and every mistake in how it was called exits 2.
//!
//! Each server here is a thread on 127.0.0.1 that answers a bounded number of connections with
//! raw bytes a test chose, and stops by itself after a few seconds.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::util::{self, Seen, json, temp_dir, text, triage};

const KEY: &str = "sk-hostile-secret-0123456789abcdef";
const HEADER_SECRET: &str = "hdr-secret-9876543210";

/// A server answering every connection with `answer(stream)` after reading the request head
/// (and a body of `Content-Length`), for at most `max` connections or 10 seconds.
fn serve(max: usize, answer: impl Fn(&mut TcpStream) + Send + 'static) -> (String, Arc<Seen>) {
    let (port, seen) =
        util::serve(max, Duration::from_secs(10), Duration::from_secs(5), move |_, s| answer(s));
    (format!("http://127.0.0.1:{port}/v1"), seen)
}

fn respond(status: &str, headers: &[(&str, &str)], body: &[u8]) -> impl Fn(&mut TcpStream) + Send + 'static {
    let mut bytes = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        bytes.push_str(&format!("{k}: {v}\r\n"));
    }
    bytes.push_str("\r\n");
    let mut bytes = bytes.into_bytes();
    bytes.extend_from_slice(body);
    move |s: &mut TcpStream| {
        let _ = s.write_all(&bytes);
    }
}

/// An SSE answer with the given events.
fn sse(body: &[u8]) -> impl Fn(&mut TcpStream) + Send + 'static {
    respond("200 OK", &[("Content-Type", "text/event-stream")], body)
}

fn probe(url: &str, extra: &[&str]) -> Output {
    triage()
        .args(["probe", url, "--model", "m", "--timeout", "5s", "--format", "json"])
        .args(extra)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap()
}

/// No prefix of `secret` of four or more characters appears in `s`.
fn assert_no_part_of(s: &str, secret: &str) {
    for n in 4..=secret.len() {
        assert!(!s.contains(&secret[..n]), "{:?} leaked in:\n{s}", &secret[..n]);
    }
}

// ---------------------------------------------------------------------------------------------
// Secrets

#[test]
fn a_redirect_is_a_fault_and_carries_nothing_elsewhere() {
    let (elsewhere, other) = serve(5, sse(b"data: [DONE]\n\n"));
    for status in ["301 Moved Permanently", "302 Found", "307 Temporary Redirect", "308 Permanent Redirect"] {
        let location = format!("{elsewhere}/chat/completions?api_key={KEY}");
        let (url, _) = serve(1, respond(status, &[("Location", &location)], b""));
        let out = probe(&url, &["--header", &format!("X-Custom: {HEADER_SECRET}")]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let v = json(&out);
        let r = &v["requests"][0];
        assert_eq!(r["error"]["kind"], "redirect", "{status}: {r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&elsewhere), "the Location is named: {msg}");
        assert!(v["url"].as_str().unwrap().starts_with(&url), "the report names the URL that answered");
        assert_no_part_of(&text(&out), KEY);
        assert_no_part_of(&text(&out), HEADER_SECRET);
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(other.connections.load(Ordering::SeqCst), 0, "nothing was sent to the redirect target");
}

#[test]
fn keys_are_redacted_before_any_cut() {
    for pad in [150, 185, 195, 199, 200, 210] {
        let body = format!("{}{KEY} {HEADER_SECRET}", "e".repeat(pad));
        let (url, _) =
            serve(1, respond("500 Internal Server Error", &[("Retry-After", KEY)], body.as_bytes()));
        let out = probe(&url, &["--header", &format!("X-Custom: {HEADER_SECRET}")]);
        let all = text(&out);
        assert!(all.contains("server_error"), "{all}");
        assert_no_part_of(&all, KEY);
        assert_no_part_of(&all, HEADER_SECRET);
    }
    // A server echoing the key in Retry-After on a 429, and in an HTML title.
    let title = format!("<html><title>welcome {KEY}</title></html>");
    let (url, _) = serve(
        1,
        respond("429 Too Many Requests", &[("Retry-After", &format!("{KEY}{KEY}"))], title.as_bytes()),
    );
    let out = probe(&url, &[]);
    let v = json(&out);
    assert_eq!(v["requests"][0]["error"]["kind"], "rate_limited");
    assert_no_part_of(&text(&out), KEY);
    // Echoed inside a 2xx body that is not SSE, with the key straddling the 512-byte prefix.
    let body = format!("{}{KEY}", "x".repeat(500));
    let (url, _) = serve(1, respond("200 OK", &[("Content-Type", "application/json")], body.as_bytes()));
    let out = probe(&url, &[]);
    assert_eq!(json(&out)["requests"][0]["error"]["kind"], "not_sse");
    assert_no_part_of(&text(&out), KEY);
}

// ---------------------------------------------------------------------------------------------
// Terminal safety

const NASTY: &str = "\x1b]0;pwned\x07\x1b[2J\x08\u{9b}31mred\u{202e}";

fn assert_terminal_safe(bytes: &[u8]) {
    let s = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = s.chars().filter(|&c| triage_core::safe::is_unsafe_char(c)).collect();
    assert!(bad.is_empty(), "raw control characters {bad:?} in:\n{s}");
}

#[test]
fn server_text_reaches_the_terminal_escaped() {
    let body = format!("boom {NASTY}");
    for format in ["text", "json"] {
        let (url, _) = serve(1, respond("500 Internal Server Error", &[], body.as_bytes()));
        let out = triage()
            .args(["probe", &url, "--model", "m", "--timeout", "5s", "--format", format])
            .output()
            .unwrap();
        assert_terminal_safe(&out.stdout);
        assert_terminal_safe(&out.stderr);
        if format == "text" {
            assert!(String::from_utf8_lossy(&out.stdout).contains("\\x1b]0;pwned\\x07"), "{}", text(&out));
        } else {
            // The JSON value still holds the exact characters.
            let msg = json(&out)["requests"][0]["error"]["message"].as_str().unwrap().to_owned();
            assert!(msg.contains(NASTY), "{msg:?}");
        }
    }
    // In-stream error text and a finish reason chosen by the server.
    let events = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"hi\"}},\"finish_reason\":\"{}\"}}]}}\n\ndata: {{\"error\":{{\"message\":\"{}\"}}}}\n\n",
        "\\u001b[2Jx", "\\u0007\\u009b1m"
    );
    let (url, _) = serve(1, sse(events.as_bytes()));
    let out = triage().args(["probe", &url, "--model", "m", "--timeout", "5s"]).output().unwrap();
    assert_terminal_safe(&out.stdout);
}

#[test]
fn analyze_quotes_log_lines_escaped() {
    let dir = temp_dir("analyze-escape");
    let log = dir.join("engine.log");
    std::fs::write(
        &log,
        format!("ERROR 05-01 10:00:00 engine.py:1] torch.OutOfMemoryError: CUDA out of memory. {NASTY}\n"),
    )
    .unwrap();
    for format in ["text", "markdown", "json"] {
        let out = triage().args(["analyze", "--format", format]).arg(&log).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert_terminal_safe(&out.stdout);
    }
}

#[test]
fn a_compressed_stream_is_named_and_identity_is_asked_for() {
    let gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+I-.\x01\x00\x0c~\x7f\xd8\x04\x00\x00\x00";
    let (url, seen) = serve(
        1,
        respond("200 OK", &[("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")], gz),
    );
    let out = probe(&url, &[]);
    assert_eq!(json(&out)["requests"][0]["error"]["kind"], "compressed_body", "{}", text(&out));
    let head = seen.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.contains("accept-encoding: identity"), "{head}");
}

// ---------------------------------------------------------------------------------------------
// Bounded

/// A server that streams token events as fast as the socket takes them, forever (until the
/// client goes away or 8 seconds pass).
fn endless(s: &mut TcpStream) {
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
    let event = b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".repeat(256);
    let stop = Instant::now() + Duration::from_secs(8);
    while Instant::now() < stop {
        if s.write_all(&event).is_err() {
            return;
        }
    }
}

#[test]
fn an_endless_stream_ends_at_the_timeout_with_a_bounded_record() {
    let (url, _) = serve(1, endless);
    let started = Instant::now();
    let out = triage()
        .args(["probe", &url, "--model", "m", "--timeout", "1500ms", "--format", "json"])
        .output()
        .unwrap();
    let took = started.elapsed();
    // A real deadline: the endless server writes for 8 s, so a bound of 6 s (process start and a
    // loaded 2-core machine included) still fails a probe that ignored its timeout.
    assert!(took < Duration::from_secs(6), "the 1.5 s timeout ended the run after {took:?}");
    let v = json(&out);
    let r = &v["requests"][0];
    assert_eq!(
        r["error"]["kind"],
        "timeout_mid_stream",
        "{}",
        text(&out)[..2000.min(text(&out).len())].to_owned()
    );
    let gaps = r["gaps_ms"].as_array().unwrap().len();
    // The whole JSON report stays small whatever the event rate (each gap ≤ ~10 bytes).
    assert!(out.stdout.len() < 2 << 20, "{} bytes of JSON", out.stdout.len());
    // 1.5 s of a loopback stream is far more than 65,536 events: the record says what it left out.
    assert_eq!(gaps, 65_535);
    assert!(r["tokens_beyond_cap"].as_u64().unwrap() > 0, "{r}");
    assert!(r["gaps_beyond_cap"]["n"].as_u64().unwrap() > 0, "{r}");
}

// ---------------------------------------------------------------------------------------------
// Honest outcomes

#[test]
fn a_stream_without_tokens_is_not_a_success() {
    let (url, _) = serve(1, sse(b"data: [DONE]\n\n"));
    let out = probe(&url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = &json(&out)["requests"][0];
    assert_eq!((r["ok"].as_bool(), r["error"]["kind"].as_str()), (Some(false), Some("no_tokens")));

    // One 3 MiB line, cut at the parser's 1 MiB limit: flagged in the record and the text.
    let mut body = b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec();
    body.extend(std::iter::repeat_n(b'a', 3 << 20));
    body.extend_from_slice(b"\"}}]}\n\ndata: [DONE]\n\n");
    let (url, _) = serve(2, sse(&body));
    let out = probe(&url, &[]);
    let r = &json(&out)["requests"][0];
    assert_eq!(r["ok"], false);
    assert_eq!(r["cut_events"], 1, "{r}");
    let out = triage().args(["probe", &url, "--model", "m", "--timeout", "5s"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("cut events: 1 event"), "{}", text(&out));
}

#[test]
fn an_unwritable_out_is_found_before_anything_is_sent() {
    let (url, seen) = serve(1, sse(b"data: [DONE]\n\n"));
    let out = triage()
        .args(["probe", &url, "--model", "m", "--out", "/nonexistent-dir/requests.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--out /nonexistent-dir/requests.jsonl"), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 0);
}

#[test]
fn analyze_reads_fifos_and_names_directories() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if made {
        let path = fifo.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            let _ = f.write_all(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
        });
        let out = triage().args(["analyze", "--format", "json"]).arg(&fifo).output().unwrap();
        // Should `triage` not have opened the FIFO, open it here so the writer is not stuck.
        use std::os::unix::fs::OpenOptionsExt;
        let _unblock = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
        writer.join().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(json(&out)["schema"], "triage.report/v1");
    }
    let out = triage().arg("analyze").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("is a directory"), "{}", text(&out));
    let out = triage().arg("analyze").arg(dir.join("missing.log")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no such file"), "{}", text(&out));
}

// ---------------------------------------------------------------------------------------------
// Usage errors exit 2

#[test]
fn usage_errors_exit_2() {
    let dir = temp_dir("usage");
    let binary = dir.join("config.bin");
    std::fs::write(&binary, b"\x00\xff\xfe{\"a\":1}\x89PNG").unwrap();
    let u = "http://127.0.0.1:9/v1";
    let cases: Vec<Vec<String>> = vec![
        vec!["probe", u, "--model", "m", "--header", "X-A: b\r\nX-Injected: 1"],
        vec!["probe", u, "--model", "m", "--header", "Bad Name: x"],
        vec!["probe", u, "--model", "m", "--api-key-env", "TRIAGE_TEST_UNSET_VARIABLE"],
        vec!["probe", "http://[::1/v1", "--model", "m"],
        vec!["probe", "http://::1:8000/v1", "--model", "m"],
        vec!["probe", "http://127.0.0.1:99999/v1", "--model", "m"],
        vec!["probe", u, "--model", "m", "--rate", "NaN"],
        vec!["probe", u, "--model", "m", "--rate", "0"],
        vec!["probe", u, "--model", "m", "--rate", "-1"],
        vec!["probe", u, "--model", "m", "--rate", "inf"],
        vec!["probe", u, "--model", "m", "--stall-factor", "NaN"],
        vec!["probe", u, "--model", "m", "--stall-factor", "0"],
        vec!["probe", u, "--model", "m", "--prompt-tokens", "100000000"],
        vec!["probe", u, "--model", "m", "--max-tokens", "0"],
        vec!["kv", "--config", "/nonexistent/config.json"],
        vec!["kv", "--config", binary.to_str().unwrap()],
        vec!["kv", "--config", dir.to_str().unwrap()],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(str::to_owned).collect())
    .collect();
    for args in cases {
        let out = triage().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("error"), "{args:?}: {}", text(&out));
        assert!(text(&out).lines().count() < 12, "{args:?}: one clear message:\n{}", text(&out));
    }
}
