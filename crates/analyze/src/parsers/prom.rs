//! Prometheus text exposition (vLLM, SGLang, TGI `/metrics`): counters, gauges, histograms,
//! labels; two scrapes of one server give deltas over the window.
//!
//! A section holds one scrape until a series repeats, which starts the next scrape: pasting two
//! scrapes one after the other just works.

use super::{Cx, SectionParser};
use crate::report::EvidenceLine;
use std::collections::{BTreeMap, HashSet};

pub use crate::facts::prom::{MetricsFacts, Scrape, Series};
use crate::names::names_for;

impl Scrape {
    /// The name this scrape answers `name` under: the first of its family's names
    /// ([`crate::names`]) it holds a sample of (a histogram's `_bucket`, `_count` or `_sum`
    /// counts). Two names of one family are never read together.
    pub fn resolve<'n>(&self, name: &'n str) -> Option<&'n str> {
        names_for(name).into_iter().find(|n| self.holds(n))
    }

    /// Whether the scrape has a sample of `name` or of its histogram parts.
    fn holds(&self, name: &str) -> bool {
        self.series.iter().any(|s| {
            s.name == name
                || s.name.strip_prefix(name).is_some_and(|rest| matches!(rest, "_bucket" | "_count" | "_sum"))
        })
    }

    /// Sum of every series of `name` (or of the family name it is read under), with the first
    /// matching series.
    pub fn sum(&self, name: &str) -> Option<(f64, &Series)> {
        let name = self.resolve(name)?;
        let mut found: Option<(f64, &Series)> = None;
        for s in self.series.iter().filter(|s| s.name == name) {
            found = Some(match found {
                Some((acc, first)) => (acc + s.value, first),
                None => (s.value, s),
            });
        }
        found
    }

    /// Largest value of `name` across its series (gauges per GPU or per engine).
    pub fn max(&self, name: &str) -> Option<(f64, &Series)> {
        let name = self.resolve(name)?;
        self.series
            .iter()
            .filter(|s| s.name == name)
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .map(|s| (s.value, s))
    }

    /// Cumulative buckets `(le, count)` of histogram `base` (without `_bucket`), summed over
    /// all other labels.
    pub fn histogram(&self, base: &str) -> Vec<(f64, f64)> {
        self.resolve(base).map(|name| self.histogram_as(name)).unwrap_or_default()
    }

    /// [`Scrape::histogram`] under exactly this name.
    pub fn histogram_as(&self, name: &str) -> Vec<(f64, f64)> {
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        let bucket = format!("{name}_bucket");
        for s in self.series.iter().filter(|s| s.name == bucket) {
            let Some(le) = s.label("le").and_then(parse_value) else { continue };
            let e = by_le.entry(le.to_bits()).or_insert((le, 0.0));
            e.1 += s.value;
        }
        let mut v: Vec<(f64, f64)> = by_le.into_values().collect();
        triage_base::sort::sort_by(&mut v, |a, b| a.0.total_cmp(&b.0));
        v
    }

    /// The sample `s` quoted as evidence: name, labels and value on its line.
    pub fn evidence(&self, s: &Series) -> EvidenceLine {
        let labels = if s.labels.is_empty() {
            String::new()
        } else {
            let inner: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            format!("{{{}}}", inner.join(","))
        };
        EvidenceLine {
            input: self.input.as_str().into(),
            line: s.line,
            text: format!("{}{labels} {}", s.name, s.value),
        }
    }
}

impl MetricsFacts {
    /// The first and the last scrape, when there are two or more.
    pub fn window(&self) -> Option<(&Scrape, &Scrape)> {
        match self.scrapes.as_slice() {
            [first, .., last] => Some((first, last)),
            _ => None,
        }
    }

    /// The scrape before the last, when there are three or more (with two it is the first):
    /// with [`MetricsFacts::window`] it splits the window into what came before and the recent
    /// tail. `triage analyze --prometheus` writes a replica's series at the window's start, its
    /// recent tail's start and its end, so here it is the tail's start.
    pub fn before_last(&self) -> Option<&Scrape> {
        match self.scrapes.as_slice() {
            [_, .., mid, _] if self.scrapes.len() >= 3 => Some(mid),
            _ => None,
        }
    }

