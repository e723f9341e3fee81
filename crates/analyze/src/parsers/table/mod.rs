//! Numbers from tables of any shape and from `key: value` lines, for the pastes no tool-specific
//! reader knows: markdown `|` tables (with or without the leading pipe), box-drawn tables
//! (`┃ │ ┡ ━`), tab- and space-aligned columns, CSV, and lines such as `Mean TTFT (ms): 12.5`,
//! `first_token latency(min, max, ave): 5.57s, 11.93s, 11.12s`, `eval rate: 23.98 tokens/s`,
//! `Process:34.76s (…)`, `prompt eval time = 146712.89 ms / 1294 tokens`.
//!
//! Each table row (or each block of `key: value` lines) becomes a [`Row`]: its figures under
//! canonical names, the lines they were read from, and which table it belongs to, so that rules
//! can compare rows of one table (TTFT across concurrency, decode rate across prompt lengths).
//!
//! ## Names
//!
//! Latencies in ms, suffixed by their statistic (`mean`, `median`, `p90`, `p95`, `p99`, `min`,
//! `max`, or `value` for one request's figure): `ttft_ms.*`, `itl_ms.*`, `tpot_ms.*`,
//! `e2e_ms.*`. Phases: `prefill_ms`, `prefill_tokens`, `prefill_tps`, `prefill_ms_per_token`,
//! `decode_ms`, `decode_tokens`, `decode_tps` (one stream's rate), `decode_ms_per_token`.
//! llama-bench: `pp_tps` / `tg_tps` with `pp_n` / `tg_n`, `model_gib`, `ngl`. Load and shape:
//! `concurrency`, `batch`, `rate`, `input_len`, `output_len`. Throughput summed over requests:
//! `req_per_s`, `output_tps`, `words_per_s`.
//!
//! Which tables are read: a header row must name at least one figure of the vocabulary
//! (`vocab.rs`). Rows keep their line numbers, so evidence cites what the user pasted. Memory is
//! bounded: at most [`MAX_ROWS`] rows per analysis, [`MAX_VALUES`] figures per row.
//!
//! Files: `vocab.rs` (names, units, numbers), `kv.rs` (`key: value` lines), this file (cells,
//! headers, rows, blocks), `tests.rs`.

mod kv;
pub(crate) mod vocab;

use super::Cx;
pub use crate::facts::table::{Row, TableFacts};
use crate::report::EvidenceLine;
use vocab::{
    Metric, Unit, bench_test, cell_number, figure, is_stat_cell, leading, metric, normal, split_unit, stat,
};

/// Rows kept per analysis.
pub const MAX_ROWS: usize = 512;
/// Figures kept per row.
pub const MAX_VALUES: usize = 64;
/// Lines kept per row.
const MAX_LINES: usize = 8;
/// Columns read per table.
const MAX_COLS: usize = 32;
/// Longest line read (longer ones are prose or data dumps, not table rows).
const MAX_LINE: usize = 4096;

