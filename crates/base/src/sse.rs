//! Incremental `text/event-stream` parser, exactly as the WHATWG HTML standard defines it.
//!
//! The parser is sans-I/O: the host feeds whatever chunks the transport produced together with
//! the monotonic time (nanoseconds, any origin) at which that chunk arrived. Each dispatched
//! event carries the arrival time of the chunk that *completed* it (the chunk holding the blank
//! line), which is the moment a client could first have acted on it.
//!
//! Chunking never changes the result: a stream fed whole, one byte at a time, or split at any
//! positions yields the same events (see the property tests). Handled per the standard:
//! a leading UTF-8 BOM, CR / LF / CRLF line ends (including a CR ending one chunk and its LF
//! starting the next), comments (`:` lines), fields without a colon, one optional space after
//! the colon, multi-line `data`, `event`, `id` (ignored when it contains NUL), `retry` (digits
//! only). Events without data are not dispatched; an unterminated event at end of stream is
//! discarded (and reported by [`SseParser::finish`]).
//!
//! Memory is bounded: a line or an event's data longer than [`SseLimits`] is truncated and the
//! event is flagged, so a hostile or binary body cannot grow the parser without limit.

use std::borrow::Cow;

/// Size limits that keep the parser's memory bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// Longest line kept, in bytes; the rest of the line is dropped.
    pub max_line_bytes: usize,
    /// Largest data buffer of one event, in bytes; further data is dropped.
    pub max_event_bytes: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits { max_line_bytes: 1 << 20, max_event_bytes: 4 << 20 }
    }
}

/// One dispatched event. Borrowed from the parser; copy what you need to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `"message"` when none was given.
    pub event: &'a str,
    /// The data lines joined with `\n` (the final newline removed).
    pub data: &'a str,
    /// The last event ID seen so far on this stream (it persists across events).
    pub last_event_id: &'a str,
    /// Arrival time of the chunk that completed the event, as given to `feed`.
    pub at_ns: u64,
    /// True when a line or the data buffer hit [`SseLimits`] and was cut.
    pub truncated: bool,
}

/// Something the parser saw that is not an event but matters for timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// A dispatched event.
    Event(SseEvent<'a>),
    /// A comment line (`: keep-alive`), often a server heartbeat. Text without the colon.
    Comment {
        /// The comment's text after the colon.
        text: &'a str,
        /// Arrival time of the chunk that completed the line, as given to `feed`.
        at_ns: u64,
    },
}

/// [`SseEvent`] with its data as the bytes the stream carried, not yet read as UTF-8
/// ([`SseParser::feed_raw`]): a caller that can decide from the bytes (the proxy filter's kept
/// event shape) skips the UTF-8 pass; [`RawEvent::text`] gives what [`SseEvent::data`] would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawEvent<'a> {
    /// The `event:` field, or `"message"` when none was given.
    pub event: &'a str,
    /// The data lines joined with `\n`, as bytes (not yet checked for UTF-8).
    pub data: &'a [u8],
    /// The last event ID seen so far on this stream.
    pub last_event_id: &'a str,
    /// Arrival time of the chunk that completed the event, as given to `feed`.
    pub at_ns: u64,
    /// True when a line or the data buffer hit [`SseLimits`] and was cut.
    pub truncated: bool,
}

impl<'a> RawEvent<'a> {
    /// The data as [`SseEvent::data`] has it (invalid UTF-8 replaced by U+FFFD).
    pub fn text(&self) -> Cow<'a, str> {
        lossy(self.data)
    }
}

/// [`SseItem`] with a [`RawEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawItem<'a> {
    /// A dispatched event, its data as bytes.
    Event(RawEvent<'a>),
    /// A comment line, as [`SseItem::Comment`].
    Comment {
        /// The comment's text after the colon.
        text: &'a str,
        /// Arrival time of the chunk that completed the line, in nanoseconds.
        at_ns: u64,
    },
}

/// An owned copy of [`SseEvent`], convenient for tests and small streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedEvent {
    /// The `event:` field, or `"message"` when none was given.
    pub event: String,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The last event ID seen so far on this stream.
    pub last_event_id: String,
    /// Arrival time of the chunk that completed the event, in nanoseconds.
    pub at_ns: u64,
    /// True when a line or the data buffer hit [`SseLimits`] and was cut.
    pub truncated: bool,
}

