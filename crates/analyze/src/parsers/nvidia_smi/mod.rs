//! nvidia-smi output — the default table, `-q`, `--query-gpu … --format=csv` and `dmon` — read
//! line by line into [`GpuReading`]s (one per GPU per sample) and [`GpuProcess`]es.
//!
//! The four forms can follow each other in one paste (people run `nvidia-smi; nvidia-smi -q`),
//! so the parser keeps a small state machine: the form being read, the table's sub-table
//! (GPUs, MIG devices, processes), the `-q` GPU block with its indentation stack, the CSV or
//! dmon header that names the columns. Readings taken together (one table, one `-q` dump, one
//! CSV or dmon tick) share a [`GpuReading::snapshot`], so rules can compare GPUs at one moment.
//!
//! Throttle ("clocks event") reasons are normalised to the NVML bit names of [`REASON_BITS`],
//! whichever form gave them: `-q`'s `SW Power Cap : Active`, the CSV's
//! `clocks_event_reasons.active` mask (`0x0000000000000004`) or per-reason columns, or dmon's
//! power-violation column.
//!
//! This file holds what the forms share: the reading types, the parser with its dispatch
//! ([`SmiParser`]'s `continues` and `line` decide which form a line belongs to), snapshot ids,
//! bounds and value helpers. Each form has its own file: `table.rs`, `query.rs` (`-q`), `csv.rs`
//! (`--query-gpu`), `dmon.rs`.

mod csv;
mod dmon;
mod query;
mod series;
mod table;
#[cfg(test)]
mod tests;

use self::csv::{Csv, csv_header};
use self::dmon::{Dmon, dmon_header};
use self::query::{Query, is_xml_line, key_value, q_gpu_header};
use self::table::{Stage, Table};
use super::{Cx, SectionParser};
use crate::text::quote_redacted;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::facts::nvidia_smi::{GpuFacts, GpuProcess, GpuReading};
pub use triage_gpu::sample::REASON_BITS;

/// Most readings kept: a 10 Hz dmon series of 8 GPUs for four minutes. Enough for medians; the
/// rest is counted so memory stays bounded on a day-long log.
pub const MAX_READINGS: usize = 20_000;
const MAX_PROCESSES: usize = 1_000;
const MAX_DETAIL: usize = 4;
/// A snapshot never holds more GPUs than this (guards the per-snapshot index set).
const MAX_GPUS_PER_SNAPSHOT: usize = 1_024;
/// Most bus ids remembered: every table or CSV row with a new bus id added one, without end.
const MAX_BUS_IDS: usize = 1_024;

/// Remember which index a bus id has, up to [`MAX_BUS_IDS`] of them.
fn learn_bus(bus_index: &mut BTreeMap<String, u32>, bus: &str, index: u32) {
    if let Some(known_index) = bus_index.get_mut(bus) {
        *known_index = index;
    } else if bus_index.len() < MAX_BUS_IDS {
        bus_index.insert(bus.to_owned(), index);
    }
}

impl SmiParser {
    /// A CSV or dmon reading, also a sample of the series being read.
    fn push_series_reading(&mut self, cx: &mut Cx<'_>, no: usize, reading: GpuReading) {
        let source = if self.mode == Mode::Dmon {
            crate::parsers::gpu_series::SeriesSource::SmiDmon
        } else {
            crate::parsers::gpu_series::SeriesSource::SmiCsv
        };
        self.series.get_or_insert_with(|| series::SmiSeries::new(source)).push(&reading, no);
        push_reading(cx, reading);
    }
}

pub(super) fn push_reading(cx: &mut Cx<'_>, reading: GpuReading) {
    let gpus = &mut cx.facts.gpus;
    if gpus.readings.len() < MAX_READINGS {
        gpus.readings.push(reading);
    } else {
        gpus.readings_dropped += 1;
    }
}

fn push_process(cx: &mut Cx<'_>, process: GpuProcess) {
    if cx.facts.gpus.processes.len() < MAX_PROCESSES {
        cx.facts.gpus.processes.push(process);
    }
}

