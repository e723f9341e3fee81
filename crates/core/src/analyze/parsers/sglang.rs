//! SGLang server logs: prefill and decode batch lines, KV allocation.
//! (Being written: see SglangFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SglangBatch {
    /// `true` for `Prefill batch`, `false` for `Decode batch`.
    pub prefill: bool,
    pub new_seq: Option<f64>,
    pub new_token: Option<f64>,
    pub cached_token: Option<f64>,
    /// Decode: `#token` (tokens in the KV cache).
    pub tokens: Option<f64>,
    /// 0..1.
    pub token_usage: Option<f64>,
    pub running: Option<f64>,
    pub queue: Option<f64>,
    pub gen_tps: Option<f64>,
    pub evidence: EvidenceLine,
}

#[derive(Debug, Default)]
pub struct SglangFacts {
    pub batches: Vec<SglangBatch>,
    /// `KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB`.
    pub kv_allocated: Option<EvidenceLine>,
    pub errors: Vec<EvidenceLine>,
}

#[derive(Default)]
pub struct SglangParser;

impl SectionParser for SglangParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
