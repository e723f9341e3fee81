//! The answers read as they stream: serde seeds over the envelope, the `/api/v1/series` label
//! sets and a matrix's series, each keeping only what the bounds allow while the rest is skipped
//! (`IgnoredAny`) — so memory follows `max_series` and `max_points`, never the body's size.
//!
//! Whatever the order of the keys (`data` before `status`, `values` before `metric`), the same
//! values come out; what is kept is what sorting the whole answer and cutting it would keep.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use triage_base::safe::Secrets;

/// Most bytes of one series' label names and values read; a series with more is skipped (and
/// counted), an instance name longer than this is not kept.
pub const MAX_LABEL_BYTES: usize = 16 << 10;

/// Longest JSON string a streamed answer may hold: serde keeps a string whole while reading it.
pub const MAX_STRING_BYTES: usize = 1 << 20;

/// Distinct instances counted exactly in a `/api/v1/series` answer; past it, "more than".
pub const MAX_DISTINCT_INSTANCES: usize = 1 << 18;

/// A key's index in `names`, or `usize::MAX` for a key not read; never allocates.
struct Key(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        Ok(self.0.iter().position(|n| *n == v).unwrap_or(usize::MAX))
    }
}

/// Every `/api/v1` answer's envelope; `data` read by the seed given.
pub(super) struct Answer<T> {
    pub status: Option<String>,
    pub data: Option<T>,
    pub error_type: Option<String>,
    pub error: Option<String>,
    /// The first [`super::MAX_WARNINGS`], quoted.
    pub warnings: Vec<String>,
    /// Warnings past those.
    pub more_warnings: usize,
}

pub(super) struct Envelope<'s, D> {
    pub data: D,
    pub secrets: &'s Secrets,
}

impl<'de, D: DeserializeSeed<'de>> DeserializeSeed<'de> for Envelope<'_, D> {
    type Value = Answer<D::Value>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, D: DeserializeSeed<'de>> Visitor<'de> for Envelope<'_, D> {
    type Value = Answer<D::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Prometheus API answer")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut a = Answer {
            status: None,
            data: None,
            error_type: None,
            error: None,
            warnings: Vec::new(),
            more_warnings: 0,
        };
        let mut seed = Some(self.data);
        const KEYS: &[&str] = &["status", "data", "errorType", "error", "warnings"];
        while let Some(k) = map.next_key_seed(Key(KEYS))? {
            match k {
                0 => a.status = Some(map.next_value()?),
                1 => match seed.take() {
                    Some(s) => a.data = map.next_value_seed(OptionSeed(s))?,
                    None => _ = map.next_value::<IgnoredAny>()?,
                },
                2 => a.error_type = map.next_value()?,
                3 => a.error = map.next_value()?,
                4 => {
                    (a.warnings, a.more_warnings) = map.next_value_seed(Warnings(self.secrets))?;
                }
                _ => _ = map.next_value::<IgnoredAny>()?,
            }
        }
        Ok(a)
    }
}

/// `null` or the seed's value.
struct OptionSeed<D>(D);

impl<'de, D: DeserializeSeed<'de>> DeserializeSeed<'de> for OptionSeed<D> {
    type Value = Option<D::Value>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, D: DeserializeSeed<'de>> Visitor<'de> for OptionSeed<D> {
    type Value = Option<D::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("data or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        self.0.deserialize(d).map(Some)
    }
}

/// Prometheus's warnings: the first ones quoted, the rest counted.
struct Warnings<'s>(&'s Secrets);

impl<'de> DeserializeSeed<'de> for Warnings<'_> {
    type Value = (Vec<String>, usize);
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Warnings<'_> {
    type Value = (Vec<String>, usize);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of warnings")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut listed, mut more) = (Vec::new(), 0);
        while listed.len() < super::MAX_WARNINGS {
            match seq.next_element::<String>()? {
                Some(w) => listed.push(super::quote(self.0, &w)),
                None => return Ok((listed, 0)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            more += 1;
        }
        Ok((listed, more))
    }
}

/// A label value as a visitor sees it: kept when it is short enough, else `None`.
struct ShortText;

impl Visitor<'_> for ShortText {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<String>, E> {
        Ok((v.len() <= MAX_LABEL_BYTES).then(|| v.to_owned()))
    }
}

impl<'de> DeserializeSeed<'de> for ShortText {
    type Value = Option<String>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Option<String>, X::Error> {
        d.deserialize_str(self)
    }
}

/// Whether a metric name is an engine's (`vllm:`, `sglang:`, `tgi_`), read without keeping it.
struct EngineName;

impl Visitor<'_> for EngineName {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metric name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(crate::query::is_engine_metric(v))
    }
}

