//! vLLM and SGLang startup lines about KV capacity, found in arbitrary log text.
//!
//! Total: any text in, a [`StartupCapacity`] out; every figure keeps its 1-based line number
//! and the line itself, and lines that look relevant but do not parse become [`Issue`]s.
//! Worker prefixes (`(VllmWorker rank=0 pid=…)`, `(EngineCore_DP0 pid=…)`), timestamps and
//! ANSI colours around the message do not matter: markers are searched within the line.
//!
//! Lines recognised (vLLM's checked against the vLLM 0.33.0 source; older forms and SGLang's
//! from memory of their sources):
//!
//! - vLLM V1: `Available KV cache memory: 54.62 GiB` (`v1/worker/gpu_worker.py`; 0.33 prints
//!   `round(GiB, 2)` with Python's `str`, so `20.0 GiB` and `54.6 GiB` also occur — both read as
//!   two-decimal figures, see [`vllm_gib`]); the capacity line, one line in 0.33
//!   (`v1/core/kv_cache_utils.py`, `update_kv_cache_capacity`): `GPU KV cache size: 447,440
//!   tokens, Maximum concurrency for 32,768 tokens per request: 13.65x` (`GPU + host`, `XPU`,
//!   `CPU` … instead of `GPU` on other pools), two lines (`GPU KV cache size: …` then
//!   `Maximum concurrency for …`) in older releases; `Model loading took 14.9888 GiB …`, the
//!   debug profile line (`torch peak memory increase: …; non-torch forward increase memory: …;
//!   weights memory: …`), `Setting kv cache block size to 64 for FLASHMLA backend(s).` (0.33,
//!   `platforms/interface.py`) and the older `Forcing kv cache block size to 64 …`;
//!   `Overriding num_gpu_blocks=N with num_gpu_blocks_override=M` and `… KV cache memory
//!   reduced to X GiB.` (a frontend multimodal reservation), the two ways 0.33 changes the KV
//!   memory after printing `Available KV cache memory` (`v1/core/kv_cache_planning.py`,
//!   `multimodal/gpu_ipc_memory.py`).
//! - vLLM V0: `# GPU blocks: 715, # CPU blocks: 1310` (`# cuda blocks: …` later),
//!   `total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB`, `model weights
//!   take …; non_torch_memory takes …; PyTorch activation peak memory takes …; the rest of the
//!   memory reserved for KV Cache is …`, and the `Memory profiling results: … kv_cache_size=…`
//!   form.
//! - Engine config dumps and `non-default args: {…}`: `max_model_len` / `max_seq_len`,
//!   `block_size`, `kv_cache_dtype`, `tensor_parallel_size`, `pipeline_parallel_size`,
//!   `gpu_memory_utilization`, `max_num_seqs`, `max_num_batched_tokens`, `dtype`, `model`, and
//!   the same as command-line flags (`--max-model-len 32768`).
//! - Fatal: `… KV cache is needed, which is larger than the available KV cache memory (…)`
//!   with `the estimated maximum model length is N`; `The model's max seq len (X) is larger
//!   than the maximum number of tokens that can be stored in KV cache (Y)`; `No available
//!   memory for the cache blocks`; `Free memory on device … is less than desired GPU memory
//!   utilization`.
//! - SGLang: `KV Cache is allocated. #tokens: 371661, K size: 12.74 GB, V size: 12.74 GB`
//!   (`KV size:` for MLA), `max_total_num_tokens=…, … max_running_requests=…, context_len=…`,
//!   `Load weight end. … mem usage=15.04 GB`.

use crate::units::{Decimal, Size};
use serde::Serialize;

/// A value and where it was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Logged<T> {
    /// The value read.
    pub value: T,
    /// 1-based line number.
    pub line: usize,
    /// The line, trimmed (at most 400 bytes).
    pub text: String,
}

/// Which engine printed the lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// vLLM.
    Vllm,
    /// SGLang.
    Sglang,
}

/// `Maximum concurrency for 32,768 tokens per request: 13.64x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoggedConcurrency {
    /// The request length the concurrency is given for, tokens.
    pub tokens_per_request: u64,
    /// How many such requests fit at once (`13.64` for `13.64x`).
    pub times: Decimal,
}

/// A startup failure about memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fatal {
    /// V1: one request of `max_seq_len` needs more KV than is available.
    KvNeededExceedsAvailable {
        /// The max seq len the line names, tokens.
        max_seq_len: Option<u64>,
        /// The KV memory one such request needs.
        needed: Option<Size>,
        /// The KV memory available.
        available: Option<Size>,
        /// The longest model length that would fit, as the line estimates it.
        estimated_max_len: Option<u64>,
    },
    /// V0: `max seq len (X)` above the `Y` tokens the KV cache holds.
    MaxSeqLenExceedsKv {
        /// The model's max seq len, tokens.
        max_seq_len: Option<u64>,
        /// The tokens the KV cache holds.
        kv_tokens: Option<u64>,
    },
    /// Weights and activations left nothing for KV.
    NoMemoryForCacheBlocks,
    /// Another process holds memory the utilization target counted on.
    FreeMemoryBelowUtilization,
}

