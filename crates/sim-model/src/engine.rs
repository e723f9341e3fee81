//! The discrete-event model of one serving replica: clients and their retries, the node's
//! admission, and a continuous-batching engine with a paged KV cache.
//!
//! The engine runs steps back to back while it has work, as vLLM's engine loop does. Each step
//! the scheduler picks what to compute, the step's duration comes from [`StepCost`] (prefill
//! tokens, decodes and the cached tokens they attend to) times a jitter drawn from the real
//! trace, and at the step's end every request whose known tokens are all computed samples one
//! new token. Between steps, arrivals join the waiting queue in order (FCFS).
//!
//! - **Chunked prefill on** (vLLM V1): running requests first — a decode needs 1 token, a
//!   partial prefill takes what is left of the token budget — then waiting requests in arrival
//!   order while the budget, `max_num_seqs` and free KV blocks allow. A request that needs a
//!   block when none is free preempts the most recently admitted running request (recompute:
//!   its blocks are freed and it goes back to the front of the queue to compute prompt and
//!   output again).
//! - **Chunked prefill off** (vLLM V0): if requests wait and the first fits, the step is a
//!   prefill-only batch of whole prompts (up to `max_num_batched_tokens`); otherwise it is a
//!   decode step. A long prompt thus stalls every running decode and every request behind it.
//!
//! Faults are switches on this model, not scripts: a scheduler that does not preempt when the
//! cache is full deadlocks by itself; a serving layer that drops disconnected requests without
//! freeing their blocks leaks the cache until nothing can be admitted.
//!
//! Pure and deterministic: time is a `u64` of simulated nanoseconds, randomness comes from
//! seeded [`Rng`]s, and external requests (a live server's) go in through [`Sim::submit`].

use crate::calibration::{JITTER, StepCost};
use crate::output::gpu::{GpuSetup, H200_MAX_SM_MHZ};
use crate::output::metrics::{CacheInfo, Metrics};
use crate::output::vllm_log::{self, Oom, StartupInfo, StatsLine};
use crate::output::{Artifact, Recorder, RequestRow, SCRAPE_EVERY_NS, client::ClientFile};
use crate::rng::Rng;
use crate::workload::{Arrivals, Workload};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub const NS: u64 = 1_000_000_000;

/// Seconds → simulated nanoseconds.
pub fn secs(s: f64) -> u64 {
    (s * 1e9).round().max(0.0) as u64
}

/// What the serving layer does when a client disconnects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// Abort the request in the engine and free its KV blocks (vLLM's own server does this).
    Abort,
    /// Forget the request but never free its blocks: the KV leak.
    Leak,
}

/// The engine and its launch arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineConfig {
    pub model: String,
    pub block_size: u32,
    pub num_blocks: u32,
    /// The block count was forced (`--num-gpu-blocks-override`) rather than sized from memory.
    pub blocks_overridden: bool,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
    pub gpu_memory_utilization: f64,
    pub tensor_parallel_size: u32,
    pub cost: StepCost,
    pub kv_bytes_per_token: u64,
    /// `false` is the deadlock bug: a request that needs a block when none is free just waits.
    pub preempt_when_full: bool,
    pub on_disconnect: OnDisconnect,
    /// Prefill materialises the attention scores (`heads × tokens × context × 2` bytes), as
    /// eager attention does; `None` is a fused kernel that never does.
    pub eager_attention_heads: Option<u32>,
    /// The engine can step only from this moment (loading weights, capturing CUDA graphs).
    pub ready_ns: u64,
}

/// The H200 as PyTorch sees it (`torch.cuda.mem_get_info` total: "139.80 GiB").
pub const TORCH_TOTAL_BYTES: u64 = 150_111_256_576;
/// The trace model's weights in bf16 (1.1 B parameters).
pub const WEIGHTS_BYTES: u64 = 2_200_096_768;
const NON_TORCH_BYTES: u64 = 644_245_094;

impl EngineConfig {
    /// vLLM's defaults for the trace's model on one H200: the cache is what is left of
    /// `gpu_memory_utilization` after weights, activations and non-torch memory.
    pub fn h200(model: &str) -> EngineConfig {
        let mut c = EngineConfig {
            model: model.to_owned(),
            block_size: 16,
            num_blocks: 0,
            blocks_overridden: false,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            max_model_len: 32_768,
            chunked_prefill: true,
            gpu_memory_utilization: 0.9,
            tensor_parallel_size: 1,
            cost: StepCost::H200_TRACE,
            kv_bytes_per_token: crate::calibration::KV_BYTES_PER_TOKEN,
            preempt_when_full: true,
            on_disconnect: OnDisconnect::Abort,
            eager_attention_heads: None,
            ready_ns: 0,
        };
        c.num_blocks = c.blocks_from_memory();
        c
    }

    /// The activation peak vLLM profiles for a step of `max_num_batched_tokens`.
    pub fn activation_bytes(&self) -> u64 {
        u64::from(self.max_num_batched_tokens) * 160 * 1024
    }

    /// Everything the process holds on the GPU (what vLLM budgets: utilisation × total).
    pub fn process_bytes(&self) -> u64 {
        (TORCH_TOTAL_BYTES as f64 * self.gpu_memory_utilization) as u64
    }

    fn blocks_from_memory(&self) -> u32 {
        let kv =
            self.process_bytes().saturating_sub(WEIGHTS_BYTES + self.activation_bytes() + NON_TORCH_BYTES);
        (kv / (u64::from(self.block_size) * self.kv_bytes_per_token)) as u32
    }

    /// Recompute the block count from memory after changing the settings it depends on.
    pub fn resize_cache(&mut self) {
        self.num_blocks = self.blocks_from_memory();
        self.blocks_overridden = false;
    }

    /// Force the block count (`--num-gpu-blocks-override`).
    pub fn override_blocks(&mut self, blocks: u32) {
        self.num_blocks = blocks;
        self.blocks_overridden = true;
    }