/// A number at the start of a value (`1455 MHz`, `690.12 W`, `0 %`, `39C`); `None` for `N/A`,
/// `[N/A]`, `[Not Supported]`, `ERR!`, `-`.
fn num(value: &str) -> Option<f64> {
    let value = value.trim();
    let end = value
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (c == '-' && i == 0)))
        .map_or(value.len(), |(i, _)| i);
    value[..end].parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A memory value in MiB (`1139 MiB`, `1139MiB`, `2 GiB`); a bare number is MiB.
fn mib(value: &str) -> Option<f64> {
    let amount = num(value)?;
    let unit = value.trim().trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-').trim();
    Some(match unit {
        u if u.starts_with("GiB") || u.starts_with("GB") => amount * 1024.0,
        u if u.starts_with("KiB") || u.starts_with("KB") => amount / 1024.0,
        _ => amount,
    })
}

/// `Active` (a `-q` reason line's value, a CSV per-reason column), in any case.
fn is_active(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("active")
}

const WEEKDAYS: [&str; 7] = ["Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat ", "Sun "];

/// Lines that frame nvidia-smi output without being part of it: the table's date line,
/// headings and comments, a shell prompt naming the command.
fn is_frame(trimmed: &str) -> bool {
    trimmed.starts_with('#')
        || WEEKDAYS.iter().any(|day| trimmed.starts_with(day))
        || trimmed.trim_start_matches(['$', '>', ' ']).starts_with("nvidia-smi")
        || trimmed.starts_with("```")
}

/// Whether a trimmed line is part of the default table: a `|` row or a `+---+` / `+===+` rule.
fn is_table_line(trimmed: &str) -> bool {
    trimmed.starts_with('|') || trimmed.starts_with("+-") || trimmed.starts_with("+=")
}

/// Which form is being read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    None,
    Table,
    Query,
    Csv,
    Dmon,
}

/// Hands out snapshot ids: a new one whenever a GPU index repeats.
#[derive(Default)]
struct Group {
    id: Option<u64>,
    seen: BTreeSet<u32>,
}

impl Group {
    fn reset(&mut self) {
        self.id = None;
        self.seen.clear();
    }

    fn id(&mut self, gpus: &mut GpuFacts, index: u32) -> u64 {
        let fresh = match self.id {
            None => true,
            Some(_) => self.seen.contains(&index) || self.seen.len() >= MAX_GPUS_PER_SNAPSHOT,
        };
        if fresh {
            gpus.snapshots += 1;
            self.id = Some(gpus.snapshots);
            self.seen.clear();
        }
        self.seen.insert(index);
        self.id.unwrap_or(gpus.snapshots)
    }
}

/// Reads one nvidia-smi section. See the module docs.
#[derive(Default)]
pub struct SmiParser {
    mode: Mode,
    table: Table,
    query: Query,
    csv: Option<Csv>,
    dmon: Option<Dmon>,
    group: Group,
    /// Bus id → index, learned from the table or the CSV, so `-q` blocks get the right index.
    bus_index: BTreeMap<String, u32>,
    /// The CSV or dmon series being read, judged as a GPU recording when it ends.
    series: Option<series::SmiSeries>,
    /// Lines that were none of the four forms: counted, the first quoted at the end.
    stray: usize,
    first_stray: Option<(usize, String)>,
}

