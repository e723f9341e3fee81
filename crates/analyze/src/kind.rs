//! What kind of text a line looks like: the cheap, line-local recogniser that splits a paste
//! into sections.
//!
//! Only *strong* signals are recognised here — strings that appear in exactly one kind of
//! source (`Avg prompt throughput`, `NVIDIA-SMI`, `CUDA out of memory`, `# TYPE`). Lines without
//! one are weak: they join whatever section is open, and its parser decides what they mean.

pub use triage_report::kind::InputKind;

fn any(line: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| triage_base::words::contains(line, n))
}

/// Request-log field names (and aliases) that identify a per-request timing record.
pub(crate) const REQUEST_KEYS: &[&str] = &[
    "first_token_time",
    "first_token_ts",
    "first_token_at",
    "enqueue_time",
    "enqueued_at",
    "queued_at",
    "arrival_time",
    "last_token_time",
    "finish_time",
    "ttft_ms",
    "ttft_s",
    "queue_time_ms",
    "queue_ms",
];

const BENCH: &[&str] = &[
    "Serving Benchmark Result",
    // trtllm-bench's report.
    "PERFORMANCE OVERVIEW",
    "Request Throughput (req/sec)",
    "[TTFT] ",
    "[TPOT] ",
    "Mean TTFT (ms)",
    "Median TTFT (ms)",
    "P99 TTFT (ms)",
    "Mean TPOT (ms)",
    "Mean ITL (ms)",
    "Benchmark duration (s)",
    "Request throughput (req/s)",
    "Output token throughput (tok/s)",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_itl_ms",
    "GuideLLM",
    "guidellm",
    "aiperf",
    "AIPerf",
    "Time to First Token",
    "Inter Token Latency",
    "time_to_first_token",
    "Successful requests:",
    "num_prompts",
    "\"request_throughput\"",
    "\"output_throughput\"",
    "\"burstiness\"",
    "GenAI-Perf",
    // guidellm's console tables
    "Statistics (Completed Requests)",
    "Statistics (All Requests)",
    "Run Summary Info",
];

const NVIDIA_SMI: &[&str] = &[
    "NVIDIA-SMI",
    "NVSMI LOG",
    // `nvidia-smi -q -x`.
    "<nvidia_smi_log",
    "<clocks_event_reason",
    "<clocks_throttle_reason",
    "Clocks Event Reasons",
    "Clocks Throttle Reasons",
    "clocks.sm",
    "clocks.current.sm",
    "utilization.gpu",
    "memory.used [MiB]",
    "power.draw",
    "clocks_event_reasons",
    "clocks_throttle_reasons",
    "GPU-Util",
    "Product Name",
];

const OOM: &[&str] = &["CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory"];

const VLLM: &[&str] = &[
    "Avg prompt throughput",
    "Avg generation throughput",
    "GPU KV cache usage",
    "PreemptionMode",
    "Available KV cache memory",
    "GPU KV cache size",
    "Maximum concurrency for",
    "# GPU blocks",
    "Model loading took",
    "model weights take",
    "EngineCore",
    "EngineDeadError",
    "AsyncLLMEngine",
    "vllm.",
    "vLLM",
    "non-default args",
    "No available memory for the cache blocks",
    "larger than the available KV cache memory",
    "is less than desired GPU memory utilization",
    "the maximum number of tokens that can be stored in KV cache",
    "Chunked prefill is enabled",
    "] Added request ",
    "] Aborted request",
];

const SGLANG: &[&str] = &[
    "Prefill batch",
    "Decode batch",
    "#running-req",
    "#queue-req",
    "KV Cache is allocated",
    "ServerArgs(",
    "Decode out of memory happened",
    "Retract requests",
];

const TGI: &[&str] = &["text_generation_router", "text_generation_launcher", "text_generation_server"];

const CLIENT: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_MODEL",
    "API_TIMEOUT_MS",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "model_provider",
    "[model_providers",
    "wire_api",
    "env_key",
    "max_retries",
    "timeout_ms",
    "base_url",
    "claude-code-settings",
];

