//! Quantiles from Prometheus cumulative histogram buckets (`histogram_quantile` semantics),
//! answering honestly when the rank falls outside the finite buckets.
//!
//! Differences from PromQL, all deliberate:
//!
//! * rank in the first bucket: Prometheus interpolates from 0, inventing values the histogram
//!   never measured (vLLM's inter-token-latency histogram starts at 10 ms, so PromQL reports e.g.
//!   "5 ms" for a server that is in fact anywhere below 10 ms). Here: [`BucketQuantile::BelowFirstBucket`];
//! * rank in the `+Inf` bucket: Prometheus returns the last finite bound as if it were a value.
//!   Here: [`BucketQuantile::AboveLastBucket`];
//! * no `+Inf` bucket: Prometheus returns NaN. Here the largest bucket's count is taken as the
//!   total and [`BucketIssue::MissingInfBucket`] says so;
//! * `q = 0` selects the first non-empty bucket rather than the first bucket.
//!
//! Shared with PromQL: buckets are sorted by bound, duplicate bounds are summed, cumulative
//! counts are made monotone with a running maximum, and inside a middle bucket the value is
//! interpolated linearly between its bounds by the rank's position among the bucket's
//! observations.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where quantile `q` of a bucketed histogram lies, stated no more precisely than the buckets
/// allow. All bounds are finite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BucketQuantile {
    /// The histogram holds no observations (or `q` was NaN: there is no rank to answer for).
    Empty,
    /// The rank falls in the first bucket: the value is ≤ `upper`, and nothing more is known.
    BelowFirstBucket {
        /// The first bucket's bound (`le`).
        upper: f64,
    },
    /// The rank falls in a middle bucket; `value` is the linear interpolation inside it.
    Within {
        /// Interpolated estimate.
        value: f64,
        /// The previous bucket's bound (exclusive).
        lower: f64,
        /// This bucket's bound (inclusive).
        upper: f64,
    },
    /// The rank falls in the `+Inf` bucket: the value is > `lower`, and nothing more is known.
    AboveLastBucket {
        /// The largest finite bound.
        lower: f64,
    },
    /// There are observations but only a `+Inf` bucket, so nothing at all is known.
    NoFiniteBucket,
}

impl fmt::Display for BucketQuantile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BucketQuantile::Empty => f.write_str("no observations"),
            BucketQuantile::BelowFirstBucket { upper } => write!(f, "≤ {upper}"),
            BucketQuantile::Within { value, lower, upper } => {
                write!(f, "{} (between {lower} and {upper})", significant(value, 3))
            }
            BucketQuantile::AboveLastBucket { lower } => write!(f, "> {lower}"),
            BucketQuantile::NoFiniteBucket => f.write_str("unknown (only a +Inf bucket)"),
        }
    }
}

/// `v` with `digits` significant digits, trailing zeros dropped: an interpolated value is only
/// as precise as the bucket it came from, so 0.042133… prints as 0.0421.
fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text }
}

/// Something in the input that was repaired or assumed; the answer is still given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BucketIssue {
    /// The input bucket at `index` had a NaN or −∞ bound, or a negative or non-finite count,
    /// and was dropped.
    InvalidBucket {
        /// Position in the input slice.
        index: usize,
    },
    /// Several buckets share bound `le`; their counts were summed (as PromQL does).
    DuplicateBound {
        /// The repeated bound (`"+Inf"` in JSON when infinite).
        #[serde(with = "bound_serde")]
        le: f64,
    },
    /// The cumulative count at `le` was lower than at a smaller bound; it was raised to the
    /// running maximum (as PromQL does).
    NonMonotonic {
        /// The bound whose count went down (`"+Inf"` in JSON when infinite).
        #[serde(with = "bound_serde")]
        le: f64,
    },
    /// No `+Inf` bucket: the largest bucket's count was taken as the total, which assumes no
    /// observation exceeded the largest bound.
    MissingInfBucket {
        /// The largest bound, now treated as the top of the histogram.
        le: f64,
    },
}

