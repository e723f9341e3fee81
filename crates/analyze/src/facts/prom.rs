//! Prometheus scrapes as read (written by `parsers/prom.rs`, which also holds their queries).

use std::collections::BTreeMap;

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Metric name.
    pub name: String,
    /// Sorted by label name.
    pub labels: Vec<(String, String)>,
    /// The sample's value.
    pub value: f64,
    /// 1-based line number in the input.
    pub line: usize,
}

impl Series {
    /// The value of label `name`, when the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// One scrape: every sample between two repeats of a series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scrape {
    /// The input the scrape was read from.
    pub input: String,
    /// Its samples, in input order.
    pub series: Vec<Series>,
    /// Optional sample timestamps (ms) as written.
    pub timestamp_ms: Option<i64>,
}

/// What the Prometheus scrapes in the inputs say.
#[derive(Debug, Default)]
pub struct MetricsFacts {
    /// Every scrape read, up to [`MAX_SCRAPES`](crate::parsers::prom::MAX_SCRAPES). Rules compare the first with the last, and the
    /// one before the last with the last (what changed lately), so only those three keep their
    /// samples; the ones between are kept empty, for the count.
    pub scrapes: Vec<Scrape>,
    /// `# TYPE` by metric family (at most `MAX_SERIES` families).
    pub types: BTreeMap<String, String>,
    /// Samples beyond the per-scrape maximum.
    pub dropped: u64,
}