impl From<&SseEvent<'_>> for OwnedEvent {
    fn from(e: &SseEvent<'_>) -> Self {
        OwnedEvent {
            event: e.event.to_owned(),
            data: e.data.to_owned(),
            last_event_id: e.last_event_id.to_owned(),
            at_ns: e.at_ns,
            truncated: e.truncated,
        }
    }
}

/// What was left when the stream ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SseEnd {
    /// Bytes of an unfinished last line (no line end before the stream closed).
    pub partial_line_bytes: usize,
    /// An event had data but its blank line never came; per the standard it is discarded.
    pub discarded_event: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The incremental parser. See the module docs.
#[derive(Debug, Clone)]
pub struct SseParser {
    limits: SseLimits,
    /// Still looking at the first bytes of the stream, which may be a BOM.
    at_start: bool,
    /// The previous chunk ended with CR: an LF at the start of the next one belongs to it.
    pending_cr: bool,
    /// An incomplete line carried over from the previous chunk.
    line: Vec<u8>,
    line_truncated: bool,
    data: Vec<u8>,
    /// Whether any `data` field was seen for the current event (data may be empty strings).
    has_data: bool,
    event_type: String,
    last_event_id: String,
    retry_ms: Option<u64>,
    event_truncated: bool,
    bytes_fed: u64,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new()
    }
}

impl SseParser {
    /// A parser with the default [`SseLimits`].
    pub fn new() -> SseParser {
        SseParser::with_limits(SseLimits::default())
    }

    /// A parser that keeps at most what `limits` allow.
    pub fn with_limits(limits: SseLimits) -> SseParser {
        SseParser {
            limits,
            at_start: true,
            pending_cr: false,
            line: Vec::new(),
            line_truncated: false,
            data: Vec::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: String::new(),
            retry_ms: None,
            event_truncated: false,
            bytes_fed: 0,
        }
    }

    /// The reconnection time the server asked for with `retry:`, if any.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Total bytes given to [`feed`](Self::feed).
    pub fn bytes_fed(&self) -> u64 {
        self.bytes_fed
    }

