//! vLLM server logs: V0 and V1 periodic stats, preemption warnings, startup capacity lines,
//! the fatal memory lines, engine-dead / NCCL / timeout errors, engine arguments, and the API
//! server's access lines (`"POST /v1/chat/completions HTTP/1.1" 404`).
//!
//! Matching is by substring, not by position, so process prefixes (`(VllmWorker rank=0
//! pid=12)`), colours and interleaved lines from several processes do not get in the way.

use super::{Cx, SectionParser};
use crate::facts::push_bounded;
pub use crate::facts::vllm::{EngineArg, FatalMemory, VllmFacts, VllmStat};
use crate::signals::vllm_needles as needle;
use crate::text::finder;

const MAX_STATS: usize = 50_000;
/// Requests whose add time is kept to time their abort.
const MAX_OPEN: usize = 4_096;
/// Abort ages kept.
const MAX_ABORT_AGES: usize = 512;
const MAX_LINES: usize = 8;

/// Engine arguments worth reading, with the names different versions use.
const ARGS: &[(&str, &[&str])] = &[
    ("enable_chunked_prefill", &["enable_chunked_prefill", "chunked_prefill_enabled"]),
    ("max_num_batched_tokens", &["max_num_batched_tokens"]),
    ("max_num_seqs", &["max_num_seqs"]),
    ("max_model_len", &["max_model_len", "max_seq_len"]),
    ("gpu_memory_utilization", &["gpu_memory_utilization"]),
    ("enable_prefix_caching", &["enable_prefix_caching"]),
    ("tensor_parallel_size", &["tensor_parallel_size"]),
    ("kv_cache_dtype", &["kv_cache_dtype"]),
    ("model", &["model"]),
];

/// `MM-DD HH:MM:SS` after the level word → seconds since the start of the year.
pub(crate) fn stamp(line: &str) -> Option<f64> {
    let b = line.as_bytes();
    // The stamp's `-` is its third byte: only windows around a `-` are looked at.
    for dash in memchr::memchr_iter(b'-', b) {
        let Some(i) = dash.checked_sub(2) else { continue };
        let Some(w) = b.get(i..i + 14) else { break };
        let d = |j: usize| w[j].is_ascii_digit();
        if d(0)
            && d(1)
            && w[2] == b'-'
            && d(3)
            && d(4)
            && w[5] == b' '
            && d(6)
            && d(7)
            && w[8] == b':'
            && d(9)
            && d(10)
            && w[11] == b':'
            && d(12)
            && d(13)
        {
            let n = |j: usize| f64::from((w[j] - b'0') * 10 + (w[j + 1] - b'0'));
            let day_of_year = (n(0) - 1.0) * 31.0 + n(3);
            let mut t = day_of_year * 86_400.0 + n(6) * 3600.0 + n(9) * 60.0 + n(12);
            if let Some(frac) = line.get(i + 14..).and_then(|r| r.strip_prefix('.')) {
                let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(f) = format!("0.{digits}").parse::<f64>() {
                    t += f;
                }
            }
            return Some(t);
        }
    }
    None
}