/// Why two scrapes of a histogram cannot be subtracted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BucketError {
    /// A count went down between the scrapes: the process restarted and its counters reset,
    /// so the difference would be meaningless.
    #[error("counter reset at le={le}: {earlier} then {later}")]
    CounterReset {
        /// The bucket's bound.
        le: f64,
        /// Count in the earlier scrape.
        earlier: f64,
        /// Count in the later scrape.
        later: f64,
    },
    /// The scrapes do not have the same set of bucket bounds.
    #[error("bucket bounds differ between the scrapes")]
    BoundsDiffer,
    /// A bound is NaN or a count is not a finite number.
    #[error("bucket le={le} has no usable count or bound")]
    Invalid {
        /// The offending bound (may be NaN).
        le: f64,
    },
}

/// A cleaned cumulative histogram: finite bounds ascending with monotone counts, plus the total.
#[derive(Debug, Clone, PartialEq)]
pub struct CumulativeHistogram {
    /// `(le, cumulative count)` for the finite bounds, ascending.
    finite: Vec<(f64, f64)>,
    /// Count of the `+Inf` bucket (or of the largest bucket when `+Inf` is missing).
    total: f64,
}

impl CumulativeHistogram {
    /// Cleans `(le, cumulative count)` pairs in any order. Never fails: whatever had to be
    /// repaired or assumed is listed in the returned issues.
    pub fn from_buckets(buckets: &[(f64, f64)]) -> (Self, Vec<BucketIssue>) {
        let mut issues = Vec::new();
        let mut sorted: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
        for (index, &(le, count)) in buckets.iter().enumerate() {
            if le.is_nan() || le == f64::NEG_INFINITY || !count.is_finite() || count < 0.0 {
                issues.push(BucketIssue::InvalidBucket { index });
            } else {
                sorted.push((le, count));
            }
        }
        crate::sort::sort_by(&mut sorted, |a, b| a.0.total_cmp(&b.0));

        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(sorted.len());
        for (le, count) in sorted {
            match merged.last_mut() {
                Some(last) if last.0 == le => {
                    last.1 += count;
                    if !issues.contains(&BucketIssue::DuplicateBound { le }) {
                        issues.push(BucketIssue::DuplicateBound { le });
                    }
                }
                _ => merged.push((le, count)),
            }
        }

        let mut running = 0.0f64;
        for (le, count) in &mut merged {
            if *count < running {
                issues.push(BucketIssue::NonMonotonic { le: *le });
                *count = running;
            }
            running = *count;
        }

        let total = match merged.last() {
            Some(&(le, count)) if le == f64::INFINITY => {
                merged.pop();
                count
            }
            Some(&(le, count)) => {
                issues.push(BucketIssue::MissingInfBucket { le });
                count
            }
            None => 0.0,
        };
        (CumulativeHistogram { finite: merged, total }, issues)
    }

    /// Number of observations.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// Where quantile `q` lies. `q` is clamped to `[0, 1]`; NaN gives
    /// [`BucketQuantile::Empty`].
    ///
    /// The rank is `q · total`; the answer comes from the first bucket whose cumulative count
    /// reaches it, interpolating linearly inside middle buckets as PromQL does.
    pub fn quantile(&self, q: f64) -> BucketQuantile {
        if self.total <= 0.0 || q.is_nan() {
            return BucketQuantile::Empty;
        }
        let Some(&(last_le, _)) = self.finite.last() else {
            return BucketQuantile::NoFiniteBucket;
        };
        let rank = q.clamp(0.0, 1.0) * self.total;
        // `count > 0` makes q = 0 land in the first bucket that holds anything.
        let Some(b) = self.finite.iter().position(|&(_, count)| count >= rank && count > 0.0) else {
            return BucketQuantile::AboveLastBucket { lower: last_le };
        };
        let (upper, count) = self.finite[b];
        let Some(&(lower, below)) = b.checked_sub(1).and_then(|p| self.finite.get(p)) else {
            return BucketQuantile::BelowFirstBucket { upper };
        };
        // `count > below` or (`rank == 0` and `below == 0 < count`), so no division by zero.
        let value = lower + (upper - lower) * ((rank - below) / (count - below));
        BucketQuantile::Within { value, lower, upper }
    }
}

