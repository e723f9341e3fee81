//! Text Generation Inference router logs (spans with `total_time`, `validation_time`,
//! `queue_time`, `inference_time`, `time_per_token`).
//! (Being written: see TgiFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;
use crate::stats::QuantileSketch;

#[derive(Debug, Default)]
pub struct TgiFacts {
    pub requests: u64,
    pub total_ms: QuantileSketch,
    pub queue_ms: QuantileSketch,
    pub inference_ms: QuantileSketch,
    /// TGI's `time_per_token` includes prefill (BRIEF.md): not TPOT.
    pub time_per_token_ms: QuantileSketch,
    pub errors: Vec<EvidenceLine>,
    pub slowest: Option<EvidenceLine>,
}

#[derive(Default)]
pub struct TgiParser;

impl SectionParser for TgiParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
