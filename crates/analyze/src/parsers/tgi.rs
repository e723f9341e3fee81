//! Text Generation Inference router logs, text and JSON (`--json-output`): the per-request span
//! fields `total_time`, `validation_time`, `queue_time`, `inference_time`, `time_per_token`,
//! and the errors (`Request failed during generation`, `Model is overloaded`, `Input validation
//! error`, shard failures).
//!
//! TGI records each field as Rust's `Debug` of a `Duration`, so units vary line by line
//! (`2.103845123s`, `1.2ms`, `300.12µs`, `52ns`); everything is converted to milliseconds.
//! The fields may come before the message (`generate{… total_time="2.1s" …}: … Success`, the
//! text format) or after it, or inside `"span":{…}` (JSON); they are found by name.
//!
//! **`time_per_token` is not TPOT.** The router computes it as `inference_time / generated
//! tokens`, and `inference_time` runs from the moment the request joined a batch — prefill
//! included. For short outputs it is dominated by prefill; it is kept as
//! `time_per_token_ms` and never reported as TPOT or ITL.

use super::{Cx, SectionParser};
use crate::facts::push_bounded;
pub use crate::facts::tgi::TgiFacts;
use crate::text::leading_number;

const MAX_LINES: usize = 8;

/// A `Debug`-formatted `Duration` (`2.1s`, `1.2ms`, `300µs`, `300us`, `52ns`) in milliseconds.
pub(crate) fn duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let x = leading_number(s)?;
    let num_len =
        s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(s.len());
    let unit = s[num_len..].trim();
    let scale = match unit {
        "s" => 1e3,
        "ms" => 1.0,
        // U+00B5 MICRO SIGN (what Rust prints) and U+03BC GREEK SMALL LETTER MU.
        "µs" | "μs" | "us" => 1e-3,
        "ns" => 1e-6,
        "m" | "min" => 60e3,
        _ => return None,
    };
    Some(x * scale).filter(|v| v.is_finite() && *v >= 0.0)
}

/// The value of a span field: `key="v"` (text) or `"key":"v"` / `"key": "v"` (JSON).
pub(crate) fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    for pat in [format!("{key}=\""), format!("\"{key}\":\""), format!("\"{key}\": \"")] {
        let mut from = 0;
        while let Some(i) = line[from..].find(&pat) {
            let start = from + i;
            from = start + pat.len();
            let b = line.as_bytes();
            // Not the tail of a longer name (`queue_time` inside `x_queue_time`).
            if !pat.starts_with('"')
                && start > 0
                && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_')
            {
                continue;
            }
            let rest = &line[from..];
            return Some(&rest[..rest.find('"').unwrap_or(rest.len())]);
        }
    }
    None
}

/// Does the line carry an ERROR or WARN level (text or JSON)?
fn level_error(line: &str) -> bool {
    line.contains(" ERROR ")
        || line.contains(" WARN ")
        || line.contains("\"level\":\"ERROR\"")
        || line.contains("\"level\":\"WARN\"")
        || line.trim_start().starts_with("ERROR ")
}

/// Distinct error messages remembered per section.
const MAX_SEEN: usize = 32;

/// What an error line says, without its time and span: TGI repeats the same error for every
/// request in flight, and eight quotes of `Model is overloaded` prove less than eight different
/// errors.
fn error_key(line: &str) -> String {
    let msg = field(line, "message").unwrap_or_else(|| {
        // `… router/src/infer/mod.rs:126: Request failed …`
        match line.rfind(".rs:") {
            Some(i) => line[i..].split_once(": ").map_or(line, |(_, m)| m),
            None => line.get(27..).unwrap_or(line),
        }
    });
    msg.chars().take(80).collect()
}

/// Reads TGI logs: the router's request lines, as text or JSON, and its errors.
#[derive(Default)]
pub struct TgiParser {
    /// Error messages already quoted in this section.
    seen: Vec<String>,
}

