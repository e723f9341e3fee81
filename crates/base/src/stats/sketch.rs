//! Streaming quantile sketch (DDSketch-style): relative-error quantiles in bounded memory, for
//! logs with millions of requests where keeping every value is too costly.
//!
//! Values are counted in logarithmic bins. A bin's lower and upper bounds differ by a factor of
//! at most `γ = (1 + α)/(1 − α)`, and a bin answers with the point that is equally far, in
//! relative terms, from both bounds, so every answer is within `α` of any value in that bin.
//!
//! The bin index is a piecewise-quadratic approximation of `log2` built from the float's exponent
//! bits: `log2(2^e·(1+t)) ≈ e + t(4 − t)/3`. It needs no `ln` call: inserts are fast, and since
//! everything (the bin width included) is plain IEEE arithmetic, a value gets the same bin on every
//! target, so sketches built natively and in wasm plugins merge exactly. Its slope is off
//! from the true `log2` by at most a factor of `(3/4)/ln 2 ≈ 1.08`; the bin width is narrowed by
//! exactly that factor, so the bound is honest at the cost of ~8 % more bins than exact `ln`.

use serde::{Deserialize, Serialize};

use super::Summary;

/// Default relative accuracy: answers within 1 % of the true rank value.
pub const DEFAULT_ALPHA: f64 = 0.01;
/// Default bin budget per sign. At α = 1 % this spans values over a ratio of about 10^16
/// (e.g. 1 ns to 100 days) before any collapsing happens.
pub const DEFAULT_MAX_BINS: usize = 2048;
/// Smallest accepted relative accuracy; below it bin indices would no longer fit an `i32`.
pub const MIN_ALPHA: f64 = 1e-6;
/// Largest accepted relative accuracy.
pub const MAX_ALPHA: f64 = 0.5;
/// Largest accepted bin budget (8 MiB of counters per sign): a decoded sketch must not be able
/// to make the next insert allocate gigabytes.
pub const MAX_MAX_BINS: usize = 1 << 20;

/// Maximum |bin index| accepted from serialized input: keeps index arithmetic far from `i32`
/// overflow. Real indices stay below 1075 · 0.75 / ln γ(MIN_ALPHA) ≈ 4.1e8.
const KEY_LIMIT: i64 = 1 << 30;

/// Tuning of a [`QuantileSketch`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SketchConfig {
    /// Relative accuracy α, within [`MIN_ALPHA`]..=[`MAX_ALPHA`].
    pub alpha: f64,
    /// Bins kept per sign (positive values, negative values) before the lowest ones are
    /// collapsed together; within `1..=`[`MAX_MAX_BINS`].
    pub max_bins: usize,
}

impl Default for SketchConfig {
    fn default() -> Self {
        SketchConfig { alpha: DEFAULT_ALPHA, max_bins: DEFAULT_MAX_BINS }
    }
}

/// Why a sketch could not be built, merged or decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SketchError {
    /// α outside [`MIN_ALPHA`]..=[`MAX_ALPHA`] or not a number.
    #[error("relative accuracy must be within [{MIN_ALPHA}, {MAX_ALPHA}], got {0}")]
    InvalidAlpha(f64),
    /// `max_bins` outside `1..=MAX_MAX_BINS`.
    #[error("max_bins must be within 1..={MAX_MAX_BINS}, got {0}")]
    InvalidMaxBins(usize),
    /// The two sketches use different bins, so their counts cannot be added.
    #[error("cannot merge sketches with different relative accuracy ({ours} and {theirs})")]
    AlphaMismatch {
        /// α of the sketch merged into.
        ours: f64,
        /// α of the sketch merged from.
        theirs: f64,
    },
    /// A serialized sketch breaks an invariant (it was corrupted or hand-made).
    #[error("invalid sketch: {0}")]
    Invalid(&'static str),
}

