//! Command-line arguments of `triage` (clap), and the small value parsers they need.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use triage_core::endpoint::Api;
use triage_core::kv::defaults as kv_defaults;

#[derive(Parser, Debug)]
#[command(
    name = "triage",
    version,
    about = "From an LLM-serving alert to a root cause: probe, analyze, estimate."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Stream requests at an OpenAI- or Anthropic-compatible endpoint and time every token.
    ///
    /// Exit status: 0 when at least one request succeeded, 1 when all failed or the
    /// --otlp/--otlp-endpoint export failed (the results are printed first), 2 on usage errors.
    Probe(Box<ProbeArgs>),
    /// A canary for engines that hang while /health says 200: every interval, one tiny streamed
    /// request (max_tokens 1–4) with a hard deadline and, with --metrics-url, a read of the
    /// engine's /metrics. Names the engine serving (HEALTHY), slow (TTFT_HIGH: TTFT above
    /// --slo-ttft-ms), stalled (THROUGHPUT_ZERO: no headers or no token before the deadline, or
    /// requests running or waiting while the engine's token counters do not move between
    /// distinct scrapes) or down (refused, reset, 5xx). --listen serves its own metrics for an
    /// alert rule. One line per interval until interrupted (Ctrl-C), or one report with --once.
    ///
    /// Exit status: with --once, 0 when serving, 1 otherwise; 2 on usage errors (--timeout not
    /// below --every, a bad URL or --listen address, a missing --api-key-env variable).
    Watch(Box<WatchArgs>),
    /// The main job on a built-in service, no setup: with SCENARIO, start the incident simulator
    /// with that fault, probe it, analyse its logs and metrics and print the diagnosis; without,
    /// probe the built-in scripted SSE server on 127.0.0.1 and print the report.
    Demo(DemoArgs),
    /// The incident simulator: a continuous-batching engine with a paged KV cache, calibrated on
    /// a real H200 trace, with one injected fault per scenario. Writes the logs, /metrics,
    /// request log and GPU telemetry the fault produces (--out DIR), writes a fleet's time series
    /// over the incident as OpenMetrics for Prometheus' backfill (--openmetrics FILE), or serves
    /// it live over HTTP on 127.0.0.1 (--serve PORT).
    ///
    /// Exit status: 0 when it ran, 2 on usage errors (unknown scenario, missing
    /// --out/--openmetrics/--serve).
    Sim(Box<SimArgs>),
    /// Read logs, /metrics scrapes, nvidia-smi output, OOM tracebacks, request logs and client
    /// configs; name the failure class and the root causes with the lines that prove them.
    /// With --prometheus URL, read the window from Prometheus instead (or as well): per replica
    /// and per GPU, ranked across the fleet, every evidence line cited with a graph link.
    ///
    /// Exit status: 0 when the analysis ran (whatever it found), 1 when Prometheus could not be
    /// read (unreachable, slow, not Prometheus, an empty window), 2 on usage errors (a bad
    /// selector or window, a missing credential variable).
    Analyze(Box<AnalyzeArgs>),
    /// Estimate the KV cache vLLM allocates for a model (config.json or preset) on a GPU:
    /// bytes per token, blocks, tokens, concurrency, the max_model_len and max_num_seqs that
    /// fit; with --log, reconcile with the server's startup lines.
    ///
    /// Exit status: 0 when the estimate ran, 2 on bad input (config, options).
    Kv(Box<KvArgs>),
    /// Print the interview flashcard deck (concepts, log excerpts, numbers to compute, log-line
    /// anatomy) as JSON (`triage.cards/v1`) or as a TSV file Anki imports as it is.
    ///
    /// Exit status: 0 when printed, 2 on usage errors (an unknown tag).
    Cards(CardsArgs),
    /// Serve scripted SSE streams with CORS and print the server's record (for browser tests).
    #[command(hide = true)]
    ScriptedServe(crate::scripted_serve::ScriptedServeArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// `--arrival`: how an open-loop run spaces its starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Constant,
    Poisson,
}