/// The value after `key=` or `'key': ` (or `"key": `) in an argument dump: the first
/// `'key': ` if any, else the first `key=`, else the first `"key": `, each only where `key` is a
/// whole name (not `max_model_len` inside `draft_max_model_len`). One pass over the line, no
/// allocation: a dump line is read for every argument the rules know.
fn arg_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    // Most names are not in the line: say so without building a searcher (see `words::contains`).
    if !triage_base::words::contains(line, key) {
        return None;
    }
    let b = line.as_bytes();
    let whole = |start: usize| start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
    // Where the value starts, per form: `'key': `, `key=`, `"key": `.
    let mut found = [None::<usize>; 3];
    for (k, _) in line.match_indices(key) {
        let end = k + key.len();
        let after = &line[end..];
        let quoted = |q: u8, tail: &str| k > 0 && b[k - 1] == q && after.starts_with(tail) && whole(k - 1);
        let (form, value) = if quoted(b'\'', "': ") {
            (0, end + 3)
        } else if after.starts_with('=') && whole(k) {
            (1, end + 1)
        } else if quoted(b'"', "\": ") {
            (2, end + 3)
        } else {
            continue;
        };
        found[form].get_or_insert(value);
        if form == 0 {
            break;
        }
    }
    let rest = &line[found.into_iter().flatten().next()?..];
    if let Some(q) = rest.strip_prefix('\'') {
        return q.find('\'').map(|e| &q[..e]);
    }
    let end = rest.find([',', ')', '}', ' ']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The request ids after `key` (`Added request ID.`, `Aborted request(s) ID1, ID2.`).
fn request_ids<'a>(line: &'a str, key: &memchr::memmem::Finder<'_>) -> impl Iterator<Item = &'a str> {
    let rest = key.find(line.as_bytes()).map_or("", |i| &line[i + key.needle().len()..]);
    let rest = rest.strip_prefix("(s)").unwrap_or(rest);
    rest.split(',').map(|id| id.trim().trim_end_matches('.')).filter(|id| !id.is_empty() && !id.contains(' '))
}

/// One pass over a stats line: `key: number unit` segments separated by commas.
fn parse_stats(line: &str) -> [Option<f64>; 9] {
    const KEYS: [&str; 9] = [
        "Avg prompt throughput",
        "Avg generation throughput",
        "Running",
        "Waiting",
        "Swapped",
        "Preemptions",
        "GPU KV cache usage",
        "CPU KV cache usage",
        "Prefix cache hit rate",
    ];
    let mut out = [None; 9];
    let mut pending: Option<f64> = None;
    // Segments end at ", " (a comma inside `1,234.5` is not followed by a space).
    let mut rest = line;
    while !rest.is_empty() {
        let end = memchr::memchr_iter(b',', rest.as_bytes())
            .find(|&i| rest.as_bytes().get(i + 1) == Some(&b' '))
            .unwrap_or(rest.len());
        let segment = &rest[..end];
        rest = rest.get(end + 2..).unwrap_or("");
        let Some(colon) = memchr::memrchr(b':', segment.as_bytes()) else { continue };
        let (key, value) = (&segment[..colon], &segment[colon + 1..]);
        let value = crate::text::leading_number(value);
        if key.ends_with("Pending") {
            pending = value;
            continue;
        }
        if let Some(i) = KEYS.iter().position(|k| key.ends_with(k)) {
            out[i] = value;
        }
    }
    if out[3].is_none() {
        out[3] = pending;
    }
    out
}

/// Reads vLLM server logs: stats lines, warnings, startup, errors and engine arguments.
#[derive(Default)]
pub struct VllmParser {
    /// Lines that are neither log records nor traceback lines: counted, first one quoted.
    strangers: usize,
    first_stranger: Option<usize>,
}

/// Does this look like any log record or traceback line (even one we do not read)?
fn looks_like_log(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty()
        || [
            "INFO",
            "WARNING",
            "ERROR",
            "DEBUG",
            "CRITICAL",
            "Traceback",
            "File \"",
            "(",
            "[",
            "^",
            "raise ",
            "During handling",
            "The above exception",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        || line.starts_with([' ', '\t'])
        || t.split(':')
            .next()
            .is_some_and(|head| head.ends_with("Error") || head.ends_with("Exception") || head.contains('.'))
}

impl SectionParser for VllmParser {
    fn continues(&self, _line: &str, bare: &str, needles: u64) -> bool {
        // Python tracebacks and generic log lines inside a vLLM log stay here, also behind the
        // process prefixes multi-process engines and log collectors add (`(APIServer pid=1)`,
        // `[rank0]:`, timestamps) — recognising those afresh cost most of the time on such logs.
        let t = bare.trim_start();
        let generic = match t.as_bytes().first() {
            Some(b'I') => t.starts_with("INFO"),
            Some(b'W') => t.starts_with("WARNING"),
            Some(b'E') => t.starts_with("ERROR"),
            Some(b'D') => t.starts_with("DEBUG"),
            Some(b'F') => t.starts_with("File \""),
            Some(b'T') => t.starts_with("Traceback"),
            Some(b'^') => true,
            _ => false,
        };
        generic && needles & needle::CUDA_OOM == 0
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        use needle::*;
        let m = cx.vllm_needles;
        let has = |bits: u64| m & bits != 0;
        let all = |bits: u64| m & bits == bits;
        if m == 0 {
            self.unless_a_log(no, line);
            return;
        }
        if has(AVG_PROMPT | AVG_GEN) || all(KV_USAGE | RUNNING) {
            stats_line(cx, no, line);
            return;
        }
        if has(HTTP) && line.contains('"') && access_line(cx, no, line) {
            return;
        }
        if has(PREEMPTED) {
            cx.facts.vllm.preemptions += 1;
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.preemption_lines, e, MAX_LINES);
            return;
        }
        if let Some(kind) = fatal_memory(m) {
            let e = cx.evidence(no, line);
            if cx.facts.vllm.fatal_memory.len() < MAX_LINES {
                cx.facts.vllm.fatal_memory.push((kind, e));
            }
            return;
        }
        if has(AVAILABLE_KV | KV_SIZE | MAX_CONC | GPU_BLOCKS | WEIGHTS_TAKE | MODEL_LOADING | REST_FOR_KV) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.startup_lines, e.clone(), 32);
            if has(MODEL_LOADING) {
                push_bounded(&mut cx.facts.vllm.startup_events, e, MAX_LINES);
            }
            return;
        }
        if has(CAPTURING | CAPTURE_DONE | STARTING | LOADING_WEIGHTS) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.startup_events, e, MAX_LINES);
            return;
        }
        if has(ENGINE_DEAD_ERR | LOOP_DIED | CORE_ENCOUNTERED | ENGINE_IS_DEAD) || all(CORE_PROC | DIED) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.engine_dead, e, MAX_LINES);
            return;
        }
        if has(WATCHDOG | NCCL_ERROR | NCCL_INTERNAL | NCCL_SYSTEM) || all(PG_NCCL | LOWER_TIMEOUT) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.nccl, e, MAX_LINES);
            return;
        }
        if has(ABORTED) {
            aborted(cx, no, line);
            return;
        }
        if has(ADDED) {
            added(cx, line);
            return;
        }
        if has(CHUNKED) {
            let e = cx.evidence(no, line);
            cx.facts.vllm.chunked_prefill_line.get_or_insert(e);
        }
        if has(NON_DEFAULT | WITH_CONFIG | NAMESPACE | ENGINE_ARGS) {
            engine_args(cx, no, line);
            return;
        }
        if has(TIMEOUT_ERROR) || has(TIMED_OUT | TIMEOUT) && has(ERROR_UPPER | ERROR_WORD) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.timeouts, e, MAX_LINES);
            return;
        }
        self.unless_a_log(no, line);
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        if let Some(first) = self.first_stranger {
            let n = self.strangers;
            cx.issue_in(
                first,
                format!("{n} line(s) in this vLLM log section are not log records and were skipped"),
                format!("本段 vLLM 日志中有 {n} 行不是日志记录，已跳过"),
            );
        }
    }
}

