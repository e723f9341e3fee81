//! A pasted SSE stream body (`data: {…}` lines): what the server sent, judged like a probe would
//! judge it — tokens by kind, finish reason, usage, in-stream errors, an early end.
//!
//! Pasted text has no arrival times, so each line's number stands in for time: order and
//! counts are real, durations are not (and are not reported).

use super::{Cx, SectionParser};
pub use crate::facts::sse::StreamFacts;
use crate::report::EvidenceLine;
use triage_base::fault::judge_stream;
use triage_base::timing::{StreamTimer, TimerConfig};

/// Most pasted streams kept.
const MAX_STREAMS: usize = 64;

/// Reads a pasted SSE transcript (`data:` lines) as one stream.
#[derive(Default)]
pub struct SseTranscriptParser {
    timer: Option<StreamTimer>,
    first: Option<EvidenceLine>,
    last_line: usize,
}

impl SectionParser for SseTranscriptParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim_start();
        t.is_empty()
            || t.starts_with("data:")
            || t.starts_with("event:")
            || t.starts_with("id:")
            || t.starts_with(':')
            || t.starts_with("retry:")
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let timer = self.timer.get_or_insert_with(|| StreamTimer::new(0, TimerConfig::default()));
        self.first.get_or_insert_with(|| cx.evidence(no, line));
        self.last_line = no;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        timer.feed(&bytes, no as u64);
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        let (Some(timer), Some(first)) = (self.timer, self.first) else { return };
        // A paste usually loses the final blank line: close the last event if it is complete.
        let mut timer = timer;
        timer.feed(b"\n", self.last_line as u64);
        let timing = timer.finish(self.last_line as u64);
        let fault =
            judge_stream("text/event-stream", "the pasted stream", &timing).map(|f| (f.kind, f.message));
        if timing.events == 0 {
            cx.issue_in(
                first.line,
                "an SSE-looking section without any complete event",
                "看起来是 SSE 的片段，但没有一个完整事件",
            );
        }
        // One stream per section, and sections can be a line each: bounded like the other facts.
        if cx.facts.streams.len() < MAX_STREAMS {
            cx.facts.streams.push(StreamFacts { timing, fault, evidence: first });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    /// Streams alternating with another kind open a section each; their facts grew without end.
    #[test]
    fn many_streams_are_bounded() {
        let text = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\nvllm:x_total 1\n";
        let streams = run("paste", &text.repeat(MAX_STREAMS * 2)).facts.streams;
        assert_eq!(streams.len(), MAX_STREAMS);
        assert_eq!(streams[0].timing.events, 1);
    }
}
