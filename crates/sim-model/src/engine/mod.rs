//! The discrete-event model of one serving replica: clients and their retries, the node's
//! admission, and a continuous-batching engine with a paged KV cache.
//!
//! The engine runs steps back to back while it has work, as vLLM's engine loop does. Each step
//! the scheduler picks what to compute, the step's duration comes from [`StepCost`](crate::calibration::StepCost) (prefill
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
//!
//! The rooms: `config.rs` (what a run is set up with), `events.rs` (the clock and its queue),
//! `clients.rs` (synthetic clients, timeouts, retries), `admission.rs` (the node's door),
//! `scheduler.rs` (KV blocks, steps, preemption), `request.rs` (one attempt's record) and
//! `record.rs` (what a settled attempt leaves behind: totals, histograms, the request log, the
//! live host's events). This file holds [`Sim`], its event loop and its accessors.

mod admission;
mod clients;
mod config;
mod events;
mod record;
mod request;
mod scheduler;

pub use admission::Rejection;
pub use config::{
    EngineConfig, GatewayConfig, OnDisconnect, RateLimit, SimConfig, TORCH_TOTAL_BYTES, WEIGHTS_BYTES,
};
pub use record::{ExternalEvent, Totals};
pub use request::Outcome;

use crate::output::gpu::Tick;
use crate::output::metrics::{CacheInfo, Metrics};
use crate::output::vllm_log;
use crate::output::{Artifact, Recorder, SCRAPE_EVERY_NS};
use crate::rng::{Rng, splitmix64};
use crate::workload::Arrivals;
use admission::RateBucket;
use clients::{Job, StreamState};
use config::NON_TORCH_BYTES;
use events::{Event, EventQueue};
use request::{Req, State};
use scheduler::{InFlight, Item};
use std::collections::VecDeque;

/// Nanoseconds in a second: simulated time is a `u64` of nanoseconds.
pub const NS: u64 = 1_000_000_000;

/// Seconds → simulated nanoseconds.
pub fn secs(seconds: f64) -> u64 {
    (seconds * 1e9).round().max(0.0) as u64
}

/// The simulation.
pub struct Sim {
    cfg: SimConfig,
    /// Simulated time.
    now_ns: u64,
    engine_rng: Rng,
    streams: Vec<StreamState>,
    /// Every attempt that reached the node, indexed by its id.
    reqs: Vec<Req>,
    jobs: Vec<Job>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    free_blocks: u32,
    inflight: Option<InFlight>,
    /// The last step's item list, kept to reuse its allocation.
    spare_items: Vec<Item>,
    events: EventQueue,
    rec: Recorder,
    external: Vec<ExternalEvent>,
    /// Prompt tokens computed since the last stats line.
    interval_prompt_tokens: u64,
    /// Tokens generated since the last stats line.
    interval_generation_tokens: u64,
    last_stats_ns: u64,
    totals: Totals,
    /// What PyTorch reports free when a prefill runs out of memory.
    oom_free_bytes: u64,
    rate_bucket: RateBucket,
    /// Access lines of requests that arrived before the API server was up.
    held_access: Vec<(u32, u16)>,
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let engine = &cfg.engine;
        let cache = CacheInfo {
            block_size: engine.block_size,
            num_gpu_blocks: engine.num_blocks,
            gpu_memory_utilization: engine.gpu_memory_utilization,
        };
        let mut rec = Recorder::new(engine.model.clone(), cache, cfg.gpus.clone(), cfg.client_file.clone());
        let info = engine.startup_info();
        if engine.ready_ns > 0 {
            vllm_log::cold_start(
                &mut rec.log,
                &info,
                engine.ready_ns,
                WEIGHTS_BYTES as f64 / f64::from(1u32 << 30),
            );
        } else {
            info.args_line(&mut rec.log, 0);
            info.capacity_lines(&mut rec.log, 0);
        }
        let oom_free_bytes = TORCH_TOTAL_BYTES - engine.process_bytes();
        let streams = (0..cfg.workload.streams.len())
            .map(|index| StreamState {
                rng: Rng::derive(cfg.seed, index as u64 + 1),
                issued: 0,
                burst_pos: 0,
            })
            .collect();
        let mut sim = Sim {
            free_blocks: engine.num_blocks,
            engine_rng: Rng::derive(cfg.seed, 0),
            now_ns: 0,
            streams,
            reqs: Vec::new(),
            jobs: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            inflight: None,
            spare_items: Vec::new(),
            events: EventQueue::default(),
            rec,
            external: Vec::new(),
            interval_prompt_tokens: 0,
            interval_generation_tokens: 0,
            last_stats_ns: 0,
            totals: Totals::default(),
            oom_free_bytes,
            rate_bucket: RateBucket::new(cfg.gateway.rate_limit),
            held_access: Vec::new(),
            cfg,
        };
        let ready_ns = sim.cfg.engine.ready_ns;
        sim.events.push(ready_ns, Event::Ready);
        sim.last_stats_ns = ready_ns;
        sim.events.push(ready_ns + 10 * NS, Event::Stats);
        sim.events.push(SCRAPE_EVERY_NS, Event::Scrape);
        if sim.cfg.gpus.is_some() {
            sim.events.push(NS, Event::Gpu);
        }
        for (index, spec) in sim.cfg.workload.streams.clone().iter().enumerate() {
            let start = secs(spec.start_s);
            let stream = index as u16;
            match spec.arrivals {
                Arrivals::Closed { clients, .. } => {
                    for _ in 0..clients {
                        sim.events.push(start, Event::ClientNext { stream });
                    }
                }
                Arrivals::Poisson { rate_per_s } => {
                    let gap_s = sim.streams[index].rng.exponential(1.0 / rate_per_s);
                    sim.events.push(start + secs(gap_s), Event::Arrival { stream });
                }
                Arrivals::Bursts { .. } => sim.events.push(start, Event::Arrival { stream }),
            }
        }
        sim
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    pub fn totals(&self) -> Totals {
        Totals { leaked_blocks: self.leaked_blocks(), ..self.totals }
    }

