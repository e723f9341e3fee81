//! A Prometheus window turned into the inputs a person would paste, per replica and per GPU
//! node, analysed by the unchanged rules, and merged into one report that names the replica or
//! GPU of each finding, ranks the fleet and cites the series behind every evidence line.
//!
//! Replica: the series of one `instance` (else `pod`) become exposition scrapes with
//! timestamps — each series' first and last point of the window, and between them its point at
//! the recent tail's start — so gauges read as "the last scrape", counters and histogram buckets
//! as deltas over the window (a counter that went down in between was reset: the increase is
//! corrected as Prometheus's `increase` does), and the scrape before the last tells what changed
//! lately (a counter that stopped). The recent tail is also analysed on its own. GPU node:
//! the DCGM series of one `Hostname` (else `instance`) become an `nvidia-smi --query-gpu` CSV
//! series at up to [`MAX_INSTANTS`] instants, so the GPU rules compare each GPU with its peers.

use std::collections::BTreeMap;

use super::answer::{Matrix, RangeSeries};
use super::query::{self, Window};
use super::samples;
use super::{Citation, Fleet, GatewayRank, GpuRank, Group, PromError, PrometheusInput, ReplicaRank};
use crate::facts::Slo;
use crate::kind::InputKind;
use crate::report::{Class, Finding, Report, Subject, Verdict};
use crate::{Analyzer, Lang};
use triage_base::safe::Secrets;
use triage_base::stats::{BucketQuantile, histogram_quantile, median};

/// Most instants of a node's CSV series: enough for medians, bounded whatever the step.
pub const MAX_INSTANTS: usize = 60;
/// Most citations kept in a report.
pub const MAX_CITATIONS: usize = 500;
/// A label value kept in a subject, an input name or an exposition line is cut to this.
const MAX_LABEL_CHARS: usize = 200;

pub use super::exchange::Asked;
use super::exchange::Exchange;
use crate::rules::RuleId;

/// What to analyse with.
pub struct Config<'a> {
    /// The language of the report's text.
    pub lang: Lang,
    /// The SLO the rules judge against.
    pub slo: Slo,
    /// The run's secrets (the bearer token, the basic-auth pair): redacted from every label.
    pub secrets: &'a Secrets,
}

/// The window an [`Exchange`] read, analysed (with the report of files given alongside, if any).
pub fn report(ex: &Exchange, cfg: &Config<'_>, files: Option<Report>) -> Result<Report, PromError> {
    analyze(ex.matrix(), ex.asked(cfg.secrets), cfg, files)
}

/// The proxy filter's name without an Envoy prefix (`envoy_wasmcustom_llm_stream_x` →
/// `llm_stream_x`).
fn gateway_name(name: &str) -> Option<&str> {
    name.find("llm_stream_").map(|i| &name[i..])
}

fn is_gpu_series(name: &str) -> bool {
    name.starts_with("DCGM_FI_") || name.starts_with("triage_")
}

/// Counter-like by name: totals, histogram buckets, counts and sums.
fn is_counter(name: &str) -> bool {
    name.ends_with("_total")
        || name.ends_with("_bucket")
        || name.ends_with("_count")
        || name.ends_with("_sum")
}

/// A label value made safe to keep: secrets and credential shapes redacted, then cut, control
/// characters replaced (an exposition line must stay one line).
fn clean(secrets: &Secrets, v: &str) -> String {
    secrets
        .excerpt(v, MAX_LABEL_CHARS)
        .chars()
        .map(|c| if c.is_control() || triage_base::safe::is_unsafe_char(c) { '\u{fffd}' } else { c })
        .collect()
}

/// A sample: (unix s, value).
type Point = (f64, f64);
/// A series' first point, its point at the recent tail's start, and its last point (the later
/// two corrected for counter resets).
type Ends = (Point, Point, Point);
/// Cumulative histogram buckets `(le, count)`.
type Buckets = Vec<(f64, f64)>;

/// First value, value at `mid_s` (its last point at or before, else the first) and last value
/// of a series from `from_s` on, the later two corrected for counter resets.
fn ends(s: &RangeSeries, from_s: f64, mid_s: f64) -> Option<Ends> {
    let points = &s.points[s.points.partition_point(|p| p.0 < from_s)..];
    let first = *points.first()?;
    let last = *points.last()?;
    let k = points.partition_point(|p| p.0 <= mid_s).max(1) - 1;
    if !is_counter(s.name()) {
        return Some((first, points[k], last));
    }
    let mut total = first.1;
    let mut prev = first.1;
    let mut mid = first;
    for (j, &(t, v)) in points.iter().enumerate().skip(1) {
        total += if v >= prev { v - prev } else { v };
        prev = v;
        if j == k {
            mid = (t, total);
        }
    }
    Some((first, mid, (last.0, total)))
}

