//! One attempt as the node sees it ([`Req`]): its lengths, how far it has been computed, the KV
//! blocks it holds, the moments it passed and where it ended ([`Outcome`]).

use serde::Serialize;

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

/// Where an attempt is in the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// In the waiting queue (new, or preempted to be recomputed).
    Waiting,
    /// In the running list: scheduled, holding KV blocks.
    Running,
    /// Settled; it holds nothing any more (a leaked request's blocks are nobody's).
    Done,
}

/// One attempt that reached the node.
#[derive(Clone, Debug)]
pub(super) struct Req {
    /// The synthetic client's job this attempt belongs to; `None` for a live request.
    pub(super) job: Option<u32>,
    /// When it reached the node.
    pub(super) arrival_ns: u64,
    pub(super) prompt_tokens: u32,
    /// Tokens it will generate if nothing cuts it: min(natural length, max_tokens).
    pub(super) target_tokens: u32,
    pub(super) max_tokens: u32,
    pub(super) output_tokens: u32,
    /// Tokens whose KV is in the cache (prompt and output; 0 again after a preemption).
    pub(super) computed_tokens: u32,
    pub(super) blocks: u32,
    /// When it was first scheduled (a preemption does not reset it).
    pub(super) scheduled_ns: Option<u64>,
    pub(super) first_token_ns: Option<u64>,
    pub(super) last_token_ns: Option<u64>,
    pub(super) finish_ns: Option<u64>,
    pub(super) state: State,
    pub(super) outcome: Outcome,
    /// 1 for the first try of a job, 2 for its first retry, ….
    pub(super) attempt: u32,
}

impl Req {
    /// Tokens the next step must have computed before it can sample: prompt and output so far.
    pub(super) fn known_tokens(&self) -> u32 {
        self.prompt_tokens + self.output_tokens
    }

    /// A live host's request, whose tokens and end go out as [`super::ExternalEvent`]s.
    pub(super) fn is_live(&self) -> bool {
        self.job.is_none()
    }
}