/// [`CumulativeHistogram::from_buckets`] then [`CumulativeHistogram::quantile`], for one-off
/// use; build the histogram once when asking for several quantiles.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> (BucketQuantile, Vec<BucketIssue>) {
    let (histogram, issues) = CumulativeHistogram::from_buckets(buckets);
    (histogram.quantile(q), issues)
}

/// The observations made between two scrapes of the same histogram: `later − earlier` per
/// bucket, sorted by bound. Inputs may be in any order.
///
/// Fails on a counter reset (a count went down: the process restarted in between), on differing
/// bounds, and on NaN bounds or non-finite counts.
pub fn delta(earlier: &[(f64, f64)], later: &[(f64, f64)]) -> Result<Vec<(f64, f64)>, BucketError> {
    let sorted = |buckets: &[(f64, f64)]| -> Result<Vec<(f64, f64)>, BucketError> {
        if let Some(&(le, _)) = buckets.iter().find(|(le, count)| le.is_nan() || !count.is_finite()) {
            return Err(BucketError::Invalid { le });
        }
        let mut v = buckets.to_vec();
        crate::sort::sort_by(&mut v, |a, b| a.0.total_cmp(&b.0));
        Ok(v)
    };
    let (earlier, later) = (sorted(earlier)?, sorted(later)?);
    if earlier.len() != later.len() {
        return Err(BucketError::BoundsDiffer);
    }
    earlier
        .iter()
        .zip(&later)
        .map(|(&(le, before), &(le_later, after))| {
            if le != le_later {
                Err(BucketError::BoundsDiffer)
            } else if after < before {
                Err(BucketError::CounterReset { le, earlier: before, later: after })
            } else {
                Ok((le, after - before))
            }
        })
        .collect()
}

