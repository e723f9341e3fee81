//! A probe run as OTLP/JSON (`triage probe --otlp FILE`, `--otlp-endpoint URL`): the client-side
//! metrics of the OpenTelemetry GenAI semantic conventions and one span per request.
//!
//! Pinned to semantic conventions **v1.41.0** ([`SEMCONV_VERSION`]; GenAI is marked
//! "development" there, so names may still change — the `schemaUrl` of every scope says which
//! version a file follows). Metrics, histograms with the conventions' explicit bucket
//! boundaries, cumulative from the run's start to its end:
//! `gen_ai.client.operation.duration` (s; every request, `error.type` on failures),
//! `gen_ai.client.operation.time_to_first_chunk` (s; requests that got a token),
//! `gen_ai.client.operation.time_per_output_chunk` (s; one value per gap between token events)
//! and `gen_ai.client.token.usage` (`{token}`; `gen_ai.token.type` `input` from the server's
//! usage, `output` from its usage or the events counted). Spans: kind CLIENT, named
//! `chat {model}`, trace and span ids from [`crate::probe::SpanIds`] (so a span is the parent of
//! the server's span of the same request), the first token and the largest gaps as events (at
//! most [`MAX_EVENTS_PER_SPAN`]; `droppedEventsCount` and `triage.events_dropped` say how many
//! were left out), status ERROR with the fault's message on failures.
//!
//! The encoding follows OTLP's JSON rules: lowerCamelCase field names, trace and span ids as
//! lowercase hex, 64-bit integers as decimal strings, enums as integers. A file holds one
//! export request per line (the collector's file exporter and `otlpjsonfile` receiver layout):
//! the `ExportMetricsServiceRequest` first, then `ExportTraceServiceRequest`s of at most
//! [`MAX_SPANS_PER_REQUEST`] spans and about [`MAX_REQUEST_BYTES`] each. The same lines are
//! the bodies `--otlp-endpoint` posts. Every string is one the probe already redacted (the
//! report's URL, response ids, fault messages) or the user's own (the model), cut to a bound.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use triage_core::endpoint::Api;
use triage_core::probe::RequestRecord;
use triage_core::safe;
use triage_core::timing::{RequestTiming, TokenSource};

use crate::probe::{ProbeRun, RequestSpan};

/// The semantic conventions' version the export follows.
pub const SEMCONV_VERSION: &str = "1.41.0";
/// Its schema URL, written on every resource and scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";
/// Events on one span at most: the first token and the largest gaps.
pub const MAX_EVENTS_PER_SPAN: usize = 64;
/// Spans in one `ExportTraceServiceRequest` at most.
pub const MAX_SPANS_PER_REQUEST: usize = 512;
/// An `ExportTraceServiceRequest` is closed once it reaches this many bytes (one span more at
/// most: a span is bounded by its events and its cut strings, a few KiB).
pub const MAX_REQUEST_BYTES: usize = 4 << 20;
/// Longest string attribute kept (the model, a response id, a finish reason), in characters.
const MAX_ATTR_CHARS: usize = 256;
/// Longest status message kept, in characters.
const MAX_MESSAGE_CHARS: usize = 1024;

/// `gen_ai.client.operation.*` bucket boundaries (seconds), as the conventions give them.
pub const DURATION_BOUNDS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// `gen_ai.client.token.usage` bucket boundaries (tokens), as the conventions give them.
pub const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// What the export needs of a run.
pub struct Export<'a> {
    pub api: Api,
    pub model: &'a str,
    /// The endpoint as the report shows it (redacted): `server.address` and `server.port`.
    pub url: &'a str,
    pub max_tokens: u32,
    /// Records, in any order (each carries its `index`).
    pub requests: &'a [RequestRecord],
    /// Timings and spans by request index.
    pub timings: &'a [Option<RequestTiming>],
    pub spans: &'a [Option<RequestSpan>],
    /// The wall clock (unix ns) at the instants' origin.
    pub origin_unix_ns: u64,
    /// The run's start and end, ns since the origin.
    pub started_ns: u64,
    pub ended_ns: u64,
}

