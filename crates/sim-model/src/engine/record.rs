//! What an attempt leaves behind when it is settled, and what the engine reports as it runs:
//! the run's [`Totals`], vLLM's request-level histograms, the request-log row, the live host's
//! [`ExternalEvent`]s, and the periodic stats line.

use super::events::Event;
use super::request::{Outcome, Req, State};
use super::{NS, Sim};
use crate::output::RequestRow;
use crate::output::vllm_log::{self, StatsLine};
use serde::Serialize;

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

impl Totals {
    fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Stop | Outcome::Length => self.finished += 1,
            Outcome::Rejected(_) => self.rejected += 1,
            Outcome::ClientGone => self.client_gone += 1,
            Outcome::Oom => self.oom += 1,
            Outcome::InFlight => {}
        }
    }
}

impl Sim {
    /// Settle attempt `req_id`: free what it holds, count it, log it, tell its client.
    pub(super) fn finish(&mut self, req_id: u32, outcome: Outcome) {
        let now = self.now_ns;
        let req = &mut self.reqs[req_id as usize];
        req.state = State::Done;
        req.outcome = outcome;
        req.finish_ns = Some(now);
        self.free_blocks += req.blocks;
        req.blocks = 0;
        let req = req.clone();
        self.totals.count(outcome);
        self.observe_finished(&req, outcome);
        self.write_request_row(req_id, &req, outcome);
        match req.job {
            None => self.notify_live_done(req_id, &req, outcome),
            Some(job) => self.after_attempt(job, outcome),
        }
    }

    /// vLLM observes the request-level histograms when a request finishes or is aborted, not
    /// when it is rejected before running.
    fn observe_finished(&mut self, req: &Req, outcome: Outcome) {
        if matches!(outcome, Outcome::Rejected(_)) {
            return;
        }
        let now = self.now_ns;
        let metrics = &mut self.rec.metrics;
        let seconds_between = |from_ns: u64, to_ns: u64| to_ns.saturating_sub(from_ns) as f64 / 1e9;
        match outcome {
            Outcome::Stop => metrics.success_stop += 1,
            Outcome::Length => metrics.success_length += 1,
            _ => metrics.success_abort += 1,
        }
        metrics.e2e.observe(seconds_between(req.arrival_ns, now));
        let Some(scheduled_ns) = req.scheduled_ns else { return };
        metrics.queue.observe(seconds_between(req.arrival_ns, scheduled_ns));
        metrics.inference.observe(seconds_between(scheduled_ns, now));
        metrics.prompt_len.observe(f64::from(req.prompt_tokens));
        metrics.generation_len.observe(f64::from(req.output_tokens));
        if let (Some(first_token_ns), Some(last_token_ns)) = (req.first_token_ns, req.last_token_ns) {
            metrics.prefill.observe(seconds_between(scheduled_ns, first_token_ns));
            metrics.decode.observe(seconds_between(first_token_ns, last_token_ns));
        }
    }

    /// The attempt's row in the four-timestamp request log.
    fn write_request_row(&mut self, req_id: u32, req: &Req, outcome: Outcome) {
        let id = self.request_id(req_id);
        let (status, finish_reason) = match outcome {
            Outcome::Stop => ("200", "stop"),
            Outcome::Length => ("200", "length"),
            Outcome::ClientGone => ("client_timeout", "abort"),
            Outcome::Rejected(400) => ("400", "error"),
            Outcome::Rejected(429) => ("429", "error"),
            Outcome::Rejected(_) => ("503", "error"),
            Outcome::Oom => ("500", "error"),
            Outcome::InFlight => ("200", "none"),
        };
        RequestRow {
            id: &id,
            enqueue_ns: req.arrival_ns,
            scheduled_ns: req.scheduled_ns,
            first_token_ns: req.first_token_ns,
            last_token_ns: req.last_token_ns,
            finish_ns: self.now_ns,
            prompt_tokens: req.prompt_tokens,
            output_tokens: req.output_tokens,
            status,
            finish_reason,
            attempt: req.attempt,
        }
        .write(&mut self.rec.requests);
    }

    /// Tell the live host that its request ended.
    fn notify_live_done(&mut self, req_id: u32, req: &Req, outcome: Outcome) {
        let error = (outcome == Outcome::Oom).then(|| self.oom_for(req).message());
        self.external.push(ExternalEvent::Done {
            id: req_id,
            at_ns: self.now_ns,
            outcome,
            prompt_tokens: req.prompt_tokens,
            output_tokens: req.output_tokens,
            error,
        });
    }

    /// The engine's periodic stats line (throughput since the last one, queue, cache usage).
    pub(super) fn stats(&mut self) {
        let interval_s = (self.now_ns - self.last_stats_ns).max(1) as f64 / 1e9;
        let line = StatsLine {
            prompt_tps: self.interval_prompt_tokens as f64 / interval_s,
            gen_tps: self.interval_generation_tokens as f64 / interval_s,
            running: self.running.len() as u32,
            waiting: self.waiting.len() as u32,
            preemptions: self.totals.preemptions,
            kv_usage_pct: self.kv_usage() * 100.0,
        };
        vllm_log::stats(&mut self.rec.log, self.now_ns, &line);
        self.interval_prompt_tokens = 0;
        self.interval_generation_tokens = 0;
        self.last_stats_ns = self.now_ns;
        self.events.push(self.now_ns + 10 * NS, Event::Stats);
    }
}