impl From<ArrivalArg> for triage_core::arrival::Arrival {
    fn from(a: ArrivalArg) -> Self {
        match a {
            ArrivalArg::Constant => triage_core::arrival::Arrival::Constant,
            ArrivalArg::Poisson => triage_core::arrival::Arrival::Poisson,
        }
    }
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Base URL (http://host:8000/v1, https://api.anthropic.com) or the full endpoint.
    pub url: String,
    /// Wire API: openai (chat completions) or anthropic (messages).
    #[arg(long, default_value = "openai", value_parser = parse_api)]
    pub api: Api,
    /// Model name sent in the request.
    #[arg(long)]
    pub model: String,
    /// Prompt text.
    #[arg(long, conflicts_with = "prompt_tokens")]
    pub prompt: Option<String>,
    /// Generate a prompt of about this many tokens instead.
    #[arg(long, value_parser = parse_prompt_tokens)]
    pub prompt_tokens: Option<usize>,
    /// max_tokens of each request.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Number of requests.
    #[arg(short = 'n', long = "requests", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: u32,
    /// Requests in flight at once.
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Start this many requests per second (open loop, still capped by --concurrency): the
    /// starts follow a schedule fixed before the first request (--arrival). A request that
    /// cannot start on time (a busy client, or every --concurrency slot taken) starts late and
    /// its dispatch lag says so; latencies are reported from the send and from the schedule.
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// How --rate spaces the starts: constant (exactly 1/RATE apart, what --rate has always
    /// done) or poisson (exponential gaps of mean 1/RATE, drawn from --seed).
    #[arg(long, value_enum, default_value = "constant", requires = "rate")]
    pub arrival: ArrivalArg,
    /// Seed of the poisson schedule: the same seed gives the same starts.
    #[arg(long, default_value_t = 0, requires = "rate")]
    pub seed: u64,
    /// Hard limit per request, from sending to the end of the stream (e.g. 60s, 500ms, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Extra request header, K:V (repeatable).
    #[arg(long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Send no W3C traceparent. By default each request carries a fresh one (random trace id,
    /// sampled) and its record the trace id; a --header traceparent:… is sent as given instead.
    #[arg(long)]
    pub no_traceparent: bool,
    /// Environment variable holding the API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY,
    /// then TAOTOKEN_API_KEY). The key is never printed.
    #[arg(long)]
    pub api_key_env: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write one JSON object per request to this file (JSON lines).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the run as OTLP/JSON to this file, per the OpenTelemetry GenAI semantic
    /// conventions v1.41.0 (still experimental there): line 1 an ExportMetricsServiceRequest
    /// (gen_ai.client.operation.duration, .time_to_first_chunk, .time_per_output_chunk,
    /// gen_ai.client.token.usage), then ExportTraceServiceRequest lines with one CLIENT span per
    /// request, under the trace id of the traceparent it sent. A collector's otlpjsonfile
    /// receiver reads it.
    #[arg(long, value_name = "FILE")]
    pub otlp: Option<PathBuf>,
    /// Also POST the same OTLP/JSON to an OTLP/HTTP receiver: URL/v1/metrics and URL/v1/traces
    /// (e.g. http://collector:4318). Sends neither the API key nor --header values; no redirect
    /// followed. A refused or late export is an error (exit 1) after the results are printed.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Header for the OTLP receiver only, K:V (repeatable), e.g. its own token. Never printed.
    #[arg(long = "otlp-header", value_name = "K:V", value_parser = parse_header, requires = "otlp_endpoint")]
    pub otlp_headers: Vec<(String, String)>,
    /// Deadline of the whole export to --otlp-endpoint, answers included.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub otlp_timeout: Duration,
    /// A gap is a stall above max(FACTOR × running median of earlier gaps, --stall-min).
    #[arg(long, default_value_t = 5.0, value_parser = parse_stall_factor)]
    pub stall_factor: f64,
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub stall_min: Duration,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Base URL (http://host:8000/v1) or the full endpoint the canary streams from.
    pub url: String,
    /// Wire API: openai (chat completions) or anthropic (messages).
    #[arg(long, default_value = "openai", value_parser = parse_api)]
    pub api: Api,
    /// Model name sent in the canary.
    #[arg(long)]
    pub model: String,
    /// One canary per interval (e.g. 30s, 1m); at most one in flight: an interval that comes
    /// while the previous canary runs is skipped and counted.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub every: Duration,
    /// The canary's hard deadline, from sending to the end of its stream; below --every. The
    /// /metrics read before it has min(--timeout, --every − --timeout).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The engine's Prometheus metrics (e.g. http://host:8000/metrics): running and waiting
    /// requests and token counters (vLLM, SGLang, TGI). Read without the API key or --header
    /// values; no redirect followed.
    #[arg(long, value_name = "URL")]
    pub metrics_url: Option<String>,
    /// Serve the watch's own metrics at http://ADDR/metrics (e.g. 0.0.0.0:9478; port 0 picks
    /// a free one, printed on stderr): triage_canary_up, triage_canary_ttft_seconds,
    /// triage_canary_failures_total{kind}, triage_engine_stalled, ….
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// One interval, one report, then exit. With --metrics-url it takes one --every: the
    /// engine is scraped before the canary and again an interval later.
    #[arg(long)]
    pub once: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The canary's max_tokens.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub max_tokens: u32,
    /// TTFT bound in milliseconds: a canary whose first token comes later is TTFT_HIGH (the
    /// analyzer's default TTFT target).
    #[arg(long, default_value_t = 2000.0, value_parser = parse_positive_ms)]
    pub slo_ttft_ms: f64,
    /// Extra request header for the canary, K:V (repeatable).
    #[arg(long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Environment variable holding the API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY,
    /// then TAOTOKEN_API_KEY). The key is never printed.
    #[arg(long)]
    pub api_key_env: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Files to read (`-` or nothing: standard input). Several sources may share one file.
    pub files: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// Language of the report's text (findings, figure definitions, issues); the JSON field
    /// names, verdict, classes and rule ids are the same in both.
    #[arg(long, value_enum, default_value = "en")]
    pub lang: LangArg,
    /// TTFT target in milliseconds: a benchmark's TTFT tail above it is a finding whatever its
    /// median.
    #[arg(long, default_value_t = 2000.0, value_parser = parse_positive_ms)]
    pub slo_ttft_ms: f64,
    /// Inter-token gap target in milliseconds: a benchmark's ITL (or TPOT) tail above it, with a
    /// median under half of it, is a finding.
    #[arg(long, default_value_t = 200.0, value_parser = parse_positive_ms)]
    pub slo_itl_ms: f64,
    /// Read the window from this Prometheus (or Thanos, Mimir, VictoriaMetrics) instead of, or
    /// with, FILES: the engines' /metrics, DCGM GPU gauges and the gateway's llm_stream_* series,
    /// per replica and per GPU. Base URL, e.g. http://prometheus:9090.
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Start of the window: unix seconds or RFC 3339 (2026-12-04T10:00:00Z).
    #[arg(long, requires = "prometheus", conflicts_with = "since", value_parser = crate::prometheus::parse_time)]
    pub from: Option<f64>,
    /// End of the window (default: now).
    #[arg(long, requires = "prometheus", value_parser = crate::prometheus::parse_time)]
    pub to: Option<f64>,
    /// The window is this long, ending at --to (default 30m; e.g. 15m, 2h, 1d).
    #[arg(long, requires = "prometheus", value_parser = parse_window)]
    pub since: Option<Duration>,
    /// Resolution of the range query (widened, with a note, when the points would exceed the bound).
    #[arg(long, requires = "prometheus", default_value = "15s", value_parser = parse_duration)]
    pub step: Duration,
    /// Label matchers every series must match — the engines', the GPUs' and the gateway's alike,
    /// so use labels they share, e.g. '{namespace="llm"}' or '{cluster="prod-a"}'.
    #[arg(long, requires = "prometheus", default_value = "")]
    pub selector: String,
    /// Environment variable holding a bearer token for Prometheus (never printed).
    #[arg(long, requires = "prometheus", conflicts_with = "prometheus_basic_auth_env", value_name = "VAR")]
    pub prometheus_token_env: Option<String>,
    /// Environment variable holding USER:PASSWORD for basic auth (never printed).
    #[arg(long, requires = "prometheus", value_name = "VAR")]
    pub prometheus_basic_auth_env: Option<String>,
    /// Deadline of each request to Prometheus.
    #[arg(long, requires = "prometheus", default_value = "10s", value_parser = parse_duration)]
    pub prometheus_query_timeout: Duration,
    /// Deadline of the whole exchange with Prometheus.
    #[arg(long, requires = "prometheus", default_value = "30s", value_parser = parse_duration)]
    pub prometheus_timeout: Duration,
    /// Most series read; past it whole instances are left out, and the report says which.
    #[arg(long, requires = "prometheus", default_value_t = 5_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_series: u32,
    /// Most points read in all; past it the step is widened, and the report says so.
    #[arg(long, requires = "prometheus", default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(10..=100_000_000))]
    pub max_points: u64,
    /// Largest answer read from Prometheus, in MiB.
    #[arg(long, requires = "prometheus", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_body_mib: u32,
}

/// `--since`: like other durations, with days (`1d`), up to 90 days.
pub fn parse_window(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Some(days) = t.strip_suffix('d') {
        return match days.trim().parse::<f64>() {
            Ok(d) if d.is_finite() && d > 0.0 && d <= 90.0 => Ok(Duration::from_secs_f64(d * 86_400.0)),
            _ => Err(format!("invalid window {t:?}: expected e.g. 30m, 6h, 2d (at most 90d)")),
        };
    }
    parse_duration(t)
}

fn parse_positive_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number of milliseconds, got {s:?}")),
    }
}

