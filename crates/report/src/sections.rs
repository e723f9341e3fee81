//! The analysis report as sections, built once and laid out by two renderers: the terminal's
//! text (`triage analyze`, the CLI's `render`) and Markdown ([`crate::markdown`], which
//! `triage analyze --format markdown` prints and the site copies).
//!
//! What is shared lives here: which parts of the report are shown and in what order, the fleet
//! tables (columns and cells, with the cells that came from outside marked so Markdown can make
//! them inert), and the words of the headings and labels in both languages ([`Words`]). What
//! stays with each renderer is layout, and the few things only one of them shows, said where
//! they are: the terminal has a title line with counts, up to five issues per input, the
//! slowest-requests table and why a series went stale; Markdown has each figure's unit, the
//! GPUs' UUIDs and up to three issues per input.

use std::collections::BTreeMap;

use crate::prometheus::{Citation, PrometheusInput};
use crate::{EvidenceLine, Figure, Finding, Report, short_number};
use triage_base::lang::Lang;

/// The headings and labels both renderers print, in the report's language. Headings and
/// labels are written as the terminal shows them (lower case, a colon where the terminal puts
/// one); Markdown capitalises them ([`Words::capital`]).
#[derive(Clone, Copy, Debug)]
pub struct Words(pub Lang);

impl Words {
    fn l(self, en: &'static str, zh: &'static str) -> &'static str {
        self.0.pick(en, zh)
    }
    /// The first letter upper case (Markdown's headings and labels).
    pub fn capital(s: &str) -> String {
        let mut c = s.chars();
        c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
    }
    /// The colon a terminal heading ends with.
    pub fn colon(self) -> &'static str {
        self.l(":", "：")
    }
    /// `confidence`
    pub fn confidence(self) -> &'static str {
        self.l("confidence", "可信度")
    }
    /// `about:`
    pub fn about(self) -> &'static str {
        self.l("about:", "对象：")
    }
    /// `evidence:`
    pub fn evidence(self) -> &'static str {
        self.l("evidence:", "证据：")
    }
    /// Between a cited value and its time.
    pub fn at(self) -> &'static str {
        self.l("at", "于")
    }
    /// `graph`
    pub fn graph(self) -> &'static str {
        self.l("graph", "图表")
    }
    /// `what to change:`
    pub fn what_to_change(self) -> &'static str {
        self.l("what to change:", "该改什么：")
    }
    /// `next checks:`
    pub fn next_checks(self) -> &'static str {
        self.l("next checks:", "下一步检查：")
    }
    /// `from Prometheus`
    pub fn from_prometheus(self) -> &'static str {
        self.l("from Prometheus", "来自 Prometheus")
    }
    /// `server:`
    pub fn server(self) -> &'static str {
        self.l("server:", "服务器：")
    }
    /// `window:`
    pub fn window(self) -> &'static str {
        self.l("window:", "时间窗：")
    }
    /// `step`
    pub fn step(self) -> &'static str {
        self.l("step", "步长")
    }
    /// `selector:`
    pub fn selector(self) -> &'static str {
        self.l("selector:", "选择器：")
    }
    /// `scraping:`
    pub fn scraping(self) -> &'static str {
        self.l("scraping:", "抓取：")
    }
    /// `cut:`
    pub fn cut(self) -> &'static str {
        self.l("cut:", "截断：")
    }
    /// `stale: N series stopped being scraped`.
    pub fn stale(self, series: usize) -> String {
        self.0.pick(
            format!("stale: {series} series stopped being scraped"),
            format!("过期：{series} 个序列不再被抓取"),
        )
    }
    /// Why a series is stale, after [`Words::stale`] (the terminal says it).
    pub fn stale_why(self) -> &'static str {
        self.l(
            " (a target that stopped answering, not a counter that stopped)",
            "（目标不再应答，而不是计数器停止）",
        )
    }
    /// `read: N series, M points`.
    pub fn read(self, series: usize, points: u64) -> String {
        self.0.pick(
            format!("read: {series} series, {points} points"),
            format!("读取：{series} 个序列，{points} 个点"),
        )
    }
    /// `replicas ranked by`
    pub fn replicas_ranked_by(self) -> &'static str {
        self.l("replicas ranked by", "副本排序依据")
    }
    /// `gateways (llm_stream_*, as clients saw it):`
    pub fn gateways(self) -> &'static str {
        self.l("gateways (llm_stream_*, as clients saw it):", "网关（llm_stream_*，客户端视角）：")
    }
    /// `GPUs ranked by SM clock against their node's peers`
    pub fn gpus_ranked(self) -> &'static str {
        self.l("GPUs ranked by SM clock against their node's peers", "GPU 按 SM 时钟与同节点其他卡之比排序")
    }
    /// Before the terminal's fleet tables.
    pub fn fleet(self) -> &'static str {
        self.l("fleet — ", "集群 — ")
    }
    /// `inputs`
    pub fn inputs(self) -> &'static str {
        self.l("inputs", "输入")
    }
    /// `figures`
    pub fn figures(self) -> &'static str {
        self.l("figures", "指标")
    }
    /// One issue of an input: `line 12: …`.
    pub fn issue(self, line: usize, message: &str) -> String {
        self.0.pick(format!("line {line}: {message}"), format!("第 {line} 行：{message}"))
    }
}