impl VllmParser {
    /// Counts `line` as a stranger unless it looks like a log line.
    fn unless_a_log(&mut self, no: usize, line: &str) {
        if !looks_like_log(line) {
            self.strangers += 1;
            self.first_stranger.get_or_insert(no);
        }
    }
}

/// A periodic stats line (V0 or V1): its figures, kept up to [`MAX_STATS`].
fn stats_line(cx: &mut Cx<'_>, no: usize, line: &str) {
    let [prompt_tps, gen_tps, running, waiting, swapped, preemptions, kv, cpu_kv, prefix] = parse_stats(line);
    if running.is_none() && kv.is_none() {
        cx.issue_in(
            no,
            "a vLLM stats line without Running or KV usage figures",
            "vLLM 统计行缺少 Running 或 KV 使用率数据",
        );
    }
    // The line is quoted (and searched for secrets) only when it is kept: past `MAX_STATS`, only
    // counted.
    if cx.facts.vllm.stats.len() >= MAX_STATS {
        cx.facts.vllm.stats_dropped += 1;
        return;
    }
    let stat = VllmStat {
        t: stamp(line),
        prompt_tps,
        gen_tps,
        running,
        waiting,
        swapped,
        preemptions,
        kv_usage_pct: kv,
        cpu_kv_usage_pct: cpu_kv,
        prefix_hit_pct: prefix,
        evidence: cx.evidence(no, line),
    };
    cx.facts.vllm.stats.push(stat);
}

