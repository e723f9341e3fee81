//! What "under load" and "a straggler" mean, once for every GPU judgement: the nvidia-smi rule
//! `slow-gpu` (one paste), the runner's watch (a stream of NVML samples) and the Prometheus
//! fleet ranking (a window of DCGM series) all compare a GPU's SM clock with the median of its
//! busy peers' with these thresholds and these functions.

use triage_base::stats::median;

/// Utilisation above this (percent) is "under load".
pub const BUSY_UTIL_PCT: f64 = 30.0;
/// Drawing at least this share of the power limit is also "under load" (dmon without `sm`, a
/// sample without utilisation).
pub const BUSY_POWER_SHARE: f64 = 0.5;
/// Below this share of its busy peers' median SM clock, a GPU is a straggler.
pub const SLOW_RATIO: f64 = 0.75;

/// Under load: utilisation above [`BUSY_UTIL_PCT`], or a power draw at least
/// [`BUSY_POWER_SHARE`] of a positive limit (`power` and `limit` in the same unit).
pub fn busy(util_pct: Option<f64>, power: Option<f64>, limit: Option<f64>) -> bool {
    util_pct.is_some_and(|u| u > BUSY_UTIL_PCT)
        || matches!((power, limit), (Some(p), Some(l)) if l > 0.0 && p >= BUSY_POWER_SHARE * l)
}

/// The median of the other GPUs' clocks in `clocks` (`(gpu, MHz)`), and how many they are.
pub fn peers_of(clocks: &[(u32, f64)], gpu: u32) -> (Option<f64>, usize) {
    let mut peers: Vec<f64> = clocks.iter().filter(|(g, _)| *g != gpu).map(|(_, c)| *c).collect();
    let n = peers.len();
    (median(&mut peers), n)
}

/// Whether a GPU at `clock` straggles behind peers whose median is `peers`, at `ratio` (the
/// watch's configurable [`SLOW_RATIO`]).
pub fn straggles(clock: f64, peers: f64, ratio: f64) -> bool {
    peers > 0.0 && clock < ratio * peers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_and_stragglers() {
        assert!(busy(Some(31.0), None, None) && !busy(Some(30.0), None, None));
        assert!(busy(None, Some(350.0), Some(700.0)) && !busy(None, Some(349.0), Some(700.0)));
        assert!(!busy(None, Some(1.0), Some(0.0)));
        let clocks = [(0, 1800.0), (1, 1790.0), (2, 800.0), (3, 1810.0)];
        assert_eq!(peers_of(&clocks, 2), (Some(1800.0), 3));
        assert!(straggles(800.0, 1800.0, SLOW_RATIO) && !straggles(1790.0, 1800.0, SLOW_RATIO));
        assert!(!straggles(0.0, 0.0, SLOW_RATIO));
        assert_eq!(peers_of(&[(0, 1.0)], 0), (None, 0));
    }
}
