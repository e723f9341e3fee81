//! vLLM (V1) server log lines, in the exact shapes the engine and its API server print them:
//! the periodic stats line, uvicorn's access lines, `Aborted request`, the start-up sequence and
//! the traceback of a CUDA out-of-memory error raised while serving a request.

use super::clock::vllm_stamp;
use std::fmt::Write;

/// `INFO 11-29 02:00:10 [file:line] message`.
pub fn line(out: &mut String, level: &str, t_ns: u64, source: &str, msg: &str) {
    let _ = writeln!(out, "{level} {} [{source}] {msg}", vllm_stamp(t_ns));
}

/// What one stats line reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatsLine {
    pub prompt_tps: f64,
    pub gen_tps: f64,
    pub running: u32,
    pub waiting: u32,
    /// Cumulative since start.
    pub preemptions: u64,
    /// Percent.
    pub kv_usage_pct: f64,
}

/// The engine's periodic stats line (every 10 s), with the `Preemptions` field that recent V1
/// releases print.
pub fn stats(out: &mut String, t_ns: u64, s: &StatsLine) {
    let msg = format!(
        "Engine 000: Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, Running: {} reqs, Waiting: {} reqs, Preemptions: {}, GPU KV cache usage: {:.1}%, Prefix cache hit rate: 0.0%",
        s.prompt_tps, s.gen_tps, s.running, s.waiting, s.preemptions, s.kv_usage_pct
    );
    line(out, "INFO", t_ns, "loggers.py:123", &msg);
}

/// uvicorn's access line for a request (printed when the response starts). The client address
/// is derived from the request number so that logs are reproducible.
pub fn access(out: &mut String, id: u64, path: &str, status: u16) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    };
    let _ = writeln!(
        out,
        "INFO:     10.8.{}.{}:{} - \"POST {path} HTTP/1.1\" {status} {reason}",
        id / 250 % 250,
        id % 250 + 2,
        40_000 + id % 20_000
    );
}

/// The engine freed a request whose client went away.
pub fn aborted(out: &mut String, t_ns: u64, request_id: &str) {
    line(out, "INFO", t_ns, "async_llm.py:425", &format!("Aborted request {request_id}."));
}

/// The configuration an engine prints when it starts (and that an on-call pastes with the
/// incident): the non-default arguments and the KV-cache capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupInfo {
    pub model: String,
    /// `'name': value` pairs of the non-default arguments, in print order.
    pub args: Vec<(String, String)>,
    pub num_blocks: u32,
    pub block_size: u32,
    pub kv_bytes_per_token: u64,
    pub max_model_len: u32,
    /// `--num-gpu-blocks-override` was given.
    pub blocks_overridden: Option<u32>,
}

impl StartupInfo {
    fn tokens(&self) -> u64 {
        u64::from(self.num_blocks) * u64::from(self.block_size)
    }

    /// `non-default args: {…}`.
    pub fn args_line(&self, out: &mut String, t_ns: u64) {
        let mut parts = vec![format!("'model': '{}'", self.model)];
        parts.extend(self.args.iter().map(|(k, v)| format!("'{k}': {v}")));
        line(out, "INFO", t_ns, "utils.py:326", &format!("non-default args: {{{}}}", parts.join(", ")));
    }

    /// The three capacity lines V1 prints once the cache is allocated.
    pub fn capacity_lines(&self, out: &mut String, t_ns: u64) {
        if let Some(n) = self.blocks_overridden {
            line(
                out,
                "INFO",
                t_ns,
                "kv_cache_utils.py:1047",
                &format!("Overriding num_gpu_blocks with num_gpu_blocks_override={n}"),
            );
        }
        let gib = (self.tokens() * self.kv_bytes_per_token) as f64 / f64::from(1u32 << 30);
        line(out, "INFO", t_ns, "gpu_worker.py:276", &format!("Available KV cache memory: {gib:.2} GiB"));
        line(
            out,
            "INFO",
            t_ns,
            "kv_cache_utils.py:849",
            &format!("GPU KV cache size: {} tokens", thousands(self.tokens())),
        );
        let conc = self.tokens() as f64 / f64::from(self.max_model_len);
        line(
            out,
            "INFO",
            t_ns,
            "kv_cache_utils.py:853",
            &format!(
                "Maximum concurrency for {} tokens per request: {conc:.2}x",
                thousands(u64::from(self.max_model_len))
            ),
        );
    }
}

