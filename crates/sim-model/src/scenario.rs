//! The incident catalogue: each scenario is a deployment, a workload and one fault, with the
//! failure class and the analyzer rules that should name it, and a probe plan for a live run.
//!
//! Every scenario uses the H200-calibrated engine (see `calibration`) serving the trace's
//! 1.1 B-parameter Llama shape. Where a fault needs a small KV cache, the cache is forced with
//! vLLM's `--num-gpu-blocks-override` — standing for a bigger model on the same GPU — and the
//! log says so.

use crate::engine::{EngineConfig, GatewayConfig, NS, OnDisconnect, RateLimit, SimConfig, secs};
use crate::output::client::ClientFile;
use crate::output::gpu::{GpuSetup, H200_MEM_TOTAL_MIB, SlowGpu};
use crate::workload::{Arrivals, ClientBehaviour, LenDist, Stream, Workload};
use serde::Serialize;
use triage_core::analyze::report::Class;
use triage_core::analyze::rules::RuleId;
use triage_core::lang::Lang;

/// The model name the simulated engine serves.
pub const MODEL: &str = "sim/llama-1.1b-h200";

/// What a live run's probe sends (the demo and the closed-loop tests use it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProbePlan {
    pub requests: u32,
    pub concurrency: u32,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub timeout_s: f64,
}

/// One incident.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub name: &'static str,
    /// The failure class the incident belongs to (`None`: the healthy control).
    pub class: Option<Class>,
    /// What was injected, in a sentence.
    pub cause: &'static str,
    /// Analyzer rule ids that name the cause (any of them counts).
    pub rules: &'static [RuleId],
    /// What a probe of the live service sees.
    pub symptom: &'static str,
    /// Offline runs end here.
    pub duration_s: f64,
    /// Live runs fast-forward to here, then serve in real time.
    pub incident_at_s: f64,
    /// When a demo reads the logs: later than the probe when the evidence builds up after the
    /// symptom (a cold start's slow first requests are logged once they finish); `None`: right
    /// after the probe.
    pub logs_at_s: Option<f64>,
    pub probe: ProbePlan,
    #[serde(skip)]
    build: fn(u64) -> SimConfig,
}

impl Scenario {
    /// [`Scenario::cause`] in `lang`.
    pub fn cause_in(&self, lang: Lang) -> &'static str {
        match (lang, zh(self.name)) {
            (Lang::Zh, Some((cause, _))) => cause,
            _ => self.cause,
        }
    }

    /// [`Scenario::symptom`] in `lang`.
    pub fn symptom_in(&self, lang: Lang) -> &'static str {
        match (lang, zh(self.name)) {
            (Lang::Zh, Some((_, symptom))) => symptom,
            _ => self.symptom,
        }
    }

    pub fn config(&self, seed: u64) -> SimConfig {
        (self.build)(seed)
    }

    pub fn duration_ns(&self) -> u64 {
        secs(self.duration_s)
    }

    pub fn incident_ns(&self) -> u64 {
        secs(self.incident_at_s)
    }

    pub fn logs_at_ns(&self) -> Option<u64> {
        self.logs_at_s.map(secs)
    }

    pub fn class_str(&self) -> &'static str {
        self.class.map_or("HEALTHY", Class::as_str)
    }
}

/// The default seed: every run of a scenario is the same incident unless asked otherwise.
pub const DEFAULT_SEED: u64 = 20_261_129;

fn base(seed: u64, engine: EngineConfig, streams: Vec<Stream>) -> SimConfig {
    SimConfig {
        seed,
        engine,
        gateway: GatewayConfig::default(),
        workload: Workload { streams },
        gpus: None,
        client_file: None,
    }
}

/// `count` H200s holding what vLLM reserves at start (`gpu_memory_utilization` of each).
pub(crate) fn one_gpu(engine: &EngineConfig, count: u32) -> GpuSetup {
    GpuSetup {
        count,
        slow: None,
        mem_total_mib: H200_MEM_TOTAL_MIB,
        mem_used_mib: (H200_MEM_TOTAL_MIB as f64 * engine.gpu_memory_utilization).round() as u64,
    }
}

fn plan(requests: u32, concurrency: u32, prompt_tokens: u32, max_tokens: u32, timeout_s: f64) -> ProbePlan {
    ProbePlan { requests, concurrency, prompt_tokens, max_tokens, timeout_s }
}

