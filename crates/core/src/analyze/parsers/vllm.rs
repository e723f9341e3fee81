//! vLLM server logs: V0 and V1 periodic stats, preemption warnings, startup capacity lines,
//! the fatal memory lines, engine-dead / NCCL / timeout errors, engine arguments, and the API
//! server's access lines (`"POST /v1/chat/completions HTTP/1.1" 404`).
//!
//! Matching is by substring, not by position, so process prefixes (`(VllmWorker rank=0
//! pid=12)`), colours and interleaved lines from several processes do not get in the way.

use super::{Cx, SectionParser};
use crate::analyze::facts::push_bounded;
use crate::analyze::report::EvidenceLine;
use crate::analyze::text::number_after;
use std::collections::BTreeMap;

/// One periodic stats line.
#[derive(Clone, Debug, PartialEq)]
pub struct VllmStat {
    /// Seconds since the start of the year, from the `MM-DD HH:MM:SS` prefix (vLLM prints no
    /// year); good for ordering and gaps within one log.
    pub t: Option<f64>,
    pub prompt_tps: Option<f64>,
    pub gen_tps: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// V0: `Swapped`.
    pub swapped: Option<f64>,
    pub preemptions: Option<f64>,
    /// Percent.
    pub kv_usage_pct: Option<f64>,
    pub cpu_kv_usage_pct: Option<f64>,
    pub prefix_hit_pct: Option<f64>,
    pub evidence: EvidenceLine,
}

/// The fatal memory errors vLLM raises at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FatalMemory {
    /// `No available memory for the cache blocks`.
    NoCacheBlocks,
    /// `… KV cache is needed, which is larger than the available KV cache memory …`.
    KvLargerThanAvailable,
    /// `Free memory on device … is less than desired GPU memory utilization`.
    FreeLessThanDesired,
    /// `The model's max seq len (X) is larger than the maximum number of tokens that can be
    /// stored in KV cache (Y)`.
    MaxSeqLenTooLarge,
}

/// An engine argument as logged (`non-default args: {…}`, `with config: …`, `Namespace(…)`).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineArg {
    pub value: String,
    pub evidence: EvidenceLine,
}

#[derive(Debug, Default)]
pub struct VllmFacts {
    pub stats: Vec<VllmStat>,
    /// Stats lines beyond the kept maximum (still counted).
    pub stats_dropped: u64,
    pub preemptions: u64,
    pub preemption_lines: Vec<EvidenceLine>,
    /// Startup capacity lines (`Available KV cache memory`, `GPU KV cache size`, …), for the KV
    /// estimator to reconcile.
    pub startup_lines: Vec<EvidenceLine>,
    pub fatal_memory: Vec<(FatalMemory, EvidenceLine)>,
    pub engine_dead: Vec<EvidenceLine>,
    pub nccl: Vec<EvidenceLine>,
    pub timeouts: Vec<EvidenceLine>,
    /// `Aborted request …` lines: the engine freed a request's KV on a client's behalf.
    pub aborts: u64,
    pub abort_lines: Vec<EvidenceLine>,
    /// Model loading / CUDA graph capture lines: the server was (re)starting.
    pub startup_events: Vec<EvidenceLine>,
    /// HTTP status → count, from the API server's access lines.
    pub access: BTreeMap<u16, u64>,
    /// The first access line of each status.
    pub access_examples: BTreeMap<u16, EvidenceLine>,
    /// Engine arguments of interest by canonical name (`enable_chunked_prefill`, …).
    pub args: BTreeMap<String, EngineArg>,
    /// `Chunked prefill is enabled with max_num_batched_tokens=…`.
    pub chunked_prefill_line: Option<EvidenceLine>,
}

impl VllmFacts {
    pub fn arg(&self, name: &str) -> Option<&EngineArg> {
        self.args.get(name)
    }

    /// Parse an argument as a boolean (`True`, `true`, `1`).
    pub fn arg_bool(&self, name: &str) -> Option<bool> {
        self.arg(name).and_then(|a| match a.value.trim_matches(['\'', '"']).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        })
    }

    pub fn arg_f64(&self, name: &str) -> Option<f64> {
        self.arg(name).and_then(|a| a.value.trim_matches(['\'', '"']).parse().ok())
    }
}

const MAX_STATS: usize = 50_000;
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
fn stamp(line: &str) -> Option<f64> {
    let b = line.as_bytes();
    for i in 0..b.len().saturating_sub(14) {
        let w = &b[i..i + 14];
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

/// The value after `key=` or `'key': ` in an argument dump.
fn arg_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    for pat in [format!("'{key}': "), format!("{key}="), format!("\"{key}\": ")] {
        let mut from = 0;
        while let Some(i) = line[from..].find(&pat) {
            let start = from + i;
            // Not the tail of a longer name (`max_model_len` inside `draft_max_model_len`).
            let ok = start == 0
                || !line.as_bytes()[start - 1].is_ascii_alphanumeric() && line.as_bytes()[start - 1] != b'_';
            let rest = &line[start + pat.len()..];
            if ok {
                let end = if let Some(q) = rest.strip_prefix('\'') {
                    return q.find('\'').map(|e| &q[..e]);
                } else {
                    rest.find([',', ')', '}', ' ']).unwrap_or(rest.len())
                };
                return Some(&rest[..end]);
            }
            from = start + pat.len();
        }
    }
    None
}

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
        || ["INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "Traceback", "File \"", "(", "[", "^", "raise ", "During handling", "The above exception"]
            .iter()
            .any(|p| t.starts_with(p))
        || line.starts_with([' ', '\t'])
        || t.split(':').next().is_some_and(|head| head.ends_with("Error") || head.ends_with("Exception") || head.contains('.'))
}