    fn startup_info(&self) -> StartupInfo {
        let mut args: Vec<(String, String)> = Vec::new();
        let py_bool = |b: bool| if b { "True" } else { "False" }.to_owned();
        if self.max_num_seqs != 256 {
            args.push(("max_num_seqs".into(), self.max_num_seqs.to_string()));
        }
        if self.max_model_len != 32_768 {
            args.push(("max_model_len".into(), self.max_model_len.to_string()));
        }
        if !self.chunked_prefill {
            args.push(("enable_chunked_prefill".into(), py_bool(false)));
        }
        if self.max_num_batched_tokens != 8192 {
            args.push(("max_num_batched_tokens".into(), self.max_num_batched_tokens.to_string()));
        }
        if self.tensor_parallel_size != 1 {
            args.push(("tensor_parallel_size".into(), self.tensor_parallel_size.to_string()));
        }
        if self.blocks_overridden {
            args.push(("num_gpu_blocks_override".into(), self.num_blocks.to_string()));
        }
        if self.eager_attention_heads.is_some() {
            args.push(("enforce_eager".into(), py_bool(true)));
        }
        StartupInfo {
            model: self.model.clone(),
            args,
            num_blocks: self.num_blocks,
            block_size: self.block_size,
            kv_bytes_per_token: self.kv_bytes_per_token,
            max_model_len: self.max_model_len,
            blocks_overridden: self.blocks_overridden.then_some(self.num_blocks),
        }
    }
}

/// In front of the node: what answers when the node cannot.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GatewayConfig {
    /// From this moment the gateway sends nothing to the node (it marked it unhealthy): the
    /// node's streams stop, and live requests get `503 no healthy upstream`.
    pub cut_ns: Option<u64>,
    /// The node's serving layer rate-limits requests (a token bucket) and answers 429 when it
    /// is empty.
    pub rate_limit: Option<RateLimit>,
}

/// A token bucket: `burst` requests at once, refilled at `per_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateLimit {
    pub per_s: f64,
    pub burst: u32,
}

/// A whole simulated incident.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimConfig {
    pub seed: u64,
    pub engine: EngineConfig,
    pub gateway: GatewayConfig,
    pub workload: Workload,
    /// GPU telemetry (nvidia-smi CSV and NVML series) is written when set.
    pub gpus: Option<GpuSetup>,
    pub client_file: Option<ClientFile>,
}

/// Where an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    InFlight,
    /// The answer ended by itself (EOS).
    Stop,
    /// It reached `max_tokens`.
    Length,
    /// The client disconnected first (timeout, or a live client going away).
    ClientGone,
    /// Answered with this HTTP status without running (400 too long, 429 queue full).
    Rejected(u16),
    /// Failed with a CUDA out-of-memory error during prefill.
    Oom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

const NONE: u64 = u64::MAX;
const NO_JOB: u32 = u32::MAX;

/// One attempt that reached the node.
#[derive(Clone, Debug)]
struct Req {
    job: u32,
    arrival: u64,
    prompt: u32,
    /// Tokens it will generate if nothing cuts it: min(natural length, max_tokens).
    target: u32,
    max_tokens: u32,
    out: u32,
    computed: u32,
    blocks: u32,
    scheduled: u64,
    first_token: u64,
    last_token: u64,
    finish: u64,
    state: State,
    outcome: Outcome,
    attempt: u32,
    external: bool,
}

impl Req {
    fn known(&self) -> u32 {
        self.prompt + self.out
    }
}

/// A logical request of a synthetic client (its attempts are [`Req`]s).
#[derive(Clone, Debug)]
struct Job {
    stream: u16,
    prompt: u32,
    natural: u32,
    attempts: u32,
    closed_loop: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    StepEnd,
    Ready,
    Arrival(u16),
    ClientNext(u16),
    Retry(u32),
    Timeout(u32),
    Stats,
    Scrape,
    Gpu,
}

#[derive(Clone, Copy, Debug)]
struct Item {
    req: u32,
    tokens: u32,
    decode: bool,
    oom: bool,
}

#[derive(Clone, Debug, Default)]
struct InFlight {
    start: u64,
    end: u64,
    items: Vec<Item>,
}

/// Something a live host must forward to its client.
#[derive(Clone, Debug, PartialEq)]
pub enum ExternalEvent {
    /// Token `index` (0-based) of request `id` was generated at `at_ns`.
    Token { id: u32, index: u32, at_ns: u64 },
    /// The request ended (`Stop`, `Length`, `Oom` with `error`, or `ClientGone`).
    Done {
        id: u32,
        at_ns: u64,
        outcome: Outcome,
        prompt_tokens: u32,
        output_tokens: u32,
        error: Option<String>,
    },
}

/// A live request refused at the door.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// Whether the node logged it (a gateway's 503 never reaches the node).
    pub at_node: bool,
}

struct StreamState {
    rng: Rng,
    issued: u64,
    burst_pos: u64,
}

/// Figures a run ends with (for summaries and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub attempts: u64,
    pub finished: u64,
    pub rejected: u64,
    pub client_gone: u64,
    pub oom: u64,
    pub preemptions: u64,
    pub steps: u64,
    pub generated_tokens: u64,
    pub leaked_blocks: u32,
}