fn healthy(seed: u64) -> SimConfig {
    base(seed, EngineConfig::h200(MODEL), vec![Stream::chat(2.0, 300.0, 120.0)])
}

fn long_prompts(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.chunked_prefill = false;
    e.max_num_batched_tokens = 32_768;
    e.resize_cache();
    let batch = Stream {
        name: "rag-batch",
        arrivals: Arrivals::Bursts { every_s: 30.0, size: 8, spacing_s: 0.05 },
        prompt: LenDist::Uniform { lo: 16_000, hi: 30_000 },
        output: LenDist::LogNormal { median: 200.0, sigma: 0.5, min: 16, max: 1024 },
        max_tokens: 1024,
        client: ClientBehaviour::default(),
        start_s: 25.0,
        stop_s: None,
        limit: None,
    };
    base(seed, e, vec![Stream::chat(4.0, 350.0, 150.0), batch])
}

fn overload(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.max_num_seqs = 32;
    base(seed, e, vec![Stream::chat(4.5, 300.0, 150.0)])
}

fn slow_gpu(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.tensor_parallel_size = 4;
    let mut g = one_gpu(&e, 4);
    g.slow = Some(SlowGpu { index: 2, from_ns: 30 * NS, clock_mhz: 840, reasons: 0x8, temp_c: 87 });
    let mut c = base(seed, e, vec![Stream::chat(1.5, 300.0, 150.0)]);
    c.gpus = Some(g);
    c
}

const KVP_RATE: f64 = 0.8;

fn kv_pressure(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.override_blocks(2048);
    e.max_num_seqs = 128;
    let mut chat = Stream::chat(KVP_RATE, 800.0, 350.0);
    chat.prompt = LenDist::LogNormal { median: 800.0, sigma: 0.6, min: 16, max: 8000 };
    chat.output = LenDist::LogNormal { median: 350.0, sigma: 0.6, min: 16, max: 2048 };
    base(seed, e, vec![chat])
}

fn kv_leak(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.on_disconnect = OnDisconnect::Leak;
    let mut rag = Stream::chat(3.0, 6000.0, 400.0);
    rag.name = "rag";
    rag.prompt = LenDist::LogNormal { median: 6000.0, sigma: 0.5, min: 256, max: 24_000 };
    rag.output = LenDist::LogNormal { median: 400.0, sigma: 0.8, min: 8, max: 4096 };
    rag.max_tokens = 4096;
    rag.client = ClientBehaviour { timeout_s: Some(30.0), max_retries: 0, backoff_s: 1.0 };
    let g = one_gpu(&e, 1);
    let mut c = base(seed, e, vec![rag]);
    c.gpus = Some(g);
    c
}

fn kv_deadlock(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.override_blocks(1024);
    e.max_num_seqs = 64;
    e.preempt_when_full = false;
    let mut chat = Stream::chat(1.5, 600.0, 500.0);
    chat.output = LenDist::LogNormal { median: 500.0, sigma: 0.5, min: 64, max: 2048 };
    base(seed, e, vec![chat])
}

fn upstream_cut(seed: u64) -> SimConfig {
    let mut chat = Stream::chat(3.0, 300.0, 120.0);
    chat.max_tokens = 1024;
    let mut c = base(seed, EngineConfig::h200(MODEL), vec![chat]);
    c.gateway.cut_ns = Some(120 * NS);
    c
}

fn oom_long_input(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.chunked_prefill = false;
    e.max_model_len = 131_072;
    e.max_num_batched_tokens = 131_072;
    e.eager_attention_heads = Some(32);
    e.resize_cache();
    let book = Stream {
        name: "book",
        arrivals: Arrivals::Bursts { every_s: 1e9, size: 1, spacing_s: 0.0 },
        prompt: LenDist::Fixed { tokens: 65_536 },
        output: LenDist::Fixed { tokens: 400 },
        max_tokens: 1024,
        client: ClientBehaviour::default(),
        start_s: 60.0,
        stop_s: None,
        limit: Some(1),
    };
    base(seed, e, vec![Stream::chat(2.0, 300.0, 120.0), book])
}

fn cold_start(seed: u64) -> SimConfig {
    let mut e = EngineConfig::h200(MODEL);
    e.ready_ns = 45 * NS;
    base(seed, e, vec![Stream::chat(3.0, 300.0, 120.0)])
}

