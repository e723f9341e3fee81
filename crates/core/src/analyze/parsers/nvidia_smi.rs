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

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;
use crate::analyze::text::quote_redacted;
use std::collections::{BTreeMap, BTreeSet};

/// NVML clock-event reason bits and the normalised name of each.
pub const REASON_BITS: [(u64, &str); 9] = [
    (0x1, "idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
];

/// The normalised reason names set in an NVML bitmask, in bit order. Unknown bits are ignored.
pub fn reasons_from_mask(mask: u64) -> Vec<String> {
    REASON_BITS.iter().filter(|(bit, _)| mask & bit != 0).map(|(_, name)| (*name).to_owned()).collect()
}

/// One GPU's reading at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuReading {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub sm_clock_mhz: Option<f64>,
    pub max_sm_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub util_pct: Option<f64>,
    pub mem_used_mib: Option<f64>,
    pub mem_total_mib: Option<f64>,
    pub temp_c: Option<f64>,
    /// Active clock-event (throttle) reasons, normalised: `idle`, `applications_clocks`,
    /// `sw_power_cap`, `hw_slowdown`, `sync_boost`, `sw_thermal`, `hw_thermal`,
    /// `hw_power_brake`, `display_clocks` (in that order). Empty when none is active *or* the
    /// form does not report them (the default table): see [`GpuReading::reasons_known`].
    pub reasons: Vec<String>,
    /// The NVML bitmask when the source gives it.
    pub reason_mask: Option<u64>,
    /// The most telling line: a non-idle active throttle reason, else the SM clock (`-q`); the
    /// power / memory / utilisation row (table); the row itself (CSV, dmon).
    pub evidence: EvidenceLine,
    /// PCI bus id (`00000000:00:06.0`), which ties a `-q` block to the table's index.
    pub bus_id: Option<String>,
    /// Performance state (`P0`).
    pub pstate: Option<String>,
    /// Readings with the same snapshot were taken together: one table, one `-q` dump, one CSV
    /// or dmon tick. Unique across the whole analysis (1-based).
    pub snapshot: u64,
    /// Whether this form reports throttle reasons at all (`-q`, CSV with a reasons column,
    /// dmon with `pviol`), so an empty [`GpuReading::reasons`] means "none active".
    pub reasons_known: bool,
    /// dmon `pviol`: share of the sample interval spent power-capped, percent.
    pub power_violation_pct: Option<f64>,
    /// dmon `tviol`: a thermal violation during the sample interval.
    pub thermal_violation: Option<bool>,
    /// Further lines that back the reading (`-q`'s clock, power and reason lines), at most 4.
    pub detail: Vec<EvidenceLine>,
}

impl GpuReading {
    pub fn has_reason(&self, reason: &str) -> bool {
        self.reasons.iter().any(|r| r == reason)
    }
}

/// A process holding GPU memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuProcess {
    pub gpu: Option<u32>,
    pub pid: Option<u32>,
    pub name: String,
    pub mem_mib: Option<f64>,
    pub evidence: EvidenceLine,
}

#[derive(Debug, Default)]
pub struct GpuFacts {
    /// Readings in input order (a CSV or dmon series gives several per GPU).
    pub readings: Vec<GpuReading>,
    pub processes: Vec<GpuProcess>,
    /// Readings beyond [`MAX_READINGS`], counted and not kept.
    pub readings_dropped: u64,
    /// Snapshots handed out so far (the last [`GpuReading::snapshot`]).
    pub snapshots: u64,
}

/// Most readings kept: a 10 Hz dmon series of 8 GPUs for four minutes. Enough for medians; the
/// rest is counted so memory stays bounded on a day-long log.
pub const MAX_READINGS: usize = 20_000;
const MAX_PROCESSES: usize = 1_000;
const MAX_DETAIL: usize = 4;
/// A snapshot never holds more GPUs than this (guards the per-snapshot index set).
const MAX_GPUS_PER_SNAPSHOT: usize = 1_024;
/// Most bus ids remembered: every table or CSV row with a new bus id added one, without end.
const MAX_BUS_IDS: usize = 1_024;
/// Deepest `-q` section nesting followed: each line indented further than the last was kept
/// as an open header, so memory grew with the input.
const MAX_Q_DEPTH: usize = 32;

/// Remember which index a bus id has, up to [`MAX_BUS_IDS`] of them.
fn learn_bus(bus_index: &mut BTreeMap<String, u32>, bus: &str, index: u32) {
    if let Some(i) = bus_index.get_mut(bus) {
        *i = index;
    } else if bus_index.len() < MAX_BUS_IDS {
        bus_index.insert(bus.to_owned(), index);
    }
}

fn push_reading(cx: &mut Cx<'_>, r: GpuReading) {
    let g = &mut cx.facts.gpus;
    if g.readings.len() < MAX_READINGS {
        g.readings.push(r);
    } else {
        g.readings_dropped += 1;
    }
}

fn push_process(cx: &mut Cx<'_>, p: GpuProcess) {
    if cx.facts.gpus.processes.len() < MAX_PROCESSES {
        cx.facts.gpus.processes.push(p);
    }
}

/// Add a reason once, keeping [`REASON_BITS`] order.
fn add_reason(reasons: &mut Vec<String>, reason: &str) {
    if !reasons.iter().any(|r| r == reason) {
        reasons.push(reason.to_owned());
        let rank = |r: &String| REASON_BITS.iter().position(|(_, n)| n == r).unwrap_or(usize::MAX);
        reasons.sort_by_key(rank);
    }
}

/// `-q` reason labels (current and older drivers) → normalised names.
fn reason_of_label(label: &str) -> Option<&'static str> {
    Some(match label {
        "Idle" | "GPU Idle" => "idle",
        "Applications Clocks Setting" => "applications_clocks",
        "SW Power Cap" => "sw_power_cap",
        "HW Slowdown" => "hw_slowdown",
        "HW Thermal Slowdown" => "hw_thermal",
        "HW Power Brake Slowdown" => "hw_power_brake",
        "Sync Boost" => "sync_boost",
        "SW Thermal Slowdown" => "sw_thermal",
        "Display Clock Setting" => "display_clocks",
        _ => return None,
    })
}