/// Streaming quantile sketch with relative accuracy α and memory bounded by
/// `2 × max_bins` counters, whatever the number of values.
///
/// # Accuracy
///
/// Let `n` be the count and `x_r` the value of 0-based rank `r = ⌊q·(n−1)⌋` among the inserted
/// values (numpy's `method="lower"`; no interpolation, as a sketch has no neighbours to
/// interpolate between). Then `quantile(q)` returns `q̂` with `|q̂ − x_r| ≤ α·|x_r|`, provided
///
/// * `x_r` is not in a collapsed bin: when more than `max_bins` bins are needed for one sign,
///   the lowest bins (smallest positive values; most negative values) are merged into one, and
///   the bound then holds only for ranks above that collapsed range;
/// * `x_r` is zero or at least `f64::MIN_POSITIVE` in magnitude: subnormals (< 2.2e-308) are
///   counted as zero.
///
/// Answers are also clamped to the exact `[min, max]`, which only moves them closer to the truth.
///
/// # Values
///
/// Zero is counted exactly; negative values live in a mirrored store of their own. NaN and ±∞
/// are skipped and counted in [`skipped`](Self::skipped) — they have no bin, and a failed
/// measurement should be visible rather than silently dropped.
///
/// `count`, `min` and `max` are exact. `sum`, `mean` and the standard deviation come from
/// running sums of deviations from the first value (shifted sums, which avoid the cancellation
/// of a plain sum of squares when values are large and close together); they overflow to
/// infinity only for magnitudes above ~1e154.
///
/// Serialized sketches are validated when decoded, so input from a plugin cannot break one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SketchRepr", into = "SketchRepr")]
pub struct QuantileSketch {
    mapping: Mapping,
    max_bins: usize,
    positive: Store,
    /// Keyed by the negated index of `|x|`, so ascending keys are ascending values and
    /// "collapse the lowest keys" means "collapse the lowest values" for both signs.
    negative: Store,
    zero_count: u64,
    count: u64,
    skipped: u64,
    min: f64,
    max: f64,
    /// First value inserted; the running sums are of deviations from it.
    shift: f64,
    sum_dev: f64,
    sum_sq_dev: f64,
}

impl Default for QuantileSketch {
    fn default() -> Self {
        Self::from_parts(Mapping::new(DEFAULT_ALPHA), DEFAULT_MAX_BINS)
    }
}

impl QuantileSketch {
    /// An empty sketch with α = 1 % and 2048 bins per sign.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty sketch with the given accuracy and bin budget.
    pub fn with_config(config: SketchConfig) -> Result<Self, SketchError> {
        let SketchConfig { alpha, max_bins } = config;
        if !(MIN_ALPHA..=MAX_ALPHA).contains(&alpha) {
            return Err(SketchError::InvalidAlpha(alpha));
        }
        if !(1..=MAX_MAX_BINS).contains(&max_bins) {
            return Err(SketchError::InvalidMaxBins(max_bins));
        }
        Ok(Self::from_parts(Mapping::new(alpha), max_bins))
    }

    fn from_parts(mapping: Mapping, max_bins: usize) -> Self {
        QuantileSketch {
            mapping,
            max_bins,
            positive: Store::default(),
            negative: Store::default(),
            zero_count: 0,
            count: 0,
            skipped: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            shift: 0.0,
            sum_dev: 0.0,
            sum_sq_dev: 0.0,
        }
    }

    /// The accuracy and bin budget of this sketch.
    pub fn config(&self) -> SketchConfig {
        SketchConfig { alpha: self.mapping.alpha, max_bins: self.max_bins }
    }

    /// Adds one value. NaN and ±∞ are skipped and counted.
    #[inline]
    pub fn insert(&mut self, x: f64) {
        self.insert_n(x, 1);
    }

    /// Adds `n` copies of `x` in one step (for pre-aggregated data). NaN and ±∞ add `n` to
    /// [`skipped`](Self::skipped).
    #[inline]
    pub fn insert_n(&mut self, x: f64, n: u64) {
        if n == 0 {
            return;
        }
        if !x.is_finite() {
            self.skipped = self.skipped.saturating_add(n);
            return;
        }
        if x >= f64::MIN_POSITIVE {
            self.positive.add(self.mapping.key(x), n, self.max_bins);
        } else if x <= -f64::MIN_POSITIVE {
            self.negative.add(-self.mapping.key(-x), n, self.max_bins);
        } else {
            self.zero_count = self.zero_count.saturating_add(n);
        }
        if self.count == 0 {
            self.shift = x;
        }
        self.count = self.count.saturating_add(n);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let (d, w) = (x - self.shift, n as f64);
        self.sum_dev += w * d;
        self.sum_sq_dev += w * d * d;
    }

