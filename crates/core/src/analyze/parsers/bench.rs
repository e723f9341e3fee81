//! Benchmark outputs, normalised to BRIEF.md's definitions.
//!
//! Read: `vllm bench serve` (and the older `benchmark_serving.py`, and SGLang's `bench_serving`,
//! which print the same `Serving Benchmark Result` block) as console text and as the saved JSON,
//! one line or pretty-printed; aiperf's console table (`NVIDIA AIPerf | LLM Metrics`, avg / min /
//! max / p99 / p90 / p50 / std columns; genai-perf prints the same table) and its
//! `profile_export_aiperf.json` (`"time_to_first_token": {"unit": "ms", "avg": …}`); guidellm's
//! JSON report (`benchmarks[].metrics.<metric>.successful.{mean, median, percentiles}`) and its
//! current console tables (`Request Latency Statistics`, `Server Throughput Statistics`: median
//! and p95 only).
//!
//! Not read: per-request records (aiperf's `profile_export.jsonl`, vLLM's `--save-detailed`
//! arrays, guidellm's request lists), guidellm's older "Benchmarks Stats" console layout, CSV
//! exports. A JSON result written on one line longer than the analyzer's line limit (1 MiB; only
//! with per-request arrays) is cut, and the figures after the cut are lost.
//!
//! ## Names (every tool calls something else "ITL")
//!
//! | tool says | figure here | why |
//! | --- | --- | --- |
//! | vLLM / SGLang `TTFT`, aiperf `Time to First Token`, guidellm `TTFT` | `ttft_ms.*` | same definition |
//! | vLLM / SGLang `TPOT`, aiperf `Inter Token Latency`, guidellm `ITL` | `tpot_ms.*` | per request (last − first token) / (tokens − 1) |
//! | vLLM / SGLang `ITL`, aiperf `Inter Chunk Latency` | `itl_ms.*` | every gap between token-carrying events |
//! | vLLM `E2EL`, SGLang `E2E Latency`, aiperf / guidellm `Request Latency` | `e2e_ms.*` | |
//! | guidellm `TPOT` | `guidellm_tpot_incl_ttft_ms.*` | includes TTFT: not TPOT |
//! | aiperf / guidellm time to first *output* token | `ttfo_ms.*` | first non-reasoning token |
//!
//! Statistics are suffixed `mean`, `median` (p50 included), `p90`, `p95`, `p99`, `p99.9`, `std`,
//! `min`, `max`. Counts and rates: `completed`, `failed`, `request_throughput` (req/s),
//! `output_throughput` (tok/s), `total_token_throughput`, `duration_s`, `concurrency.*`.
//! Each [`BenchFacts::notes`] says where figures are not comparable.

use super::{Cx, SectionParser};
use crate::analyze::kind::{InputKind, recognize};
use crate::analyze::report::EvidenceLine;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchFacts {
    /// `vllm`, `sglang`, `guidellm`, `aiperf`.
    pub tool: String,
    /// Canonical figure → value, e.g. `ttft_ms.mean`, `ttft_ms.p99`, `tpot_ms.median`,
    /// `itl_ms.p99`, `e2e_ms.mean`, `request_throughput`, `output_throughput`, `completed`,
    /// `failed` (names per BRIEF.md's definitions, whatever the tool called them).
    pub figures: BTreeMap<String, f64>,
    /// Where two figures are not comparable, and why.
    pub notes: Vec<String>,
    /// The lines that matter most first: p99 TTFT, mean TTFT, the result's header.
    pub evidence: Vec<EvidenceLine>,
    /// The line each figure was read from.
    pub lines: BTreeMap<String, EvidenceLine>,
    /// Which run of a sweep this is, when the tool says (guidellm's strategy: `synchronous`,
    /// `constant`, `throughput` …).
    pub label: Option<String>,
}

const NOTE_CLIENT_SIDE: &str = "benchmark latencies are measured by the client: TTFT includes the network and the server's queue, so it is larger than vLLM's server-side vllm:time_to_first_token_seconds (from arrival) and than per-request server logs (from scheduling)";
const NOTE_TPOT_ITL: &str = "tpot_ms averages each request's (last − first token) / (output tokens − 1) and then over requests; itl_ms pools every gap of every request; with mixed output lengths the two differ, so compare each only with its namesake";
const NOTE_AIPERF_ITL: &str = "aiperf's \"Inter Token Latency\" is per-request TPOT ((request latency − TTFT) / (output tokens − 1)), read here as tpot_ms; it is not vLLM bench's ITL";
const NOTE_AIPERF_ICL: &str = "aiperf's \"Inter Chunk Latency\" is the gap between streamed chunks, read here as itl_ms; a chunk may carry several tokens, so it can exceed a per-token gap";
const NOTE_GUIDELLM_ITL: &str = "guidellm's ITL is TPOT by BRIEF's definition ((last − first token) / (output tokens − 1)), read here as tpot_ms";
const NOTE_GUIDELLM_TPOT: &str = "guidellm's TPOT divides the whole request time, TTFT included, by all output tokens: kept as guidellm_tpot_incl_ttft_ms, not comparable with vLLM's TPOT";
const NOTE_GUIDELLM_CONSOLE: &str =
    "guidellm's console tables show median and p95 only; its JSON report has the mean and p99";

/// Most figures kept per run, scalars per JSON object, runs per section: bounded memory.
const MAX_FIGURES: usize = 256;
const MAX_SCALARS: usize = 128;
const MAX_DEPTH: usize = 64;
const MAX_RUNS: usize = 64;

/// A benchmark run being read.
#[derive(Default)]
struct Run {
    tool: Option<&'static str>,
    label: Option<String>,
    figures: BTreeMap<String, f64>,
    lines: BTreeMap<String, EvidenceLine>,
    notes: BTreeSet<&'static str>,
    header: Option<EvidenceLine>,
}

impl BenchFacts {
    /// The highest tail percentile read for `metric` (`ttft_ms`, `itl_ms` …): p99, else p95,
    /// else p90, with its name.
    pub fn tail(&self, metric: &str) -> Option<(f64, &'static str)> {
        ["p99", "p95", "p90"]
            .into_iter()
            .find_map(|p| self.figures.get(&format!("{metric}.{p}")).map(|v| (*v, p)))
    }

    /// The median of `metric`, else its mean, with its name.
    pub fn middle(&self, metric: &str) -> Option<(f64, &'static str)> {
        ["median", "p50", "mean"]
            .into_iter()
            .find_map(|p| self.figures.get(&format!("{metric}.{p}")).map(|v| (*v, p)))
    }

    /// The line a figure was read from, else the run's first evidence line.
    pub fn line(&self, figure: &str) -> Option<EvidenceLine> {
        self.lines.get(figure).or(self.evidence.first()).cloned()
    }