impl<'a> Export<'a> {
    /// The export of `run`, made with `model` and `max_tokens`.
    pub fn of(run: &'a ProbeRun, model: &'a str, max_tokens: u32) -> Export<'a> {
        Export {
            api: run.report.config.api,
            model,
            url: &run.report.url,
            max_tokens,
            requests: &run.report.requests,
            timings: &run.timings,
            spans: &run.spans,
            origin_unix_ns: run.origin_unix_ns,
            started_ns: run.started_ns,
            ended_ns: run.ended_ns,
        }
    }

    fn unix(&self, at_ns: u64) -> u64 {
        self.origin_unix_ns.saturating_add(at_ns)
    }

    /// `server.address` and `server.port` of the endpoint (an IPv6 address without brackets).
    fn server(&self) -> Option<(String, u16)> {
        let url = reqwest::Url::parse(self.url).ok()?;
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        Some((host, url.port_or_known_default()?))
    }

    /// The attributes every metric point and span carries.
    fn common(&self) -> Vec<Value> {
        let mut a = vec![
            kv_str("gen_ai.operation.name", "chat"),
            kv_str("gen_ai.provider.name", provider(self.api)),
            kv_str("gen_ai.request.model", &safe::cut(self.model, MAX_ATTR_CHARS)),
        ];
        if let Some((host, port)) = self.server() {
            a.push(kv_str("server.address", &safe::cut(&host, MAX_ATTR_CHARS)));
            a.push(kv_int("server.port", u64::from(port)));
        }
        a
    }
}

/// `gen_ai.provider.name` by the API the probe spoke: the conventions' name of that flavour's
/// provider (an OpenAI-compatible engine is spoken to as `openai`).
pub fn provider(api: Api) -> &'static str {
    match api {
        Api::Openai => "openai",
        Api::Anthropic => "anthropic",
    }
}

fn kv(key: &str, value: Value) -> Value {
    json!({ "key": key, "value": value })
}

fn kv_str(key: &str, v: &str) -> Value {
    kv(key, json!({ "stringValue": v }))
}

fn kv_int(key: &str, v: u64) -> Value {
    kv(key, json!({ "intValue": v.to_string() }))
}

fn kv_double(key: &str, v: f64) -> Value {
    kv(key, json!({ "doubleValue": finite(v) }))
}

fn kv_bool(key: &str, v: bool) -> Value {
    kv(key, json!({ "boolValue": v }))
}

/// JSON has no NaN or infinity; none should reach here, and none is written.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An explicit-bucket histogram: `counts[i]` holds the values in (bounds[i−1], bounds[i]],
/// the last one those above every bound.
#[derive(Clone, Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn record(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += 1;
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn point(&self, attributes: Vec<Value>, start: u64, end: u64) -> Value {
        json!({
            "attributes": attributes,
            "startTimeUnixNano": start.to_string(),
            "timeUnixNano": end.to_string(),
            "count": self.count.to_string(),
            "sum": self.sum,
            "bucketCounts": self.counts.iter().map(u64::to_string).collect::<Vec<_>>(),
            "explicitBounds": self.bounds,
            "min": self.min,
            "max": self.max,
        })
    }
}

/// One metric: its points by an extra attribute (`error.type`, `gen_ai.token.type`).
struct Metric {
    name: &'static str,
    unit: &'static str,
    description: &'static str,
    extra_key: &'static str,
    points: BTreeMap<Option<&'static str>, Histogram>,
    bounds: &'static [f64],
}

impl Metric {
    fn new(
        name: &'static str,
        unit: &'static str,
        description: &'static str,
        bounds: &'static [f64],
    ) -> Metric {
        Metric { name, unit, description, extra_key: "", points: BTreeMap::new(), bounds }
    }

    fn by(mut self, key: &'static str) -> Metric {
        self.extra_key = key;
        self
    }

    fn record(&mut self, extra: Option<&'static str>, v: f64) {
        let bounds = self.bounds;
        self.points.entry(extra).or_insert_with(|| Histogram::new(bounds)).record(v);
    }

    /// `None` when nothing was recorded: the metric is left out.
    fn json(&self, e: &Export<'_>, common: &[Value]) -> Option<Value> {
        let points: Vec<Value> = self
            .points
            .iter()
            .filter(|(_, h)| h.count > 0)
            .map(|(extra, h)| {
                let mut attributes = common.to_vec();
                if let Some(v) = extra {
                    attributes.push(kv_str(self.extra_key, v));
                }
                h.point(attributes, e.unix(e.started_ns), e.unix(e.ended_ns))
            })
            .collect();
        (!points.is_empty()).then(|| {
            json!({
                "name": self.name,
                "description": self.description,
                "unit": self.unit,
                // AGGREGATION_TEMPORALITY_CUMULATIVE, from the run's start.
                "histogram": { "dataPoints": points, "aggregationTemporality": 2 },
            })
        })
    }
}