    /// Adds every value of `other` to `self`, exactly as if they had been inserted here.
    ///
    /// Both must have the same α (bit for bit) or their bins mean different things. The result
    /// keeps `self`'s bin budget. Quantile bins and `count`/`min`/`max` equal those of a single
    /// sketch fed all values; the moment sums agree up to floating-point rounding.
    pub fn merge(&mut self, other: &QuantileSketch) -> Result<(), SketchError> {
        if self.mapping.alpha.to_bits() != other.mapping.alpha.to_bits() {
            return Err(SketchError::AlphaMismatch { ours: self.mapping.alpha, theirs: other.mapping.alpha });
        }
        self.skipped = self.skipped.saturating_add(other.skipped);
        if other.count == 0 {
            return Ok(());
        }
        self.positive.merge(&other.positive, self.max_bins);
        self.negative.merge(&other.negative, self.max_bins);
        self.zero_count = self.zero_count.saturating_add(other.zero_count);
        if self.count == 0 {
            (self.shift, self.sum_dev, self.sum_sq_dev) = (other.shift, other.sum_dev, other.sum_sq_dev);
        } else {
            // Re-centre other's sums on our shift: Σ(x−a) = Σ(x−b) + n·(b−a), and
            // Σ(x−a)² = Σ(x−b)² + 2(b−a)·Σ(x−b) + n·(b−a)².
            let (d, w) = (other.shift - self.shift, other.count as f64);
            self.sum_sq_dev += other.sum_sq_dev + 2.0 * d * other.sum_dev + w * d * d;
            self.sum_dev += other.sum_dev + w * d;
        }
        self.count = self.count.saturating_add(other.count);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        Ok(())
    }

    /// Number of finite values inserted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Number of non-finite inputs (NaN, ±∞) skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Whether no finite value has been inserted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Exact smallest value, `None` when empty.
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// Exact largest value, `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// Sum of the values (0 when empty).
    pub fn sum(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.shift * self.count as f64 + self.sum_dev
    }

    /// Arithmetic mean, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.shift + self.sum_dev / self.count as f64)
    }

    /// Sample standard deviation (divides by `n − 1`; 0 for one value), `None` when empty.
    pub fn std(&self) -> Option<f64> {
        let n = self.count as f64;
        match self.count {
            0 => None,
            1 => Some(0.0),
            // Clamped at 0: rounding can make the difference of sums slightly negative.
            _ => Some(((self.sum_sq_dev - self.sum_dev * self.sum_dev / n) / (n - 1.0)).max(0.0).sqrt()),
        }
    }

    /// The value at 0-based rank `⌊q·(n−1)⌋`, within α relative error (see the type docs).
    ///
    /// `q` is clamped to `[0, 1]`. `None` when the sketch is empty or `q` is NaN.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 || q.is_nan() {
            return None;
        }
        let last = self.count - 1;
        // `as u64` saturates, and `min` keeps rounding of huge counts inside the range.
        let rank = ((q.clamp(0.0, 1.0) * last as f64).floor() as u64).min(last);
        let value = self.value_at_rank(rank).unwrap_or(self.max);
        Some(value.clamp(self.min, self.max))
    }

    /// Walks the bins in ascending value order to the one holding 0-based `rank`.
    fn value_at_rank(&self, rank: u64) -> Option<f64> {
        let mut seen = 0u64;
        for (key, c) in self.negative.bins() {
            seen = seen.saturating_add(c);
            if seen > rank {
                return Some(-self.mapping.value(-key));
            }
        }
        seen = seen.saturating_add(self.zero_count);
        if seen > rank {
            return Some(0.0);
        }
        for (key, c) in self.positive.bins() {
            seen = seen.saturating_add(c);
            if seen > rank {
                return Some(self.mapping.value(key));
            }
        }
        // Only reachable when a count saturated at u64::MAX.
        None
    }

    /// Count, moments, extremes and p50…p99.9 in the same shape as the exact path; quantiles
    /// carry the sketch's relative error. `None` when empty.
    pub fn summary(&self) -> Option<Summary> {
        Some(Summary {
            count: self.count,
            skipped: self.skipped,
            mean: self.mean()?,
            std: self.std()?,
            min: self.min()?,
            max: self.max()?,
            p50: self.quantile(0.5)?,
            p90: self.quantile(0.9)?,
            p95: self.quantile(0.95)?,
            p99: self.quantile(0.99)?,
            p999: self.quantile(0.999)?,
        })
    }

    /// Number of bin counters held (including empty ones inside the span), at most
    /// `2 × max_bins`: the measure of this sketch's memory.
    pub fn bin_count(&self) -> usize {
        self.positive.counts.len() + self.negative.counts.len()
    }
}

