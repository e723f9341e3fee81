//! Per-request timing of a streamed LLM response: TTFT, TTFO, every inter-token gap, TPOT, E2E.
//!
//! [`StreamTimer`] is sans-I/O (quinn-proto style): the host tells it when the request was sent,
//! when headers arrived, and feeds each body chunk with its arrival time in monotonic
//! nanoseconds. Any origin works as long as one request uses one clock. The definitions are
//! the ones in [`crate::defs`]; each field's rustdoc says what other tools call it.

use crate::safe::{Secrets, cut};
use crate::sse::{SseItem, SseLimits, SseParser};
use crate::stats::QuantileSketch;
use crate::stream::{Classified, Dialect, TokenKind, Usage, classify_with};
use serde::{Deserialize, Serialize};

/// How stalls are recognised. A gap is a stall when it exceeds
/// `max(factor × running median of the earlier gaps, threshold)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StallConfig {
    /// Multiple of the running median of the earlier gaps that a gap must exceed.
    pub factor: f64,
    /// Floor in nanoseconds: no gap at or below it is a stall, whatever the median.
    pub threshold_ns: u64,
}

impl Default for StallConfig {
    /// 5 × the running median, and never below 100 ms: decode steps take 10–50 ms, so a 100 ms
    /// gap is already what users perceive as a hiccup.
    fn default() -> Self {
        StallConfig { factor: 5.0, threshold_ns: 100_000_000 }
    }
}

/// Configuration of a [`StreamTimer`].
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TimerConfig {
    /// What counts as a stall.
    pub stall: StallConfig,
    /// Bounds on what the SSE parser keeps (line, event and data sizes).
    pub limits: SseLimits,
}

/// Where `output_tokens` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's own usage report (`usage.completion_tokens` / `output_tokens`).
    Usage,
    /// Token-carrying events counted by us; one event may hold several tokens when the server
    /// or a proxy coalesces them, so this can undercount.
    Counted,
}

/// One gap that counts as a stall.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Index into the gap list (gap `i` lies between token events `i` and `i + 1`).
    pub index: usize,
    /// The gap's length in nanoseconds.
    pub gap_ns: u64,
    /// The threshold the gap exceeded.
    pub threshold_ns: u64,
}

/// Everything measured about one streamed response. All `*_ns` instants are on the host's
/// monotonic clock, the same clock as `sent_ns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestTiming {
    /// When the request was handed to the transport.
    pub sent_ns: u64,
    /// When the response status and headers arrived. Some servers (and guidellm's mock) send
    /// headers only with the first token, so this may equal `first_byte_ns`.
    pub headers_ns: Option<u64>,
    /// Arrival of the first body byte.
    pub first_byte_ns: Option<u64>,
    /// Arrival of the first complete SSE event of any kind.
    pub first_event_ns: Option<u64>,
    /// Arrival of each token-carrying event (text, reasoning or tool call), in order.
    pub token_times_ns: Vec<u64>,
    /// Kind of each token-carrying event, parallel to `token_times_ns`.
    pub token_kinds: Vec<TokenKind>,
    /// Arrival of the first answer (non-reasoning) token event.
    pub first_answer_ns: Option<u64>,
    /// When the stream ended: the terminal event (`[DONE]`, `message_stop`,
    /// `response.completed`) or, failing that, the end of the body.
    pub done_ns: Option<u64>,
    /// Token counts the server reported, merged over every usage report in the stream.
    pub usage: Option<Usage>,
    /// The last finish reason the stream gave (`stop`, `length`, `end_turn`, …).
    pub finish_reason: Option<String>,
    /// An error reported inside the stream.
    pub stream_error: Option<String>,
    /// A terminal event was seen.
    pub terminal_seen: bool,
    /// The API dialect the first classified event showed (OpenAI chat, Anthropic, …).
    pub dialect: Option<Dialect>,
    /// The response id the stream carried first (`chatcmpl-…`, `msg_…`).
    pub response_id: Option<String>,
    /// SSE events seen (comments not included).
    pub events: u64,
    /// Keep-alive events: SSE comments and `ping` events.
    pub pings: u64,
    /// Events whose data was not JSON of a known shape.
    pub unreadable_events: u64,
    /// Body bytes fed to the timer.
    pub bytes: u64,
    /// The body ended in the middle of an event (no blank line after its data).
    pub truncated_event: bool,
    /// The first bytes of the body (up to 512), kept to explain what came instead of SSE.
    pub body_prefix: String,
    /// Stalls, at most [`MAX_STALLS`] of them (the rest are counted in `stalls_not_listed`).
    pub stalls: Vec<Stall>,
    /// Token events after the first [`MAX_TOKEN_TIMES`], whose arrival times were not kept.
    #[serde(default)]
    pub tokens_beyond_cap: u64,
    /// Arrival of the last token event (kept even when its time is beyond the cap).
    #[serde(default)]
    pub last_token_ns: Option<u64>,
    /// The gaps after the cap, as a sketch (≤ 1 % relative error on quantiles).
    #[serde(default)]
    pub gaps_beyond_cap: Option<QuantileSketch>,
    /// Stalls found but not listed in `stalls` (beyond [`MAX_STALLS`]).
    #[serde(default)]
    pub stalls_not_listed: u64,
    /// Events cut at the parser's size limits ([`SseLimits`]): their data was incomplete.
    #[serde(default)]
    pub cut_events: u64,
    /// Tokens each token event carried, parallel to `token_times_ns`, from the server's own
    /// cumulative usage on that event (vLLM's `continuous_usage_stats`: every chunk says how
    /// many tokens were generated so far). Empty unless every token event up to the cap
    /// carried such a count and it grew by at least one each time.
    #[serde(default)]
    pub chunk_tokens: Vec<u32>,
}