fn client_timeout(seed: u64) -> SimConfig {
    let mut chat = Stream::chat(2.0, 300.0, 250.0);
    chat.output = LenDist::LogNormal { median: 250.0, sigma: 0.8, min: 8, max: 4096 };
    chat.max_tokens = 4096;
    chat.client = ClientBehaviour { timeout_s: Some(10.0), max_retries: 0, backoff_s: 1.0 };
    let mut c = base(seed, EngineConfig::h200(MODEL), vec![chat]);
    c.client_file = Some(ClientFile::ClaudeSettings {
        base_url: "http://llm-gateway.internal:8000".into(),
        model: MODEL.into(),
        timeout_ms: 10_000,
    });
    c
}

fn client_retries(seed: u64) -> SimConfig {
    let e = EngineConfig::h200(MODEL);
    let retrying = ClientBehaviour { timeout_s: Some(600.0), max_retries: 5, backoff_s: 1.0 };
    let mut chat = Stream::chat(1.0, 300.0, 150.0);
    chat.client = retrying.clone();
    let burst = Stream {
        name: "agents",
        arrivals: Arrivals::Bursts { every_s: 60.0, size: 30, spacing_s: 0.025 },
        prompt: LenDist::LogNormal { median: 500.0, sigma: 0.6, min: 16, max: 8000 },
        output: LenDist::LogNormal { median: 150.0, sigma: 0.6, min: 4, max: 2048 },
        max_tokens: 2048,
        client: retrying,
        start_s: 50.0,
        stop_s: None,
        limit: None,
    };
    let mut c = base(seed, e, vec![chat, burst]);
    c.gateway.rate_limit = Some(RateLimit { per_s: 2.0, burst: 10 });
    c.client_file = Some(ClientFile::CodexConfig {
        base_url: "http://llm-gateway.internal:8000/v1".into(),
        model: MODEL.into(),
        max_retries: 5,
        stream_idle_timeout_ms: 300_000,
    });
    c
}