/// Maps a positive normal float to its bin index and back.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mapping {
    alpha: f64,
    /// Bins per unit of the approximate `log2`.
    multiplier: f64,
    /// `multiplier / 3`, folded in so the hot path has no division.
    multiplier_third: f64,
}

impl Mapping {
    fn new(alpha: f64) -> Self {
        let ln_gamma = ln_gamma(alpha);
        // Along the approximation y = e + t(4−t)/3, d(ln x)/dy = 3 / ((1+t)(4−2t)) ≤ 3/4 (at
        // t = 0 and t = 1), so bins of width ln γ / (3/4) in y span at most a factor γ in x.
        // The extra 1e-7 narrows them a hair further so float rounding in the index cannot
        // push an answer past α.
        let multiplier = 0.75 / ln_gamma * (1.0 + 1e-7);
        Mapping { alpha, multiplier, multiplier_third: multiplier / 3.0 }
    }

    /// Bin index of `x`, which must be finite and ≥ `f64::MIN_POSITIVE`.
    #[inline]
    fn key(&self, x: f64) -> i32 {
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
        // The mantissa as 1 + t with t in [0, 1).
        let t = f64::from_bits((bits & MANTISSA_MASK) | ONE_BITS) - 1.0;
        let scaled = f64::from(exponent) * self.multiplier + t * (4.0 - t) * self.multiplier_third;
        floor_i32(scaled)
    }

    /// The value reported for bin `key`: `2·lo·hi/(lo+hi)`, whose relative distance to both
    /// bounds is `(hi−lo)/(hi+lo) ≤ (γ−1)/(γ+1) = α`.
    fn value(&self, key: i32) -> f64 {
        let (e_lo, m_lo) = self.bound(key);
        let (e_hi, m_hi) = self.bound(key.saturating_add(1));
        // Work with the ratio hi/lo so the top bin's upper bound (≥ 2^1024) cannot overflow.
        let ratio = ldexp(m_hi / m_lo, e_hi - e_lo);
        // The top bin's answer can exceed f64::MAX; MAX itself is within α of anything there.
        (ldexp(m_lo, e_lo) * (2.0 * ratio / (1.0 + ratio))).min(f64::MAX)
    }

    /// Lower bound of bin `key` as `(e, m)` meaning `m·2^e`, `m ∈ [1, 2)`.
    fn bound(&self, key: i32) -> (i32, f64) {
        let y = f64::from(key) / self.multiplier;
        let e = y.floor();
        let s = y - e;
        // Inverse of s = t(4−t)/3 on [0, 1].
        let t = 2.0 - (4.0 - 3.0 * s).sqrt();
        (e as i32, 1.0 + t)
    }
}

/// `ln γ = ln((1+α)/(1−α)) = 2·atanh(α) = 2·Σ α^(2k+1)/(2k+1)`, summed by hand rather than
/// with libm's `ln`, whose last bit may differ between targets and would then shift bin edges.
/// For α ≤ 0.5 the terms shrink at least 4× each, so 40 terms reach full precision.
fn ln_gamma(alpha: f64) -> f64 {
    let (square, mut power, mut sum) = (alpha * alpha, alpha, 0.0);
    for k in 0..40u32 {
        sum += power / f64::from(2 * k + 1);
        power *= square;
    }
    2.0 * sum
}

const MANTISSA_MASK: u64 = (1 << 52) - 1;
const ONE_BITS: u64 = 0x3ff0_0000_0000_0000;

