//! The node's door: every attempt, a synthetic client's or a live host's, is logged on the
//! access log and either refused (400 past `max_model_len`, 429 when the rate limiter's bucket
//! is empty; a gateway that cut the node answers 503 before the node sees anything) or queued.

use super::request::{Outcome, Req, State};
use super::{RateLimit, Sim};
use crate::output::vllm_log;

/// What an attempt brings to the node's admission.
pub(super) struct Admission {
    /// The synthetic client's job; `None` for a live request.
    pub(super) job: Option<u32>,
    pub(super) prompt_tokens: u32,
    /// Tokens it will generate if nothing cuts it (at least 1 is generated).
    pub(super) target_tokens: u32,
    pub(super) max_tokens: u32,
    /// 1 for a job's first try.
    pub(super) attempt: u32,
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

/// The rate limiter's token bucket.
pub(super) struct RateBucket {
    /// Requests it would let through now (refilled lazily).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    counted_at_ns: u64,
}

impl RateBucket {
    /// A full bucket (an empty one when there is no limit: it is never consulted).
    pub(super) fn new(limit: Option<RateLimit>) -> RateBucket {
        RateBucket { tokens: f64::from(limit.map_or(0, |limit| limit.burst)), counted_at_ns: 0 }
    }

    /// Whether a request may pass at `now_ns`; takes its token if so.
    fn take(&mut self, limit: RateLimit, now_ns: u64) -> bool {
        let elapsed_s = (now_ns - self.counted_at_ns) as f64 / 1e9;
        self.tokens = (self.tokens + elapsed_s * limit.per_s).min(f64::from(limit.burst));
        self.counted_at_ns = now_ns;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Sim {
    /// Whether the gateway has stopped sending anything to the node.
    pub(super) fn cut(&self) -> bool {
        self.cfg.gateway.cut_ns.is_some_and(|cut_ns| self.now_ns >= cut_ns)
    }

    /// The node's admission of an attempt. `Err` carries the status it was refused with.
    pub(super) fn admit(&mut self, admission: Admission) -> Result<u32, u16> {
        let id = self.reqs.len() as u32;
        let Admission { job, prompt_tokens, target_tokens, max_tokens, attempt } = admission;
        self.reqs.push(Req {
            job,
            arrival_ns: self.now_ns,
            prompt_tokens,
            target_tokens: target_tokens.max(1),
            max_tokens,
            output_tokens: 0,
            computed_tokens: 0,
            blocks: 0,
            scheduled_ns: None,
            first_token_ns: None,
            last_token_ns: None,
            finish_ns: None,
            state: State::Waiting,
            outcome: Outcome::InFlight,
            attempt,
        });
        self.totals.attempts += 1;
        let refusal = if prompt_tokens.saturating_add(max_tokens) > self.cfg.engine.max_model_len {
            Some(400)
        } else if !self.take_rate_token() {
            Some(429)
        } else {
            None
        };
        let code = refusal.unwrap_or(200);
        if self.now_ns < self.cfg.engine.ready_ns {
            // The API server is not up yet: the gateway holds the request, and the access line
            // is printed when the server starts answering.
            self.held_access.push((id, code));
        } else {
            vllm_log::access(&mut self.rec.log, u64::from(id), "/v1/chat/completions", code);
        }
        if let Some(code) = refusal {
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
        self.rate_bucket.take(limit, self.now_ns)
    }

    /// The access lines of requests that arrived before the API server was up, printed when
    /// it starts answering ([`Event::Ready`](super::events::Event::Ready)).
    pub(super) fn print_held_access(&mut self) {
        for (id, code) in std::mem::take(&mut self.held_access) {
            vllm_log::access(&mut self.rec.log, u64::from(id), "/v1/chat/completions", code);
        }
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
        let natural_tokens = max_tokens.max(1);
        let admission =
            Admission { job: None, prompt_tokens, target_tokens: natural_tokens, max_tokens, attempt: 1 };
        match self.admit(admission) {
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
