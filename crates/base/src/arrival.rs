//! When an open-loop probe starts each request: a fixed schedule, computed before the first
//! request is sent, so the starts do not depend on how the server (or the client) keeps up.
//!
//! `constant` spaces the starts exactly `1 / rate` apart (what `--rate` has always done);
//! `poisson` draws exponential gaps of mean `1 / rate` from a seeded generator (SplitMix64), so
//! the same seed gives the same schedule on every platform and every run. Both start the first
//! request at offset 0. A request that starts later than its scheduled instant (the client's
//! timer, a busy client, or `--concurrency` exhausted) keeps its scheduled instant: the probe
//! reports the lag and the latencies from the schedule (coordinated omission).

use serde::{Deserialize, Serialize};

/// How scheduled starts are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exactly `1 / rate` apart.
    #[default]
    Constant,
    /// Exponential gaps of mean `1 / rate` (a Poisson process), seeded.
    Poisson,
}

impl Arrival {
    /// The contract's name: `constant` or `poisson`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in (0, 1]: never 0, so its logarithm is finite.
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// Nanoseconds from seconds, saturating (a tiny rate gives offsets beyond any run).
fn ns(seconds: f64) -> u64 {
    let v = seconds * 1e9;
    if v >= u64::MAX as f64 { u64::MAX } else { v.max(0.0) as u64 }
}

/// The scheduled start of each of `n` requests, in nanoseconds from the run's start,
/// non-decreasing, the first at 0. `rate_per_s` must be finite and positive (the CLI checks).
pub fn schedule_ns(arrival: Arrival, rate_per_s: f64, n: usize, seed: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    match arrival {
        Arrival::Constant => out.extend((0..n).map(|i| ns(i as f64 / rate_per_s))),
        Arrival::Poisson => {
            let mut rng = SplitMix64::new(seed);
            let mut t = 0.0f64;
            for i in 0..n {
                if i > 0 {
                    t += -rng.next_open01().ln() / rate_per_s;
                }
                out.push(ns(t));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_is_evenly_spaced_from_zero() {
        assert_eq!(schedule_ns(Arrival::Constant, 4.0, 4, 9), [0, 250_000_000, 500_000_000, 750_000_000]);
        assert!(schedule_ns(Arrival::Constant, 4.0, 0, 0).is_empty());
    }

    #[test]
    fn poisson_is_seeded_ordered_and_has_the_asked_rate() {
        let a = schedule_ns(Arrival::Poisson, 100.0, 20_000, 7);
        assert_eq!(a, schedule_ns(Arrival::Poisson, 100.0, 20_000, 7), "same seed, same schedule");
        assert_ne!(a, schedule_ns(Arrival::Poisson, 100.0, 20_000, 8));
        assert_eq!(a[0], 0);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // Mean gap 10 ms: the sample mean of 19,999 exponential gaps is within 3 % (≈ 4 σ).
        let mean_ms = a[a.len() - 1] as f64 / 1e6 / (a.len() - 1) as f64;
        assert!((mean_ms - 10.0).abs() < 0.3, "{mean_ms}");
        // Exponential: the gaps' coefficient of variation is 1 (constant spacing gives 0).
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let s = crate::stats::Summary::from_values(&gaps).unwrap();
        assert!((s.std / s.mean - 1.0).abs() < 0.05, "{}", s.std / s.mean);
    }

    #[test]
    fn splitmix_matches_the_reference() {
        // The reference implementation's first outputs for seed 1234567.
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        let u = SplitMix64::new(0).next_open01();
        assert!(u > 0.0 && u <= 1.0);
    }

    #[test]
    fn tiny_rates_saturate() {
        let s = schedule_ns(Arrival::Constant, 1e-300, 3, 0);
        assert_eq!(s, [0, u64::MAX, u64::MAX]);
    }
}