    /// The request rate the run asked for: its own figure, or guidellm's `constant@20.00` /
    /// `poisson@20.00` strategy label.
    pub fn requested_rate(&self) -> Option<f64> {
        self.figures.get("request_rate").copied().or_else(|| {
            let label = self.label.as_deref()?;
            let (_, rate) = label.split_once('@')?;
            rate.trim().parse().ok()
        })
    }
}

impl Run {
    /// The first value read for a name wins (`P50 TTFT` and `Median TTFT` are the same figure).
    fn put(&mut self, name: String, value: f64, evidence: &EvidenceLine) {
        if !value.is_finite() || self.figures.len() >= MAX_FIGURES || self.figures.contains_key(&name) {
            return;
        }
        self.lines.insert(name.clone(), evidence.clone());
        self.figures.insert(name, value);
    }

    fn is_empty(&self) -> bool {
        self.figures.is_empty()
    }

    fn finish(mut self) -> Option<BenchFacts> {
        if self.figures.is_empty() {
            return None;
        }
        let has = |prefix: &str| self.figures.keys().any(|k| k.starts_with(prefix));
        if has("ttft_ms.") || has("e2e_ms.") {
            self.notes.insert(NOTE_CLIENT_SIDE);
        }
        if has("tpot_ms.") && has("itl_ms.") {
            self.notes.insert(NOTE_TPOT_ITL);
        }
        let mut evidence: Vec<EvidenceLine> = Vec::new();
        let first =
            ["ttft_ms.p99", "ttft_ms.mean", "ttft_ms.median"].iter().filter_map(|k| self.lines.get(*k));
        for e in first.chain(self.header.iter()).chain(self.lines.values()) {
            if evidence.len() >= 8 {
                break;
            }
            if !evidence.iter().any(|x| x.line == e.line && x.input == e.input) {
                evidence.push(e.clone());
            }
        }
        Some(BenchFacts {
            tool: self.tool.unwrap_or("vllm").to_owned(),
            figures: self.figures,
            notes: self.notes.into_iter().map(str::to_owned).collect(),
            evidence,
            lines: self.lines,
            label: self.label,
        })
    }
}

/// Milliseconds per unit of a latency (`ms`, `s`, `sec`, `us`, `ns`).
fn unit_ms(unit: &str) -> Option<f64> {
    match unit.trim().to_ascii_lowercase().as_str() {
        "ms" | "msec" | "milliseconds" => Some(1.0),
        "s" | "sec" | "secs" | "seconds" => Some(1e3),
        "us" | "µs" | "μs" | "usec" => Some(1e-3),
        "ns" | "nsec" => Some(1e-6),
        _ => None,
    }
}

/// A statistic's canonical suffix: `avg`/`Mean` → `mean`, `p50`/`Mdn` → `median`, `P99` → `p99`,
/// `std_dev` → `std`.
fn stat_name(s: &str) -> Option<String> {
    let s = s.trim().to_ascii_lowercase();
    Some(match s.as_str() {
        "mean" | "avg" | "average" => "mean".to_owned(),
        "median" | "mdn" | "p50" => "median".to_owned(),
        "std" | "std_dev" | "stddev" => "std".to_owned(),
        "min" | "minimum" => "min".to_owned(),
        "max" | "maximum" => "max".to_owned(),
        // guidellm: p001 → p0.1, p05 → p5, p999 → p99.9.
        "p001" => "p0.1".to_owned(),
        "p999" => "p99.9".to_owned(),
        _ => {
            let n = s.strip_prefix('p')?;
            let x: f64 = n.parse().ok()?;
            if !(0.0..=100.0).contains(&x) {
                return None;
            }
            let n = if n.len() == 2 && n.starts_with('0') { &n[1..] } else { n };
            format!("p{n}")
        }
    })
}

// ---------------------------------------------------------------------------------------------
// vLLM / SGLang console: `Mean TTFT (ms):     23.77`

/// `label:   value` with a number as the whole value.
fn console_pair(t: &str) -> Option<(&str, f64)> {
    let colon = t.rfind(':')?;
    let (label, value) = (t[..colon].trim(), t[colon + 1..].trim());
    if label.is_empty() {
        return None;
    }
    let v: f64 = value.replace(',', "").parse().ok()?;
    Some((label, v))
}

/// `Label (unit):   value` where the value is a word or two (`Backend: sglang`, `Max request
/// concurrency: not set`): the shape of every line inside a result block.
fn console_label(t: &str) -> bool {
    let Some(colon) = t.find(':') else { return false };
    let (label, value) = (&t[..colon], t[colon + 1..].trim());
    !label.is_empty()
        && label.len() <= 60
        && label.starts_with(|c: char| c.is_ascii_alphabetic())
        && label.chars().all(|c| c.is_ascii_alphanumeric() || " ()/.-_".contains(c))
        && !value.is_empty()
        && value.split_whitespace().count() <= 2
}

/// The canonical figure for a console label, and the factor to its unit.
fn console_figure(label: &str) -> Option<(String, f64)> {
    let l = label.to_ascii_lowercase();
    let plain = match l.as_str() {
        "successful requests" => "completed",
        "failed requests" => "failed",
        "benchmark duration (s)" => "duration_s",
        "total input tokens" => "total_input_tokens",
        "total generated tokens" => "total_output_tokens",
        "request throughput (req/s)" | "request throughput (req/sec)" => "request_throughput",
        "request goodput (req/s)" => "request_goodput",
        "output token throughput (tok/s)" => "output_throughput",
        "input token throughput (tok/s)" => "input_throughput",
        "total token throughput (tok/s)" => "total_token_throughput",
        "peak output token throughput (tok/s)" => "peak_output_throughput",
        "peak concurrent requests" => "peak_concurrency",
        "maximum request concurrency" | "max request concurrency" => "max_concurrency",
        "concurrency" => "concurrency.mean",
        "request rate configured (rps)" | "traffic request rate" | "request rate" => "request_rate",
        _ => "",
    };
    if !plain.is_empty() {
        return Some((plain.to_owned(), 1.0));
    }
    // trtllm-bench's breakdowns: `[TTFT] P99    : 6120.4410`, in milliseconds.
    if let Some(rest) = l.strip_prefix('[')
        && let Some((metric, stat)) = rest.split_once(']')
    {
        let metric = match metric {
            "ttft" => "ttft_ms",
            "tpot" => "tpot_ms",
            "latency" => "e2e_ms",
            _ => return None,
        };
        return Some((format!("{metric}.{}", stat_name(stat)?), 1.0));
    }
    // `<stat> <metric> (<unit>)`
    let (head, unit) = match l.rfind('(') {
        Some(i) => (l[..i].trim(), l[i + 1..].trim_end_matches(')')),
        None => (l.as_str(), "ms"),
    };
    let scale = unit_ms(unit)?;
    let (stat, metric) = head.split_once(' ')?;
    let metric = match metric.trim() {
        "ttft" => "ttft_ms",
        "tpot" => "tpot_ms",
        "itl" => "itl_ms",
        "e2el" | "e2e latency" | "e2e" => "e2e_ms",
        _ => return None,
    };
    Some((format!("{metric}.{}", stat_name(stat)?), scale))
}