impl<'de> DeserializeSeed<'de> for EngineName {
    type Value = bool;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<bool, X::Error> {
        d.deserialize_str(self)
    }
}

/// What the exchange reads of a `/api/v1/series` answer: how many label sets, how many
/// instances, and the first instances in name order whose sets fit `max_series` (with whether
/// each runs an engine) — never the label sets themselves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesSets {
    /// Label sets in the answer.
    pub total: usize,
    /// Distinct `instance` values (absent counts as one, empty), exactly up to
    /// [`MAX_DISTINCT_INSTANCES`].
    pub instances: usize,
    /// More distinct instances than [`MAX_DISTINCT_INSTANCES`] were seen.
    pub instances_more: bool,
    /// The first instances in name order whose label sets together fit `max_series` (all of
    /// them when the answer fits): (instance, label sets, whether an engine metric is among
    /// them), in name order.
    pub kept: Vec<(String, usize, bool)>,
    /// Label sets whose instance name was longer than [`MAX_LABEL_BYTES`] (never kept).
    pub long_instances: usize,
    max_series: usize,
    held: usize,
    ceiling: Option<String>,
    /// Hashes of the instances seen, sorted and deduplicated up to `sorted`; compacted when
    /// it doubles (a sorted `Vec`, not a set: the site's module is smaller so).
    seen: Vec<u64>,
    sorted: usize,
}

impl SeriesSets {
    pub(super) fn new(max_series: usize) -> SeriesSets {
        SeriesSets { max_series, ..SeriesSets::default() }
    }

    fn add(&mut self, instance: Option<String>, engine: bool) {
        self.total += 1;
        let Some(inst) = instance else {
            self.long_instances += 1;
            return;
        };
        if !self.instances_more {
            self.seen.push(fnv(inst.as_bytes()));
            if self.seen.len() >= 2 * self.sorted.max(4096) {
                self.count_instances();
            }
        }
        if self.ceiling.as_ref().is_some_and(|c| inst >= *c) {
            return;
        }
        self.kept.push((inst, 1, engine));
        self.held += 1;
        if self.held > 2 * self.max_series.max(1024) {
            self.compact();
        }
    }

    /// The sets gathered merged by instance, in name order, and cut to the instances that fit:
    /// the first one that does not fit, and every one after it, can never be read, whatever
    /// comes later (its count only grows).
    fn compact(&mut self) {
        triage_base::sort::sort_by(&mut self.kept, |a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(String, usize, bool)> = Vec::new();
        for (inst, n, engine) in std::mem::take(&mut self.kept) {
            match merged.last_mut() {
                Some(last) if last.0 == inst => (last.1, last.2) = (last.1 + n, last.2 | engine),
                _ => merged.push((inst, n, engine)),
            }
        }
        let mut held = 0;
        let fit = merged.iter().take_while(|(_, n, _)| {
            held += n;
            held <= self.max_series
        });
        let fit = fit.count();
        if fit < merged.len() {
            self.ceiling = Some(merged[fit].0.clone());
            merged.truncate(fit);
        }
        self.held = merged.iter().map(|(_, n, _)| n).sum();
        self.kept = merged;
    }

    /// The answer is read: the sets merged and cut, the instances counted.
    pub(super) fn finish(&mut self) {
        self.compact();
        self.count_instances();
    }
}

impl SeriesSets {
    /// The distinct instances counted so far (exactly, up to [`MAX_DISTINCT_INSTANCES`]).
    pub(super) fn count_instances(&mut self) {
        if self.instances_more {
            return;
        }
        triage_base::sort::sort(&mut self.seen);
        self.seen.dedup();
        self.sorted = self.seen.len();
        if self.sorted > MAX_DISTINCT_INSTANCES {
            (self.instances_more, self.seen) = (true, Vec::new());
            self.instances = MAX_DISTINCT_INSTANCES;
        } else {
            self.instances = self.sorted;
        }
    }
}

/// FNV-1a: instances told apart for counting without keeping their names.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// `/api/v1/series`'s `data`: a list of label sets.
pub(super) struct SetsSeed<'k>(pub &'k mut SeriesSets);

impl<'de> DeserializeSeed<'de> for SetsSeed<'_> {
    type Value = ();
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<(), X::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SetsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of label sets")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some((instance, engine)) = seq.next_element_seed(SetSeed)? {
            self.0.add(instance, engine);
        }
        Ok(())
    }
}

/// One label set of `/api/v1/series`: its `instance` (`""` when absent; `None` when too long)
/// and whether its name is an engine's.
struct SetSeed;

