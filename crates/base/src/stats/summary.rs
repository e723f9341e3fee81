//! Exact descriptive statistics of a slice of values (the small-sample path: probes, benchmarks).
//!
//! Quantiles use linear interpolation between closest ranks, exactly like numpy's default
//! (`method="linear"`): for `n` sorted values the rank of quantile `q` is `q·(n−1)`.

use serde::{Deserialize, Serialize};

/// Count, moments, extremes and tail quantiles of a set of values.
///
/// The same shape is produced by [`Summary::from_values`] (exact) and by
/// [`QuantileSketch::summary`](super::QuantileSketch::summary) (approximate quantiles), so
/// reports do not care which path produced it.
///
/// Non-finite inputs (NaN, ±∞) are never part of any statistic: they are skipped and counted in
/// [`skipped`](Self::skipped), because one NaN from a failed measurement must not poison a run's
/// mean, and silently dropping it would hide the failure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of finite values summarised.
    pub count: u64,
    /// Number of non-finite inputs (NaN, +∞, −∞) that were skipped.
    #[serde(default)]
    pub skipped: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (Bessel-corrected, divides by `n − 1`); `0` when `count == 1`.
    ///
    /// Sample rather than population because a probe's requests are a sample of the server's
    /// behaviour, and with few requests the `n` divisor visibly understates the spread.
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl Summary {
    /// Summarises `values` exactly. The input need not be sorted.
    ///
    /// Returns `None` when there is no finite value. Quantiles follow [`quantile_sorted`].
    /// Sums that would overflow `f64` (magnitudes near `f64::MAX`) are recomputed on scaled
    /// values, so `mean` stays finite; `std` can only be `+∞` when the true deviation itself
    /// exceeds `f64::MAX`.
    pub fn from_values(values: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let skipped = (values.len() - sorted.len()) as u64;
        crate::sort::sort_f64(&mut sorted);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let (mean, std) = mean_and_std(&sorted, min, max);
        Some(Summary {
            count: sorted.len() as u64,
            skipped,
            mean,
            std,
            min,
            max,
            p50: quantile_sorted(&sorted, 0.5),
            p90: quantile_sorted(&sorted, 0.9),
            p95: quantile_sorted(&sorted, 0.95),
            p99: quantile_sorted(&sorted, 0.99),
            p999: quantile_sorted(&sorted, 0.999),
        })
    }
}

/// Mean and sample standard deviation of finite, non-empty `values` whose extremes are `min` and
/// `max`. Two passes (mean first, then squared deviations) because the one-pass sum-of-squares
/// formula cancels catastrophically for latencies like 1e9 ns ± 10.
fn mean_and_std(values: &[f64], min: f64, max: f64) -> (f64, f64) {
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let mean = if sum.is_finite() {
        sum / n
    } else {
        // Only reachable near f64::MAX: sum values divided by the largest magnitude instead.
        let scale = min.abs().max(max.abs());
        values.iter().map(|v| v / scale).sum::<f64>() / n * scale
    };
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let std = if ss.is_finite() {
        (ss / (n - 1.0)).sqrt()
    } else {
        // Deviations wider than f64::MAX: square them in units of the largest magnitude.
        let scale = min.abs().max(max.abs());
        let m = mean / scale;
        let ss: f64 = values.iter().map(|v| (v / scale - m) * (v / scale - m)).sum();
        (ss / (n - 1.0)).sqrt() * scale
    };
    (mean, std)
}

/// The median of `values` (sorted in place; NaNs sort last), as numpy's `median`: the middle
/// value, or the mean of the two middle ones. `None` when empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    crate::sort::sort_f64(values);
    Some(quantile_sorted(values, 0.5))
}

/// The `q`-quantile of ascending `sorted` values, interpolated linearly between closest ranks
/// exactly like numpy's default (`numpy.quantile(a, q, method="linear")`):
/// `rank = q·(n−1)`, `lo = ⌊rank⌋`, result `sorted[lo] + (sorted[lo+1] − sorted[lo])·(rank − lo)`.
///
/// `q` is clamped to `[0, 1]`. Returns NaN when `sorted` is empty or `q` is NaN — there is no
/// value to give. The input must be sorted ascending and finite for the result to mean
/// anything; other input gives an unspecified value but never panics.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let (Some(&first), false) = (sorted.first(), q.is_nan()) else {
        return f64::NAN;
    };
    let q = q.clamp(0.0, 1.0);
    let last = sorted.len() - 1;
    let rank = q * last as f64;
    // `rank ≤ last` because q ≤ 1; the `min` guards against rounding all the same.
    let lo = (rank.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let (a, b) = (sorted.get(lo).copied().unwrap_or(first), sorted.get(hi).copied().unwrap_or(first));
    lerp(a, b, rank - lo as f64)
}