/// Engine settings seen in config dumps, argument lists or flags.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoggedSettings {
    /// `model`.
    pub model: Option<Logged<String>>,
    /// `dtype`.
    pub dtype: Option<Logged<String>>,
    /// `max_model_len` (or `max_seq_len`).
    pub max_model_len: Option<Logged<u64>>,
    /// `block_size`.
    pub block_size: Option<Logged<u64>>,
    /// `kv_cache_dtype`.
    pub kv_cache_dtype: Option<Logged<String>>,
    /// `tensor_parallel_size`.
    pub tensor_parallel_size: Option<Logged<u64>>,
    /// `pipeline_parallel_size`.
    pub pipeline_parallel_size: Option<Logged<u64>>,
    /// `gpu_memory_utilization`.
    pub gpu_memory_utilization: Option<Logged<Decimal>>,
    /// `max_num_seqs`.
    pub max_num_seqs: Option<Logged<u64>>,
    /// `max_num_batched_tokens`.
    pub max_num_batched_tokens: Option<Logged<u64>>,
    /// `async_scheduling` in `non-default args`, or `--[no-]async-scheduling`.
    pub async_scheduling: Option<Logged<bool>>,
}

/// A line that looked like a capacity line but did not parse.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// 1-based line number.
    pub line: usize,
    /// What did not parse.
    pub message: String,
}

/// Everything found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StartupCapacity {
    /// The engine the lines came from, when one was recognised.
    pub engine: Option<Engine>,
    /// vLLM V1 `Available KV cache memory` — the smallest when several ranks print it.
    pub available_kv: Option<Logged<Size>>,
    /// vLLM V1 `GPU KV cache size: N tokens` (any pool name before `KV cache size`).
    pub kv_cache_tokens: Option<Logged<u64>>,
    /// vLLM `Maximum concurrency for N tokens per request: Xx`.
    pub max_concurrency: Option<Logged<LoggedConcurrency>>,
    /// vLLM V0 `# GPU blocks` / `# cuda blocks`.
    pub gpu_blocks: Option<Logged<u64>>,
    /// vLLM V0 `# CPU blocks`.
    pub cpu_blocks: Option<Logged<u64>>,
    /// vLLM `Model loading took X GiB`.
    pub model_loading: Option<Logged<Size>>,
    /// vLLM V0 `total_gpu_memory (X)`.
    pub total_gpu_memory: Option<Logged<Size>>,
    /// Weights memory, from the memory-profiling line.
    pub weights: Option<Logged<Size>>,
    /// Memory outside PyTorch, from the memory-profiling line.
    pub non_torch: Option<Logged<Size>>,
    /// Activation peak, from the memory-profiling line.
    pub activation_peak: Option<Logged<Size>>,
    /// vLLM V0 `the rest of the memory reserved for KV Cache is …` / `kv_cache_size=…`.
    pub kv_reserved: Option<Logged<Size>>,
    /// vLLM `Forcing kv cache block size to N` / `Setting kv cache block size to N`.
    pub forced_block_size: Option<Logged<u64>>,
    /// vLLM 0.33 `… KV cache memory reduced to X GiB.`: what the planner got after a frontend
    /// multimodal reservation.
    pub kv_reduced_to: Option<Logged<Size>>,
    /// vLLM `Overriding num_gpu_blocks=N with num_gpu_blocks_override=M`: N, the blocks the KV
    /// memory held (vLLM's own `available // bytes_per_block`).
    pub blocks_before_override: Option<Logged<u64>>,
    /// … and M, the blocks actually allocated.
    pub num_gpu_blocks_override: Option<Logged<u64>>,
    /// SGLang `KV Cache is allocated. #tokens: N`.
    pub sglang_tokens: Option<Logged<u64>>,
    /// SGLang `K size`.
    pub sglang_k_size: Option<Logged<Size>>,
    /// SGLang `V size`.
    pub sglang_v_size: Option<Logged<Size>>,
    /// SGLang MLA pools print one `KV size`.
    pub sglang_kv_size: Option<Logged<Size>>,
    /// SGLang `max_total_num_tokens`.
    pub sglang_max_total_num_tokens: Option<Logged<u64>>,
    /// SGLang `max_running_requests`.
    pub sglang_max_running_requests: Option<Logged<u64>>,
    /// SGLang `context_len`.
    pub sglang_context_len: Option<Logged<u64>>,
    /// SGLang `Load weight end. … mem usage=X GB`.
    pub sglang_weights: Option<Logged<Size>>,
    /// Engine settings seen in the log.
    pub settings: LoggedSettings,
    /// Startup failures about memory, in line order.
    pub fatal: Vec<Logged<Fatal>>,
    /// Lines that looked relevant but did not parse.
    pub issues: Vec<Issue>,
}