/// Bounds in JSON: numbers, with `+Inf` (and, defensively, `-Inf`/`NaN`) as strings the way
/// Prometheus writes them, because JSON numbers cannot be infinite.
mod bound_serde {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            v if v.is_finite() => s.serialize_f64(v),
            f64::INFINITY => s.serialize_str("+Inf"),
            f64::NEG_INFINITY => s.serialize_str("-Inf"),
            _ => s.serialize_str("NaN"),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Bound<'a> {
        Number(f64),
        Text(&'a str),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Bound::deserialize(d)? {
            Bound::Number(v) => Ok(v),
            Bound::Text("+Inf") => Ok(f64::INFINITY),
            Bound::Text("-Inf") => Ok(f64::NEG_INFINITY),
            Bound::Text("NaN") => Ok(f64::NAN),
            Bound::Text(other) => Err(D::Error::custom(format_args!("invalid bound {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    /// vLLM's `vllm:time_per_output_token_seconds` / inter-token-latency bucket bounds.
    const VLLM_ITL: [f64; 19] = [
        0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
        80.0,
    ];

    fn quantile(q: f64, buckets: &[(f64, f64)]) -> BucketQuantile {
        histogram_quantile(q, buckets).0
    }

    fn within(value: f64, lower: f64, upper: f64) -> BucketQuantile {
        BucketQuantile::Within { value, lower, upper }
    }

    /// Whether `got` is `Within` with these bounds and a value equal to `value` up to rounding.
    fn close_to(got: BucketQuantile, value: f64, lower: f64, upper: f64) -> bool {
        matches!(got, BucketQuantile::Within { value: v, lower: l, upper: u }
            if (v - value).abs() < 1e-12 && (l, u) == (lower, upper))
    }

    const HAND: [(f64, f64); 4] = [(0.1, 10.0), (0.2, 30.0), (0.5, 40.0), (INF, 40.0)];

    #[test]
    fn middle_buckets_interpolate_linearly() {
        // Rank 20 of 40: 10 of the 20 observations in (0.1, 0.2] → halfway.
        assert!(close_to(quantile(0.5, &HAND), 0.15, 0.1, 0.2), "{:?}", quantile(0.5, &HAND));
        // Rank 36: 6 of the 10 in (0.2, 0.5] → 0.2 + 0.3·0.6.
        assert!(close_to(quantile(0.9, &HAND), 0.38, 0.2, 0.5), "{:?}", quantile(0.9, &HAND));
        assert_eq!(quantile(1.0, &HAND), within(0.5, 0.2, 0.5));
        assert!(histogram_quantile(0.5, &HAND).1.is_empty());
    }

    #[test]
    fn first_bucket_is_not_interpolated_from_zero() {
        // Rank 10 of 40 is the 10th observation, which is ≤ 0.1.
        assert_eq!(quantile(0.25, &HAND), BucketQuantile::BelowFirstBucket { upper: 0.1 });
        // Every inter-token gap under 10 ms: vLLM's histogram cannot say more than that.
        let all_fast: Vec<(f64, f64)> =
            VLLM_ITL.iter().map(|&le| (le, 500.0)).chain([(INF, 500.0)]).collect();
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(quantile(q, &all_fast), BucketQuantile::BelowFirstBucket { upper: 0.01 });
        }
        assert_eq!(quantile(0.5, &all_fast).to_string(), "≤ 0.01");
    }

    #[test]
    fn inf_bucket_reports_only_a_lower_bound() {
        let slow = [(1.0, 0.0), (60.0, 5.0), (INF, 100.0)];
        assert_eq!(quantile(0.99, &slow), BucketQuantile::AboveLastBucket { lower: 60.0 });
        assert_eq!(quantile(0.99, &slow).to_string(), "> 60");
        assert_eq!(quantile(0.05, &slow), within(60.0, 1.0, 60.0));
    }

    #[test]
    fn empty_histograms() {
        assert_eq!(histogram_quantile(0.5, &[]), (BucketQuantile::Empty, vec![]));
        assert_eq!(quantile(0.5, &[(0.1, 0.0), (INF, 0.0)]), BucketQuantile::Empty);
        assert_eq!(quantile(f64::NAN, &HAND), BucketQuantile::Empty);
        assert_eq!(quantile(0.5, &[(INF, 3.0)]), BucketQuantile::NoFiniteBucket);
    }

    #[test]
    fn unsorted_input_gives_the_same_answer() {
        let shuffled = [HAND[2], HAND[3], HAND[0], HAND[1]];
        for q in [0.0, 0.25, 0.5, 0.9, 1.0] {
            assert_eq!(histogram_quantile(q, &shuffled), histogram_quantile(q, &HAND));
        }
    }

    #[test]
    fn missing_inf_bucket_takes_the_largest_as_total() {
        let (answer, issues) = histogram_quantile(1.0, &[(0.2, 30.0), (0.1, 10.0)]);
        assert_eq!(answer, within(0.2, 0.1, 0.2));
        assert_eq!(issues, vec![BucketIssue::MissingInfBucket { le: 0.2 }]);
    }

    #[test]
    fn non_monotonic_counts_take_the_running_max() {
        let buckets = [(0.1, 10.0), (0.2, 8.0), (0.5, 20.0), (INF, 20.0)];
        let (histogram, issues) = CumulativeHistogram::from_buckets(&buckets);
        assert_eq!(issues, vec![BucketIssue::NonMonotonic { le: 0.2 }]);
        assert_eq!(histogram.quantile(0.5), BucketQuantile::BelowFirstBucket { upper: 0.1 });
        assert!(close_to(histogram.quantile(0.75), 0.35, 0.2, 0.5), "{:?}", histogram.quantile(0.75));
    }

    #[test]
    fn invalid_and_duplicate_buckets() {
        let buckets = [(0.1, 4.0), (f64::NAN, 1.0), (0.1, 6.0), (0.2, -1.0), (INF, 10.0)];
        let (histogram, issues) = CumulativeHistogram::from_buckets(&buckets);
        assert_eq!(
            issues,
            vec![
                BucketIssue::InvalidBucket { index: 1 },
                BucketIssue::InvalidBucket { index: 3 },
                BucketIssue::DuplicateBound { le: 0.1 },
            ]
        );
        assert_eq!(histogram.total(), 10.0);
        assert_eq!(histogram.quantile(1.0), BucketQuantile::BelowFirstBucket { upper: 0.1 });
    }

    #[test]
    fn q_zero_skips_empty_leading_buckets() {
        let buckets = [(0.1, 0.0), (0.2, 5.0), (INF, 5.0)];
        assert_eq!(quantile(0.0, &buckets), within(0.1, 0.1, 0.2));
        assert_eq!(quantile(-1.0, &buckets), quantile(0.0, &buckets));
        assert_eq!(quantile(7.0, &buckets), quantile(1.0, &buckets));
    }

    #[test]
    fn display_is_honest_about_precision() {
        assert_eq!(within(0.042_133_3, 0.025, 0.05).to_string(), "0.0421 (between 0.025 and 0.05)");
        assert_eq!(within(0.15, 0.1, 0.2).to_string(), "0.15 (between 0.1 and 0.2)");
        assert_eq!(within(1234.6, 1000.0, 2500.0).to_string(), "1235 (between 1000 and 2500)");
        assert_eq!(BucketQuantile::Empty.to_string(), "no observations");
    }

    #[test]
    fn serde_uses_a_kind_tag() {
        let json = serde_json::to_string(&BucketQuantile::BelowFirstBucket { upper: 0.01 }).unwrap();
        assert_eq!(json, r#"{"kind":"below_first_bucket","upper":0.01}"#);
        let back: BucketQuantile = serde_json::from_str(&json).unwrap();
        assert_eq!(back, BucketQuantile::BelowFirstBucket { upper: 0.01 });
        let issue = BucketIssue::NonMonotonic { le: INF };
        let json = serde_json::to_string(&issue).unwrap();
        assert_eq!(json, r#"{"kind":"non_monotonic","le":"+Inf"}"#);
        assert_eq!(serde_json::from_str::<BucketIssue>(&json).unwrap(), issue);
    }

    #[test]
    fn delta_subtracts_scrapes() {
        let earlier = [(0.1, 5.0), (0.2, 8.0), (INF, 10.0)];
        let later = [(0.2, 20.0), (INF, 25.0), (0.1, 7.0)];
        assert_eq!(delta(&earlier, &later), Ok(vec![(0.1, 2.0), (0.2, 12.0), (INF, 15.0)]));
        let restarted = [(0.1, 3.0), (0.2, 3.0), (INF, 4.0)];
        assert_eq!(
            delta(&earlier, &restarted),
            Err(BucketError::CounterReset { le: 0.1, earlier: 5.0, later: 3.0 })
        );
        assert_eq!(delta(&earlier, &later[..2]), Err(BucketError::BoundsDiffer));
        let moved = [(0.1, 7.0), (0.3, 20.0), (INF, 25.0)];
        assert_eq!(delta(&earlier, &moved), Err(BucketError::BoundsDiffer));
        assert!(matches!(delta(&[(f64::NAN, 1.0)], &[(f64::NAN, 1.0)]), Err(BucketError::Invalid { .. })));
        assert_eq!(delta(&[(0.1, f64::INFINITY)], &[(0.1, 1.0)]), Err(BucketError::Invalid { le: 0.1 }));
    }
}
