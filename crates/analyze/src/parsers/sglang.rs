//! SGLang server logs: prefill and decode batch lines, KV cache allocation, retractions (SGLang's
//! preemption), server arguments, errors and the API server's access lines.
//!
//! Lines look like `[2026-11-29 10:00:00 DP0 TP0] Decode batch, #running-req: 233, #token: 370959,
//! token usage: 0.82, cuda graph: True, gen throughput (token/s): 4594.01, #queue-req: 317`.
//! Versions differ in the punctuation after `batch` (`.` or `,`), the rank tags in the prefix
//! (none, `TP0`, `DP0 TP0`), and the fields present (`cuda graph`, `#cached-token`, hybrid models'
//! `full token usage`), so fields are found by name, not by position. SGLang logs a decode line
//! only every `--decode-log-interval` steps (40 by default), so the lines are samples, not every
//! step.

use super::{Cx, SectionParser};
use crate::facts::push_bounded;
pub use crate::facts::sglang::{SglangBatch, SglangFacts};
use crate::text::number_after;
use crate::time::parse_iso;

const MAX_BATCHES: usize = 50_000;
const MAX_LINES: usize = 8;

/// Server arguments the rules may read.
const ARGS: &[&str] = &[
    "model_path",
    "tp_size",
    "dp_size",
    "context_length",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "max_running_requests",
    "max_total_tokens",
    "mem_fraction_static",
    "schedule_policy",
    "disable_radix_cache",
    "enable_mixed_chunk",
    "kv_cache_dtype",
];

/// What the `[…]` prefix says: time and ranks.
#[derive(Debug, Default, PartialEq)]
struct Prefix {
    t: Option<f64>,
    dp: Option<u32>,
    tp: Option<u32>,
}

fn prefix(line: &str) -> Prefix {
    let mut p = Prefix::default();
    let t = line.trim_start();
    let Some(inner) = t.strip_prefix('[').and_then(|r| r.find(']').map(|e| &r[..e])) else {
        return p;
    };
    let words: Vec<&str> = inner.split_whitespace().collect();
    let mut rest = &words[..];
    if let [date, time, tail @ ..] = rest
        && let Some(t) = parse_iso(&format!("{date} {time}"))
    {
        p.t = Some(t);
        rest = tail;
    }
    for w in rest {
        let rank = |tag: &str| w.strip_prefix(tag).and_then(|n| n.parse().ok());
        p.dp = p.dp.or_else(|| rank("DP"));
        p.tp = p.tp.or_else(|| rank("TP"));
    }
    p
}

/// `key=value` in a `ServerArgs(…)` dump: the value without quotes.
fn arg_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(i) = line[from..].find(&pat) {
        let start = from + i;
        from = start + pat.len();
        // Not the tail of a longer name (`max_total_tokens` inside `cuda_max_total_tokens`).
        if start > 0
            && (line.as_bytes()[start - 1].is_ascii_alphanumeric() || line.as_bytes()[start - 1] == b'_')
        {
            continue;
        }
        let rest = &line[from..];
        for q in ['\'', '"'] {
            if let Some(r) = rest.strip_prefix(q) {
                return r.find(q).map(|e| &r[..e]);
            }
        }
        return Some(&rest[..rest.find([',', ')']).unwrap_or(rest.len())]);
    }
    None
}

fn is_access_line(line: &str) -> bool {
    line.contains(" HTTP/1.") || line.contains(" HTTP/2")
}

/// Reads SGLang server logs.
#[derive(Default)]
pub struct SglangParser {
    /// Inside a Python traceback: its last line (`RuntimeError: …`) names the error, but the
    /// traceback was already counted once at its head.
    in_traceback: bool,
}

