//! aiperf / genai-perf: the box-drawn console table (`NVIDIA AIPerf | LLM Metrics`, one column
//! per statistic) and the metrics of `profile_export_aiperf.json`.

use super::{BenchParser, Run, cells, stat_name, unit_ms};
use crate::parsers::Cx;
use crate::report::EvidenceLine;

const NOTE_AIPERF_ITL: &str = "aiperf's \"Inter Token Latency\" is per-request TPOT ((request latency − TTFT) / (output tokens − 1)), read here as tpot_ms; it is not vLLM bench's ITL";
const NOTE_AIPERF_ICL: &str = "aiperf's \"Inter Chunk Latency\" is the gap between streamed chunks, read here as itl_ms; a chunk may carry several tokens, so it can exceed a per-token gap";

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// Latency statistics, converted to ms.
    Latency,
    /// A single value (throughput, count): its `avg`.
    Value,
    /// Seconds.
    Duration,
}

/// aiperf's metric (console header or JSON tag) → canonical base name.
pub(super) fn aiperf_metric(name: &str) -> Option<(&'static str, Kind, Option<&'static str>)> {
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
pub(super) fn aiperf_put(
    run: &mut Run,
    metric: &str,
    unit: Option<&str>,
    stat: &str,
    value: f64,
    e: &EvidenceLine,
) {
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

impl BenchParser {
    /// A row of aiperf's (or genai-perf's) box-drawn table: its header names the statistic
    /// columns, every other row is one metric. `false` when the line is not aiperf's (no header
    /// read yet, and this is not one).
    pub(super) fn box_line(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) -> bool {
        if is_box_rule(t) {
            return true;
        }
        let row = cells(t);
        let is_header = row.first().is_some_and(|c| c.eq_ignore_ascii_case("metric"))
            && row.iter().any(|c| matches!(c.to_ascii_lowercase().as_str(), "avg" | "p99" | "p50" | "max"));
        if is_header {
            self.boxes = Some(row[1..].iter().map(|c| c.to_ascii_lowercase()).collect());
            self.run.tool.get_or_insert("aiperf");
            return true;
        }
        if self.boxes.is_none() {
            return false;
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
        true
    }
}
