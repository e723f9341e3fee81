//! Per-request timing logs: JSON lines, logfmt (`k=v`) and CSV with a header, with the four
//! timestamps the article asks for (enqueue, first token, last token, finish) under their common
//! aliases, in unix s/ms/µs/ns or ISO 8601, or as ready-made durations (`ttft_ms`).
//!
//! Bounded memory whatever the size: figures go into quantile sketches, the slowest and the
//! earliest requests into fixed-size lists, and a deterministic reservoir keeps a sample for
//! correlations (long prompts vs slow TTFT) and charts.

use super::{Cx, SectionParser};
pub use crate::facts::request_log::{Missing, RequestFacts, Row};
use crate::report::EvidenceLine;
use crate::time;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Canonical fields and the scale that turns a duration into milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Id,
    Enqueue,
    Scheduled,
    FirstToken,
    LastToken,
    Finish,
    Ttft(Scale),
    Queue(Scale),
    Prefill(Scale),
    Decode(Scale),
    E2e(Scale),
    Tpot(Scale),
    Prompt,
    Output,
    Status,
}

/// Milliseconds per unit of a duration field; `Unknown` when the name carries no unit.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    Ms(f64),
    Unknown,
}

fn scale_of(key: &str) -> Scale {
    if key.ends_with("_ms") || key.ends_with("ms") && key.len() > 2 && key.as_bytes()[key.len() - 3] == b'_' {
        Scale::Ms(1.0)
    } else if key.ends_with("_us") {
        Scale::Ms(0.001)
    } else if key.ends_with("_ns") {
        Scale::Ms(1e-6)
    } else if key.ends_with("_s")
        || key.ends_with("_sec")
        || key.ends_with("_secs")
        || key.ends_with("_seconds")
    {
        Scale::Ms(1000.0)
    } else {
        Scale::Unknown
    }
}

fn field_of(key: &str) -> Option<Field> {
    let k = key.trim().to_ascii_lowercase();
    let k = k.as_str();
    let base = k
        .trim_end_matches("_seconds")
        .trim_end_matches("_secs")
        .trim_end_matches("_sec")
        .trim_end_matches("_ms")
        .trim_end_matches("_us")
        .trim_end_matches("_ns")
        .trim_end_matches("_s");
    let f = match k {
        "request_id" | "req_id" | "rid" | "id" | "requestid" | "trace_id" => Field::Id,
        "enqueue_time" | "enqueue_ts" | "enqueued_at" | "enqueue" | "t_enqueue" | "queued_at"
        | "queue_time_start" | "arrival_time" | "arrival" | "arrived_at" | "received_at" | "receive_time"
        | "request_time" | "start_time" | "request_start" | "created" | "created_at" => Field::Enqueue,
        "scheduled_time"
        | "scheduled_at"
        | "schedule_time"
        | "first_scheduled_time"
        | "t_scheduled"
        | "prefill_start"
        | "start_prefill" => Field::Scheduled,
        "first_token_time" | "first_token_ts" | "first_token_at" | "t_first_token" | "t_first"
        | "first_token" => Field::FirstToken,
        "last_token_time" | "last_token_ts" | "last_token_at" | "t_last_token" | "t_last" | "last_token" => {
            Field::LastToken
        }
        "finish_time" | "finish_ts" | "finished_at" | "finish" | "end_time" | "completed_at"
        | "done_time" | "t_finish" | "end" => Field::Finish,
        "prompt_tokens" | "input_tokens" | "prompt_len" | "input_len" | "num_prompt_tokens"
        | "prompt_length" | "n_prompt_tokens" | "isl" => Field::Prompt,
        "output_tokens"
        | "completion_tokens"
        | "output_len"
        | "generated_tokens"
        | "num_generated_tokens"
        | "num_output_tokens"
        | "output_length"
        | "osl" => Field::Output,
        "status" | "status_code" | "http_status" | "code" | "outcome" | "result" => Field::Status,
        _ => {
            match base {
                "ttft" | "time_to_first_token" | "first_token_latency" => Field::Ttft(scale_of(k)),
                "queue" | "queue_time" | "queue_duration" | "queued" | "wait" | "wait_time"
                | "queue_latency" => Field::Queue(scale_of(k)),
                "prefill" | "prefill_time" | "prefill_latency" => Field::Prefill(scale_of(k)),
                "decode" | "decode_time" | "decode_latency" => Field::Decode(scale_of(k)),
                "e2e" | "e2e_latency" | "latency" | "duration" | "total_time" | "elapsed"
                | "request_latency" => Field::E2e(scale_of(k)),
                "tpot" | "itl" | "time_per_output_token" | "inter_token_latency" => Field::Tpot(scale_of(k)),
                _ => return None,
            }
        }
    };
    Some(f)
}

