//! nvidia-smi readings and processes (written by `parsers/nvidia_smi/`).

use crate::report::EvidenceLine;

/// One GPU's reading at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuReading {
    /// nvidia-smi's GPU index.
    pub index: u32,
    /// Product name (`NVIDIA H200`).
    pub name: Option<String>,
    /// GPU UUID.
    pub uuid: Option<String>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Highest SM clock, MHz.
    pub max_sm_clock_mhz: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Power limit, W.
    pub power_limit_w: Option<f64>,
    /// GPU utilisation, percent.
    pub util_pct: Option<f64>,
    /// Memory used, MiB.
    pub mem_used_mib: Option<f64>,
    /// Memory in all, MiB.
    pub mem_total_mib: Option<f64>,
    /// Temperature, °C.
    pub temp_c: Option<f64>,
    /// Active clock-event (throttle) reasons as NVML's bits (`triage_gpu::sample::REASON_*`,
    /// the one GPU model's: named by [`REASON_BITS`](triage_gpu::sample::REASON_BITS)), whatever form reported them. 0 when none
    /// is active *or* the form does not report them (the default table): see
    /// [`GpuReading::reasons_known`].
    pub reasons: u64,
    /// The NVML bitmask when the source gives it.
    pub reason_mask: Option<u64>,
    /// The most telling line: a non-idle active throttle reason, else the SM clock (`-q`); the
    /// power / memory / utilisation row (table); the row itself (CSV, dmon).
    pub evidence: EvidenceLine,
    /// PCI bus id (`00000000:00:06.0`), which ties a `-q` block to the table's index.
    pub bus_id: Option<String>,
    /// Performance state (`P0`).
    pub pstate: Option<String>,
    /// Readings with the same snapshot were taken together: one table, one `-q` dump, one CSV
    /// or dmon tick. Unique across the whole analysis (1-based).
    pub snapshot: u64,
    /// Whether this form reports throttle reasons at all (`-q`, CSV with a reasons column,
    /// dmon with `pviol`), so an empty [`GpuReading::reasons`] means "none active".
    pub reasons_known: bool,
    /// dmon `pviol`: share of the sample interval spent power-capped, percent.
    pub power_violation_pct: Option<f64>,
    /// dmon `tviol`: a thermal violation during the sample interval.
    pub thermal_violation: Option<bool>,
    /// Further lines that back the reading (`-q`'s clock, power and reason lines), at most 4.
    pub detail: Vec<EvidenceLine>,
    /// When it was taken, unix seconds, when the form says (the CSV's `timestamp` column,
    /// dmon's `-o DT` date and time; local time read as UTC: only differences are used).
    pub t: Option<f64>,
}

impl GpuReading {
    /// Whether any of `reasons` (NVML bits) is active.
    pub fn has_reason(&self, reasons: u64) -> bool {
        self.reasons & reasons != 0
    }

    /// The active reasons' names, in bit order (`hw_slowdown`, `hw_thermal`).
    pub fn reason_names(&self) -> Vec<&'static str> {
        triage_gpu::sample::reason_names(self.reasons)
    }
}

/// A process holding GPU memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuProcess {
    /// The GPU it runs on.
    pub gpu: Option<u32>,
    /// Process id.
    pub pid: Option<u32>,
    /// Process name as nvidia-smi prints it.
    pub name: String,
    /// GPU memory it holds, MiB.
    pub mem_mib: Option<f64>,
    /// Its line, quoted.
    pub evidence: EvidenceLine,
}

/// What the nvidia-smi output in the inputs says.
#[derive(Debug, Default)]
pub struct GpuFacts {
    /// Readings in input order (a CSV or dmon series gives several per GPU).
    pub readings: Vec<GpuReading>,
    /// Processes holding GPU memory.
    pub processes: Vec<GpuProcess>,
    /// Readings beyond [`MAX_READINGS`](crate::parsers::nvidia_smi::MAX_READINGS), counted and not kept.
    pub readings_dropped: u64,
    /// Snapshots handed out so far (the last [`GpuReading::snapshot`]).
    pub snapshots: u64,
}