/// `--lang`: the language a report is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LangArg {
    En,
    Zh,
}

impl From<LangArg> for triage_core::lang::Lang {
    fn from(l: LangArg) -> Self {
        match l {
            LangArg::En => triage_core::lang::Lang::En,
            LangArg::Zh => triage_core::lang::Lang::Zh,
        }
    }
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// A simulator scenario (see `triage sim --list`), e.g. kv-leak, slow-gpu, overload.
    pub scenario: Option<String>,
    /// Seed of the simulated incident.
    #[arg(long, default_value_t = triage_sim::model::scenario::DEFAULT_SEED)]
    pub seed: u64,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct SimArgs {
    /// List the fault scenarios (name, class, cause) and exit.
    #[arg(long)]
    pub list: bool,
    /// The scenario to run (see --list).
    #[arg(long, required_unless_present = "list")]
    pub scenario: Option<String>,
    /// Run offline, as fast as possible, and write the files to this directory.
    #[arg(long, conflicts_with = "serve")]
    pub out: Option<PathBuf>,
    /// Serve the scenario live on 127.0.0.1:PORT (0: any free port) after fast-forwarding to
    /// its incident.
    #[arg(long)]
    pub serve: Option<u16>,
    /// Seed of the workload and the engine's jitter (same seed, same incident).
    #[arg(long, default_value_t = triage_sim::model::scenario::DEFAULT_SEED)]
    pub seed: u64,
    /// Offline: replace files that already exist in --out (a symbolic link there is replaced
    /// itself, never written through).
    #[arg(long, conflicts_with = "serve")]
    pub force: bool,
    /// Offline: simulate this long instead of the scenario's own duration (e.g. 10m). Not with
    /// --serve (a live server runs until stopped; it was silently ignored).
    #[arg(long, value_parser = parse_duration, conflicts_with = "serve")]
    pub duration: Option<Duration>,
    /// Offline, instead of --out: write the incident as Prometheus would hold it — a fleet of
    /// --replicas vLLM replicas (one runs the fault, the others the healthy workload) and their
    /// GPUs (DCGM exporter names), scraped every 15 s — as one OpenMetrics file with timestamps,
    /// for `promtool tsdb create-blocks-from openmetrics FILE DIR`. Never written through a
    /// symbolic link; an existing file is replaced only with --force.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["serve", "out"])]
    pub openmetrics: Option<PathBuf>,
    /// With --openmetrics: replicas in the fleet, 1 to 16 (default 3).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub replicas: Option<u32>,
    /// With --openmetrics: unix seconds of the incident's start, its first scrape 15 s later
    /// (default 1795917600, 2026-11-29T02:00:00Z, so the file is the same every run). Prometheus drops
    /// blocks older than its retention: pick a recent start, or a long retention.
    #[arg(long, value_name = "UNIX_S", value_parser = clap::value_parser!(u64).range(0..=4_102_444_800))]
    pub start: Option<u64>,
    /// Live: simulated seconds per real second (0.01 to 1000).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = crate::sim::parse_speed)]
    pub speed: f64,
    /// Live: stop serving after this long.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    pub lifetime: Duration,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct KvArgs {
    /// Hugging Face config.json of the model (`-` reads stdin).
    #[arg(long, conflicts_with = "model")]
    pub config: Option<PathBuf>,
    /// A built-in model preset (see --list-models), e.g. llama-3.1-8b, deepseek-v3.
    #[arg(long)]
    pub model: Option<String>,
    /// List the model presets and exit.
    #[arg(long)]
    pub list_models: bool,
    /// List the GPU presets and exit.
    #[arg(long)]
    pub list_gpus: bool,
    /// KV cache dtype: auto, bf16, fp16, fp32, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla.
    #[arg(long, alias = "kv-cache-dtype", default_value = kv_defaults::KV_DTYPE.as_str())]
    pub kv_dtype: String,
    /// Serving dtype (bf16, fp16, fp32); default the config's.
    #[arg(long)]
    pub dtype: Option<String>,
    /// Tensor parallel size.
    #[arg(long, alias = "tensor-parallel-size", default_value_t = kv_defaults::TP, allow_hyphen_values = true, value_parser = parse_count)]
    pub tp: u32,
    /// Pipeline parallel size.
    #[arg(long, alias = "pipeline-parallel-size", default_value_t = kv_defaults::PP, allow_hyphen_values = true, value_parser = parse_count)]
    pub pp: u32,
    /// Tokens per KV block (vLLM default 16; FlashMLA forces 64).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count)]
    pub block_size: Option<u32>,
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub max_model_len: Option<u64>,
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub max_num_seqs: Option<u64>,
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub max_num_batched_tokens: Option<u64>,
    /// GPU preset (see --list-gpus): h200, h100, a100-80gb, a100-40gb, l40s, a10g, rtx-4090 …
    #[arg(long)]
    pub gpu: Option<String>,
    /// Total GPU memory in GiB as CUDA reports it (vLLM's `total_gpu_memory`).
    #[arg(long, allow_hyphen_values = true)]
    pub gpu_mem_gib: Option<String>,
    #[arg(long, default_value_t = kv_defaults::gpu_memory_utilization(), allow_hyphen_values = true)]
    pub gpu_memory_utilization: String,
    /// Parameters in billions (weights = parameters × weight dtype).
    #[arg(long, allow_hyphen_values = true)]
    pub params_b: Option<String>,
    /// Weights size in GiB for the whole model (split over TP × PP).
    #[arg(long, allow_hyphen_values = true)]
    pub weights_gib: Option<String>,
    /// Weight storage: bf16, fp16, fp8, int8, int4, mxfp4 (default: config's quantization or dtype).
    #[arg(long)]
    pub weights_dtype: Option<String>,
    /// Activation peak per GPU in GiB (vLLM logs it at startup).
    #[arg(long, allow_hyphen_values = true)]
    pub activation_gib: Option<String>,
    /// Non-torch memory per GPU in GiB (NCCL, cuBLAS).
    #[arg(long, allow_hyphen_values = true)]
    pub non_torch_gib: Option<String>,
    /// Skip the budget: answer for exactly this much KV memory per GPU.
    #[arg(long, allow_hyphen_values = true)]
    pub available_kv_gib: Option<String>,
    /// Concurrency at this request length (default max_model_len).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub at_len: Option<u64>,
    /// Reverse question: memory for SEQSxLEN, e.g. 64x4096.
    #[arg(long)]
    pub need: Option<String>,
    /// vLLM or SGLang startup log to reconcile with (`-` reads stdin).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Model vLLM's hybrid KV-cache manager as disabled (sliding layers allocated as full).
    #[arg(long)]
    pub no_hybrid: bool,
    /// Model vLLM's `--no-async-scheduling`: one batch in flight per pipeline stage instead of
    /// stages + 1 (changes what sliding-window layers budget per request).
    #[arg(long)]
    pub no_async_scheduling: bool,
    /// Accept conventional defaults for fields missing from config.json (listed as assumptions).
    #[arg(long)]
    pub assume_defaults: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// A whole number ≥ 1 (TP, PP, block size).
pub fn parse_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be a whole number ≥ 1, got {s:?}")),
    }
}