/// One group's input text and, per line, the series and point it came from.
struct Built {
    text: String,
    /// Line number (1-based) → (series index in the matrix, time, raw value).
    lines: BTreeMap<usize, (usize, f64, f64)>,
}

/// Exposition scrapes of a replica's series: each series' first and last point, and with
/// `mid_s` its point at that instant between them (the recent tail's start: so that the rules
/// can tell "rose earlier, flat lately" from one run).
///
/// Only what distinct samples show is written. A series with one sample is written at the last
/// instant only (the same sample twice reads as a counter that did not move). With the scrape
/// interval known, a recent tail (`from_s` finite) reaches back for each series to its
/// [`samples::MIN_TAIL_SAMPLES`]-th last sample if that is earlier ([`samples::tail_start`]) and
/// keeps the series that have that many, and a series stale at an instant (no
/// sample within [`samples::STALE_AFTER_SCRAPES`] intervals of it) is left out of that instant:
/// its target stopped answering, and its last value repeated would read as a counter that
/// stopped. With `born_s` (the replica's process started inside the window), a counter whose
/// first sample came after the start counts from zero at the start, as the new process did: the
/// first requests of a cold start are inside the window's increase even when the first scrape
/// after the start came after them.
fn exposition(m: &Matrix, members: &[usize], secrets: &Secrets, view: View) -> Built {
    let View { from_s, mid_s, interval_s, born_s } = view;
    let mut b = Built { text: String::new(), lines: BTreeMap::new() };
    let tail = from_s != f64::NEG_INFINITY && interval_s.is_some();
    let ends: Vec<(usize, Ends)> = members
        .iter()
        .filter(|&&i| !tail || m.series[i].points.len() >= samples::MIN_TAIL_SAMPLES)
        .filter_map(|&i| {
            let s = &m.series[i];
            let from_s = if tail { samples::tail_start(&s.points, from_s) } else { from_s };
            let (mut first, mid, last) = ends(s, from_s, mid_s.unwrap_or(f64::NEG_INFINITY))?;
            // Born with the process: its first sample is the first scrape after the start.
            if let Some(born) = born_s
                && is_counter(s.name())
                && first.0 >= born
                && first.0 <= born + samples::STALE_AFTER_SCRAPES * interval_s.unwrap_or(15.0)
            {
                first = (born, 0.0);
            }
            Some((i, (first, mid, last)))
        })
        .collect();
    let start_ts = ends.iter().map(|(_, (a, _, _))| a.0).fold(f64::INFINITY, f64::min);
    let end_ts = ends.iter().map(|(_, (_, _, z))| z.0).fold(f64::NEG_INFINITY, f64::max);
    let stale_at = |t: f64, ts: f64| interval_s.is_some_and(|i| samples::is_stale(t, ts, i));
    let mut instants = vec![(0, start_ts)];
    if let Some(mid_s) = mid_s.filter(|&t| t > start_ts && t < end_ts) {
        instants.push((1, mid_s));
    }
    instants.push((2, end_ts));
    let mut no = 0;
    // The series written at the previous instant: written first at the next, so that the parser
    // starts the next scrape at the first of them (a scrape ends where a series repeats), and a
    // series new at this instant is not read as part of the one before.
    let mut before: Vec<usize> = Vec::new();
    for (which, ts) in instants {
        no += 1;
        b.text.push_str(&format!(
            "# prometheus: {} of each series\n",
            ["the window's first point", "the point at the recent tail's start", "the window's last point"]
                [which]
        ));
        let writes = |(_, (first, mid, last)): &&(usize, Ends)| {
            let at = [first.0, mid.0, last.0][which];
            !(which == 0 && first.0 == last.0 || which > 0 && stale_at(at, ts))
        };
        let (mut now, later): (Vec<&(usize, Ends)>, Vec<_>) =
            ends.iter().filter(writes).partition(|(i, _)| before.contains(i));
        now.extend(later);
        before.clear();
        for (i, (first, mid, last)) in now {
            before.push(*i);
            let s = &m.series[*i];
            let labels: Vec<String> = s
                .labels
                .iter()
                // Only classic label names are fed back as text: a UTF-8 name of Prometheus 3
                // (`x="1"} 9999 0 #`) would close the label set and forge every value.
                .filter(|(k, _)| k.as_str() != "__name__" && classic_label_name(k))
                .map(|(k, v)| {
                    format!("{}=\"{}\"", clean(secrets, k), query::escape_value(&clean(secrets, v)))
                })
                .collect();
            let (value, raw_at, raw) = match which {
                0 => (first.1, first.0, first.1),
                1 => {
                    let raw = s.points.iter().find(|p| p.0 == mid.0).map_or(mid.1, |p| p.1);
                    (mid.1, mid.0, raw)
                }
                _ => {
                    let raw = s.points.last().map_or(last.1, |p| p.1);
                    (last.1, last.0, raw)
                }
            };
            no += 1;
            let ts_ms = (ts * 1000.0).round() as i64;
            b.text.push_str(&format!(
                "{}{{{}}} {} {ts_ms}\n",
                clean(secrets, s.name()),
                labels.join(","),
                fmt_value(value)
            ));
            b.lines.insert(no, (*i, raw_at, raw));
        }
    }
    b
}