/// Where the tokens per token event ([`RequestTiming::tokens_per_event`]) come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkTokenSource {
    /// The server's count: its cumulative usage on every token event, or a usage total equal
    /// to the number of token events (one token each). Exact.
    Usage,
    /// The server's usage total spread evenly over the token events: an estimate, exact only
    /// when every event carried as many tokens.
    Estimated,
    /// No usage: one token per event assumed, so per-token figures equal per-event ones.
    Counted,
}

impl ChunkTokenSource {
    /// The contract's name: `usage`, `estimated` or `counted`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkTokenSource::Usage => "usage",
            ChunkTokenSource::Estimated => "estimated",
            ChunkTokenSource::Counted => "counted",
        }
    }
}

/// Tokens per token event: exact per event, or one number for all.
#[derive(Clone, Debug, PartialEq)]
pub enum TokensPerEvent<'a> {
    /// Each event's own count (parallel to the token times).
    Each(&'a [u32]),
    /// The same (possibly fractional) count for every event.
    All(f64),
}

impl TokensPerEvent<'_> {
    /// Tokens carried by token event `i`.
    pub fn of(&self, i: usize) -> f64 {
        match self {
            TokensPerEvent::Each(k) => k.get(i).map_or(1.0, |&k| f64::from(k.max(1))),
            TokensPerEvent::All(k) => *k,
        }
    }
}

/// Tokens per token event from what a record holds: the per-event counts when there is one per
/// event (up to the cap), else the usage total
/// `usage_total` over `events` (one each when they are equal, at least one each), else one each.
pub fn tokens_per_event(
    chunk_tokens: &[u32],
    events: u64,
    usage_total: Option<u64>,
) -> (TokensPerEvent<'_>, ChunkTokenSource) {
    // Beyond the cap the counts stop, as the token times do: they cover every listed gap.
    if !chunk_tokens.is_empty() && chunk_tokens.len() as u64 == events.min(MAX_TOKEN_TIMES as u64) {
        return (TokensPerEvent::Each(chunk_tokens), ChunkTokenSource::Usage);
    }
    match usage_total {
        Some(n) if events > 0 && n == events => (TokensPerEvent::All(1.0), ChunkTokenSource::Usage),
        Some(n) if events > 0 => {
            (TokensPerEvent::All((n as f64 / events as f64).max(1.0)), ChunkTokenSource::Estimated)
        }
        _ => (TokensPerEvent::All(1.0), ChunkTokenSource::Counted),
    }
}

/// Token events whose arrival times a [`StreamTimer`] keeps exactly (≈ 576 KiB with their
/// kinds; 256 KiB more of `chunk_tokens` when the server counts every event). Later events are counted, their gaps go into a bounded sketch, and stalls among them
/// are judged against the median gap at the cap — so a request's memory is bounded whatever
/// the server sends: this, [`MAX_STALLS`], 512 bytes of body prefix and the SSE parser's
/// [`SseLimits`].
pub const MAX_TOKEN_TIMES: usize = 65_536;

/// Stalls listed per request; more are counted.
pub const MAX_STALLS: usize = 1_024;