    /// The last scrape read.
    pub fn latest(&self) -> Option<&Scrape> {
        self.scrapes.last()
    }

    /// `last − first` of a counter summed over labels, when both scrapes have it.
    pub fn delta(&self, name: &str) -> Option<f64> {
        let (a, b) = self.window()?;
        let name = self.resolve_window(name)?;
        Some(b.sum(name)?.0 - a.sum(name)?.0)
    }

    /// The name of `name`'s family that the first and the last scrape both hold, preferred
    /// first: a window is never read as one name at its start and another at its end.
    pub fn resolve_window<'n>(&self, name: &'n str) -> Option<&'n str> {
        let (a, b) = self.window()?;
        names_for(name).into_iter().find(|n| a.holds(n) && b.holds(n))
    }

    /// Bucket counts of histogram `base` over the window (last − first, under one name), or
    /// since the server started with one scrape; with the name read. `None` without buckets or
    /// when a counter went down (a restart between the scrapes).
    pub fn window_histogram<'n>(&self, base: &'n str) -> Option<(Vec<(f64, f64)>, &'n str)> {
        let (buckets, name) = match self.window() {
            Some((a, b)) => {
                let name = self.resolve_window(base)?;
                (triage_base::stats::delta(&a.histogram_as(name), &b.histogram_as(name)).ok()?, name)
            }
            None => {
                let s = self.latest()?;
                let name = s.resolve(base)?;
                (s.histogram_as(name), name)
            }
        };
        (!buckets.is_empty()).then_some((buckets, name))
    }

    /// Seconds between the first and the last scrape, when their samples carry timestamps.
    pub fn window_seconds(&self) -> Option<f64> {
        let (a, b) = self.window()?;
        let secs = (b.timestamp_ms? - a.timestamp_ms?) as f64 / 1000.0;
        (secs > 0.0).then_some(secs)
    }

    /// `delta / window` of a counter, per second; `None` without timestamps (a rate needs the
    /// window, and pasted scrapes rarely say when they were taken).
    pub fn rate(&self, name: &str) -> Option<f64> {
        Some(self.delta(name)? / self.window_seconds()?)
    }
}

const MAX_SERIES: usize = 200_000;
/// Most scrapes counted. Each one costs a little even when empty, and a repeated one-line sample
/// is a scrape per line, so without a limit memory grew with the input; past it the latest scrape
/// replaces the one before.
pub const MAX_SCRAPES: usize = 10_000;

pub(crate) use triage_base::expo::{parse_sample, parse_value};

/// Reads Prometheus text exposition; a series seen again starts a new scrape.
#[derive(Default)]
pub struct PromParser {
    seen: HashSet<(String, Vec<(String, String)>)>,
    started: bool,
    /// [`MAX_SCRAPES`] was reached in this section (said once).
    capped: bool,
    /// Names of [`crate::names::FAMILIES`] seen in this section (bounded by the table).
    named: Vec<&'static str>,
    /// Families already said to be written under two names.
    doubled: Vec<&'static str>,
    /// dcgm-exporter's GPU fields, read as GPU readings and, over scrapes, a GPU recording.
    dcgm: Option<super::dcgm::DcgmSeries>,
}

impl PromParser {
    /// A new scrape begins. The previous last one is now the one before the last; the one
    /// before it, unless it is the first, is now between and nothing reads its samples: they are
    /// dropped to bound memory.
    fn start_scrape(&mut self, cx: &mut Cx<'_>, no: usize) {
        let m = &mut cx.facts.metrics;
        let n = m.scrapes.len();
        if n > 2 {
            m.scrapes[n - 2].series = Vec::new();
        }
        if n >= MAX_SCRAPES {
            // The count stops: the previous last one takes the place of the one before it.
            if let Some(last) = m.scrapes.pop() {
                m.scrapes[n - 2] = last;
            }
            if !std::mem::replace(&mut self.capped, true) {
                cx.issue_in(
                    no,
                    format!("more than {MAX_SCRAPES} scrapes; the count stops there"),
                    format!("抓取次数超过 {MAX_SCRAPES}，之后不再计数"),
                );
            }
        }
        cx.facts.metrics.scrapes.push(Scrape { input: cx.input.to_string(), ..Scrape::default() });
    }
}