    fn leaked_blocks(&self) -> u32 {
        let held: u32 = self.reqs.iter().filter(|req| req.state != State::Done).map(|req| req.blocks).sum();
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
        let total = self.cfg.engine.num_blocks;
        if total == 0 { 0.0 } else { f64::from(total - self.free_blocks) / f64::from(total) }
    }

    /// When the next event happens, if any.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.events.next_ns()
    }

    /// Process every event up to `until_ns`; afterwards simulated time is `until_ns`.
    pub fn advance(&mut self, until_ns: u64) {
        while let Some((at_ns, event)) = self.events.pop_due(until_ns) {
            self.now_ns = self.now_ns.max(at_ns);
            self.handle(event);
        }
        self.now_ns = self.now_ns.max(until_ns);
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
        self.rec.artifacts(self.now_ns, &self.current_metrics())
    }

    /// The `/metrics` page as of now.
    pub fn metrics_text(&self) -> String {
        self.current_metrics().render(&self.rec.model, &self.rec.cache)
    }

    /// The engine's figures as of now (what `/metrics` shows).
    pub fn metrics(&self) -> Metrics {
        self.current_metrics()
    }

    /// What `vllm:cache_config_info` carries.
    pub fn cache_info(&self) -> &CacheInfo {
        &self.rec.cache
    }

    /// The GPU seconds closed so far, one a second from 1 s (empty without GPUs).
    pub fn gpu_ticks(&self) -> &[Tick] {
        &self.rec.ticks
    }

    fn current_metrics(&self) -> Metrics {
        let mut metrics = self.rec.metrics.clone();
        metrics.running = self.running.len() as u32;
        metrics.waiting = self.waiting.len() as u32;
        metrics.kv_usage = self.kv_usage();
        metrics
    }

    /// The request id the engine and its logs use for attempt `req_id`.
    pub fn request_id(&self, req_id: u32) -> String {
        let mut state = self.cfg.seed ^ (u64::from(req_id) << 20);
        format!("chatcmpl-{:016x}", splitmix64(&mut state))
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::StepEnd => {
                self.end_step();
                self.try_start();
            }
            Event::Ready => {
                self.print_held_access();
                self.try_start();
            }
            Event::Arrival { stream } => self.arrival(stream),
            Event::ClientNext { stream } => self.client_next(stream),
            Event::Retry { job } => self.attempt(job),
            Event::Timeout { req } => self.client_gone(req),
            Event::Stats => self.stats(),
            Event::Scrape => {
                self.rec.metrics = self.current_metrics();
                self.rec.snapshot(self.now_ns);
                self.events.push(self.now_ns + SCRAPE_EVERY_NS, Event::Scrape);
            }
            Event::Gpu => {
                self.rec.gpu_tick(self.now_ns);
                self.events.push(self.now_ns + NS, Event::Gpu);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::StepCost;
    use crate::workload::{ClientBehaviour, LenDist, Stream, Workload};

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
            (s.totals.finished, s.artifacts())
        };
        let (finished, artifacts) = mk();
        // Two empty timelines would be equal too: this one served requests and wrote them down.
        assert!(finished > 100, "{finished} requests finished in 60 s at 5 per second");
        assert!(artifacts.iter().any(|a| a.content.matches('\n').count() > 100), "{artifacts:?}");
        assert_eq!((finished, artifacts), mk());
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