impl RequestTiming {
    fn since_sent(&self, t: Option<u64>) -> Option<u64> {
        t.map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Time to first token: request sent → first event carrying any generated token (text,
    /// reasoning or tool call). vLLM bench and aiperf call this TTFT too.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.since_sent(self.token_times_ns.first().copied())
    }

    /// Token-carrying events, including those beyond [`MAX_TOKEN_TIMES`].
    pub fn token_events(&self) -> u64 {
        self.token_times_ns.len() as u64 + self.tokens_beyond_cap
    }

    /// Arrival of the last token event.
    pub fn last_token(&self) -> Option<u64> {
        self.last_token_ns.or_else(|| self.token_times_ns.last().copied())
    }

    /// Time to first output: request sent → first *answer* (non-reasoning) token. aiperf TTFO.
    pub fn ttfo_ns(&self) -> Option<u64> {
        self.since_sent(self.first_answer_ns)
    }

    /// Request sent → response headers.
    pub fn headers_after_ns(&self) -> Option<u64> {
        self.since_sent(self.headers_ns)
    }

    /// Inter-token gaps: time between successive token-carrying events. vLLM bench calls these
    /// ITL, aiperf ICL (inter-chunk latency); vLLM's Prometheus `inter_token_latency_seconds`
    /// is the server-side per-step analogue. Only the gaps between the first
    /// [`MAX_TOKEN_TIMES`] events; later ones are summarised in `gaps_beyond_cap`.
    pub fn gaps_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.token_times_ns.windows(2).map(|w| w[1].saturating_sub(w[0]))
    }

    /// Tokens each token event carried, and where the numbers come from
    /// ([`tokens_per_event`]).
    pub fn tokens_per_event(&self) -> (TokensPerEvent<'_>, ChunkTokenSource) {
        tokens_per_event(&self.chunk_tokens, self.token_events(), self.usage.and_then(|u| u.output_tokens))
    }

    /// Inter-token gaps per token: each gap of [`RequestTiming::gaps_ns`] divided by the tokens
    /// the later event carried ([`RequestTiming::tokens_per_event`]), one value per gap.
    pub fn gaps_per_token_ns(&self) -> impl Iterator<Item = f64> + '_ {
        let (k, _) = self.tokens_per_event();
        self.gaps_ns().enumerate().map(move |(i, g)| g as f64 / k.of(i + 1))
    }

    /// Output tokens and where the number came from: the server's usage when it sent one,
    /// else the count of token-carrying events.
    pub fn output_tokens(&self) -> (u64, TokenSource) {
        match self.usage.and_then(|u| u.output_tokens) {
            Some(n) => (n, TokenSource::Usage),
            None => (self.token_events(), TokenSource::Counted),
        }
    }

    /// Time per output token: (last token − first token) / (output tokens − 1), per request.
    /// vLLM bench calls this TPOT; aiperf and guidellm call it ITL. Needs ≥ 2 output tokens and
    /// a token event. A zero span (every token arrived in one chunk) gives 0, as the definition
    /// says — the same rule in the proxy filter and the analyzer; the gaps show the coalescing.
    pub fn tpot_ns(&self) -> Option<f64> {
        let (n, _) = self.output_tokens();
        let (first, last) = (*self.token_times_ns.first()?, self.last_token()?);
        (n >= 2).then(|| last.saturating_sub(first) as f64 / (n - 1) as f64)
    }

    /// End to end: request sent → last token (not socket close).
    pub fn e2e_ns(&self) -> Option<u64> {
        self.since_sent(self.last_token())
    }

    /// The stream ended as a complete response (a finish reason or a terminal event).
    pub fn completed(&self) -> bool {
        self.finish_reason.is_some() || self.terminal_seen
    }
}

const BODY_PREFIX_BYTES: usize = 512;

/// Sans-I/O timer for one streamed response. See the module docs.
#[derive(Debug, Clone)]
pub struct StreamTimer {
    config: TimerConfig,
    parser: SseParser,
    t: RequestTiming,
    prefix: Vec<u8>,
    /// Stall threshold for gaps beyond the cap: the running-median rule frozen at the cap.
    late_threshold_ns: u64,
    late_stalls: Vec<Stall>,
    chunk_usage: ChunkUsage,
}

/// What the timer keeps to count tokens per event from the server's cumulative usage.
#[derive(Debug, Clone, Copy)]
struct ChunkUsage {
    /// The last cumulative output count the stream reported.
    last: u64,
    /// Every token event so far carried a count that grew.
    usable: bool,
}

impl StreamTimer {
    /// A timer for a request handed to the transport at `sent_ns` (host clock, nanoseconds).
    pub fn new(sent_ns: u64, config: TimerConfig) -> StreamTimer {
        StreamTimer {
            config,
            parser: SseParser::with_limits(config.limits),
            t: RequestTiming {
                sent_ns,
                headers_ns: None,
                first_byte_ns: None,
                first_event_ns: None,
                token_times_ns: Vec::new(),
                token_kinds: Vec::new(),
                first_answer_ns: None,
                done_ns: None,
                usage: None,
                finish_reason: None,
                stream_error: None,
                terminal_seen: false,
                dialect: None,
                response_id: None,
                events: 0,
                pings: 0,
                unreadable_events: 0,
                bytes: 0,
                truncated_event: false,
                body_prefix: String::new(),
                stalls: Vec::new(),
                tokens_beyond_cap: 0,
                last_token_ns: None,
                gaps_beyond_cap: None,
                stalls_not_listed: 0,
                cut_events: 0,
                chunk_tokens: Vec::new(),
            },
            prefix: Vec::new(),
            late_threshold_ns: 0,
            late_stalls: Vec::new(),
            chunk_usage: ChunkUsage { last: 0, usable: true },
        }
    }