/// `--query-gpu` reason fields (after `clocks_event_reasons.` / `clocks_throttle_reasons.`).
fn reason_of_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "gpu_idle" => "idle",
        "applications_clocks_setting" => "applications_clocks",
        "sw_power_cap" => "sw_power_cap",
        "hw_slowdown" => "hw_slowdown",
        "hw_thermal_slowdown" => "hw_thermal",
        "hw_power_brake_slowdown" => "hw_power_brake",
        "sync_boost" => "sync_boost",
        "sw_thermal_slowdown" => "sw_thermal",
        "display_clock_setting" => "display_clocks",
        _ => return None,
    })
}

/// A number at the start of a value (`1455 MHz`, `690.12 W`, `0 %`, `39C`); `None` for `N/A`,
/// `[N/A]`, `[Not Supported]`, `ERR!`, `-`.
fn num(v: &str) -> Option<f64> {
    let v = v.trim();
    let end = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (c == '-' && i == 0)))
        .map_or(v.len(), |(i, _)| i);
    v[..end].parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A memory value in MiB (`1139 MiB`, `1139MiB`, `2 GiB`); a bare number is MiB.
fn mib(v: &str) -> Option<f64> {
    let x = num(v)?;
    let unit = v.trim().trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-').trim();
    Some(match unit {
        u if u.starts_with("GiB") || u.starts_with("GB") => x * 1024.0,
        u if u.starts_with("KiB") || u.starts_with("KB") => x / 1024.0,
        _ => x,
    })
}

fn is_active(v: &str) -> bool {
    v.trim().eq_ignore_ascii_case("active")
}

/// `Key   : Value` as `-q` prints it: the first colon preceded by a space.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    let p = (1..b.len()).find(|&i| b[i] == b':' && b[i - 1] == b' ')?;
    let key = line[..p].trim();
    (!key.is_empty()).then(|| (key, line[p + 1..].trim()))
}

/// `GPU 00000000:00:06.0`: the start of a GPU block in `-q`.
fn q_gpu_header(t: &str) -> Option<&str> {
    let id = t.strip_prefix("GPU ")?.trim();
    let ok = id.contains(':') && id.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    ok.then_some(id)
}

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ' || *c == '\t').count()
}

const WEEKDAYS: [&str; 7] = ["Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat ", "Sun "];

/// Lines that frame nvidia-smi output without being part of it: the table's date line,
/// headings and comments, a shell prompt naming the command.
fn is_frame(t: &str) -> bool {
    t.starts_with('#')
        || WEEKDAYS.iter().any(|d| t.starts_with(d))
        || t.trim_start_matches(['$', '>', ' ']).starts_with("nvidia-smi")
        || t.starts_with("```")
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

/// The default table's sub-tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Stage {
    #[default]
    Gpus,
    Mig,
    Procs,
}

#[derive(Default)]
struct Table {
    stage: Stage,
    /// A GPU whose first row (index, name, bus id) was read and whose second is awaited.
    pending: Option<GpuReading>,
}

/// One GPU block of `-q`.
struct QGpu {
    r: GpuReading,
    /// (rank, line): lower rank is more telling.
    best: Option<(u8, EvidenceLine)>,
    /// Open section headers: (indent, name).
    stack: Vec<(usize, String)>,
    /// (priority, watts): lower priority wins.
    draw: Option<(u8, f64)>,
    limit: Option<(u8, f64)>,
    reasons_seen: bool,
    /// At most [`MAX_PROCESSES`]: a block listing more grew without end.
    procs: Vec<GpuProcess>,
    /// The last `Process ID` was not kept, so its `Name` and memory lines are dropped too.
    proc_dropped: bool,
}

impl QGpu {
    fn consider(&mut self, rank: u8, e: EvidenceLine) {
        if self.best.as_ref().is_none_or(|(r, _)| rank < *r) {
            self.best = Some((rank, e));
        }
    }

    fn detail(&mut self, e: EvidenceLine) {
        if self.r.detail.len() < MAX_DETAIL {
            self.r.detail.push(e);
        }
    }
}

#[derive(Default)]
struct Query {
    gpu: Option<QGpu>,
    /// GPU blocks read in this dump: the index when the bus id is not known from a table.
    ordinal: u32,
}

/// A `--query-gpu` column.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Col {
    Index,
    Name,
    Uuid,
    BusId,
    Pstate,
    Sm,
    Graphics,
    MaxSm,
    Power,
    PowerLimit,
    Util,
    MemUsed,
    MemTotal,
    Temp,
    ReasonMask,
    Reason(&'static str),
    Other,
}

fn col_of(header: &str) -> Col {
    let name = header.split('[').next().unwrap_or("").trim().to_ascii_lowercase();
    let reason_field =
        name.strip_prefix("clocks_event_reasons.").or_else(|| name.strip_prefix("clocks_throttle_reasons."));
    if let Some(field) = reason_field {
        return match field {
            "active" => Col::ReasonMask,
            f => reason_of_field(f).map_or(Col::Other, Col::Reason),
        };
    }
    match name.as_str() {
        "index" => Col::Index,
        "name" | "gpu_name" => Col::Name,
        "uuid" | "gpu_uuid" => Col::Uuid,
        "pci.bus_id" | "gpu_bus_id" => Col::BusId,
        "pstate" => Col::Pstate,
        "clocks.sm" | "clocks.current.sm" => Col::Sm,
        "clocks.gr" | "clocks.current.graphics" => Col::Graphics,
        "clocks.max.sm" | "clocks.max.sm_clock" => Col::MaxSm,
        "power.draw" | "power.draw.average" | "power.draw.instant" => Col::Power,
        "power.limit" | "enforced.power.limit" | "power.limit.enforced" => Col::PowerLimit,
        "utilization.gpu" => Col::Util,
        "memory.used" => Col::MemUsed,
        "memory.total" => Col::MemTotal,
        "temperature.gpu" => Col::Temp,
        _ => Col::Other,
    }
}

/// A `--query-gpu` header: every field looks like a query name (`clocks.sm [MHz]`) and at least
/// one is a column we read.
fn csv_header(t: &str) -> Option<Vec<Col>> {
    let fields: Vec<&str> = t.split(',').map(str::trim).collect();
    let looks_like_query = fields.iter().all(|f| {
        let name = f.split(" [").next().unwrap_or("");
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_')
    });
    if !looks_like_query {
        return None;
    }
    let cols: Vec<Col> = fields.iter().map(|f| col_of(f)).collect();
    cols.iter().any(|c| *c != Col::Other).then_some(cols)
}

