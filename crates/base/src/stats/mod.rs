//! Statistics for latency data: which tool to use when, and how each interpolates.
//!
//! * [`Summary::from_values`] — **exact**, for what fits in memory: a probe's few hundred
//!   requests, a benchmark run. Quantiles interpolate linearly between closest ranks exactly
//!   like numpy's default (`rank = q·(n−1)`, see [`quantile_sorted`]).
//! * [`QuantileSketch`] — **streaming, bounded memory**, for million-request logs and for
//!   combining results across files, processes or plugins ([`QuantileSketch::merge`], serde).
//!   Quantiles are within a relative error α (default 1 %) of the value at rank `⌊q·(n−1)⌋`
//!   (numpy's `method="lower"`; a sketch does not interpolate).
//! * [`histogram_quantile`] / [`CumulativeHistogram`] — for **Prometheus histograms** (e.g.
//!   vLLM's `/metrics`), where only cumulative bucket counts exist. Inside a middle bucket the
//!   value is interpolated linearly like PromQL; in the first or the `+Inf` bucket only a bound
//!   is reported ([`BucketQuantile`]), never an invented value. Subtract two scrapes with
//!   [`delta`] to get the observations of one run.
//!
//! All three produce or accept the same [`Summary`] shape where it applies, skip NaN (and ±∞)
//! while counting them, and never panic on any input.

mod buckets;
mod sketch;
mod summary;

pub use buckets::{BucketError, BucketIssue, BucketQuantile, CumulativeHistogram, delta, histogram_quantile};
pub use sketch::{
    DEFAULT_ALPHA, DEFAULT_MAX_BINS, MAX_ALPHA, MAX_MAX_BINS, MIN_ALPHA, QuantileSketch, SketchConfig,
    SketchError,
};
pub use summary::{Summary, median, quantile_sorted};
