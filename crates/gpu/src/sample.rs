//! One NVML reading of one GPU: the fields of the JSON-lines series, all optional but the time
//! and the index, so a driver that reports less still yields a sample.

use serde::{Deserialize, Serialize};

/// NVML clock-event (throttle) reason bits and their names, in bit order (the names are the
/// analyzer's normalised nvidia-smi reasons too).
pub const REASON_BITS: [(u64, &str); 9] = [
    (0x1, "idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
];

/// Every bit [`REASON_BITS`] names (a mask's other bits are ignored).
pub const REASONS_KNOWN: u64 = {
    let (mut mask, mut i) = (0, 0);
    while i < REASON_BITS.len() {
        mask |= REASON_BITS[i].0;
        i += 1;
    }
    mask
};

/// The GPU is idle.
pub const REASON_IDLE: u64 = 0x1;
/// The applications clocks setting holds the clock.
pub const REASON_APPLICATIONS_CLOCKS: u64 = 0x2;
/// Software power cap: the board is at its power limit.
pub const REASON_SW_POWER_CAP: u64 = 0x4;
/// Hardware slowdown (thermal or power brake asserted by the board).
pub const REASON_HW_SLOWDOWN: u64 = 0x8;
/// Sync boost: the clock follows the slowest GPU of its sync-boost group.
pub const REASON_SYNC_BOOST: u64 = 0x10;
/// Software thermal slowdown: the driver holds the clock for temperature.
pub const REASON_SW_THERMAL: u64 = 0x20;
/// Hardware thermal slowdown.
pub const REASON_HW_THERMAL: u64 = 0x40;
/// Hardware power brake (an external signal, e.g. a failing power supply).
pub const REASON_HW_POWER_BRAKE: u64 = 0x80;
/// The display clock setting holds the clock.
pub const REASON_DISPLAY_CLOCKS: u64 = 0x100;
/// Reasons that mean the hardware, not the workload, holds the clock down.
pub const REASONS_HW: u64 =
    REASON_HW_SLOWDOWN | REASON_SW_THERMAL | REASON_HW_THERMAL | REASON_HW_POWER_BRAKE;

/// The names of the bits set in `mask`, in bit order (unknown bits are skipped).
pub fn reason_names(mask: u64) -> Vec<&'static str> {
    REASON_BITS.iter().filter(|(bit, _)| mask & bit != 0).map(|(_, name)| *name).collect()
}

/// One XID event: the driver's error code for a GPU fault.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct XidEvent {
    /// Unix time the host received it, seconds.
    pub t: f64,
    /// The XID code (e.g. 79: the GPU has fallen off the bus).
    pub code: u64,
}

/// One NVML reading of one GPU at one moment (the JSON-lines series' field names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// Unix time of the reading, seconds.
    pub t: f64,
    /// NVML device index.
    pub gpu: u32,
    /// NVML device UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Streaming-multiprocessor clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    /// Graphics clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphics_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<u32>,
    /// Highest SM clock the GPU allows, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<u32>,
    /// Board power draw, milliwatts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mw: Option<u32>,
    /// Enforced power limit, milliwatts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_mw: Option<u32>,
    /// Share of the last sample period in which a kernel ran, 0–100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_gpu_pct: Option<u32>,
    /// Share of the last sample period in which device memory was read or written, 0–100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_mem_pct: Option<u32>,
    /// Device memory in use, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_used_bytes: Option<u64>,
    /// Device memory in all, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_total_bytes: Option<u64>,
    /// GPU temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<u32>,
    /// Performance state (0 is the fastest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pstate: Option<u32>,
    /// NVML clock-event reason bits ([`REASON_BITS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_event_reasons: Option<u64>,
    /// Cumulative time limited by power (NVML violation counter), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation_power_ns: Option<u64>,
    /// Cumulative time limited by temperature, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation_thermal_ns: Option<u64>,
    /// Cumulative uncorrected ECC errors (volatile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected: Option<u64>,
    /// PCIe transmit throughput, KB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_tx_kbps: Option<u32>,
    /// PCIe receive throughput, KB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_rx_kbps: Option<u32>,
    /// XID events delivered since the previous sample of this GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xid: Vec<XidEvent>,
}