/// Field lookups by key, remembered: a log repeats the same dozen keys on every line.
#[derive(Default)]
struct KeyCache {
    entries: Vec<(Box<str>, Option<Field>)>,
    /// The entry after the last one found: lines of one log list their keys in the same order,
    /// so this is almost always the next key.
    next: usize,
}

impl KeyCache {
    const MAX: usize = 256;

    fn get(&mut self, key: &str) -> Option<Field> {
        if let Some((k, f)) = self.entries.get(self.next)
            && &**k == key
        {
            self.next += 1;
            return *f;
        }
        if let Some(i) = self.entries.iter().position(|(k, _)| &**k == key) {
            self.next = i + 1;
            return self.entries[i].1;
        }
        let f = field_of(key);
        if self.entries.len() < Self::MAX {
            self.entries.push((key.into(), f));
            self.next = self.entries.len();
        }
        f
    }
}

/// A scalar value as read.
#[derive(Clone, Debug, PartialEq)]
enum Scalar<'a> {
    Num(f64),
    Str(Cow<'a, str>),
}

impl Scalar<'_> {
    fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Num(x) => Some(*x),
            Scalar::Str(s) => s.trim().trim_matches('"').parse().ok(),
        }
    }

    fn timestamp(&self) -> Option<f64> {
        match self {
            Scalar::Num(x) => time::from_number(*x),
            Scalar::Str(s) => time::parse_timestamp(s),
        }
    }

    fn text(&self) -> String {
        match self {
            Scalar::Num(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", *x as i64),
            Scalar::Num(x) => x.to_string(),
            Scalar::Str(s) => s.trim().trim_matches('"').to_owned(),
        }
    }
}

const TOP_K: usize = 10;
const RESERVOIR: usize = 4096;