impl<'de> DeserializeSeed<'de> for SetSeed {
    type Value = (Option<String>, bool);
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SetSeed {
    type Value = (Option<String>, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a label set")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut instance, mut engine) = (Some(String::new()), false);
        while let Some(k) = map.next_key_seed(Key(&["__name__", "instance"]))? {
            match k {
                0 => engine = map.next_value_seed(EngineName)?,
                1 => instance = map.next_value_seed(ShortText)?,
                _ => _ = map.next_value::<IgnoredAny>()?,
            }
        }
        Ok((instance, engine))
    }
}

/// One series kept from a matrix: its points (at most the bound) and what was not kept.
#[derive(Debug, Default)]
pub(super) struct Kept {
    pub points: Vec<(f64, f64)>,
    /// Values in the answer.
    pub values: u64,
    /// Values that were no finite numbers.
    pub bad: u64,
}

/// A matrix's series while it streams: at most `max_series` (the first in label order, as if
/// the whole answer were sorted and cut) holding at most `max_points` points in that order.
/// Series are gathered, then now and then sorted and cut ([`Keeper::compact`]) — a `Vec` and
/// core's one sort rather than an ordered map: the site's module is smaller so.
#[derive(Debug)]
pub(super) struct Keeper {
    max_series: usize,
    max_points: u64,
    /// (labels, arrival, series): equal label sets keep their order, as a stable sort would.
    pub kept: Vec<(BTreeMap<String, String>, u64, Kept)>,
    /// After a compaction that filled the bound: the last kept series' labels. A series whose
    /// labels sort at or after them is cut whatever comes later.
    bar: Option<BTreeMap<String, String>>,
    /// Series in the answer.
    pub total: u64,
    /// Series skipped because their labels were longer than [`MAX_LABEL_BYTES`].
    pub long_labels: u64,
    held: u64,
}

impl Keeper {
    pub fn new(max_series: usize, max_points: u64) -> Keeper {
        Keeper { max_series, max_points, kept: Vec::new(), bar: None, total: 0, long_labels: 0, held: 0 }
    }

    /// A series with these labels would be cut by `max_series` whatever comes after it.
    fn beyond(&self, labels: &BTreeMap<String, String>) -> bool {
        self.max_series == 0 || self.bar.as_ref().is_some_and(|bar| labels >= bar)
    }

    fn add(&mut self, labels: BTreeMap<String, String>, series: Kept) {
        if self.beyond(&labels) {
            return;
        }
        self.held += series.points.len() as u64;
        self.kept.push((labels, self.total, series));
        // At most twice the bound's series, and the bound's points plus one slack, are held.
        if self.kept.len() >= 2 * self.max_series.max(1)
            || self.held > self.max_points.saturating_add(self.max_points.max(1 << 20))
        {
            self.compact();
        }
    }

    /// Sorted by labels (then arrival) and cut to `max_series`; each kept series keeps the
    /// points that fit what the ones before it left.
    pub fn compact(&mut self) {
        triage_base::sort::sort_by(&mut self.kept, |a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        self.kept.truncate(self.max_series);
        let mut room = self.max_points;
        for (_, _, s) in &mut self.kept {
            if s.points.len() as u64 > room {
                s.points.truncate(room as usize);
                // A truncated series gives its memory back: the bound is on what is held.
                s.points.shrink_to_fit();
            }
            room -= s.points.len() as u64;
        }
        self.held = self.max_points - room;
        if self.kept.len() == self.max_series {
            self.bar = self.kept.last().map(|(l, _, _)| l.clone());
        }
    }

    fn cap(&self) -> usize {
        usize::try_from(self.max_points).unwrap_or(usize::MAX)
    }
}

/// A matrix's `data`: `resultType` and `result`.
pub(super) struct MatrixSeed<'k>(pub &'k mut Keeper);

impl<'de> DeserializeSeed<'de> for MatrixSeed<'_> {
    type Value = String;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<String, X::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MatrixSeed<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a query's data")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let mut result_type = None;
        let mut read = false;
        while let Some(k) = map.next_key_seed(Key(&["resultType", "result"]))? {
            match k {
                0 => result_type = Some(map.next_value::<String>()?),
                1 if !read => {
                    read = true;
                    map.next_value_seed(ResultSeed(&mut *self.0))?;
                }
                _ => _ = map.next_value::<IgnoredAny>()?,
            }
        }
        result_type.ok_or_else(|| de::Error::missing_field("resultType"))
    }
}

struct ResultSeed<'k>(&'k mut Keeper);

impl<'de> DeserializeSeed<'de> for ResultSeed<'_> {
    type Value = ();
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<(), X::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of series")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(SeriesSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One series of a matrix: `metric` and `values`, in either order.
struct SeriesSeed<'k>(&'k mut Keeper);