impl SectionParser for TgiParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        // TGI's own lines start with an RFC 3339 time and a level; keep them even when they
        // mention another engine (shard logs print `vllm`/`flashinfer` module names).
        let t = line.trim_start().as_bytes();
        let stamped = t.len() > 11
            && t[..4].iter().all(u8::is_ascii_digit)
            && t[4] == b'-'
            && t[7] == b'-'
            && t[10] == b'T';
        let levelled = [" INFO ", " WARN ", " ERROR ", " DEBUG ", " TRACE "].iter().any(|l| line.contains(l));
        stamped && levelled && !line.contains("CUDA out of memory") && !line.contains("OutOfMemoryError")
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        if let Some(total) = field(line, "total_time") {
            let Some(total_ms) = duration_ms(total) else {
                cx.issue_in(
                    no,
                    format!("total_time {total:?} is not a duration"),
                    format!("total_time {total:?} 不是时长"),
                );
                return;
            };
            let t = &mut cx.facts.tgi;
            t.requests += 1;
            t.total_ms.insert(total_ms);
            for (key, sketch) in [
                ("validation_time", &mut t.validation_ms),
                ("queue_time", &mut t.queue_ms),
                ("inference_time", &mut t.inference_ms),
                ("time_per_token", &mut t.time_per_token_ms),
            ] {
                if let Some(ms) = field(line, key).and_then(duration_ms) {
                    sketch.insert(ms);
                }
            }
            if t.slowest_total_ms.is_none_or(|s| total_ms > s) {
                let e = cx.evidence(no, line);
                let t = &mut cx.facts.tgi;
                t.slowest_total_ms = Some(total_ms);
                t.slowest = Some(e);
            }
            return;
        }
        let failed =
            line.contains("Request failed during generation") || line.contains("Incomplete generation");
        let overloaded = line.contains("Model is overloaded");
        let invalid = line.contains("Input validation error");
        if failed || overloaded || invalid || level_error(line) {
            let t = &mut cx.facts.tgi;
            t.failures += u64::from(failed);
            t.overloaded += u64::from(overloaded);
            t.validation_errors += u64::from(invalid);
            t.error_lines += 1;
            let key = error_key(line);
            if !self.seen.contains(&key) {
                if self.seen.len() < MAX_SEEN {
                    self.seen.push(key);
                }
                let e = cx.evidence(no, line);
                push_bounded(&mut cx.facts.tgi.errors, e, MAX_LINES);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::InputKind;
    use crate::testutil::{fixture, run};

    const TEXT: &str = fixture!("tgi/router.log");
    const JSON: &str = fixture!("tgi/router_json.log");

    #[test]
    fn durations() {
        assert_eq!(duration_ms("2.1s"), Some(2100.0));
        assert_eq!(duration_ms("1.2ms"), Some(1.2));
        assert!((duration_ms("300µs").unwrap() - 0.3).abs() < 1e-12);
        assert!((duration_ms("300μs").unwrap() - 0.3).abs() < 1e-12);
        assert!((duration_ms("300us").unwrap() - 0.3).abs() < 1e-12);
        assert!((duration_ms("52ns").unwrap() - 52e-6).abs() < 1e-15);
        assert_eq!(duration_ms("2.1"), None);
        assert_eq!(duration_ms("None"), None);
        assert_eq!(duration_ms(""), None);
    }

    #[test]
    fn text_router_log() {
        let (f, sections) = run("tgi.log", TEXT).take(|f| f.tgi);
        let kinds: Vec<_> = sections.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [InputKind::TgiLog], "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.requests, 4);
        assert!((f.total_ms.max().unwrap() - 7610.0).abs() < 1e-6);
        assert!((f.queue_ms.max().unwrap() - 5400.0).abs() < 1e-6);
        assert!((f.time_per_token_ms.min().unwrap() - 40.0).abs() < 1e-6);
        assert_eq!(f.validation_ms.count(), 4);
        assert_eq!(f.slowest.as_ref().unwrap().line, 6);
        assert_eq!((f.failures, f.overloaded, f.validation_errors), (1, 2, 1));
        assert_eq!(f.error_lines, 5);
        // The second `Model is overloaded` is counted, not quoted again.
        assert_eq!(f.errors.len(), 4, "{:?}", f.errors);
    }

    #[test]
    fn json_router_log() {
        let (f, sections) = run("tgi.log", JSON).take(|f| f.tgi);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert_eq!(sections[0].kind, InputKind::TgiLog);
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.requests, 3);
        assert!((f.queue_ms.max().unwrap() - 2400.0).abs() < 1e-6);
        assert!((f.inference_ms.min().unwrap() - 900.0).abs() < 1e-6);
        assert_eq!(f.overloaded, 1);
        assert_eq!(f.error_lines, 1);
    }

    #[test]
    fn bad_durations_are_issues() {
        let (f, sections) = run("tgi.log", 
            "2026-11-29T10:00:00Z  INFO text_generation_router::server: Success total_time=\"soon\" queue_time=\"1s\"\n",
        ).take(|f| f.tgi);
        assert_eq!(f.requests, 0);
        assert_eq!(sections[0].issues.len(), 1);
        assert_eq!(field("x_queue_time=\"1s\" queue_time=\"2s\"", "queue_time"), Some("2s"));
    }
}