impl SectionParser for PromParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim_start();
        t.starts_with('#') || crate::kind::is_prom_sample(t) || t.is_empty()
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if !self.started {
            self.start_scrape(cx, no);
            self.started = true;
        }
        if let Some(rest) = t.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            let types = &mut cx.facts.metrics.types;
            // Bounded like the series: a paste of distinct `# TYPE` lines grew it without end.
            if let (Some(name), Some(kind)) = (it.next(), it.next())
                && (types.len() < MAX_SERIES || types.contains_key(name))
            {
                types.insert(name.to_owned(), kind.to_owned());
            }
            return;
        }
        if t.starts_with('#') {
            return;
        }
        let Some((name, labels, value, ts)) = parse_sample(t) else {
            cx.issue_in(no, "not a Prometheus sample line", "不是 Prometheus 样本行");
            return;
        };
        let key = (name, labels);
        if self.seen.contains(&key) {
            // The same series again: a second scrape starts here.
            self.seen.clear();
            if let Some(dcgm) = self.dcgm.as_mut() {
                dcgm.end_scrape(cx);
            }
            self.start_scrape(cx, no);
        }
        if super::dcgm::is_field(&key.0) {
            let sample =
                super::dcgm::SampleLine { no, text: line, name: &key.0, labels: &key.1, value, ts_ms: ts };
            self.dcgm.get_or_insert_default().sample(cx, &sample);
        }
        let m = &mut cx.facts.metrics;
        let scrape = m.scrapes.last_mut().expect("pushed above");
        if scrape.series.len() >= MAX_SERIES {
            m.dropped += 1;
            return;
        }
        if scrape.timestamp_ms.is_none() {
            scrape.timestamp_ms = ts;
        }
        scrape.series.push(Series { name: key.0.clone(), labels: key.1.clone(), value, line: no });
        self.note_family(cx, no, &key.0);
        self.seen.insert(key);
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        if let Some(dcgm) = self.dcgm {
            dcgm.finish(cx);
        }
    }
}