impl Row {
    /// The value of figure `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(k, _, _)| k == name).map(|(_, v, _)| *v)
    }

    /// The line figure `name` was read from.
    pub fn line(&self, name: &str) -> Option<&EvidenceLine> {
        let i = self.values.iter().find(|(k, _, _)| k == name)?.2;
        self.lines.get(i as usize)
    }

    /// The first of `names` the row has, with its name.
    pub fn first<'a>(&self, names: &[&'a str]) -> Option<(f64, &'a str)> {
        names.iter().find_map(|n| self.get(n).map(|v| (v, *n)))
    }

    fn put(&mut self, name: String, v: f64, e: &EvidenceLine) {
        if !v.is_finite() || self.values.len() >= MAX_VALUES || self.values.iter().any(|(k, _, _)| *k == name)
        {
            return;
        }
        let i = match self.lines.iter().position(|l| l.line == e.line && l.input == e.input) {
            Some(i) => i,
            None if self.lines.len() < MAX_LINES => {
                self.lines.push(e.clone());
                self.lines.len() - 1
            }
            None => self.lines.len() - 1,
        };
        self.values.push((name, v, i as u8));
    }

    /// The typical value of `metric` (`ttft_ms`, `itl_ms` …): its mean, median or one request's
    /// value, with the figure's name.
    pub fn typical(&self, metric: &str) -> Option<(f64, String)> {
        ["mean", "median", "value"].iter().find_map(|s| {
            let n = format!("{metric}.{s}");
            self.get(&n).map(|v| (v, n))
        })
    }

    /// The highest tail percentile of `metric` read: p99, else p95, else p90.
    pub fn tail(&self, metric: &str) -> Option<(f64, String)> {
        ["p99.9", "p99", "p95", "p90"].iter().find_map(|s| {
            let n = format!("{metric}.{s}");
            self.get(&n).map(|v| (v, n))
        })
    }

    /// Prompt tokens of the row's request(s).
    pub fn prompt_tokens(&self) -> Option<f64> {
        self.get("prefill_tokens").or(self.get("input_len")).filter(|n| *n > 0.0)
    }

    /// One stream's time per generated token (ms), from what the row says: a per-token time,
    /// a generation time over its tokens, a single stream's rate or llama-bench's `tg`. With the
    /// figure it came from.
    pub fn decode_ms_per_token(&self) -> Option<(f64, &'static str)> {
        if let Some(v) = self.get("decode_ms_per_token") {
            return Some((v, "decode_ms_per_token"));
        }
        if let (Some(ms), Some(n)) =
            (self.get("decode_ms"), self.get("decode_tokens").or(self.get("output_len")))
            && n >= 1.0
        {
            return Some((ms / n, "decode_ms"));
        }
        for k in ["decode_tps", "tg_tps"] {
            if let Some(r) = self.get(k).filter(|r| *r > 0.0) {
                return Some((1000.0 / r, k));
            }
        }
        None
    }

    /// A figure that says how the service performed (not only how it was loaded).
    pub fn has_performance(&self) -> bool {
        self.values.iter().any(|(k, _, _)| {
            k.starts_with("ttft_ms.")
                || k.starts_with("itl_ms.")
                || k.starts_with("tpot_ms.")
                || k.starts_with("e2e_ms.")
                || k.starts_with("prefill_")
                || k.starts_with("decode_")
                || matches!(k.as_str(), "pp_tps" | "tg_tps" | "output_tps" | "req_per_s" | "words_per_s")
        })
    }
}

impl TableFacts {
    fn push(&mut self, row: Row) {
        if !row.has_performance() {
            return;
        }
        if self.rows.len() < MAX_ROWS {
            self.rows.push(row);
        } else {
            self.dropped += 1;
        }
    }

    fn new_table(&mut self) -> u32 {
        self.next_table = self.next_table.wrapping_add(1);
        self.next_table
    }

    /// Figures that show the service at work: a table row with a performance figure, or a block
    /// of `key: value` lines with two (one figure in prose, `Restarting in 5000ms`, is not).
    pub fn health_evidence(&self) -> bool {
        self.rows.iter().any(|r| {
            let n = r.values.iter().filter(|(k, _, _)| {
                let one = Row { values: vec![((*k).clone(), 0.0, 0)], ..Row::default() };
                one.has_performance()
            });
            if r.block { n.count() >= 2 } else { n.count() >= 1 }
        })
    }

    /// The rows of each table, in input order.
    pub fn tables(&self) -> Vec<Vec<&Row>> {
        let mut out: Vec<Vec<&Row>> = Vec::new();
        for r in &self.rows {
            match out.iter_mut().find(|t| t[0].table == r.table) {
                Some(t) => t.push(r),
                None => out.push(vec![r]),
            }
        }
        out
    }
}

/// How a table is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Pipes,
    Tabs,
    Spaces,
    Csv,
}