// ---------------------------------------------------------------------------------------------
// aiperf / genai-perf: rich tables and the JSON export.

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Latency statistics, converted to ms.
    Latency,
    /// A single value (throughput, count): its `avg`.
    Value,
    /// Seconds.
    Duration,
}

/// aiperf's metric (console header or JSON tag) → canonical base name.
fn aiperf_metric(name: &str) -> Option<(&'static str, Kind, Option<&'static str>)> {
    let n = name.trim().to_ascii_lowercase().replace('_', " ");
    Some(match n.as_str() {
        "time to first token" => ("ttft_ms", Kind::Latency, None),
        "time to first output token" => ("ttfo_ms", Kind::Latency, None),
        "inter token latency" => ("tpot_ms", Kind::Latency, Some(NOTE_AIPERF_ITL)),
        "inter chunk latency" => ("itl_ms", Kind::Latency, Some(NOTE_AIPERF_ICL)),
        "request latency" => ("e2e_ms", Kind::Latency, None),
        "request throughput" => ("request_throughput", Kind::Value, None),
        "output token throughput" => ("output_throughput", Kind::Value, None),
        "request count" => ("completed", Kind::Value, None),
        "error request count" => ("failed", Kind::Value, None),
        "benchmark duration" => ("duration_s", Kind::Duration, None),
        _ => return None,
    })
}

/// Put one aiperf statistic.
fn aiperf_put(run: &mut Run, metric: &str, unit: Option<&str>, stat: &str, value: f64, e: &EvidenceLine) {
    let Some((base, kind, note)) = aiperf_metric(metric) else { return };
    let Some(stat) = stat_name(stat) else { return };
    let (name, value) = match kind {
        Kind::Latency => {
            let Some(scale) = unit.map_or(Some(1.0), unit_ms) else { return };
            (format!("{base}.{stat}"), value * scale)
        }
        Kind::Value if stat == "mean" => (base.to_owned(), value),
        Kind::Duration if stat == "mean" => {
            let Some(scale) = unit.map_or(Some(1e3), unit_ms) else { return };
            (base.to_owned(), value * scale / 1e3)
        }
        _ => return,
    };
    run.tool.get_or_insert("aiperf");
    if let Some(note) = note {
        run.notes.insert(note);
    }
    run.put(name, value, e);
}

/// Cells of a table row drawn with box characters or pipes (edges dropped).
fn cells(t: &str) -> Vec<&str> {
    let mut v: Vec<&str> = t.split(['┃', '│', '|', '║']).map(str::trim).collect();
    if v.first() == Some(&"") {
        v.remove(0);
    }
    if v.last() == Some(&"") {
        v.pop();
    }
    v
}

fn is_box_rule(t: &str) -> bool {
    t.chars().all(|c| "┏┓┗┛┡┩┠┨┣┫┳┻╇╋━─┌┐└┘├┤┬┴┼═╞╡╪╒╕╘╛ ".contains(c))
}

/// `Time to First Token (ms)` → (`Time to First Token`, `ms`).
fn label_unit(label: &str) -> (&str, Option<&str>) {
    match (label.rfind('('), label.ends_with(')')) {
        (Some(i), true) => (label[..i].trim(), Some(&label[i + 1..label.len() - 1])),
        _ => (label.trim(), None),
    }
}

// ---------------------------------------------------------------------------------------------
// guidellm console tables (`|===|`, three header rows, `|---|`, one row per benchmark).

#[derive(Clone, Copy, PartialEq, Default)]
enum Phase {
    #[default]
    None,
    /// After a table's title, before its top rule.
    Title,
    Header,
    Values,
}

#[derive(Default)]
struct Pipes {
    phase: Phase,
    headers: Vec<Vec<String>>,
    /// (group, name, stat) per column once the header is complete.
    columns: Vec<(String, String, String)>,
    row: usize,
    /// The table row being read, which a terminal may have wrapped over several lines: its
    /// first line and text so far.
    wrapped: Option<(usize, String)>,
    /// How many `|` every row of the current table has (its first rule's; guidellm keeps the
    /// count in merged cells with `|||`); 0 before the first rule is complete.
    bars: usize,
}

fn bars(t: &str) -> usize {
    t.bytes().filter(|b| *b == b'|').count()
}

/// A table rule (`|====|===|`, `|----|`), or a piece of one.
fn rule_chars(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| matches!(b, b'|' | b'=' | b'-'))
}

/// Longest wrapped table row kept; past it the row is dropped.
const MAX_WRAPPED: usize = 16 * 1024;

impl Pipes {
    /// Does `t` continue the pending `row` (a wrapped line) rather than start a new one? Before
    /// the table's first rule is complete, only more rule characters do; after, whatever comes
    /// until the row has all its `|`.
    fn continues(&self, row: &str, t: &str) -> bool {
        if self.bars == 0 { rule_chars(row) && rule_chars(t) } else { bars(row) < self.bars }
    }
}

/// guidellm column → canonical figure, factor and note.
fn guidellm_column(group: &str, name: &str, stat: &str) -> Option<(String, f64, Option<&'static str>)> {
    let stat = stat_name(stat)?;
    let (base, scale, note) = match (group, name) {
        ("Request Latency", "Sec") => ("e2e_ms", 1e3, None),
        ("TTFT", "ms") => ("ttft_ms", 1.0, None),
        ("TTFOT", "ms") => ("ttfo_ms", 1.0, None),
        ("ITL", "ms") => ("tpot_ms", 1.0, Some(NOTE_GUIDELLM_ITL)),
        ("TPOT", "ms") => ("guidellm_tpot_incl_ttft_ms", 1.0, Some(NOTE_GUIDELLM_TPOT)),
        ("Requests", "Concurrency") => ("concurrency", 1.0, None),
        ("Requests", "Per Sec") if stat == "mean" => return Some(("request_throughput".into(), 1.0, None)),
        ("Output Tokens", "Per Sec") if stat == "mean" => {
            return Some(("output_throughput".into(), 1.0, None));
        }
        ("Input Tokens", "Per Sec") if stat == "mean" => return Some(("input_throughput".into(), 1.0, None)),
        ("Total Tokens", "Per Sec") if stat == "mean" => {
            return Some(("total_token_throughput".into(), 1.0, None));
        }
        _ => return None,
    };
    Some((format!("{base}.{stat}"), scale, note))
}