impl SectionParser for SmiParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let trimmed = line.trim();
        // Never swallow a line that names an out-of-memory error: that is another section.
        if trimmed.contains("out of memory") || trimmed.contains("OutOfMemoryError") {
            return false;
        }
        match self.mode {
            // Table bodies (process names like `python -m vllm…` would otherwise split it).
            Mode::Table => is_table_line(trimmed),
            Mode::Query => {
                key_value(line).is_some() || q_gpu_header(trimmed).is_some() || is_xml_line(trimmed)
            }
            Mode::Csv => self.csv.as_ref().is_some_and(|csv| csv.fits(trimmed)),
            Mode::Dmon => self.dmon.as_ref().is_some_and(|dmon| dmon.fits(trimmed)),
            Mode::None => false,
        }
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            // Blank lines separate the table's sub-tables and `-q` groups: they end nothing.
            return;
        }
        if is_table_line(trimmed) {
            self.enter(cx, Mode::Table);
            self.table_line(cx, no, line, trimmed);
            return;
        }
        if is_xml_line(trimmed) {
            if trimmed.starts_with("<nvidia_smi_log") {
                self.enter(cx, Mode::Query);
                self.start_query_dump(cx);
                self.query.xml.clear();
                return;
            }
            self.enter(cx, Mode::Query);
            self.xml_line(cx, no, line);
            return;
        }
        if trimmed.contains("NVSMI LOG") {
            self.enter(cx, Mode::Query);
            self.start_query_dump(cx);
            return;
        }
        if let Some(bus) = q_gpu_header(trimmed) {
            self.enter(cx, Mode::Query);
            self.start_query_gpu(cx, no, line, bus);
            return;
        }
        if self.mode == Mode::Query && (key_value(line).is_some() || query::indent(line) > 0) {
            self.query_line(cx, no, line);
            return;
        }
        if trimmed.starts_with('#') {
            if let Some(cols) = dmon_header(trimmed) {
                let same = self.dmon.as_ref().is_some_and(|dmon| dmon.cols == cols);
                self.enter(cx, Mode::Dmon);
                if !same {
                    self.dmon = Some(Dmon { cols });
                }
                return;
            }
            if self.mode != Mode::Dmon {
                // A heading or comment ends `-q` and a table; dmon's units line (`# Idx W C`)
                // does not end dmon.
                self.enter(cx, Mode::None);
            }
            return;
        }
        if let Some(cols) = csv_header(trimmed) {
            self.enter(cx, Mode::None);
            self.mode = Mode::Csv;
            self.csv = Some(Csv { cols, rows: 0 });
            return;
        }
        if self.mode == Mode::Csv && self.csv.as_ref().is_some_and(|csv| csv.fits(trimmed)) {
            self.csv_row(cx, no, line, trimmed);
            return;
        }
        if self.mode == Mode::Dmon && self.dmon.as_ref().is_some_and(|dmon| dmon.fits(trimmed)) {
            self.dmon_row(cx, no, line, trimmed);
            return;
        }
        if self.mode == Mode::Csv && trimmed.contains(',') {
            let want = self.csv.as_ref().map_or(0, |csv| csv.cols.len());
            let n = trimmed.split(',').count();
            cx.issue_in(
                no,
                format!("a CSV row with {n} fields where the header has {want}"),
                format!("CSV 行有 {n} 个字段，而表头有 {want} 个"),
            );
            return;
        }
        if self.mode == Mode::Dmon && trimmed.starts_with(|c: char| c.is_ascii_digit()) {
            let want = self.dmon.as_ref().map_or(0, |dmon| dmon.cols.len());
            let n = trimmed.split_whitespace().count();
            cx.issue_in(
                no,
                format!("a dmon row with {n} columns where the header has {want}"),
                format!("dmon 行有 {n} 列，而表头有 {want} 列"),
            );
            return;
        }
        self.enter(cx, Mode::None);
        if !is_frame(trimmed) {
            self.stray += 1;
            self.first_stray.get_or_insert_with(|| (no, quote_redacted(line)));
        }
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        self.enter(cx, Mode::None);
        if let Some((no, text)) = self.first_stray.take() {
            let n = self.stray;
            cx.issue_in(
                no,
                format!("{n} line(s) in this section are not nvidia-smi output, starting with: {text}"),
                format!("本片段有 {n} 行不是 nvidia-smi 输出，第一行是：{text}"),
            );
        }
    }
}

impl SmiParser {
    /// Switch forms: whatever the old form had pending is written out.
    fn enter(&mut self, cx: &mut Cx<'_>, mode: Mode) {
        if self.mode == mode {
            return;
        }
        if let Some(series) = self.series.take() {
            series.finish(cx);
        }
        if let Some(reading) = self.table.pending.take() {
            push_reading(cx, reading);
        }
        self.flush_query(cx);
        self.group.reset();
        self.table.stage = Stage::Gpus;
        self.query.ordinal = 0;
        self.mode = mode;
    }
}