/// What one exposition shows: from `from_s` on (a recent tail) or the whole window
/// (`NEG_INFINITY`), with the instant `mid_s` between, judged at the scrape interval.
#[derive(Clone, Copy)]
struct View {
    from_s: f64,
    mid_s: Option<f64>,
    interval_s: Option<f64>,
    /// The replica's process started inside the window, at this unix second.
    born_s: Option<f64>,
}

impl View {
    fn whole(interval_s: Option<f64>) -> View {
        View { from_s: f64::NEG_INFINITY, mid_s: None, interval_s, born_s: None }
    }
}

fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v == f64::INFINITY {
        "+Inf".to_owned()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        format!("{v}")
    }
}

/// The value of a series at `t`: its last point at or before `t` (Prometheus's lookback is
/// already applied to range answers; between steps the earlier point holds).
fn at(s: &RangeSeries, t: f64) -> Option<(f64, f64)> {
    let i = s.points.partition_point(|p| p.0 <= t);
    (i > 0).then(|| s.points[i - 1])
}

/// DCGM field names for each CSV column (DCGM exporter's and the runner's).
const GPU_COLUMNS: &[(&str, &[&str])] = &[
    ("clocks.sm [MHz]", &["DCGM_FI_DEV_SM_CLOCK"]),
    ("clocks.max.sm [MHz]", &["DCGM_FI_DEV_MAX_SM_CLOCK"]),
    ("power.draw [W]", &["DCGM_FI_DEV_POWER_USAGE"]),
    ("power.limit [W]", &["DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT"]),
    ("utilization.gpu [%]", &["DCGM_FI_DEV_GPU_UTIL"]),
    ("memory.used [MiB]", &["DCGM_FI_DEV_FB_USED"]),
    ("memory.total [MiB]", &[]),
    ("temperature.gpu", &["DCGM_FI_DEV_GPU_TEMP"]),
    (
        "clocks_event_reasons.active",
        &["DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"],
    ),
];

/// One GPU of a node: its index and its series by DCGM field name.
struct Gpu<'a> {
    index: u32,
    subject: Subject,
    fields: BTreeMap<&'a str, usize>,
}

fn gpu_subject(s: &RangeSeries, secrets: &Secrets) -> Subject {
    let l = |k: &str| s.label(k).map(|v| clean(secrets, v));
    Subject {
        gpu: l("gpu"),
        uuid: l("UUID"),
        hostname: l("Hostname"),
        model_name: l("modelName"),
        instance: if s.label("Hostname").is_none() { l("instance") } else { None },
        // dcgm-exporter's Kubernetes mapping names the pod the GPU is given to.
        pod: l("pod"),
    }
}