    /// The transport saw the request's last byte handed to the kernel at `at_ns` (after the
    /// instant the timer was made with): TTFT and every other latency count from there.
    pub fn set_sent(&mut self, at_ns: u64) {
        if at_ns >= self.t.sent_ns && self.t.headers_ns.is_none() && self.t.first_byte_ns.is_none() {
            self.t.sent_ns = at_ns;
        }
    }

    /// The response status line and headers arrived.
    pub fn on_headers(&mut self, at_ns: u64) {
        self.t.headers_ns.get_or_insert(at_ns);
    }

    /// A body chunk arrived at `at_ns`. Returns how many token-carrying events it completed,
    /// so a live view can update.
    pub fn feed(&mut self, chunk: &[u8], at_ns: u64) -> usize {
        if chunk.is_empty() {
            return 0;
        }
        self.t.first_byte_ns.get_or_insert(at_ns);
        self.t.bytes += chunk.len() as u64;
        if self.prefix.len() < BODY_PREFIX_BYTES {
            let take = (BODY_PREFIX_BYTES - self.prefix.len()).min(chunk.len());
            self.prefix.extend_from_slice(&chunk[..take]);
        }
        let before = self.t.token_events();
        let (t, late) = (
            &mut self.t,
            &mut Late {
                threshold_ns: &mut self.late_threshold_ns,
                stalls: &mut self.late_stalls,
                cfg: self.config.stall,
                chunks: &mut self.chunk_usage,
            },
        );
        self.parser.feed(chunk, at_ns, &mut |item| match item {
            SseItem::Event(e) => {
                if e.truncated {
                    t.cut_events += 1;
                }
                let c = classify_with(e.event, e.data, t.response_id.is_none());
                record(t, late, &c, e.at_ns);
            }
            SseItem::Comment { .. } => t.pings += 1,
        });
        usize::try_from(self.t.token_events() - before).unwrap_or(usize::MAX)
    }

    /// Token events so far (for progress displays).
    pub fn tokens_so_far(&self) -> usize {
        usize::try_from(self.t.token_events()).unwrap_or(usize::MAX)
    }

    /// Arrival of every token event so far, in order (a live view's gaps), up to
    /// [`MAX_TOKEN_TIMES`].
    pub fn token_times_ns(&self) -> &[u64] {
        &self.t.token_times_ns
    }

    /// Arrival of the first token so far, if any.
    pub fn first_token_ns(&self) -> Option<u64> {
        self.t.token_times_ns.first().copied()
    }

    /// The stream is over (body ended, or the host gave up at `at_ns`). Strings the server
    /// chose are redacted of credential shapes and bounded ([`RequestTiming::redact`]).
    pub fn finish(self, at_ns: u64) -> RequestTiming {
        self.finish_redacted(at_ns, &Secrets::new())
    }

    /// [`StreamTimer::finish`], redacting the run's exact `secrets` as well (before anything is
    /// cut).
    pub fn finish_redacted(mut self, at_ns: u64, secrets: &Secrets) -> RequestTiming {
        let end = self.parser.finish();
        self.t.truncated_event = end.discarded_event;
        if self.t.done_ns.is_none() && self.t.first_byte_ns.is_some() {
            self.t.done_ns = Some(at_ns);
        }
        self.t.body_prefix = String::from_utf8_lossy(&self.prefix).into_owned();
        let mut stalls = find_stalls(&self.t.token_times_ns, self.config.stall);
        stalls.append(&mut self.late_stalls);
        if stalls.len() > MAX_STALLS {
            self.t.stalls_not_listed += (stalls.len() - MAX_STALLS) as u64;
            stalls.truncate(MAX_STALLS);
        }
        self.t.stalls = stalls;
        self.t.redact(secrets);
        self.t
    }
}

/// Longest a server-chosen string is kept in a [`RequestTiming`] (characters).
const MAX_SERVER_STRING: usize = 1_000;

impl RequestTiming {
    /// Redact every string the server chose (body prefix, stream error, finish reason, response
    /// id) with `secrets` and credential patterns, then cut each to a bound.
    pub fn redact(&mut self, secrets: &Secrets) {
        let fix = |s: &mut String, max: usize| {
            let r = secrets.redact_truncated(s);
            if r.chars().count() > max || matches!(r, std::borrow::Cow::Owned(_)) {
                *s = cut(&r, max);
            }
        };
        fix(&mut self.body_prefix, BODY_PREFIX_BYTES);
        for s in
            [&mut self.stream_error, &mut self.finish_reason, &mut self.response_id].into_iter().flatten()
        {
            fix(s, MAX_SERVER_STRING);
        }
    }
}

