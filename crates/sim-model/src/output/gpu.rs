//! GPU telemetry of the simulated replica: `nvidia-smi --query-gpu … --format=csv -l 1` and an
//! NVML series in the format of `tests/data/nvml/h200_series.jsonl`, one sample a second.
//!
//! The figures follow the real H200 captures: idle at 1980 MHz with only the `Idle` reason
//! (0x1), about 124 W and 39 °C; busy decode is memory-bound, so the clock stays at 1980 MHz
//! well under the 700 W limit. Utilisation is the share of the second the engine spent in steps
//! (every GPU of a tensor-parallel group is busy for the whole step: the fast ones wait in
//! NCCL). Memory is what vLLM reserves at start (`gpu_memory_utilization` of the total),
//! whatever the cache holds — so "memory full, utilisation 0" is what a leak *and* an idle
//! server look like, and only the engine's own figures tell them apart.

use super::clock::{smi_stamp, unix_s};
use std::fmt::Write;

/// One GPU of the group throttling from some moment on.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SlowGpu {
    pub index: u32,
    pub from_ns: u64,
    pub clock_mhz: u32,
    /// NVML clock-event reason bits while throttled (0x8 HW slowdown, 0x40 HW thermal, …).
    pub reasons: u64,
    pub temp_c: u32,
}

/// The GPUs serving the replica.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GpuSetup {
    pub count: u32,
    pub slow: Option<SlowGpu>,
    pub mem_total_mib: u64,
    pub mem_used_mib: u64,
}

pub const H200_MEM_TOTAL_MIB: u64 = 143_771;
pub const H200_MAX_SM_MHZ: u32 = 1980;
/// The memory clock the captures show, busy or idle.
pub const H200_MEM_MHZ: u32 = 3201;
pub const POWER_LIMIT_W: f64 = 700.0;

/// One second of the engine's life.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    pub t_ns: u64,
    /// Share of the second spent executing steps, 0..1.
    pub busy: f64,
}

/// One GPU's reading at one tick: what nvidia-smi, NVML and the DCGM exporter all report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub sm: u32,
    pub power_w: f64,
    pub temp: u32,
    /// `utilization.gpu`, %.
    pub util: u32,
    /// NVML clock-event reason bits.
    pub reasons: u64,
}

/// Small reproducible wobble in [-1, 1] for sample `tick` of GPU `gpu`.
fn wobble(tick: u64, gpu: u32, salt: u64) -> f64 {
    let mut x = tick.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(gpu) << 32) ^ salt;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x % 2001) as f64 / 1000.0 - 1.0
}

impl GpuSetup {
    /// GPU `gpu`'s reading at `tick`, the `i`-th of the series (the wobble is drawn per index).
    pub fn reading(&self, i: u64, tick: &Tick, gpu: u32) -> Reading {
        let util = (tick.busy * 100.0).round() as u32;
        let slow = self.slow.filter(|s| s.index == gpu && tick.t_ns >= s.from_ns);
        let idle = util < 2;
        let mut r = Reading {
            sm: if idle || wobble(i, gpu, 1) < 0.6 { H200_MAX_SM_MHZ } else { 1965 },
            power_w: 124.0 + tick.busy * 330.0 + 6.0 * wobble(i, gpu, 2),
            temp: (39.0 + tick.busy * 19.0 + wobble(i, gpu, 3)).round() as u32,
            util,
            reasons: if idle { 0x1 } else { 0x0 },
        };
        if let Some(s) = slow {
            r.sm = (f64::from(s.clock_mhz) + 15.0 * wobble(i, gpu, 4)).round() as u32;
            r.power_w = 124.0 + tick.busy * 150.0 + 6.0 * wobble(i, gpu, 2);
            r.temp = (f64::from(s.temp_c) + wobble(i, gpu, 3)).round() as u32;
            r.reasons = s.reasons | if idle { 0x1 } else { 0 };
        }
        r
    }

    /// `nvidia-smi --query-gpu=timestamp,index,… --format=csv -l 1`.
    pub fn smi_csv(&self, ticks: &[Tick]) -> String {
        let mut s = String::with_capacity(ticks.len() * self.count as usize * 180 + 400);
        s.push_str("timestamp, index, pstate, clocks.current.sm [MHz], clocks.max.sm [MHz], power.draw [W], power.limit [W], temperature.gpu, utilization.gpu [%], memory.used [MiB], memory.total [MiB], clocks_event_reasons.active, clocks_event_reasons.sw_power_cap, clocks_event_reasons.hw_slowdown, clocks_event_reasons.sw_thermal_slowdown\n");
        let active = |bits: u64, bit: u64| if bits & bit != 0 { "Active" } else { "Not Active" };
        for (i, tick) in ticks.iter().enumerate() {
            let stamp = smi_stamp(tick.t_ns);
            for gpu in 0..self.count {
                let r = self.reading(i as u64, tick, gpu);
                let _ = writeln!(
                    s,
                    "{stamp}, {gpu}, P0, {} MHz, {H200_MAX_SM_MHZ} MHz, {:.2} W, {POWER_LIMIT_W:.2} W, {}, {} %, {} MiB, {} MiB, 0x{:016X}, {}, {}, {}",
                    r.sm,
                    r.power_w,
                    r.temp,
                    r.util,
                    self.mem_used_mib,
                    self.mem_total_mib,
                    r.reasons,
                    active(r.reasons, 0x4),
                    active(r.reasons, 0x8),
                    active(r.reasons, 0x20),
                );
            }
        }
        s
    }