impl<'de> DeserializeSeed<'de> for SeriesSeed<'_> {
    type Value = ();
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<(), X::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SeriesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let keeper = self.0;
        let (mut labels, mut series) = (None::<Option<BTreeMap<String, String>>>, None::<Kept>);
        while let Some(k) = map.next_key_seed(Key(&["metric", "values"]))? {
            match k {
                0 if labels.is_none() => labels = Some(map.next_value_seed(LabelsSeed)?),
                1 if series.is_none() => {
                    // Labels read first and cut by `max_series` already: the values are skipped.
                    let skip = matches!(&labels, Some(None))
                        || labels.as_ref().and_then(Option::as_ref).is_some_and(|l| keeper.beyond(l));
                    let cap = if skip { 0 } else { keeper.cap() };
                    series = Some(map.next_value_seed(PointsSeed(cap))?);
                }
                _ => _ = map.next_value::<IgnoredAny>()?,
            }
        }
        keeper.total += 1;
        match labels {
            Some(None) => keeper.long_labels += 1,
            Some(Some(l)) => keeper.add(l, series.unwrap_or_default()),
            None => return Err(de::Error::missing_field("metric")),
        }
        Ok(())
    }
}

/// A series' labels, or `None` when they hold more than [`MAX_LABEL_BYTES`].
struct LabelsSeed;

impl<'de> DeserializeSeed<'de> for LabelsSeed {
    type Value = Option<BTreeMap<String, String>>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed {
    type Value = Option<BTreeMap<String, String>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a label set")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut labels, mut bytes) = (BTreeMap::new(), 0usize);
        let mut long = false;
        while !long {
            let Some(k) = map.next_key_seed(ShortText)? else { return Ok(Some(labels)) };
            let v = map.next_value_seed(ShortText)?;
            match (k, v) {
                (Some(k), Some(v)) if bytes + k.len() + v.len() <= MAX_LABEL_BYTES => {
                    bytes += k.len() + v.len();
                    labels.insert(k, v);
                }
                _ => long = true,
            }
        }
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A series' `values`: `[t, "v"]` pairs, at most `cap` finite ones kept, all counted.
struct PointsSeed(usize);

impl<'de> DeserializeSeed<'de> for PointsSeed {
    type Value = Kept;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Kept, X::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PointsSeed {
    type Value = Kept;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of [time, \"value\"] pairs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kept, A::Error> {
        let mut k = Kept::default();
        while let Some(p) = seq.next_element_seed(PointSeed)? {
            k.values += 1;
            match p {
                // ±Inf is no sample of a counter or a gauge the rules read: one `+Inf` counter
                // sample made healthy replicas' counters "rise by inf".
                Some(p) if k.points.len() < self.0 => k.points.push(p),
                Some(_) => {}
                None => k.bad += 1,
            }
        }
        Ok(k)
    }
}

/// `[t, "v"]`: `None` when either is not a finite number.
struct PointSeed;

impl<'de> DeserializeSeed<'de> for PointSeed {
    type Value = Option<(f64, f64)>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Self::Value, X::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PointSeed {
    type Value = Option<(f64, f64)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [time, \"value\"] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let t: f64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let v = seq.next_element_seed(Value)?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(v.filter(|x| t.is_finite() && x.is_finite()).map(|x| (t, x)))
    }
}

/// A sample's value string, read as a number without keeping the string.
struct Value;

impl<'de> DeserializeSeed<'de> for Value {
    type Value = Option<f64>;
    fn deserialize<X: Deserializer<'de>>(self, d: X) -> Result<Option<f64>, X::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Value {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sample value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        Ok(triage_base::expo::parse_value(v))
    }
}

/// A streamed body's bytes as serde reads them: no string longer than [`MAX_STRING_BYTES`]
/// (serde keeps a string whole while reading it from a stream).
pub(super) struct Guard<R> {
    inner: R,
    in_string: bool,
    escaped: bool,
    run: usize,
}

impl<R: Read> Guard<R> {
    pub fn new(inner: R) -> Self {
        Guard { inner, in_string: false, escaped: false, run: 0 }
    }
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if !self.in_string {
                self.in_string = b == b'"';
                continue;
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.run = 0;
                continue;
            }
            self.run += 1;
            if self.run > MAX_STRING_BYTES {
                return Err(io::Error::other(format!(
                    "the answer holds a string longer than {} MiB, which no Prometheus answer this tool reads has",
                    MAX_STRING_BYTES >> 20
                )));
            }
        }
        Ok(n)
    }
}