/// An API server access line: its status counted, the first of each kept. `false` when no status
/// follows the request.
fn access_line(cx: &mut Cx<'_>, no: usize, line: &str) -> bool {
    // `… "POST /v1/chat/completions HTTP/1.1" 404 Not Found`
    if let Some(close) = line.rfind('"')
        && let Some(code) = line[close + 1..].split_whitespace().next().and_then(|c| c.parse::<u16>().ok())
    {
        *cx.facts.vllm.access.entry(code).or_insert(0) += 1;
        if !cx.facts.vllm.access_examples.contains_key(&code) {
            let e = cx.evidence(no, line);
            cx.facts.vllm.access_examples.insert(code, e);
        }
        return true;
    }
    false
}

/// The fatal memory error a line's needles name, if any.
fn fatal_memory(m: u64) -> Option<FatalMemory> {
    use needle::*;
    let has = |bits: u64| m & bits != 0;
    if has(NO_BLOCKS) {
        Some(FatalMemory::NoCacheBlocks)
    } else if has(KV_LARGER) {
        Some(FatalMemory::KvLargerThanAvailable)
    } else if has(FREE_LESS) {
        Some(FatalMemory::FreeLessThanDesired)
    } else if has(MAX_SEQ) {
        Some(FatalMemory::MaxSeqLenTooLarge)
    } else {
        None
    }
}

/// `Aborted request …`: counted, kept, and each request's age when the engine added it was seen.
fn aborted(cx: &mut Cx<'_>, no: usize, line: &str) {
    cx.facts.vllm.aborts += 1;
    if let Some(t) = stamp(line) {
        for id in request_ids(line, finder!("Aborted request")) {
            if let Some(added) = cx.facts.vllm.added_at.remove(id)
                && cx.facts.vllm.abort_after_s.len() < MAX_ABORT_AGES
            {
                let e = cx.evidence(no, line);
                cx.facts.vllm.abort_after_s.push((t - added, e));
            }
        }
    }
    // Quoting costs an allocation: only for the lines kept.
    if cx.facts.vllm.abort_lines.len() < MAX_LINES {
        let e = cx.evidence(no, line);
        cx.facts.vllm.abort_lines.push(e);
    }
}

/// `Added request …`: when each request arrived, to time its abort (bounded by [`MAX_OPEN`]).
fn added(cx: &mut Cx<'_>, line: &str) {
    if let Some(t) = stamp(line) {
        let v = &mut cx.facts.vllm;
        for id in request_ids(line, finder!("Added request")) {
            if v.added_at.len() < MAX_OPEN {
                v.added_at.insert(id.to_owned(), t);
            }
        }
    }
}