    /// The NVML series: a `meta` line, then one object per GPU per tick, with the fields (and
    /// their order) of the real capture.
    pub fn nvml_jsonl(&self, ticks: &[Tick]) -> String {
        let mut s = String::with_capacity(ticks.len() * self.count as usize * 420 + 400);
        let gpus: Vec<String> = (0..self.count)
            .map(|g| {
                format!(
                    "{{\"index\": {g}, \"name\": \"NVIDIA H200\", \"uuid\": \"GPU-5a1e{g:04x}-0000-4000-8000-00000000{g:04x}\"}}"
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "{{\"meta\": {{\"driver\": \"580.159.04\", \"nvml\": \"13.580.159.04\", \"gpus\": [{}]}}}}",
            gpus.join(", ")
        );
        for (i, tick) in ticks.iter().enumerate() {
            for gpu in 0..self.count {
                let r = self.reading(i as u64, tick, gpu);
                let busy = tick.busy;
                let _ = writeln!(
                    s,
                    "{{\"t\": {:.6}, \"gpu\": {gpu}, \"sm_clock_mhz\": {}, \"graphics_clock_mhz\": {}, \"mem_clock_mhz\": {H200_MEM_MHZ}, \"max_sm_clock_mhz\": {H200_MAX_SM_MHZ}, \"power_mw\": {}, \"power_limit_mw\": 700000, \"util_gpu_pct\": {}, \"util_mem_pct\": {}, \"mem_used_bytes\": {}, \"mem_total_bytes\": {}, \"temp_c\": {}, \"pstate\": 0, \"clock_event_reasons\": {}, \"pcie_tx_kbps\": {}, \"pcie_rx_kbps\": {}}}",
                    unix_s(tick.t_ns),
                    r.sm,
                    r.sm,
                    (r.power_w * 1000.0).round() as u64,
                    r.util,
                    (busy * 62.0).round() as u32,
                    self.mem_used_mib << 20,
                    self.mem_total_mib << 20,
                    r.temp,
                    r.reasons,
                    1100 + (busy * 9000.0) as u64 + (400.0 * (1.0 + wobble(i as u64, gpu, 5))) as u64,
                    400 + (busy * 3000.0) as u64 + (150.0 * (1.0 + wobble(i as u64, gpu, 6))) as u64,
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> GpuSetup {
        GpuSetup {
            count: 4,
            slow: Some(SlowGpu {
                index: 2,
                from_ns: 2_000_000_000,
                clock_mhz: 840,
                reasons: 0x8,
                temp_c: 87,
            }),
            mem_total_mib: H200_MEM_TOTAL_MIB,
            mem_used_mib: 129_394,
        }
    }

    fn ticks() -> Vec<Tick> {
        (1..=8).map(|s| Tick { t_ns: s * 1_000_000_000, busy: 1.0 }).collect()
    }

    #[test]
    fn the_analyzer_finds_the_straggler_in_the_csv() {
        let csv = setup().smi_csv(&ticks());
        let report = triage_core::analyze::analyze(&[("nvidia-smi.csv", &csv)]);
        assert_eq!(report.inputs[0].kind.as_str(), "nvidia_smi");
        assert!(report.inputs[0].issues.is_empty(), "{:?}", report.inputs[0].issues);
        let top = &report.findings[0];
        assert_eq!(top.rule, "slow-gpu", "{:#?}", report.findings);
        assert!(top.summary.contains("GPU 2"), "{}", top.summary);
    }

    #[test]
    fn nvml_lines_are_json_with_the_real_fields() {
        let text = setup().nvml_jsonl(&ticks());
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1 + 8 * 4);
        assert_eq!(lines[0]["meta"]["gpus"].as_array().unwrap().len(), 4);
        let slow =
            lines.iter().find(|l| l["gpu"] == 2 && l["t"].as_f64().unwrap() > 1.795_917_603e9).unwrap();
        assert_eq!(slow["clock_event_reasons"], 8);
        assert!(slow["sm_clock_mhz"].as_u64().unwrap() < 900);
        assert_eq!(slow["mem_total_bytes"].as_u64().unwrap(), 150_754_820_096);
    }
}
