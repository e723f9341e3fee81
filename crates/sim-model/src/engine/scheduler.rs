//! The engine: the KV cache's blocks, the scheduler that picks each step's work (chunked
//! prefill on: vLLM V1's one token budget; off: V0's prefill-first steps), preemption by
//! recompute, the step's duration, and the step's end, where tokens are sampled.

use super::events::Event;
use super::request::{Outcome, Req, State};
use super::{ExternalEvent, NON_TORCH_BYTES, Sim, TORCH_TOTAL_BYTES};
use crate::calibration::JITTER;
use crate::output::gpu::H200_MAX_SM_MHZ;
use crate::output::vllm_log::Oom;

/// One request's share of a step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    pub(super) req: u32,
    /// Tokens computed for it in this step.
    pub(super) tokens: u32,
    /// A decode (one token after the first output) rather than a prefill (chunk).
    pub(super) decode: bool,
    /// Its prefill does not fit in the memory eager attention needs: it fails at the step's end.
    pub(super) oom: bool,
}

/// The step the GPU is computing.
#[derive(Clone, Debug, Default)]
pub(super) struct InFlight {
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) items: Vec<Item>,
}

impl Sim {
    /// The out-of-memory error a prefill of `req`'s known tokens raises under eager attention.
    pub(super) fn oom_for(&self, req: &Req) -> Oom {
        let engine = &self.cfg.engine;
        let heads = u64::from(engine.eager_attention_heads.unwrap_or(32));
        let tokens = u64::from(req.known_tokens());
        let process = engine.process_bytes();
        let reserved_idle = 112 << 20;
        Oom {
            tried_bytes: heads * tokens * tokens * 2,
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

    /// Take blocks so that request `req_id` can hold `tokens` tokens; preempt from the tail of
    /// the running list if allowed. Returns whether it got them (false: it was preempted
    /// itself, or preemption is off and the cache is full).
    fn reserve(&mut self, req_id: u32, tokens: u32, preempted: &mut bool) -> bool {
        let need = self.blocks_for(tokens).saturating_sub(self.reqs[req_id as usize].blocks);
        while need > self.free_blocks {
            if !self.cfg.engine.preempt_when_full {
                return false;
            }
            let Some(&victim) = self.running.last() else { return false };
            self.running.pop();
            self.preempt(victim);
            *preempted = true;
            if victim == req_id {
                return false;
            }
        }
        self.free_blocks -= need;
        self.reqs[req_id as usize].blocks += need;
        true
    }

    /// Preemption by recompute: free the request's blocks and put it back at the queue's front.
    fn preempt(&mut self, req_id: u32) {
        let req = &mut self.reqs[req_id as usize];
        self.free_blocks += req.blocks;
        req.blocks = 0;
        req.computed_tokens = 0;
        req.state = State::Waiting;
        self.waiting.push_front(req_id);
        self.totals.preemptions += 1;
        self.rec.metrics.preemptions += 1;
    }

    /// Start the next step if the engine is up, idle and has work.
    pub(super) fn try_start(&mut self) {
        if self.inflight.is_some() || self.now_ns < self.cfg.engine.ready_ns {
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
        let (mut prefill_tokens, mut decodes, mut kv_tokens) = (0u64, 0u64, 0u64);
        let heads = self.cfg.engine.eager_attention_heads;
        for item in &mut items {
            let req = &self.reqs[item.req as usize];
            if item.decode {
                decodes += 1;
                kv_tokens += u64::from(req.computed_tokens + 1);
            } else {
                prefill_tokens += u64::from(item.tokens);
                if let Some(heads) = heads {
                    let context = u64::from(req.computed_tokens + item.tokens);
                    item.oom = u64::from(heads) * u64::from(item.tokens) * context * 2 > self.oom_free_bytes;
                }
            }
        }
        let jitter = f64::from(JITTER[self.engine_rng.below(JITTER.len() as u64) as usize]) / 1000.0;
        let base_ns = self.cfg.engine.cost.step_ns(prefill_tokens, decodes, kv_tokens) as f64;
        let duration_ns = (base_ns * jitter * self.slow_factor()).max(1.0) as u64;
        let start_ns = self.now_ns;
        self.inflight = Some(InFlight { start_ns, end_ns: start_ns + duration_ns, items });
        self.events.push(start_ns + duration_ns, Event::StepEnd);
    }

    /// Every tensor-parallel step waits for the slowest GPU.
    fn slow_factor(&self) -> f64 {
        match self.cfg.gpus.as_ref().and_then(|gpus| gpus.slow) {
            Some(slow) if self.now_ns >= slow.from_ns && slow.clock_mhz > 0 => {
                f64::from(H200_MAX_SM_MHZ) / f64::from(slow.clock_mhz)
            }
            _ => 1.0,
        }
    }

    fn mark_scheduled(&mut self, req_id: u32) {
        let req = &mut self.reqs[req_id as usize];
        req.state = State::Running;
        if req.scheduled_ns.is_none() {
            req.scheduled_ns = Some(self.now_ns);
        }
    }

    /// vLLM V1: running requests first, then waiting ones, within one token budget.
    fn schedule_chunked(&mut self, items: &mut Vec<Item>) {
        let mut budget = self.cfg.engine.max_num_batched_tokens;
        let mut preempted = false;
        let mut index = 0;
        while index < self.running.len() && budget > 0 {
            let req_id = self.running[index];
            let req = &self.reqs[req_id as usize];
            let remaining = req.known_tokens() - req.computed_tokens;
            let tokens = remaining.min(budget);
            let decode = remaining == 1 && req.output_tokens > 0;
            let upto = req.computed_tokens + tokens;
            if self.reserve(req_id, upto, &mut preempted) {
                items.push(Item { req: req_id, tokens, decode, oom: false });
                budget -= tokens;
                index += 1;
            } else if !self.running.contains(&req_id) {
                break; // it preempted itself: it was the last
            } else {
                index += 1; // no preemption: it waits for a block
            }
        }
        if preempted {
            return;
        }
        let max_seqs = self.cfg.engine.max_num_seqs as usize;
        while let Some(&req_id) = self.waiting.front() {
            if self.running.len() >= max_seqs || budget == 0 {
                break;
            }
            let req = &self.reqs[req_id as usize];
            let tokens = (req.known_tokens() - req.computed_tokens).min(budget);
            if self.blocks_for(req.computed_tokens + tokens) > self.free_blocks {
                break;
            }
            self.waiting.pop_front();
            let mut unused = false;
            self.reserve(req_id, self.reqs[req_id as usize].computed_tokens + tokens, &mut unused);
            self.running.push(req_id);
            self.mark_scheduled(req_id);
            items.push(Item { req: req_id, tokens, decode: false, oom: false });
            budget -= tokens;
        }
    }

    /// vLLM V0 without chunked prefill: a prefill-only step when whole prompts can be admitted,
    /// else a decode step.
    fn schedule_prefill_first(&mut self, items: &mut Vec<Item>) {
        let mut budget = self.cfg.engine.max_num_batched_tokens;
        let max_seqs = self.cfg.engine.max_num_seqs as usize;
        while let Some(&req_id) = self.waiting.front() {
            let tokens = self.reqs[req_id as usize].known_tokens();
            if tokens > budget || self.running.len() >= max_seqs || self.blocks_for(tokens) > self.free_blocks
            {
                break;
            }
            self.waiting.pop_front();
            let mut unused = false;
            self.reserve(req_id, tokens, &mut unused);
            self.running.push(req_id);
            self.mark_scheduled(req_id);
            items.push(Item { req: req_id, tokens, decode: false, oom: false });
            budget -= tokens;
        }
        if !items.is_empty() {
            return;
        }
        let mut preempted = false;
        let mut index = 0;
        while index < self.running.len() {
            let req_id = self.running[index];
            let upto = self.reqs[req_id as usize].computed_tokens + 1;
            if self.reserve(req_id, upto, &mut preempted) {
                items.push(Item { req: req_id, tokens: 1, decode: true, oom: false });
                index += 1;
            } else if !self.running.contains(&req_id) {
                break;
            } else {
                index += 1;
            }
        }
    }

    /// The step in flight ends: count what it computed, sample a token for every request whose
    /// known tokens are all computed, and settle those that are done (or ran out of memory).
    pub(super) fn end_step(&mut self) {
        let Some(step) = self.inflight.take() else { return };
        self.totals.steps += 1;
        self.rec.busy(step.start_ns, step.end_ns);
        let now = self.now_ns;
        let mut done: Vec<(u32, Outcome)> = Vec::new();
        for item in &step.items {
            let req_id = item.req;
            let req = &mut self.reqs[req_id as usize];
            if req.state != State::Running {
                continue; // aborted or preempted while the step ran
            }
            if item.oom {
                done.push((req_id, Outcome::Oom));
                continue;
            }
            if !item.decode {
                self.interval_prompt_tokens += u64::from(item.tokens);
                self.rec.metrics.prompt_tokens += u64::from(item.tokens);
            }
            req.computed_tokens += item.tokens;
            if req.computed_tokens < req.known_tokens() {
                continue; // a prefill chunk
            }
            req.output_tokens += 1;
            let index = req.output_tokens - 1;
            if req.output_tokens == 1 {
                req.first_token_ns = Some(now);
                self.rec.metrics.ttft.observe((now - req.arrival_ns) as f64 / 1e9);
            } else if let Some(last_token_ns) = req.last_token_ns {
                self.rec.metrics.itl.observe((now - last_token_ns) as f64 / 1e9);
            }
            req.last_token_ns = Some(now);
            self.interval_generation_tokens += 1;
            self.totals.generated_tokens += 1;
            self.rec.metrics.generation_tokens += 1;
            if req.is_live() {
                self.external.push(ExternalEvent::Token { id: req_id, index, at_ns: now });
            }
            if req.output_tokens >= req.target_tokens {
                let outcome =
                    if req.output_tokens >= req.max_tokens { Outcome::Length } else { Outcome::Stop };
                done.push((req_id, outcome));
            }
        }
        let mut items = step.items;
        items.clear();
        self.spare_items = items;
        if done.is_empty() {
            return;
        }
        self.running.retain(|running| !done.iter().any(|(done_id, _)| done_id == running));
        for (req_id, outcome) in done {
            if outcome == Outcome::Oom {
                let oom = self.oom_for(&self.reqs[req_id as usize]);
                oom.traceback(&mut self.rec.log, self.now_ns);
            }
            self.finish(req_id, outcome);
        }
    }
}