impl PromParser {
    /// A sample of a family ([`crate::names`]) under a second name of it says, once, which one
    /// is read: the two are the same measurement (vLLM 0.11 observes every gap into both its
    /// new and its deprecated histogram), and adding them would count each twice.
    fn note_family(&mut self, cx: &mut Cx<'_>, no: usize, sample: &str) {
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|x| sample.strip_suffix(x))
            .filter(|b| crate::names::family(b).is_some())
            .unwrap_or(sample);
        let Some(family) = crate::names::family(base) else { return };
        let Some(&name) = family.names.iter().find(|n| **n == base) else { return };
        if self.named.contains(&name) {
            return;
        }
        self.named.push(name);
        if self.doubled.contains(&family.key) {
            return;
        }
        let mut held = family.names.iter().filter(|n| self.named.contains(n));
        let (Some(read), Some(_)) = (held.next(), held.next()) else { return };
        self.doubled.push(family.key);
        let others: Vec<String> = family
            .names
            .iter()
            .filter(|n| *n != read && self.named.contains(n))
            .map(|n| format!("`{n}`"))
            .collect();
        let others = others.join(", ");
        cx.issue_in(
            no,
            format!(
                "{others} and `{read}` are the same measurement ({}): only `{read}` is read, never both",
                family.definition
            ),
            format!("{others} 与 `{read}` 是同一个量：只读 `{read}`，不会两者相加"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    const SCRAPE: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="0",model_name="m"} 12.0
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.97
vllm:generation_tokens_total{engine="0",model_name="m"} 1000.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.3",model_name="m"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 40.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 50.0
"#;

    #[test]
    fn one_scrape() {
        let f = run("metrics", SCRAPE).facts.metrics;
        assert_eq!(f.scrapes.len(), 1);
        let s = &f.scrapes[0];
        assert_eq!(s.sum("vllm:num_requests_waiting").map(|x| x.0), Some(12.0));
        // The old gauge name answers for the new one.
        assert_eq!(s.sum("vllm:kv_cache_usage_perc").map(|x| x.0), Some(0.97));
        assert_eq!(
            s.histogram("vllm:time_to_first_token_seconds"),
            vec![(0.3, 10.0), (1.0, 40.0), (f64::INFINITY, 50.0)]
        );
        assert_eq!(f.types.get("vllm:num_requests_running").map(String::as_str), Some("gauge"));
    }

    #[test]
    fn two_scrapes_pasted_together_give_deltas() {
        let later = SCRAPE.replace("} 1000.0", "} 1500.0");
        let f = run("metrics", &format!("{SCRAPE}\n{later}")).facts.metrics;
        assert_eq!(f.scrapes.len(), 2);
        assert_eq!(f.delta("vllm:generation_tokens_total"), Some(500.0));
    }

    #[test]
    fn rates_need_timestamps() {
        let a = "vllm:generation_tokens_total 1000 1764460800000\nvllm:generation_tokens_total 4000 1764460830000\n";
        let f = run("metrics", a).facts.metrics;
        assert_eq!(f.window_seconds(), Some(30.0));
        assert_eq!(f.rate("vllm:generation_tokens_total"), Some(100.0));
        let f = run("metrics", "vllm:generation_tokens_total 1000\nvllm:generation_tokens_total 4000\n")
            .facts
            .metrics;
        assert_eq!(
            (f.delta("vllm:generation_tokens_total"), f.rate("vllm:generation_tokens_total")),
            (Some(3000.0), None)
        );
    }

    /// A one-line sample repeated is a scrape per line: memory grew about a hundred times faster
    /// than the input. Now only the first, the one before the last and the last scrape keep samples,
    /// and the count stops.
    #[test]
    fn many_scrapes_stay_bounded() {
        let text = "vllm:generation_tokens_total 1\n".repeat(MAX_SCRAPES + 5)
            + "vllm:generation_tokens_total 7\n"
            + &"# TYPE m gauge\n".repeat(3);
        let (f, sections) = run("metrics", &text).take(|f| f.metrics);
        assert_eq!(f.scrapes.len(), MAX_SCRAPES);
        assert!(f.scrapes[1..MAX_SCRAPES - 2].iter().all(|s| s.series.is_empty()));
        assert_eq!(
            f.before_last().and_then(|s| s.sum("vllm:generation_tokens_total")).map(|x| x.0),
            Some(1.0)
        );
        assert_eq!(f.delta("vllm:generation_tokens_total"), Some(6.0));
        assert_eq!(f.types.len(), 1);
        let issues = &sections[0].issues;
        assert_eq!(issues.iter().filter(|i| i.message.contains("scrapes; the count stops")).count(), 1);
        let small = run("metrics", &format!("{SCRAPE}{SCRAPE}{SCRAPE}{SCRAPE}")).facts.metrics;
        assert_eq!(small.scrapes.iter().map(|s| s.series.len()).collect::<Vec<_>>(), vec![7, 0, 7, 7]);
        assert_eq!(small.before_last().map(|s| s.series[0].line), Some(21));
    }

    #[test]
    fn label_escapes_and_bad_lines() {
        let (name, labels, value, ts) =
            parse_sample(r#"m_total{path="/a\"b",code="200"} 4 1700000000000"#).unwrap();
        assert_eq!(name, "m_total");
        assert_eq!(labels, vec![("code".into(), "200".into()), ("path".into(), "/a\"b".into())]);
        assert_eq!((value, ts), (4.0, Some(1_700_000_000_000)));
        assert!(parse_sample("m{a=b} 1").is_none());
        assert!(parse_sample("m{a=\"b\" 1").is_none());
        assert!(parse_sample("{} 1").is_none());
    }
}