/// guidellm JSON metric → canonical base, factor, the status whose statistics to read, note.
fn guidellm_metric(name: &str) -> Option<(&'static str, f64, &'static str, Option<&'static str>)> {
    Some(match name {
        "time_to_first_token_ms" => ("ttft_ms", 1.0, "successful", None),
        "time_to_first_output_token_ms" => ("ttfo_ms", 1.0, "successful", None),
        "inter_token_latency_ms" => ("tpot_ms", 1.0, "successful", Some(NOTE_GUIDELLM_ITL)),
        "time_per_output_token_ms" => {
            ("guidellm_tpot_incl_ttft_ms", 1.0, "successful", Some(NOTE_GUIDELLM_TPOT))
        }
        "request_latency" => ("e2e_ms", 1e3, "successful", None),
        "request_concurrency" => ("concurrency", 1.0, "total", None),
        "requests_per_second" => ("request_throughput", 1.0, "total", None),
        "output_tokens_per_second" => ("output_throughput", 1.0, "total", None),
        "tokens_per_second" => ("total_token_throughput", 1.0, "total", None),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Streaming JSON: objects are collected as they close, whatever the line breaks.

#[derive(Clone, Debug, PartialEq)]
enum Scalar {
    Num(f64),
    Str(String),
}

#[derive(Debug, Default)]
struct Frame {
    array: bool,
    /// The key this container sits under (`""` at the root or inside an array).
    label: String,
    scalars: Vec<(String, Scalar, EvidenceLine)>,
}

impl Frame {
    fn num(&self, key: &str) -> Option<f64> {
        self.scalars.iter().find(|(k, _, _)| k == key).and_then(|(_, v, _)| match v {
            Scalar::Num(x) => Some(*x),
            Scalar::Str(s) => s.parse().ok(),
        })
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.scalars.iter().find(|(k, _, _)| k == key).and_then(|(_, v, _)| match v {
            Scalar::Str(s) => Some(s.as_str()),
            Scalar::Num(_) => None,
        })
    }
}

/// A closed object and where it sat.
struct Closed {
    frame: Frame,
    /// Labels of the enclosing containers, outermost first.
    ancestors: Vec<String>,
    /// The enclosing container is an array.
    in_array: bool,
}

#[derive(Default)]
struct Json {
    frames: Vec<Frame>,
    /// Containers opened beyond `MAX_DEPTH` (counted, not kept).
    overflow: usize,
    key: Option<String>,
}

impl Json {
    fn value(&mut self, v: Scalar, e: &EvidenceLine) {
        if self.frames.is_empty() {
            // The section began inside an object (its `{` went to another section): read on.
            self.frames.push(Frame::default());
        }
        let key = self.key.take();
        let top = self.frames.last_mut().expect("pushed above");
        if let (false, Some(k)) = (top.array, key)
            && top.scalars.len() < MAX_SCALARS
        {
            top.scalars.push((k, v, e.clone()));
        }
    }

    fn open(&mut self, array: bool) {
        let label = self.key.take().unwrap_or_default();
        if self.frames.len() >= MAX_DEPTH {
            self.overflow += 1;
        } else {
            self.frames.push(Frame { array, label, scalars: Vec::new() });
        }
    }

    fn close(&mut self, out: &mut Vec<Closed>) {
        self.key = None;
        if self.overflow > 0 {
            self.overflow -= 1;
            return;
        }
        if let Some(frame) = self.frames.pop() {
            out.push(Closed {
                ancestors: self.frames.iter().map(|f| f.label.clone()).collect(),
                in_array: self.frames.last().is_some_and(|f| f.array),
                frame,
            });
        }
    }

    /// Read one line; objects that closed on it are appended to `out`.
    fn feed(&mut self, line: &str, e: &EvidenceLine, out: &mut Vec<Closed>) {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'{' => self.open(false),
                b'[' => self.open(true),
                b'}' | b']' => self.close(out),
                b'"' => {
                    let (s, end) = json_string(line, i);
                    let mut j = end;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if j < b.len() && b[j] == b':' {
                        self.key = Some(s);
                        i = j + 1;
                    } else {
                        self.value(Scalar::Str(s), e);
                        i = end;
                    }
                    continue;
                }
                b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'N' | b'I' => {
                    let end = line[i..].find([',', '}', ']', ' ', '\t']).map_or(b.len(), |e| i + e);
                    let word = &line[i..end];
                    match word.parse::<f64>() {
                        Ok(x) => self.value(Scalar::Num(x), e),
                        // true / false / null: a value, nothing to keep.
                        Err(_) => self.key = None,
                    }
                    i = end.max(i + 1);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Close whatever is still open (a truncated or cut JSON).
    fn finish(&mut self, out: &mut Vec<Closed>) {
        self.overflow = 0;
        while !self.frames.is_empty() {
            self.close(out);
        }
    }
}

/// A JSON string at `start` (the quote): decoded (simple escapes) and the index after it.
fn json_string(line: &str, start: usize) -> (String, usize) {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = start + 1;
    let mut run = i;
    while i < b.len() {
        match b[i] {
            b'"' => {
                out.push_str(&line[run..i]);
                return (out, i + 1);
            }
            b'\\' if i + 1 < b.len() && b[i + 1].is_ascii() => {
                out.push_str(&line[run..i]);
                out.push(match b[i + 1] {
                    b'n' => '\n',
                    b't' => '\t',
                    c => char::from(c),
                });
                i += 2;
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&line[run.min(b.len())..]);
    (out, b.len())
}

/// `mean_ttft_ms`, `p99_e2el_ms`, `median_e2e_latency_ms` → `ttft_ms.mean` …
fn vllm_json_key(k: &str) -> Option<String> {
    let body = k.strip_suffix("_ms")?;
    let (stat, metric) = body.split_once('_')?;
    let metric = match metric {
        "ttft" => "ttft_ms",
        "tpot" => "tpot_ms",
        "itl" => "itl_ms",
        "e2el" | "e2e_latency" => "e2e_ms",
        _ => return None,
    };
    Some(format!("{metric}.{}", stat_name(stat)?))
}

// ---------------------------------------------------------------------------------------------
// The parser.

/// Parser state for one benchmark section.
#[derive(Default)]
pub struct BenchParser {
    run: Run,
    json: Json,
    /// The last line read was JSON.
    json_mode: bool,
    /// Inside a `Serving Benchmark Result` block (until its closing `====` rule).
    console: bool,
    /// aiperf's statistic columns once its header row was read.
    boxes: Option<Vec<String>>,
    pipes: Pipes,
    /// guidellm console rows, one run per benchmark row, merged across tables.
    guidellm: Vec<Run>,
    /// Lines that were none of the above (progress bars, preambles).
    ignored: usize,
    first_ignored: Option<usize>,
}

impl BenchParser {
    fn flush(&mut self, cx: &mut Cx<'_>) {
        let run = std::mem::take(&mut self.run);
        for run in std::iter::once(run).chain(self.guidellm.drain(..)) {
            if let Some(b) = run.finish()
                && cx.facts.bench.len() < MAX_RUNS * 16
            {
                cx.facts.bench.push(b);
            }
        }
    }

    /// A new result begins (a header line): close the previous one if it holds anything.
    fn begin(&mut self, cx: &mut Cx<'_>, tool: &'static str, e: EvidenceLine) {
        if !self.run.is_empty() {
            self.flush(cx);
        }
        self.run.tool = Some(tool);
        self.run.header = Some(e);
    }

    fn closed(&mut self, cx: &mut Cx<'_>, c: Closed) {
        let f = &c.frame;
        let parent = c.ancestors.last().map_or("", String::as_str);
        let grandparent = c.ancestors.len().checked_sub(2).map_or("", |i| c.ancestors[i].as_str());
        // vLLM / SGLang result: flat `mean_ttft_ms` … keys.
        if f.scalars.iter().any(|(k, _, _)| vllm_json_key(k).is_some()) {
            let sglang = f.scalars.iter().any(|(k, _, _)| k.contains("e2e_latency"));
            self.run.tool.get_or_insert(if sglang { "sglang" } else { "vllm" });
            for (k, v, e) in &f.scalars {
                let Scalar::Num(x) = v else { continue };
                let name = match k.as_str() {
                    "completed"
                    | "failed"
                    | "request_throughput"
                    | "request_goodput"
                    | "output_throughput"
                    | "total_token_throughput"
                    | "total_input_tokens"
                    | "total_output_tokens"
                    | "max_concurrency"
                    | "num_prompts" => k.clone(),
                    "duration" => "duration_s".to_owned(),
                    "concurrency" => "concurrency.mean".to_owned(),
                    "max_output_tokens_per_s" => "peak_output_throughput".to_owned(),
                    "max_concurrent_requests" => "peak_concurrency".to_owned(),
                    _ => match vllm_json_key(k) {
                        Some(n) => n,
                        None => continue,
                    },
                };
                self.run.put(name, *x, e);
            }
            if let (Some(n), Some(done), None) = (f.num("num_prompts"), f.num("completed"), f.num("failed"))
                && n >= done
                && let Some((_, _, e)) = f.scalars.iter().find(|(k, _, _)| k == "completed")
            {
                let e = e.clone();
                self.run.put("failed".to_owned(), n - done, &e);
            }
        }
        // aiperf / genai-perf export: `"time_to_first_token": {"unit": "ms", "avg": …, "p99": …}`.
        if aiperf_metric(&f.label).is_some() && f.scalars.iter().any(|(k, _, _)| k == "avg" || k == "p99") {
            let unit = f.text("unit").map(str::to_owned);
            for (k, v, e) in &f.scalars {
                if let Scalar::Num(x) = v {
                    aiperf_put(&mut self.run, &f.label, unit.as_deref(), k, *x, e);
                }
            }
        }
        // guidellm report.
        let guidellm_stats =
            |status: &str, metric: &str| guidellm_metric(metric).filter(|(_, _, want, _)| *want == status);
        let stats = if f.label == "percentiles" {
            guidellm_stats(parent, grandparent)
        } else {
            guidellm_stats(&f.label, parent)
        };
        if let Some((base, scale, _, note)) = stats {
            for (k, v, e) in &f.scalars {
                let (Scalar::Num(x), Some(stat)) = (v, stat_name(k)) else { continue };
                // The percentiles' p50 is the median already read from the summary.
                if f.label == "percentiles" && stat == "median" {
                    continue;
                }
                let name = match base {
                    "request_throughput" | "output_throughput" | "total_token_throughput"
                        if stat == "mean" =>
                    {
                        base.to_owned()
                    }
                    "request_throughput" | "output_throughput" | "total_token_throughput" => continue,
                    _ => format!("{base}.{stat}"),
                };
                self.run.put(name, x * scale, e);
            }
            self.run.tool = Some("guidellm");
            if let Some(n) = note {
                self.run.notes.insert(n);
            }
        }
        if f.label == "request_totals" {
            for (key, name) in
                [("successful", "completed"), ("errored", "failed"), ("incomplete", "incomplete")]
            {
                if let (Some(x), Some((_, _, e))) = (f.num(key), f.scalars.iter().find(|(k, _, _)| k == key))
                {
                    let e = e.clone();
                    self.run.put(name.to_owned(), x, &e);
                }
            }
        }
        if f.label == "strategy"
            && let Some(kind) = f.text("type_")
        {
            self.run.label.get_or_insert_with(|| kind.to_owned());
        }
        // guidellm: one element of `benchmarks` closed — one run.
        if c.in_array && parent == "benchmarks" && !self.run.is_empty() {
            self.run.tool = Some("guidellm");
            self.flush(cx);
        }
    }

    fn json_line(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) {
        let e = cx.evidence(no, t);
        let mut closed = Vec::new();
        self.json.feed(t, &e, &mut closed);
        for c in closed {
            self.closed(cx, c);
        }
    }

    fn pipe_line(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) {
        let row = cells(t);
        let rule = |c: char| row.iter().all(|cell| !cell.is_empty() && cell.chars().all(|x| x == c));
        let p = &mut self.pipes;
        if rule('=') {
            p.phase = match p.phase {
                Phase::Title => Phase::Header,
                _ => Phase::None,
            };
            p.bars = if p.phase == Phase::Header { bars(t) } else { 0 };
            p.headers.clear();
            return;
        }
        if rule('-') && p.phase == Phase::Header {
            // Header complete: carry merged cells (left blank) from the left, within a group.
            let width = p.headers.iter().map(Vec::len).max().unwrap_or(0);
            let at =
                |r: usize, j: usize| p.headers.get(r).and_then(|h| h.get(j)).cloned().unwrap_or_default();
            let (mut group, mut name) = (String::new(), String::new());
            p.columns = (0..width)
                .map(|j| {
                    if !at(0, j).is_empty() {
                        group = at(0, j);
                        name.clear();
                    }
                    if !at(1, j).is_empty() {
                        name = at(1, j);
                    }
                    (group.clone(), name.clone(), at(2, j))
                })
                .collect();
            p.phase = Phase::Values;
            p.row = 0;
            return;
        }
        match p.phase {
            Phase::Header => p.headers.push(row.iter().map(|c| (*c).to_owned()).collect()),
            Phase::Values => {
                let e = cx.evidence(no, t);
                let index = p.row;
                p.row += 1;
                if index >= MAX_RUNS {
                    return;
                }
                while self.guidellm.len() <= index {
                    self.guidellm.push(Run { tool: Some("guidellm"), ..Run::default() });
                }
                let run = &mut self.guidellm[index];
                if let Some(label) = row.first().filter(|l| !l.is_empty()) {
                    run.label.get_or_insert_with(|| (*label).to_owned());
                }
                run.notes.insert(NOTE_GUIDELLM_CONSOLE);
                for (cell, (group, name, stat)) in row.iter().zip(&self.pipes.columns) {
                    let Ok(x) = cell.replace(',', "").parse::<f64>() else { continue };
                    if let Some((fig, scale, note)) = guidellm_column(group, name, stat) {
                        run.put(fig, x * scale, &e);
                        if let Some(n) = note {
                            run.notes.insert(n);
                        }
                    }
                }
            }
            Phase::None | Phase::Title => self.note_ignored(no),
        }
    }

    fn note_ignored(&mut self, no: usize) {
        self.ignored += 1;
        self.first_ignored.get_or_insert(no);
    }
}

/// guidellm's console table titles.
const GUIDELLM_TITLES: &[&str] =
    &["Statistics (Completed Requests)", "Statistics (All Requests)", "Run Summary Info"];

impl SectionParser for BenchParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim();
        if t.is_empty() {
            return false;
        }
        // Pretty JSON keys such as `"p90_ttft_ms"` would otherwise read as a request log; a
        // client's settings.json that follows must still open its own section.
        if self.json_mode || !self.json.frames.is_empty() {
            let shaped = t.starts_with(['"', '}', ']']) || t == "{" || t == "[";
            return shaped && !matches!(recognize(t), Some(InputKind::ClientConfig | InputKind::SseStream));
        }
        // The rest of a table row a terminal wrapped.
        if let Some((_, row)) = &self.pipes.wrapped
            && self.pipes.continues(row, t)
        {
            return true;
        }
        // guidellm's `|====|` rules look like nvidia-smi's table.
        if self.pipes.phase != Phase::None && t.starts_with('|') {
            return true;
        }
        // `Backend: sglang` inside the result block would otherwise open an SGLang section.
        self.console && console_label(t)
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if let Some((first, mut row)) = self.pipes.wrapped.take() {
            if self.pipes.continues(&row, t) {
                row.push_str(t);
                if self.pipes.bars > 0 && bars(&row) >= self.pipes.bars {
                    self.pipe_line(cx, first, &row);
                } else if row.len() <= MAX_WRAPPED {
                    self.pipes.wrapped = Some((first, row));
                }
                return;
            }
            self.pipe_line(cx, first, &row);
        }
        let json_shaped = t.starts_with(['{', '"']) || (self.json_mode && t.starts_with(['}', ']', '[']));
        if json_shaped || !self.json.frames.is_empty() && !t.starts_with('|') && console_pair(t).is_none() {
            self.json_mode = true;
            self.json_line(cx, no, t);
            return;
        }
        self.json_mode = false;
        let header = |cx: &Cx<'_>| cx.evidence(no, t);
        if t.contains("Serving Benchmark Result") {
            let e = header(cx);
            self.begin(cx, "vllm", e);
            self.console = true;
            return;
        }
        if t.contains("AIPerf |") || t.contains("GenAI-Perf |") {
            let e = header(cx);
            self.begin(cx, "aiperf", e);
            return;
        }
        if GUIDELLM_TITLES.iter().any(|g| t.contains(g)) {
            self.pipes.phase = Phase::Title;
            return;
        }
        if t.starts_with('|') && (self.pipes.phase != Phase::None) {
            // A row is read once all its `|` have come: a terminal may have wrapped it.
            if self.pipes.bars > 0 && bars(t) >= self.pipes.bars {
                self.pipe_line(cx, no, t);
            } else {
                self.pipes.wrapped = Some((no, t.to_owned()));
            }
            return;
        }
        if t.starts_with(['┃', '│', '┏', '┡', '└', '┗', '├', '╇', '━', '─', '║', '╒', '╞', '╘'])
        {
            if is_box_rule(t) {
                return;
            }
            let row = cells(t);
            let is_header = row.first().is_some_and(|c| c.eq_ignore_ascii_case("metric"))
                && row
                    .iter()
                    .any(|c| matches!(c.to_ascii_lowercase().as_str(), "avg" | "p99" | "p50" | "max"));
            if is_header {
                self.boxes = Some(row[1..].iter().map(|c| c.to_ascii_lowercase()).collect());
                self.run.tool.get_or_insert("aiperf");
                return;
            }
            if let (Some(cols), Some(label)) = (&self.boxes, row.first()) {
                let (name, unit) = label_unit(label);
                let e = cx.evidence(no, t);
                let cols = cols.clone();
                for (cell, stat) in row[1..].iter().zip(&cols) {
                    if let Ok(x) = cell.replace(',', "").parse::<f64>() {
                        aiperf_put(&mut self.run, name, unit, stat, x, &e);
                    }
                }
            }
            return;
        }
        // Rules and section titles of the console block: `-----Time to First Token-----`, `====`.
        if t.starts_with("---") || t.starts_with("===") {
            if t.bytes().all(|b| b == b'=') {
                self.console = false;
            }
            return;
        }
        if let Some((label, x)) = console_pair(t) {
            if let Some((name, scale)) = console_figure(label) {
                let e = cx.evidence(no, t);
                self.run.put(name, x * scale, &e);
                return;
            }
            if label.eq_ignore_ascii_case("Total generated tokens (retokenized)") {
                self.run.tool = Some("sglang");
                return;
            }
        }
        if self.console && console_label(t) {
            // Only SGLang's bench_serving prints the backend; other labels (`Traffic request
            // rate: inf`, `Max request concurrency: not set`) are settings, not figures.
            if t.starts_with("Backend:") {
                self.run.tool = Some("sglang");
            }
            return;
        }
        // `Backend: sglang`, `Traffic request rate: inf`, progress bars, log lines: not figures.
        self.note_ignored(no);
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        if let Some((first, row)) = self.pipes.wrapped.take() {
            self.pipe_line(cx, first, &row);
        }
        let mut closed = Vec::new();
        self.json.finish(&mut closed);
        for c in closed {
            self.closed(cx, c);
        }
        self.flush(cx);
        if let Some(first) = self.first_ignored {
            let n = self.ignored;
            cx.issue_in(
                first,
                format!("{n} line(s) of this benchmark section are not benchmark figures and were skipped"),
                format!("本压测片段中有 {n} 行不是压测指标，已跳过"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze;
    use crate::analyze::testutil::{fixture, run};

    const VLLM_TXT: &str = fixture!("bench/vllm_bench_serve.txt");
    const VLLM_JSON: &str = fixture!("bench/vllm_bench_serve.json");
    const VLLM_PRETTY: &str = fixture!("bench/vllm_bench_serve_pretty.json");
    const SGLANG_TXT: &str = fixture!("bench/sglang_bench_serving.txt");
    const AIPERF_TXT: &str = fixture!("bench/aiperf_console.txt");
    const AIPERF_JSON: &str = fixture!("bench/profile_export_aiperf.json");
    const GUIDELLM_JSON: &str = fixture!("bench/guidellm_benchmarks.json");
    const GUIDELLM_TXT: &str = fixture!("bench/guidellm_console.txt");

    fn fig(b: &BenchFacts, name: &str) -> f64 {
        *b.figures.get(name).unwrap_or_else(|| panic!("no {name} in {:?}", b.figures))
    }

    #[test]
    fn trtllm_bench_report() {
        let (b, _) = run(
            "bench",
            concat!(
                "===========================================================\n",
                "= PERFORMANCE OVERVIEW\n",
                "===========================================================\n",
                "Request Throughput (req/sec):                     12.4812\n",
                "[TTFT] AVERAGE: 812.2210\n",
                "[TTFT] P99    : 6120.4410\n",
                "[TPOT] P99    : 41.8820\n",
            ),
        )
        .take(|f| f.bench);
        let b = &b[0];
        assert_eq!(b.figures.get("request_throughput"), Some(&12.4812));
        assert_eq!(b.figures.get("ttft_ms.p99"), Some(&6120.441));
        assert_eq!(b.figures.get("ttft_ms.mean"), Some(&812.221));
        assert_eq!(b.figures.get("tpot_ms.p99"), Some(&41.882));
    }

    #[test]
    fn vllm_console() {
        let (b, sections) = run("bench", VLLM_TXT).take(|f| f.bench);
        let kinds: Vec<_> = sections.iter().map(|s| s.kind).collect();
        assert!(kinds.iter().all(|k| *k == InputKind::BenchOutput), "{sections:?}");
        assert_eq!(b.len(), 1);
        let b = &b[0];
        assert_eq!(b.tool, "vllm");
        assert_eq!(fig(b, "completed"), 1000.0);
        assert_eq!(fig(b, "failed"), 0.0);
        assert_eq!(fig(b, "request_throughput"), 22.74);
        assert_eq!(fig(b, "output_throughput"), 2862.61);
        assert_eq!(fig(b, "ttft_ms.mean"), 1509.36);
        assert_eq!(fig(b, "ttft_ms.median"), 1459.52);
        assert_eq!(fig(b, "ttft_ms.p99"), 3137.85);
        assert_eq!(fig(b, "tpot_ms.p99"), 132.52);
        assert_eq!(fig(b, "itl_ms.p99"), 421.73);
        assert_eq!(fig(b, "e2e_ms.mean"), 14813.97);
        assert!(b.evidence[0].text.starts_with("P99 TTFT (ms):"), "{:?}", b.evidence);
        assert!(b.notes.iter().any(|n| n.contains("pools every gap")));
    }

    #[test]
    fn vllm_json_one_line_and_pretty() {
        let (b, sections) = run("bench", VLLM_JSON).take(|f| f.bench);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        let one = &b[0];
        assert_eq!(one.tool, "vllm");
        assert_eq!(fig(one, "ttft_ms.mean"), 1509.36);
        assert_eq!(fig(one, "ttft_ms.p99"), 3137.85);
        assert_eq!(fig(one, "ttft_ms.std"), 702.1);
        assert_eq!(fig(one, "e2e_ms.p99"), 20012.4);
        assert_eq!(fig(one, "duration_s"), 43.97);
        assert_eq!(fig(one, "failed"), 4.0);
        let (p, sections) = run("bench", VLLM_PRETTY).take(|f| f.bench);
        // The opening `{` (and keys before the first benchmark word) are handed to the section
        // that follows: one section from line 1.
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert_eq!((sections[0].kind, sections[0].lines[0]), (InputKind::BenchOutput, 1));
        assert!(sections.iter().all(|s| s.kind != InputKind::RequestLog), "{sections:?}");
        assert_eq!(p.len(), 1);
        for (k, v) in &one.figures {
            if k != "failed" && k != "num_prompts" {
                assert_eq!(p[0].figures.get(k), Some(v), "{k}");
            }
        }
        assert_eq!(p[0].lines["ttft_ms.p99"].text, "\"p99_ttft_ms\": 3137.85,");
    }

    #[test]
    fn sglang_console() {
        let (b, _) = run("bench", SGLANG_TXT).take(|f| f.bench);
        let b = &b[0];
        assert_eq!(b.tool, "sglang");
        assert_eq!(fig(b, "e2e_ms.mean"), 9011.41);
        assert_eq!(fig(b, "e2e_ms.median"), 8702.35);
        assert_eq!(fig(b, "itl_ms.p95"), 41.77);
        assert_eq!(fig(b, "itl_ms.max"), 1980.65);
        assert_eq!(fig(b, "concurrency.mean"), 181.37);
    }

    #[test]
    fn aiperf_console_and_json() {
        let (b, sections) = run("bench", AIPERF_TXT).take(|f| f.bench);
        assert_eq!(sections.len(), 1, "{sections:?}");
        let b = &b[0];
        assert_eq!(b.tool, "aiperf");
        assert_eq!(fig(b, "ttft_ms.mean"), 18.26);
        assert_eq!(fig(b, "ttft_ms.p99"), 68.82);
        assert_eq!(fig(b, "ttft_ms.median"), 16.62);
        // aiperf's "Inter Token Latency" is TPOT.
        assert_eq!(fig(b, "tpot_ms.p99"), 12.48);
        assert!(!b.figures.contains_key("itl_ms.p99"));
        assert_eq!(fig(b, "e2e_ms.max"), 769.57);
        assert_eq!(fig(b, "output_throughput"), 10_944.03);
        assert_eq!(fig(b, "request_throughput"), 255.54);
        assert_eq!(fig(b, "completed"), 711.0);
        assert!(b.notes.iter().any(|n| n.contains("Inter Token Latency")));

        let (j, sections) = run("bench", AIPERF_JSON).take(|f| f.bench);
        assert!(sections.iter().any(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
        let j = &j[0];
        assert_eq!(j.tool, "aiperf");
        assert_eq!(fig(j, "ttft_ms.mean"), 18.26);
        assert_eq!(fig(j, "ttft_ms.p99"), 68.82);
        assert_eq!(fig(j, "tpot_ms.mean"), 11.23);
        assert_eq!(fig(j, "itl_ms.p99"), 30.54);
        assert_eq!(fig(j, "duration_s"), 2.78);
        assert_eq!(fig(j, "failed"), 3.0);
    }

    #[test]
    fn guidellm_json_sweep() {
        let (b, sections) = run("bench", GUIDELLM_JSON).take(|f| f.bench);
        assert!(sections.iter().any(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
        assert_eq!(b.len(), 2, "{b:?}");
        assert!(b.iter().all(|r| r.tool == "guidellm"));
        assert_eq!(b[0].label.as_deref(), Some("synchronous"));
        assert_eq!(b[1].label.as_deref(), Some("throughput"));
        assert_eq!(fig(&b[1], "ttft_ms.mean"), 850.5);
        assert_eq!(fig(&b[1], "ttft_ms.median"), 610.2);
        assert_eq!(fig(&b[1], "ttft_ms.p99"), 4120.0);
        assert_eq!(fig(&b[1], "e2e_ms.p99"), 9800.0);
        assert_eq!(fig(&b[1], "tpot_ms.mean"), 22.1);
        assert_eq!(fig(&b[1], "guidellm_tpot_incl_ttft_ms.mean"), 27.3);
        assert_eq!(fig(&b[1], "request_throughput"), 11.62);
        assert_eq!(fig(&b[1], "completed"), 1396.0);
        assert_eq!(fig(&b[1], "failed"), 4.0);
        assert!(b[1].notes.iter().any(|n| n.contains("TTFT included")));
    }

    #[test]
    fn guidellm_console_tables() {
        let (b, sections) = run("bench", GUIDELLM_TXT).take(|f| f.bench);
        assert!(sections.iter().all(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].label.as_deref(), Some("synchronous"));
        assert_eq!(fig(&b[0], "ttft_ms.median"), 45.1);
        assert_eq!(fig(&b[0], "e2e_ms.p95"), 1300.0);
        assert_eq!(fig(&b[1], "ttft_ms.p95"), 3900.2);
        assert_eq!(fig(&b[1], "tpot_ms.median"), 21.4);
        assert_eq!(fig(&b[1], "request_throughput"), 11.6);
        assert_eq!(fig(&b[1], "concurrency.median"), 180.0);
        assert!(!b[1].figures.contains_key("ttft_ms.p99"));
    }

    /// A terminal 60 columns wide wraps every table row; the figures are the same.
    #[test]
    fn guidellm_rows_wrapped_by_a_terminal_read_the_same() {
        let wrapped: String = GUIDELLM_TXT
            .lines()
            .flat_map(|l| {
                let chars: Vec<char> = l.chars().collect();
                let pieces: Vec<String> = chars.chunks(60).map(|c| c.iter().collect()).collect();
                if pieces.is_empty() { vec![String::new()] } else { pieces }
            })
            .map(|l| l + "\n")
            .collect();
        let ((whole, _), (cut, _)) =
            (run("bench", GUIDELLM_TXT).take(|f| f.bench), run("bench", &wrapped).take(|f| f.bench));
        assert_eq!(cut.len(), whole.len());
        for (c, w) in cut.iter().zip(&whole) {
            assert_eq!(c.figures, w.figures);
            assert_eq!(c.label, w.label);
        }
    }

    #[test]
    fn two_results_and_noise() {
        let text = format!("{VLLM_TXT}{VLLM_TXT}100%|██████████| 1000/1000 [00:43<00:00, 22.74it/s]\n");
        let (b, sections) = run("bench", &text).take(|f| f.bench);
        assert_eq!(b.len(), 2);
        assert!(sections.iter().flat_map(|s| &s.issues).any(|i| i.message.contains("skipped")));
    }

    #[test]
    fn total_on_garbage_and_cut_json() {
        for cut in (0..VLLM_JSON.len()).step_by(7) {
            if VLLM_JSON.is_char_boundary(cut) {
                let _ = run("bench", &VLLM_JSON[..cut]).take(|f| f.bench);
            }
        }
        let (b, _) =
            run("bench", "Mean TTFT (ms): abc\n{\"mean_ttft_ms\": \"x\", \"p99_ttft_ms\": 1e999}\n]]]}}}\n")
                .take(|f| f.bench);
        assert!(b.iter().all(|r| r.figures.values().all(|v| v.is_finite())));
        let deep = "[".repeat(1000) + "{\"mean_ttft_ms\": 5}" + &"]".repeat(1000);
        let _ = run("bench", &format!("{{\"p99_ttft_ms\": 1, \"x\": {deep}}}\n")).take(|f| f.bench);
    }

    #[test]
    fn every_fixture_cut_anywhere_is_read_without_panic() {
        let fixtures = [
            VLLM_TXT,
            VLLM_JSON,
            VLLM_PRETTY,
            SGLANG_TXT,
            AIPERF_TXT,
            AIPERF_JSON,
            GUIDELLM_JSON,
            GUIDELLM_TXT,
            fixture!("configs/claude_settings.json"),
            fixture!("configs/claude_settings_oneline.json"),
            fixture!("configs/codex_config.toml"),
            fixture!("configs/codex_oneline.toml"),
            fixture!("configs/exports.sh"),
            fixture!("sglang/server.log"),
            fixture!("tgi/router.log"),
            fixture!("tgi/router_json.log"),
        ];
        for text in fixtures {
            let step = (text.len() / 120).max(1);
            for cut in (0..text.len()).step_by(step) {
                // Cut at a byte that may sit inside a character: the analyzer reads lossily.
                let bytes = &text.as_bytes()[cut..];
                let mut a = crate::analyze::Analyzer::new();
                a.begin("cut");
                a.feed(bytes);
                a.feed(&text.as_bytes()[..cut]);
                let report = a.finish();
                assert!(report.findings.iter().all(|f| (0.0..=1.0).contains(&f.confidence)));
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(vllm_json_key("p99.9_ttft_ms").as_deref(), Some("ttft_ms.p99.9"));
        assert_eq!(vllm_json_key("median_e2e_latency_ms").as_deref(), Some("e2e_ms.median"));
        assert_eq!(vllm_json_key("mean_ttft"), None);
        assert_eq!(stat_name("p05").as_deref(), Some("p5"));
        assert_eq!(stat_name("p999").as_deref(), Some("p99.9"));
        assert_eq!(stat_name("Mdn").as_deref(), Some("median"));
        assert_eq!(console_figure("P90 TPOT (ms)"), Some(("tpot_ms.p90".into(), 1.0)));
        assert_eq!(console_figure("Mean E2E Latency (ms)"), Some(("e2e_ms.mean".into(), 1.0)));
        assert_eq!(console_figure("Mean Foo (ms)"), None);
    }

    #[test]
    fn mixed_paste_splits_into_sections() {
        let settings = fixture!("configs/claude_settings_oneline.json");
        let access = "INFO:     10.0.0.7:51234 - \"POST /api/v1/messages?utm_source=taotoken_aicg_blog_end HTTP/1.1\" 404 Not Found\n";
        let paste = format!("{settings}{access}{access}{VLLM_TXT}");
        let report = analyze(&[("paste", &paste)]);
        let kinds: Vec<_> = report.inputs.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [InputKind::ClientConfig, InputKind::VllmLog, InputKind::BenchOutput],
            "{:?}",
            report.inputs
        );
        assert_eq!(report.inputs[1].lines, [2, 3]);
    }
}