/// The simulation.
pub struct Sim {
    cfg: SimConfig,
    now: u64,
    engine_rng: Rng,
    streams: Vec<StreamState>,
    reqs: Vec<Req>,
    jobs: Vec<Job>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    free_blocks: u32,
    inflight: Option<InFlight>,
    spare_items: Vec<Item>,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    rec: Recorder,
    external: Vec<ExternalEvent>,
    interval_prompt: u64,
    interval_gen: u64,
    last_stats: u64,
    totals: Totals,
    oom_free_bytes: u64,
    /// The rate limiter's tokens and when they were last counted.
    bucket: (f64, u64),
    /// Access lines of requests that arrived before the API server was up.
    held_access: Vec<(u32, u16)>,
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let e = &cfg.engine;
        let cache = CacheInfo {
            block_size: e.block_size,
            num_gpu_blocks: e.num_blocks,
            gpu_memory_utilization: e.gpu_memory_utilization,
        };
        let mut rec = Recorder::new(e.model.clone(), cache, cfg.gpus.clone(), cfg.client_file.clone());
        let info = e.startup_info();
        if e.ready_ns > 0 {
            vllm_log::cold_start(
                &mut rec.log,
                &info,
                e.ready_ns,
                WEIGHTS_BYTES as f64 / f64::from(1u32 << 30),
            );
        } else {
            info.args_line(&mut rec.log, 0);
            info.capacity_lines(&mut rec.log, 0);
        }
        let oom_free_bytes = TORCH_TOTAL_BYTES - e.process_bytes();
        let streams = (0..cfg.workload.streams.len())
            .map(|i| StreamState { rng: Rng::derive(cfg.seed, i as u64 + 1), issued: 0, burst_pos: 0 })
            .collect();
        let mut sim = Sim {
            free_blocks: e.num_blocks,
            engine_rng: Rng::derive(cfg.seed, 0),
            now: 0,
            streams,
            reqs: Vec::new(),
            jobs: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            inflight: None,
            spare_items: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            rec,
            external: Vec::new(),
            interval_prompt: 0,
            interval_gen: 0,
            last_stats: 0,
            totals: Totals::default(),
            oom_free_bytes,
            bucket: (f64::from(cfg.gateway.rate_limit.map_or(0, |l| l.burst)), 0),
            held_access: Vec::new(),
            cfg,
        };
        let ready = sim.cfg.engine.ready_ns;
        sim.push(ready, Ev::Ready);
        sim.last_stats = ready;
        sim.push(ready + 10 * NS, Ev::Stats);
        sim.push(SCRAPE_EVERY_NS, Ev::Scrape);
        if sim.cfg.gpus.is_some() {
            sim.push(NS, Ev::Gpu);
        }
        for (i, s) in sim.cfg.workload.streams.clone().iter().enumerate() {
            let start = secs(s.start_s);
            match s.arrivals {
                Arrivals::Closed { clients, .. } => {
                    for _ in 0..clients {
                        sim.push(start, Ev::ClientNext(i as u16));
                    }
                }
                Arrivals::Poisson { rate_per_s } => {
                    let gap = sim.streams[i].rng.exponential(1.0 / rate_per_s);
                    sim.push(start + secs(gap), Ev::Arrival(i as u16));
                }
                Arrivals::Bursts { .. } => sim.push(start, Ev::Arrival(i as u16)),
            }
        }
        sim
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    pub fn now_ns(&self) -> u64 {
        self.now
    }

    pub fn totals(&self) -> Totals {
        Totals { leaked_blocks: self.leaked_blocks(), ..self.totals }
    }

