//! guidellm: the console tables (`|===|`, three header rows, `|---|`, one row per benchmark,
//! rows a terminal may have wrapped) and the metrics of its JSON report.

use super::{BenchParser, MAX_RUNS, Run, cells, stat_name};
use crate::parsers::Cx;

const NOTE_GUIDELLM_ITL: &str = "guidellm's ITL is TPOT by triage's definition ((last − first token) / (output tokens − 1)), read here as tpot_ms";
const NOTE_GUIDELLM_TPOT: &str = "guidellm's TPOT divides the whole request time, TTFT included, by all output tokens: kept as guidellm_tpot_incl_ttft_ms, not comparable with vLLM's TPOT";
const NOTE_GUIDELLM_CONSOLE: &str =
    "guidellm's console tables show median and p95 only; its JSON report has the mean and p99";

/// guidellm's console table titles.
pub(super) const GUIDELLM_TITLES: &[&str] =
    &["Statistics (Completed Requests)", "Statistics (All Requests)", "Run Summary Info"];

#[derive(Clone, Copy, PartialEq, Default)]
pub(super) enum Phase {
    #[default]
    None,
    /// After a table's title, before its top rule.
    Title,
    Header,
    Values,
}

#[derive(Default)]
pub(super) struct Pipes {
    pub(super) phase: Phase,
    pub(super) headers: Vec<Vec<String>>,
    /// (group, name, stat) per column once the header is complete.
    pub(super) columns: Vec<(String, String, String)>,
    pub(super) row: usize,
    /// The table row being read, which a terminal may have wrapped over several lines: its
    /// first line and text so far.
    pub(super) wrapped: Option<(usize, String)>,
    /// How many `|` every row of the current table has (its first rule's; guidellm keeps the
    /// count in merged cells with `|||`); 0 before the first rule is complete.
    pub(super) bars: usize,
}

pub(super) fn bars(t: &str) -> usize {
    t.bytes().filter(|b| *b == b'|').count()
}

/// A table rule (`|====|===|`, `|----|`), or a piece of one.
fn rule_chars(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| matches!(b, b'|' | b'=' | b'-'))
}

/// Longest wrapped table row kept; past it the row is dropped.
pub(super) const MAX_WRAPPED: usize = 16 * 1024;

impl Pipes {
    /// Does `t` continue the pending `row` (a wrapped line) rather than start a new one? Before
    /// the table's first rule is complete, only more rule characters do; after, whatever comes
    /// until the row has all its `|`.
    pub(super) fn continues(&self, row: &str, t: &str) -> bool {
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
pub(super) fn guidellm_metric(name: &str) -> Option<(&'static str, f64, &'static str, Option<&'static str>)> {
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

impl BenchParser {
    pub(super) fn pipe_line(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) {
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
}
