//! llama.cpp's `llama-server` and Ollama: the figures their logs print, read from any line of
//! any input (Ollama's log interleaves its own slog lines with llama-server's stderr, and people
//! paste `ollama ps`, `ollama run --verbose` and `/metrics` next to them).
//!
//! - slot timings: `prompt eval time = 49800.00 ms / 40960 tokens (…)`, the prefill progress
//!   `prompt processing, n_tokens = 10240, progress = 0.25, t = 12.31 s / …` and the decode rate
//!   `n_gen = 1000, tg = 60.1 t/s, tg_3s = 58.2 t/s`;
//! - loads: `llama-server started in 41.37 seconds` (`llama runner started in` before v0.3x),
//!   `load duration: 40.912745008s`, evictions (`evicting a model to make space`);
//! - Gin's access lines: status and latency (`[GIN] … | 500 |  30.001221904s | …`);
//! - `llamacpp:requests_deferred` / `llamacpp:requests_processing` from `/metrics`.
//!
//! LMCache's per-request hit line (`Total tokens N, …, LMCache hit tokens: M`) is added up here.
//! TensorRT-LLM's per-iteration line (`iter = N, …, num_scheduled_requests = 58, kv_cache_util =
//! 0.412, …, host_step_time = 21.8ms, prev_device_step_time = 22.4ms, …`; older releases print
//! `num_scheduled_requests: 58` at the end and no `kv_cache_util`) is read here too: the same kind
//! of figure, printed the same way, whatever section it is in.
//!
//! Every list is bounded; the reader never fails on a line (a figure it cannot read is skipped).

pub use crate::facts::llama::{DecodeRate, LlamaFacts, LmcacheHits, Load, Prefill, Stated, TrtIteration};
use crate::report::EvidenceLine;
use crate::text::{gin_fields, leading_number, number_after};

/// Entries kept per list.
const MAX: usize = 512;
/// Example lines kept per Gin status.
const MAX_EXAMPLES: usize = 4;

impl LlamaFacts {
    /// Read one line (ANSI stripped). `evidence` quotes it when something is kept.
    pub fn line(&mut self, line: &str, evidence: impl Fn() -> EvidenceLine) {
        if self.trt_iteration(line, &evidence)
            || self.lmcache(line, &evidence)
            || self.memory_before_load(line, &evidence)
        {
            return;
        }
        self.llama_or_ollama(line, &evidence);
    }

    /// TensorRT-LLM's per-iteration line. `true` when `line` was one.
    fn trt_iteration(&mut self, line: &str, evidence: &impl Fn() -> EvidenceLine) -> bool {
        if line.contains("num_scheduled_requests") && line.contains("iter = ") {
            let it = TrtIteration {
                iter: number_after(line, "iter = ").unwrap_or(f64::NAN),
                scheduled: number_after(line, "num_scheduled_requests = ")
                    .or_else(|| number_after(line, "num_scheduled_requests: "))
                    .unwrap_or(0.0),
                kv_util: number_after(line, "kv_cache_util = "),
                total_requests: line
                    .split_once("currank_total_requests = ")
                    .and_then(|(_, r)| r.split_once('/'))
                    .and_then(|(_, total)| leading_number(total)),
                device_ms: number_after(line, "prev_device_step_time = "),
                host_ms: number_after(line, "host_step_time = "),
                evidence: evidence(),
            };
            if self.trt_iterations.len() < MAX {
                self.trt_iterations.push(it);
            } else if let Some(last) = self.trt_iterations.last_mut() {
                *last = it;
            }
            return true;
        }
        false
    }

    /// LMCache's hit line. `true` when `line` was one.
    fn lmcache(&mut self, line: &str, evidence: &impl Fn() -> EvidenceLine) -> bool {
        if let Some(hit) = number_after(line, "LMCache hit tokens:")
            && let Some(total) = number_after(line, "Total tokens ")
        {
            let c = &mut self.lmcache;
            c.requests += 1;
            c.total_tokens += total;
            c.hit_tokens += hit;
            if c.examples.len() < 2 {
                c.examples.push(evidence());
            }
            return true;
        }
        false
    }

    /// What was free before the model loaded (Ollama's `inference compute`, TensorRT-LLM's
    /// `Total GPU memory` then `model: free / total`). `true` when `line` said so.
    fn memory_before_load(&mut self, line: &str, evidence: &impl Fn() -> EvidenceLine) -> bool {
        if line.contains("inference compute")
            && !line.contains("library=cpu")
            && let (Some(total), Some(free)) = (gib_after(line, "total="), gib_after(line, "available="))
        {
            self.free_before(free, total, evidence());
            return true;
        }
        if let Some(total) = number_after(line, "Total GPU memory (GiB):") {
            self.trt_total_gib = Some(total);
            return true;
        }
        if let Some(rest) = line.trim_start().strip_prefix("model: ")
            && let Some(total) = self.trt_total_gib
            && let Some((before, _)) = rest.split_once(" / ")
            && let Ok(free) = before.trim().parse::<f64>()
        {
            self.free_before(free, total, evidence());
            return true;
        }
        false
    }