    fn leaked_blocks(&self) -> u32 {
        let held: u32 = self.reqs.iter().filter(|r| r.state != State::Done).map(|r| r.blocks).sum();
        self.cfg.engine.num_blocks - self.free_blocks - held
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Share of the KV cache in use, 0..1 (leaked blocks included: vLLM cannot tell them apart).
    pub fn kv_usage(&self) -> f64 {
        let n = self.cfg.engine.num_blocks;
        if n == 0 { 0.0 } else { f64::from(n - self.free_blocks) / f64::from(n) }
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    /// When the next event happens, if any.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.events.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Process every event up to `until_ns`; afterwards simulated time is `until_ns`.
    pub fn advance(&mut self, until_ns: u64) {
        while let Some(Reverse((t, _, _))) = self.events.peek() {
            if *t > until_ns {
                break;
            }
            let Some(Reverse((t, _, ev))) = self.events.pop() else { break };
            self.now = self.now.max(t);
            self.handle(ev);
        }
        self.now = self.now.max(until_ns);
    }

    /// Run offline up to `until_ns` as fast as possible.
    pub fn run(&mut self, until_ns: u64) {
        self.advance(until_ns);
    }

    /// Events for live requests since the last call.
    pub fn drain_external(&mut self) -> Vec<ExternalEvent> {
        std::mem::take(&mut self.external)
    }

    /// The files as of now.
    pub fn artifacts(&self) -> Vec<Artifact> {
        self.rec.artifacts(self.now, &self.current_metrics())
    }

    /// The `/metrics` page as of now.
    pub fn metrics_text(&self) -> String {
        self.current_metrics().render(&self.rec.model, &self.rec.cache)
    }

    fn current_metrics(&self) -> Metrics {
        let mut m = self.rec.metrics.clone();
        m.running = self.running.len() as u32;
        m.waiting = self.waiting.len() as u32;
        m.kv_usage = self.kv_usage();
        m
    }

    /// The request id the engine and its logs use for attempt `r`.
    pub fn request_id(&self, r: u32) -> String {
        format!("chatcmpl-{:016x}", mix(self.cfg.seed ^ (u64::from(r) << 20)))
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::StepEnd => {
                self.end_step();
                self.try_start();
            }
            Ev::Ready => {
                for (id, code) in std::mem::take(&mut self.held_access) {
                    vllm_log::access(&mut self.rec.log, u64::from(id), "/v1/chat/completions", code);
                }
                self.try_start();
            }
            Ev::Arrival(s) => self.arrival(s),
            Ev::ClientNext(s) => self.client_next(s),
            Ev::Retry(j) => self.attempt(j),
            Ev::Timeout(r) => self.client_gone(r),
            Ev::Stats => self.stats(),
            Ev::Scrape => {
                self.rec.metrics = self.current_metrics();
                self.rec.snapshot(self.now);
                self.push(self.now + SCRAPE_EVERY_NS, Ev::Scrape);
            }
            Ev::Gpu => {
                self.rec.gpu_tick(self.now);
                self.push(self.now + NS, Ev::Gpu);
            }
        }
    }

    fn cut(&self) -> bool {
        self.cfg.gateway.cut_ns.is_some_and(|c| self.now >= c)
    }

    fn stream_open(&self, s: usize) -> bool {
        let st = &self.cfg.workload.streams[s];
        !self.cut()
            && st.stop_s.is_none_or(|stop| self.now < secs(stop))
            && st.limit.is_none_or(|l| self.streams[s].issued < l)
    }

    fn new_job(&mut self, s: usize, closed_loop: bool) -> u32 {
        let st = &self.cfg.workload.streams[s];
        let (prompt_d, output_d) = (st.prompt.clone(), st.output.clone());
        let rng = &mut self.streams[s].rng;
        let prompt = prompt_d.sample(rng);
        let natural = output_d.sample(rng).max(1);
        self.streams[s].issued += 1;
        self.jobs.push(Job { stream: s as u16, prompt, natural, attempts: 0, closed_loop });
        (self.jobs.len() - 1) as u32
    }

    fn arrival(&mut self, s: u16) {
        let si = usize::from(s);
        if !self.stream_open(si) {
            return;
        }
        let j = self.new_job(si, false);
        self.attempt(j);
        let next = match self.cfg.workload.streams[si].arrivals {
            Arrivals::Poisson { rate_per_s } => {
                self.now + secs(self.streams[si].rng.exponential(1.0 / rate_per_s))
            }
            Arrivals::Bursts { every_s, size, spacing_s } => {
                let st = &mut self.streams[si];
                st.burst_pos += 1;
                let (burst, pos) = (st.burst_pos / u64::from(size), st.burst_pos % u64::from(size));
                let start = secs(self.cfg.workload.streams[si].start_s);
                start + secs(burst as f64 * every_s + pos as f64 * spacing_s)
            }
            Arrivals::Closed { .. } => return,
        };
        self.push(next, Ev::Arrival(s));
    }

    fn client_next(&mut self, s: u16) {
        if !self.stream_open(usize::from(s)) {
            return;
        }
        let j = self.new_job(usize::from(s), true);
        self.attempt(j);
    }

    /// A synthetic client sends (or re-sends) job `j`.
    fn attempt(&mut self, j: u32) {
        if self.cut() {
            return;
        }
        self.jobs[j as usize].attempts += 1;
        let job = self.jobs[j as usize].clone();
        let st = &self.cfg.workload.streams[usize::from(job.stream)];
        let (max_tokens, timeout) = (st.max_tokens, st.client.timeout_s);
        let r = self.admit(j, job.prompt, job.natural.min(max_tokens), max_tokens, job.attempts, false);
        if let Ok(r) = r
            && let Some(t) = timeout
        {
            self.push(self.now + secs(t), Ev::Timeout(r));
        }
    }

    /// The node's admission of an attempt. `Err` carries the status it was refused with.
    fn admit(
        &mut self,
        job: u32,
        prompt: u32,
        target: u32,
        max_tokens: u32,
        attempt: u32,
        external: bool,
    ) -> Result<u32, u16> {
        let id = self.reqs.len() as u32;
        self.reqs.push(Req {
            job,
            arrival: self.now,
            prompt,
            target: target.max(1),
            max_tokens,
            out: 0,
            computed: 0,
            blocks: 0,
            scheduled: NONE,
            first_token: NONE,
            last_token: NONE,
            finish: NONE,
            state: State::Waiting,
            outcome: Outcome::InFlight,
            attempt,
            external,
        });
        self.totals.attempts += 1;
        let status = if prompt.saturating_add(max_tokens) > self.cfg.engine.max_model_len {
            Some(400)
        } else if !self.take_rate_token() {
            Some(429)
        } else {
            None
        };
        let code = status.unwrap_or(200);
        if self.now < self.cfg.engine.ready_ns {
            // The API server is not up yet: the gateway holds the request, and the access line
            // is printed when the server starts answering.
            self.held_access.push((id, code));
        } else {
            vllm_log::access(&mut self.rec.log, u64::from(id), "/v1/chat/completions", code);
        }
        if let Some(code) = status {
            self.finish(id, Outcome::Rejected(code));
            return Err(code);
        }
        self.waiting.push_back(id);
        self.try_start();
        Ok(id)
    }

    /// Whether the rate limiter lets a request through now (and take its token).
    fn take_rate_token(&mut self) -> bool {
        let Some(limit) = self.cfg.gateway.rate_limit else { return true };
        let elapsed = (self.now - self.bucket.1) as f64 / 1e9;
        self.bucket = ((self.bucket.0 + elapsed * limit.per_s).min(f64::from(limit.burst)), self.now);
        if self.bucket.0 >= 1.0 {
            self.bucket.0 -= 1.0;
            true
        } else {
            false
        }
    }

    /// A client went away (timeout, or a live connection closed).
    fn client_gone(&mut self, r: u32) {
        let req = &self.reqs[r as usize];
        if req.state == State::Done {
            return;
        }
        let was_running = req.state == State::Running;
        match req.state {
            State::Waiting => self.waiting.retain(|x| *x != r),
            State::Running => self.running.retain(|x| *x != r),
            State::Done => {}
        }
        let leak = self.cfg.engine.on_disconnect == OnDisconnect::Leak;
        if leak && was_running {
            // The serving layer forgets the request; its blocks stay allocated for good.
            self.reqs[r as usize].blocks = 0;
        } else if !leak {
            let id = self.request_id(r);
            vllm_log::aborted(&mut self.rec.log, self.now, &id);
        }
        self.finish(r, Outcome::ClientGone);
        self.try_start();
    }

    /// Settle attempt `r`: free what it holds, log it, tell its client.
    fn finish(&mut self, r: u32, outcome: Outcome) {
        let now = self.now;
        let req = &mut self.reqs[r as usize];
        req.state = State::Done;
        req.outcome = outcome;
        req.finish = now;
        self.free_blocks += req.blocks;
        req.blocks = 0;
        let req = req.clone();
        match outcome {
            Outcome::Stop | Outcome::Length => self.totals.finished += 1,
            Outcome::Rejected(_) => self.totals.rejected += 1,
            Outcome::ClientGone => self.totals.client_gone += 1,
            Outcome::Oom => self.totals.oom += 1,
            Outcome::InFlight => {}
        }
        // Metrics: vLLM observes the request-level histograms when a request finishes or is
        // aborted, not when it is rejected before running.
        if !matches!(outcome, Outcome::Rejected(_)) {
            let m = &mut self.rec.metrics;
            let s = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e9;
            match outcome {
                Outcome::Stop => m.success_stop += 1,
                Outcome::Length => m.success_length += 1,
                _ => m.success_abort += 1,
            }
            m.e2e.observe(s(req.arrival, now));
            if req.scheduled != NONE {
                m.queue.observe(s(req.arrival, req.scheduled));
                m.inference.observe(s(req.scheduled, now));
                m.prompt_len.observe(f64::from(req.prompt));
                m.generation_len.observe(f64::from(req.out));
                if req.first_token != NONE {
                    m.prefill.observe(s(req.scheduled, req.first_token));
                    m.decode.observe(s(req.first_token, req.last_token));
                }
            }
        }
        let id = self.request_id(r);
        let (status, reason) = match outcome {
            Outcome::Stop => ("200", "stop"),
            Outcome::Length => ("200", "length"),
            Outcome::ClientGone => ("client_timeout", "abort"),
            Outcome::Rejected(400) => ("400", "error"),
            Outcome::Rejected(429) => ("429", "error"),
            Outcome::Rejected(_) => ("503", "error"),
            Outcome::Oom => ("500", "error"),
            Outcome::InFlight => ("200", "none"),
        };
        let opt = |t: u64| (t != NONE).then_some(t);
        RequestRow {
            id: &id,
            enqueue_ns: req.arrival,
            scheduled_ns: opt(req.scheduled),
            first_token_ns: opt(req.first_token),
            last_token_ns: opt(req.last_token),
            finish_ns: now,
            prompt_tokens: req.prompt,
            output_tokens: req.out,
            status,
            finish_reason: reason,
            attempt: req.attempt,
        }
        .write(&mut self.rec.requests);
        if req.external {
            let error = (outcome == Outcome::Oom).then(|| self.oom_for(&req).message());
            self.external.push(ExternalEvent::Done {
                id: r,
                at_ns: now,
                outcome,
                prompt_tokens: req.prompt,
                output_tokens: req.out,
                error,
            });
            return;
        }
        if req.job == NO_JOB {
            return;
        }
        let job = self.jobs[req.job as usize].clone();
        let client = self.cfg.workload.streams[usize::from(job.stream)].client.clone();
        let failed = matches!(outcome, Outcome::ClientGone | Outcome::Oom | Outcome::Rejected(429 | 500..));
        if failed && job.attempts <= client.max_retries {
            let backoff = client.backoff_s * f64::from(1u32 << (job.attempts - 1).min(16));
            self.push(now + secs(backoff), Ev::Retry(req.job));
            return;
        }
        if job.closed_loop
            && let Arrivals::Closed { think_s, .. } =
                self.cfg.workload.streams[usize::from(job.stream)].arrivals
        {
            self.push(now + secs(think_s), Ev::ClientNext(job.stream));
        }
    }

    fn oom_for(&self, req: &Req) -> Oom {
        let e = &self.cfg.engine;
        let heads = u64::from(e.eager_attention_heads.unwrap_or(32));
        let t = u64::from(req.known());
        let process = e.process_bytes();
        let reserved_idle = 112 << 20;
        Oom {
            tried_bytes: heads * t * t * 2,
            total_bytes: TORCH_TOTAL_BYTES,
            free_bytes: self.oom_free_bytes,
            process_bytes: process,
            allocated_bytes: process - NON_TORCH_BYTES - reserved_idle,
            reserved_unallocated_bytes: reserved_idle,
        }
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.engine.block_size)
    }

