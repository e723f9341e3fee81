//! The engine's default timings, calibrated from a real decode trace on an NVIDIA H200.
//!
//! Source: a real H200 capture's `decode.runs`, copied verbatim to
//! `crates/sim-model/data/h200_decode_runs.json` (`tests/data/README.md` describes the capture):
//! Hugging Face `generate` in bf16 on a randomly initialised Llama-shaped model (22 layers, hidden
//! 2048, 32 heads, 4 KV heads, head_dim 64 — 22,528 KV bytes per token) for prompts of 64 to 16,384
//! tokens, one token time per step. The first two runs (64 and 128 tokens) are warm-up and are left
//! out; the 1,024-, 4,096- and 16,384-token runs give:
//!
//! | figure | value | how |
//! | --- | --- | --- |
//! | step base | 63.37 ms | median decode gap at 1,024 tokens, less that run's KV term |
//! | per cached token | 0.151 µs | slope of the median decode gap from 1,024 to 16,384 tokens |
//! | per prefill token | 8.19 µs | slope of the first-token time from 4,096 to 16,384 tokens |
//! | per running sequence | 0 | the batch-8 and batch-32 runs differ by less than the KV term alone |
//! | step jitter | 138 ratios | every steady decode gap over its run's median (0.87–1.67×) |
//!
//! `generate` runs eagerly from Python, so most of the 63 ms step is host and kernel-launch
//! overhead that an engine with CUDA graphs largely removes; the prefill slope and the KV term
//! are the GPU's own work. The simulated engine therefore serves this model about as fast as that
//! trace did — slower per step than a tuned vLLM, the same shape. Scale [`StepCost`] to model
//! another engine or GPU.

use serde::Serialize;

/// What one engine step costs: a fixed part, a part per prompt token computed in the step, and
/// a part per cached token the step's decodes attend to. Each step is then multiplied by a ratio
/// drawn from [`JITTER`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepCost {
    pub base_ns: u64,
    pub per_prefill_token_ps: u64,
    pub per_kv_token_ps: u64,
    pub per_seq_ns: u64,
}

impl StepCost {
    /// The H200 trace's figures (see the module docs).
    pub const H200_TRACE: StepCost = StepCost {
        base_ns: 63_373_000,
        per_prefill_token_ps: 8_193_000,
        per_kv_token_ps: 150_800,
        per_seq_ns: 0,
    };

    /// Nanoseconds of one step before jitter.
    pub fn step_ns(&self, prefill_tokens: u64, decode_seqs: u64, kv_tokens: u64) -> u64 {
        self.base_ns
            + prefill_tokens * self.per_prefill_token_ps / 1000
            + kv_tokens * self.per_kv_token_ps / 1000
            + decode_seqs * self.per_seq_ns
    }
}

impl Default for StepCost {
    fn default() -> Self {
        StepCost::H200_TRACE
    }
}

/// KV-cache bytes per token of the trace's model (2 · 22 layers · 4 KV heads · 64 · 2 bytes),
/// as measured there (`kv_cache_bytes`).
pub const KV_BYTES_PER_TOKEN: u64 = 22_528;

