//! The series' own samples over the window's recent slice: what a range query cannot say.
//!
//! A range query answers at every step with the latest sample within Prometheus's lookback
//! (5 min), stamped with the step's time. Scraped once a minute and read every 15 s, a counter
//! repeats each sample four times, and a healthy replica's counter seems to stop between two
//! steps (which once had a healthy fleet called an outage). So the recent slice is read as a raw
//! range vector (`{…}[900s]` at the window's end): the samples as stored, with their own times.
//! From them the scrape interval is learned ([`interval`]); the range query's step is never finer
//! than it; the slice replaces the range's points over the same time ([`merge`]), so everything
//! the recent tail judges is a distinct sample; and a series whose samples stopped coming is
//! *stale* — a target that stopped answering, told apart from a counter that stopped moving.

use super::answer::Matrix;
use super::query::{self, Window};

/// Longest slice read as raw samples: four scrapes even at a scrape every three minutes.
pub const SLICE_S: f64 = 900.0;
/// Fewest distinct samples of a series in the recent tail for the tail to judge it: the tail of a
/// series reaches back to its third-last sample when that is earlier than the tail's time, so
/// a counter is called stopped only when it stayed flat over two whole scrape intervals (one
/// missed scrape stretches the tail instead of shortening what it sees).
pub const MIN_TAIL_SAMPLES: usize = 3;
/// A series whose last sample is more than this many scrape intervals before the newest sample
/// of the window is stale (Prometheus itself marks a series stale after one failed scrape; two
/// allow for one late scrape).
pub const STALE_AFTER_SCRAPES: f64 = 2.5;

pub use triage_report::prometheus::Scraping;

/// The raw slice to read: `{expr}[N s]` at the window's end, `N` at most [`SLICE_S`], the
/// window's length, and what `budget` points allow for `series` series scraped as often as
/// once a second.
pub fn slice_seconds(w: &Window, series: usize, budget: u64) -> f64 {
    let fits = budget as f64 / series.max(1) as f64;
    SLICE_S.min(w.end_s - w.start_s).min(fits).floor().max(1.0)
}

/// The instant query of the raw slice, as a form body for `/api/v1/query`.
pub fn slice_form(expr: &str, w: &Window, slice_s: f64) -> String {
    format!(
        "query={}&time={}",
        query::encode(&format!("{expr}[{}s]", query::secs(slice_s))),
        query::secs(w.end_s)
    )
}

/// The scrape interval of a raw answer (samples, not steps): per series the median spacing of
/// its consecutive samples, then the median over series (a missed scrape or two do not move
/// it). `None` without a series of two samples.
pub fn interval(m: &Matrix) -> Option<f64> {
    let mut per_series: Vec<f64> = m
        .series
        .iter()
        .filter_map(|s| {
            let mut gaps: Vec<f64> =
                s.points.windows(2).map(|p| p[1].0 - p[0].0).filter(|g| *g > 0.0).collect();
            triage_base::stats::median(&mut gaps)
        })
        .collect();
    triage_base::stats::median(&mut per_series).filter(|i| i.is_finite() && *i > 0.0)
}

/// The range answer with its points from `from_s` on replaced by the series' own samples: a
/// series the slice has keeps its range points before `from_s` and takes the slice's after; one
/// the slice lacks had no sample in the slice (the range only repeated an older one within the
/// lookback), so its points end before `from_s`; one only the slice has is added.
pub fn merge(range: &mut Matrix, samples: Matrix, from_s: f64) {
    let mut by_labels: std::collections::BTreeMap<_, _> =
        samples.series.into_iter().map(|s| (s.labels, s.points)).collect();
    let mut points = 0u64;
    for s in &mut range.series {
        s.points.truncate(s.points.partition_point(|p| p.0 < from_s));
        if let Some(raw) = by_labels.remove(&s.labels) {
            s.points.extend(raw.into_iter().filter(|p| p.0 >= from_s));
        }
        points += s.points.len() as u64;
    }
    for (labels, raw) in by_labels {
        points += raw.len() as u64;
        range.series.push(super::answer::RangeSeries { labels, points: raw });
    }
    range.series.retain(|s| !s.points.is_empty());
    triage_base::sort::sort_by(&mut range.series, |a, b| a.labels.cmp(&b.labels));
    range.points = points;
    range.cut.extend(samples.cut);
}

