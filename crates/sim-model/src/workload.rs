//! Workloads: who sends what, when, and how the client behaves when it waits too long or fails.
//!
//! A workload is a set of independent streams (chat traffic, a nightly batch of long documents,
//! a fleet of closed-loop clients), each with its own seeded generator, so adding a stream never
//! changes the draws of another.

use crate::rng::Rng;
use serde::Serialize;

/// A token-length distribution.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LenDist {
    Fixed {
        tokens: u32,
    },
    Uniform {
        lo: u32,
        hi: u32,
    },
    /// Log-normal (median, log-space sigma), clamped to [min, max]: real prompt and output
    /// lengths have this long right tail.
    LogNormal {
        median: f64,
        sigma: f64,
        min: u32,
        max: u32,
    },
}

impl LenDist {
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        match *self {
            LenDist::Fixed { tokens } => tokens,
            LenDist::Uniform { lo, hi } => lo + rng.below(u64::from(hi.saturating_sub(lo)) + 1) as u32,
            LenDist::LogNormal { median, sigma, min, max } => {
                let x = rng.lognormal(median, sigma).round();
                (x.clamp(f64::from(min), f64::from(max))) as u32
            }
        }
    }
}

/// When a stream's requests arrive.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Arrivals {
    /// Open loop, exponential gaps.
    Poisson { rate_per_s: f64 },
    /// `size` requests `spacing_s` apart, every `every_s` seconds from the stream's start.
    Bursts { every_s: f64, size: u32, spacing_s: f64 },
    /// Closed loop: `clients` clients, each sending its next request `think_s` after the
    /// previous one ended (whatever the outcome).
    Closed { clients: u32, think_s: f64 },
}

/// How the client side of a stream behaves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientBehaviour {
    /// Gives up (and disconnects) this long after sending; `None` waits forever.
    pub timeout_s: Option<f64>,
    /// Attempts after the first when one fails (HTTP 429/5xx or a timeout).
    pub max_retries: u32,
    /// Backoff before retry `k` (1-based): `backoff_s · 2^(k−1)`.
    pub backoff_s: f64,
}

impl Default for ClientBehaviour {
    fn default() -> Self {
        ClientBehaviour { timeout_s: Some(600.0), max_retries: 0, backoff_s: 1.0 }
    }
}

/// One source of requests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stream {
    pub name: &'static str,
    pub arrivals: Arrivals,
    pub prompt: LenDist,
    /// The length the answer would have if nothing cut it (an EOS after this many tokens).
    pub output: LenDist,
    /// `max_tokens` of each request: answers longer than this end with `length`.
    pub max_tokens: u32,
    pub client: ClientBehaviour,
    /// Active from this simulated second …
    pub start_s: f64,
    /// … until this one (no new first attempts after it; retries still go out).
    pub stop_s: Option<f64>,
    /// At most this many logical requests from this stream.
    pub limit: Option<u64>,
}

impl Stream {
    /// Chat-like traffic at `rate_per_s`: prompts around `prompt_median` tokens and answers
    /// around `output_median`, both log-normal with realistic tails.
    pub fn chat(rate_per_s: f64, prompt_median: f64, output_median: f64) -> Stream {
        Stream {
            name: "chat",
            arrivals: Arrivals::Poisson { rate_per_s },
            prompt: LenDist::LogNormal { median: prompt_median, sigma: 0.7, min: 8, max: 8000 },
            output: LenDist::LogNormal { median: output_median, sigma: 0.7, min: 4, max: 2048 },
            max_tokens: 2048,
            client: ClientBehaviour::default(),
            start_s: 0.0,
            stop_s: None,
            limit: None,
        }
    }
}

/// All streams of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Workload {
    pub streams: Vec<Stream>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_stay_in_bounds_and_have_a_tail() {
        let mut r = Rng::new(3);
        let d = LenDist::LogNormal { median: 300.0, sigma: 0.8, min: 8, max: 8000 };
        let mut v: Vec<u32> = (0..10_000).map(|_| d.sample(&mut r)).collect();
        v.sort_unstable();
        assert!(v[0] >= 8 && v[v.len() - 1] <= 8000);
        let (p50, p99) = (v[5000], v[9900]);
        assert!((280..320).contains(&p50), "{p50}");
        assert!(p99 > 4 * p50, "p99 {p99} p50 {p50}");
        let u = LenDist::Uniform { lo: 5, hi: 7 };
        let w: Vec<u32> = (0..100).map(|_| u.sample(&mut r)).collect();
        assert!(w.iter().all(|x| (5..=7).contains(x)) && w.contains(&5) && w.contains(&7));
        assert_eq!(LenDist::Fixed { tokens: 9 }.sample(&mut r), 9);
    }
}