/// Every fault scenario, in the order of the article's trees, then the healthy control.
pub fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "long-prompt-no-chunking",
            class: Some(Class::TtftHigh),
            cause: "Chunked prefill is off and a batch job sends 16k–30k-token documents in bursts: each is prefilled whole in one step, so every running decode and every request queued behind it waits.",
            rules: &[RuleId::LongPromptBlocksPrefill, RuleId::ChunkedPrefillOff],
            symptom: "short requests sent during a burst wait seconds for their first token, and streams in flight stall",
            duration_s: 240.0,
            incident_at_s: 85.2,
            logs_at_s: None,
            probe: plan(6, 6, 200, 16, 30.0),
            build: long_prompts,
        },
        Scenario {
            name: "overload",
            class: Some(Class::TtftHigh),
            cause: "Requests arrive faster than the engine finishes them (4.5 req/s against about 3.5 at max_num_seqs 32): the batch is full and the waiting queue grows without bound.",
            rules: &[RuleId::QueueingExceedsCapacity],
            symptom: "the first token takes longer and longer, then not at all within the client's timeout",
            duration_s: 240.0,
            incident_at_s: 150.0,
            logs_at_s: None,
            probe: plan(4, 4, 200, 16, 8.0),
            build: overload,
        },
        Scenario {
            name: "cold-start",
            class: Some(Class::TtftHigh),
            cause: "Scale from zero: the gateway holds requests while a new replica loads its weights and captures CUDA graphs for 45 s; the first requests wait for all of it.",
            rules: &[RuleId::ColdStart],
            symptom: "requests sent during start-up get their first token only when the server is up",
            duration_s: 240.0,
            incident_at_s: 39.0,
            logs_at_s: Some(120.0),
            probe: plan(4, 4, 200, 16, 30.0),
            build: cold_start,
        },
        Scenario {
            name: "slow-gpu",
            class: Some(Class::TbtTail),
            cause: "One GPU of a tensor-parallel group of 4 throttles (HW Slowdown at 87 °C, 840 MHz against 1980 MHz): every step waits for it, so every token of every request comes 2.4× slower.",
            rules: &[RuleId::SlowGpu],
            symptom: "time to first token is fine but the gaps between tokens are more than twice the healthy ~65 ms",
            duration_s: 180.0,
            incident_at_s: 120.0,
            logs_at_s: None,
            probe: plan(4, 4, 200, 24, 30.0),
            build: slow_gpu,
        },
        Scenario {
            name: "kv-pressure",
            class: Some(Class::TbtTail),
            cause: "The KV cache holds 32,768 tokens while max_num_seqs 128 admits long requests: the cache fills, the scheduler preempts the newest requests and recomputes them, and their streams pause.",
            rules: &[RuleId::KvPressurePreemption],
            symptom: "streams pause for seconds mid-answer when their request is preempted and recomputed",
            duration_s: 240.0,
            incident_at_s: 150.0,
            logs_at_s: None,
            probe: plan(4, 4, 500, 48, 60.0),
            build: kv_pressure,
        },
        Scenario {
            name: "oom-long-input",
            class: Some(Class::Oom),
            cause: "A 65,536-token document reaches a server with max_model_len 131,072, no input cap at the gateway and eager attention: its prefill asks for 256 GiB of attention scores on a 139.8 GiB GPU and fails with a CUDA OOM.",
            rules: &[RuleId::InputTooLong],
            symptom: "the over-long request fails with an error event carrying the CUDA OOM message",
            duration_s: 120.0,
            incident_at_s: 90.0,
            logs_at_s: None,
            probe: plan(2, 1, 65_536, 16, 60.0),
            build: oom_long_input,
        },
        Scenario {
            name: "kv-leak",
            class: Some(Class::ThroughputZero),
            cause: "The serving layer drops requests whose client timed out (30 s) without aborting them in the engine: their KV blocks are never freed, the cache fills with dead requests, and nothing new can start.",
            rules: &[RuleId::KvLeak],
            symptom: "requests are accepted but never get a first token: the engine is idle with its cache full",
            duration_s: 1200.0,
            incident_at_s: 1200.0,
            logs_at_s: None,
            probe: plan(3, 3, 200, 16, 6.0),
            build: kv_leak,
        },
        Scenario {
            name: "kv-deadlock",
            class: Some(Class::ThroughputZero),
            cause: "The scheduler waits for free KV blocks instead of preempting (a scheduler bug): once the cache is full every running request needs one more block, none is ever freed, and generation stops.",
            rules: &[RuleId::SchedulerStall],
            symptom: "streams in flight freeze and new requests never get a first token",
            duration_s: 150.0,
            incident_at_s: 140.0,
            logs_at_s: None,
            probe: plan(3, 3, 200, 16, 6.0),
            build: kv_deadlock,
        },
        Scenario {
            name: "upstream-cut",
            class: Some(Class::ThroughputZero),
            cause: "At 120 s the gateway marks the node unhealthy (a failing health check) and sends it nothing more: the engine idles while clients get 503 from the gateway.",
            rules: &[RuleId::UpstreamCut],
            symptom: "every request fails at once with 503 no healthy upstream",
            duration_s: 240.0,
            incident_at_s: 230.0,
            logs_at_s: None,
            probe: plan(4, 4, 200, 16, 10.0),
            build: upstream_cut,
        },
        Scenario {
            name: "client-timeout",
            class: Some(Class::Config),
            cause: "The client's timeout is 10 s (API_TIMEOUT_MS=10000) while long answers take 20–60 s at ~65 ms a token: they are cut off, and the TBT story turns into client timeouts.",
            rules: &[RuleId::TimeoutTooShort],
            symptom: "long answers end in a timeout mid-stream at exactly the client's limit",
            duration_s: 180.0,
            incident_at_s: 120.0,
            logs_at_s: None,
            probe: plan(2, 2, 200, 400, 10.0),
            build: client_timeout,
        },
        Scenario {
            name: "client-retries",
            class: Some(Class::Config),
            cause: "Agents send bursts of 30 requests into the serving layer's rate limit (2 req/s, bursts of 10) and most get 429; the client retries up to 5 times, so it reports success while most first attempts fail.",
            rules: &[RuleId::RetriesMaskFailures],
            symptom: "a probe without retries sees the 429s that the client's retries hide",
            duration_s: 240.0,
            incident_at_s: 110.8,
            logs_at_s: None,
            probe: plan(6, 6, 200, 16, 30.0),
            build: client_retries,
        },
        Scenario {
            name: "healthy",
            class: None,
            cause: "Nothing is wrong: 2 req/s of chat traffic on a well-sized engine (the control).",
            rules: &[],
            symptom: "first tokens in about 0.1 s and ~65 ms between tokens",
            duration_s: 180.0,
            incident_at_s: 120.0,
            logs_at_s: None,
            probe: plan(4, 4, 200, 16, 30.0),
            build: healthy,
        },
    ]
}