/// An engine-arguments line: the arguments of interest ([`ARGS`]) by canonical name.
fn engine_args(cx: &mut Cx<'_>, no: usize, line: &str) {
    for (canonical, names) in ARGS {
        if let Some(value) = names.iter().find_map(|n| arg_value(line, n)) {
            let e = cx.evidence(no, line);
            cx.facts
                .vllm
                .args
                .insert((*canonical).to_owned(), EngineArg { value: value.to_owned(), evidence: e });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    #[test]
    fn v1_and_v0_stats() {
        let f = run("vllm.log", concat!(
            "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%, Prefix cache hit rate: 92.0%\n",
            "INFO 11-29 10:00:15 [loggers.py:123] Engine 000: Avg prompt throughput: 1,234.5 tokens/s, Avg generation throughput: 99.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, Preemptions: 2, GPU KV cache usage: 99.1%, Prefix cache hit rate: 0.0%\n",
            "INFO 11-29 10:00:25 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 5 reqs, GPU KV cache usage: 98.0%, CPU KV cache usage: 0.0%.\n",
        )).facts.vllm;
        assert_eq!(f.stats.len(), 3);
        let s = &f.stats[0];
        assert_eq!(
            (s.running, s.waiting, s.kv_usage_pct, s.prefix_hit_pct),
            (Some(1.0), Some(14.0), Some(76.5), Some(92.0))
        );
        assert_eq!(f.stats[1].prompt_tps, Some(1234.5));
        assert_eq!(f.stats[1].preemptions, Some(2.0));
        assert_eq!(f.stats[2].waiting, Some(5.0));
        assert_eq!(f.stats[2].cpu_kv_usage_pct, Some(0.0));
        assert_eq!(f.stats[1].t.unwrap() - f.stats[0].t.unwrap(), 10.0);
    }

    #[test]
    fn preemption_fatal_and_startup_lines() {
        let f = run("vllm.log", concat!(
            "WARNING 11-29 10:00:00 scheduler.py:1057] Sequence group cmpl-abc is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1\n",
            "INFO 11-29 09:59:00 [gpu_worker.py:276] Available KV cache memory: 54.62 GiB\n",
            "INFO 11-29 09:59:00 [kv_cache_utils.py:849] GPU KV cache size: 447,088 tokens\n",
            "INFO 11-29 09:59:00 [kv_cache_utils.py:853] Maximum concurrency for 32,768 tokens per request: 13.64x\n",
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (447088). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n",
            "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'enable_chunked_prefill': False, 'max_num_seqs': 256, 'max_model_len': 131072}\n",
        )).facts.vllm;
        assert_eq!(f.preemptions, 1);
        assert_eq!(f.startup_lines.len(), 3);
        assert_eq!(f.fatal_memory[0].0, FatalMemory::MaxSeqLenTooLarge);
        assert_eq!(f.arg_bool("enable_chunked_prefill"), Some(false));
        assert_eq!(f.arg_f64("max_num_seqs"), Some(256.0));
        assert_eq!(f.arg("model").map(|a| a.value.as_str()), Some("meta-llama/Llama-3.1-8B-Instruct"));
    }

    #[test]
    fn access_lines_and_errors() {
        let f = run("vllm.log", concat!(
            "INFO:     10.0.0.5:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
            "INFO:     10.0.0.5:51235 - \"POST /v1/chat/completions?utm_source=x HTTP/1.1\" 404 Not Found\n",
            "INFO:     10.0.0.5:51236 - \"POST /v1/chat/completions HTTP/1.1\" 404 Not Found\n",
            "ERROR 11-29 10:01:00 [core.py:400] EngineCore encountered a fatal error.\n",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
            "[rank0]:[E1129 10:02:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n",
            "INFO 11-29 10:03:00 [async_llm.py:300] Aborted request chatcmpl-9.\n",
        )).facts.vllm;
        assert_eq!(f.access.get(&404), Some(&2));
        assert_eq!(f.access.get(&200), Some(&1));
        assert!(f.access_examples[&404].text.contains("utm_source"));
        assert_eq!(f.engine_dead.len(), 2);
        assert_eq!(f.nccl.len(), 1);
        assert_eq!(f.aborts, 1);
    }

    #[test]
    fn evidence_is_redacted_before_it_is_cut() {
        let key = format!("sk-{}", "a1".repeat(200));
        let line = format!(
            "INFO 11-29 09:58:00 [utils.py:326] non-default args: {{'model': 'm', 'max_num_seqs': 256, {}'api_key': '{key}'}}\n",
            "'x': 1, ".repeat(24)
        );
        assert!(crate::text::quote(&line).contains("sk-a1"), "the key straddles the cut");
        let f = run("vllm.log", &line).facts.vllm;
        let quoted = &f.args["max_num_seqs"].evidence.text;
        assert!(quoted.ends_with('…'), "the line is cut: {quoted}");
        assert!(!quoted.contains("sk-a1"), "{quoted}");
    }

    #[test]
    fn arg_values() {
        assert_eq!(arg_value("x, max_model_len=4096, y", "max_model_len"), Some("4096"));
        assert_eq!(arg_value("draft_max_model_len=1, max_model_len=8", "max_model_len"), Some("8"));
        assert_eq!(arg_value("{'model': 'a/b', 'x': 1}", "model"), Some("a/b"));
        assert_eq!(arg_value(r#"{"model": "m", "max_num_seqs": 8}"#, "max_num_seqs"), Some("8"));
        // The quoted dict form wins over `key=` wherever it is; a longer name is not the key.
        assert_eq!(arg_value("max_num_seqs=4, {'max_num_seqs': 16}", "max_num_seqs"), Some("16"));
        assert_eq!(arg_value("x_max_num_seqs=4, {'y_max_num_seqs': 16}", "max_num_seqs"), None);
        assert_eq!(arg_value("model='a b', x", "model"), Some("a b"));
        assert_eq!(stamp("INFO 01-01 00:00:10 x"), Some(86_400.0 * 1.0 + 10.0));
    }
}