impl StartupCapacity {
    /// True when no capacity figure, setting or fatal line was found.
    pub fn is_empty(&self) -> bool {
        let s = &self.settings;
        self.available_kv.is_none()
            && self.kv_cache_tokens.is_none()
            && self.max_concurrency.is_none()
            && self.gpu_blocks.is_none()
            && self.kv_reserved.is_none()
            && self.kv_reduced_to.is_none()
            && self.num_gpu_blocks_override.is_none()
            && self.sglang_tokens.is_none()
            && self.sglang_max_total_num_tokens.is_none()
            && self.fatal.is_empty()
            && s.max_model_len.is_none()
            && s.kv_cache_dtype.is_none()
            && self.weights.is_none()
            && self.model_loading.is_none()
    }
}

fn clip(line: &str) -> String {
    let t = line.trim();
    if t.len() <= 400 {
        return t.to_owned();
    }
    let mut end = 400;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &t[..end])
}

fn logged<T>(value: T, line: usize, text: &str) -> Logged<T> {
    Logged { value, line, text: clip(text) }
}

/// Keep the first occurrence.
fn first<T>(slot: &mut Option<Logged<T>>, value: T, line: usize, text: &str) {
    if slot.is_none() {
        *slot = Some(logged(value, line, text));
    }
}

/// Text right after `marker`, or `None`.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

fn uint_prefix(s: &str) -> Option<u64> {
    let (d, _) = Decimal::parse_prefix(s.trim_start())?;
    (d.scale == 0).then_some(d.digits)
}

fn size_prefix(s: &str) -> Option<Size> {
    Size::parse_prefix(s.trim_start()).map(|(s, _)| s)
}

/// A vLLM GiB figure: `format_gib` (vLLM 0.33 `utils/mem_utils.py`) prints `round(b / GiB, 2)`
/// through Python's `str`, which drops trailing zeros (`20.0`, `54.6`), and older releases
/// printed `%.2f`; either way the figure is rounded to hundredths, so it is kept at two decimals
/// and its byte range is ±0.005 GiB, not ±0.05.
pub fn vllm_gib(s: Size) -> Size {
    Size { value: s.value.with_min_scale(2), ..s }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The value of `key` in `key=v`, `'key': v`, `"key": v`, `key (v)`, `--key v`, `--key=v`.
/// Returns the text where the value starts (quotes stripped from its start).
fn setting<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(pos) = line[from..].find(key) {
        let start = from + pos;
        let end = start + key.len();
        from = end;
        let boundary_before = start == 0 || !is_word_byte(bytes[start - 1]) || key.starts_with("--");
        let boundary_after = bytes.get(end).is_none_or(|b| !is_word_byte(*b));
        if !boundary_before || !boundary_after {
            continue;
        }
        let rest = line[end..].trim_start_matches(['\'', '"']);
        let rest_trim = rest.trim_start();
        let value = if let Some(v) = rest_trim.strip_prefix(['=', ':', '(']) {
            v
        } else if key.starts_with("--") && rest.starts_with(' ') {
            rest_trim
        } else {
            continue;
        };
        return Some(value.trim_start().trim_start_matches(['\'', '"']));
    }
    None
}

fn word_prefix(s: &str) -> Option<String> {
    let w: String = s
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ')' | '}' | '\'' | '"' | ';'))
        .collect();
    (!w.is_empty()).then_some(w)
}

/// Parse capacity lines out of `text`.
pub fn parse_startup(text: &str) -> StartupCapacity {
    let mut out = StartupCapacity::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        // Cheap filter: every marker contains one of these.
        let lower_hit = [
            "KV",
            "kv",
            "block",
            "memory",
            "max",
            "size",
            "model",
            "weight",
            "dtype",
            "parallel",
            "len",
            "utilization",
            "async",
        ]
        .iter()
        .any(|m| line.contains(m));
        if !lower_hit {
            continue;
        }
        engine(&mut out, line);
        vllm_v1(&mut out, line, n);
        vllm_v0(&mut out, line, n);
        sglang(&mut out, line, n);
        settings(&mut out.settings, line, n);
        fatal(&mut out, line, n);
    }
    out
}