/// Series of `m` whose last sample is stale at `end_s` (see [`STALE_AFTER_SCRAPES`]).
pub fn stale(m: &Matrix, end_s: f64, interval_s: f64) -> usize {
    m.series.iter().filter(|s| s.points.last().is_some_and(|p| is_stale(p.0, end_s, interval_s))).count()
}

/// Whether a series whose last sample is at `last_s` is stale at `end_s`.
pub fn is_stale(last_s: f64, end_s: f64, interval_s: f64) -> bool {
    last_s < end_s - STALE_AFTER_SCRAPES * interval_s
}

/// The recent tail judged on its own: a quarter of the window, at most two minutes, but at least
/// two steps (the step is never finer than the scrape interval) — each series' tail reaching
/// back further to hold [`MIN_TAIL_SAMPLES`] samples ([`tail_start`]); `None` when the window is
/// too short to hold it beside the rest (the whole window then judges alone).
pub fn tail_seconds(w: &Window) -> Option<f64> {
    let len = w.end_s - w.start_s;
    // A step past a minute made the bounds of a clamp cross (it panicked): max and min only.
    let tail = (len / 4.0).min(120.0).max(2.0 * w.step_s);
    (len >= 2.0 * tail && tail >= w.step_s).then_some(tail)
}

/// Where one series' recent tail starts: `by_time` (the window's end less the tail), or its
/// [`MIN_TAIL_SAMPLES`]-th last sample when that is earlier (at one scrape every two minutes, a
/// two-minute tail would hold one or two samples). `points` in time order.
pub fn tail_start(points: &[(f64, f64)], by_time: f64) -> f64 {
    match points.len().checked_sub(MIN_TAIL_SAMPLES) {
        Some(k) => points[k].0.min(by_time),
        None => by_time,
    }
}