    /// Feed one chunk that arrived at `at_ns`; `sink` sees every event and comment it completes.
    pub fn feed(&mut self, chunk: &[u8], at_ns: u64, sink: &mut dyn FnMut(SseItem<'_>)) {
        self.feed_raw(chunk, at_ns, &mut |item| match item {
            RawItem::Event(e) => {
                let data = e.text();
                sink(SseItem::Event(SseEvent {
                    event: e.event,
                    data: &data,
                    last_event_id: e.last_event_id,
                    at_ns: e.at_ns,
                    truncated: e.truncated,
                }));
            }
            RawItem::Comment { text, at_ns } => sink(SseItem::Comment { text, at_ns }),
        });
    }

    /// [`SseParser::feed`], each event's data handed over as bytes ([`RawEvent`]).
    pub fn feed_raw(&mut self, chunk: &[u8], at_ns: u64, sink: &mut dyn FnMut(RawItem<'_>)) {
        self.bytes_fed += chunk.len() as u64;
        if chunk.is_empty() {
            // A zero-length read or a proxy's end-of-body callback: nothing arrived, so nothing
            // can change — in particular a CR that ended the previous chunk still waits for the
            // first byte of the next one to tell CRLF from a lone CR.
            return;
        }
        let mut rest = chunk;
        if self.at_start {
            // The BOM may itself be split across chunks: hold bytes until we can tell.
            self.line.extend_from_slice(rest);
            let held = &self.line[..];
            if held.len() < BOM.len() && BOM.starts_with(held) {
                return;
            }
            self.at_start = false;
            let skip = if held.starts_with(BOM) { BOM.len() } else { 0 };
            let held = std::mem::take(&mut self.line);
            self.process(&held[skip..], at_ns, sink);
            // `process` may have stored a partial line in `self.line`; `held` is dropped here.
            return;
        }
        if self.pending_cr {
            if let [b'\n', tail @ ..] = rest {
                rest = tail;
            }
            self.pending_cr = false;
        }
        self.process(rest, at_ns, sink);
    }

    /// Feed a chunk and collect owned events (tests, small inputs).
    pub fn feed_collect(&mut self, chunk: &[u8], at_ns: u64) -> Vec<OwnedEvent> {
        let mut out = Vec::new();
        self.feed(chunk, at_ns, &mut |item| {
            if let SseItem::Event(e) = item {
                out.push(OwnedEvent::from(&e));
            }
        });
        out
    }

    /// The stream closed. Reports what was left unfinished; the parser can be reused after.
    pub fn finish(&mut self) -> SseEnd {
        let end = SseEnd {
            partial_line_bytes: self.line.len(),
            discarded_event: self.has_data || !self.line.is_empty() && self.line_is_data(),
        };
        self.line.clear();
        self.line_truncated = false;
        self.reset_event();
        end
    }

    fn line_is_data(&self) -> bool {
        self.line.starts_with(b"data")
    }

    fn process(&mut self, mut rest: &[u8], at_ns: u64, sink: &mut dyn FnMut(RawItem<'_>)) {
        while let Some(pos) = line_end(rest) {
            let is_cr = rest[pos] == b'\r';
            if self.line.is_empty() && !self.line_truncated {
                if let Some(next) = self.one_line_event(rest, pos, at_ns, sink) {
                    rest = &rest[next..];
                    continue;
                }
                self.line_complete(&rest[..pos], false, at_ns, sink);
            } else {
                self.push_line_bytes(&rest[..pos]);
                let line = std::mem::take(&mut self.line);
                let truncated = std::mem::take(&mut self.line_truncated);
                self.line_complete(&line, truncated, at_ns, sink);
                // Keep the allocation for the next partial line.
                self.line = line;
                self.line.clear();
            }
            rest = &rest[pos + 1..];
            if is_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        self.push_line_bytes(rest);
    }

    /// The common case without copying: `rest[..pos]` is a whole `data:` line, the first data of
    /// its event, and the blank line that dispatches it follows in the same chunk. Hands the
    /// event over borrowed from `rest` and returns where the stream continues; `None` (nothing
    /// done) for anything else, which the line-by-line path takes.
    fn one_line_event(
        &mut self,
        rest: &[u8],
        pos: usize,
        at_ns: u64,
        sink: &mut dyn FnMut(RawItem<'_>),
    ) -> Option<usize> {
        let line = &rest[..pos];
        let value = line.strip_prefix(b"data:")?;
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.has_data
            || line.len() > self.limits.max_line_bytes
            || value.len() + 1 > self.limits.max_event_bytes
        {
            return None;
        }
        // Past this line's end (CR, LF or CRLF), then the blank line's; a CR that ends the
        // chunk could be the first half of a CRLF, which the line-by-line path tracks.
        let ends = |at: usize| -> Option<usize> {
            match *rest.get(at)? {
                b'\n' => Some(at + 1),
                b'\r' => match rest.get(at + 1) {
                    Some(b'\n') => Some(at + 2),
                    Some(_) => Some(at + 1),
                    None => None,
                },
                _ => None,
            }
        };
        let next = ends(ends(pos)?)?;
        let event = if self.event_type.is_empty() { "message" } else { &self.event_type };
        sink(RawItem::Event(RawEvent {
            event,
            data: value,
            last_event_id: &self.last_event_id,
            at_ns,
            truncated: self.event_truncated,
        }));
        self.reset_event();
        Some(next)
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) {
        let room = self.limits.max_line_bytes.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.line.extend_from_slice(&bytes[..room]);
            self.line_truncated = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn line_complete(&mut self, line: &[u8], truncated: bool, at_ns: u64, sink: &mut dyn FnMut(RawItem<'_>)) {
        let (line, truncated) = if line.len() > self.limits.max_line_bytes {
            (&line[..self.limits.max_line_bytes], true)
        } else {
            (line, truncated)
        };
        if line.is_empty() {
            self.dispatch(at_ns, sink);
            return;
        }
        if truncated {
            self.event_truncated = true;
        }
        if line[0] == b':' {
            let text = lossy(&line[1..]);
            sink(RawItem::Comment { text: &text, at_ns });
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.has_data = true;
                let room = self.limits.max_event_bytes.saturating_sub(self.data.len());
                if value.len() + 1 > room {
                    self.data.extend_from_slice(&value[..value.len().min(room)]);
                    self.event_truncated = true;
                } else {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&lossy(value));
            }
            b"id" => {
                if !value.contains(&0) {
                    self.last_event_id.clear();
                    self.last_event_id.push_str(&lossy(value));
                }
            }
            // Digits only, per the standard; saturate rather than overflow on absurd values.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value
                    .iter()
                    .fold(0u64, |acc, d| acc.saturating_mul(10).saturating_add(u64::from(d - b'0')));
                self.retry_ms = Some(ms);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, at_ns: u64, sink: &mut dyn FnMut(RawItem<'_>)) {
        if !self.has_data {
            // The standard: an empty data buffer resets the event type and dispatches nothing.
            self.reset_event();
            return;
        }
        if self.data.last() == Some(&b'\n') {
            self.data.pop();
        }
        let event = if self.event_type.is_empty() { "message" } else { &self.event_type };
        sink(RawItem::Event(RawEvent {
            event,
            data: &self.data,
            last_event_id: &self.last_event_id,
            at_ns,
            truncated: self.event_truncated,
        }));
        self.reset_event();
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.event_type.clear();
        self.event_truncated = false;
    }
}

/// The first CR or LF. On wasm32, where `memchr` has no SIMD without `simd128` and works four
/// bytes at a time, eight bytes per step ([`crate::words`]); elsewhere `memchr`'s vector search.
fn line_end(b: &[u8]) -> Option<usize> {
    if cfg!(target_arch = "wasm32") { line_end_words(b) } else { memchr::memchr2(b'\n', b'\r', b) }
}

fn line_end_words(b: &[u8]) -> Option<usize> {
    use crate::words::{equal, first};
    first(b, |x| equal(x, b'\n') | equal(x, b'\r'), |c| c == b'\n' || c == b'\r')
}

/// Bytes as text, invalid sequences replaced (U+FFFD). Valid UTF-8 — nearly every stream — is
/// borrowed after `str::from_utf8`'s word-at-a-time check: `String::from_utf8_lossy`'s chunk
/// walk took a third of this parser's time per event natively and a quarter of the proxy
/// filter's whole in-wasm time per token event (docs/proxy-plugin.md).
fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn line_end_in_words_finds_what_memchr_finds() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            for _ in 0..20 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Mostly text, sometimes a line end, bytes around them (0x09, 0x0c, 0x8a, 0x8d).
                        match x % 64 {
                            0 => b'\n',
                            1 => b'\r',
                            2 => 0x0c,
                            3 => 0x8a,
                            4 => 0x8d,
                            _ => b'a' + (x % 26) as u8,
                        }
                    })
                    .collect();
                assert_eq!(line_end_words(&b), memchr::memchr2(b'\n', b'\r', &b), "{b:?}");
            }
        }
    }

    #[test]
    fn raw_events_carry_the_bytes_and_read_as_the_text() {
        let mut p = SseParser::new();
        let mut seen = Vec::new();
        p.feed_raw(b"event: e\ndata: caf\xc3\xa9 \xff\n\ndata: a\ndata: b\n\n", 1, &mut |i| {
            if let RawItem::Event(e) = i {
                seen.push((e.event.to_owned(), e.data.to_vec(), e.text().into_owned()));
            }
        });
        assert_eq!(
            seen,
            [
                ("e".to_owned(), b"caf\xc3\xa9 \xff".to_vec(), "café \u{fffd}".to_owned()),
                ("message".to_owned(), b"a\nb".to_vec(), "a\nb".to_owned()),
            ]
        );
    }

    fn parse_whole(input: &[u8]) -> Vec<OwnedEvent> {
        let mut p = SseParser::new();
        p.feed_collect(input, 7)
    }

    fn parse_chunks(input: &[u8], cuts: &[usize]) -> Vec<(String, String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &cut) in cuts.iter().chain(std::iter::once(&input.len())).enumerate() {
            let cut = cut.clamp(start, input.len());
            for e in p.feed_collect(&input[start..cut], i as u64) {
                out.push((e.event, e.data, e.last_event_id));
            }
            start = cut;
        }
        out
    }

    fn names(events: &[OwnedEvent]) -> Vec<(&str, &str)> {
        events.iter().map(|e| (e.event.as_str(), e.data.as_str())).collect()
    }

    #[test]
    fn spec_example_multiline_data_and_types() {
        let input = b"data: YHOO\ndata: +2\ndata: 10\n\nevent: add\ndata: 73857293\n\n";
        let ev = parse_whole(input);
        assert_eq!(names(&ev), vec![("message", "YHOO\n+2\n10"), ("add", "73857293")]);
    }

    #[test]
    fn spec_example_space_after_colon_is_optional_once() {
        let ev = parse_whole(b"data:test\n\ndata: test\n\ndata:  two\n\n");
        assert_eq!(names(&ev), vec![("message", "test"), ("message", "test"), ("message", " two")]);
    }

    #[test]
    fn spec_example_field_without_colon_and_empty_data() {
        // "data" alone appends an empty line; two of them give one "\n".
        let ev = parse_whole(b"data\n\ndata\ndata\n\ndata:\n");
        assert_eq!(names(&ev), vec![("message", ""), ("message", "\n")]);
    }

    #[test]
    fn comments_are_reported_not_dispatched() {
        let mut p = SseParser::new();
        let mut comments = Vec::new();
        let mut events = 0;
        p.feed(b": keep-alive\n\n:x\ndata: a\n\n", 3, &mut |item| match item {
            SseItem::Comment { text, at_ns } => comments.push((text.to_owned(), at_ns)),
            SseItem::Event(_) => events += 1,
        });
        assert_eq!(comments, vec![(" keep-alive".to_owned(), 3), ("x".to_owned(), 3)]);
        assert_eq!(events, 1);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_resets_type() {
        let ev = parse_whole(b"event: ping\n\ndata: x\n\n");
        assert_eq!(names(&ev), vec![("message", "x")]);
    }

    #[test]
    fn bom_is_stripped_only_at_start() {
        let ev = parse_whole(b"\xEF\xBB\xBFdata: a\n\n");
        assert_eq!(names(&ev), vec![("message", "a")]);
        // A BOM later is part of the field name, which is then unknown and ignored.
        let ev = parse_whole(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n");
        assert_eq!(names(&ev), vec![("message", "a")]);
        // Split BOM.
        let got = parse_chunks(b"\xEF\xBB\xBFdata: a\n\n", &[1, 2]);
        assert_eq!(got, vec![("message".into(), "a".into(), "".into())]);
    }

    #[test]
    fn cr_lf_and_crlf_line_ends() {
        for input in
            [&b"data: a\r\rdata: b\r\r"[..], b"data: a\r\n\r\ndata: b\r\n\r\n", b"data: a\n\ndata: b\n\n"]
        {
            let ev = parse_whole(input);
            assert_eq!(names(&ev), vec![("message", "a"), ("message", "b")], "{input:?}");
        }
        // A CR that ends one chunk and an LF that starts the next are one line end.
        let got = parse_chunks(b"data: a\r\n\r\ndata: b\r\n\r\n", &[8]);
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn id_persists_and_nul_ids_are_ignored() {
        let ev = parse_whole(b"id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n");
        let ids: Vec<&str> = ev.iter().map(|e| e.last_event_id.as_str()).collect();
        assert_eq!(ids, vec!["1", "1", "1", ""]);
    }

    #[test]
    fn retry_digits_only() {
        let mut p = SseParser::new();
        p.feed(b"retry: 1500\n\nretry: 12a\n\n", 0, &mut |_| {});
        assert_eq!(p.retry_ms(), Some(1500));
    }

    #[test]
    fn event_time_is_the_completing_chunk() {
        let mut p = SseParser::new();
        assert!(p.feed_collect(b"data: hel", 10).is_empty());
        assert!(p.feed_collect(b"lo\n", 20).is_empty());
        let ev = p.feed_collect(b"\n", 30);
        assert_eq!(ev[0].at_ns, 30);
        assert_eq!(ev[0].data, "hello");
    }

    #[test]
    fn unterminated_event_is_discarded_and_reported() {
        let mut p = SseParser::new();
        assert!(p.feed_collect(b"data: a\n\ndata: partial\n", 0).len() == 1);
        let end = p.finish();
        assert!(end.discarded_event);
        let mut p = SseParser::new();
        p.feed_collect(b"data: a\n\ndata: no newline", 0);
        let end = p.finish();
        assert_eq!(end.partial_line_bytes, 16);
        assert!(end.discarded_event);
    }

    #[test]
    fn limits_truncate_and_flag() {
        let mut p = SseParser::with_limits(SseLimits { max_line_bytes: 8, max_event_bytes: 16 });
        let mut got = Vec::new();
        for b in b"data: 0123456789abcdef\n\n" {
            got.extend(p.feed_collect(std::slice::from_ref(b), 0));
        }
        assert_eq!(got.len(), 1);
        assert!(got[0].truncated);
        assert_eq!(got[0].data, "01");
        let mut p = SseParser::with_limits(SseLimits { max_line_bytes: 64, max_event_bytes: 6 });
        let got = p.feed_collect(b"data: abc\ndata: def\ndata: ghi\n\n", 0);
        assert!(got[0].truncated);
        assert!(got[0].data.len() <= 6);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let ev = parse_whole(b"data: \xff\xfe ok\n\n");
        assert_eq!(ev[0].data, "\u{fffd}\u{fffd} ok");
    }

    const TRANSCRIPT: &[u8] = b"\xEF\xBB\xBF: hi\r\nevent: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\nid: 7\rdata: a\rdata: b\r\rdata\n\n:c\ndata:x\nretry: 10\nevent:e\n\n";

    #[test]
    fn every_single_split_and_byte_by_byte_match_whole() {
        let whole: Vec<_> = parse_chunks(TRANSCRIPT, &[]);
        assert_eq!(whole.len(), 4);
        for cut in 0..=TRANSCRIPT.len() {
            assert_eq!(parse_chunks(TRANSCRIPT, &[cut]), whole, "split at {cut}");
        }
        let bytewise: Vec<usize> = (1..TRANSCRIPT.len()).collect();
        assert_eq!(parse_chunks(TRANSCRIPT, &bytewise), whole);
    }

    /// Found by the property test below on a clean clone, with a seed no earlier run drew: two cuts
    /// at the same offset make an empty chunk, which used to clear a pending CR, so the LF after it
    /// began a blank line of its own and dispatched an event the whole stream does not have.
    #[test]
    fn an_empty_chunk_between_cr_and_lf_changes_nothing() {
        let input = b"data: abc\r\ndata: x\r\n\r\n";
        let whole = parse_chunks(input, &[]);
        assert_eq!(whole, vec![("message".into(), "abc\nx".into(), String::new())]);
        for cut in 0..=input.len() {
            assert_eq!(parse_chunks(input, &[cut, cut]), whole, "empty chunk at {cut}");
            assert_eq!(parse_chunks(input, &[cut, cut, cut]), whole, "two empty chunks at {cut}");
        }
        let shrunk: &[&[u8]] = &[
            b"retry: 5",
            b"retry: 5",
            b"id: 3",
            b"abc",
            b"\r\n",
            b"data: ",
            b"\r\n",
            b"\r",
            b"\r\n",
            b"\r\n",
            b"\r",
            b"abc",
            b"data:",
            b":",
            b"retry: 5",
            b"\r\n",
            b"data:",
            b":",
            b"id: 3",
            b"\r\n",
            b"\r",
            b"\xff",
            b"data: ",
            b"\r\n",
            b"data: ",
            b"abc",
            b"\xff",
            b"data:",
            b"\r\n",
        ];
        let input = shrunk.concat();
        assert_eq!(parse_chunks(&input, &[98, 98]), parse_chunks(&input, &[]));
    }

    proptest! {
        #[test]
        fn any_chunking_gives_identical_events(
            body in proptest::collection::vec(
                prop_oneof![
                    Just(&b"data: "[..]), Just(&b"data:"[..]), Just(&b"event: x"[..]), Just(&b"id: 3"[..]),
                    Just(&b"\r"[..]), Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b":"[..]),
                    Just(&b"abc"[..]), Just(&b"\xEF\xBB\xBF"[..]), Just(&b"\xff"[..]), Just(&b"retry: 5"[..]),
                ],
                0..40,
            ),
            mut cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let input: Vec<u8> = body.concat();
            // Every other cut twice: empty chunks are real (a zero-length read, a proxy's
            // end-of-body callback) and a random draw rarely repeats an offset by itself.
            let twice: Vec<usize> = cuts.iter().step_by(2).copied().collect();
            cuts.extend(twice);
            cuts.sort_unstable();
            prop_assert_eq!(parse_chunks(&input, &cuts), parse_chunks(&input, &[]));
        }
    }
}