/// A table column: its name and how the terminal lays it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The name in Markdown's header row.
    pub name: &'static str,
    /// The terminal's name, width and side (`None`: not shown on a terminal, too wide).
    pub terminal: Option<(&'static str, usize, Align)>,
}

/// Which side a terminal column's text keeps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left.
    Right,
}

impl Column {
    const fn left(name: &'static str, width: usize) -> Column {
        Column { name, terminal: Some((name, width, Align::Left)) }
    }
    const fn right(name: &'static str, width: usize) -> Column {
        Column { name, terminal: Some((name, width, Align::Right)) }
    }
}

/// One cell: its text, and whether the text came from outside (a label value, a server's
/// answer), which Markdown escapes; the report's own words and numbers are written as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The text, as it will be shown.
    pub text: String,
    /// Came from outside: Markdown escapes it.
    pub outside: bool,
}

fn outside(s: Option<&str>) -> Cell {
    Cell { text: s.unwrap_or("-").to_owned(), outside: true }
}

fn ours(text: String) -> Cell {
    Cell { text, outside: false }
}

/// A table of the fleet view.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// The rows: one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// Rows left out (the GPU table shows at most [`MAX_GPU_ROWS`]).
    pub more: usize,
}

/// GPUs shown in the fleet view's GPU table.
pub const MAX_GPU_ROWS: usize = 32;

/// A finding as both renderers show it: its place in the ranking, the finding, what it is
/// about and each evidence line with the Prometheus citation behind it.
#[derive(Clone, Debug)]
pub struct FindingSection<'a> {
    /// 1-based.
    pub number: usize,
    /// The finding.
    pub finding: &'a Finding,
    /// The subject's labels ([`crate::Subject::describe`]).
    pub about: Option<String>,
    /// Each evidence line, with the citation behind it when it came from Prometheus.
    pub evidence: Vec<(&'a EvidenceLine, Option<&'a Citation>)>,
}

/// The Prometheus window read, and the fleet tables (each `None` when it has no rows).
#[derive(Clone, Debug)]
pub struct PrometheusSection<'a> {
    /// The window read: server, window, queries, cuts.
    pub input: &'a PrometheusInput,
    /// Replicas ranked across the fleet.
    pub replicas: Option<Table>,
    /// Gateways, as clients saw them.
    pub gateways: Option<Table>,
    /// GPUs against their peers (the first [`MAX_GPU_ROWS`]).
    pub gpus: Option<Table>,
}

/// The report as sections, in the order both renderers show them.
#[derive(Clone, Debug)]
pub struct Sections<'a> {
    /// The report.
    pub report: &'a Report,
    /// Headings and labels in the report's language.
    pub words: Words,
    /// Every finding, ranked.
    pub findings: Vec<FindingSection<'a>>,
    /// The Prometheus window, when the report read one.
    pub prometheus: Option<PrometheusSection<'a>>,
    /// The figures shown as figures: all but the `*.slowest` tables.
    pub figures: Vec<(&'a String, &'a Figure)>,
}