/// numpy's `_lerp`: interpolates from whichever end is nearer so that `t = 1` returns `b`
/// exactly and the result stays monotone in `t`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if !diff.is_finite() {
        // Spans wider than f64::MAX: weight the ends instead of differencing them.
        return a * (1.0 - t) + b * t;
    }
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn one_to_ten_matches_numpy() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::from_values(&v).unwrap();
        assert_eq!((s.count, s.skipped, s.min, s.max), (10, 0, 1.0, 10.0));
        assert_eq!(s.mean, 5.5);
        // Sample variance of 1..=10 is 82.5 / 9.
        assert!(close(s.std, (82.5f64 / 9.0).sqrt()), "{}", s.std);
        // numpy.quantile(range(1, 11), [.5, .9, .95, .99, .999]) = 5.5, 9.1, 9.55, 9.91, 9.991
        assert!(close(s.p50, 5.5));
        assert!(close(s.p90, 9.1), "{}", s.p90);
        assert!(close(s.p95, 9.55), "{}", s.p95);
        assert!(close(s.p99, 9.91), "{}", s.p99);
        assert!(close(s.p999, 9.991), "{}", s.p999);
    }

    #[test]
    fn single_value_has_zero_spread() {
        let s = Summary::from_values(&[42.0]).unwrap();
        assert_eq!((s.count, s.mean, s.std, s.min, s.max), (1, 42.0, 0.0, 42.0, 42.0));
        assert_eq!((s.p50, s.p90, s.p999), (42.0, 42.0, 42.0));
    }

    #[test]
    fn two_values() {
        let s = Summary::from_values(&[10.0, 20.0]).unwrap();
        assert_eq!(s.mean, 15.0);
        // Sample std of {10, 20}: sqrt(((−5)² + 5²) / 1) = sqrt(50).
        assert!(close(s.std, 50f64.sqrt()));
        assert_eq!(s.p50, 15.0);
        assert!(close(s.p90, 19.0));
        assert!(close(s.p99, 19.9));
    }

    #[test]
    fn unsorted_input_is_sorted_first() {
        let s = Summary::from_values(&[3.0, 1.0, 4.0, 1.0, 5.0]).unwrap();
        // Sorted: 1 1 3 4 5; rank 0.5·4 = 2 → 3; rank 0.9·4 = 3.6 → 4 + 0.6.
        assert_eq!((s.min, s.max, s.p50), (1.0, 5.0, 3.0));
        assert!(close(s.p90, 4.6));
        assert!(close(s.mean, 2.8));
    }

    #[test]
    fn non_finite_values_are_skipped_and_counted() {
        let s = Summary::from_values(&[f64::NAN, 2.0, f64::INFINITY, 4.0, f64::NEG_INFINITY]);
        let s = s.unwrap();
        assert_eq!((s.count, s.skipped, s.mean, s.p50), (2, 3, 3.0, 3.0));
    }

    #[test]
    fn nothing_finite_gives_none() {
        assert_eq!(Summary::from_values(&[]), None);
        assert_eq!(Summary::from_values(&[f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn negative_values_and_zero() {
        let s = Summary::from_values(&[-2.0, 0.0, 2.0]).unwrap();
        assert_eq!((s.mean, s.min, s.p50, s.max), (0.0, -2.0, 0.0, 2.0));
        assert!(close(s.std, 2.0));
    }

    #[test]
    fn huge_magnitudes_do_not_overflow_the_mean() {
        let s = Summary::from_values(&[f64::MAX, f64::MAX]).unwrap();
        assert_eq!(s.mean, f64::MAX);
        assert_eq!(s.std, 0.0);
        // Deviations of ±MAX/3 and ∓2·MAX/3 overflow when squared; the scaled pass copes.
        let s = Summary::from_values(&[f64::MAX, 0.0, f64::MAX]).unwrap();
        assert!((s.std / (f64::MAX / 3f64.sqrt()) - 1.0).abs() < 1e-12, "{s:?}");
        assert!((s.mean / (f64::MAX / 1.5) - 1.0).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn quantile_sorted_edges() {
        assert!(quantile_sorted(&[], 0.5).is_nan());
        assert!(quantile_sorted(&[1.0], f64::NAN).is_nan());
        assert_eq!(quantile_sorted(&[1.0, 2.0], -3.0), 1.0);
        assert_eq!(quantile_sorted(&[1.0, 2.0], 7.0), 2.0);
        assert_eq!(quantile_sorted(&[1.0, 2.0], 1.0), 2.0);
        assert_eq!(quantile_sorted(&[-f64::MAX, f64::MAX], 0.5), 0.0);
    }

    #[test]
    fn serde_round_trip() {
        let s = Summary::from_values(&[1.0, 2.0, 3.0]).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Summary>(&json).unwrap(), s);
    }
}