/// What a header cell names.
#[derive(Clone, Debug, PartialEq)]
enum Col {
    /// A figure: its metric, statistic and unit, and a variant when two columns name the same
    /// figure (`k8s TTFT mean`, `llm-d TTFT mean`).
    Fig {
        metric: Metric,
        stat: &'static str,
        unit: Unit,
        variant: Option<String>,
    },
    /// A statistic: the rows name the metrics (aiperf's `Statistic | avg | p99`).
    Stat {
        stat: &'static str,
        unit: Unit,
    },
    /// llama-bench's `test` and `t/s`.
    Test,
    TestRate,
    /// Anything else (model, backend, a configuration's name).
    Other(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// One row per line.
    Rows,
    /// The first column names a metric, the other columns are statistics: one row in all.
    Stats,
    /// The first column names a metric, each other column is a configuration: a row per column.
    Configs,
}

struct Table {
    id: u32,
    shape: Shape,
    cols: Vec<Col>,
    mode: Mode,
    /// Rows being built (the table's one row in `Stats`, a row per column in `Configs`).
    open: Vec<Row>,
    /// `Configs` whose header cells are values of the first column's metric (`prompt length |
    /// 0-100 | 100-200`).
    header_values: Option<(Metric, Unit, Vec<Option<f64>>, EvidenceLine)>,
    data_rows: usize,
}

/// The reader: a table being read, or a block of `key: value` lines.
#[derive(Default)]
pub struct TableReader {
    table: Option<Table>,
    block: Option<Row>,
    /// The id the blocks of this section share (blocks of one paste are runs of one harness).
    blocks_id: Option<u32>,
    /// A row of words only (`| Metric | baseline | interval=2 |`): the header of a table whose
    /// rows name the metrics, if the next row names one.
    candidate: Option<(usize, String, Shape)>,
}

fn is_box_rule(t: &str) -> bool {
    t.chars().all(|c| "┏┓┗┛┡┩┠┨┣┫┳┻╇╋━─┌┐└┘├┤┬┴┼═╞╡╪╒╕╘╛╔╗╚╝╠╣╦╩╬ ".contains(c))
}

/// A markdown separator row: `|---|:--:|`, `-- | --`.
fn is_separator(cells: &[&str]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | '=' | ' ' | '—' | '─' | '━')))
        && cells.iter().any(|c| c.contains(['-', '=', '—', '─', '━']))
}

fn split(t: &str, shape: Shape) -> Vec<&str> {
    let mut v: Vec<&str> = match shape {
        Shape::Pipes => t.split(['|', '┃', '│', '║']).map(str::trim).collect(),
        Shape::Tabs => t.split('\t').map(str::trim).collect(),
        Shape::Csv => t.split(',').map(str::trim).collect(),
        Shape::Spaces => {
            let mut v = Vec::new();
            let mut rest = t.trim();
            while !rest.is_empty() && v.len() <= MAX_COLS {
                match rest.find("  ") {
                    Some(i) => {
                        v.push(&rest[..i]);
                        rest = rest[i..].trim_start();
                    }
                    None => {
                        v.push(rest);
                        rest = "";
                    }
                }
            }
            v
        }
    };
    if shape == Shape::Pipes {
        if v.first() == Some(&"") {
            v.remove(0);
        }
        if v.last() == Some(&"") {
            v.pop();
        }
    }
    v.truncate(MAX_COLS);
    v
}

fn shape_of(t: &str) -> Shape {
    if t.contains(['|', '┃', '│', '║']) {
        Shape::Pipes
    } else if t.contains('\t') {
        Shape::Tabs
    } else if t.contains(',') && !t.contains([':', '=']) {
        Shape::Csv
    } else {
        Shape::Spaces
    }
}

fn strip_marks(c: &str) -> &str {
    c.trim().trim_matches(|ch: char| matches!(ch, '*' | '`')).trim()
}

/// What a header cell names.
fn col(cell: &str) -> Col {
    let c = strip_marks(cell);
    let (name, unit) = split_unit(c);
    let k = normal(name);
    if k == "test" {
        return Col::Test;
    }
    if matches!(k.as_str(), "t/s" | "tok/s" | "tokens/s") {
        return Col::TestRate;
    }
    if is_stat_cell(c) {
        return Col::Stat { stat: stat(&k), unit };
    }
    let unit = if unit == Unit::None { vocab::key_unit(&k) } else { unit };
    // `FTL(ave)(s)`: the statistic in brackets inside the name.
    match metric(&k) {
        Some(m) => Col::Fig { metric: m, stat: stat(&k), unit, variant: None },
        None => Col::Other(c.to_owned()),
    }
}

/// A header cell of a `Configs` table read as a number: `128`, `0-100` (the middle), `8000+`.
fn header_value(cell: &str) -> Option<f64> {
    let c = strip_marks(cell);
    let (a, rest) = leading(c)?;
    let rest = rest.trim();
    if rest.is_empty() || rest == "+" {
        return Some(a);
    }
    let b = rest.strip_prefix(['-', '–', '~'])?;
    let (b, tail) = leading(b.trim())?;
    tail.trim().is_empty().then_some((a + b) / 2.0)
}