fn resource() -> Value {
    json!({ "attributes": [
        kv_str("service.name", "llm-triage"),
        kv_str("service.version", env!("CARGO_PKG_VERSION")),
    ] })
}

fn scope() -> Value {
    json!({ "name": "llm-triage", "version": env!("CARGO_PKG_VERSION") })
}

/// The span's end, ns since the origin: when the probe finished with the request.
fn ended(span: &RequestSpan) -> u64 {
    span.ended_ns.max(span.sent_ns)
}

/// The run's `ExportMetricsServiceRequest`, one line of JSON.
pub fn metrics_json(e: &Export<'_>) -> String {
    let mut duration =
        Metric::new("gen_ai.client.operation.duration", "s", "GenAI operation duration.", &DURATION_BOUNDS)
            .by("error.type");
    let mut ttfc = Metric::new(
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        "Time to receive the first chunk, measured from when the client issues the generation request to when the first chunk is received in the response stream.",
        &DURATION_BOUNDS,
    );
    let mut tpoc = Metric::new(
        "gen_ai.client.operation.time_per_output_chunk",
        "s",
        "Time per output chunk, recorded for each chunk received after the first one.",
        &DURATION_BOUNDS,
    );
    let mut tokens = Metric::new(
        "gen_ai.client.token.usage",
        "{token}",
        "Number of input and output tokens used.",
        &TOKEN_BOUNDS,
    )
    .by("gen_ai.token.type");
    for r in e.requests {
        let error = r.error.as_ref().map(|f| f.kind.as_str());
        let span = e.spans.get(r.index).copied().flatten();
        let secs = match span {
            Some(s) => (ended(&s) - s.sent_ns) as f64 / 1e9,
            None => r.done_ms.or(r.e2e_ms).unwrap_or(0.0) / 1e3,
        };
        duration.record(error, secs);
        if let Some(t) = r.ttft_ms {
            ttfc.record(None, t / 1e3);
        }
        for g in &r.gaps_ms {
            tpoc.record(None, g / 1e3);
        }
        if let Some(n) = r.usage.and_then(|u| u.input_tokens) {
            tokens.record(Some("input"), n as f64);
        }
        if let Some(n) = r.output_tokens {
            tokens.record(Some("output"), n as f64);
        }
    }
    let common = e.common();
    let metrics: Vec<Value> =
        [&duration, &ttfc, &tpoc, &tokens].iter().filter_map(|m| m.json(e, &common)).collect();
    let body = json!({ "resourceMetrics": [{
        "resource": resource(),
        "scopeMetrics": [{ "scope": scope(), "metrics": metrics, "schemaUrl": SCHEMA_URL }],
        "schemaUrl": SCHEMA_URL,
    }] });
    body.to_string()
}