impl RequestFacts {
    /// True when no record was read.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Add one row; `evidence` quotes its line, made only for the rows that are kept.
    fn add(&mut self, mut row: Row, evidence: impl Fn() -> EvidenceLine) {
        self.rows += 1;
        let ms = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b >= a => Some((b - a) * 1000.0),
            _ => None,
        };
        row.ttft_ms = row.ttft_ms.or_else(|| ms(row.enqueue, row.first_token));
        row.queue_ms = row.queue_ms.or_else(|| ms(row.enqueue, row.scheduled));
        row.prefill_ms = row.prefill_ms.or_else(|| ms(row.scheduled, row.first_token));
        row.decode_ms = row.decode_ms.or_else(|| ms(row.first_token, row.last_token));
        row.e2e_ms = row.e2e_ms.or_else(|| ms(row.enqueue, row.finish.or(row.last_token)));
        row.tpot_ms = row.tpot_ms.or_else(|| match (row.decode_ms, row.output_tokens) {
            (Some(d), Some(n)) if n >= 2.0 => Some(d / (n - 1.0)),
            _ => None,
        });
        if row.prefill_ms.is_none()
            && let (Some(t), Some(q)) = (row.ttft_ms, row.queue_ms)
            && t >= q
        {
            row.prefill_ms = Some(t - q);
        }
        for (sketch, v) in [
            (&mut self.ttft_ms, row.ttft_ms),
            (&mut self.queue_ms, row.queue_ms),
            (&mut self.prefill_ms, row.prefill_ms),
            (&mut self.decode_ms, row.decode_ms),
            (&mut self.e2e_ms, row.e2e_ms),
            (&mut self.tpot_ms, row.tpot_ms),
            (&mut self.prompt_tokens, row.prompt_tokens),
            (&mut self.output_tokens, row.output_tokens),
        ] {
            if let Some(v) = v {
                sketch.insert(v);
            }
        }
        if let (Some(q), Some(t)) = (row.queue_ms, row.ttft_ms)
            && t > 0.0
        {
            self.queue_share.insert((q / t).min(1.0));
        }
        // A failed request (timeout, 429, 5xx) legitimately has no first or last token: only
        // requests that succeeded are expected to carry all four timestamps.
        let failed = row.failed();
        self.missing.enqueue += u64::from(row.enqueue.is_none() && row.ttft_ms.is_none());
        self.missing.first_token += u64::from(!failed && row.first_token.is_none() && row.ttft_ms.is_none());
        self.missing.last_token += u64::from(!failed && row.last_token.is_none());
        self.missing.finish += u64::from(row.finish.is_none());
        let lacks_any = (row.enqueue.is_none() && row.ttft_ms.is_none())
            || (!failed && row.first_token.is_none() && row.ttft_ms.is_none())
            || (!failed && row.last_token.is_none())
            || row.finish.is_none();
        if lacks_any && self.missing_example.is_none() {
            self.missing_example = Some(evidence());
        }
        self.failed += u64::from(failed);
        if row.first_token.is_none() && row.ttft_ms.is_none() && (row.finish.is_some() || failed) {
            self.never_started += 1;
        }
        if let Some(s) = &row.status {
            if let Some(n) = self.statuses.get_mut(s) {
                *n += 1;
            } else if self.statuses.len() < 64 {
                self.statuses.insert(s.clone(), 1);
            }
        }
        if let Some(t) = row.enqueue {
            self.first_enqueue = Some(self.first_enqueue.map_or(t, |f| f.min(t)));
            self.last_enqueue = Some(self.last_enqueue.map_or(t, |l| l.max(t)));
        }
        insert_top(&mut self.slowest, &row, &evidence, |r| r.ttft_ms.map(|t| -t));
        insert_top(&mut self.earliest, &row, &evidence, |r| r.enqueue);
        // Reservoir sampling (Algorithm R) with a fixed-seed xorshift: deterministic output.
        let sampled = row;
        if self.sample.len() < RESERVOIR {
            self.sample.push(sampled);
        } else {
            self.rng = if self.rng == 0 { 0x9E37_79B9_7F4A_7C15 } else { self.rng };
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = self.rng % self.rows;
            if (j as usize) < RESERVOIR {
                self.sample[j as usize] = sampled;
            }
        }
    }
}

/// Keep the `TOP_K` rows with the smallest `key`, sorted.
fn insert_top(
    list: &mut Vec<Row>,
    row: &Row,
    evidence: &dyn Fn() -> EvidenceLine,
    key: impl Fn(&Row) -> Option<f64>,
) {
    let Some(k) = key(row) else { return };
    if list.len() == TOP_K && list.last().and_then(&key).is_some_and(|last| k >= last) {
        return;
    }
    let pos = list.partition_point(|r| key(r).is_some_and(|x| x <= k));
    let mut kept = row.clone();
    kept.evidence = Some(evidence());
    list.insert(pos, kept);
    list.truncate(TOP_K);
}

/// Collects `(field, value)` pairs from one JSON object, one level of nesting deep.
struct Flat<'b, 'a> {
    out: &'b mut Vec<(Field, Scalar<'a>)>,
    keys: &'b mut KeyCache,
    depth: u8,
}

impl<'de, 'b> DeserializeSeed<'de> for Flat<'b, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'b> Visitor<'de> for Flat<'b, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let field = self.keys.get(&key);
            map.next_value_seed(ValueSeed {
                field,
                out: &mut *self.out,
                keys: &mut *self.keys,
                depth: self.depth,
            })?;
        }
        Ok(())
    }
}