/// A line that is unmistakably a client setting: `export` of a client variable, a JSON key or a
/// TOML/dotenv assignment of one, a Codex provider table, a one-line settings.json. Checked
/// before the engine lists, whose words (`vllm.`, `sglang`) turn up inside base URLs and model
/// names (`base_url = "http://vllm.internal:8000/v1"`).
fn is_client_setting(t: &str) -> bool {
    // A shell prompt before the command (`$ export OPENAI_BASE_URL=…`).
    let t = t.strip_prefix("$ ").unwrap_or(t);
    if t.starts_with("[model_providers") {
        return true;
    }
    if t.starts_with('{') {
        return t.contains("\"env\"") && any(t, CLIENT);
    }
    let (body, json) = match (t.strip_prefix("export "), t.strip_prefix('"')) {
        (Some(r), _) => (r.trim_start(), false),
        (None, Some(r)) => (r, true),
        (None, None) => (t, false),
    };
    let end = body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(body.len());
    let (key, rest) = body.split_at(end);
    let rest = if json { rest.strip_prefix('"').map(str::trim_start) } else { Some(rest.trim_start()) };
    let assigns = rest.is_some_and(|r| r.starts_with(if json { ':' } else { '=' }));
    // A key's line must reach the client parser, which cuts the value out before quoting; an
    // `unknown` section would quote it as is.
    let key_setting =
        key.ends_with("_API_KEY") || key.ends_with("_AUTH_TOKEN") || key == "api_key" || key == "apiKey";
    assigns && (CLIENT.contains(&key) || key_setting)
}

/// Does this look like a Prometheus sample (`name{labels} value [ts]`)? Requires an underscore,
/// a colon or labels in the name so that ordinary `word 5` text is not taken for a metric.
pub(crate) fn is_prom_sample(line: &str) -> bool {
    let b = line.as_bytes();
    if b.is_empty() || !(b[0].is_ascii_alphabetic() || b[0] == b'_' || b[0] == b':') {
        return false;
    }
    let name_end =
        b.iter().position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b':')).unwrap_or(b.len());
    let name = &line[..name_end];
    // `Concurrency: 8` is a `key: value` line: no exporter ends a metric name with a colon.
    if name.ends_with(':') {
        return false;
    }
    let mut rest = &line[name_end..];
    let labelled = rest.starts_with('{');
    if labelled {
        match rest.rfind('}') {
            Some(i) => rest = &rest[i + 1..],
            None => return false,
        }
    }
    if !(labelled || name.contains('_') || name.contains(':')) {
        return false;
    }
    let mut parts = rest.split_whitespace();
    let value_ok = parts
        .next()
        .is_some_and(|v| v.parse::<f64>().is_ok() || matches!(v, "NaN" | "+Inf" | "-Inf" | "Inf"));
    value_ok && parts.next().is_none_or(|ts| ts.parse::<i64>().is_ok()) && parts.next().is_none()
}

/// A prompt or heading that names the command (`$ nvidia-smi -q`, `### nvidia-smi`), or dmon's
/// header in its other forms (`#Date Time gpu pwr …` with `-o DT`): the first line of a paste
/// of nvidia-smi output, so the output that follows opens its section instead of `unknown`.
fn smi_command_or_dmon_header(t: &str) -> bool {
    if t.trim_start_matches(['$', '#', '>', ' ']).starts_with("nvidia-smi") {
        return true;
    }
    t.strip_prefix('#').is_some_and(|rest| {
        let cols: Vec<&str> = rest.split_whitespace().collect();
        cols.iter().any(|c| c.eq_ignore_ascii_case("gpu"))
            && cols.iter().any(|c| matches!(*c, "pwr" | "pclk" | "sm" | "fb"))
    })
}

/// The header of a box-drawn table of statistics (aiperf's and genai-perf's `┃ Metric ┃ avg ┃
/// … ┃ p99 ┃`, `┃ Statistic ┃ avg ┃ …`): a benchmark's table, whatever its rows are called.
fn box_stats_header(t: &str) -> bool {
    t.starts_with('┃')
        && (t.contains("Statistic") || t.contains("Metric"))
        && (t.contains(" avg ") || t.contains(" p99 "))
}