    /// Take blocks so that request `r` can hold `tokens` tokens; preempt from the tail of the
    /// running list if allowed. Returns whether `r` got them (false: it was preempted itself,
    /// or preemption is off and the cache is full).
    fn reserve(&mut self, r: u32, tokens: u32, preempted: &mut bool) -> bool {
        let need = self.blocks_for(tokens).saturating_sub(self.reqs[r as usize].blocks);
        while need > self.free_blocks {
            if !self.cfg.engine.preempt_when_full {
                return false;
            }
            let Some(&victim) = self.running.last() else { return false };
            self.running.pop();
            self.preempt(victim);
            *preempted = true;
            if victim == r {
                return false;
            }
        }
        self.free_blocks -= need;
        self.reqs[r as usize].blocks += need;
        true
    }

    fn preempt(&mut self, r: u32) {
        let req = &mut self.reqs[r as usize];
        self.free_blocks += req.blocks;
        req.blocks = 0;
        req.computed = 0;
        req.state = State::Waiting;
        self.waiting.push_front(r);
        self.totals.preemptions += 1;
        self.rec.metrics.preemptions += 1;
    }

    fn try_start(&mut self) {
        if self.inflight.is_some() || self.now < self.cfg.engine.ready_ns {
            return;
        }
        let mut items = std::mem::take(&mut self.spare_items);
        items.clear();
        if self.cfg.engine.chunked_prefill {
            self.schedule_chunked(&mut items);
        } else {
            self.schedule_prefill_first(&mut items);
        }
        if items.is_empty() {
            self.spare_items = items;
            return;
        }
        let (mut prefill, mut decodes, mut kv) = (0u64, 0u64, 0u64);
        let heads = self.cfg.engine.eager_attention_heads;
        for it in &mut items {
            let req = &self.reqs[it.req as usize];
            if it.decode {
                decodes += 1;
                kv += u64::from(req.computed + 1);
            } else {
                prefill += u64::from(it.tokens);
                if let Some(h) = heads {
                    let context = u64::from(req.computed + it.tokens);
                    it.oom = u64::from(h) * u64::from(it.tokens) * context * 2 > self.oom_free_bytes;
                }
            }
        }
        let jitter = f64::from(JITTER[self.engine_rng.below(JITTER.len() as u64) as usize]) / 1000.0;
        let base = self.cfg.engine.cost.step_ns(prefill, decodes, kv) as f64;
        let d = (base * jitter * self.slow_factor()).max(1.0) as u64;
        let start = self.now;
        self.inflight = Some(InFlight { start, end: start + d, items });
        self.push(start + d, Ev::StepEnd);
    }

