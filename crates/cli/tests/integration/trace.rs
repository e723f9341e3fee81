//! Trace joins: every probe request carries a W3C `traceparent` the server sees, and its record
//! the same trace id; `--no-traceparent` sends none; the user's own `--header traceparent:` is
//! sent as given and its trace id recorded.

use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use triage_sim::{Record, Script, ScriptedServer, ServerConfig};

use crate::util::{json, text, triage};

const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn script(_: usize) -> Script {
    Script { ttft: Duration::from_millis(5), tokens: 3, ..Script::default() }
}

/// Run `triage probe URL …args` against a scripted server; the output and what the server saw.
fn probe(url: impl Fn(&str) -> String, args: &[&str]) -> (Output, Vec<Record>) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: 20, lifetime: Duration::from_secs(30) },
        ))
        .unwrap();
    let mut cmd: Command = triage();
    cmd.args(["probe", &url(&server.base_url()), "--model", "m"]).args(args);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let records = server.records();
    drop(server);
    (out, records)
}

/// The trace id of a well-formed `traceparent` as this probe sends it: `00-<32>-<16>-01`.
fn trace_id_of(v: &str) -> String {
    let parts: Vec<&str> = v.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    assert!(parts.len() == 4 && parts[0] == "00" && parts[3] == "01", "{v}");
    assert!(hex(parts[1], 32) && hex(parts[2], 16), "{v}");
    assert!(parts[1].bytes().any(|b| b != b'0') && parts[2].bytes().any(|b| b != b'0'), "{v}");
    parts[1].to_owned()
}

fn recorded(out: &Output) -> Vec<Option<String>> {
    json(out)["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.get("trace_id").map(|t| t.as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn each_request_carries_a_fresh_traceparent_and_its_record_the_trace_id() {
    // Both transports: the kernel-stamped one (plain http://) and reqwest (credentials in the URL).
    for url in [str::to_owned as fn(&str) -> String, |u: &str| u.replacen("http://", "http://u:p@", 1)] {
        let (out, seen) = probe(url, &["-n", "4", "-c", "2", "--format", "json"]);
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(seen.len(), 4);
        let sent: BTreeSet<String> =
            seen.iter().map(|r| trace_id_of(r.header("traceparent").expect("a traceparent"))).collect();
        assert_eq!(sent.len(), 4, "a fresh trace id per request: {sent:?}");
        let kept: BTreeSet<String> = recorded(&out).into_iter().map(|t| t.expect("a trace id")).collect();
        assert_eq!(kept, sent);
    }
    // The text report lists the slowest requests with their trace ids.
    let (out, seen) = probe(str::to_owned, &["-n", "2"]);
    let t = text(&out);
    assert!(t.contains("slowest requests by TTFT"), "{t}");
    for r in &seen {
        let id = trace_id_of(r.header("traceparent").unwrap());
        assert!(t.contains(&format!("trace {id}")), "{id} not in {t}");
    }
}

#[test]
fn no_traceparent_sends_none_and_records_none() {
    let (out, seen) = probe(str::to_owned, &["-n", "2", "--no-traceparent", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|r| r.header("traceparent").is_none()), "{seen:?}");
    assert_eq!(recorded(&out), [None, None]);
}

#[test]
fn the_users_traceparent_wins() {
    let header = format!("TraceParent: {GIVEN}");
    let (out, seen) = probe(str::to_owned, &["-n", "2", "--header", &header, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    for r in &seen {
        let all: Vec<_> = r.headers.iter().filter(|(k, _)| k == "traceparent").collect();
        assert_eq!(all.len(), 1, "one traceparent, the user's: {all:?}");
        assert_eq!(all[0].1, GIVEN);
    }
    let id = Some(GIVEN[3..35].to_owned());
    assert_eq!(recorded(&out), [id.clone(), id]);
    // One that is not valid goes out as given; no trace id is made up for it.
    let (out, seen) = probe(str::to_owned, &["--header", "traceparent: my-own-id", "--format", "json"]);
    assert_eq!(seen[0].header("traceparent"), Some("my-own-id"));
    assert_eq!(recorded(&out), [None]);
    let warnings = json(&out)["warnings"].to_string();
    assert!(warnings.contains("not a valid W3C traceparent"), "{warnings}");
}
