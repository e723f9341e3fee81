//! The per-stream state machine, pure: bytes and monotonic nanoseconds in, observations and a
//! [`Summary`] out. The wasm glue supplies the clock and the host calls.
//!
//! Memory per stream is O(1): unlike `triage_core::timing::StreamTimer`, which keeps every
//! token's time, this keeps counts, the first and last instants and the largest gap, and hands
//! each gap to the caller the moment it is seen (the filter records it in a host histogram).
//! The figures follow `triage_core::defs` and equal `StreamTimer`'s for the same chunks and
//! times (the integration tests check this): TTFT and TTFO from the request headers (the
//! gateway's enqueue), gaps between successive token-carrying events, TPOT per request, E2E
//! to the last token, output tokens from the server's usage when it sent one.
//!
//! Bounded: the SSE parser keeps at most `max_line_bytes` of a partial line and
//! `max_event_bytes` of one event's data (plus the `event:` and `id:` values, each at most a
//! line); the finish reason, error text and response id are cut to [`MAX_FINISH_REASON`],
//! [`MAX_ERROR`] and [`MAX_RESPONSE_ID`] bytes.

use crate::fast::{SHAPE_MAX, Shape, View};
use triage_core::sse::{RawItem, SseLimits, SseParser};
use triage_core::stream::{Dialect, TokenKind, Usage, classify};
use triage_core::timing::TokenSource;

pub const MAX_FINISH_REASON: usize = 64;
pub const MAX_ERROR: usize = 256;
pub const MAX_RESPONSE_ID: usize = 128;

/// Something the caller should record as it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// The first token-carrying event; TTFT from the request headers.
    FirstToken { ttft_ns: u64 },
    /// The first answer (non-reasoning) token event; TTFO.
    FirstAnswer { ttfo_ns: u64 },
    /// A gap between two successive token events, and whether it is a stall.
    Gap { gap_ns: u64, stall: bool },
}

/// Why the guard reset a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breach {
    MaxDuration,
    MaxIdle,
}

impl Breach {
    pub fn as_str(self) -> &'static str {
        match self {
            Breach::MaxDuration => "max_duration",
            Breach::MaxIdle => "max_idle",
        }
    }
}

/// How the proxy ended the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The response ended normally (`end_of_stream`).
    EndOfStream,
    /// The stream went away without an end (client or upstream reset, proxy timeout).
    Reset,
    /// The filter's guard reset it.
    Guard(Breach),
}

/// The verdict on one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A finish reason or a terminal event was seen.
    Complete,
    /// The body ended without a terminal event or finish reason.
    Incomplete,
    /// An error event arrived inside the stream.
    StreamError,
    /// The response status was 400 or above.
    HttpError,
    /// The stream went away before its end.
    Reset,
    Guard(Breach),
}

/// The error counter a non-complete outcome increments (`reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReason {
    HttpStatus,
    StreamError,
    Incomplete,
    Reset,
    Guard,
}

impl ErrorReason {
    pub const ALL: [ErrorReason; 5] = [
        ErrorReason::HttpStatus,
        ErrorReason::StreamError,
        ErrorReason::Incomplete,
        ErrorReason::Reset,
        ErrorReason::Guard,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorReason::HttpStatus => "http_status",
            ErrorReason::StreamError => "stream_error",
            ErrorReason::Incomplete => "incomplete",
            ErrorReason::Reset => "reset",
            ErrorReason::Guard => "guard",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Incomplete => "incomplete",
            Outcome::StreamError => "stream_error",
            Outcome::HttpError => "http_error",
            Outcome::Reset => "reset",
            Outcome::Guard(Breach::MaxDuration) => "guard_max_duration",
            Outcome::Guard(Breach::MaxIdle) => "guard_max_idle",
        }
    }

    pub fn error_reason(self) -> Option<ErrorReason> {
        match self {
            Outcome::Complete => None,
            Outcome::Incomplete => Some(ErrorReason::Incomplete),
            Outcome::StreamError => Some(ErrorReason::StreamError),
            Outcome::HttpError => Some(ErrorReason::HttpStatus),
            Outcome::Reset => Some(ErrorReason::Reset),
            Outcome::Guard(_) => Some(ErrorReason::Guard),
        }
    }
}