impl<'a> Sections<'a> {
    /// `r` as sections, headings in `lang`.
    pub fn of(r: &'a Report, lang: Lang) -> Sections<'a> {
        let findings = r
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| FindingSection {
                number: i + 1,
                finding: f,
                about: f.subject.as_ref().map(crate::Subject::describe),
                evidence: f.evidence.iter().map(|e| (e, r.citation(e))).collect(),
            })
            .collect();
        Sections {
            report: r,
            words: Words(lang),
            findings,
            prometheus: r.prometheus.as_ref().map(prometheus_section),
            figures: plain_figures(&r.figures),
        }
    }
}

fn plain_figures(figures: &BTreeMap<String, Figure>) -> Vec<(&String, &Figure)> {
    figures.iter().filter(|(k, _)| !k.ends_with(".slowest")).collect()
}

fn table(columns: Vec<Column>, rows: Vec<Vec<Cell>>, more: usize) -> Option<Table> {
    (!rows.is_empty()).then_some(Table { columns, rows, more })
}

fn prometheus_section(p: &PrometheusInput) -> PrometheusSection<'_> {
    let replicas = p
        .fleet
        .replicas
        .iter()
        .map(|r| {
            vec![
                outside(r.subject.instance.as_deref().or(r.subject.pod.as_deref())),
                ours(r.verdict.as_str().to_owned()),
                outside(r.ttft_p99.as_deref()),
                outside(r.itl_p99.as_deref()),
                ours(short_number(r.waiting_max)),
                ours(short_number(r.kv_usage_max)),
                ours(short_number(r.generation_tokens_per_s)),
            ]
        })
        .collect();
    let gateways = p
        .fleet
        .gateways
        .iter()
        .map(|g| {
            vec![
                outside(g.subject.instance.as_deref().or(g.subject.pod.as_deref())),
                outside(g.ttft_p99.as_deref()),
                outside(g.itl_p99.as_deref()),
                ours(short_number(g.requests_per_s)),
                ours(short_number(g.errors_per_s)),
            ]
        })
        .collect();
    let gpus = p
        .fleet
        .gpus
        .iter()
        .take(MAX_GPU_ROWS)
        .map(|g| {
            vec![
                outside(g.subject.hostname.as_deref().or(g.subject.instance.as_deref())),
                outside(g.subject.gpu.as_deref()),
                outside(g.subject.uuid.as_deref()),
                ours(short_number(Some(g.sm_clock_mhz))),
                ours(short_number(g.peer_median_mhz)),
                ours(short_number(g.ratio)),
                ours(short_number(g.temp_c)),
                ours(short_number(g.util_pct)),
            ]
        })
        .collect();
    PrometheusSection {
        input: p,
        replicas: table(REPLICA_COLUMNS.to_vec(), replicas, 0),
        gateways: table(GATEWAY_COLUMNS.to_vec(), gateways, 0),
        gpus: table(GPU_COLUMNS.to_vec(), gpus, p.fleet.gpus.len().saturating_sub(MAX_GPU_ROWS)),
    }
}

const REPLICA_COLUMNS: [Column; 7] = [
    Column::left("replica", 28),
    Column::left("verdict", 15),
    Column::right("TTFT p99 (s)", 22),
    Column::right("ITL p99 (s)", 22),
    Column::right("waiting", 8),
    Column::right("KV", 7),
    Column::right("gen tok/s", 10),
];

const GATEWAY_COLUMNS: [Column; 5] = [
    Column::left("instance", 28),
    Column::right("TTFT p99 (s)", 22),
    Column::right("ITL p99 (s)", 22),
    Column::right("req/s", 8),
    Column::right("err/s", 8),
];

const GPU_COLUMNS: [Column; 8] = [
    Column::left("Hostname", 24),
    Column::right("gpu", 4),
    Column { name: "UUID", terminal: None },
    Column::right("SM MHz", 9),
    Column::right("peers", 9),
    Column::right("ratio", 6),
    Column::right("°C", 6),
    Column { name: "util %", terminal: Some(("util%", 6, Align::Right)) },
];

#[cfg(test)]
mod tests {
    use super::Words;

    #[test]
    fn capital_keeps_everything_after_the_first_letter() {
        assert_eq!(Words::capital("what to change:"), "What to change:");
        assert_eq!(Words::capital("证据："), "证据：");
        assert_eq!(Words::capital(""), "");
    }
}