/// `⌊v⌋` as `i32` without a libm call (`f64::floor` is one on baseline x86-64).
#[inline]
fn floor_i32(v: f64) -> i32 {
    let t = v as i32;
    t - i32::from(f64::from(t) > v)
}

/// `m · 2^e`, saturating to ∞ or 0 outside the float range.
fn ldexp(m: f64, e: i32) -> f64 {
    let pow2 = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
    match e {
        ..-1022 => m * pow2(-1022) * pow2((e + 1022).max(-1022)),
        -1022..=1023 => m * pow2(e),
        _ => m * pow2(1023) * pow2((e - 1023).min(1023)),
    }
}

/// Dense counts for a contiguous range of bin indices `offset..offset + counts.len()`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Store {
    offset: i32,
    counts: Vec<u64>,
}

impl Store {
    #[inline]
    fn add(&mut self, key: i32, n: u64, max_bins: usize) {
        // Keys are within ±KEY_LIMIT, so the difference cannot wrap; a negative one becomes a
        // huge index and takes the slow path.
        let index = key.wrapping_sub(self.offset) as u32 as usize;
        match self.counts.get_mut(index) {
            Some(c) => *c = c.saturating_add(n),
            None => self.add_outside(key, n, max_bins),
        }
    }

    /// Grows the range to include `key`, collapsing the lowest bins if it would exceed
    /// `max_bins`; a key below a collapsed range lands in its lowest bin.
    #[cold]
    #[inline(never)]
    fn add_outside(&mut self, key: i32, n: u64, max_bins: usize) {
        if self.counts.is_empty() {
            self.offset = key;
            self.counts.push(n);
            return;
        }
        let old_lo = i64::from(self.offset);
        let old_hi = old_lo + self.counts.len() as i64 - 1;
        let key = i64::from(key);
        let hi = old_hi.max(key);
        let lo = old_lo.min(key).max(hi - max_bins as i64 + 1);
        if lo < old_lo {
            let grow = (old_lo - lo) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
        } else if lo > old_lo {
            // Fold every bin below `lo` into the bin at `lo`. After the drain, bin 0 is `lo`
            // if any old bin reached that far; otherwise the folded count becomes bin `lo`.
            let below = ((lo - old_lo) as usize).min(self.counts.len());
            let collapsed = self.counts.drain(..below).fold(0u64, u64::saturating_add);
            match self.counts.first_mut() {
                Some(first) => *first = first.saturating_add(collapsed),
                None => self.counts.push(collapsed),
            }
        }
        self.offset = lo as i32;
        self.counts.resize((hi - lo + 1) as usize, 0);
        let index = (key.max(lo) - lo) as usize;
        if let Some(c) = self.counts.get_mut(index) {
            *c = c.saturating_add(n);
        }
    }

    fn merge(&mut self, other: &Store, max_bins: usize) {
        for (key, c) in other.bins().filter(|&(_, c)| c > 0) {
            self.add(key, c, max_bins);
        }
    }

    /// `(key, count)` in ascending key order.
    fn bins(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        (self.offset..).zip(self.counts.iter().copied())
    }

    fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }
}

/// The serialized form: configuration, bins, extremes and sums. `count` is not stored but
/// recomputed from the bins, so the two cannot disagree.
#[derive(Serialize, Deserialize)]
struct SketchRepr {
    alpha: f64,
    max_bins: usize,
    #[serde(default)]
    skipped: u64,
    zero_count: u64,
    positive: Store,
    negative: Store,
    min: Option<f64>,
    max: Option<f64>,
    shift: f64,
    /// `None` when the sum overflowed (JSON has no ∞); decoded as NaN.
    sum_dev: Option<f64>,
    sum_sq_dev: Option<f64>,
}

impl From<QuantileSketch> for SketchRepr {
    fn from(s: QuantileSketch) -> Self {
        let finite = |v: f64| v.is_finite().then_some(v);
        SketchRepr {
            alpha: s.mapping.alpha,
            max_bins: s.max_bins,
            skipped: s.skipped,
            zero_count: s.zero_count,
            min: s.min(),
            max: s.max(),
            positive: s.positive,
            negative: s.negative,
            shift: s.shift,
            sum_dev: finite(s.sum_dev),
            sum_sq_dev: finite(s.sum_sq_dev),
        }
    }
}