impl TableReader {
    /// Read one line (any section). Blank lines end tables and blocks.
    pub fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        if line.len() > MAX_LINE {
            self.end(cx);
            return;
        }
        let t = line.trim();
        if t.is_empty() {
            self.end(cx);
            return;
        }
        if is_box_rule(t) {
            return;
        }
        if let Some(table) = &self.table {
            let shape = table.shape;
            let fits = match shape {
                Shape::Pipes => shape_of(t) == Shape::Pipes,
                Shape::Tabs => t.contains('\t'),
                Shape::Csv => t.contains(','),
                Shape::Spaces => !t.contains(['|', '\t']) && !t.contains([':', '=']),
            };
            if fits {
                let cells = split(t, shape);
                if is_separator(&cells) {
                    return;
                }
                if cells.len() + 1 >= table.cols.len() && cells.len() <= table.cols.len() + 1 {
                    self.table_row(cx, no, t, &cells);
                    return;
                }
            }
            self.end_table(cx);
        }
        // A header?
        let shape = shape_of(t);
        let cells = split(t, shape);
        if matches!(shape, Shape::Pipes | Shape::Tabs) && is_separator(&cells) {
            return;
        }
        if let Some((cno, ctext, cshape)) = self.candidate.take()
            && cshape == shape
            && self.configs_from(cx, cno, &ctext, shape, &cells)
        {
            let cells = split(t, shape);
            self.table_row(cx, no, t, &cells);
            return;
        }
        if cells.len() >= 2 && self.header(cx, no, t, shape, &cells) {
            return;
        }
        if matches!(shape, Shape::Pipes | Shape::Tabs)
            && cells.len() >= 2
            && cells.iter().all(|c| cell_number(c).is_none())
        {
            self.candidate = Some((no, t.chars().take(MAX_LINE).collect(), shape));
            return;
        }
        self.kv(cx, no, t);
    }

    /// The candidate header `ctext` opens a `Configs` table when `row` names a metric in its
    /// first cell and has numbers in the others, as many cells as the header.
    fn configs_from(&mut self, cx: &mut Cx<'_>, cno: usize, ctext: &str, shape: Shape, row: &[&str]) -> bool {
        let head = split(ctext, shape);
        if head.len() != row.len() || head.len() < 2 || row_metric(row[0]).is_none() {
            return false;
        }
        if !row[1..].iter().any(|c| cell_number(c).is_some()) {
            return false;
        }
        self.end(cx);
        let id = cx.facts.tables.new_table();
        let mut cols: Vec<Col> = head.iter().map(|c| Col::Other(strip_marks(c).to_owned())).collect();
        cols.truncate(MAX_COLS);
        let _ = cno;
        self.table = Some(Table {
            id,
            shape,
            cols,
            mode: Mode::Configs,
            open: Vec::new(),
            header_values: None,
            data_rows: 0,
        });
        true
    }

    fn header(&mut self, cx: &mut Cx<'_>, no: usize, t: &str, shape: Shape, cells: &[&str]) -> bool {
        if is_separator(cells) {
            return false;
        }
        let cols: Vec<Col> = cells.iter().map(|c| col(c)).collect();
        let named = cols.iter().filter(|c| !matches!(c, Col::Other(_))).count();
        let numeric = cells.iter().filter(|c| cell_number(c).is_some()).count();
        let need = if matches!(shape, Shape::Spaces | Shape::Csv) { 2 } else { 1 };
        // A header names figures; a row of numbers is not one.
        if named < need || numeric * 2 > cells.len() {
            return false;
        }
        // `key: value` lines are not headers (`Process:34.76s, Generate:9.61s`).
        if shape != Shape::Pipes && t.contains([':', '=']) {
            return false;
        }
        self.end(cx);
        let stats = cols[1..].iter().filter(|c| matches!(c, Col::Stat { .. })).count();
        let figs =
            cols[1..].iter().filter(|c| matches!(c, Col::Fig { .. } | Col::Test | Col::TestRate)).count();
        let others = cols[1..].iter().filter(|c| matches!(c, Col::Other(_))).count();
        let mode = if stats >= 2 && figs == 0 {
            Mode::Stats
        } else if figs == 0 && others >= 1 && stats == 0 {
            Mode::Configs
        } else {
            Mode::Rows
        };
        let id = cx.facts.tables.new_table();
        let mut cols = cols;
        name_variants(&mut cols, cells);
        let e = cx.evidence(no, t);
        let header_values = match (mode, &cols[0]) {
            (Mode::Configs, Col::Fig { metric, unit, .. }) => {
                Some((*metric, *unit, cells[1..].iter().map(|c| header_value(c)).collect(), e))
            }
            _ => None,
        };
        self.table = Some(Table { id, shape, cols, mode, open: Vec::new(), header_values, data_rows: 0 });
        true
    }

    fn table_row(&mut self, cx: &mut Cx<'_>, no: usize, t: &str, cells: &[&str]) {
        let Some(table) = self.table.as_mut() else { return };
        let e = cx.evidence(no, t);
        table.data_rows += 1;
        match table.mode {
            Mode::Rows => {
                let rows = rows_of(table, cells, &e);
                for r in rows {
                    cx.facts.tables.push(r);
                }
            }
            Mode::Stats => {
                let Some((m, unit)) = row_metric(cells[0]) else { return };
                if table.open.is_empty() {
                    table.open.push(Row { table: table.id, ..Row::default() });
                }
                let row = &mut table.open[0];
                for (cell, c) in cells.iter().zip(&table.cols).skip(1) {
                    let Col::Stat { stat, unit: cu } = c else { continue };
                    let Some((v, u)) = cell_number(cell) else { continue };
                    let u = pick_unit(u, unit, *cu);
                    if let Some((name, v)) = figure(m, stat, u, v) {
                        row.put(name, v, &e);
                    }
                }
            }
            Mode::Configs => {
                let Some((m, unit)) = row_metric(cells[0]) else {
                    // Not a metric per row after all: read it as a plain row.
                    table.mode = Mode::Rows;
                    table.header_values = None;
                    for r in rows_of(table, cells, &e) {
                        cx.facts.tables.push(r);
                    }
                    return;
                };
                let n = table.cols.len();
                while table.open.len() < n - 1 {
                    let i = table.open.len() + 1;
                    let label = match &table.cols[i] {
                        Col::Other(s) | Col::Fig { variant: Some(s), .. } => s.clone(),
                        _ => String::new(),
                    };
                    let mut row = Row { table: table.id, subject: label.clone(), label, ..Row::default() };
                    if let Some((hm, hu, values, he)) = &table.header_values
                        && let Some(Some(v)) = values.get(i - 1)
                        && let Some((name, v)) = figure(*hm, "value", *hu, *v)
                    {
                        row.put(name, v, he);
                    }
                    table.open.push(row);
                }
                for (i, cell) in cells.iter().enumerate().skip(1) {
                    let Some(row) = table.open.get_mut(i - 1) else { break };
                    let Some((v, u)) = cell_number(cell) else { continue };
                    let u = pick_unit(u, unit, Unit::None);
                    if let Some((name, v)) = figure(m, stat(&normal(strip_marks(cells[0]))), u, v) {
                        row.put(name, v, &e);
                    }
                }
            }
        }
    }

    fn end_table(&mut self, cx: &mut Cx<'_>) {
        if let Some(table) = self.table.take() {
            for r in table.open {
                cx.facts.tables.push(r);
            }
        }
    }

    fn end_block(&mut self, cx: &mut Cx<'_>) {
        if let Some(b) = self.block.take() {
            cx.facts.tables.push(b);
        }
    }

    /// End what is open (a blank line, the end of the section, another format's header).
    pub fn end(&mut self, cx: &mut Cx<'_>) {
        self.end_table(cx);
        self.end_block(cx);
    }

    fn kv(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) {
        let figs = kv::figures(t);
        if figs.is_empty() {
            // A heading between blocks (`#### 2nd request:`, `=====`) ends the block.
            if t.starts_with(['#', '=', '-']) {
                self.end_block(cx);
            }
            return;
        }
        // A figure the block already has starts the next block (one line per request).
        if let Some(b) = &self.block
            && figs.iter().any(|(k, _)| b.values.iter().any(|(bk, _, _)| bk == k))
        {
            self.end_block(cx);
        }
        let id = match self.blocks_id {
            Some(id) => id,
            None => {
                let id = cx.facts.tables.new_table();
                self.blocks_id = Some(id);
                id
            }
        };
        let e = cx.evidence(no, t);
        let b = self.block.get_or_insert_with(|| Row { table: id, block: true, ..Row::default() });
        for (k, v) in figs {
            b.put(k, v, &e);
        }
    }
}