/// The GPUs of a node, by `gpu` label (else `UUID`, numbered in order).
fn gpus<'a>(m: &'a Matrix, members: &[usize], secrets: &Secrets) -> Vec<Gpu<'a>> {
    let mut by_key: BTreeMap<String, Gpu<'a>> = BTreeMap::new();
    for &i in members {
        let s = &m.series[i];
        if !s.name().starts_with("DCGM_FI_") {
            continue;
        }
        let key = s.label("gpu").or_else(|| s.label("UUID")).unwrap_or("").to_owned();
        let n = by_key.len() as u32;
        let g = by_key.entry(key.clone()).or_insert_with(|| Gpu {
            index: key.parse().unwrap_or(n),
            subject: gpu_subject(s, secrets),
            fields: BTreeMap::new(),
        });
        g.fields.entry(s.name()).or_insert(i);
    }
    let mut v: Vec<Gpu<'a>> = by_key.into_values().collect();
    triage_base::sort::sort_by_key(&mut v, |g| g.index);
    v
}

/// An `nvidia-smi --query-gpu` CSV series of a node's GPUs.
fn smi_csv(m: &Matrix, gpus: &[Gpu<'_>]) -> Built {
    let mut b = Built { text: String::new(), lines: BTreeMap::new() };
    let has = |names: &[&str]| gpus.iter().any(|g| names.iter().any(|n| g.fields.contains_key(n)));
    let mem_total = has(&["DCGM_FI_DEV_FB_FREE"]) && has(&["DCGM_FI_DEV_FB_USED"]);
    let cols: Vec<&(&str, &[&str])> = GPU_COLUMNS
        .iter()
        .filter(|(h, names)| if *h == "memory.total [MiB]" { mem_total } else { has(names) })
        .collect();
    let mut times: Vec<f64> = gpus
        .iter()
        .flat_map(|g| g.fields.values().flat_map(|&i| m.series[i].points.iter().map(|p| p.0)))
        .collect();
    triage_base::sort::sort_f64(&mut times);
    times.dedup();
    if times.is_empty() || cols.is_empty() {
        return b;
    }
    let picks: Vec<f64> = if times.len() <= MAX_INSTANTS {
        times
    } else {
        (0..MAX_INSTANTS).map(|k| times[k * (times.len() - 1) / (MAX_INSTANTS - 1)]).collect()
    };
    let header: Vec<&str> =
        ["index", "uuid", "name"].into_iter().chain(cols.iter().map(|(h, _)| *h)).collect();
    b.text.push_str(&header.join(", "));
    b.text.push('\n');
    let mut no = 1;
    for t in picks {
        for g in gpus {
            let value = |names: &[&str]| {
                names.iter().find_map(|n| g.fields.get(n)).and_then(|&i| at(&m.series[i], t).map(|p| (i, p)))
            };
            let mut row = vec![
                g.index.to_string(),
                g.subject.uuid.as_deref().map_or("[N/A]".to_owned(), |u| u.replace(',', " ")),
                g.subject.model_name.as_deref().map_or("[N/A]".to_owned(), |u| u.replace(',', " ")),
            ];
            for (h, names) in &cols {
                let cell = if *h == "memory.total [MiB]" {
                    match (value(&["DCGM_FI_DEV_FB_USED"]), value(&["DCGM_FI_DEV_FB_FREE"])) {
                        (Some((_, u)), Some((_, f))) => {
                            let reserved = value(&["DCGM_FI_DEV_FB_RESERVED"]).map_or(0.0, |(_, r)| r.1);
                            Some(format!("{}", u.1 + f.1 + reserved))
                        }
                        _ => None,
                    }
                } else if *h == "clocks_event_reasons.active" {
                    value(names)
                        .filter(|(_, p)| p.1.is_finite() && p.1 >= 0.0)
                        .map(|(_, p)| format!("0x{:016x}", p.1 as u64))
                } else {
                    value(names).filter(|(_, p)| p.1.is_finite()).map(|(_, p)| format!("{}", p.1))
                };
                row.push(cell.unwrap_or_else(|| "[N/A]".to_owned()));
            }
            if row[3..].iter().all(|c| c == "[N/A]") {
                continue;
            }
            no += 1;
            b.text.push_str(&row.join(", "));
            b.text.push('\n');
            // Cite the SM clock (what the straggler rule compares), else the first field read.
            let cite =
                value(&["DCGM_FI_DEV_SM_CLOCK"]).or_else(|| cols.iter().find_map(|(_, names)| value(names)));
            if let Some((i, (ts, v))) = cite {
                b.lines.insert(no, (i, ts, v));
            }
        }
    }
    b
}

/// One replica or node: its members and what it is.
struct Part {
    role: &'static str,
    subject: Subject,
    members: Vec<usize>,
}

fn input_name(role: &str, subject: &Subject) -> String {
    let who = subject
        .instance
        .as_deref()
        .or(subject.pod.as_deref())
        .or(subject.hostname.as_deref())
        .unwrap_or("(unlabelled)");
    format!("prometheus {role} {who}")
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`: a label name the exposition format can carry as it is.
fn classic_label_name(k: &str) -> bool {
    let mut b = k.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Group the matrix: engine series by `instance` (else `pod`), GPU series by `Hostname` (else
/// the `instance` a DCGM series of the same exporter names a host for, else `instance`) — by the
/// exact label value, never by the cleaned one shown (two values equal once cut at 200
/// characters or once a control character is replaced merged two replicas, and the faulty one's
/// finding vanished); parts whose shown names collide are told apart with ` (#2)`, ` (#3)` ….
fn partition(m: &Matrix, secrets: &Secrets) -> Vec<Part> {
    let mut host_of_instance: BTreeMap<&str, &str> = BTreeMap::new();
    for s in &m.series {
        if let (Some(i), Some(h)) = (s.label("instance"), s.label("Hostname")) {
            host_of_instance.entry(i).or_insert(h);
        }
    }
    let mut parts: BTreeMap<(u8, String), Part> = BTreeMap::new();
    for (i, s) in m.series.iter().enumerate() {
        let l = |k: &str| s.label(k).map(|v| clean(secrets, v));
        let (key, part) = if is_gpu_series(s.name()) {
            let host = s
                .label("Hostname")
                .or_else(|| s.label("instance").and_then(|x| host_of_instance.get(x).copied()));
            let subject = match host {
                Some(h) => Subject { hostname: Some(clean(secrets, h)), ..Subject::default() },
                None => Subject { instance: l("instance"), ..Subject::default() },
            };
            let raw = host.or_else(|| s.label("instance")).unwrap_or_default().to_owned();
            ((1, raw), Part { role: "gpus", subject, members: Vec::new() })
        } else {
            let subject = Subject { instance: l("instance"), pod: l("pod"), ..Subject::default() };
            let key = s.label("instance").or_else(|| s.label("pod")).unwrap_or_default().to_owned();
            let (rank, role) = if gateway_name(s.name()).is_some() { (2, "gateway") } else { (0, "replica") };
            ((rank, key), Part { role, subject, members: Vec::new() })
        };
        let p = parts.entry(key).or_insert(part);
        if p.role == "replica" {
            if p.subject.model_name.is_none() {
                p.subject.model_name =
                    crate::rules::replica_skewed::model_label_of(s).map(|v| clean(secrets, v));
            }
            if p.subject.pod.is_none() {
                p.subject.pod = l("pod");
            }
        }
        p.members.push(i);
    }
    let mut parts: Vec<Part> = parts.into_values().collect();
    let mut shown: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    for p in &mut parts {
        let s = &mut p.subject;
        let name = if s.hostname.is_some() {
            &mut s.hostname
        } else if s.instance.is_some() {
            &mut s.instance
        } else {
            &mut s.pod
        };
        let Some(n) = name.as_mut() else { continue };
        let seen = shown.entry((p.role, n.clone())).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            n.push_str(&format!(" (#{seen})"));
        }
    }
    parts
}

/// When the replica's process started, if inside the window `w` (or at most a minute, or a
/// scrape, before it: the first scrape after a start is the window's first sample when the
/// window starts there): its `process_start_time_seconds`.
fn born(m: &Matrix, members: &[usize], w: &Window, interval_s: Option<f64>) -> Option<f64> {
    let slack = interval_s.unwrap_or(0.0).max(60.0);
    members
        .iter()
        .map(|&i| &m.series[i])
        .filter(|s| s.name() == "process_start_time_seconds")
        .filter_map(|s| s.points.last().map(|p| p.1))
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
        .filter(|&t| t > w.start_s - slack && t <= w.end_s)
}

/// A merged finding: where it came from.
struct Tagged {
    finding: Finding,
    group: usize,
}

fn outage(f: &Finding) -> bool {
    matches!(f.class, Class::Oom | Class::ThroughputZero) && f.confidence >= 0.5
}

/// Analyse the window (and the report of files given alongside, when there is one) into one
/// report. `Err(PromError::Empty)` when the window holds no series.
pub fn analyze(
    m: &Matrix,
    asked: Asked,
    cfg: &Config<'_>,
    files: Option<Report>,
) -> Result<Report, PromError> {
    if m.series.is_empty() {
        return Err(PromError::Empty(format!(
            "nothing matched {} between {} and {} (check --selector, the window, and that Prometheus scrapes the engines and the DCGM exporter)",
            asked.queries.last().map_or("", |q| q.expr.as_str()),
            query::iso(asked.window.start_s),
            query::iso(asked.window.end_s)
        )));
    }
    let w = asked.window;
    let interval_s = asked.interval_s;
    let tail_s = samples::tail_seconds(&w);
    let parts = partition(m, cfg.secrets);
    let analysed = analyse_parts(m, &parts, w, cfg, interval_s, tail_s);
    let mut tagged = tag_findings(m, cfg, &analysed, files.as_ref());
    // A replica against its peers: no replica's own analysis can see it.
    let (skewed, peers) = fleet::skewed(m, &parts, &analysed, cfg);
    tagged.extend(skewed);
    let verdict = rank_findings(&mut tagged, &analysed.reports, files.as_ref(), peers.as_ref());
    let citations = citations(m, cfg, &asked, &analysed.built, &tagged);
    let Analysed { groups, reports, gpu_ranks, origin, .. } = analysed;

    let fleet = fleet(m, &parts, &groups, &origin, verdict, gpu_ranks);
    let mut out = Report {
        schema: crate::report::SCHEMA.to_owned(),
        verdict,
        findings: tagged.into_iter().map(|t| t.finding).collect(),
        inputs: Vec::new(),
        figures: BTreeMap::new(),
        series: BTreeMap::new(),
        prometheus: None,
    };
    if let Some(files) = files {
        out.inputs.extend(files.inputs);
        out.figures.extend(files.figures);
        out.series.extend(files.series);
    }
    for (g, r) in groups.iter().zip(reports) {
        let Some(r) = r else { continue };
        out.inputs.extend(r.inputs);
        out.figures.extend(r.figures.into_iter().map(|(k, v)| (format!("{} · {k}", g.input), v)));
        out.series.extend(r.series.into_iter().map(|(k, v)| (format!("{} · {k}", g.input), v)));
    }
    out.prometheus = Some(PrometheusInput {
        kind: "prometheus".to_owned(),
        url: asked.url,
        selector: asked.selector,
        start: query::iso(w.start_s),
        end: query::iso(w.end_s),
        start_unix_s: w.start_s,
        end_unix_s: w.end_s,
        step_s: w.step_s,
        queries: asked.queries,
        series: m.series.len(),
        points: m.points,
        cut: asked.cut.into_iter().chain(m.cut.iter().cloned()).collect(),
        groups,
        fleet,
        citations,
        scraping: interval_s.map(|i| {
            samples::scraping(i, asked.samples_from_s, tail_s, samples::stale(m, w.end_s, i), cfg.lang)
        }),
    });
    Ok(out)
}

/// Each part analysed as the input a person would paste (a replica's series, and its recent
/// tail on its own; a node's GPUs as an `nvidia-smi` series); gateways are listed, not analysed.
struct Analysed {
    groups: Vec<Group>,
    /// Per group, its report; `None` for a gateway.
    reports: Vec<Option<Report>>,
    /// Each input's text, with the series, time and value behind each of its lines.
    built: Vec<(String, Built)>,
    gpu_ranks: Vec<GpuRank>,
    /// Per group: its part and whether it is a replica's recent tail.
    origin: Vec<(usize, bool)>,
}

/// Analyse every part of the window `w`.
fn analyse_parts(
    m: &Matrix,
    parts: &[Part],
    w: Window,
    cfg: &Config<'_>,
    interval_s: Option<f64>,
    tail_s: Option<f64>,
) -> Analysed {
    let mut groups: Vec<Group> = Vec::new();
    let mut reports: Vec<Option<Report>> = Vec::new();
    let mut built: Vec<(String, Built)> = Vec::new();
    let mut gpu_ranks: Vec<GpuRank> = Vec::new();
    // Per group: its part and whether it is a replica's recent tail.
    let mut origin: Vec<(usize, bool)> = Vec::new();
    for (pi, part) in parts.iter().enumerate() {
        let name = input_name(part.role, &part.subject);
        if part.role == "replica"
            && let Some(tail_s) = tail_s
        {
            // The window's last minutes on their own, so that what changed lately — a counter
            // that stopped — is not averaged away by the calm before it. Gauges read the same.
            let tail_name = format!("{name} (last {} s)", query::secs(tail_s));
            let b = exposition(
                m,
                &part.members,
                cfg.secrets,
                View { from_s: w.end_s - tail_s, ..View::whole(interval_s) },
            );
            let mut a = Analyzer::new().with_lang(cfg.lang).with_slo(cfg.slo);
            a.begin_as(&tail_name, InputKind::PromMetrics);
            a.feed(b.text.as_bytes());
            a.end();
            built.push((tail_name.clone(), b));
            let r = a.finish();
            groups.push(Group {
                input: tail_name,
                role: part.role.to_owned(),
                subject: part.subject.clone(),
                series: part.members.len(),
                verdict: r.verdict,
                top_rule: r.findings.first().map(|f| f.rule.clone()),
            });
            reports.push(Some(r));
            origin.push((pi, true));
        }
        if part.role == "gateway" {
            groups.push(Group {
                input: name,
                role: part.role.to_owned(),
                subject: part.subject.clone(),
                series: part.members.len(),
                verdict: Verdict::Inconclusive,
                top_rule: None,
            });
            reports.push(None);
            origin.push((pi, false));
            continue;
        }
        let mut a = Analyzer::new().with_lang(cfg.lang).with_slo(cfg.slo);
        if part.role == "replica" {
            // With the tail's start between, so that "rose earlier, flat lately" reads from one run.
            let mid = tail_s.map(|t| w.end_s - t);
            let born_s = born(m, &part.members, &w, interval_s);
            let b = exposition(
                m,
                &part.members,
                cfg.secrets,
                View { mid_s: mid, born_s, ..View::whole(interval_s) },
            );
            a.begin_as(&name, InputKind::PromMetrics);
            a.feed(b.text.as_bytes());
            a.end();
            built.push((name.clone(), b));
        } else {
            let node_gpus = gpus(m, &part.members, cfg.secrets);
            let b = smi_csv(m, &node_gpus);
            a.begin_as(&name, InputKind::NvidiaSmi);
            a.feed(b.text.as_bytes());
            a.end();
            built.push((name.clone(), b));
            let others: Vec<usize> =
                part.members.iter().copied().filter(|&i| m.series[i].name().starts_with("triage_")).collect();
            if !others.is_empty() {
                let b = exposition(m, &others, cfg.secrets, View::whole(interval_s));
                let n = format!("{name} triage-runner");
                a.begin_as(&n, InputKind::PromMetrics);
                a.feed(b.text.as_bytes());
                a.end();
                built.push((n, b));
            }
            gpu_ranks.extend(rank_gpus(m, &node_gpus));
        }
        let r = a.finish();
        origin.push((pi, false));
        groups.push(Group {
            input: name,
            role: part.role.to_owned(),
            subject: part.subject.clone(),
            series: part.members.len(),
            verdict: r.verdict,
            top_rule: r.findings.first().map(|f| f.rule.clone()),
        });
        reports.push(Some(r));
    }
    Analysed { groups, reports, built, gpu_ranks, origin }
}

/// Every group's findings, and those of the files given alongside (group `usize::MAX`).
fn tag_findings(m: &Matrix, cfg: &Config<'_>, analysed: &Analysed, files: Option<&Report>) -> Vec<Tagged> {
    let Analysed { groups, reports, built, .. } = analysed;
    // Findings, each with its subject: the group's, refined to the GPU its first cited row names.
    let row_subject = |input: &str, line: usize| -> Option<Subject> {
        let (_, b) = built.iter().find(|(n, _)| n == input)?;
        let &(i, _, _) = b.lines.get(&line)?;
        let s = &m.series[i];
        s.name().starts_with("DCGM_FI_").then(|| gpu_subject(s, cfg.secrets))
    };
    let mut tagged: Vec<Tagged> = Vec::new();
    for (gi, r) in reports.iter().enumerate() {
        let Some(r) = r else { continue };
        for f in &r.findings {
            let mut f = f.clone();
            let gpu = f.evidence.iter().find_map(|e| row_subject(&e.input, e.line));
            f.subject = Some(match gpu {
                Some(g) => Subject { hostname: g.hostname.or(groups[gi].subject.hostname.clone()), ..g },
                None => groups[gi].subject.clone(),
            });
            tagged.push(Tagged { finding: f, group: gi });
        }
    }
    if let Some(files) = files {
        for f in &files.findings {
            tagged.push(Tagged { finding: f.clone(), group: usize::MAX });
        }
    }
    tagged
}

/// The verdict across groups; `tagged` ranked, a replica's repeated finding dropped, and the
/// finding that names the verdict first.
fn rank_findings(
    tagged: &mut Vec<Tagged>,
    reports: &[Option<Report>],
    files: Option<&Report>,
    peers: Option<&Report>,
) -> Verdict {
    // Each group's verdict is decided by its own analyzer; across groups the most urgent cause
    // names the incident, in the analyzer's own order (outage, confidence, severity). A group
    // left INCONCLUSIVE (an unexplained error) keeps the whole from HEALTHY, not from a cause
    // found elsewhere: its finding is listed either way.
    let all: Vec<&Report> = reports.iter().flatten().chain(files).chain(peers).collect();
    let mut causes: Vec<&Finding> = all
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Healthy | Verdict::Inconclusive))
        .filter_map(|r| r.findings.iter().find(|f| Verdict::from(f.class) == r.verdict))
        .collect();
    triage_base::sort::sort_by(&mut causes, |a, b| rank(a, b));
    let verdict = match causes.first() {
        Some(f) => Verdict::from(f.class),
        // Gateways are not analysed, so a window of gateways alone shows no health.
        None if !all.is_empty() && all.iter().all(|r| r.verdict == Verdict::Healthy) => Verdict::Healthy,
        None => Verdict::Inconclusive,
    };
    triage_base::sort::sort_by(tagged, |a, b| rank(&a.finding, &b.finding).then(a.group.cmp(&b.group)));
    // A replica's tail and its whole window may find the same: keep the better-ranked one.
    let mut seen: Vec<(String, Option<Subject>)> = Vec::new();
    tagged.retain(|t| {
        let key = (t.finding.rule.clone(), t.finding.subject.clone());
        if t.group == usize::MAX || !seen.contains(&key) {
            seen.push(key);
            true
        } else {
            false
        }
    });
    if let Some(top) = causes.first() {
        // The finding that names the verdict leads, wherever the confidences of others fall.
        if let Some(i) = tagged.iter().position(|t| {
            t.finding.rule == top.rule
                && t.finding.class == top.class
                && t.finding.confidence == top.confidence
        }) {
            let t = tagged.remove(i);
            tagged.insert(0, t);
        }
    } else if verdict == Verdict::Inconclusive
        && let Some(i) = tagged.iter().position(|t| t.finding.rule == RuleId::UnclaimedError)
    {
        let t = tagged.remove(i);
        tagged.insert(0, t);
    }
    verdict
}