struct Csv {
    cols: Vec<Col>,
    /// Rows since the header: the index when there is no index column.
    rows: u32,
}

impl Csv {
    /// A row of this header: as many fields, and numbers (or `[N/A]`) where numbers belong, so a
    /// one-column query cannot swallow the prose that follows it.
    fn fits(&self, t: &str) -> bool {
        let fields: Vec<&str> = t.split(',').map(str::trim).collect();
        fields.len() == self.cols.len()
            && self.cols.iter().zip(&fields).all(|(c, v)| match c {
                Col::Index => v.parse::<u32>().is_ok(),
                Col::Sm
                | Col::Graphics
                | Col::MaxSm
                | Col::Power
                | Col::PowerLimit
                | Col::Util
                | Col::MemUsed
                | Col::MemTotal
                | Col::Temp => num(v).is_some() || v.starts_with('[') || *v == "N/A",
                _ => true,
            })
    }
}

/// dmon's header (`# gpu pwr gtemp …`, or `#Date Time gpu …` with `-o DT`).
fn dmon_header(t: &str) -> Option<Vec<String>> {
    let cols: Vec<String> = t.strip_prefix('#')?.split_whitespace().map(str::to_ascii_lowercase).collect();
    let has = |n: &str| cols.iter().any(|c| c == n);
    (has("gpu") && (has("pwr") || has("sm") || has("pclk") || has("fb"))).then_some(cols)
}

struct Dmon {
    cols: Vec<String>,
}