/// Everything but the parser, so the parser's sink can borrow it.
#[derive(Debug, Clone, Default)]
struct Figures {
    enqueue_ns: u64,
    stall_threshold_ns: u64,
    headers_ns: Option<u64>,
    status: Option<u16>,
    first_byte_ns: Option<u64>,
    first_token_ns: Option<u64>,
    first_answer_ns: Option<u64>,
    last_token_ns: Option<u64>,
    done_ns: Option<u64>,
    token_events: u64,
    reasoning_events: u64,
    tool_events: u64,
    events: u64,
    bytes: u64,
    pings: u64,
    unreadable_events: u32,
    truncated_events: u32,
    stalls: u32,
    max_gap_ns: u64,
    usage: Option<Usage>,
    finish_reason: Option<Box<str>>,
    error: Option<Box<str>>,
    response_id: Option<Box<str>>,
    dialect: Option<Dialect>,
    terminal: bool,
}

/// One timed stream. See the module docs.
#[derive(Debug, Clone)]
pub struct Stream {
    parser: SseParser,
    shape: Shape,
    f: Figures,
}

/// The figures of one finished stream. Instants are on the filter's monotonic clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub dialect: Option<Dialect>,
    pub finish_reason: Option<Box<str>>,
    pub error: Option<Box<str>>,
    pub response_id: Option<Box<str>>,
    /// Request headers reached the filter (the gateway's enqueue).
    pub enqueue_ns: u64,
    pub headers_ns: Option<u64>,
    pub first_byte_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub first_answer_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    /// The terminal event, or the end of the stream when none came.
    pub finish_ns: Option<u64>,
    pub token_events: u64,
    pub reasoning_events: u64,
    pub tool_events: u64,
    pub output_tokens: u64,
    pub output_source: TokenSource,
    pub input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub max_gap_ns: u64,
    pub stalls: u32,
    pub events: u64,
    pub bytes: u64,
    pub pings: u64,
    pub unreadable_events: u32,
    /// Events cut by the parser's bounds.
    pub truncated_events: u32,
    /// The body ended inside an event (its blank line never came).
    pub discarded_tail: bool,
}

impl Summary {
    fn since_enqueue(&self, t: Option<u64>) -> Option<u64> {
        t.map(|t| t.saturating_sub(self.enqueue_ns))
    }
    /// Request headers → first token event.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.since_enqueue(self.first_token_ns)
    }
    /// Request headers → first answer (non-reasoning) token event.
    pub fn ttfo_ns(&self) -> Option<u64> {
        self.since_enqueue(self.first_answer_ns)
    }
    /// Request headers → last token event.
    pub fn e2e_ns(&self) -> Option<u64> {
        self.since_enqueue(self.last_token_ns)
    }
    /// (last token − first token) / (output tokens − 1), in whole nanoseconds. Needs ≥ 2 output
    /// tokens; a zero span (every token in one chunk) gives 0, as in `triage_core::timing`.
    pub fn tpot_ns(&self) -> Option<u64> {
        let (first, last) = (self.first_token_ns?, self.last_token_ns?);
        (self.output_tokens >= 2).then(|| last.saturating_sub(first) / (self.output_tokens - 1))
    }
}

/// Cut `s` to at most `max` bytes at a character boundary.
fn capped(s: &str, max: usize) -> Box<str> {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].into()
}

impl Stream {
    /// A stream whose request headers reached the filter at `enqueue_ns`.
    pub fn new(enqueue_ns: u64, stall_threshold_ns: u64, limits: SseLimits) -> Stream {
        Stream {
            parser: SseParser::with_limits(limits),
            shape: Shape::default(),
            f: Figures { enqueue_ns, stall_threshold_ns, ..Figures::default() },
        }
    }

    /// Response headers arrived with `status` (None when the host gave none or garbage).
    pub fn on_response_headers(&mut self, at_ns: u64, status: Option<u16>) {
        self.f.headers_ns.get_or_insert(at_ns);
        if self.f.status.is_none() {
            self.f.status = status;
        }
    }

    /// The latest token event, else the first byte: what the idle guard measures from.
    pub fn last_activity_ns(&self) -> Option<u64> {
        self.f.last_token_ns.or(self.f.first_byte_ns)
    }

    pub fn enqueue_ns(&self) -> u64 {
        self.f.enqueue_ns
    }

    /// A body chunk arrived at `at_ns`; `observe` sees each first-token / gap as it happens.
    pub fn feed(&mut self, chunk: &[u8], at_ns: u64, observe: &mut dyn FnMut(Observation)) {
        if chunk.is_empty() {
            return;
        }
        let (f, shape) = (&mut self.f, &mut self.shape);
        f.first_byte_ns.get_or_insert(at_ns);
        f.bytes += chunk.len() as u64;
        self.parser.feed_raw(chunk, at_ns, &mut |item| match item {
            RawItem::Event(e) => {
                if !e.truncated
                    && let Some(v) = shape.hit(e.data)
                {
                    record(f, &v, e.at_ns, observe);
                    return;
                }
                let data = e.text();
                if !e.truncated
                    && let Some(v) = shape.learn(&data)
                {
                    record(f, &v, e.at_ns, observe);
                    return;
                }
                let mut c = classify(e.event, &data);
                if e.truncated {
                    f.truncated_events = f.truncated_events.saturating_add(1);
                    if c.not_json && e.event != "message" {
                        // The data was cut; the event name alone still tells lifecycle events
                        // (`response.completed`, `message_stop`) apart.
                        c = classify(e.event, "{}");
                    }
                }
                record(f, &View::of(&c), e.at_ns, observe);
            }
            RawItem::Comment { .. } => f.pings += 1,
        });
    }