/// Strong recognition of one line (ANSI codes already stripped).
pub fn recognize(line: &str) -> Option<InputKind> {
    let t = line.trim();
    if t.is_empty() {
        return None;
    }
    if t.starts_with("data:") || t.starts_with("event:") {
        return Some(InputKind::SseStream);
    }
    if is_recording_line(t) {
        return Some(InputKind::GpuSeries);
    }
    if t.starts_with("# HELP ") || t.starts_with("# TYPE ") || t.starts_with("# UNIT ") || t == "# EOF" {
        return Some(InputKind::PromMetrics);
    }
    // Before the substring lists: metric names contain words those lists look for.
    if is_prom_sample(t) {
        return Some(InputKind::PromMetrics);
    }
    if is_client_setting(t) {
        return Some(InputKind::ClientConfig);
    }
    // A table row (`| Mean TTFT (ms) | 813 |`, `│ Time To First Token (ms) │ …`) is weak: it
    // joins the table it is a row of, whichever section read the header.
    if !t.starts_with('|') && any(t, BENCH) || box_stats_header(t) {
        return Some(InputKind::BenchOutput);
    }
    if any(t, OOM) {
        return Some(InputKind::OomTrace);
    }
    if any(t, NVIDIA_SMI)
        || t.starts_with("# gpu")
        || t.starts_with("+-----")
        || t.starts_with("|====")
        || smi_command_or_dmon_header(t)
    {
        return Some(InputKind::NvidiaSmi);
    }
    // The engine's name alone opens its section, but not in the reporter's markdown heading
    // (`## SGLang v0.4.4post3:` above a client's timings).
    if any(t, SGLANG) || !t.starts_with("##") && any(t, &["sglang", "SGLang"]) {
        return Some(InputKind::SglangLog);
    }
    // TGI's span fields are quoted durations (`total_time="2.1s"`); unquoted `total_time=2.1`
    // is a request log's logfmt.
    let tgi_text = t.contains("total_time=\"") && t.contains("queue_time=\"");
    let tgi_json = t.contains("\"total_time\":\"") && t.contains("\"queue_time\":\"");
    if any(t, TGI) || tgi_text || tgi_json {
        return Some(InputKind::TgiLog);
    }
    if any(t, VLLM) {
        return Some(InputKind::VllmLog);
    }
    if any(t, CLIENT) || t.starts_with("export ") {
        return Some(InputKind::ClientConfig);
    }
    if any(t, REQUEST_KEYS)
        || t.starts_with('{') && any(t, &["\"request_id\"", "\"req_id\"", "latency_ms", "duration_ms"])
    {
        return Some(InputKind::RequestLog);
    }
    // An API server's access line (uvicorn): vLLM's unless another engine's section claims it.
    if t.contains(" HTTP/1.") && (t.contains("\"POST ") || t.contains("\"GET ")) {
        return Some(InputKind::VllmLog);
    }
    None
}

/// A line of the runner's recording: a sample (`"t"`, `"gpu"` and an NVML field) or its meta.
pub(crate) fn is_recording_line(t: &str) -> bool {
    t.starts_with('{')
        && (t.contains("\"sm_clock_mhz\"") || t.contains("\"power_mw\"") || t.contains("\"mem_used_bytes\""))
        && t.contains("\"gpu\"")
        || t.starts_with("{\"meta\"") && t.contains("\"gpus\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_brief_formats() {
        let cases = [
            (
                "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%, Prefix cache hit rate: 92.0%",
                InputKind::VllmLog,
            ),
            (
                "[2026-11-29 10:00:01] Decode batch, #running-req: 233, #token: 370959, token usage: 0.82, cuda graph: True, gen throughput (token/s): 4594.01, #queue-req: 317",
                InputKind::SglangLog,
            ),
            ("vllm:num_requests_waiting{model_name=\"m\"} 14.0", InputKind::PromMetrics),
            ("# TYPE vllm:time_to_first_token_seconds histogram", InputKind::PromMetrics),
            (
                "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |",
                InputKind::NvidiaSmi,
            ),
            ("    Clocks Event Reasons", InputKind::NvidiaSmi),
            ("### nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE (under load)", InputKind::NvidiaSmi),
            ("$ nvidia-smi dmon -s pucvmet", InputKind::NvidiaSmi),
            ("#Date       Time        gpu    pwr  gtemp  mtemp     sm", InputKind::NvidiaSmi),
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", InputKind::OomTrace),
            ("export ANTHROPIC_BASE_URL=\"https://gw.example/api\"", InputKind::ClientConfig),
            ("base_url = \"https://gw.example/api\"", InputKind::ClientConfig),
            ("Mean TTFT (ms):                          120.41", InputKind::BenchOutput),
            (
                "┃            Statistic ┃           avg ┃           min ┃           p99 ┃",
                InputKind::BenchOutput,
            ),
            (r#"{"request_id":"r1","enqueue_time":1.0,"first_token_time":1.3}"#, InputKind::RequestLog),
            ("data: {\"choices\":[]}", InputKind::SseStream),
        ];
        for (line, kind) in cases {
            assert_eq!(recognize(line), Some(kind), "{line}");
        }
    }

    #[test]
    fn weak_lines_are_not_recognised() {
        for line in ["", "hello 5", "  File \"x.py\", line 3, in f", "{", "Running the job", "name = \"x\""] {
            assert_eq!(recognize(line), None, "{line}");
        }
    }

    #[test]
    fn prom_sample_shapes() {
        assert!(is_prom_sample("http_requests_total 5"));
        assert!(is_prom_sample("up{job=\"x\"} 1 1700000000000"));
        assert!(is_prom_sample("vllm:kv_cache_usage_perc +Inf"));
        assert!(!is_prom_sample("up{job=\"x\" 1"));
        assert!(!is_prom_sample("ttft_ms=12"));
        assert!(!is_prom_sample("a_b 1 2 3"));
        assert!(!is_prom_sample("Concurrency: 8"));
        assert!(!is_prom_sample("max_batch_size: 64"));
    }
}