/// A whole number ≥ 1 (lengths, counts).
pub fn parse_count_u64(s: &str) -> Result<u64, String> {
    match s.trim().replace(['_', ','], "").parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be a whole number ≥ 1, got {s:?}")),
    }
}

pub fn parse_api(s: &str) -> Result<Api, String> {
    Api::parse(s).ok_or_else(|| format!("unknown api {s:?}: expected openai or anthropic"))
}

/// `60s`, `500ms`, `2m`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, "s"),
    };
    let v: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}: expected e.g. 60s, 500ms, 2m"))?;
    let secs = match unit {
        "ms" => v / 1_000.0,
        "s" | "sec" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3_600.0,
        _ => return Err(format!("invalid duration unit {unit:?} in {s:?}: use ms, s, m or h")),
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!("duration {s:?} out of range (0, 24h]"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `Name: value` → (name, value).
/// `NAME:VALUE`. The name is an HTTP token; neither part may hold CR, LF or other control
/// characters (they would split the request into two).
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = match s.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => (k.trim(), v.trim()),
        _ => return Err(format!("invalid header {s:?}: expected NAME:VALUE")),
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if !k.chars().all(token) {
        return Err(format!("invalid header name {k:?}: letters, digits and !#$%&'*+-.^_`|~ only"));
    }
    if v.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!("invalid value for header {k:?}: it holds a control character (CR, LF, …)"));
    }
    Ok((k.to_owned(), v.to_owned()))
}