    /// The stream ended at `now_ns`, as `end` says.
    pub fn finish(mut self, now_ns: u64, end: End) -> Summary {
        let tail = self.parser.finish();
        let f = self.f;
        let finish_ns = f.done_ns.or(match end {
            End::EndOfStream if f.first_byte_ns.is_none() => f.headers_ns.map(|_| now_ns),
            _ => Some(now_ns),
        });
        let outcome = match end {
            End::Guard(b) => Outcome::Guard(b),
            _ if f.status.is_some_and(|s| s >= 400) => Outcome::HttpError,
            _ if f.error.is_some() => Outcome::StreamError,
            _ if f.terminal || f.finish_reason.is_some() => Outcome::Complete,
            End::Reset => Outcome::Reset,
            _ => Outcome::Incomplete,
        };
        let (output_tokens, output_source) = match f.usage.and_then(|u| u.output_tokens) {
            Some(n) => (n, TokenSource::Usage),
            None => (f.token_events, TokenSource::Counted),
        };
        Summary {
            outcome,
            status: f.status,
            dialect: f.dialect,
            finish_reason: f.finish_reason,
            error: f.error,
            response_id: f.response_id,
            enqueue_ns: f.enqueue_ns,
            headers_ns: f.headers_ns,
            first_byte_ns: f.first_byte_ns,
            first_token_ns: f.first_token_ns,
            first_answer_ns: f.first_answer_ns,
            last_token_ns: f.last_token_ns,
            finish_ns,
            token_events: f.token_events,
            reasoning_events: f.reasoning_events,
            tool_events: f.tool_events,
            output_tokens,
            output_source,
            input_tokens: f.usage.and_then(|u| u.input_tokens),
            reasoning_tokens: f.usage.and_then(|u| u.reasoning_tokens),
            max_gap_ns: f.max_gap_ns,
            stalls: f.stalls,
            events: f.events,
            bytes: f.bytes,
            pings: f.pings,
            unreadable_events: f.unreadable_events,
            truncated_events: f.truncated_events,
            discarded_tail: tail.discarded_event,
        }
    }
}

fn record(f: &mut Figures, c: &View<'_>, at_ns: u64, observe: &mut dyn FnMut(Observation)) {
    f.events += 1;
    if f.dialect.is_none() {
        f.dialect = c.dialect;
    }
    if f.response_id.is_none()
        && let Some(id) = c.response_id
    {
        f.response_id = Some(capped(id, MAX_RESPONSE_ID));
    }
    if let Some(kind) = c.token {
        match f.last_token_ns {
            None => {
                f.first_token_ns = Some(at_ns);
                observe(Observation::FirstToken { ttft_ns: at_ns.saturating_sub(f.enqueue_ns) });
            }
            Some(last) => {
                let gap_ns = at_ns.saturating_sub(last);
                let stall = gap_ns > f.stall_threshold_ns;
                f.max_gap_ns = f.max_gap_ns.max(gap_ns);
                if stall {
                    f.stalls = f.stalls.saturating_add(1);
                }
                observe(Observation::Gap { gap_ns, stall });
            }
        }
        f.last_token_ns = Some(at_ns);
        f.token_events += 1;
        match kind {
            TokenKind::Reasoning => f.reasoning_events += 1,
            TokenKind::ToolCall => f.tool_events += 1,
            TokenKind::Text => {}
        }
        if kind != TokenKind::Reasoning && f.first_answer_ns.is_none() {
            f.first_answer_ns = Some(at_ns);
            observe(Observation::FirstAnswer { ttfo_ns: at_ns.saturating_sub(f.enqueue_ns) });
        }
    }
    if let Some(u) = c.usage {
        f.usage.get_or_insert_with(Usage::default).merge(u);
    }
    if let Some(r) = c.finish_reason {
        f.finish_reason = Some(capped(r, MAX_FINISH_REASON));
    }
    if f.error.is_none()
        && let Some(e) = c.error
    {
        f.error = Some(capped(e, MAX_ERROR));
    }
    if c.ping {
        f.pings += 1;
    }
    if c.not_json {
        f.unreadable_events = f.unreadable_events.saturating_add(1);
    }
    if c.terminal && !f.terminal {
        f.terminal = true;
        f.done_ns = Some(at_ns);
    }
}

