//! nvidia-smi output: the default table, `-q`, `--query-gpu … --format=csv` and `dmon`.
//! (Being written: see GpuFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;

/// One GPU's reading at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuReading {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub sm_clock_mhz: Option<f64>,
    pub max_sm_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub util_pct: Option<f64>,
    pub mem_used_mib: Option<f64>,
    pub mem_total_mib: Option<f64>,
    pub temp_c: Option<f64>,
    /// Active clock-event (throttle) reasons, normalised: `idle`, `applications_clocks`,
    /// `sw_power_cap`, `hw_slowdown`, `sync_boost`, `sw_thermal`, `hw_thermal`,
    /// `hw_power_brake`, `display_clocks`.
    pub reasons: Vec<String>,
    /// The NVML bitmask when the source gives it.
    pub reason_mask: Option<u64>,
    pub evidence: EvidenceLine,
}

/// A process holding GPU memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuProcess {
    pub gpu: Option<u32>,
    pub pid: Option<u32>,
    pub name: String,
    pub mem_mib: Option<f64>,
    pub evidence: EvidenceLine,
}

#[derive(Debug, Default)]
pub struct GpuFacts {
    /// Readings in input order (a CSV or dmon series gives several per GPU).
    pub readings: Vec<GpuReading>,
    pub processes: Vec<GpuProcess>,
}

#[derive(Default)]
pub struct SmiParser;

impl SectionParser for SmiParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