    /// llama-server's and Ollama's own lines: prefill and decode timings, model loads and
    /// evictions, Gin's access lines, the slot gauges.
    fn llama_or_ollama(&mut self, line: &str, evidence: &impl Fn() -> EvidenceLine) {
        if let Some(i) = line.find("prompt eval time =") {
            let rest = &line[i + "prompt eval time =".len()..];
            if let (Some(ms), Some(tokens)) = (leading_number(rest), number_after(rest, "ms /")) {
                self.push_prefill(Prefill {
                    seconds: ms / 1000.0,
                    tokens,
                    task: task_of(line),
                    running: false,
                    evidence: evidence(),
                });
            }
        } else if line.contains("prompt processing, n_tokens =")
            && let (Some(tokens), Some(s)) = (number_after(line, "n_tokens ="), number_after(line, ", t ="))
        {
            // The running prefill's latest progress replaces the previous one of the same task.
            let p = Prefill { seconds: s, tokens, task: task_of(line), running: true, evidence: evidence() };
            match self.prefills.last_mut() {
                Some(last) if last.running && last.task == p.task => *last = p,
                _ => self.push_prefill(p),
            }
        } else if line.contains("| n_gen =")
            && let Some(n_gen) = number_after(line, "n_gen =")
            && let Some(rate) = number_after(line, "tg_3s =").or_else(|| number_after(line, "tg ="))
        {
            if self.decode.len() < MAX {
                self.decode.push(DecodeRate {
                    task: task_of(line),
                    n_gen,
                    tokens_per_s: rate,
                    evidence: evidence(),
                });
            }
        } else if let Some(s) = number_after(line, "llama-server started in ")
            .or_else(|| number_after(line, "llama runner started in "))
        {
            self.push_load(Load { seconds: s, in_request: false, evidence: evidence() });
        } else if let Some(i) = line.find("load duration:") {
            if let Some(s) = go_duration(line[i + "load duration:".len()..].trim()) {
                self.push_load(Load { seconds: s, in_request: true, evidence: evidence() });
            }
        } else if line.contains("will fit in available VRAM")
            || line.contains("fits with existing models, loading")
            || line.contains("loading first model")
        {
            if self.load_starts.len() < MAX_EXAMPLES {
                let served: u64 = self.gin.values().sum();
                self.load_starts.push((evidence(), served));
            }
        } else if line.contains("evicting")
            && (line.contains("to make space") || line.contains("predicted to exceed"))
        {
            self.eviction_count += 1;
            if self.evictions.len() < MAX_EXAMPLES {
                self.evictions.push(evidence());
            }
        } else if let Some((status, latency)) = gin_fields(line) {
            self.gin_line(status, latency, evidence());
        } else if let Some(n) = number_after(line, "llamacpp:requests_deferred") {
            if self.deferred.as_ref().is_none_or(|d| n > d.value) {
                self.deferred = Some(Stated { value: n, evidence: evidence() });
            }
        } else if let Some(n) = number_after(line, "llamacpp:requests_processing") {
            self.processing = Some(self.processing.map_or(n, |p| p.max(n)));
        }
    }

    /// A Gin access line (Ollama): its status counted, a few kept, and its latency.
    fn gin_line(&mut self, status: u16, latency: Option<&str>, e: EvidenceLine) {
        *self.gin.entry(status).or_insert(0) += 1;
        let examples = self.gin_examples.entry(status).or_default();
        if examples.len() < MAX_EXAMPLES {
            examples.push(e.clone());
        }
        if let Some(s) = latency.and_then(go_duration)
            && self.gin_latency.len() < MAX
        {
            self.gin_latency.push((status, s, e));
        }
    }

    fn free_before(&mut self, free: f64, total: f64, evidence: EvidenceLine) {
        if total > 0.0 && self.free_before_load.as_ref().is_none_or(|(f, _, _)| free < *f) {
            self.free_before_load = Some((free, total, evidence));
        }
    }

    fn push_prefill(&mut self, p: Prefill) {
        if self.prefills.len() < MAX {
            self.prefills.push(p);
        }
    }

    fn push_load(&mut self, load: Load) {
        if self.loads.len() < MAX {
            self.loads.push(load);
        }
    }
}

/// `key="23.6 GiB"` (or MiB) → GiB.
fn gib_after(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    let v = leading_number(rest)?;
    let unit = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.').trim_start();
    Some(if unit.starts_with("MiB") { v / 1024.0 } else { v })
}

/// `id  0 | task 1041 |` → `0/1041`: which slot and task a line is about.
fn task_of(line: &str) -> String {
    let id = number_after(line, "id ").unwrap_or(-1.0);
    let task = number_after(line, "| task ").unwrap_or(-1.0);
    format!("{id}/{task}")
}