/// Heap bytes one stream can hold at most, beyond the host's and the SDK's per-context
/// bookkeeping: the struct, and the parser's four buffers — a partial line, one event's data, the
/// `event:` and `id:` values (each at most a line) — at twice their bounds (a growing `Vec`
/// doubles its capacity, so a buffer at its bound may hold up to twice that), plus the cut
/// strings and the kept event shape.
pub fn max_stream_bytes(limits: SseLimits) -> usize {
    size_of::<Stream>()
        + 2 * (3 * limits.max_line_bytes + limits.max_event_bytes)
        + SHAPE_MAX
        + MAX_FINISH_REASON
        + MAX_ERROR
        + MAX_RESPONSE_ID
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn chunk(delta: &str) -> String {
        format!(
            "data: {{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    }

    fn run(stream: &mut Stream, bytes: &[u8], at: u64, seen: &mut Vec<Observation>) {
        stream.feed(bytes, at, &mut |o| seen.push(o));
    }

    #[test]
    fn openai_stream_with_fake_clock() {
        let mut s = Stream::new(1_000 * MS, 100 * MS, SseLimits::default());
        let mut seen = Vec::new();
        s.on_response_headers(1_010 * MS, Some(200));
        run(&mut s, chunk(r#"{"role":"assistant","content":""}"#).as_bytes(), 1_020 * MS, &mut seen);
        assert!(seen.is_empty(), "a role-only chunk is not a token");
        run(&mut s, chunk(r#"{"reasoning_content":"hm"}"#).as_bytes(), 1_300 * MS, &mut seen);
        run(&mut s, chunk(r#"{"content":"Hel"}"#).as_bytes(), 1_350 * MS, &mut seen);
        let two = chunk(r#"{"content":"lo"}"#) + &chunk(r#"{"content":" wor"}"#);
        run(&mut s, two.as_bytes(), 1_400 * MS, &mut seen);
        let last = chunk(r#"{"content":"ld"}"#);
        let (a, b) = last.as_bytes().split_at(10);
        run(&mut s, a, 1_420 * MS, &mut seen);
        assert_eq!(s.last_activity_ns(), Some(1_400 * MS));
        run(&mut s, b, 1_650 * MS, &mut seen);
        run(
            &mut s,
            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n",
            1_660 * MS,
            &mut seen,
        );
        assert_eq!(
            seen,
            vec![
                Observation::FirstToken { ttft_ns: 300 * MS },
                Observation::Gap { gap_ns: 50 * MS, stall: false },
                Observation::FirstAnswer { ttfo_ns: 350 * MS },
                Observation::Gap { gap_ns: 50 * MS, stall: false },
                Observation::Gap { gap_ns: 0, stall: false },
                Observation::Gap { gap_ns: 250 * MS, stall: true },
            ]
        );
        let r = s.finish(1_700 * MS, End::EndOfStream);
        assert_eq!(r.outcome, Outcome::Complete);
        assert_eq!(r.ttft_ns(), Some(300 * MS));
        assert_eq!(r.ttfo_ns(), Some(350 * MS));
        assert_eq!(r.e2e_ns(), Some(650 * MS));
        assert_eq!((r.output_tokens, r.output_source), (6, TokenSource::Usage));
        assert_eq!(r.tpot_ns(), Some(350 * MS / 5));
        assert_eq!(r.finish_ns, Some(1_660 * MS));
        assert_eq!((r.max_gap_ns, r.stalls, r.token_events, r.reasoning_events), (250 * MS, 1, 5, 1));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.response_id.as_deref(), Some("chatcmpl-9"));
        assert_eq!(r.input_tokens, Some(5));
        assert_eq!(r.status, Some(200));
        assert_eq!(r.dialect, Some(Dialect::OpenaiChat));
    }

    /// The same path as core's parser: a CRLF stream cut anywhere, with an empty chunk at the cut
    /// (a body callback with no bytes at end of stream), gives what the whole stream gives.
    #[test]
    fn empty_chunks_anywhere_change_nothing() {
        let body = (chunk(r#"{"content":"a"}"#) + &chunk(r#"{"content":"b"}"#) + "data: [DONE]\n\n")
            .replace('\n', "\r\n");
        let time = |cuts: &[usize]| {
            let mut s = Stream::new(0, 100 * MS, SseLimits::default());
            s.on_response_headers(MS, Some(200));
            let mut seen = Vec::new();
            let mut start = 0;
            for &cut in cuts.iter().chain([body.len()].iter()) {
                run(&mut s, &body.as_bytes()[start..cut], 2 * MS, &mut seen);
                start = cut;
            }
            (s.finish(3 * MS, End::EndOfStream), seen)
        };
        let whole = time(&[]);
        assert_eq!((whole.0.token_events, whole.0.outcome), (2, Outcome::Complete));
        for cut in 0..=body.len() {
            assert_eq!(time(&[cut, cut]), whole, "empty chunk at {cut}");
        }
    }

    /// TPOT's zero-span rule, as in `triage_core::timing`: every token in one chunk gives 0.
    #[test]
    fn tpot_of_a_zero_span_is_zero() {
        let mut s = Stream::new(0, 100 * MS, SseLimits::default());
        let all = chunk(r#"{"content":"a"}"#) + &chunk(r#"{"content":"b"}"#) + &chunk(r#"{"content":"c"}"#);
        s.feed(all.as_bytes(), 5 * MS, &mut |_| {});
        s.feed(b"data: [DONE]\n\n", 5 * MS, &mut |_| {});
        let r = s.finish(6 * MS, End::EndOfStream);
        assert_eq!((r.output_tokens, r.tpot_ns()), (3, Some(0)));
    }

    #[test]
    fn outcomes() {
        let lim = SseLimits::default();
        let mut s = Stream::new(0, 100 * MS, lim);
        s.feed(chunk(r#"{"content":"a"}"#).as_bytes(), MS, &mut |_| {});
        s.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"b", 2 * MS, &mut |_| {});
        let r = s.finish(3 * MS, End::EndOfStream);
        assert_eq!(r.outcome, Outcome::Incomplete);
        assert!(r.discarded_tail);
        assert_eq!(r.finish_ns, Some(3 * MS));
        assert_eq!((r.output_tokens, r.output_source), (1, TokenSource::Counted));
        assert_eq!(r.tpot_ns(), None);

        let mut s = Stream::new(0, 100 * MS, lim);
        s.feed(chunk(r#"{"content":"a"}"#).as_bytes(), MS, &mut |_| {});
        assert_eq!(s.clone().finish(9 * MS, End::Reset).outcome, Outcome::Reset);
        assert_eq!(
            s.clone().finish(9 * MS, End::Guard(Breach::MaxIdle)).outcome,
            Outcome::Guard(Breach::MaxIdle)
        );
        s.feed(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", 2 * MS, &mut |_| {});
        let r = s.finish(9 * MS, End::EndOfStream);
        assert_eq!(r.outcome, Outcome::StreamError);
        assert_eq!(r.error.as_deref(), Some("overloaded_error: Overloaded"));

        let mut s = Stream::new(0, 100 * MS, lim);
        s.on_response_headers(MS, Some(429));
        let r = s.finish(2 * MS, End::EndOfStream);
        assert_eq!(r.outcome, Outcome::HttpError);
        assert_eq!(r.finish_ns, Some(2 * MS));
        assert_eq!(Outcome::HttpError.error_reason(), Some(ErrorReason::HttpStatus));
        assert_eq!(Outcome::Complete.error_reason(), None);
    }

    #[test]
    fn bounded_and_total_on_garbage() {
        let lim = SseLimits { max_line_bytes: 256, max_event_bytes: 1024 };
        let mut s = Stream::new(0, 100 * MS, lim);
        let mut x = 0x1234_5678u32;
        for i in 0..2000u64 {
            let bytes: Vec<u8> = (0..97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x & 0xff) as u8
                })
                .collect();
            s.feed(&bytes, i, &mut |_| {});
        }
        // A huge event is cut, flagged, and its name still ends the stream.
        let big = format!("event: response.completed\ndata: {{\"x\":\"{}\"}}\n\n", "y".repeat(5000));
        let mut t = Stream::new(0, 100 * MS, lim);
        t.feed(big.as_bytes(), 5, &mut |_| {});
        let r = t.finish(6, End::EndOfStream);
        assert_eq!(r.truncated_events, 1);
        assert_eq!(r.outcome, Outcome::Complete);
        assert_eq!(r.finish_ns, Some(5));
        let r = s.finish(3000, End::EndOfStream);
        assert_eq!(r.bytes, 2000 * 97);
        assert!(max_stream_bytes(lim) < 6 * 1024);
    }

    #[test]
    fn capping_respects_char_boundaries() {
        assert_eq!(&*capped("héllo", 2), "h");
        assert_eq!(&*capped("abc", 10), "abc");
    }
}