    /// Every tensor-parallel step waits for the slowest GPU.
    fn slow_factor(&self) -> f64 {
        match self.cfg.gpus.as_ref().and_then(|g| g.slow) {
            Some(s) if self.now >= s.from_ns && s.clock_mhz > 0 => {
                f64::from(H200_MAX_SM_MHZ) / f64::from(s.clock_mhz)
            }
            _ => 1.0,
        }
    }

    fn mark_scheduled(&mut self, r: u32) {
        let req = &mut self.reqs[r as usize];
        req.state = State::Running;
        if req.scheduled == NONE {
            req.scheduled = self.now;
        }
    }

    /// vLLM V1: running requests first, then waiting ones, within one token budget.
    fn schedule_chunked(&mut self, items: &mut Vec<Item>) {
        let mut budget = self.cfg.engine.max_num_batched_tokens;
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let r = self.running[i];
            let req = &self.reqs[r as usize];
            let remaining = req.known() - req.computed;
            let n = remaining.min(budget);
            let decode = remaining == 1 && req.out > 0;
            let upto = req.computed + n;
            if self.reserve(r, upto, &mut preempted) {
                items.push(Item { req: r, tokens: n, decode, oom: false });
                budget -= n;
                i += 1;
            } else if !self.running.contains(&r) {
                break; // r preempted itself: it was the last
            } else {
                i += 1; // no preemption: r waits for a block
            }
        }
        if preempted {
            return;
        }
        let e = &self.cfg.engine;
        let max_seqs = e.max_num_seqs as usize;
        while let Some(&r) = self.waiting.front() {
            if self.running.len() >= max_seqs || budget == 0 {
                break;
            }
            let req = &self.reqs[r as usize];
            let n = (req.known() - req.computed).min(budget);
            if self.blocks_for(req.computed + n) > self.free_blocks {
                break;
            }
            self.waiting.pop_front();
            let mut unused = false;
            self.reserve(r, self.reqs[r as usize].computed + n, &mut unused);
            self.running.push(r);
            self.mark_scheduled(r);
            items.push(Item { req: r, tokens: n, decode: false, oom: false });
            budget -= n;
        }
    }

    /// vLLM V0 without chunked prefill: a prefill-only step when whole prompts can be admitted,
    /// else a decode step.
    fn schedule_prefill_first(&mut self, items: &mut Vec<Item>) {
        let mut budget = self.cfg.engine.max_num_batched_tokens;
        let max_seqs = self.cfg.engine.max_num_seqs as usize;
        while let Some(&r) = self.waiting.front() {
            let n = self.reqs[r as usize].known();
            if n > budget || self.running.len() >= max_seqs || self.blocks_for(n) > self.free_blocks {
                break;
            }
            self.waiting.pop_front();
            let mut unused = false;
            self.reserve(r, n, &mut unused);
            self.running.push(r);
            self.mark_scheduled(r);
            items.push(Item { req: r, tokens: n, decode: false, oom: false });
            budget -= n;
        }
        if !items.is_empty() {
            return;
        }
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() {
            let r = self.running[i];
            let upto = self.reqs[r as usize].computed + 1;
            if self.reserve(r, upto, &mut preempted) {
                items.push(Item { req: r, tokens: 1, decode: true, oom: false });
                i += 1;
            } else if !self.running.contains(&r) {
                break;
            } else {
                i += 1;
            }
        }
    }

    fn end_step(&mut self) {
        let Some(step) = self.inflight.take() else { return };
        self.totals.steps += 1;
        self.rec.busy(step.start, step.end);
        let now = self.now;
        let mut done: Vec<(u32, Outcome)> = Vec::new();
        for it in &step.items {
            let r = it.req;
            let req = &mut self.reqs[r as usize];
            if req.state != State::Running {
                continue; // aborted or preempted while the step ran
            }
            if it.oom {
                done.push((r, Outcome::Oom));
                continue;
            }
            if !it.decode {
                self.interval_prompt += u64::from(it.tokens);
                self.rec.metrics.prompt_tokens += u64::from(it.tokens);
            }
            req.computed += it.tokens;
            if req.computed < req.known() {
                continue; // a prefill chunk
            }
            req.out += 1;
            let index = req.out - 1;
            if req.out == 1 {
                req.first_token = now;
                self.rec.metrics.ttft.observe((now - req.arrival) as f64 / 1e9);
            } else if req.last_token != NONE {
                self.rec.metrics.itl.observe((now - req.last_token) as f64 / 1e9);
            }
            req.last_token = now;
            self.interval_gen += 1;
            self.totals.generated_tokens += 1;
            self.rec.metrics.generation_tokens += 1;
            if req.external {
                self.external.push(ExternalEvent::Token { id: r, index, at_ns: now });
            }
            if req.out >= req.target {
                let outcome = if req.out >= req.max_tokens { Outcome::Length } else { Outcome::Stop };
                done.push((r, outcome));
            }
        }
        let mut items = step.items;
        items.clear();
        self.spare_items = items;
        if done.is_empty() {
            return;
        }
        self.running.retain(|r| !done.iter().any(|(d, _)| d == r));
        for (r, outcome) in done {
            if outcome == Outcome::Oom {
                let oom = self.oom_for(&self.reqs[r as usize]);
                oom.traceback(&mut self.rec.log, self.now);
            }
            self.finish(r, outcome);
        }
    }

    fn stats(&mut self) {
        let interval = (self.now - self.last_stats).max(1) as f64 / 1e9;
        let line = StatsLine {
            prompt_tps: self.interval_prompt as f64 / interval,
            gen_tps: self.interval_gen as f64 / interval,
            running: self.running.len() as u32,
            waiting: self.waiting.len() as u32,
            preemptions: self.totals.preemptions,
            kv_usage_pct: self.kv_usage() * 100.0,
        };
        vllm_log::stats(&mut self.rec.log, self.now, &line);
        self.interval_prompt = 0;
        self.interval_gen = 0;
        self.last_stats = self.now;
        self.push(self.now + 10 * NS, Ev::Stats);
    }

    /// A live request arrives now. `prompt_tokens` is the server's count of the prompt.
    pub fn submit(&mut self, prompt_tokens: u32, max_tokens: u32) -> Result<u32, Rejection> {
        if self.cut() {
            return Err(Rejection {
                status: 503,
                content_type: "text/plain",
                body: "no healthy upstream".into(),
                at_node: false,
            });
        }
        let max_len = self.cfg.engine.max_model_len;
        // A live client stops at max_tokens or at the natural end of a typical answer.
        let natural = max_tokens.max(1);
        match self.admit(NO_JOB, prompt_tokens, natural, max_tokens, 1, true) {
            Ok(id) => Ok(id),
            Err(400) => Err(Rejection {
                status: 400,
                content_type: "application/json",
                body: format!(
                    "{{\"object\":\"error\",\"message\":\"This model's maximum context length is {max_len} tokens. However, you requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion). Please reduce the length of the messages or completion.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
                    prompt_tokens + max_tokens
                ),
                at_node: true,
            }),
            Err(code) => Err(Rejection {
                status: code,
                content_type: "application/json",
                body: "{\"object\":\"error\",\"message\":\"Rate limit exceeded: too many requests. Retry later.\",\"type\":\"TooManyRequests\",\"param\":null,\"code\":429}".into(),
                at_node: true,
            }),
        }
    }

    /// A live client closed its connection.
    pub fn disconnect(&mut self, id: u32) {
        if (id as usize) < self.reqs.len() {
            self.client_gone(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{ClientBehaviour, LenDist, Stream};

    fn config(engine: EngineConfig, streams: Vec<Stream>) -> SimConfig {
        SimConfig {
            seed: 1,
            engine,
            gateway: GatewayConfig::default(),
            workload: Workload { streams },
            gpus: None,
            client_file: None,
        }
    }

    fn fixed(rate: f64, prompt: u32, output: u32) -> Stream {
        Stream {
            prompt: LenDist::Fixed { tokens: prompt },
            output: LenDist::Fixed { tokens: output },
            ..Stream::chat(rate, 1.0, 1.0)
        }
    }

    /// Blocks are conserved: free + held by live requests + leaked = total, at every event.
    fn check_blocks(sim: &Sim) {
        let held: u32 = sim.reqs.iter().filter(|r| r.state != State::Done).map(|r| r.blocks).sum();
        assert!(sim.free_blocks + held <= sim.cfg.engine.num_blocks);
        for r in &sim.running {
            assert_eq!(sim.reqs[*r as usize].state, State::Running);
        }
        for r in &sim.waiting {
            assert_eq!(sim.reqs[*r as usize].state, State::Waiting);
        }
    }

    #[test]
    fn one_request_takes_prefill_then_one_step_per_token() {
        let mut sim = Sim::new(config(EngineConfig::h200("m"), vec![]));
        let id = sim.submit(1000, 10).unwrap();
        sim.run(30 * NS);
        let ev = sim.drain_external();
        let tokens: Vec<u64> = ev
            .iter()
            .filter_map(|e| if let ExternalEvent::Token { at_ns, .. } = e { Some(*at_ns) } else { None })
            .collect();
        assert_eq!(tokens.len(), 10);
        let c = StepCost::H200_TRACE;
        // First token: one prefill step of 1000 tokens, within the jitter range.
        let prefill = c.step_ns(1000, 0, 0) as f64;
        assert!((tokens[0] as f64) > prefill * 0.85 && (tokens[0] as f64) < prefill * 1.7, "{}", tokens[0]);
        for w in tokens.windows(2) {
            let gap = (w[1] - w[0]) as f64;
            assert!(gap > c.base_ns as f64 * 0.85 && gap < c.base_ns as f64 * 1.7, "{gap}");
        }
        assert!(
            matches!(ev.last(), Some(ExternalEvent::Done { id: i, outcome: Outcome::Length, output_tokens: 10, .. }) if *i == id)
        );
        assert_eq!(sim.free_blocks, sim.cfg.engine.num_blocks);
    }

    #[test]
    fn same_seed_same_timeline() {
        let mk = || {
            let mut s = Sim::new(config(EngineConfig::h200("m"), vec![Stream::chat(5.0, 300.0, 100.0)]));
            s.run(60 * NS);
            s.artifacts()
        };
        assert_eq!(mk(), mk());
    }

    #[test]
    fn cache_pressure_preempts_and_conserves_blocks() {
        let mut e = EngineConfig::h200("m");
        e.override_blocks(200); // 3,200 tokens
        let mut sim = Sim::new(config(e, vec![fixed(4.0, 300, 200)]));
        for t in 1..=120 {
            sim.run(t * NS);
            check_blocks(&sim);
        }
        assert!(sim.totals.preemptions > 0, "{:?}", sim.totals);
        assert!(sim.totals.finished > 50, "{:?}", sim.totals);
        assert_eq!(sim.leaked_blocks(), 0);
    }

    #[test]
    fn without_preemption_a_full_cache_deadlocks() {
        let mut e = EngineConfig::h200("m");
        e.override_blocks(200);
        e.preempt_when_full = false;
        let mut sim = Sim::new(config(e, vec![fixed(4.0, 300, 400)]));
        sim.run(60 * NS);
        let generated = sim.totals.generated_tokens;
        sim.run(120 * NS);
        assert_eq!(sim.totals.generated_tokens, generated, "no progress once stuck");
        assert!(sim.running() > 0 && sim.kv_usage() > 0.95);
    }

    #[test]
    fn leaked_blocks_never_come_back() {
        let mut e = EngineConfig::h200("m");
        e.override_blocks(400);
        e.on_disconnect = OnDisconnect::Leak;
        let mut s = fixed(2.0, 300, 400);
        s.client = ClientBehaviour { timeout_s: Some(5.0), max_retries: 0, backoff_s: 1.0 };
        let mut sim = Sim::new(config(e, vec![s]));
        sim.run(300 * NS);
        check_blocks(&sim);
        assert!(sim.leaked_blocks() > 350, "{}", sim.leaked_blocks());
        assert_eq!(sim.running(), 0);
        assert!(sim.waiting() > 0);
        assert!(!sim.rec.log.contains("Aborted request"));
    }

    #[test]
    fn abort_frees_blocks_and_is_logged() {
        let mut s = fixed(2.0, 300, 400);
        s.client = ClientBehaviour { timeout_s: Some(5.0), max_retries: 0, backoff_s: 1.0 };
        let mut sim = Sim::new(config(EngineConfig::h200("m"), vec![s]));
        sim.run(60 * NS);
        assert_eq!(sim.leaked_blocks(), 0);
        assert!(sim.totals.client_gone > 10);
        assert!(sim.rec.log.contains("Aborted request chatcmpl-"));
        assert!(sim.rec.requests.contains("\"status\":\"client_timeout\""));
    }

    #[test]
    fn without_chunking_a_long_prompt_stalls_decodes() {
        let mut e = EngineConfig::h200("m");
        e.chunked_prefill = false;
        e.max_num_batched_tokens = 32_768;
        let mut sim = Sim::new(config(e, vec![]));
        let short = sim.submit(100, 50).unwrap();
        sim.run(NS);
        let _long = sim.submit(30_000, 4).unwrap();
        sim.run(10 * NS);
        let times: Vec<u64> = sim
            .drain_external()
            .iter()
            .filter_map(|e| match e {
                ExternalEvent::Token { id, at_ns, .. } if *id == short => Some(*at_ns),
                _ => None,
            })
            .collect();
        let worst = times.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        let expected = StepCost::H200_TRACE.step_ns(30_000, 0, 0);
        assert!(worst as f64 > 0.85 * expected as f64, "{worst} vs {expected}");
    }

    #[test]
    fn over_long_input_is_refused_and_oom_fails_only_that_request() {
        let mut e = EngineConfig::h200("m");
        assert_eq!(sim_reject(e.clone(), 40_000), Some(400));
        e.max_model_len = 131_072;
        e.max_num_batched_tokens = 131_072;
        e.chunked_prefill = false;
        e.eager_attention_heads = Some(32);
        let mut sim = Sim::new(config(e, vec![]));
        let big = sim.submit(65_536, 16).unwrap();
        let small = sim.submit(200, 4).unwrap();
        sim.run(20 * NS);
        let ev = sim.drain_external();
        assert!(ev.iter().any(|e| matches!(e, ExternalEvent::Done { id, outcome: Outcome::Oom, error: Some(m), .. } if *id == big && m.contains("Tried to allocate 256.00 GiB"))), "{ev:?}");
        assert!(
            ev.iter().any(
                |e| matches!(e, ExternalEvent::Done { id, outcome: Outcome::Length, .. } if *id == small)
            )
        );
        assert!(
            sim.rec.log.contains("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 GiB")
        );
        assert_eq!(sim.free_blocks, sim.cfg.engine.num_blocks);
    }

    fn sim_reject(e: EngineConfig, prompt: u32) -> Option<u16> {
        let mut sim = Sim::new(config(e, vec![]));
        sim.submit(prompt, 16).err().map(|r| r.status)
    }

    #[test]
    fn closed_loop_keeps_its_clients_busy() {
        let mut s = fixed(0.0, 100, 20);
        s.arrivals = Arrivals::Closed { clients: 10, think_s: 0.0 };
        s.limit = Some(200);
        let mut sim = Sim::new(config(EngineConfig::h200("m"), vec![s]));
        sim.run(30 * NS);
        assert_eq!(sim.totals.finished, 200);
    }

    #[test]
    fn retries_resend_after_a_429() {
        let mut s = fixed(0.0, 100, 200);
        s.arrivals = Arrivals::Bursts { every_s: 1000.0, size: 40, spacing_s: 0.0 };
        s.client = ClientBehaviour { timeout_s: None, max_retries: 5, backoff_s: 1.0 };
        let mut c = config(EngineConfig::h200("m"), vec![s]);
        c.gateway.rate_limit = Some(RateLimit { per_s: 1.0, burst: 10 });
        let mut sim = Sim::new(c);
        sim.run(600 * NS);
        assert!(sim.totals.rejected > 20);
        // 10 pass at once; the rest only succeed by retrying.
        assert!(sim.totals.finished > 10, "{:?}", sim.totals);
        let retried_ok = sim
            .rec
            .requests
            .lines()
            .filter(|l| l.contains("\"status\":\"200\"") && !l.contains("\"attempt\":1}"))
            .count();
        assert!(retried_ok > 0);
        assert!(sim.rec.log.contains("\" 429 Too Many Requests"));
    }
}