/// A finite number above zero.
fn parse_positive(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{what} must be a finite number above 0, got {s:?}")),
    }
}

/// `--rate`: requests started per second, at most a million.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v = parse_positive(s, "the rate")?;
    if v > 1e6 {
        return Err(format!("the rate {s} is above 1,000,000 requests per second"));
    }
    Ok(v)
}

/// `--stall-factor`: how many times the running median a gap must exceed (≥ 1).
pub fn parse_stall_factor(s: &str) -> Result<f64, String> {
    let v = parse_positive(s, "the stall factor")?;
    if !(1.0..=1e6).contains(&v) {
        return Err(format!("the stall factor must be between 1 and 1,000,000, got {s:?}"));
    }
    Ok(v)
}

/// Most synthetic prompt tokens: a million is beyond every served context window today, and
/// the prompt is built in memory (≈ 6 bytes a token).
pub const MAX_PROMPT_TOKENS: usize = 1 << 20;

/// `--prompt-tokens`: 1 to [`MAX_PROMPT_TOKENS`].
pub fn parse_prompt_tokens(s: &str) -> Result<usize, String> {
    match s.trim().replace(['_', ','], "").parse::<usize>() {
        Ok(n) if (1..=MAX_PROMPT_TOKENS).contains(&n) => Ok(n),
        _ => Err(format!("--prompt-tokens must be a whole number from 1 to {MAX_PROMPT_TOKENS}, got {s:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn headers() {
        assert_eq!(parse_header("X-A: b:c"), Ok(("X-A".into(), "b:c".into())));
        assert!(parse_header("novalue").is_err());
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CardsFormat {
    /// `{"schema":"triage.cards/v1","cards":[…]}`.
    Json,
    /// Anki's import format: front, back, tags; `#separator:tab`, `#html:true`, `#tags column:3`.
    Tsv,
}

#[derive(Args, Debug)]
pub struct CardsArgs {
    /// Language of the cards' text (ids, tags, numbers and quoted lines are the same in both).
    #[arg(long, value_enum, default_value = "en")]
    pub lang: LangArg,
    /// Only cards with this topic: ttft, tbt, oom, throughput, kv, gpu, client_config, metrics,
    /// engines (repeatable: cards with any of them).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[arg(long, value_enum, default_value = "json")]
    pub format: CardsFormat,
}