/// Unit of a cell's number: its own, else the row name's, else the column's.
fn pick_unit(cell: Unit, row: Unit, col: Unit) -> Unit {
    [cell, row, col].into_iter().find(|u| *u != Unit::None).unwrap_or(Unit::None)
}

/// The metric a row's first cell names (`Time To First Token (ms)`, `**P50 ITL (ms)**`).
fn row_metric(cell: &str) -> Option<(Metric, Unit)> {
    let (name, unit) = split_unit(strip_marks(cell));
    let k = normal(name);
    let m = metric(&k)?;
    let unit = match unit {
        Unit::None if k.contains("tokens/sec") || k.contains("tok/s") => Unit::TokRate,
        u => u,
    };
    Some((m, unit))
}

/// Two columns naming the same figure (`k8s TTFT mean`, `llm-d TTFT mean`) are variants of one
/// table: their first words tell them apart.
fn name_variants(cols: &mut [Col], cells: &[&str]) {
    let key = |c: &Col| match c {
        Col::Fig { metric, stat, .. } => Some((*metric, *stat)),
        _ => None,
    };
    let n = cols.len();
    for i in 0..n {
        let Some(ki) = key(&cols[i]) else { continue };
        let dup = (0..n).any(|j| j != i && key(&cols[j]) == Some(ki));
        let words: Vec<&str> = cells[i].split_whitespace().collect();
        if dup
            && words.len() >= 2
            && metric(&normal(words[0])).is_none()
            && let Col::Fig { variant, .. } = &mut cols[i]
        {
            *variant = Some(words[0].to_owned());
        }
    }
}

