//! Sampling every GPU through NVML (`nvml-wrapper`, which loads `libnvidia-ml.so.1` at run
//! time: the binary starts anywhere and says clearly when there is no driver).
//!
//! Each field is read on its own; one the driver refuses (old driver, MIG, vGPU) is `None`
//! rather than a failed sample. XID and double-bit ECC events come from an NVML event set,
//! polled without blocking at each tick.

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PerformancePolicy, PerformanceState, TemperatureSensor,
};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, EventSet};
use triage_core::gpu::series::{Meta, MetaGpu};
use triage_core::gpu::{GpuSample, XidEvent};

/// Why NVML could not start, for the message and the exit code.
#[derive(Debug)]
pub struct NoNvml(pub String);

impl std::fmt::Display for NoNvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoNvml {}

pub struct NvmlSource {
    nvml: &'static Nvml,
    devices: Vec<(u32, Device<'static>)>,
    events: Option<EventSet<'static>>,
    meta: Meta,
}

fn no_nvml(e: &NvmlError) -> NoNvml {
    NoNvml(match e {
        NvmlError::LibloadingError(_) => "no NVIDIA driver here: libnvidia-ml.so.1 (NVML) could not be loaded. On a GPU node, check that the driver is installed and the library is on the loader path; elsewhere, use `triage-runner replay FILE` or `run --replay FILE`.".to_owned(),
        NvmlError::DriverNotLoaded => "the NVIDIA driver is not loaded (NVML: DriverNotLoaded): `nvidia-smi` will say the same; load the kernel module or check the container's device access.".to_owned(),
        NvmlError::NoPermission => "no permission to use NVML: run with access to /dev/nvidia* (in Kubernetes: the NVIDIA device plugin or a privileged DaemonSet).".to_owned(),
        other => format!("NVML failed to start: {other}"),
    })
}

impl NvmlSource {
    pub fn open() -> Result<NvmlSource, NoNvml> {
        let nvml: &'static Nvml = Box::leak(Box::new(Nvml::init().map_err(|e| no_nvml(&e))?));
        let count = nvml.device_count().map_err(|e| no_nvml(&e))?;
        let mut devices = Vec::new();
        let mut meta = Meta {
            driver: nvml.sys_driver_version().ok(),
            nvml: nvml.sys_nvml_version().ok(),
            gpus: Vec::new(),
        };
        for i in 0..count {
            let d =
                nvml.device_by_index(i).map_err(|e| NoNvml(format!("NVML could not open GPU {i}: {e}")))?;
            meta.gpus.push(MetaGpu {
                index: i,
                name: d.name().unwrap_or_default(),
                uuid: d.uuid().unwrap_or_default(),
            });
            devices.push((i, d));
        }
        let mut events = nvml.create_event_set().ok();
        for (_, d) in &devices {
            if let Some(set) = events.take() {
                // Not every GPU supports every event; register what it has.
                let wanted = EventTypes::CRITICAL_XID_ERROR | EventTypes::DOUBLE_BIT_ECC_ERROR;
                let supported = d.supported_event_types().unwrap_or(EventTypes::empty()) & wanted;
                events =
                    if supported.is_empty() { Some(set) } else { d.register_events(supported, set).ok() };
            }
        }
        Ok(NvmlSource { nvml, devices, events, meta })
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// One sample of every GPU, stamped `t` (unix seconds).
    pub fn sample(&mut self, t: f64) -> Vec<GpuSample> {
        let mut xids: Vec<(u32, XidEvent)> = Vec::new();
        if let Some(set) = &self.events {
            // Drain without blocking; bounded so a flood cannot stall sampling.
            for _ in 0..64 {
                let Ok(ev) = set.wait(0) else { break };
                let index = ev.device.index().unwrap_or(u32::MAX);
                let code = match ev.event_data {
                    Some(XidError::Value(v)) => v,
                    _ if ev.event_type.contains(EventTypes::DOUBLE_BIT_ECC_ERROR) => 48,
                    _ => 0,
                };
                xids.push((index, XidEvent { t, code }));
            }
        }
        self.devices
            .iter()
            .map(|(i, d)| {
                let mut s = read(self.nvml, *i, d, t);
                s.xid = xids.iter().filter(|(g, _)| g == i).map(|(_, x)| x.clone()).collect();
                s
            })
            .collect()
    }
}

fn read(nvml: &Nvml, index: u32, d: &Device<'_>, t: f64) -> GpuSample {
    let util = d.utilization_rates().ok();
    let mem = d.memory_info().ok();
    GpuSample {
        t,
        gpu: index,
        uuid: d.uuid().ok(),
        sm_clock_mhz: d.clock_info(Clock::SM).ok(),
        graphics_clock_mhz: d.clock_info(Clock::Graphics).ok(),
        mem_clock_mhz: d.clock_info(Clock::Memory).ok(),
        max_sm_clock_mhz: d.max_clock_info(Clock::SM).ok(),
        power_mw: d.power_usage().ok(),
        power_limit_mw: d.enforced_power_limit().ok(),
        util_gpu_pct: util.as_ref().map(|u| u.gpu),
        util_mem_pct: util.as_ref().map(|u| u.memory),
        mem_used_bytes: mem.as_ref().map(|m| m.used),
        mem_total_bytes: mem.as_ref().map(|m| m.total),
        temp_c: d.temperature(TemperatureSensor::Gpu).ok(),
        pstate: d.performance_state().ok().and_then(pstate_number),
        clock_event_reasons: clock_event_reasons(nvml, d),
        violation_power_ns: d.violation_status(PerformancePolicy::Power).ok().map(|v| v.violation_time),
        violation_thermal_ns: d.violation_status(PerformancePolicy::Thermal).ok().map(|v| v.violation_time),
        ecc_uncorrected: d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile).ok(),
        pcie_tx_kbps: None,
        pcie_rx_kbps: None,
        xid: Vec::new(),
    }
}

fn pstate_number(p: PerformanceState) -> Option<u32> {
    use PerformanceState as P;
    Some(match p {
        P::Zero => 0,
        P::One => 1,
        P::Two => 2,
        P::Three => 3,
        P::Four => 4,
        P::Five => 5,
        P::Six => 6,
        P::Seven => 7,
        P::Eight => 8,
        P::Nine => 9,
        P::Ten => 10,
        P::Eleven => 11,
        P::Twelve => 12,
        P::Thirteen => 13,
        P::Fourteen => 14,
        P::Fifteen => 15,
        P::Unknown => return None,
    })
}

/// The full clock-event reason mask. `current_throttle_reasons()` drops bits it does not know,
/// so call NVML directly: the newer name first, the older one on old drivers.
fn clock_event_reasons(nvml: &Nvml, d: &Device<'_>) -> Option<u64> {
    let lib = nvml.lib();
    let mut mask: u64 = 0;
    // SAFETY: the handle belongs to a live device of this NVML instance, and `mask` outlives
    // the call; each symbol is checked present before it is called.
    unsafe {
        let handle = d.handle();
        let rc = if let Ok(f) = lib.nvmlDeviceGetCurrentClocksEventReasons.as_ref() {
            f(handle, &mut mask)
        } else if let Ok(f) = lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref() {
            f(handle, &mut mask)
        } else {
            return None;
        };
        (rc == 0).then_some(mask)
    }
}
