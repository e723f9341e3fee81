//! A pasted SSE stream, timed (written by `parsers/sse.rs`).

use crate::report::EvidenceLine;
use triage_base::fault::FaultKind;
use triage_base::timing::RequestTiming;

/// One pasted SSE response, timed with line numbers for times (a paste has no clock).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamFacts {
    /// What the timer measured, each line's number standing for its arrival time.
    pub timing: RequestTiming,
    /// What a probe would call this stream's failure, if any.
    pub fault: Option<(FaultKind, String)>,
    /// The stream's first line, quoted.
    pub evidence: EvidenceLine,
}