/// What the timer keeps about token events beyond [`MAX_TOKEN_TIMES`].
struct Late<'a> {
    threshold_ns: &'a mut u64,
    stalls: &'a mut Vec<Stall>,
    cfg: StallConfig,
    /// Not about the cap: the running count of tokens per event from usage.
    chunks: &'a mut ChunkUsage,
}

fn record(t: &mut RequestTiming, late: &mut Late<'_>, c: &Classified, at_ns: u64) {
    t.events += 1;
    t.first_event_ns.get_or_insert(at_ns);
    if t.dialect.is_none() {
        t.dialect = c.dialect;
    }
    if t.response_id.is_none() {
        t.response_id.clone_from(&c.response_id);
    }
    let reported = c.usage.and_then(|u| u.output_tokens);
    if let Some(kind) = c.token {
        count_chunk_tokens(t, late.chunks, reported);
        if t.token_times_ns.len() < MAX_TOKEN_TIMES {
            t.token_times_ns.push(at_ns);
            t.token_kinds.push(kind);
            if t.token_times_ns.len() == MAX_TOKEN_TIMES {
                *late.threshold_ns = threshold_at_cap(&t.token_times_ns, late.cfg);
            }
        } else {
            let last = t.last_token().unwrap_or(at_ns);
            let gap = at_ns.saturating_sub(last);
            t.gaps_beyond_cap.get_or_insert_with(QuantileSketch::new).insert(gap as f64);
            // Gap indexes continue the exact list's: gap `i` lies between events `i` and `i + 1`.
            let index = usize::try_from(t.token_events() - 1).unwrap_or(usize::MAX);
            if gap > *late.threshold_ns {
                if late.stalls.len() < MAX_STALLS {
                    late.stalls.push(Stall { index, gap_ns: gap, threshold_ns: *late.threshold_ns });
                } else {
                    t.stalls_not_listed += 1;
                }
            }
            t.tokens_beyond_cap += 1;
        }
        t.last_token_ns = Some(at_ns);
        if kind != TokenKind::Reasoning {
            t.first_answer_ns.get_or_insert(at_ns);
        }
    }
    if let Some(u) = c.usage {
        t.usage.get_or_insert_with(Usage::default).merge(u);
    }
    if let Some(n) = reported {
        late.chunks.last = n;
    }
    if let Some(f) = &c.finish_reason {
        t.finish_reason = Some(f.clone());
    }
    if let Some(e) = &c.error {
        t.stream_error.get_or_insert_with(|| e.clone());
    }
    if c.ping {
        t.pings += 1;
    }
    if c.not_json {
        t.unreadable_events += 1;
    }
    if c.terminal && !t.terminal_seen {
        t.terminal_seen = true;
        t.done_ns = Some(at_ns);
    }
}

/// A token event's tokens from the server's cumulative count on it (`reported`), kept while
/// every token event has one that grew; the first that has none (or one that did not grow)
/// drops the per-event counts for good, and their memory with them.
fn count_chunk_tokens(t: &mut RequestTiming, chunks: &mut ChunkUsage, reported: Option<u64>) {
    if !chunks.usable || t.token_times_ns.len() >= MAX_TOKEN_TIMES {
        return;
    }
    match reported.map(|n| n.saturating_sub(chunks.last)) {
        Some(k) if k > 0 => t.chunk_tokens.push(u32::try_from(k).unwrap_or(u32::MAX)),
        _ => {
            chunks.usable = false;
            t.chunk_tokens = Vec::new();
        }
    }
}

/// The stall threshold after the last exact gap: `max(factor × median of all exact gaps,
/// threshold)`, as [`find_stalls`] would apply it to the next gap.
fn threshold_at_cap(token_times_ns: &[u64], cfg: StallConfig) -> u64 {
    let mut gaps: Vec<f64> = token_times_ns.windows(2).map(|w| w[1].saturating_sub(w[0]) as f64).collect();
    stall_threshold(crate::stats::median(&mut gaps), cfg)
}

/// `max(factor × median, threshold)`; the threshold alone while there is no median yet.
fn stall_threshold(median: Option<f64>, cfg: StallConfig) -> u64 {
    median.map(|m| (m * cfg.factor) as u64).unwrap_or(0).max(cfg.threshold_ns)
}