/// A Go `time.Duration` as printed: `40.912745008s`, `311.402µs`, `1.2ms`, `1m0.102118201s`,
/// `2h3m4s`. Seconds.
pub fn go_duration(text: &str) -> Option<f64> {
    let word = text.split_whitespace().next()?;
    let mut rest = word;
    let mut total = 0.0;
    let mut any = false;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let value: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let (scale, len) = if rest.starts_with("ms") {
            (1e-3, 2)
        } else if rest.starts_with("µs") {
            (1e-6, "µs".len())
        } else if rest.starts_with("us") {
            (1e-6, 2)
        } else if rest.starts_with("ns") {
            (1e-9, 2)
        } else if rest.starts_with('s') {
            (1.0, 1)
        } else if rest.starts_with('m') {
            (60.0, 1)
        } else if rest.starts_with('h') {
            (3600.0, 1)
        } else {
            return None;
        };
        total += value * scale;
        rest = &rest[len..];
        any = true;
    }
    any.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    #[test]
    fn durations() {
        assert_eq!(go_duration("40.912745008s"), Some(40.912745008));
        assert_eq!(go_duration("1m0.5s"), Some(60.5));
        assert!((go_duration("311.402µs |").unwrap() - 311.402e-6).abs() < 1e-12);
        assert_eq!(go_duration("18.002341ms"), Some(0.018002341));
        assert_eq!(go_duration("fast"), None);
    }

    #[test]
    fn slot_timings_loads_gin_and_metrics() {
        let f = run("llama.log", concat!(
            "slot print_timing: id  0 | task 500 | prompt processing, n_tokens =  10240, progress = 0.25, t =  12.31 s / 831.84 tokens per second\n",
            "slot print_timing: id  0 | task 500 | prompt processing, n_tokens =  20480, progress = 0.50, t =  24.70 s / 829.15 tokens per second\n",
            "slot print_timing: id  1 | task 501 | prompt eval time =     212.40 ms /   812 tokens (    0.26 ms per token,  3822.98 tokens per second)\n",
            "slot print_timing: id  0 | task 500 | n_gen =   1000, tg =  61.80 t/s, tg_3s =  60.20 t/s\n",
            "time=2025-09-22T07:59:51.370Z level=INFO source=llama_server.go:1362 msg=\"llama-server started in 41.37 seconds\"\n",
            "load duration:        40.912745008s\n",
            "[GIN] 2025/09/22 - 14:01:10 | 500 |  30.001221904s |        10.0.0.9 | POST    \"/v1/chat/completions\"\n",
            "llamacpp:requests_deferred 37\n",
            "llamacpp:requests_processing 4\n",
        )).facts.llama;
        assert_eq!(f.prefills.len(), 2, "{:?}", f.prefills);
        assert_eq!((f.prefills[0].seconds, f.prefills[0].tokens), (24.70, 20480.0));
        assert!((f.prefills[1].seconds - 0.2124).abs() < 1e-9);
        assert_eq!(f.decode[0].tokens_per_s, 60.2);
        assert_eq!(f.loads.iter().map(|l| l.seconds).collect::<Vec<_>>(), vec![41.37, 40.912745008]);
        assert_eq!(f.gin.get(&500), Some(&1));
        assert!((f.gin_latency[0].1 - 30.001221904).abs() < 1e-9);
        assert_eq!(f.deferred.as_ref().map(|d| d.value), Some(37.0));
        assert_eq!(f.processing, Some(4.0));
    }

    #[test]
    fn trt_iterations_in_both_field_orders() {
        let f = run("llama.log", concat!(
            "[03/04/2025-11:20:10] [TRT-LLM] [I] iter = 20410, global_rank = 0, rank = 0, num_scheduled_requests = 58, kv_cache_util = 0.412, currank_total_requests = 5123/5123, host_step_time = 21.800ms, prev_device_step_time = 22.400ms, timestamp = 2025-03-04 11:20:10, states = {}\n",
            "[03/04/2025-15:00:00] [TRT-LLM] [I] iter = 4000, global_rank = 0, rank = 0, currank_total_requests = 36/36, host_step_time = 19.300ms, prev_device_step_time = 19.800ms, timestamp = 2025-03-04 15:00:00, num_scheduled_requests: 36, states = {}\n",
        )).facts.llama;
        let (a, b) = (&f.trt_iterations[0], &f.trt_iterations[1]);
        assert_eq!(
            (a.scheduled, a.kv_util, a.total_requests, a.device_ms),
            (58.0, Some(0.412), Some(5123.0), Some(22.4))
        );
        assert_eq!(
            (b.scheduled, b.kv_util, b.total_requests, b.device_ms),
            (36.0, None, Some(36.0), Some(19.8))
        );
    }
}