/// The Chinese cause and symptom of the scenario `name` (numbers as in the English).
fn zh(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "long-prompt-no-chunking" => (
            "Chunked prefill 已关闭，一个批处理任务成批发送 16k–30k token 的长文档：每篇都在一个 step 内整段 prefill，所有正在 decode 的请求和排在它后面的请求都得等着。",
            "突发期间发出的短请求要等好几秒才拿到首 token，正在输出的流也会卡住",
        ),
        "overload" => (
            "请求到达得比引擎处理得快（4.5 req/s，而 max_num_seqs 32 时只能处理约 3.5）：batch 已满，等待队列无限增长。",
            "首 token 越来越慢，最后在客户端超时之内根本等不到",
        ),
        "cold-start" => (
            "从零扩容：新副本加载权重并捕获 CUDA graph 要 45 s，网关在此期间挂住请求；最早的那批请求要把这段时间全部等完。",
            "启动期间发出的请求要等服务就绪后才拿到首 token",
        ),
        "slow-gpu" => (
            "4 卡 tensor-parallel 组中有一张 GPU 降频（87 °C 触发 HW Slowdown，840 MHz，正常为 1980 MHz）：每个 step 都要等它，所以每个请求的每个 token 都慢了 2.4×。",
            "首 token 时间正常，但 token 间隔超过健康时 ~65 ms 的两倍",
        ),
        "kv-pressure" => (
            "KV cache 只能容纳 32,768 个 token，而 max_num_seqs 128 放进了长请求：cache 被占满，调度器抢占最新的请求并重算，这些请求的流随之停顿。",
            "请求被抢占并重算时，流会在回答中途停顿好几秒",
        ),
        "oom-long-input" => (
            "一篇 65,536 token 的文档打到一台 max_model_len 131,072、网关没有输入长度上限、使用 eager attention 的服务上：它的 prefill 在 139.8 GiB 的 GPU 上申请 256 GiB 的 attention score，以 CUDA OOM 失败。",
            "超长请求失败，流中的错误事件带着 CUDA OOM 信息",
        ),
        "kv-leak" => (
            "服务层丢弃了客户端已超时（30 s）的请求，却没有在引擎中 abort 它们：它们的 KV block 永远不会释放，cache 被死请求占满，新请求一个也启动不了。",
            "请求被接受了却始终拿不到首 token：引擎空闲，cache 却是满的",
        ),
        "kv-deadlock" => (
            "调度器在等空闲 KV block 而不是抢占（调度器 bug）：cache 一满，每个运行中的请求都还需要一个 block，却没有任何 block 会被释放，生成就此停止。",
            "进行中的流全部冻结，新请求始终拿不到首 token",
        ),
        "upstream-cut" => (
            "在 120 s 时网关把节点标记为不健康（健康检查失败），之后不再向它转发任何请求：引擎空闲，客户端则从网关收到 503。",
            "所有请求同时失败，返回 503 no healthy upstream",
        ),
        "client-timeout" => (
            "客户端超时为 10 s（API_TIMEOUT_MS=10000），而按每 token ~65 ms 计，长回答需要 20–60 s：它们被截断，TBT 问题就表现成了客户端超时。",
            "长回答在流中途超时，时间恰好等于客户端的上限",
        ),
        "client-retries" => (
            "Agent 一次突发 30 个请求，撞上服务层的限流（2 req/s，突发上限 10），大部分收到 429；客户端最多重试 5 次，所以它报告成功，而多数首次尝试其实失败了。",
            "不带重试的 probe 能看到被客户端重试掩盖的 429",
        ),
        "healthy" => (
            "一切正常：规格合适的引擎上跑着 2 req/s 的对话流量（对照组）。",
            "首 token 约 0.1 s，token 间隔 ~65 ms",
        ),
        _ => return None,
    })
}

/// The fault scenarios (without the healthy control): what `triage sim --list` prints.
pub fn faults() -> Vec<Scenario> {
    all().into_iter().filter(|s| s.class.is_some()).collect()
}

pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
