//! PyTorch / CUDA out-of-memory tracebacks.
//! (Being written: see OomFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;

/// What one OOM message says. Sizes in GiB as PyTorch prints them (MiB/GiB/KiB converted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OomFacts {
    pub gpu: Option<u32>,
    pub tried_gib: Option<f64>,
    pub total_gib: Option<f64>,
    pub free_gib: Option<f64>,
    /// `Of the allocated memory X is allocated by PyTorch`.
    pub allocated_by_pytorch_gib: Option<f64>,
    /// `and Y is reserved by PyTorch but unallocated`: large means fragmentation.
    pub reserved_unallocated_gib: Option<f64>,
    /// `Process N has X GiB memory in use`: (pid, GiB).
    pub processes: Vec<(u32, f64)>,
    /// The message line and the lines that proved the figures.
    pub evidence: Vec<EvidenceLine>,
}

#[derive(Default)]
pub struct OomParser;

impl SectionParser for OomParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