/// The span of request `r`, or `None` when it has no ids.
fn span_json(e: &Export<'_>, r: &RequestRecord, common: &[Value]) -> Option<Value> {
    let span = e.spans.get(r.index).copied().flatten()?;
    let timing = e.timings.get(r.index).and_then(Option::as_ref);
    let mut attributes = common.to_vec();
    attributes.push(kv_int("gen_ai.request.max_tokens", u64::from(e.max_tokens)));
    attributes.push(kv_bool("gen_ai.request.stream", true));
    if let Some(id) = &r.response_id {
        attributes.push(kv_str("gen_ai.response.id", &safe::cut(id, MAX_ATTR_CHARS)));
    }
    if let Some(reason) = &r.finish_reason {
        let reason = safe::cut(reason, MAX_ATTR_CHARS);
        attributes.push(kv(
            "gen_ai.response.finish_reasons",
            json!({ "arrayValue": { "values": [{ "stringValue": reason }] } }),
        ));
    }
    if let Some(n) = r.usage.and_then(|u| u.input_tokens) {
        attributes.push(kv_int("gen_ai.usage.input_tokens", n));
    }
    if let Some(n) = r.output_tokens {
        attributes.push(kv_int("gen_ai.usage.output_tokens", n));
    }
    if let Some(src) = r.token_source {
        let src = match src {
            TokenSource::Usage => "usage",
            TokenSource::Counted => "counted",
        };
        attributes.push(kv_str("triage.token_source", src));
    }
    if let Some(t) = r.ttft_ms {
        attributes.push(kv_double("gen_ai.response.time_to_first_chunk", t / 1e3));
    }
    if let Some(status) = r.status {
        attributes.push(kv_int("http.response.status_code", u64::from(status)));
    }
    if let Some(f) = &r.error {
        attributes.push(kv_str("error.type", f.kind.as_str()));
    }
    attributes.push(kv_int("triage.request.index", r.index as u64));
    attributes.push(kv_str("triage.stamp_source", r.stamp_source.as_str()));
    let stalls = r.stalls.len() as u64 + r.stalls_not_listed;
    if stalls > 0 {
        attributes.push(kv_int("triage.stalls", stalls));
    }
    let (events, dropped) = timing.map_or((Vec::new(), 0), |t| events(e, r, t));
    if dropped > 0 {
        attributes.push(kv_int("triage.events_dropped", dropped));
    }
    let mut s = json!({
        "traceId": hex(&span.ids.trace_id.0),
        "spanId": hex(&span.ids.span_id),
        "name": safe::cut(&format!("chat {}", e.model), MAX_ATTR_CHARS),
        // SPAN_KIND_CLIENT.
        "kind": 3,
        "startTimeUnixNano": e.unix(span.sent_ns).to_string(),
        "endTimeUnixNano": e.unix(ended(&span)).to_string(),
        "attributes": attributes,
        "events": events,
        "droppedEventsCount": u32::try_from(dropped).unwrap_or(u32::MAX),
    });
    if let Some(parent) = span.ids.parent_span_id {
        s["parentSpanId"] = json!(hex(&parent));
    }
    if let Some(f) = &r.error {
        // STATUS_CODE_ERROR; success leaves the status unset, as instrumentations do.
        s["status"] = json!({ "code": 2, "message": safe::cut(&f.message, MAX_MESSAGE_CHARS) });
    }
    Some(s)
}

/// The span's events: the first token, then the largest gaps (a stall is marked), in time
/// order, at most [`MAX_EVENTS_PER_SPAN`]; and how many gaps were left out (those beyond the
/// timing's cap included).
fn events(e: &Export<'_>, r: &RequestRecord, t: &RequestTiming) -> (Vec<Value>, u64) {
    let times = &t.token_times_ns;
    let Some(&first) = times.first() else { return (Vec::new(), 0) };
    let gaps = times.len() - 1;
    let mut chosen: Vec<usize> = (0..gaps).collect();
    let keep = gaps.min(MAX_EVENTS_PER_SPAN - 1);
    if keep < gaps {
        // The largest gaps, ties to the earlier one; then back in time order.
        chosen.sort_by(|&a, &b| {
            let ga = times[a + 1] - times[a];
            let gb = times[b + 1] - times[b];
            gb.cmp(&ga).then(a.cmp(&b))
        });
        chosen.truncate(keep);
        chosen.sort_unstable();
    }
    let stalls: std::collections::BTreeSet<usize> = r.stalls.iter().map(|s| s.gap_index).collect();
    let mut out = Vec::with_capacity(chosen.len() + 1);
    out.push(json!({
        "timeUnixNano": e.unix(first).to_string(),
        "name": "triage.first_token",
        "attributes": [kv_double("triage.ttft_s", first.saturating_sub(t.sent_ns) as f64 / 1e9)],
    }));
    for i in chosen {
        let mut attributes = vec![
            kv_int("triage.gap_index", i as u64),
            kv_double("triage.gap_s", (times[i + 1] - times[i]) as f64 / 1e9),
        ];
        if stalls.contains(&i) {
            attributes.push(kv_bool("triage.stall", true));
        }
        out.push(json!({
            "timeUnixNano": e.unix(times[i + 1]).to_string(),
            "name": "triage.gap",
            "attributes": attributes,
        }));
    }
    let dropped = (gaps - keep) as u64 + t.tokens_beyond_cap;
    (out, dropped)
}