/// Gaps above `max(factor × median of the earlier gaps, threshold)`. The running median uses
/// two heaps, so a long stream costs O(n log n).
pub fn find_stalls(token_times_ns: &[u64], cfg: StallConfig) -> Vec<Stall> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut low: BinaryHeap<u64> = BinaryHeap::new(); // max-heap of the smaller half
    let mut high: BinaryHeap<Reverse<u64>> = BinaryHeap::new(); // min-heap of the larger half
    let mut stalls = Vec::new();
    for (index, w) in token_times_ns.windows(2).enumerate() {
        let gap = w[1].saturating_sub(w[0]);
        let median = match (low.peek(), high.peek()) {
            (None, _) => None,
            (Some(&l), Some(&Reverse(h))) if low.len() == high.len() => Some((l as f64 + h as f64) / 2.0),
            (Some(&l), _) => Some(l as f64),
        };
        let threshold = stall_threshold(median, cfg);
        if gap > threshold {
            stalls.push(Stall { index, gap_ns: gap, threshold_ns: threshold });
        }
        if low.peek().is_none_or(|&l| gap <= l) {
            low.push(gap);
        } else {
            high.push(Reverse(gap));
        }
        if low.len() > high.len() + 1 {
            high.push(Reverse(low.pop().unwrap_or_default()));
        } else if high.len() > low.len() {
            low.push(high.pop().map(|Reverse(h)| h).unwrap_or_default());
        }
    }
    stalls
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn openai_chunk(delta: &str) -> String {
        format!(
            "data: {{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    }

    #[test]
    fn openai_stream_figures() {
        let mut t = StreamTimer::new(1_000 * MS, TimerConfig::default());
        t.on_headers(1_010 * MS);
        assert_eq!(t.feed(openai_chunk(r#"{"role":"assistant","content":""}"#).as_bytes(), 1_020 * MS), 0);
        assert_eq!(t.feed(openai_chunk(r#"{"reasoning_content":"think"}"#).as_bytes(), 1_300 * MS), 1);
        assert_eq!(t.feed(openai_chunk(r#"{"content":"Hel"}"#).as_bytes(), 1_350 * MS), 1);
        // Two events coalesced in one chunk, one split across chunks.
        let two = openai_chunk(r#"{"content":"lo"}"#) + &openai_chunk(r#"{"content":" wor"}"#);
        assert_eq!(t.feed(two.as_bytes(), 1_400 * MS), 2);
        let last = openai_chunk(r#"{"content":"ld"}"#);
        let (a, b) = last.as_bytes().split_at(10);
        assert_eq!(t.feed(a, 1_420 * MS), 0);
        assert_eq!(t.feed(b, 1_450 * MS), 1);
        t.feed(
            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n",
            1_460 * MS,
        );
        let r = t.finish(1_470 * MS);
        assert_eq!(r.headers_after_ns(), Some(10 * MS));
        assert_eq!(r.ttft_ns(), Some(300 * MS));
        assert_eq!(r.ttfo_ns(), Some(350 * MS));
        assert_eq!(r.gaps_ns().collect::<Vec<_>>(), vec![50 * MS, 50 * MS, 0, 50 * MS]);
        assert_eq!(r.output_tokens(), (6, TokenSource::Usage));
        assert_eq!(r.tpot_ns(), Some(150.0 * MS as f64 / 5.0));
        assert_eq!(r.e2e_ns(), Some(450 * MS));
        assert_eq!(r.done_ns, Some(1_460 * MS));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.response_id.as_deref(), Some("chatcmpl-9"));
        assert!(r.completed());
        assert!(r.stalls.is_empty());
    }

    /// The site's reader (and the CLI's) times through this: a CRLF stream split anywhere, with
    /// an empty chunk at the cut (a zero-length read), gives what the whole stream gives.
    #[test]
    fn empty_chunks_anywhere_change_nothing() {
        let body =
            (openai_chunk(r#"{"content":"a"}"#) + &openai_chunk(r#"{"content":"b"}"#) + "data: [DONE]\n\n")
                .replace('\n', "\r\n");
        let time = |cuts: &[usize]| {
            let mut t = StreamTimer::new(0, TimerConfig::default());
            t.on_headers(MS);
            let mut start = 0;
            for &cut in cuts.iter().chain([body.len()].iter()) {
                t.feed(&body.as_bytes()[start..cut], 2 * MS);
                start = cut;
            }
            t.finish(3 * MS)
        };
        let whole = time(&[]);
        assert_eq!(whole.output_tokens(), (2, TokenSource::Counted));
        assert!(whole.completed());
        for cut in 0..=body.len() {
            assert_eq!(time(&[cut, cut]), whole, "empty chunk at {cut}");
        }
    }

    #[test]
    fn counted_tokens_without_usage_and_incomplete_stream() {
        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(openai_chunk(r#"{"content":"a"}"#).as_bytes(), 5 * MS);
        t.feed(openai_chunk(r#"{"content":"b"}"#).as_bytes(), 9 * MS);
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"c", 10 * MS);
        let r = t.finish(20 * MS);
        assert_eq!(r.output_tokens(), (2, TokenSource::Counted));
        assert!(!r.completed());
        assert!(r.truncated_event);
        assert_eq!(r.done_ns, Some(20 * MS));
    }

    #[test]
    fn anthropic_stream_with_thinking() {
        let body = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_7\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        );
        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(body.as_bytes(), MS);
        t.feed(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n", 100 * MS);
        t.feed(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n", 400 * MS);
        t.feed(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", 420 * MS);
        let r = t.finish(500 * MS);
        assert_eq!(r.ttft_ns(), Some(100 * MS));
        assert_eq!(r.ttfo_ns(), Some(400 * MS));
        assert_eq!(
            r.usage,
            Some(Usage { input_tokens: Some(10), output_tokens: Some(3), reasoning_tokens: None })
        );
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(r.pings, 1);
        assert_eq!(r.done_ns, Some(420 * MS));
        assert_eq!(r.dialect, Some(Dialect::Anthropic));
    }

    #[test]
    fn html_body_is_kept_for_diagnosis() {
        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(b"<!doctype html><html><title>Welcome</title>", MS);
        let r = t.finish(2 * MS);
        assert_eq!(r.events, 0);
        assert!(r.body_prefix.starts_with("<!doctype html>"));
        assert_eq!(r.ttft_ns(), None);
    }

    #[test]
    fn stalls_use_running_median_and_floor() {
        let cfg = StallConfig { factor: 5.0, threshold_ns: 100 * MS };
        // 20 ms steady, then one 150 ms gap (above the floor and 5 × 20 ms), then 90 ms (not).
        let mut times = vec![0u64];
        for g in [20, 20, 20, 20, 150, 20, 90] {
            times.push(times.last().unwrap() + g * MS);
        }
        let s = find_stalls(&times, cfg);
        assert_eq!(s, vec![Stall { index: 4, gap_ns: 150 * MS, threshold_ns: 100 * MS }]);
        // With a slow steady state, the factor dominates the floor.
        let times: Vec<u64> = (0..10).map(|i| i * 40 * MS).chain([9 * 40 * MS + 190 * MS]).collect();
        assert!(find_stalls(&times, cfg).is_empty(), "190 ms < 5 × 40 ms");
        let times: Vec<u64> = (0..10).map(|i| i * 40 * MS).chain([9 * 40 * MS + 210 * MS]).collect();
        assert_eq!(find_stalls(&times, cfg)[0].threshold_ns, 200 * MS);
        assert!(find_stalls(&[], cfg).is_empty());
        assert!(find_stalls(&[5], cfg).is_empty());
    }

    /// TPOT's zero-span rule: every token at one instant gives 0 (the definition's value); one
    /// token gives none. The probe's record carries the same.
    #[test]
    fn tpot_of_a_zero_span_is_zero() {
        let mut t = StreamTimer::new(0, TimerConfig::default());
        let all =
            openai_chunk(r#"{"content":"a"}"#) + &openai_chunk(r#"{"content":"b"}"#) + "data: [DONE]\n\n";
        t.feed(all.as_bytes(), 7 * MS);
        let r = t.finish(8 * MS);
        assert_eq!(r.tpot_ns(), Some(0.0));
        let rec = crate::probe::RequestRecord::new(0, 0, 0, Some(200), Some(&r), None);
        assert_eq!(rec.tpot_ms, Some(0.0));
        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(openai_chunk(r#"{"content":"a"}"#).as_bytes(), 7 * MS);
        assert_eq!(t.finish(8 * MS).tpot_ns(), None);
    }

    /// An endless stream keeps a bounded record: exact times up to the cap, counts, a sketch and
    /// stalls (judged against the median at the cap) beyond it.
    #[test]
    fn token_times_are_bounded_and_the_rest_is_counted() {
        let mut t = StreamTimer::new(0, TimerConfig::default());
        let chunk = openai_chunk(r#"{"content":"x"}"#);
        let extra = 5_000u64;
        let mut at = 0;
        for i in 0..(MAX_TOKEN_TIMES as u64 + extra) {
            // 10 ms gaps, one 500 ms stall after the cap.
            at += if i == MAX_TOKEN_TIMES as u64 + 100 { 500 * MS } else { 10 * MS };
            t.feed(chunk.as_bytes(), at);
        }
        assert_eq!(t.token_times_ns().len(), MAX_TOKEN_TIMES);
        assert_eq!(t.tokens_so_far() as u64, MAX_TOKEN_TIMES as u64 + extra);
        let r = t.finish(at + MS);
        assert_eq!(r.token_times_ns.capacity().min(MAX_TOKEN_TIMES * 2), r.token_times_ns.capacity());
        assert_eq!(r.token_events(), MAX_TOKEN_TIMES as u64 + extra);
        assert_eq!(r.output_tokens(), (MAX_TOKEN_TIMES as u64 + extra, TokenSource::Counted));
        assert_eq!(r.e2e_ns(), Some(at));
        let tpot = r.tpot_ns().unwrap();
        assert!((tpot - 10.0 * MS as f64).abs() < 0.01 * MS as f64, "{tpot}");
        assert_eq!(r.gaps_ns().count(), MAX_TOKEN_TIMES - 1);
        let late = r.gaps_beyond_cap.as_ref().unwrap();
        assert_eq!(late.count(), extra);
        assert_eq!(r.stalls.len(), 1, "{:?}", r.stalls);
        let s = r.stalls[0];
        assert_eq!((s.index, s.gap_ns, s.threshold_ns), (MAX_TOKEN_TIMES + 99, 500 * MS, 100 * MS));
    }

    fn usage_chunk(content: &str, completion: Option<u64>) -> String {
        let usage = completion
            .map(|n| {
                format!(r#","usage":{{"prompt_tokens":3,"completion_tokens":{n},"total_tokens":{}}}"#, n + 3)
            })
            .unwrap_or_default();
        format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{content},\"finish_reason\":null}}]{usage}}}\n\n"
        )
    }

    /// Several tokens per event: the counts come from the server's cumulative usage on every
    /// event (exact), else from its usage total spread evenly (an estimate), else one each.
    #[test]
    fn tokens_per_event_from_usage_estimate_or_count() {
        let time = |events: &[(&str, Option<u64>, u64)], end: &str| {
            let mut t = StreamTimer::new(0, TimerConfig::default());
            for (content, usage, at) in events {
                t.feed(usage_chunk(content, *usage).as_bytes(), at * MS);
            }
            t.feed(end.as_bytes(), 50 * MS);
            t.finish(60 * MS)
        };
        let done = "data: [DONE]\n\n";
        let r = time(
            &[
                (r#"{"role":"assistant","content":""}"#, Some(0), 1),
                (r#"{"content":"a b c"}"#, Some(3), 10),
                (r#"{"content":"d e"}"#, Some(5), 30),
                (r#"{"content":"f"}"#, Some(6), 40),
            ],
            done,
        );
        assert_eq!(r.chunk_tokens, [3, 2, 1]);
        assert_eq!(r.tokens_per_event().1, ChunkTokenSource::Usage);
        assert_eq!(r.gaps_per_token_ns().collect::<Vec<_>>(), [10.0 * MS as f64, 10.0 * MS as f64]);
        assert_eq!(r.output_tokens(), (6, TokenSource::Usage));

        let total = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n";
        let plain = [
            (r#"{"content":"a b c"}"#, None, 10),
            (r#"{"content":"d e"}"#, None, 30),
            (r#"{"content":"f"}"#, None, 40),
        ];
        let r = time(&plain, total);
        assert!(r.chunk_tokens.is_empty());
        assert_eq!(r.tokens_per_event().1, ChunkTokenSource::Estimated);
        assert_eq!(r.gaps_per_token_ns().collect::<Vec<_>>(), [10.0 * MS as f64, 5.0 * MS as f64]);

        let r = time(&plain, done);
        assert_eq!(r.tokens_per_event().1, ChunkTokenSource::Counted);
        assert_eq!(r.gaps_per_token_ns().collect::<Vec<_>>(), [20.0 * MS as f64, 10.0 * MS as f64]);

        // One token event without a count drops the per-event counts (and their memory).
        let mixed = [
            (r#"{"content":"a b c"}"#, Some(3), 10),
            (r#"{"content":"d e"}"#, None, 30),
            (r#"{"content":"f"}"#, Some(6), 40),
        ];
        let r = time(&mixed, done);
        assert!(r.chunk_tokens.is_empty() && r.chunk_tokens.capacity() == 0);
        assert_eq!(r.tokens_per_event().1, ChunkTokenSource::Estimated);
        // A usage total equal to the events is one token each: exact.
        let r = time(&plain[..2], "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n");
        assert_eq!(r.tokens_per_event(), (TokensPerEvent::All(1.0), ChunkTokenSource::Usage));
        // A count that does not grow is not a count of this event's tokens.
        let r = time(&[(r#"{"content":"a"}"#, Some(2), 10), (r#"{"content":"b"}"#, Some(2), 20)], done);
        assert!(r.chunk_tokens.is_empty());
    }

    #[test]
    fn cut_events_are_counted() {
        let mut t = StreamTimer::new(
            0,
            TimerConfig {
                limits: SseLimits { max_line_bytes: 64, max_event_bytes: 64 },
                ..TimerConfig::default()
            },
        );
        t.feed(format!("data: {}\n\ndata: [DONE]\n\n", "x".repeat(1000)).as_bytes(), 1);
        let r = t.finish(2);
        assert_eq!((r.cut_events, r.token_events()), (1, 0));
    }
}