fn engine(out: &mut StartupCapacity, line: &str) {
    if out.engine.is_some() {
        return;
    }
    let l = line.to_ascii_lowercase();
    if l.contains("sglang") || line.contains("KV Cache is allocated") || line.contains("max_total_num_tokens")
    {
        out.engine = Some(Engine::Sglang);
    } else if l.contains("vllm")
        || line.contains("EngineCore")
        || line.contains("Available KV cache memory")
        || line.contains("GPU KV cache size")
        || line.contains("# GPU blocks")
    {
        out.engine = Some(Engine::Vllm);
    }
}

fn vllm_v1(out: &mut StartupCapacity, line: &str, n: usize) {
    if let Some(rest) = after(line, "Available KV cache memory:") {
        match size_prefix(rest).map(vllm_gib) {
            Some(s) => match &out.available_kv {
                None => out.available_kv = Some(logged(s, n, line)),
                Some(prev) if prev.value != s => {
                    out.issues.push(Issue {
                        line: n,
                        message: format!(
                            "ranks report different available KV memory ({} on line {}, {s} here): vLLM gives \
                             every rank the smallest block count",
                            prev.value, prev.line
                        ),
                    });
                    if s.bytes(false) < prev.value.bytes(false) {
                        out.available_kv = Some(logged(s, n, line));
                    }
                }
                Some(_) => {}
            },
            None => out
                .issues
                .push(Issue { line: n, message: "`Available KV cache memory` without a size".into() }),
        }
    }
    // `GPU KV cache size:` — or `GPU + host`, `XPU`, `CPU` … (0.33 names the pool).
    if let Some(rest) = after(line, " KV cache size:").or_else(|| line.strip_prefix("KV cache size:")) {
        match uint_prefix(rest) {
            Some(t) => first(&mut out.kv_cache_tokens, t, n, line),
            None => out
                .issues
                .push(Issue { line: n, message: "`GPU KV cache size` without a token count".into() }),
        }
    }
    if let Some(rest) = after(line, "Maximum concurrency for ") {
        let tokens = uint_prefix(rest);
        let times =
            after(rest, "per request:").and_then(|r| Decimal::parse_prefix(r.trim_start())).map(|(d, _)| d);
        match (tokens, times) {
            (Some(t), Some(x)) => first(
                &mut out.max_concurrency,
                LoggedConcurrency { tokens_per_request: t, times: x },
                n,
                line,
            ),
            _ => out
                .issues
                .push(Issue { line: n, message: "`Maximum concurrency` line not understood".into() }),
        }
    }
    if let Some(s) = after(line, "Model loading took ").and_then(size_prefix) {
        first(&mut out.model_loading, s, n, line);
    }
    if let Some(s) = after(line, "torch peak memory increase:").and_then(size_prefix) {
        first(&mut out.activation_peak, s, n, line);
    }
    if let Some(s) = after(line, "non-torch forward increase memory:").and_then(size_prefix) {
        first(&mut out.non_torch, s, n, line);
    }
    if let Some(s) = after(line, "weights memory:").and_then(size_prefix) {
        first(&mut out.weights, s, n, line);
    }
    if let Some(b) = after(line, "kv cache block size to ").and_then(uint_prefix) {
        first(&mut out.forced_block_size, b, n, line);
    }
    if let Some(s) = after(line, "KV cache memory reduced to ").and_then(size_prefix) {
        first(&mut out.kv_reduced_to, vllm_gib(s), n, line);
    }
    if let Some(rest) = after(line, "Overriding num_gpu_blocks=") {
        if let Some(b) = uint_prefix(rest) {
            first(&mut out.blocks_before_override, b, n, line);
        }
        match after(rest, "num_gpu_blocks_override=").and_then(uint_prefix) {
            Some(b) => first(&mut out.num_gpu_blocks_override, b, n, line),
            None => out.issues.push(Issue {
                line: n,
                message: "`Overriding num_gpu_blocks` without the override count".into(),
            }),
        }
    }
}