/// The whole start-up of a cold replica, spread over `[0, ready_ns]`: weights load, the cache
/// is sized, CUDA graphs are captured, then the API server starts.
pub fn cold_start(out: &mut String, info: &StartupInfo, ready_ns: u64, weights_gib: f64) {
    let at = |share: f64| (ready_ns as f64 * share) as u64;
    line(out, "INFO", 0, "api_server.py:1805", "vLLM API server version 0.10.1.1");
    info.args_line(out, at(0.03));
    line(
        out,
        "INFO",
        at(0.12),
        "gpu_model_runner.py:1953",
        &format!("Starting to load model {}...", info.model),
    );
    let load_s = (at(0.55) - at(0.12)) as f64 / 1e9;
    line(
        out,
        "INFO",
        at(0.55),
        "default_loader.py:262",
        &format!("Loading weights took {load_s:.2} seconds"),
    );
    line(
        out,
        "INFO",
        at(0.56),
        "gpu_model_runner.py:2007",
        &format!("Model loading took {weights_gib:.4} GiB and {:.6} seconds", load_s + 0.41),
    );
    info.capacity_lines(out, at(0.62));
    let capture_s = ((at(0.97) - at(0.63)) as f64 / 1e9).round();
    let capture = capture_s as u64;
    line(
        out,
        "INFO",
        at(0.97),
        "gpu_model_runner.py:2640",
        &format!(
            "Capturing CUDA graph shapes: 100%|██████████| 67/67 [00:{capture:02}<00:00, {:5.2}it/s]",
            67.0 / capture_s.max(1.0)
        ),
    );
    line(
        out,
        "INFO",
        at(0.97),
        "gpu_model_runner.py:2708",
        &format!("Graph capturing finished in {capture} secs, took 0.52 GiB"),
    );
    line(
        out,
        "INFO",
        at(0.98),
        "core.py:214",
        &format!(
            "init engine (profile, create kv cache, warmup model) took {:.2} seconds",
            (at(0.98) - at(0.56)) as f64 / 1e9
        ),
    );
    line(out, "INFO", ready_ns, "api_server.py:1880", "Starting vLLM API server 0 on http://0.0.0.0:8000");
    line(
        out,
        "INFO",
        ready_ns,
        "launcher.py:29",
        "Available routes are: /v1/chat/completions, /v1/messages, /metrics, /health",
    );
}

/// A CUDA OOM raised by one request's prefill, as vLLM's chat handler logs it: the handler's
/// error line, then Python's traceback, ending in PyTorch's message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Oom {
    pub tried_bytes: u64,
    /// `torch.cuda.mem_get_info` total, the "total capacity".
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// Memory this process holds (PyTorch's and CUDA's).
    pub process_bytes: u64,
    pub allocated_bytes: u64,
    pub reserved_unallocated_bytes: u64,
}

/// PyTorch's size format: `256.00 GiB`, `618.00 MiB`.
pub fn torch_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= f64::from(1u32 << 30) {
        format!("{:.2} GiB", b / f64::from(1u32 << 30))
    } else if b >= f64::from(1u32 << 20) {
        format!("{:.2} MiB", b / f64::from(1u32 << 20))
    } else {
        format!("{bytes} bytes")
    }
}

impl Oom {
    /// The last line of the traceback (PyTorch 2.x wording).
    pub fn message(&self) -> String {
        format!(
            "CUDA out of memory. Tried to allocate {}. GPU 0 has a total capacity of {} of which {} is free. Including non-PyTorch memory, this process has {} memory in use. Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
            torch_size(self.tried_bytes),
            torch_size(self.total_bytes),
            torch_size(self.free_bytes),
            torch_size(self.process_bytes),
            torch_size(self.allocated_bytes),
            torch_size(self.reserved_unallocated_bytes)
        )
    }

    pub fn traceback(&self, out: &mut String, t_ns: u64) {
        line(out, "ERROR", t_ns, "serving_chat.py:1047", "Error in chat completion stream generator.");
        out.push_str(concat!(
            "Traceback (most recent call last):\n",
            "  File \"/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py\", line 612, in chat_completion_stream_generator\n",
            "    async for res in result_generator:\n",
            "  File \"/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py\", line 247, in forward\n",
            "    attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling\n",
            "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n",
        ));
        let _ = writeln!(out, "torch.OutOfMemoryError: {}", self.message());
    }
}

/// `5,812,432`, as vLLM formats token counts (core's formatter, shared with `triage kv`).
pub fn thousands(n: u64) -> String {
    triage_core::kv::units::fmt_int(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let mut s = String::new();
        stats(
            &mut s,
            10_000_000_000,
            &StatsLine {
                prompt_tps: 1234.56,
                gen_tps: 99.0,
                running: 3,
                waiting: 0,
                preemptions: 2,
                kv_usage_pct: 9.14,
            },
        );
        assert_eq!(
            s,
            "INFO 11-29 02:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 1234.6 tokens/s, Avg generation throughput: 99.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, Preemptions: 2, GPU KV cache usage: 9.1%, Prefix cache hit rate: 0.0%\n"
        );
        assert_eq!(thousands(5_812_432), "5,812,432");
        assert_eq!(thousands(999), "999");
        assert_eq!(torch_size(256 << 30), "256.00 GiB");
        assert_eq!(torch_size(112 << 20), "112.00 MiB");
        let mut a = String::new();
        access(&mut a, 7, "/v1/chat/completions", 429);
        assert_eq!(
            a,
            "INFO:     10.8.0.9:40007 - \"POST /v1/chat/completions HTTP/1.1\" 429 Too Many Requests\n"
        );
    }
}