impl SectionParser for SglangParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        // SGLang's own prefix (`[2026-11-29 …`), uvicorn lines and tracebacks stay here; an access
        // line would otherwise be taken for vLLM's. An OOM line still opens its own section.
        let t = line.trim_start();
        let own = t.starts_with("[20")
            && t.as_bytes().get(4).is_some_and(u8::is_ascii_digit)
            && t.as_bytes().get(5) == Some(&b'-')
            || t.starts_with("INFO:")
            || t.starts_with("WARNING:")
            || t.starts_with("ERROR:")
            || t.starts_with("Traceback")
            || t.starts_with("File \"");
        own && !t.contains("CUDA out of memory") && !t.contains("OutOfMemoryError")
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        if line.contains("Prefill batch") || line.contains("Decode batch") {
            let p = prefix(line);
            let num = |key: &str| number_after(line, key);
            let batch = SglangBatch {
                prefill: line.contains("Prefill batch"),
                new_seq: num("#new-seq: "),
                new_token: num("#new-token: "),
                cached_token: num("#cached-token: "),
                tokens: num("#token: "),
                token_usage: num("token usage: "),
                running: num("#running-req: "),
                queue: num("#queue-req: "),
                gen_tps: num("gen throughput (token/s): "),
                evidence: cx.evidence(no, line),
                t: p.t,
                cuda_graph: line.find("cuda graph: ").map(|i| line[i + 12..].starts_with("True")),
                dp_rank: p.dp,
                tp_rank: p.tp,
            };
            if batch.running.is_none() && batch.token_usage.is_none() {
                cx.issue_in(
                    no,
                    "an SGLang batch line without #running-req or token usage",
                    "SGLang batch 行缺少 #running-req 和 token usage",
                );
            }
            let s = &mut cx.facts.sglang;
            if s.batches.len() < MAX_BATCHES {
                s.batches.push(batch);
            } else {
                s.batches_dropped += 1;
            }
            return;
        }
        if line.contains("KV Cache is allocated") {
            let e = cx.evidence(no, line);
            let s = &mut cx.facts.sglang;
            s.kv_allocated.get_or_insert(e);
            match number_after(line, "#tokens: ") {
                Some(n) => s.kv_capacity_tokens = Some(n),
                None => cx.issue_in(no, "a KV allocation line without #tokens", "KV 分配行缺少 #tokens"),
            }
            return;
        }
        if line.contains("max_total_num_tokens=") {
            let s = &mut cx.facts.sglang;
            if s.kv_capacity_tokens.is_none() {
                s.kv_capacity_tokens = number_after(line, "max_total_num_tokens=");
            }
            return;
        }
        if line.contains("Decode out of memory happened") || line.contains("Retract requests") {
            let n = number_after(line, "#retracted_reqs: ").unwrap_or(1.0).max(1.0);
            let e = cx.evidence(no, line);
            let s = &mut cx.facts.sglang;
            s.retractions += n as u64;
            push_bounded(&mut s.retraction_lines, e, MAX_LINES);
            return;
        }
        if line.contains("ServerArgs(") {
            let e = cx.evidence(no, line);
            let s = &mut cx.facts.sglang;
            for key in ARGS {
                if let Some(v) = arg_value(line, key) {
                    s.args.insert((*key).to_owned(), v.to_owned());
                }
            }
            s.args_line.get_or_insert(e);
            return;
        }
        if is_access_line(line) && line.contains('"') {
            // `INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found`
            if let Some(close) = line.rfind('"')
                && let Some(code) =
                    line[close + 1..].split_whitespace().next().and_then(|c| c.parse::<u16>().ok())
            {
                let s = &mut cx.facts.sglang;
                *s.access.entry(code).or_insert(0) += 1;
                if !s.access_examples.contains_key(&code) {
                    let e = cx.evidence(no, line);
                    cx.facts.sglang.access_examples.insert(code, e);
                }
            }
            return;
        }
        let t = line.trim_start();
        // The last line of a traceback: `RuntimeError: …`, `torch.cuda.…Error: …`.
        let exception_line =
            t.split_whitespace().next().is_some_and(|w| w.ends_with("Error:") || w.ends_with("Exception:"));
        if self.in_traceback && exception_line {
            self.in_traceback = false;
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.sglang.errors, e, MAX_LINES);
            return;
        }
        let head = line.contains("Traceback (most recent call last)");
        if head {
            self.in_traceback = true;
        }
        let error = head
            || line.contains("Scheduler hit an exception")
            || line.contains("Received sigquit")
            || line.contains(" ERROR ")
            || t.starts_with("ERROR")
            || exception_line;
        if error {
            let e = cx.evidence(no, line);
            let s = &mut cx.facts.sglang;
            s.error_count += 1;
            push_bounded(&mut s.errors, e, MAX_LINES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::InputKind;
    use crate::testutil::{fixture, run};

    const LOG: &str = fixture!("sglang/server.log");

    #[test]
    fn server_log_fixture() {
        let (f, sections) = run("sglang.log", LOG).take(|f| f.sglang);
        let kinds: Vec<_> = sections.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [InputKind::SglangLog], "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.kv_capacity_tokens, Some(371_661.0));
        assert!(f.kv_allocated.is_some());
        assert_eq!(f.args.get("chunked_prefill_size").map(String::as_str), Some("8192"));
        assert_eq!(f.args.get("model_path").map(String::as_str), Some("meta-llama/Llama-3.1-8B-Instruct"));
        let prefills = f.batches.iter().filter(|b| b.prefill).count();
        assert_eq!((prefills, f.batches.len()), (3, 7));
        let p = &f.batches[0];
        assert_eq!((p.new_seq, p.new_token, p.cached_token), (Some(1.0), Some(64.0), Some(0.0)));
        assert_eq!((p.running, p.queue, p.token_usage), (Some(0.0), Some(0.0), Some(0.0)));
        assert_eq!(p.tp_rank, Some(0));
        let d = f.batches.iter().find(|b| !b.prefill && b.queue == Some(317.0)).unwrap();
        assert_eq!((d.running, d.tokens, d.token_usage), (Some(233.0), Some(370_959.0), Some(0.82)));
        assert_eq!((d.gen_tps, d.cuda_graph), (Some(4594.01), Some(true)));
        assert_eq!(d.dp_rank, Some(1));
        assert!(d.t.is_some_and(|t| t > f.batches[0].t.unwrap()));
        assert_eq!(f.retractions, 2);
        assert_eq!(f.access.get(&200), Some(&2));
        assert_eq!(f.access.get(&404), Some(&1));
        // The traceback counts once; its last line is quoted.
        assert_eq!(f.error_count, 2, "{:?}", f.errors);
        assert!(f.errors[1].text.starts_with("RuntimeError: CUDA error"), "{:?}", f.errors);
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix("[2026-11-29 10:00:00 DP1 TP3] Decode").tp, Some(3));
        assert_eq!(prefix("[2026-11-29 10:00:00 DP1 TP3] Decode").dp, Some(1));
        assert_eq!(prefix("[TP0] Prefill batch.").tp, Some(0));
        assert_eq!(prefix("[TP0] Prefill batch.").t, None);
        assert_eq!(prefix("[2026-11-29 10:00:01] x").t, parse_iso("2026-11-29T10:00:01Z"));
        assert_eq!(prefix("no prefix"), Prefix::default());
        assert_eq!(prefix("[unterminated"), Prefix::default());
    }

    #[test]
    fn bounded_and_total() {
        let line = "[2026-11-29 10:00:00] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, gen throughput (token/s): 2.37, #queue-req: 0\n";
        let (f, _) = run("sglang.log", &line.repeat(MAX_BATCHES + 5)).take(|f| f.sglang);
        assert_eq!(f.batches.len(), MAX_BATCHES);
        assert_eq!(f.batches_dropped, 5);
        let (f, sections) = run(
            "sglang.log",
            "Decode batch, garbage #running-req: x\n[2026-99-99 ] Prefill batch\nKV Cache is allocated.\n",
        )
        .take(|f| f.sglang);
        assert_eq!(f.batches.len(), 2);
        assert!(sections[0].issues.len() >= 2, "{:?}", sections[0].issues);
    }
}