impl GpuSample {
    /// The clock-event reason bits; 0 when not reported.
    pub fn reasons(&self) -> u64 {
        self.clock_event_reasons.unwrap_or(0)
    }

    /// Whether the GPU is under load ([`crate::peers::busy`]).
    pub fn busy(&self) -> bool {
        crate::peers::busy(
            self.util_gpu_pct.map(f64::from),
            self.power_mw.map(f64::from),
            self.power_limit_mw.map(f64::from),
        )
    }

    /// Used share of device memory, 0–1.
    pub fn mem_share(&self) -> Option<f64> {
        match (self.mem_used_bytes, self.mem_total_bytes) {
            (Some(u), Some(t)) if t > 0 => Some(u as f64 / t as f64),
            _ => None,
        }
    }

    /// The reading as one evidence line: `GPU 0 SM 1470/1980 MHz, 693/700 W, util 99 %, …`.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("GPU {}", self.gpu)];
        match (self.sm_clock_mhz, self.max_sm_clock_mhz) {
            (Some(c), Some(m)) => parts.push(format!("SM {c}/{m} MHz")),
            (Some(c), None) => parts.push(format!("SM {c} MHz")),
            _ => {}
        }
        match (self.power_mw, self.power_limit_mw) {
            (Some(p), Some(l)) => {
                parts.push(format!("{:.0}/{:.0} W", f64::from(p) / 1e3, f64::from(l) / 1e3))
            }
            (Some(p), None) => parts.push(format!("{:.0} W", f64::from(p) / 1e3)),
            _ => {}
        }
        if let Some(u) = self.util_gpu_pct {
            parts.push(format!("util {u} %"));
        }
        if let (Some(u), Some(t)) = (self.mem_used_bytes, self.mem_total_bytes) {
            parts.push(format!("mem {:.1}/{:.1} GiB", u as f64 / GIB, t as f64 / GIB));
        }
        if let Some(c) = self.temp_c {
            parts.push(format!("{c} °C"));
        }
        if let Some(r) = self.clock_event_reasons {
            let names = reason_names(r);
            parts.push(if names.is_empty() {
                format!("reasons {r:#x}")
            } else {
                format!("reasons {r:#x} ({})", names.join(", "))
            });
        }
        format!("t={:.1} {}", self.t, parts.join(", "))
    }
}

pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_line_of_the_real_series() {
        let line = r#"{"t": 1795991698.2, "gpu": 0, "sm_clock_mhz": 1470, "graphics_clock_mhz": 1470, "mem_clock_mhz": 3201, "max_sm_clock_mhz": 1980, "power_mw": 693000, "power_limit_mw": 700000, "util_gpu_pct": 99, "util_mem_pct": 60, "mem_used_bytes": 1073741824, "mem_total_bytes": 150754820096, "temp_c": 60, "pstate": 0, "clock_event_reasons": 4, "pcie_tx_kbps": 1, "pcie_rx_kbps": 2}"#;
        let s: GpuSample = serde_json::from_str(line).unwrap();
        assert!(s.busy());
        assert_eq!(reason_names(s.reasons()), ["sw_power_cap"]);
        assert_eq!(
            s.describe(),
            "t=1795991698.2 GPU 0, SM 1470/1980 MHz, 693/700 W, util 99 %, mem 1.0/140.4 GiB, 60 °C, reasons 0x4 (sw_power_cap)"
        );
    }

    #[test]
    fn busy_by_power_alone_and_idle() {
        let s = GpuSample { power_mw: Some(400_000), power_limit_mw: Some(700_000), ..GpuSample::default() };
        assert!(s.busy());
        let idle = GpuSample {
            util_gpu_pct: Some(0),
            power_mw: Some(80_000),
            power_limit_mw: Some(700_000),
            ..GpuSample::default()
        };
        assert!(!idle.busy());
        assert_eq!(GpuSample::default().mem_share(), None);
    }
}