/// The report's [`Scraping`]: the interval and what it limits, in words (in `lang`).
pub fn scraping(
    interval_s: f64,
    from_s: f64,
    tail_s: Option<f64>,
    stale_series: usize,
    lang: triage_base::lang::Lang,
) -> Scraping {
    let i = query::secs(interval_s);
    let shortest = query::secs((MIN_TAIL_SAMPLES - 1) as f64 * interval_s);
    let limits = match tail_s {
        Some(t) => lang.pick(
            format!(
                "one scrape every {i} s: a counter is judged stopped only between distinct samples, over the last {} s or its last {MIN_TAIL_SAMPLES} samples if they reach further; a stall shorter than {shortest} s cannot be told from the pause between scrapes",
                query::secs(t)
            ),
            format!(
                "每 {i} s 抓取一次：只在不同的样本之间判断计数器是否停止，看最后 {} s（若最后 {MIN_TAIL_SAMPLES} 个样本跨度更长则看它们）；短于 {shortest} s 的卡顿无法与两次抓取之间的间隔区分",
                query::secs(t)
            ),
        ),
        None => lang.pick(
            format!(
                "one scrape every {i} s: the window is too short to judge its recent tail apart; only the whole window is judged, and a stall shorter than {shortest} s cannot be seen"
            ),
            format!("每 {i} s 抓取一次：时间窗太短，无法单独判断最近一段；只判断整个时间窗，短于 {shortest} s 的卡顿看不到"),
        ),
    };
    Scraping { interval_s, samples_from_unix_s: from_s, tail_s, stale_series, limits }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::RangeSeries;

    fn series(name: &str, points: &[(f64, f64)]) -> RangeSeries {
        RangeSeries {
            labels: [("__name__".to_owned(), name.to_owned())].into_iter().collect(),
            points: points.to_vec(),
        }
    }

    #[test]
    fn the_interval_is_the_median_spacing_whatever_one_missed_scrape_says() {
        let jittered = [(0.0, 1.0), (59.2, 2.0), (121.0, 3.0), (240.4, 4.0), (300.0, 5.0), (361.0, 6.0)];
        let m = Matrix {
            series: vec![series("a_total", &jittered), series("b", &[(5.0, 1.0)])],
            ..Matrix::default()
        };
        let i = interval(&m).unwrap();
        assert!((59.0..=61.0).contains(&i), "{i}");
        assert_eq!(interval(&Matrix { series: vec![series("b", &[(5.0, 1.0)])], ..Matrix::default() }), None);
    }

    #[test]
    fn the_slice_replaces_repeats_at_steps_with_samples() {
        // Scraped every 60 s, read every 15 s: the range repeats each sample four times.
        let steps: Vec<(f64, f64)> = (0..=16).map(|k| (k as f64 * 15.0, (k / 4) as f64)).collect();
        let mut range = Matrix {
            series: vec![series("x_total", &steps), series("gone_total", &steps)],
            ..Matrix::default()
        };
        range.points = 34;
        let raw = Matrix {
            series: vec![series("x_total", &[(180.0, 3.0), (240.0, 4.0)]), series("new", &[(200.0, 1.0)])],
            ..Matrix::default()
        };
        merge(&mut range, raw, 150.0);
        let names: Vec<&str> = range.series.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["gone_total", "new", "x_total"]);
        let x = &range.series[2];
        assert_eq!(x.points.iter().filter(|p| p.0 >= 150.0).count(), 2);
        assert_eq!(x.points.last(), Some(&(240.0, 4.0)));
        // No sample in the slice: its points end before it (the repeats were the lookback's).
        assert!(range.series[0].points.last().unwrap().0 < 150.0);
        assert_eq!(range.points, range.series.iter().map(|s| s.points.len() as u64).sum::<u64>());
        assert_eq!(stale(&range, 240.0, 60.0), 0);
        assert_eq!(stale(&range, 300.0, 60.0), 1);
    }

    #[test]
    fn the_tail_reaches_back_to_three_samples() {
        let w = |len: f64, step_s: f64| Window { start_s: 0.0, end_s: len, step_s };
        assert_eq!(tail_seconds(&w(1800.0, 15.0)), Some(120.0));
        assert_eq!(tail_seconds(&w(1800.0, 120.0)), Some(240.0));
        // Three minutes at a scrape a minute: no tail beside the whole.
        assert_eq!(tail_seconds(&w(165.0, 60.0)), None);
        // Steps past a minute never panic.
        assert!(tail_seconds(&w(600.0, 90.0)).is_some());
        // Every 120 s, one scrape missed: the tail reaches back to the third-last sample.
        let points = [(0.0, 1.0), (121.0, 2.0), (243.0, 2.0), (361.0, 2.0)];
        assert_eq!(tail_start(&points, 302.0), 121.0);
        assert_eq!(tail_start(&points[..2], 302.0), 302.0);
        let every_15: Vec<(f64, f64)> = (0..40).map(|k| (k as f64 * 15.0, 0.0)).collect();
        assert_eq!(tail_start(&every_15, 465.0), 465.0);
        assert!(
            scraping(60.0, 0.0, Some(120.0), 0, triage_base::lang::Lang::En)
                .limits
                .contains("shorter than 120 s")
        );
        assert!(scraping(60.0, 0.0, None, 0, triage_base::lang::Lang::Zh).limits.contains("短于 120 s"));
        assert_eq!(slice_seconds(&w(1800.0, 15.0), 3000, 1_000_000), 333.0);
        assert_eq!(slice_seconds(&w(600.0, 15.0), 10, 1_000_000), 600.0);
    }
}