/// Every steady-state decode gap of the 1,024-, 4,096- and 16,384-token runs divided by its run's
/// median, sorted, in thousandths: the step-to-step variation the trace shows.
pub const JITTER: [u16; 138] = [
    874, 877, 877, 883, 890, 895, 904, 908, 915, 916, 918, 924, 925, 928, 931, 932, 933, 934, 938, 938, 941,
    944, 949, 950, 950, 951, 959, 959, 960, 960, 961, 963, 966, 967, 967, 968, 968, 969, 969, 969, 969, 971,
    972, 972, 973, 974, 975, 977, 977, 978, 979, 980, 981, 982, 982, 983, 984, 984, 985, 985, 986, 986, 989,
    991, 992, 995, 997, 998, 998, 1002, 1002, 1002, 1003, 1003, 1003, 1004, 1004, 1005, 1007, 1008, 1008,
    1009, 1009, 1010, 1012, 1014, 1014, 1022, 1027, 1031, 1032, 1034, 1035, 1036, 1037, 1038, 1041, 1043,
    1043, 1044, 1052, 1052, 1053, 1057, 1067, 1072, 1075, 1076, 1079, 1089, 1122, 1159, 1180, 1183, 1206,
    1206, 1211, 1237, 1253, 1324, 1340, 1345, 1357, 1359, 1368, 1371, 1381, 1422, 1433, 1435, 1445, 1447,
    1482, 1483, 1493, 1499, 1524, 1670,
];

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = include_str!("../data/h200_decode_runs.json");

    struct Run {
        prompt: u64,
        batch: u64,
        times: Vec<f64>,
    }

    fn runs() -> Vec<Run> {
        let v: serde_json::Value = serde_json::from_str(TRACE).unwrap();
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| Run {
                prompt: r["prompt_len"].as_u64().unwrap(),
                batch: r["batch"].as_u64().unwrap(),
                times: r["token_times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect(),
            })
            .collect()
    }

    fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    }

    /// Steady decode gaps: skip prefill → first token and the one-off second gap, and the end
    /// marker after the last token.
    fn steady(r: &Run) -> Vec<f64> {
        let gaps: Vec<f64> = r.times.windows(2).map(|w| w[1] - w[0]).collect();
        gaps[2..gaps.len() - 1].to_vec()
    }

    fn warm(prompt: u64) -> Run {
        runs().into_iter().find(|r| r.prompt == prompt && r.batch == 1).unwrap()
    }

    #[test]
    fn defaults_are_derived_from_the_trace() {
        let (r1k, r4k, r16k) = (warm(1024), warm(4096), warm(16384));
        let (m1k, m16k) = (median(&steady(&r1k)), median(&steady(&r16k)));
        let per_kv_s = (m16k - m1k) / (16384.0 - 1024.0);
        let base_s = m1k - 1024.0 * per_kv_s;
        let prefill = |r: &Run| r.times[1] - r.times[0];
        let per_prefill_s = (prefill(&r16k) - prefill(&r4k)) / (16384.0 - 4096.0);
        let c = StepCost::H200_TRACE;
        let close = |derived: f64, ours: f64| (derived / ours - 1.0).abs() < 0.001;
        assert!(close(base_s * 1e9, c.base_ns as f64), "base {base_s}");
        assert!(close(per_kv_s * 1e12, c.per_kv_token_ps as f64), "kv {per_kv_s}");
        assert!(close(per_prefill_s * 1e12, c.per_prefill_token_ps as f64), "prefill {per_prefill_s}");
    }

    #[test]
    fn jitter_is_the_traces_normalised_gaps() {
        let mut ratios: Vec<u16> = Vec::new();
        for prompt in [1024, 4096, 16384] {
            let gaps = steady(&warm(prompt));
            let m = median(&gaps);
            ratios.extend(gaps.iter().map(|g| (g / m * 1000.0).round() as u16));
        }
        ratios.sort_unstable();
        assert_eq!(ratios, JITTER);
    }

    #[test]
    fn batch_runs_leave_no_per_sequence_cost() {
        // batch 8 and 32 at 1,024 tokens, 48 new tokens: the difference in wall time is less than
        // what the extra prefill and KV terms explain, so a per-sequence term would be negative.
        let all = runs();
        let v: serde_json::Value = serde_json::from_str(TRACE).unwrap();
        let wall = |batch: u64| {
            v["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["batch"].as_u64() == Some(batch))
                .map(|r| r["end"].as_f64().unwrap() - r["start"].as_f64().unwrap())
                .unwrap()
        };
        assert!(all.iter().any(|r| r.batch == 32));
        let c = StepCost::H200_TRACE;
        let explained = (24.0 * 1024.0 * c.per_prefill_token_ps as f64
            + 47.0 * 24.0 * 1048.0 * c.per_kv_token_ps as f64)
            / 1e12;
        assert!(wall(32) - wall(8) < explained, "{} vs {explained}", wall(32) - wall(8));
    }

    #[test]
    fn kv_bytes_per_token_matches_the_measurement() {
        let v: serde_json::Value = serde_json::from_str(TRACE).unwrap();
        let r = &v["runs"][2];
        // The last generated token is never fed back, so it has no KV entry.
        let tokens = r["prompt_len"].as_u64().unwrap() + r["new_tokens"].as_u64().unwrap() - 1;
        assert_eq!(r["kv_cache_bytes"].as_u64().unwrap(), KV_BYTES_PER_TOKEN * tokens);
    }
}