/// The run's `ExportTraceServiceRequest`s, one line of JSON each: the spans in request order,
/// at most [`MAX_SPANS_PER_REQUEST`] and about [`MAX_REQUEST_BYTES`] a line. Made one at a
/// time, so memory holds one line.
pub fn trace_lines<'e>(e: &'e Export<'e>) -> impl Iterator<Item = String> + 'e {
    let mut order: Vec<&RequestRecord> = e.requests.iter().collect();
    order.sort_by_key(|r| r.index);
    let common = e.common();
    let head = format!(
        "{{\"resourceSpans\":[{{\"resource\":{},\"scopeSpans\":[{{\"scope\":{},\"spans\":[",
        resource(),
        scope()
    );
    let tail = format!("],\"schemaUrl\":{0}}}],\"schemaUrl\":{0}}}]}}", json!(SCHEMA_URL));
    let mut spans = order.into_iter().filter_map(move |r| span_json(e, r, &common)).peekable();
    std::iter::from_fn(move || {
        spans.peek()?;
        let mut line = head.clone();
        let mut n = 0;
        while n < MAX_SPANS_PER_REQUEST && line.len() < MAX_REQUEST_BYTES {
            let Some(s) = spans.next() else { break };
            if n > 0 {
                line.push(',');
            }
            line.push_str(&s.to_string());
            n += 1;
        }
        line.push_str(&tail);
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::SpanIds;
    use triage_core::fault::{Fault, FaultKind};
    use triage_core::timing::{StreamTimer, TimerConfig};
    use triage_core::trace::TraceId;

    const MS: u64 = 1_000_000;

    /// A stream of `n` token events, the first at 50 ms, then every 20 ms except one gap of 300 ms.
    fn timing(n: usize) -> RequestTiming {
        let mut timer = StreamTimer::new(0, TimerConfig::default());
        timer.on_headers(10 * MS);
        let mut at = 50 * MS;
        for i in 0..n {
            let ev = format!(
                "data: {{\"id\":\"chatcmpl-1\",\"choices\":[{{\"delta\":{{\"content\":\"t{i}\"}}}}]}}\n\n"
            );
            timer.feed(ev.as_bytes(), at);
            at += if i == n / 2 { 300 * MS } else { 20 * MS };
        }
        timer.feed(b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n", at);
        timer.finish(at)
    }

    fn span(i: u8, parent: Option<[u8; 8]>) -> RequestSpan {
        RequestSpan {
            ids: SpanIds {
                trace_id: TraceId([i.wrapping_add(1); 16]),
                span_id: [i.wrapping_add(0xa0); 8],
                parent_span_id: parent,
            },
            sent_ns: 0,
            ended_ns: 2_000 * MS,
        }
    }

    struct Fixture {
        records: Vec<RequestRecord>,
        timings: Vec<Option<RequestTiming>>,
        spans: Vec<Option<RequestSpan>>,
    }

    /// Request 0 succeeds with `n` token events; request 1 fails before its headers.
    fn fixture(n: usize) -> Fixture {
        let t = timing(n);
        let ok = RequestRecord::new(0, 0, 0, Some(200), Some(&t), None);
        let fault =
            Fault::new(FaultKind::ConnectionRefused, "http://127.0.0.1:9/v1/chat/completions: refused");
        let failed = RequestRecord::new(1, 0, 0, None, None, Some(fault));
        Fixture {
            records: vec![failed, ok],
            timings: vec![Some(t), None],
            spans: vec![Some(span(0, None)), Some(span(1, Some([7; 8])))],
        }
    }

    fn export(f: &Fixture) -> Export<'_> {
        Export {
            api: Api::Openai,
            model: "llama-3.1-8b",
            url: "http://[::1]:8000/v1/chat/completions",
            max_tokens: 16,
            requests: &f.records,
            timings: &f.timings,
            spans: &f.spans,
            origin_unix_ns: 1_700_000_000_000_000_000,
            started_ns: 0,
            ended_ns: 3_000 * MS,
        }
    }

    fn attrs(v: &Value) -> BTreeMap<String, Value> {
        v["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["key"].as_str().unwrap().to_owned(), a["value"].clone()))
            .collect()
    }

    #[test]
    fn histograms_bucket_as_otlp_says_upper_bound_inclusive() {
        let mut h = Histogram::new(&DURATION_BOUNDS);
        for v in [0.005, 0.01, 0.0100001, 81.92, 100.0] {
            h.record(v);
        }
        h.record(f64::NAN);
        assert_eq!(h.counts.len(), 15);
        assert_eq!((h.counts[0], h.counts[1], h.counts[13], h.counts[14]), (2, 1, 1, 1));
        assert_eq!(h.count, 5);
        assert_eq!((h.min, h.max), (0.005, 100.0));
    }

    #[test]
    fn metrics_carry_the_conventions_names_attributes_and_buckets() {
        let f = fixture(6);
        let m: Value = serde_json::from_str(&metrics_json(&export(&f))).unwrap();
        let rm = &m["resourceMetrics"][0];
        assert_eq!(rm["schemaUrl"], SCHEMA_URL);
        let metrics = rm["scopeMetrics"][0]["metrics"].as_array().unwrap();
        let names: Vec<&str> = metrics.iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "gen_ai.client.operation.duration",
                "gen_ai.client.operation.time_to_first_chunk",
                "gen_ai.client.operation.time_per_output_chunk",
                "gen_ai.client.token.usage"
            ]
        );
        let by_name = |n: &str| metrics.iter().find(|m| m["name"] == n).unwrap();
        // Duration: one point for the success, one with error.type for the failure.
        let d = &by_name("gen_ai.client.operation.duration")["histogram"];
        assert_eq!(d["aggregationTemporality"], 2);
        let points = d["dataPoints"].as_array().unwrap();
        assert_eq!(points.len(), 2);
        let ok = attrs(&points[0]);
        assert_eq!(ok["gen_ai.operation.name"]["stringValue"], "chat");
        assert_eq!(ok["gen_ai.provider.name"]["stringValue"], "openai");
        assert_eq!(ok["gen_ai.request.model"]["stringValue"], "llama-3.1-8b");
        assert_eq!(ok["server.address"]["stringValue"], "::1");
        assert_eq!(ok["server.port"]["intValue"], "8000");
        assert!(!ok.contains_key("error.type"));
        assert_eq!(attrs(&points[1])["error.type"]["stringValue"], "connection_refused");
        assert_eq!(points[0]["count"], "1");
        assert_eq!(points[0]["startTimeUnixNano"], "1700000000000000000");
        assert_eq!(points[0]["timeUnixNano"], "1700000003000000000");
        assert_eq!(points[0]["explicitBounds"].as_array().unwrap().len(), 14);
        assert_eq!(points[0]["bucketCounts"].as_array().unwrap().len(), 15);
        // 2 s lands in (1.28, 2.56].
        assert_eq!(points[0]["bucketCounts"][8], "1");
        // Gaps: 5 of them, four of 20 ms and one of 300 ms.
        let g = &by_name("gen_ai.client.operation.time_per_output_chunk")["histogram"]["dataPoints"][0];
        assert_eq!(g["count"], "5");
        assert_eq!(g["bucketCounts"][1], "4");
        assert_eq!(g["bucketCounts"][5], "1");
        assert_eq!(
            by_name("gen_ai.client.operation.time_to_first_chunk")["histogram"]["dataPoints"][0]["sum"],
            0.05
        );
        let t = by_name("gen_ai.client.token.usage");
        assert_eq!(t["unit"], "{token}");
        let tp = t["histogram"]["dataPoints"].as_array().unwrap();
        let kinds: Vec<_> = tp.iter().map(|p| attrs(p)["gen_ai.token.type"]["stringValue"].clone()).collect();
        assert_eq!(kinds, ["input", "output"]);
        assert_eq!((tp[0]["sum"].as_f64(), tp[1]["sum"].as_f64()), (Some(7.0), Some(5.0)));
    }

    #[test]
    fn spans_join_the_trace_and_follow_otlp_json() {
        let f = fixture(6);
        let lines: Vec<String> = trace_lines(&export(&f)).collect();
        assert_eq!(lines.len(), 1);
        let t: Value = serde_json::from_str(&lines[0]).unwrap();
        let ss = &t["resourceSpans"][0]["scopeSpans"][0];
        assert_eq!(ss["schemaUrl"], SCHEMA_URL);
        let spans = ss["spans"].as_array().unwrap();
        assert_eq!(spans.len(), 2);
        let (ok, failed) = (&spans[0], &spans[1]);
        assert_eq!(ok["traceId"], "01".repeat(16));
        assert_eq!(ok["spanId"], "a0".repeat(8));
        assert!(ok.get("parentSpanId").is_none());
        assert_eq!(failed["parentSpanId"], "07".repeat(8));
        assert_eq!(ok["kind"], 3);
        assert_eq!(ok["name"], "chat llama-3.1-8b");
        assert_eq!(ok["startTimeUnixNano"], "1700000000000000000");
        assert_eq!(ok["endTimeUnixNano"], "1700000002000000000");
        assert!(ok.get("status").is_none());
        let a = attrs(ok);
        assert_eq!(a["gen_ai.response.id"]["stringValue"], "chatcmpl-1");
        assert_eq!(a["gen_ai.response.finish_reasons"]["arrayValue"]["values"][0]["stringValue"], "stop");
        assert_eq!(a["gen_ai.usage.output_tokens"]["intValue"], "5");
        assert_eq!(a["gen_ai.response.time_to_first_chunk"]["doubleValue"], 0.05);
        let events = ok["events"].as_array().unwrap();
        assert_eq!(events.len(), 6, "first token and 5 gaps");
        assert_eq!(events[0]["name"], "triage.first_token");
        assert_eq!(events[0]["timeUnixNano"], "1700000000050000000");
        assert_eq!(ok["droppedEventsCount"], 0);
        assert_eq!(failed["status"]["code"], 2);
        assert!(failed["status"]["message"].as_str().unwrap().contains("refused"));
        assert_eq!(attrs(failed)["error.type"]["stringValue"], "connection_refused");
        assert_eq!(failed["events"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn events_are_bounded_the_largest_gaps_kept_and_the_rest_counted() {
        let f = fixture(200);
        let e = export(&f);
        let t: Value = serde_json::from_str(&trace_lines(&e).next().unwrap()).unwrap();
        let ok = &t["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        let events = ok["events"].as_array().unwrap();
        assert_eq!(events.len(), MAX_EVENTS_PER_SPAN);
        assert_eq!(ok["droppedEventsCount"], 199 - (MAX_EVENTS_PER_SPAN - 1));
        assert_eq!(
            attrs(ok)["triage.events_dropped"]["intValue"],
            (199 - (MAX_EVENTS_PER_SPAN - 1)).to_string()
        );
        // The 300 ms gap (a stall) is among the kept, and the events are in time order.
        let stall =
            events.iter().find(|ev| attrs(ev).contains_key("triage.stall")).expect("the stall is kept");
        assert_eq!(attrs(stall)["triage.gap_index"]["intValue"], "100");
        let times: Vec<u64> =
            events.iter().map(|ev| ev["timeUnixNano"].as_str().unwrap().parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    #[test]
    fn trace_lines_are_bounded_in_spans() {
        let t = timing(3);
        let n = MAX_SPANS_PER_REQUEST + 3;
        let records: Vec<_> =
            (0..n).map(|i| RequestRecord::new(i, 0, 0, Some(200), Some(&t), None)).collect();
        let timings = vec![None; n];
        let spans: Vec<_> = (0..n).map(|i| Some(span((i % 100) as u8, None))).collect();
        let f = Fixture { records, timings, spans };
        let lines: Vec<Value> = trace_lines(&export(&f)).map(|l| serde_json::from_str(&l).unwrap()).collect();
        let counts: Vec<usize> = lines
            .iter()
            .map(|l| l["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap().len())
            .collect();
        assert_eq!(counts, [MAX_SPANS_PER_REQUEST, 3]);
    }

    #[test]
    fn a_run_with_nothing_measured_leaves_empty_metrics_out_and_escapes_strings() {
        let fault = Fault::new(FaultKind::Dns, "no such host \"x\"\n");
        let records = vec![RequestRecord::new(0, 0, 0, None, None, Some(fault))];
        let f = Fixture { records, timings: vec![None], spans: vec![Some(span(0, None))] };
        let mut e = export(&f);
        e.model = "m\"\u{1b}[2J";
        let m: Value = serde_json::from_str(&metrics_json(&e)).unwrap();
        let names: Vec<_> = m["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["gen_ai.client.operation.duration"]);
        let line = trace_lines(&e).next().unwrap();
        assert!(!line.contains('\u{1b}') && !line.contains('\n'), "{line}");
        let t: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(t["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"], "chat m\"\u{1b}[2J");
    }
}