impl SectionParser for VllmParser {
    fn continues(&self, line: &str) -> bool {
        // Python tracebacks and generic log lines inside a vLLM log stay here.
        let t = line.trim_start();
        let generic = ["File \"", "Traceback", "^", "INFO", "WARNING", "ERROR", "DEBUG"]
            .iter()
            .any(|p| t.starts_with(p));
        generic && !t.contains("CUDA out of memory")
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        if line.contains("Avg prompt throughput")
            || line.contains("Avg generation throughput")
            || line.contains("GPU KV cache usage:") && line.contains("Running:")
        {
            let pct = |key: &str| number_after(line, key);
            let stat = VllmStat {
                t: stamp(line),
                prompt_tps: pct("Avg prompt throughput: "),
                gen_tps: pct("Avg generation throughput: "),
                running: pct("Running: "),
                waiting: pct("Waiting: ").or_else(|| pct("Pending: ")),
                swapped: pct("Swapped: "),
                preemptions: pct("Preemptions: "),
                kv_usage_pct: pct("GPU KV cache usage: "),
                cpu_kv_usage_pct: pct("CPU KV cache usage: "),
                prefix_hit_pct: pct("Prefix cache hit rate: "),
                evidence: EvidenceLine {
                    input: cx.input.to_owned(),
                    line: no,
                    text: crate::analyze::text::quote(line),
                },
            };
            if stat.running.is_none() && stat.kv_usage_pct.is_none() {
                cx.issue(no, "a vLLM stats line without Running or KV usage figures");
            }
            let v = &mut cx.facts.vllm;
            if v.stats.len() < MAX_STATS {
                v.stats.push(stat);
            } else {
                v.stats_dropped += 1;
            }
            return;
        }
        if line.contains("is preempted by PreemptionMode") || line.contains("preempted by PreemptionMode") {
            cx.facts.vllm.preemptions += 1;
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.preemption_lines, e, MAX_LINES);
            return;
        }
        let fatal = if line.contains("No available memory for the cache blocks") {
            Some(FatalMemory::NoCacheBlocks)
        } else if line.contains("larger than the available KV cache memory") {
            Some(FatalMemory::KvLargerThanAvailable)
        } else if line.contains("is less than desired GPU memory utilization") {
            Some(FatalMemory::FreeLessThanDesired)
        } else if line.contains("larger than the maximum number of tokens that can be stored in KV cache") {
            Some(FatalMemory::MaxSeqLenTooLarge)
        } else {
            None
        };
        if let Some(kind) = fatal {
            let e = cx.evidence(no, line);
            if cx.facts.vllm.fatal_memory.len() < MAX_LINES {
                cx.facts.vllm.fatal_memory.push((kind, e));
            }
            return;
        }
        if [
            "Available KV cache memory",
            "GPU KV cache size",
            "Maximum concurrency for",
            "# GPU blocks",
            "model weights take",
            "Model loading took",
            "the rest of the memory reserved for KV Cache",
        ]
        .iter()
        .any(|k| line.contains(k))
        {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.startup_lines, e.clone(), 32);
            if line.contains("Model loading took") {
                push_bounded(&mut cx.facts.vllm.startup_events, e, MAX_LINES);
            }
            return;
        }
        if line.contains("Capturing CUDA graph")
            || line.contains("Graph capturing finished")
            || line.contains("Starting vLLM API server")
            || line.contains("Loading weights took")
        {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.startup_events, e, MAX_LINES);
            return;
        }
        if line.contains("EngineDeadError")
            || line.contains("Engine loop has died")
            || line.contains("EngineCore encountered")
            || line.contains("Engine core proc") && line.contains("died")
            || line.contains("engine is dead")
        {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.engine_dead, e, MAX_LINES);
            return;
        }
        if line.contains("Watchdog caught collective operation timeout")
            || line.contains("NCCL error")
            || line.contains("ncclInternalError")
            || line.contains("ncclSystemError")
            || line.contains("ProcessGroupNCCL") && line.contains("timeout")
        {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.nccl, e, MAX_LINES);
            return;
        }
        if line.contains("Aborted request") {
            cx.facts.vllm.aborts += 1;
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.abort_lines, e, MAX_LINES);
            return;
        }
        if line.contains("Chunked prefill is enabled") {
            let e = cx.evidence(no, line);
            cx.facts.vllm.chunked_prefill_line.get_or_insert(e);
        }
        if line.contains("HTTP/1.") && line.contains('"') {
            // `… "POST /v1/chat/completions HTTP/1.1" 404 Not Found`
            if let Some(close) = line.rfind('"')
                && let Some(code) =
                    line[close + 1..].split_whitespace().next().and_then(|c| c.parse::<u16>().ok())
            {
                *cx.facts.vllm.access.entry(code).or_insert(0) += 1;
                if !cx.facts.vllm.access_examples.contains_key(&code) {
                    let e = cx.evidence(no, line);
                    cx.facts.vllm.access_examples.insert(code, e);
                }
                return;
            }
        }
        if line.contains("non-default args")
            || line.contains("with config:")
            || line.contains("Namespace(")
            || line.contains("engine_args")
        {
            for (canonical, names) in ARGS {
                if let Some(value) = names.iter().find_map(|n| arg_value(line, n)) {
                    let e = cx.evidence(no, line);
                    cx.facts
                        .vllm
                        .args
                        .insert((*canonical).to_owned(), EngineArg { value: value.to_owned(), evidence: e });
                }
            }
            return;
        }
        let lower_has_timeout =
            line.contains("TimeoutError") || line.contains("timed out") || line.contains("Timeout");
        if lower_has_timeout && (line.contains("ERROR") || line.contains("Error")) {
            let e = cx.evidence(no, line);
            push_bounded(&mut cx.facts.vllm.timeouts, e, MAX_LINES);
            return;
        }
        if !looks_like_log(line) {
            self.strangers += 1;
            self.first_stranger.get_or_insert(no);
        }
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        if let Some(first) = self.first_stranger {
            cx.issue(first, format!("{} line(s) in this vLLM log section are not log records and were skipped", self.strangers));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::Analyzer;

    fn facts(text: &str) -> VllmFacts {
        let mut a = Analyzer::new();
        a.add_text("vllm.log", text);
        std::mem::take(&mut a.facts.vllm)
    }

    #[test]
    fn v1_and_v0_stats() {
        let f = facts(concat!(
            "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%, Prefix cache hit rate: 92.0%\n",
            "INFO 11-29 10:00:15 [loggers.py:123] Engine 000: Avg prompt throughput: 1,234.5 tokens/s, Avg generation throughput: 99.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, Preemptions: 2, GPU KV cache usage: 99.1%, Prefix cache hit rate: 0.0%\n",
            "INFO 11-29 10:00:25 metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 5 reqs, GPU KV cache usage: 98.0%, CPU KV cache usage: 0.0%.\n",
        ));
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
        let f = facts(concat!(
            "WARNING 11-29 10:00:00 scheduler.py:1057] Sequence group cmpl-abc is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1\n",
            "INFO 11-29 09:59:00 [gpu_worker.py:276] Available KV cache memory: 54.62 GiB\n",
            "INFO 11-29 09:59:00 [kv_cache_utils.py:849] GPU KV cache size: 447,088 tokens\n",
            "INFO 11-29 09:59:00 [kv_cache_utils.py:853] Maximum concurrency for 32,768 tokens per request: 13.64x\n",
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (447088). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n",
            "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'enable_chunked_prefill': False, 'max_num_seqs': 256, 'max_model_len': 131072}\n",
        ));
        assert_eq!(f.preemptions, 1);
        assert_eq!(f.startup_lines.len(), 3);
        assert_eq!(f.fatal_memory[0].0, FatalMemory::MaxSeqLenTooLarge);
        assert_eq!(f.arg_bool("enable_chunked_prefill"), Some(false));
        assert_eq!(f.arg_f64("max_num_seqs"), Some(256.0));
        assert_eq!(f.arg("model").map(|a| a.value.as_str()), Some("meta-llama/Llama-3.1-8B-Instruct"));
    }

    #[test]
    fn access_lines_and_errors() {
        let f = facts(concat!(
            "INFO:     10.0.0.5:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
            "INFO:     10.0.0.5:51235 - \"POST /v1/chat/completions?utm_source=x HTTP/1.1\" 404 Not Found\n",
            "INFO:     10.0.0.5:51236 - \"POST /v1/chat/completions HTTP/1.1\" 404 Not Found\n",
            "ERROR 11-29 10:01:00 [core.py:400] EngineCore encountered a fatal error.\n",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
            "[rank0]:[E1129 10:02:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n",
            "INFO 11-29 10:03:00 [async_llm.py:300] Aborted request chatcmpl-9.\n",
        ));
        assert_eq!(f.access.get(&404), Some(&2));
        assert_eq!(f.access.get(&200), Some(&1));
        assert!(f.access_examples[&404].text.contains("utm_source"));
        assert_eq!(f.engine_dead.len(), 2);
        assert_eq!(f.nccl.len(), 1);
        assert_eq!(f.aborts, 1);
    }

    #[test]
    fn arg_values() {
        assert_eq!(arg_value("x, max_model_len=4096, y", "max_model_len"), Some("4096"));
        assert_eq!(arg_value("draft_max_model_len=1, max_model_len=8", "max_model_len"), Some("8"));
        assert_eq!(arg_value("{'model': 'a/b', 'x': 1}", "model"), Some("a/b"));
        assert_eq!(stamp("INFO 01-01 00:00:10 x"), Some(86_400.0 * 1.0 + 10.0));
    }
}