fn vllm_v0(out: &mut StartupCapacity, line: &str, n: usize) {
    // `# GPU blocks: 715, # CPU blocks: 1310` and `# cuda blocks: …`.
    let mut from = 0;
    while let Some(pos) = line[from..].find(" blocks:") {
        let at = from + pos;
        from = at + 8;
        let Some(hash) = line[..at].rfind("# ") else { continue };
        let device = &line[hash + 2..at];
        if device.is_empty() || device.contains(' ') {
            continue;
        }
        let Some(count) = uint_prefix(&line[at + 8..]) else {
            out.issues.push(Issue { line: n, message: format!("`# {device} blocks` without a count") });
            continue;
        };
        if device.eq_ignore_ascii_case("cpu") {
            first(&mut out.cpu_blocks, count, n, line);
        } else {
            first(&mut out.gpu_blocks, count, n, line);
        }
    }
    if let Some(s) = after(line, "model weights take ").and_then(size_prefix) {
        first(&mut out.weights, s, n, line);
    }
    if let Some(s) = after(line, "non_torch_memory takes ").and_then(size_prefix) {
        first(&mut out.non_torch, s, n, line);
    }
    if let Some(s) = after(line, "activation peak memory takes ").and_then(size_prefix) {
        first(&mut out.activation_peak, s, n, line);
    }
    if let Some(s) = after(line, "reserved for KV Cache is ").and_then(size_prefix) {
        first(&mut out.kv_reserved, s, n, line);
    }
    for (key, slot) in [
        ("kv_cache_size", &mut out.kv_reserved),
        ("total_gpu_memory", &mut out.total_gpu_memory),
        ("non_torch_memory", &mut out.non_torch),
        ("weights_memory", &mut out.weights),
    ] {
        if let Some(s) = setting(line, key).and_then(size_prefix) {
            first(slot, s, n, line);
        }
    }
}

fn sglang(out: &mut StartupCapacity, line: &str, n: usize) {
    if let Some(rest) = after(line, "KV Cache is allocated.") {
        match after(rest, "#tokens:").and_then(uint_prefix) {
            Some(t) => first(&mut out.sglang_tokens, t, n, line),
            None => {
                out.issues.push(Issue { line: n, message: "`KV Cache is allocated` without #tokens".into() })
            }
        }
        for (marker, slot) in [
            ("KV size:", &mut out.sglang_kv_size),
            ("K size:", &mut out.sglang_k_size),
            ("V size:", &mut out.sglang_v_size),
        ] {
            // `V size:` also occurs inside `KV size:`: require a separator before the marker.
            let mut from = 0;
            while let Some(pos) = rest[from..].find(marker) {
                let at = from + pos;
                from = at + marker.len();
                let ok = at == 0 || matches!(rest.as_bytes()[at - 1], b' ' | b',');
                if ok && let Some(s) = size_prefix(&rest[at + marker.len()..]) {
                    first(slot, s, n, line);
                    break;
                }
            }
        }
    }
    for (key, slot) in [
        ("max_total_num_tokens", &mut out.sglang_max_total_num_tokens),
        ("max_running_requests", &mut out.sglang_max_running_requests),
        ("context_len", &mut out.sglang_context_len),
    ] {
        if let Some(v) = setting(line, key).and_then(uint_prefix) {
            first(slot, v, n, line);
        }
    }
    if line.contains("Load weight end")
        && let Some(s) = after(line, "mem usage=").and_then(size_prefix)
    {
        first(&mut out.sglang_weights, s, n, line);
    }
}