/// A map key, borrowed from the line unless it holds escapes (serde's own `Cow<str>` always
/// allocates).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

struct ValueSeed<'b, 'a> {
    field: Option<Field>,
    out: &'b mut Vec<(Field, Scalar<'a>)>,
    keys: &'b mut KeyCache,
    depth: u8,
}

impl<'de, 'b> DeserializeSeed<'de> for ValueSeed<'b, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'b> Visitor<'de> for ValueSeed<'b, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        if let Some(f) = self.field {
            self.out.push((f, Scalar::Num(v)));
        }
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<(), E> {
        if let Some(f) = self.field {
            self.out.push((f, Scalar::Str(Cow::Borrowed(v))));
        }
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if let Some(f) = self.field {
            self.out.push((f, Scalar::Str(Cow::Owned(v.to_owned()))));
        }
        Ok(())
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.depth < 2 {
            Flat { out: self.out, keys: self.keys, depth: self.depth + 1 }.visit_map(map)
        } else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(())
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

fn parse_json<'a>(line: &'a str, keys: &mut KeyCache) -> Option<Vec<(Field, Scalar<'a>)>> {
    let mut out = Vec::with_capacity(16);
    let mut de = serde_json::Deserializer::from_str(line);
    Flat { out: &mut out, keys, depth: 0 }.deserialize(&mut de).ok()?;
    Some(out)
}

/// `k=v k2="quoted value"` pairs anywhere in a line.
fn parse_logfmt(line: &str) -> Vec<(Field, Scalar<'_>)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(eq) = rest.find('=') {
        let key_start = rest[..eq].rfind([' ', '\t', ',', '{', '(']).map_or(0, |i| i + 1);
        let key = &rest[key_start..eq];
        let after = &rest[eq + 1..];
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (&q[..end], &q[end + 1..]),
                None => (q, ""),
            }
        } else {
            let end = after.find([' ', '\t', ',', '}', ')']).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if let Some(f) = field_of(key) {
            out.push((f, Scalar::Str(Cow::Borrowed(value))));
        }
        rest = next;
    }
    out
}

fn split_csv(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(line[start..i].trim().trim_matches('"'));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(line[start..].trim().trim_matches('"'));
    out
}

/// Parser state for one request-log section.
#[derive(Default)]
pub struct RequestLogParser {
    /// Column → field, once a CSV header has been read.
    csv: Option<Vec<Option<Field>>>,
    rows: u64,
    keys: KeyCache,
}

impl RequestLogParser {
    fn to_row(&self, cx: &mut Cx<'_>, no: usize, pairs: &[(Field, Scalar<'_>)]) -> Row {
        let mut row = Row { line: no, ..Row::default() };
        for (field, v) in pairs {
            let dur = |scale: Scale, facts_assumed: &mut u64| {
                let x = v.as_f64()?;
                Some(match scale {
                    Scale::Ms(m) => x * m,
                    // A unitless duration: under 100 it is almost surely seconds.
                    Scale::Unknown => {
                        *facts_assumed += 1;
                        if x < 100.0 { x * 1000.0 } else { x }
                    }
                })
                .filter(|x| x.is_finite() && *x >= 0.0)
            };
            let assumed = &mut cx.facts.requests.assumed_units;
            match *field {
                Field::Id => row.id = Some(v.text()),
                Field::Enqueue => row.enqueue = v.timestamp(),
                Field::Scheduled => row.scheduled = v.timestamp(),
                Field::FirstToken => row.first_token = v.timestamp(),
                Field::LastToken => row.last_token = v.timestamp(),
                Field::Finish => row.finish = v.timestamp(),
                Field::Ttft(s) => row.ttft_ms = dur(s, assumed),
                Field::Queue(s) => row.queue_ms = dur(s, assumed),
                Field::Prefill(s) => row.prefill_ms = dur(s, assumed),
                Field::Decode(s) => row.decode_ms = dur(s, assumed),
                Field::E2e(s) => row.e2e_ms = dur(s, assumed),
                Field::Tpot(s) => row.tpot_ms = dur(s, assumed),
                Field::Prompt => row.prompt_tokens = v.as_f64().filter(|x| *x >= 0.0),
                Field::Output => row.output_tokens = v.as_f64().filter(|x| *x >= 0.0),
                Field::Status => row.status = Some(v.text()),
            }
        }
        row
    }
}

