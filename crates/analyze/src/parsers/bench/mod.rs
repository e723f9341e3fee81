//! Benchmark outputs, normalised to the definitions in `triage_base::defs`.
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
//!
//! ## Files
//!
//! One file per tool's format: `vllm.rs` (the `Serving Benchmark Result` console block of vLLM,
//! SGLang and trtllm-bench, and vLLM's JSON keys), `aiperf.rs` (aiperf / genai-perf: box-drawn
//! table and JSON export), `guidellm.rs` (guidellm's `|`-tables and JSON metrics), `json.rs`
//! (the streaming JSON reader and what each tool's closed objects hold). This file has the
//! facts, the run being read, the shared name tables and the parser that routes each line.

mod aiperf;
mod guidellm;
mod json;
mod vllm;

use super::{Cx, SectionParser};
pub use crate::facts::bench::BenchFacts;
use crate::kind::{InputKind, recognize};
use crate::report::EvidenceLine;
use guidellm::{GUIDELLM_TITLES, MAX_WRAPPED, Phase, Pipes, bars};
use json::Json;
use std::collections::{BTreeMap, BTreeSet};
use vllm::{console_figure, console_label, console_pair};

const NOTE_CLIENT_SIDE: &str = "benchmark latencies are measured by the client: TTFT includes the network and the server's queue, so it is larger than vLLM's server-side vllm:time_to_first_token_seconds (from arrival) and than per-request server logs (from scheduling)";
const NOTE_TPOT_ITL: &str = "tpot_ms averages each request's (last − first token) / (output tokens − 1) and then over requests; itl_ms pools every gap of every request; with mixed output lengths the two differ, so compare each only with its namesake";

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
    /// Lines no reader above knows: tables and `key: value` figures of other tools.
    tables: super::table::TableReader,
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

    fn note_ignored(&mut self, no: usize) {
        self.ignored += 1;
        self.first_ignored.get_or_insert(no);
    }
}

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
            self.tables.end(cx);
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
            self.tables.end(cx);
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
            if !self.box_line(cx, no, t) {
                self.tables.line(cx, no, line);
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
        // `Backend: sglang`, `Traffic request rate: inf`, progress bars, log lines: not this
        // reader's figures; another tool's table or `key: value` lines may still hold some.
        let rows = cx.facts.tables.rows.len();
        self.tables.line(cx, no, line);
        if cx.facts.tables.rows.len() == rows {
            self.note_ignored(no);
        }
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        self.tables.end(cx);
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
mod tests;