impl TryFrom<SketchRepr> for QuantileSketch {
    type Error = SketchError;

    fn try_from(r: SketchRepr) -> Result<Self, SketchError> {
        let mut s = QuantileSketch::with_config(SketchConfig { alpha: r.alpha, max_bins: r.max_bins })?;
        for store in [&r.positive, &r.negative] {
            let last = i64::from(store.offset) + store.counts.len() as i64;
            if store.counts.len() > r.max_bins {
                return Err(SketchError::Invalid("more bins than max_bins"));
            }
            if i64::from(store.offset) < -KEY_LIMIT || last > KEY_LIMIT {
                return Err(SketchError::Invalid("bin index out of range"));
            }
        }
        let count = r.zero_count.saturating_add(r.positive.total()).saturating_add(r.negative.total());
        match (count, r.min, r.max) {
            (0, None, None) => {}
            (1.., Some(min), Some(max)) if min.is_finite() && max.is_finite() && min <= max => {
                (s.min, s.max) = (min, max);
            }
            _ => return Err(SketchError::Invalid("min/max do not match the counts")),
        }
        if !r.shift.is_finite() {
            return Err(SketchError::Invalid("shift is not finite"));
        }
        s.count = count;
        s.skipped = r.skipped;
        s.zero_count = r.zero_count;
        s.positive = r.positive;
        s.negative = r.negative;
        s.shift = r.shift;
        s.sum_dev = r.sum_dev.unwrap_or(f64::NAN);
        s.sum_sq_dev = r.sum_sq_dev.unwrap_or(f64::NAN);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn exact_rank_value(values: &[f64], q: f64) -> f64 {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_unstable_by(f64::total_cmp);
        let rank = (q * (sorted.len() - 1) as f64).floor() as usize;
        sorted[rank]
    }

    fn within(estimate: f64, truth: f64, alpha: f64) -> bool {
        (estimate - truth).abs() <= alpha * truth.abs()
    }

    fn sketch_of(values: &[f64]) -> QuantileSketch {
        let mut s = QuantileSketch::new();
        values.iter().for_each(|&v| s.insert(v));
        s
    }

    #[test]
    fn empty_sketch_answers_none() {
        let s = QuantileSketch::new();
        assert_eq!((s.count(), s.quantile(0.5), s.min(), s.max(), s.mean()), (0, None, None, None, None));
        assert_eq!((s.std(), s.summary(), s.sum()), (None, None, 0.0));
    }

    #[test]
    fn mapping_is_monotone_and_within_alpha_across_the_float_range() {
        for alpha in [MIN_ALPHA, 0.001, DEFAULT_ALPHA, 0.05, MAX_ALPHA] {
            let m = Mapping::new(alpha);
            let mut previous = (f64::MIN_POSITIVE, m.key(f64::MIN_POSITIVE));
            for e in (-1022..1024).step_by(7).chain([-1022, -1, 0, 1, 1023]) {
                for i in 0..=512u32 {
                    let x = ldexp(1.0 + f64::from(i) / 512.0, e).min(f64::MAX);
                    for x in [x, f64::from_bits(x.to_bits() - 1), f64::from_bits(x.to_bits() + 1)] {
                        if !x.is_finite() || x < f64::MIN_POSITIVE {
                            continue;
                        }
                        let v = m.value(m.key(x));
                        assert!(within(v, x, alpha), "alpha {alpha}: x {x:e} → {v:e}");
                    }
                }
            }
            // Ascending sweep: the key never goes down.
            let mut x = f64::MIN_POSITIVE;
            while x < f64::MAX / 1.001 {
                let k = m.key(x);
                assert!(k >= previous.1, "key({x:e}) = {k} < key({:e}) = {}", previous.0, previous.1);
                previous = (x, k);
                x *= 1.001;
            }
        }
    }

    #[test]
    fn ln_gamma_matches_libm() {
        for alpha in [MIN_ALPHA, 0.001, DEFAULT_ALPHA, 0.1, MAX_ALPHA] {
            let libm = alpha.ln_1p() - (-alpha).ln_1p();
            assert!((ln_gamma(alpha) / libm - 1.0).abs() < 1e-12, "{alpha}");
        }
    }

    #[test]
    fn zero_negative_and_non_finite() {
        let s = sketch_of(&[-5.0, 0.0, -0.0, 3.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!((s.count(), s.skipped()), (4, 3));
        assert_eq!((s.min(), s.max()), (Some(-5.0), Some(3.0)));
        assert!(within(s.quantile(0.0).unwrap(), -5.0, DEFAULT_ALPHA));
        assert_eq!(s.quantile(0.34), Some(0.0));
        assert_eq!(s.quantile(0.67), Some(0.0));
        assert!(within(s.quantile(1.0).unwrap(), 3.0, DEFAULT_ALPHA));
        assert_eq!(s.quantile(f64::NAN), None);
        assert_eq!(s.mean(), Some(-0.5));
    }

    #[test]
    fn insert_n_equals_repeated_insert() {
        let mut a = QuantileSketch::new();
        a.insert_n(2.5, 1000);
        a.insert_n(7.0, 0);
        let b = sketch_of(&[2.5; 1000]);
        assert_eq!((a.count(), a.positive.clone(), a.sum()), (b.count(), b.positive.clone(), b.sum()));
        assert!(within(a.quantile(0.5).unwrap(), 2.5, DEFAULT_ALPHA));
        assert_eq!(a.std(), Some(0.0));
    }

    #[test]
    fn moments_are_exact_for_simple_input() {
        let s = sketch_of(&(1..=10).map(f64::from).collect::<Vec<_>>());
        assert_eq!((s.sum(), s.mean()), (55.0, Some(5.5)));
        let std = s.std().unwrap();
        assert!((std - (82.5f64 / 9.0).sqrt()).abs() < 1e-12, "{std}");
        // Large values close together: the shifted sums keep the spread.
        let s = sketch_of(&[1e12 + 1.0, 1e12 + 2.0, 1e12 + 3.0]);
        assert_eq!(s.std(), Some(1.0));
    }

    #[test]
    fn merge_requires_same_alpha() {
        let mut a = QuantileSketch::new();
        let b = QuantileSketch::with_config(SketchConfig { alpha: 0.02, max_bins: 100 }).unwrap();
        assert_eq!(a.merge(&b), Err(SketchError::AlphaMismatch { ours: 0.01, theirs: 0.02 }));
    }

    #[test]
    fn invalid_configs_are_rejected() {
        for alpha in [0.0, -0.1, 1.0, f64::NAN, 1e-9] {
            let e = QuantileSketch::with_config(SketchConfig { alpha, max_bins: 10 });
            assert!(matches!(e, Err(SketchError::InvalidAlpha(_))), "{alpha}");
        }
        let e = QuantileSketch::with_config(SketchConfig { alpha: 0.01, max_bins: 0 });
        assert_eq!(e, Err(SketchError::InvalidMaxBins(0)));
    }

    #[test]
    fn bounded_memory_after_ten_million_wide_range_values() {
        let mut s = QuantileSketch::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            // Magnitudes from 1e-300 to 1e300, both signs.
            let x = (1380.0 * u - 690.0).exp();
            s.insert(if state & 1 == 0 { x } else { -x });
        }
        assert_eq!(s.count(), 10_000_000);
        assert!(s.bin_count() <= 2 * DEFAULT_MAX_BINS, "{}", s.bin_count());
    }

    #[test]
    fn collapsing_keeps_the_upper_quantiles_accurate() {
        let config = SketchConfig { alpha: 0.01, max_bins: 64 };
        let mut s = QuantileSketch::with_config(config).unwrap();
        // 1..=100 000 spans ~620 bins at 1 %; only the top 64 (1.7 octaves: values above
        // ~31 000) survive.
        let values: Vec<f64> = (1..=100_000).map(f64::from).collect();
        values.iter().for_each(|&v| s.insert(v));
        assert_eq!(s.bin_count(), 64);
        for q in [0.4, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let (estimate, truth) = (s.quantile(q).unwrap(), exact_rank_value(&values, q));
            assert!(within(estimate, truth, 0.01), "q {q}: {estimate} vs {truth}");
        }
        // In the collapsed range the answer is wrong, as documented: p10 (10 000) is reported
        // as the lowest surviving bin.
        let p10 = s.quantile(0.1).unwrap();
        assert!(p10 > 30_000.0, "{p10}");
    }

    #[test]
    fn serde_round_trip_and_validation() {
        let mut s = sketch_of(&[-1.5, 0.0, 2.0, 3.0, 1e9, f64::NAN]);
        let json = serde_json::to_string(&s).unwrap();
        let back: QuantileSketch = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        s.insert(1e200);
        s.insert(1e200); // The sums of squares overflow, which JSON cannot hold.
        let back: QuantileSketch = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!((back.count(), back.quantile(1.0)), (s.count(), s.quantile(1.0)));

        let empty = serde_json::to_value(QuantileSketch::new()).unwrap();
        let broken = |field: &str, value: serde_json::Value| {
            let mut v = empty.clone();
            v[field] = value;
            serde_json::from_value::<QuantileSketch>(v).is_err()
        };
        assert!(broken("alpha", 0.0.into()));
        assert!(broken("max_bins", 0.into()));
        assert!(broken("positive", serde_json::json!({ "offset": 0, "counts": vec![1; 3000] })));
        assert!(broken("positive", serde_json::json!({ "offset": i32::MAX, "counts": [1] })));
        assert!(broken("positive", serde_json::json!({ "offset": 0, "counts": [1] })));
        assert!(broken("min", 1.0.into()));
    }

    /// Values from one of several shapes: uniform, log-uniform over 12 decades (lognormal-ish),
    /// Pareto-like heavy tails, and signed values around zero.
    fn distribution() -> impl Strategy<Value = Vec<f64>> {
        let unit = prop::collection::vec(0.0f64..1.0, 1..3000);
        (0..4u8, unit).prop_map(|(shape, us)| {
            us.into_iter()
                .map(|u| match shape {
                    0 => 1000.0 * u,
                    1 => (27.6 * u - 13.8).exp(),
                    2 => 0.01 / (1.0 - u).powf(1.5),
                    _ => 200.0 * u - 100.0,
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn quantiles_are_within_alpha_of_the_exact_rank_value(values in distribution()) {
            let s = sketch_of(&values);
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                let (estimate, truth) = (s.quantile(q).unwrap(), exact_rank_value(&values, q));
                prop_assert!(within(estimate, truth, DEFAULT_ALPHA), "q {}: {} vs {}", q, estimate, truth);
            }
        }

        #[test]
        fn merge_equals_inserting_everything_into_one(values in distribution(), split in 0.0f64..1.0) {
            let cut = (split * values.len() as f64) as usize;
            let (mut a, b) = (sketch_of(&values[..cut]), sketch_of(&values[cut..]));
            a.merge(&b).unwrap();
            let whole = sketch_of(&values);
            prop_assert_eq!(&a.positive, &whole.positive);
            prop_assert_eq!(&a.negative, &whole.negative);
            prop_assert_eq!((a.count(), a.min(), a.max()), (whole.count(), whole.min(), whole.max()));
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(a.quantile(q), whole.quantile(q));
            }
            let (m1, m2) = (a.mean().unwrap(), whole.mean().unwrap());
            let scale = whole.max().unwrap().abs().max(whole.min().unwrap().abs());
            prop_assert!((m1 - m2).abs() <= 1e-9 * scale, "{} vs {}", m1, m2);
            let (s1, s2) = (a.std().unwrap(), whole.std().unwrap());
            prop_assert!((s1 - s2).abs() <= 1e-6 * scale, "{} vs {}", s1, s2);
        }

        #[test]
        fn small_budgets_never_break_merge_or_quantile(values in distribution(), bins in 1usize..8) {
            let config = SketchConfig { alpha: 0.05, max_bins: bins };
            let mut a = QuantileSketch::with_config(config).unwrap();
            let mut b = QuantileSketch::with_config(config).unwrap();
            for (i, &v) in values.iter().enumerate() {
                if i % 2 == 0 { a.insert(v) } else { b.insert(v) }
            }
            a.merge(&b).unwrap();
            prop_assert!(a.bin_count() <= 2 * bins);
            prop_assert_eq!(a.count(), values.len() as u64);
            let top = exact_rank_value(&values, 1.0);
            prop_assert!(within(a.quantile(1.0).unwrap(), top, 0.05));
        }
    }
}