impl Dmon {
    /// A row of this header: as many columns, all numbers, `-`, or a `-o DT` date and time.
    fn fits(&self, t: &str) -> bool {
        t.split_whitespace().count() == self.cols.len()
            && t.starts_with(|c: char| c.is_ascii_digit())
            && t.split_whitespace().all(|w| w.bytes().all(|b| b.is_ascii_digit() || b"-.:/".contains(&b)))
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
    /// Lines that were none of the four forms: counted, the first quoted at the end.
    stray: usize,
    first_stray: Option<(usize, String)>,
}

impl SectionParser for SmiParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim();
        // Never swallow a line that names an out-of-memory error: that is another section.
        if t.contains("out of memory") || t.contains("OutOfMemoryError") {
            return false;
        }
        match self.mode {
            // Table bodies (process names like `python -m vllm…` would otherwise split it).
            Mode::Table => t.starts_with('|') || t.starts_with("+-") || t.starts_with("+="),
            Mode::Query => key_value(line).is_some() || q_gpu_header(t).is_some(),
            Mode::Csv => self.csv.as_ref().is_some_and(|c| c.fits(t)),
            Mode::Dmon => self.dmon.as_ref().is_some_and(|d| d.fits(t)),
            Mode::None => false,
        }
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            // Blank lines separate the table's sub-tables and `-q` groups: they end nothing.
            return;
        }
        if t.starts_with('|') || t.starts_with("+-") || t.starts_with("+=") {
            self.enter(cx, Mode::Table);
            self.table_line(cx, no, line, t);
            return;
        }
        if t.contains("NVSMI LOG") {
            self.enter(cx, Mode::Query);
            self.flush_query(cx);
            self.group.reset();
            self.query.ordinal = 0;
            return;
        }
        if let Some(bus) = q_gpu_header(t) {
            self.enter(cx, Mode::Query);
            self.flush_query(cx);
            let bus = bus.to_owned();
            let index = self.bus_index.get(&bus).copied().unwrap_or(self.query.ordinal);
            self.query.ordinal += 1;
            let snapshot = self.group.id(&mut cx.facts.gpus, index);
            let header = cx.evidence(no, line);
            self.query.gpu = Some(QGpu {
                r: GpuReading {
                    index,
                    bus_id: Some(bus),
                    snapshot,
                    evidence: header,
                    ..GpuReading::default()
                },
                best: None,
                stack: Vec::new(),
                draw: None,
                limit: None,
                reasons_seen: false,
                procs: Vec::new(),
                proc_dropped: false,
            });
            return;
        }
        if self.mode == Mode::Query && (key_value(line).is_some() || indent(line) > 0) {
            self.query_line(cx, no, line);
            return;
        }
        if t.starts_with('#') {
            if let Some(cols) = dmon_header(t) {
                let same = self.dmon.as_ref().is_some_and(|d| d.cols == cols);
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
        if let Some(cols) = csv_header(t) {
            self.enter(cx, Mode::None);
            self.mode = Mode::Csv;
            self.csv = Some(Csv { cols, rows: 0 });
            return;
        }
        if self.mode == Mode::Csv && self.csv.as_ref().is_some_and(|c| c.fits(t)) {
            self.csv_row(cx, no, line, t);
            return;
        }
        if self.mode == Mode::Dmon && self.dmon.as_ref().is_some_and(|d| d.fits(t)) {
            self.dmon_row(cx, no, line, t);
            return;
        }
        if self.mode == Mode::Csv && t.contains(',') {
            let want = self.csv.as_ref().map_or(0, |c| c.cols.len());
            let n = t.split(',').count();
            cx.issue_in(
                no,
                format!("a CSV row with {n} fields where the header has {want}"),
                format!("CSV 行有 {n} 个字段，而表头有 {want} 个"),
            );
            return;
        }
        if self.mode == Mode::Dmon && t.starts_with(|c: char| c.is_ascii_digit()) {
            let want = self.dmon.as_ref().map_or(0, |d| d.cols.len());
            let n = t.split_whitespace().count();
            cx.issue_in(
                no,
                format!("a dmon row with {n} columns where the header has {want}"),
                format!("dmon 行有 {n} 列，而表头有 {want} 列"),
            );
            return;
        }
        self.enter(cx, Mode::None);
        if !is_frame(t) {
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
        if let Some(r) = self.table.pending.take() {
            push_reading(cx, r);
        }
        self.flush_query(cx);
        self.group.reset();
        self.table.stage = Stage::Gpus;
        self.query.ordinal = 0;
        self.mode = mode;
    }

    // ----- the default table -----

    fn table_line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, t: &str) {
        if t.contains("NVIDIA-SMI") {
            // A new table: a new moment.
            if let Some(r) = self.table.pending.take() {
                push_reading(cx, r);
            }
            self.table.stage = Stage::Gpus;
            self.group.reset();
            return;
        }
        if !t.starts_with('|') {
            return; // +----+ separators
        }
        if t.contains("MIG devices:") {
            self.table.stage = Stage::Mig;
            return;
        }
        if t.contains("Processes:") {
            if let Some(r) = self.table.pending.take() {
                push_reading(cx, r);
            }
            self.table.stage = Stage::Procs;
            return;
        }
        let inner = t.trim_start_matches('|').trim_end_matches('|');
        let cells: Vec<&str> = inner.split('|').collect();
        match self.table.stage {
            Stage::Mig => {}
            Stage::Procs => self.process_row(cx, no, line, inner),
            Stage::Gpus => self.gpu_row(cx, no, line, &cells),
        }
    }

    fn gpu_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, cells: &[&str]) {
        let first: Vec<&str> = cells.first().map(|c| c.split_whitespace().collect()).unwrap_or_default();
        let Some(head) = first.first() else { return };
        // Row 1: `   0  NVIDIA H200     On  |   00000000:00:06.0 Off |    0 |`.
        if let Ok(index) = head.parse::<u32>() {
            if let Some(r) = self.table.pending.take() {
                push_reading(cx, r);
            }
            let mut name_end = first.len();
            if first.len() > 2 && matches!(first[first.len() - 1], "On" | "Off" | "WDDM" | "TCC") {
                name_end -= 1;
            }
            let name = first.get(1..name_end).map(|w| w.join(" ")).filter(|n| !n.is_empty());
            let bus_id = cells
                .get(1)
                .and_then(|c| c.split_whitespace().next())
                .filter(|b| b.contains(':'))
                .map(str::to_owned);
            if let Some(bus) = &bus_id {
                learn_bus(&mut self.bus_index, bus, index);
            }
            let snapshot = self.group.id(&mut cx.facts.gpus, index);
            self.table.pending = Some(GpuReading {
                index,
                name,
                bus_id,
                snapshot,
                evidence: cx.evidence(no, line),
                ..GpuReading::default()
            });
            return;
        }
        // Row 2: `N/A   39C   P0   124W /  700W |   0MiB / 143771MiB |   0%   Default |`.
        let temp =
            first.iter().find(|w| w.ends_with('C') && w.len() > 1 && num(w).is_some()).and_then(|w| num(w));
        let pstate =
            first.iter().find(|w| w.len() >= 2 && w.starts_with('P') && w[1..].parse::<u8>().is_ok());
        // `124W /  700W` (or `124W/700W`, `N/A / N/A`): usage left of the last slash, cap right of
        // it (the last: a fan of `N/A` has a slash too).
        let cell = cells.first().copied().unwrap_or("");
        let (power, limit) = match cell.rsplit_once('/') {
            Some((l, r)) => (
                l.split_whitespace().last().filter(|w| w.ends_with('W')).and_then(num),
                r.split_whitespace().next().filter(|w| w.ends_with('W')).and_then(num),
            ),
            None => (None, None),
        };
        if temp.is_none() && pstate.is_none() && power.is_none() {
            return; // header rows, the MIG M. row, empty rows
        }
        let Some(mut r) = self.table.pending.take() else {
            cx.issue_in(
                no,
                "a GPU reading row without the row that names the GPU above it",
                "GPU 读数行的上方缺少标明是哪张 GPU 的行",
            );
            return;
        };
        r.temp_c = temp;
        r.pstate = pstate.map(|p| (*p).to_owned());
        r.power_w = power;
        r.power_limit_w = limit;
        if let Some(mem) = cells.get(1) {
            let mut parts = mem.split('/');
            r.mem_used_mib = parts.next().and_then(mib);
            r.mem_total_mib = parts.next().and_then(mib);
        }
        r.util_pct =
            cells.get(2).and_then(|c| c.split_whitespace().next()).filter(|w| w.ends_with('%')).and_then(num);
        r.evidence = cx.evidence(no, line);
        push_reading(cx, r);
    }

    /// `|    0   N/A  N/A      428      C   python3      1130MiB |` (older drivers have no GI/CI).
    fn process_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, inner: &str) {
        let words: Vec<&str> = inner.split_whitespace().collect();
        let Some(gpu) = words.first().and_then(|w| w.parse::<u32>().ok()) else {
            return; // headers, `No running processes found`
        };
        let is_type = |w: &str| !w.is_empty() && w.split('+').all(|p| matches!(p, "C" | "G" | "M"));
        let Some(ty) = (2..words.len().saturating_sub(1)).find(|&i| is_type(words[i])) else {
            cx.issue_in(
                no,
                "a process row whose PID and type could not be told apart",
                "进程行中无法分辨 PID 和类型",
            );
            return;
        };
        let last = words[words.len() - 1];
        let p = GpuProcess {
            gpu: Some(gpu),
            pid: words[ty - 1].parse().ok(),
            name: words[ty + 1..words.len() - 1].join(" "),
            mem_mib: mib(last),
            evidence: cx.evidence(no, line),
        };
        push_process(cx, p);
    }

    // ----- `nvidia-smi -q` -----

    fn flush_query(&mut self, cx: &mut Cx<'_>) {
        let Some(q) = self.query.gpu.take() else { return };
        let mut r = q.r;
        r.power_w = q.draw.map(|d| d.1);
        r.power_limit_w = q.limit.map(|d| d.1);
        r.reasons_known = q.reasons_seen;
        if let Some((_, e)) = q.best {
            r.evidence = e;
        }
        for p in q.procs {
            push_process(cx, p);
        }
        push_reading(cx, r);
    }

    fn query_line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let Some(q) = self.query.gpu.as_mut() else {
            return; // `Timestamp`, `Driver Version`, `Attached GPUs` before the first GPU
        };
        let depth = indent(line);
        while q.stack.last().is_some_and(|(i, _)| *i >= depth) {
            q.stack.pop();
        }
        let Some((key, value)) = key_value(line) else {
            if q.stack.len() < MAX_Q_DEPTH {
                q.stack.push((depth, line.trim().to_owned()));
            }
            return;
        };
        let section = q.stack.last().map_or("", |(_, s)| s.as_str());
        let e = || EvidenceLine::quoted(cx.input, no, line);
        match (section, key) {
            ("", "Product Name") => q.r.name = Some(value.to_owned()),
            ("", "GPU UUID") => q.r.uuid = Some(value.to_owned()),
            ("", "Performance State") => q.r.pstate = Some(value.to_owned()),
            ("Clocks Event Reasons" | "Clocks Throttle Reasons", label) => {
                q.reasons_seen = true;
                if let Some(reason) = reason_of_label(label)
                    && is_active(value)
                {
                    add_reason(&mut q.r.reasons, reason);
                    if reason != "idle" {
                        q.consider(0, e());
                        q.detail(e());
                    }
                }
            }
            ("Clocks", "SM") => {
                q.r.sm_clock_mhz = num(value);
                q.consider(1, e());
                q.detail(e());
            }
            ("Max Clocks", "SM") => q.r.max_sm_clock_mhz = num(value),
            ("Utilization", "Gpu" | "GPU") => {
                q.r.util_pct = num(value);
                q.consider(2, e());
            }
            ("FB Memory Usage", "Total") => q.r.mem_total_mib = mib(value),
            ("FB Memory Usage", "Used") => q.r.mem_used_mib = mib(value),
            ("Temperature", "GPU Current Temp") => q.r.temp_c = num(value),
            ("GPU Power Readings" | "Power Readings", k) => {
                let draw = match k {
                    "Average Power Draw" => Some(0),
                    "Power Draw" => Some(1),
                    "Instantaneous Power Draw" => Some(2),
                    _ => None,
                };
                let limit = match k {
                    "Current Power Limit" => Some(0),
                    "Enforced Power Limit" => Some(1),
                    "Power Limit" => Some(2),
                    _ => None,
                };
                if let (Some(p), Some(w)) = (draw, num(value))
                    && q.draw.is_none_or(|(old, _)| p < old)
                {
                    if q.draw.is_none() {
                        q.detail(e());
                    }
                    q.draw = Some((p, w));
                }
                if let (Some(p), Some(w)) = (limit, num(value))
                    && q.limit.is_none_or(|(old, _)| p < old)
                {
                    q.limit = Some((p, w));
                }
            }
            ("Processes", "Process ID") => {
                q.proc_dropped = q.procs.len() >= MAX_PROCESSES;
                if !q.proc_dropped {
                    q.procs.push(GpuProcess {
                        gpu: Some(q.r.index),
                        pid: value.parse().ok(),
                        evidence: e(),
                        ..GpuProcess::default()
                    });
                }
            }
            ("Processes", "Name") => {
                if let Some(p) = q.procs.last_mut().filter(|_| !q.proc_dropped) {
                    p.name = value.to_owned();
                }
            }
            ("Processes", "Used GPU Memory") => {
                if let Some(p) = q.procs.last_mut().filter(|_| !q.proc_dropped) {
                    p.mem_mib = mib(value);
                }
            }
            _ => {}
        }
    }

    // ----- `--query-gpu … --format=csv` -----

    fn csv_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, t: &str) {
        let Some(csv) = self.csv.as_mut() else { return };
        let fields: Vec<&str> = t.split(',').map(str::trim).collect();
        let mut r = GpuReading { evidence: cx.evidence(no, line), ..GpuReading::default() };
        let mut index = None;
        let mut graphics = None;
        for (col, v) in csv.cols.iter().zip(&fields) {
            let text = || (!v.starts_with('[') && !v.is_empty()).then(|| (*v).to_owned());
            match col {
                Col::Index => index = v.parse::<u32>().ok(),
                Col::Name => r.name = text(),
                Col::Uuid => r.uuid = text(),
                Col::BusId => r.bus_id = text(),
                Col::Pstate => r.pstate = text(),
                Col::Sm => r.sm_clock_mhz = num(v),
                Col::Graphics => graphics = num(v),
                Col::MaxSm => r.max_sm_clock_mhz = num(v),
                Col::Power => r.power_w = r.power_w.or(num(v)),
                Col::PowerLimit => r.power_limit_w = r.power_limit_w.or(num(v)),
                Col::Util => r.util_pct = num(v),
                Col::MemUsed => r.mem_used_mib = mib(v),
                Col::MemTotal => r.mem_total_mib = mib(v),
                Col::Temp => r.temp_c = num(v),
                Col::ReasonMask => {
                    r.reasons_known = true;
                    let hex = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X"));
                    match hex.map(|h| u64::from_str_radix(h, 16)) {
                        Some(Ok(mask)) => {
                            r.reason_mask = Some(mask);
                            for reason in reasons_from_mask(mask) {
                                add_reason(&mut r.reasons, &reason);
                            }
                        }
                        Some(Err(_)) => cx.issue_in(
                            no,
                            format!("a reasons mask that is not hexadecimal: {v}"),
                            format!("降频原因掩码不是十六进制数：{v}"),
                        ),
                        None => {} // [N/A], [Not Supported]
                    }
                }
                Col::Reason(reason) => {
                    r.reasons_known = true;
                    if is_active(v) {
                        add_reason(&mut r.reasons, reason);
                    }
                }
                Col::Other => {}
            }
        }
        // Graphics and SM clocks are one clock domain on the datacenter parts this tool meets.
        r.sm_clock_mhz = r.sm_clock_mhz.or(graphics);
        let index = index
            .or_else(|| r.bus_id.as_ref().and_then(|b| self.bus_index.get(b).copied()))
            .unwrap_or(csv.rows);
        csv.rows += 1;
        r.index = index;
        if let Some(bus) = &r.bus_id {
            learn_bus(&mut self.bus_index, bus, index);
        }
        r.snapshot = self.group.id(&mut cx.facts.gpus, index);
        push_reading(cx, r);
    }

    // ----- `nvidia-smi dmon` -----

    fn dmon_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, t: &str) {
        let Some(dmon) = self.dmon.as_ref() else { return };
        let mut r = GpuReading { evidence: cx.evidence(no, line), ..GpuReading::default() };
        let mut index = None;
        for (col, v) in dmon.cols.iter().zip(t.split_whitespace()) {
            match col.as_str() {
                "gpu" => index = v.parse::<u32>().ok(),
                "pwr" => r.power_w = num(v),
                "gtemp" | "temp" => r.temp_c = num(v),
                "sm" => r.util_pct = num(v),
                "pclk" => r.sm_clock_mhz = num(v),
                "fb" => r.mem_used_mib = num(v),
                "pviol" => {
                    r.power_violation_pct = num(v);
                    r.reasons_known = true;
                    // Time spent power-capped during the interval: the SW power cap at work.
                    if r.power_violation_pct.is_some_and(|p| p > 0.0) {
                        add_reason(&mut r.reasons, "sw_power_cap");
                    }
                }
                "tviol" => r.thermal_violation = num(v).map(|x| x > 0.0),
                _ => {}
            }
        }
        let Some(index) = index else {
            cx.issue_in(no, "a dmon row without a GPU index", "dmon 行缺少 GPU 编号");
            return;
        };
        r.index = index;
        r.snapshot = self.group.id(&mut cx.facts.gpus, index);
        push_reading(cx, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::kind::InputKind;
    use crate::analyze::report::Verdict;
    use crate::analyze::{Analyzer, analyze};

    const IDLE: &str = include_str!("../../../../../tests/data/smi/smi_idle.txt");
    const LOAD_START: &str = include_str!("../../../../../tests/data/smi/smi_load_start.txt");
    const CAPPED: &str = include_str!("../../../../../tests/data/smi/smi_power_capped.txt");
    const Q_CAPPED: &str = include_str!("../../../../../tests/data/smi/smi_q_power_capped.txt");
    const SERIES: &str = include_str!("../../../../../tests/data/smi/smi_query_series_load.csv");
    const DMON: &str = include_str!("../../../../../tests/data/smi/smi_dmon_load.txt");
    const EIGHT: &str = include_str!("../../../../../tests/data/smi/synthetic_8gpu_one_slow.txt");

    /// Feed `text` to one parser directly, to look at its state.
    fn parser_after(text: &str) -> SmiParser {
        let mut facts = crate::analyze::facts::Facts::default();
        let mut issues = Vec::new();
        let mut cx = Cx {
            input: "smi",
            facts: &mut facts,
            issues: &mut issues,
            lang: crate::lang::Lang::En,
            vllm_needles: 0,
        };
        let mut p = SmiParser::default();
        for (i, line) in text.lines().enumerate() {
            p.line(&mut cx, i + 1, line);
        }
        p
    }

    /// Fuzzing-style inputs that grew the parser's state with the input: a new bus id per row,
    /// a deeper `-q` header per line, a process per `Process ID` line.
    #[test]
    fn state_is_bounded() {
        let rows: String = (0..MAX_BUS_IDS * 2)
            .map(|i| format!("|   {}  NVIDIA H200   On | 0000:{i:x}:00.0 Off |\n", i % 8))
            .collect();
        assert_eq!(parser_after(&format!("| NVIDIA-SMI 580.159.04 |\n{rows}")).bus_index.len(), MAX_BUS_IDS);
        let deep: String = (1..200).map(|k| format!("{}x\n", " ".repeat(k))).collect();
        let p = parser_after(&format!("GPU 00000000:00:06.0\n{deep}"));
        assert_eq!(p.query.gpu.as_ref().map(|q| q.stack.len()), Some(MAX_Q_DEPTH));
        let procs = "        Process ID : 1\n        Name : python\n".repeat(MAX_PROCESSES + 1);
        let p = parser_after(&format!(
            "GPU 00000000:00:06.0\n    Processes\n{procs}        Process ID : 2\n        Name : last\n"
        ));
        let q = p.query.gpu.as_ref().expect("a -q block is open");
        assert_eq!(q.procs.len(), MAX_PROCESSES);
        assert!(q.procs.iter().all(|p| p.name == "python" && p.pid == Some(1)));
    }

    fn read(text: &str) -> (GpuFacts, crate::analyze::report::Report) {
        let mut a = Analyzer::new();
        a.add_text("smi", text);
        let gpus = std::mem::take(&mut a.facts.gpus);
        (gpus, analyze(&[("smi", text)]))
    }

    /// Every line of a capture lands in exactly one nvidia_smi section with no issues.
    fn one_section(report: &crate::analyze::report::Report, text: &str) {
        let kinds: Vec<_> = report.inputs.iter().map(|s| (s.kind, s.lines)).collect();
        assert_eq!(kinds, vec![(InputKind::NvidiaSmi, [1, text.lines().count()])], "{kinds:?}");
        assert!(report.inputs[0].issues.is_empty(), "{:?}", report.inputs[0].issues);
    }

    #[test]
    fn idle_h200_all_forms() {
        let (g, report) = read(IDLE);
        one_section(&report, IDLE);
        // The table, -q and the CSV line: three readings of the one GPU.
        assert_eq!(g.readings.len(), 3);
        for r in &g.readings {
            assert_eq!((r.index, r.name.as_deref()), (0, Some("NVIDIA H200")));
            assert_eq!(r.util_pct, Some(0.0));
            assert_eq!((r.mem_used_mib, r.mem_total_mib), (Some(0.0), Some(143_771.0)));
        }
        let table = &g.readings[0];
        assert_eq!(
            (table.power_w, table.power_limit_w, table.temp_c),
            (Some(124.0), Some(700.0), Some(39.0))
        );
        assert_eq!(table.bus_id.as_deref(), Some("00000000:00:06.0"));
        assert!(table.evidence.text.contains("124W /  700W"), "{}", table.evidence.text);
        assert!(!table.reasons_known);
        let q = &g.readings[1];
        assert_eq!((q.sm_clock_mhz, q.max_sm_clock_mhz), (Some(1980.0), Some(1980.0)));
        assert_eq!((q.power_w, q.power_limit_w), (Some(124.16), Some(700.0)));
        assert_eq!(q.uuid.as_deref(), Some("GPU-42da6fc4-4fdc-8c63-c0a9-e37cb1219a40"));
        assert_eq!(q.temp_c, Some(39.0));
        assert!(q.evidence.text.starts_with("SM"), "{}", q.evidence.text);
        let csv = &g.readings[2];
        assert_eq!(csv.reason_mask, Some(1));
        for r in &g.readings[1..] {
            assert!(r.reasons_known);
            assert_eq!(r.reasons, ["idle"]);
        }
        // Three forms, three moments.
        let snaps: BTreeSet<u64> = g.readings.iter().map(|r| r.snapshot).collect();
        assert_eq!(snaps.len(), 3);
        assert!(g.processes.is_empty());
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn load_start_with_dmon_ramp() {
        let (g, report) = read(LOAD_START);
        one_section(&report, LOAD_START);
        let dmon: Vec<_> = g
            .readings
            .iter()
            .filter(|r| r.evidence.text.starts_with('0') && !r.evidence.text.contains(','))
            .collect();
        assert_eq!(dmon.len(), 5);
        assert_eq!(dmon[4].power_w, Some(689.0));
        assert_eq!(dmon[4].sm_clock_mhz, Some(1530.0));
        assert_eq!(dmon[4].util_pct, Some(99.0));
        // No pviol column: reasons unknown, not "none".
        assert!(!dmon[4].reasons_known);
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn power_capped_table_and_csv() {
        let (g, report) = read(CAPPED);
        one_section(&report, CAPPED);
        assert_eq!(g.readings.len(), 2);
        let table = &g.readings[0];
        assert_eq!(
            (table.power_w, table.util_pct, table.mem_used_mib),
            (Some(693.0), Some(99.0), Some(1139.0))
        );
        let csv = &g.readings[1];
        assert_eq!(csv.reasons, ["sw_power_cap"]);
        assert_eq!(csv.reason_mask, Some(4));
        assert_eq!((csv.sm_clock_mhz, csv.max_sm_clock_mhz), (Some(1470.0), Some(1980.0)));
        assert_eq!((csv.power_w, csv.power_limit_w), (Some(692.52), Some(700.0)));
        assert_eq!(
            g.processes,
            vec![GpuProcess {
                gpu: Some(0),
                pid: Some(428),
                name: "python3".to_owned(),
                mem_mib: Some(1130.0),
                evidence: g.processes[0].evidence.clone(),
            }]
        );
        // A lone GPU at its power limit is doing its job.
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn q_power_capped() {
        let (g, report) = read(Q_CAPPED);
        one_section(&report, Q_CAPPED);
        assert_eq!(g.readings.len(), 2);
        let q = &g.readings[0];
        assert_eq!(q.reasons, ["sw_power_cap"]);
        assert_eq!((q.sm_clock_mhz, q.max_sm_clock_mhz), (Some(1440.0), Some(1980.0)));
        assert_eq!((q.power_w, q.power_limit_w, q.temp_c), (Some(688.98), Some(700.0), Some(58.0)));
        assert_eq!(q.pstate.as_deref(), Some("P0"));
        // The reason line is the most telling; the clock and power lines back it.
        assert!(q.evidence.text.starts_with("SW Power Cap"), "{}", q.evidence.text);
        assert_eq!(q.evidence.line, 15);
        assert!(q.detail.iter().any(|e| e.text.starts_with("SM ") && e.text.contains("1440 MHz")));
        assert_eq!(g.readings[1].util_pct, Some(100.0));
        assert_eq!(g.processes.len(), 1);
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn csv_series() {
        let (g, report) = read(SERIES);
        one_section(&report, SERIES);
        assert_eq!(g.readings.len(), 14);
        for r in &g.readings {
            assert_eq!(r.reasons, ["sw_power_cap"]);
            let sm = r.sm_clock_mhz.unwrap();
            assert!((1440.0..=1515.0).contains(&sm), "{sm}");
            let w = r.power_w.unwrap();
            assert!((690.0..=700.0).contains(&w), "{w}");
            assert_eq!(r.power_limit_w, Some(700.0));
        }
        // One GPU, fourteen moments.
        assert_eq!(g.readings.last().unwrap().snapshot - g.readings[0].snapshot, 13);
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn dmon_with_violations() {
        let (g, report) = read(DMON);
        one_section(&report, DMON);
        assert_eq!(g.readings.len(), 6);
        assert_eq!(g.readings[0].power_violation_pct, Some(0.0));
        assert!(g.readings[0].reasons.is_empty());
        let r = &g.readings[1];
        assert_eq!(
            (r.power_w, r.sm_clock_mhz, r.util_pct, r.temp_c),
            (Some(691.0), Some(1500.0), Some(99.0), Some(60.0))
        );
        assert_eq!(
            (r.power_violation_pct, r.thermal_violation, r.mem_used_mib),
            (Some(100.0), Some(false), Some(1139.0))
        );
        assert_eq!(r.reasons, ["sw_power_cap"]);
        assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
    }

    #[test]
    fn eight_gpus_one_slow() {
        let (g, report) = read(EIGHT);
        one_section(&report, EIGHT);
        let table: Vec<_> = g.readings.iter().filter(|r| r.evidence.text.contains("W /")).collect();
        assert_eq!(table.len(), 8);
        assert!(table.windows(2).all(|w| w[0].snapshot == w[1].snapshot));
        assert_eq!(g.processes.len(), 8);
        let csv: Vec<_> = g.readings.iter().filter(|r| r.reason_mask.is_some()).collect();
        assert_eq!(csv.len(), 8);
        assert_eq!(csv[5].reasons, ["hw_slowdown"]);
        assert_eq!(csv[5].sm_clock_mhz, Some(800.0));
        assert_eq!(report.verdict, Verdict::TbtTail);
    }

    #[test]
    fn vllm_log_then_oom_then_smi() {
        let oom = include_str!("../../../../../tests/data/oom/h200_200gib.txt");
        let vllm = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%\n";
        let text = format!("{vllm}{oom}{Q_CAPPED}");
        let report = analyze(&[("paste", &text)]);
        let kinds: Vec<_> = report.inputs.iter().map(|s| (s.kind, s.lines)).collect();
        let (o, q) = (oom.lines().count(), Q_CAPPED.lines().count());
        // Inside a vLLM log the traceback's head stays with the log; the error line opens the OOM.
        assert_eq!(
            kinds,
            [
                (InputKind::VllmLog, [1, o]),
                (InputKind::OomTrace, [1 + o, 1 + o]),
                (InputKind::NvidiaSmi, [2 + o, 1 + o + q])
            ]
        );
        assert_eq!(report.findings[0].rule, "input-too-long");
    }

    #[test]
    fn q_processes() {
        let text = "GPU 00000000:18:00.0\n    Processes\n        GPU instance ID                   : N/A\n        Process ID                        : 31200\n            Type                          : C\n            Name                          : python -m vllm.entrypoints.openai.api_server\n            Used GPU Memory               : 128904 MiB\n        Process ID                        : 31377\n            Name                          : python3\n            Used GPU Memory               : 9000 MiB\n";
        let (g, report) = read(&format!("==============NVSMI LOG==============\n{text}"));
        assert_eq!(report.inputs.len(), 1, "{:?}", report.inputs);
        let p: Vec<_> = g.processes.iter().map(|p| (p.gpu, p.pid, p.name.as_str(), p.mem_mib)).collect();
        assert_eq!(
            p,
            [
                (Some(0), Some(31200), "python -m vllm.entrypoints.openai.api_server", Some(128_904.0)),
                (Some(0), Some(31377), "python3", Some(9000.0))
            ]
        );
    }

    #[test]
    fn smi_then_vllm_log_splits() {
        let vllm = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%\n";
        for smi in [CAPPED, Q_CAPPED, SERIES, DMON] {
            let text = format!("{smi}{vllm}");
            let report = analyze(&[("paste", &text)]);
            let kinds: Vec<_> = report.inputs.iter().map(|s| s.kind).collect();
            assert_eq!(kinds, [InputKind::NvidiaSmi, InputKind::VllmLog]);
            let n = smi.lines().count();
            assert_eq!(report.inputs[1].lines, [n + 1, n + 1]);
        }
        // A vLLM worker in the process table does not split the table.
        let table =
            CAPPED.replace("python3                               ", "python -m vllm.entrypoints.api_server");
        let report = analyze(&[("paste", &table)]);
        assert_eq!(report.inputs.len(), 1, "{:?}", report.inputs);
    }

    #[test]
    fn older_q_and_throttle_names() {
        let text = "==============NVSMI LOG==============\n\nAttached GPUs : 2\nGPU 00000000:00:1E.0\n    Product Name                    : Tesla V100-SXM2-16GB\n    Clocks Throttle Reasons\n        Idle                        : Not Active\n        SW Power Cap                : Not Active\n        HW Slowdown                 : Active\n            HW Thermal Slowdown     : Active\n            HW Power Brake Slowdown : Not Active\n    Utilization\n        Gpu                         : 97 %\n    Power Readings\n        Power Draw                  : 250.10 W\n        Power Limit                 : 300.00 W\n    Clocks\n        SM                          : 705 MHz\n\nGPU 00000000:00:1F.0\n    Product Name                    : Tesla V100-SXM2-16GB\n    Clocks\n        SM                          : 1530 MHz\n";
        let (g, report) = read(text);
        assert_eq!(report.inputs.len(), 1);
        assert_eq!(g.readings.len(), 2);
        let r = &g.readings[0];
        assert_eq!(r.reasons, ["hw_slowdown", "hw_thermal"]);
        assert_eq!(
            (r.util_pct, r.power_w, r.power_limit_w, r.sm_clock_mhz),
            (Some(97.0), Some(250.1), Some(300.0), Some(705.0))
        );
        assert!(r.evidence.text.starts_with("HW Slowdown"));
        assert_eq!((g.readings[1].index, g.readings[1].snapshot), (1, r.snapshot));
    }

    #[test]
    fn narrow_headers_do_not_swallow_prose() {
        let text = "utilization.gpu [%]\n87 %\nAPI server is up on port 8000\n";
        let (g, report) = read(text);
        assert_eq!(g.readings.len(), 1);
        assert_eq!(report.inputs[0].issues.len(), 1, "{:?}", report.inputs[0].issues);
        let p = SmiParser {
            mode: Mode::Dmon,
            dmon: Some(Dmon { cols: vec!["gpu".to_owned(), "sm".to_owned()] }),
            ..SmiParser::default()
        };
        assert!(p.continues("  0   45", "  0   45", 0));
        assert!(!p.continues("3 workers", "3 workers", 0));
    }

    #[test]
    fn masks_and_odd_values() {
        assert_eq!(reasons_from_mask(0x1ff).len(), 9);
        assert_eq!(reasons_from_mask(0x88), ["hw_slowdown", "hw_power_brake"]);
        assert_eq!(reasons_from_mask(0x200), Vec::<String>::new());
        assert_eq!(num("[N/A]"), None);
        assert_eq!(num("1455 MHz"), Some(1455.0));
        assert_eq!(num("39C"), Some(39.0));
        assert_eq!(mib("2 GiB"), Some(2048.0));
        assert_eq!(mib("1139MiB"), Some(1139.0));
        let text = "index, clocks.sm [MHz], utilization.gpu [%], clocks_throttle_reasons.active, clocks_throttle_reasons.hw_thermal_slowdown\n0, [N/A], [N/A], 0xZZ, Active\n1, 1410 MHz, 3, extra\n";
        let (g, report) = read(text);
        assert_eq!(g.readings.len(), 1);
        assert_eq!(g.readings[0].reasons, ["hw_thermal"]);
        assert_eq!(g.readings[0].sm_clock_mhz, None);
        assert_eq!(report.inputs[0].issues.len(), 2, "{:?}", report.inputs[0].issues);
    }

    #[test]
    fn total_on_garbage() {
        let nasty = [
            "|",
            "||||",
            "| 0 |",
            "|   7  |  |",
            "| N/A 3C P0 |",
            "+-",
            "GPU ::",
            "GPU 0:0\n  x : y",
            "# gpu pwr\n0 1 2\n1",
            "index\n\u{1F600}",
            "    Clocks\n        SM : é MHz",
            "| Processes: |\n| 0 C |",
            "| Processes: |\n| 0 1 C x |",
            "nvidia-smi\n0, 1",
            "index, name\n0",
            "| é 0 |\n| ééC P0 1W/é |",
            "GPU é:0\n    Clocks\n        SM é: 5",
            "# gpu pclk\n0 é",
            "index, power.draw [W]\n0, é W",
        ];
        for text in nasty {
            let t = format!("NVIDIA-SMI\n{text}\n");
            let _ = analyze(&[("x", &t)]);
        }
    }
}