/// A data row of a `Rows` table: one row, or one per variant.
fn rows_of(table: &Table, cells: &[&str], e: &EvidenceLine) -> Vec<Row> {
    let mut shared = Row { table: table.id, ..Row::default() };
    let mut variants: Vec<(String, Row)> = Vec::new();
    let mut label: Vec<&str> = Vec::new();
    let mut test: Option<(bool, f64)> = None;
    let mut rate: Option<f64> = None;
    for (cell, c) in cells.iter().zip(&table.cols) {
        let cell = strip_marks(cell);
        match c {
            Col::Test => test = bench_test(cell),
            Col::TestRate => rate = cell_number(cell).map(|(v, _)| v),
            Col::Other(_) | Col::Stat { .. } => {
                if !cell.is_empty() {
                    label.push(cell);
                }
            }
            Col::Fig { metric, stat, unit, variant } => {
                if matches!(metric, Metric::Size | Metric::Ngl) && !cell.is_empty() {
                    label.push(cell);
                }
                let Some((v, u)) = cell_number(cell) else { continue };
                let Some((name, v)) = figure(*metric, stat, pick_unit(u, *unit, Unit::None), v) else {
                    continue;
                };
                match variant {
                    None => shared.put(name, v, e),
                    Some(var) => {
                        let i = match variants.iter().position(|(n, _)| n == var) {
                            Some(i) => i,
                            None => {
                                variants.push((var.clone(), Row { table: table.id, ..Row::default() }));
                                variants.len() - 1
                            }
                        };
                        variants[i].1.put(name, v, e);
                    }
                }
            }
        }
    }
    let joined = label.join(" | ");
    shared.subject = joined.clone();
    shared.label = joined;
    if let (Some((prefill, n)), Some(r)) = (test, rate) {
        let (k, kn) = if prefill { ("pp_tps", "pp_n") } else { ("tg_tps", "tg_n") };
        shared.put(k.to_owned(), r, e);
        shared.put(kn.to_owned(), n, e);
        shared.label = format!("{} | {}{}", shared.subject, if prefill { "pp" } else { "tg" }, n);
    }
    if variants.is_empty() {
        return vec![shared];
    }
    variants
        .into_iter()
        .map(|(var, mut r)| {
            for (k, v, i) in &shared.values {
                if let Some(l) = shared.lines.get(*i as usize) {
                    r.put(k.clone(), *v, l);
                }
            }
            // Each variant is its own series: rows of one variant share a table id.
            r.table = 0x8000_0000 | (table.id.wrapping_mul(31) ^ hash(&var)) & 0x7fff_ffff;
            r.label = if shared.label.is_empty() { var.clone() } else { format!("{var} | {}", shared.label) };
            r.subject = r.label.clone();
            r
        })
        .collect()
}

fn hash(s: &str) -> u32 {
    s.bytes().fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619))
}

#[cfg(test)]
mod tests;