fn settings(s: &mut LoggedSettings, line: &str, n: usize) {
    let uint = |keys: &[&str]| keys.iter().find_map(|k| setting(line, k).and_then(uint_prefix));
    let word = |keys: &[&str]| keys.iter().find_map(|k| setting(line, k).and_then(word_prefix));
    if let Some(v) = uint(&["max_model_len", "max_seq_len", "--max-model-len"]) {
        first(&mut s.max_model_len, v, n, line);
    }
    if let Some(v) = uint(&["block_size", "--block-size"]) {
        first(&mut s.block_size, v, n, line);
    }
    if let Some(v) = word(&["kv_cache_dtype", "--kv-cache-dtype"]) {
        first(&mut s.kv_cache_dtype, v, n, line);
    }
    if let Some(v) = uint(&["tensor_parallel_size", "--tensor-parallel-size", "tp_size"]) {
        first(&mut s.tensor_parallel_size, v, n, line);
    }
    if let Some(v) = uint(&["pipeline_parallel_size", "--pipeline-parallel-size", "pp_size"]) {
        first(&mut s.pipeline_parallel_size, v, n, line);
    }
    if let Some(v) = ["gpu_memory_utilization", "--gpu-memory-utilization"]
        .iter()
        .find_map(|k| setting(line, k).and_then(|r| Decimal::parse_prefix(r).map(|(d, _)| d)))
    {
        first(&mut s.gpu_memory_utilization, v, n, line);
    }
    if let Some(v) = uint(&["max_num_seqs", "--max-num-seqs"]) {
        first(&mut s.max_num_seqs, v, n, line);
    }
    if let Some(v) = uint(&["max_num_batched_tokens", "--max-num-batched-tokens"]) {
        first(&mut s.max_num_batched_tokens, v, n, line);
    }
    let flag = |f: &str| {
        line.match_indices(f).any(|(i, _)| line.as_bytes().get(i + f.len()).is_none_or(|b| !is_word_byte(*b)))
    };
    let async_scheduling = if flag("--no-async-scheduling") {
        Some(false)
    } else if flag("--async-scheduling") {
        Some(true)
    } else {
        word(&["async_scheduling"]).and_then(|w| match w.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
    };
    if let Some(v) = async_scheduling {
        first(&mut s.async_scheduling, v, n, line);
    }
    if let Some(v) = word(&["model"]) {
        first(&mut s.model, v, n, line);
    }
    if let Some(v) = word(&["dtype"]) {
        first(&mut s.dtype, v, n, line);
    }
}

fn fatal(out: &mut StartupCapacity, line: &str, n: usize) {
    if line.contains("KV cache is needed, which is larger than the available KV cache memory") {
        let max_seq_len = after(line, "max seq len (").and_then(uint_prefix);
        let needed = line
            .find(" KV cache is needed")
            .and_then(|end| line[..end].rfind('(').map(|start| &line[start + 1..end]))
            .and_then(size_prefix)
            .map(vllm_gib);
        let available = after(line, "available KV cache memory (").and_then(size_prefix).map(vllm_gib);
        let estimated_max_len = after(line, "estimated maximum model length is").and_then(uint_prefix);
        out.fatal.push(logged(
            Fatal::KvNeededExceedsAvailable { max_seq_len, needed, available, estimated_max_len },
            n,
            line,
        ));
    } else if line.contains("maximum number of tokens that can be stored in KV cache") {
        let max_seq_len = after(line, "max seq len (").and_then(uint_prefix);
        let kv_tokens = after(line, "stored in KV cache (").and_then(uint_prefix);
        out.fatal.push(logged(Fatal::MaxSeqLenExceedsKv { max_seq_len, kv_tokens }, n, line));
    } else if line.contains("No available memory for the cache blocks") {
        out.fatal.push(logged(Fatal::NoMemoryForCacheBlocks, n, line));
    } else if line.contains("is less than desired GPU memory utilization") {
        out.fatal.push(logged(Fatal::FreeMemoryBelowUtilization, n, line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::SizeUnit;

    const V1: &str = "\
INFO 05-12 10:01:02 [core.py:58] Initializing a V1 LLM engine (v0.9.0) with config: model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, pipeline_parallel_size=1, kv_cache_dtype=auto, served_model_name=llama
INFO 05-12 10:01:20 [gpu_model_runner.py:1360] Model loading took 14.9889 GiB and 4.23 seconds
INFO 05-12 10:01:31 [gpu_worker.py:227] Available KV cache memory: 54.62 GiB
INFO 05-12 10:01:31 [kv_cache_utils.py:715] GPU KV cache size: 447,088 tokens
INFO 05-12 10:01:31 [kv_cache_utils.py:719] Maximum concurrency for 32,768 tokens per request: 13.64x
";

    #[test]
    fn vllm_v1_lines() {
        let s = parse_startup(V1);
        assert_eq!(s.engine, Some(Engine::Vllm));
        let a = s.available_kv.as_ref().unwrap();
        assert_eq!((a.value.to_string(), a.line), ("54.62 GiB".to_owned(), 3));
        assert_eq!(s.kv_cache_tokens.as_ref().map(|t| (t.value, t.line)), Some((447_088, 4)));
        let c = s.max_concurrency.as_ref().unwrap();
        assert_eq!((c.value.tokens_per_request, c.value.times.to_string()), (32_768, "13.64".to_owned()));
        assert_eq!(s.model_loading.as_ref().map(|m| m.value.to_string()), Some("14.9889 GiB".to_owned()));
        let st = &s.settings;
        assert_eq!(st.max_model_len.as_ref().map(|v| v.value), Some(32_768));
        assert_eq!(st.kv_cache_dtype.as_ref().map(|v| v.value.as_str()), Some("auto"));
        assert_eq!(st.tensor_parallel_size.as_ref().map(|v| v.value), Some(1));
        assert_eq!(st.model.as_ref().map(|v| v.value.as_str()), Some("meta-llama/Llama-3.1-8B-Instruct"));
        assert_eq!(st.dtype.as_ref().map(|v| v.value.as_str()), Some("torch.bfloat16"));
        assert!(s.issues.is_empty(), "{:?}", s.issues);
    }

    /// vLLM 0.33's capacity line is one line (`update_kv_cache_capacity`,
    /// `v1/core/kv_cache_utils.py`); older releases printed two. Both parse the same.
    #[test]
    fn vllm_0_33_one_line_capacity() {
        let s = parse_startup(
            "(EngineCore pid=2417) INFO 11-29 09:14:31 [gpu_worker.py:772] Available KV cache memory: 20.0 GiB\n\
             (EngineCore pid=2417) INFO 11-29 09:14:31 [kv_cache_utils.py:1147] GPU KV cache size: 62,557 tokens, \
             Maximum concurrency for 32,768 tokens per request: 1.91x\n",
        );
        assert_eq!(s.kv_cache_tokens.as_ref().map(|t| (t.value, t.line)), Some((62_557, 2)));
        let c = s.max_concurrency.as_ref().unwrap();
        assert_eq!(
            (c.value.tokens_per_request, c.value.times.to_string(), c.line),
            (32_768, "1.91".into(), 2)
        );
        // `format_gib` printed round(x, 2) through `str`: "20.0" still means 20.00 ± 0.005 GiB.
        let a = s.available_kv.as_ref().unwrap();
        assert_eq!(a.value.to_string(), "20.00 GiB");
        assert_eq!(a.value.bytes_range(false), (21_469_467_771, 21_480_205_189));
        assert!(s.issues.is_empty(), "{:?}", s.issues);
        // Other pools name themselves.
        for pool in ["GPU + host", "XPU", "CPU"] {
            let s = parse_startup(&format!(
                "INFO [kv_cache_utils.py:1147] {pool} KV cache size: 1,024 tokens, x"
            ));
            assert_eq!(s.kv_cache_tokens.map(|t| t.value), Some(1024), "{pool}");
        }
    }

    #[test]
    fn vllm_0_33_block_size_override_reservation_and_async() {
        let s = parse_startup(
            "INFO [interface.py:776] Setting kv cache block size to 64 for FLASHMLA backend(s).\n\
             INFO [kv_cache_planning.py:1526] Overriding num_gpu_blocks=27965 with num_gpu_blocks_override=512\n\
             INFO [gpu_ipc_memory.py:256] Reserving 2.0 GiB of GPU memory for frontend multimodal decoding (2.0 GiB \
             raw-frame semaphore budget, 0.0 GiB decoder+CUDA-context across 1 API server(s) @ 0.0 GiB/server); KV \
             cache memory reduced to 52.62 GiB.\n\
             $ vllm serve google/gemma-3-27b-it --no-async-scheduling\n",
        );
        assert_eq!(s.forced_block_size.as_ref().map(|v| v.value), Some(64));
        assert_eq!(s.blocks_before_override.as_ref().map(|v| v.value), Some(27_965));
        assert_eq!(s.num_gpu_blocks_override.as_ref().map(|v| (v.value, v.line)), Some((512, 2)));
        assert_eq!(s.kv_reduced_to.as_ref().map(|v| v.value.to_string()), Some("52.62 GiB".into()));
        assert_eq!(s.settings.async_scheduling.as_ref().map(|v| v.value), Some(false));
        let s = parse_startup("non-default args: {'model': 'x', 'async_scheduling': True}");
        assert_eq!(s.settings.async_scheduling.map(|v| v.value), Some(true));
        let s = parse_startup("Overriding num_gpu_blocks=12 with something else");
        assert_eq!(s.issues.len(), 1);
    }

    #[test]
    fn vllm_v0_lines() {
        let s = parse_startup(
            "INFO 10-01 12:00:00 worker.py:232] Memory profiling takes 5.18 seconds\n\
             the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n\
             model weights take 14.99GiB; non_torch_memory takes 0.18GiB; PyTorch activation peak memory takes 1.24GiB; the rest of the memory reserved for KV Cache is 54.86GiB.\n\
             INFO 10-01 12:00:01 gpu_executor.py:122] # GPU blocks: 28088, # CPU blocks: 2048\n",
        );
        assert_eq!(s.total_gpu_memory.as_ref().map(|v| v.value.to_string()), Some("79.19 GiB".into()));
        assert_eq!(
            s.settings.gpu_memory_utilization.as_ref().map(|v| v.value.to_string()),
            Some("0.90".into())
        );
        assert_eq!(s.weights.as_ref().map(|v| v.value.to_string()), Some("14.99 GiB".into()));
        assert_eq!(s.non_torch.as_ref().map(|v| v.line), Some(3));
        assert_eq!(s.activation_peak.as_ref().map(|v| v.value.to_string()), Some("1.24 GiB".into()));
        assert_eq!(s.kv_reserved.as_ref().map(|v| v.value.to_string()), Some("54.86 GiB".into()));
        assert_eq!(s.gpu_blocks.as_ref().map(|v| v.value), Some(28_088));
        assert_eq!(s.cpu_blocks.as_ref().map(|v| v.value), Some(2_048));
    }

    #[test]
    fn sglang_lines() {
        let s = parse_startup(
            "[2025-01-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.48 GB, mem usage=15.04 GB.\n\
             [2025-01-01 10:00:01 TP0] KV Cache is allocated. #tokens: 371661, K size: 12.74 GB, V size: 12.74 GB\n\
             [2025-01-01 10:00:02 TP0] max_total_num_tokens=371661, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072\n\
             [2025-01-01 10:00:03 TP0] KV Cache is allocated. #tokens: 1000, KV size: 3.50 GB\n",
        );
        assert_eq!(s.engine, Some(Engine::Sglang));
        assert_eq!(s.sglang_tokens.as_ref().map(|v| v.value), Some(371_661));
        let k = s.sglang_k_size.as_ref().unwrap();
        assert_eq!((k.value.unit, k.value.to_string()), (SizeUnit::Gb, "12.74 GB".into()));
        assert!(s.sglang_v_size.is_some());
        // The MLA line's `KV size` is not mistaken for `V size`.
        assert_eq!(s.sglang_kv_size.as_ref().map(|v| v.line), Some(4));
        assert_eq!(s.sglang_v_size.as_ref().map(|v| v.line), Some(2));
        assert_eq!(s.sglang_max_running_requests.as_ref().map(|v| v.value), Some(4_097));
        assert_eq!(s.sglang_context_len.as_ref().map(|v| v.value), Some(131_072));
        assert_eq!(s.sglang_weights.as_ref().map(|v| v.value.to_string()), Some("15.04 GB".into()));
    }

    #[test]
    fn fatal_lines() {
        let s = parse_startup(
            "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.78 GiB). Based on the available memory, the estimated maximum model length is 80112. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n\
             ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (54432). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n\
             ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n",
        );
        assert_eq!(s.fatal.len(), 3);
        match &s.fatal[0].value {
            Fatal::KvNeededExceedsAvailable { max_seq_len, needed, available, estimated_max_len } => {
                assert_eq!(*max_seq_len, Some(131_072));
                assert_eq!(needed.map(|n| n.to_string()), Some("16.00 GiB".into()));
                assert_eq!(available.map(|n| n.to_string()), Some("9.78 GiB".into()));
                assert_eq!(*estimated_max_len, Some(80_112));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s.fatal[1].value,
            Fatal::MaxSeqLenExceedsKv { max_seq_len: Some(131_072), kv_tokens: Some(54_432) }
        );
        assert_eq!(s.fatal[2].value, Fatal::NoMemoryForCacheBlocks);
    }

    #[test]
    fn ranks_and_flags() {
        let s = parse_startup(
            "(VllmWorker rank=0 pid=1) INFO [gpu_worker.py:227] Available KV cache memory: 30.10 GiB\n\
             (VllmWorker rank=1 pid=2) INFO [gpu_worker.py:227] Available KV cache memory: 29.95 GiB\n\
             $ vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --max-model-len=65536 --kv-cache-dtype fp8\n\
             INFO [cuda.py:160] Forcing kv cache block size to 64 for FlashMLA backend.\n",
        );
        let a = s.available_kv.as_ref().unwrap();
        assert_eq!((a.value.to_string(), a.line), ("29.95 GiB".into(), 2));
        assert_eq!(s.issues.len(), 1);
        assert_eq!(s.settings.tensor_parallel_size.as_ref().map(|v| v.value), Some(8));
        assert_eq!(s.settings.max_model_len.as_ref().map(|v| v.value), Some(65_536));
        assert_eq!(s.settings.kv_cache_dtype.as_ref().map(|v| v.value.as_str()), Some("fp8"));
        assert_eq!(s.forced_block_size.as_ref().map(|v| v.value), Some(64));
    }

    #[test]
    fn every_prefix_parses() {
        // Truncated pastes: every prefix of every fixture line parses without a panic.
        for text in
            [V1, "Maximum concurrency for 32,768 tokens per request: 13.64x", "# cuda blocks: 27,943, # CPU"]
        {
            for (i, _) in text.char_indices() {
                let _ = parse_startup(&text[..i]);
            }
        }
    }

    #[test]
    fn never_panics_on_garbage() {
        let inputs = [
            "",
            "GPU KV cache size:",
            "Available KV cache memory: lots",
            "# GPU blocks: , # CPU blocks:",
            "Maximum concurrency for x tokens",
            "KV Cache is allocated. #tokens: K size: V size:",
            "max_model_len=\u{1F600} block_size= kv_cache_dtype=",
            "é# ü blocks: 9 \u{0}",
            "model weights take ;",
        ];
        for t in inputs {
            let _ = parse_startup(t);
        }
        let s = parse_startup("GPU KV cache size: many tokens\nAvailable KV cache memory: ?");
        assert_eq!(s.issues.len(), 2);
        assert_eq!(s.issues[0].line, 1);
        let long = "Available KV cache memory: 1.00 GiB ".repeat(50);
        assert!(parse_startup(&long).available_kv.unwrap().text.len() <= 404);
    }
}