/// A citation (series, time, value, graph link) for every evidence line that came from a series,
/// at most [`MAX_CITATIONS`].
fn citations(
    m: &Matrix,
    cfg: &Config<'_>,
    asked: &Asked,
    built: &[(String, Built)],
    tagged: &[Tagged],
) -> Vec<Citation> {
    let w = asked.window;
    // Citations for every evidence line that came from a series.
    let mut citations: Vec<Citation> = Vec::new();
    for t in tagged {
        for e in &t.finding.evidence {
            if citations.len() >= MAX_CITATIONS
                || citations.iter().any(|c| *c.input == *e.input && c.line == e.line)
            {
                continue;
            }
            let Some((_, b)) = built.iter().find(|(n, _)| **n == *e.input) else { continue };
            let Some(&(i, ts, v)) = b.lines.get(&e.line) else { continue };
            let labels: BTreeMap<String, String> = m.series[i]
                .labels
                .iter()
                .map(|(k, v)| (clean(cfg.secrets, k), clean(cfg.secrets, v)))
                .collect();
            let expr = query::series_selector(&labels);
            citations.push(Citation {
                input: e.input.to_string(),
                line: e.line,
                graph_url: query::graph_url(&asked.url, &expr, &w),
                expr,
                labels,
                at: query::iso(ts),
                at_unix_s: ts,
                value: v,
            });
        }
    }
    citations
}

/// The analyzer's ranking: an outage first, then confidence, then severity, then rule id.
fn rank(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    outage(b)
        .cmp(&outage(a))
        .then(b.confidence.total_cmp(&a.confidence))
        .then(b.class.severity().cmp(&a.class.severity()))
        .then(a.rule.cmp(&b.rule))
}

mod fleet;
use fleet::{fleet, rank_gpus};

#[cfg(test)]
mod tests;