impl SectionParser for RequestLogParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim_start();
        if t.starts_with('{') {
            return true;
        }
        match &self.csv {
            Some(cols) => t.matches(',').count() + 1 == cols.len(),
            None => false,
        }
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        let pairs = if t.starts_with('{') {
            match parse_json(t, &mut self.keys) {
                Some(p) => p,
                None => {
                    cx.facts.requests.unreadable += 1;
                    cx.issue_in(no, "not valid JSON (truncated line?)", "不是合法的 JSON（行被截断了？）");
                    return;
                }
            }
        } else if let Some(cols) = &self.csv
            && !t.contains('=')
        {
            let cells = split_csv(t);
            if cells.len() != cols.len() {
                cx.facts.requests.unreadable += 1;
                let (n, want) = (cells.len(), cols.len());
                cx.issue_in(
                    no,
                    format!("CSV row has {n} cells, the header has {want}"),
                    format!("CSV 行有 {n} 个单元格，而表头有 {want} 个"),
                );
                return;
            }
            cols.iter()
                .zip(cells)
                .filter_map(|(f, c)| f.map(|f| (f, Scalar::Str(Cow::Borrowed(c)))))
                .filter(|(_, v)| !matches!(v, Scalar::Str(s) if s.is_empty()))
                .collect()
        } else if t.contains('=') {
            parse_logfmt(t)
        } else if t.contains(',') {
            let cols: Vec<Option<Field>> = split_csv(t).into_iter().map(field_of).collect();
            if cols.iter().flatten().count() >= 2 {
                self.csv = Some(cols);
            } else {
                cx.issue_in(
                    no,
                    "a comma-separated line that is not a header with timing columns",
                    "逗号分隔的行，但不是带时间列的表头",
                );
            }
            return;
        } else {
            cx.facts.requests.unreadable += 1;
            cx.issue_in(no, "not a JSON, logfmt or CSV record", "不是 JSON、logfmt 或 CSV 记录");
            return;
        };
        if pairs.is_empty() {
            cx.facts.requests.unreadable += 1;
            cx.issue_in(no, "a record without any known timing field", "记录中没有任何已知的时间字段");
            return;
        }
        let row = self.to_row(cx, no, &pairs);
        self.rows += 1;
        let input = cx.input;
        cx.facts.requests.add(row, || EvidenceLine::quoted(input, no, t));
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        if self.rows == 0 && self.csv.is_some() {
            cx.issue_in(0, "a CSV header without rows", "只有 CSV 表头，没有数据行");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::run;

    #[test]
    fn json_lines_with_unix_seconds_and_aliases() {
        let log = concat!(
            r#"{"request_id":"a","enqueue_time":1764460800.0,"scheduled_time":1764460800.5,"first_token_time":1764460801.0,"last_token_time":1764460802.0,"finish_time":1764460802.01,"prompt_tokens":100,"output_tokens":11}"#,
            "\n",
            r#"{"id":"b","arrival":"2025-11-30T00:00:00Z","first_token_at":"2025-11-30T00:00:00.300Z","usage":{"prompt_tokens":50,"completion_tokens":3},"status":200}"#,
            "\n"
        );
        let (f, sections) = run("log", log).take(|f| f.requests);
        assert_eq!(f.rows, 2);
        assert_eq!(sections.len(), 1);
        assert_eq!(sections[0].lines, [1, 2]);
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.slowest[0].id.as_deref(), Some("a"));
        assert!((f.slowest[0].ttft_ms.unwrap() - 1000.0).abs() < 1e-3);
        assert!((f.slowest[0].queue_ms.unwrap() - 500.0).abs() < 1e-3);
        assert!((f.slowest[0].tpot_ms.unwrap() - 100.0).abs() < 1e-3);
        assert!((f.slowest[1].ttft_ms.unwrap() - 300.0).abs() < 1e-3);
        assert_eq!(f.slowest[1].prompt_tokens, Some(50.0));
        assert_eq!(f.missing.last_token, 1);
    }

    /// TPOT's zero-span rule (as in `timing::RequestTiming::tpot_ns`): every token at one instant
    /// gives 0; one output token gives none.
    #[test]
    fn tpot_of_a_zero_span_is_zero() {
        let log = concat!(
            r#"{"id":"z","enqueue_time":10.0,"first_token_time":11.0,"last_token_time":11.0,"output_tokens":6}"#,
            "\n",
            r#"{"id":"one","enqueue_time":10.0,"first_token_time":11.0,"last_token_time":11.0,"output_tokens":1}"#,
            "\n"
        );
        let (f, _) = run("log", log).take(|f| f.requests);
        let row = |id: &str| f.slowest.iter().find(|r| r.id.as_deref() == Some(id)).unwrap().tpot_ms;
        assert_eq!(row("z"), Some(0.0));
        assert_eq!(row("one"), None);
    }

    #[test]
    fn milliseconds_nanoseconds_logfmt_and_csv() {
        let log = "ts=1 level=info request_id=x enqueue_time=1764460800000 first_token_time=1764460800250 prompt_tokens=9\n\
                   request_id,enqueue_time,first_token_time,status\n\
                   r1,1764460800000000000,1764460800400000000,200\n\
                   r2,1764460800000000000,,500\n";
        let (f, sections) = run("log", log).take(|f| f.requests);
        assert_eq!(f.rows, 3, "{sections:?}");
        assert!((f.slowest[0].ttft_ms.unwrap() - 400.0).abs() < 1e-3);
        assert!((f.slowest[1].ttft_ms.unwrap() - 250.0).abs() < 1e-3);
        assert_eq!(f.failed, 1);
        assert_eq!(f.never_started, 1);
        assert_eq!(f.statuses.get("500"), Some(&1));
    }

    #[test]
    fn durations_with_and_without_units() {
        let log = "{\"ttft_ms\": 320, \"queue_time_ms\": 200, \"e2e_s\": 2.5}\n{\"ttft\": 0.5}\n";
        let (f, _) = run("log", log).take(|f| f.requests);
        assert_eq!(f.rows, 2);
        assert_eq!(f.assumed_units, 1);
        assert!((f.slowest[0].ttft_ms.unwrap() - 500.0).abs() < 1e-9);
        assert!((f.slowest[1].e2e_ms.unwrap() - 2500.0).abs() < 1e-9);
        assert!((f.queue_share.quantile(0.5).unwrap() - 0.625).abs() < 0.01);
    }

    #[test]
    fn messy_lines_become_issues_not_panics() {
        let log = "{\"ttft_ms\": 10}\n{\"ttft_ms\": 1\n\x1b[31m{\"ttft_ms\": 20}\x1b[0m\r\n{\"ttft_ms\": \"abc\"}\n";
        let (f, sections) = run("log", log).take(|f| f.requests);
        assert_eq!(f.rows, 3);
        assert_eq!(f.unreadable, 1);
        assert_eq!(sections[0].issues[0].line, 2);
    }

    #[test]
    fn bounded_lists() {
        let mut log = String::new();
        for i in 0..10_000 {
            log.push_str(&format!("{{\"ttft_ms\": {}, \"enqueue_time\": {}}}\n", i % 977, 1_764_460_800 + i));
        }
        let (f, _) = run("log", &log).take(|f| f.requests);
        assert_eq!(f.rows, 10_000);
        assert_eq!(f.slowest.len(), 10);
        assert_eq!(f.slowest[0].ttft_ms, Some(976.0));
        assert_eq!(f.earliest[0].enqueue, Some(1_764_460_800.0));
        assert_eq!(f.sample.len(), 4096);
    }
}
