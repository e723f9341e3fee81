//! The GPU rules of llm-triage ([`triage_core::gpu::GpuWatch`]) as a WASI 0.2 component
//! implementing the world `triage:plugin/gpu-rules` (`plugins/wit/triage.wit`).
//!
//! The watch lives in the instance between calls: the host calls `analyze` once per tick and
//! gets the findings active after it. When the host drops the instance (after a trap, on
//! reload) the windows start over, which only delays findings by the rules' sustain time.
//!
//! Build: `cargo xtask plugins` (→ `<target>/plugins/gpu-rules.wasm`).

#![allow(
    clippy::too_many_arguments,
    reason = "wit-bindgen's generated glue passes a record's fields as separate arguments"
)]

use std::cell::RefCell;

use triage_core::gpu::{self as core, GpuWatch, WatchConfig};

wit_bindgen::generate!({
    world: "gpu-rules",
    path: "../wit",
});

thread_local! {
    static WATCH: RefCell<GpuWatch> = RefCell::new(GpuWatch::new(WatchConfig::default()));
}

struct Plugin;

impl Guest for Plugin {
    fn analyze(samples: Vec<GpuSample>, engine: Option<EngineSample>) -> Vec<Finding> {
        let samples: Vec<core::GpuSample> = samples.into_iter().map(from_wit).collect();
        let engine = engine.map(|e| core::EngineSample {
            t: e.t,
            running: e.running,
            waiting: e.waiting,
            kv_usage: e.kv_usage,
            prompt_tokens_total: e.prompt_tokens_total,
            generation_tokens_total: e.generation_tokens_total,
        });
        let found = WATCH.with(|w| w.borrow_mut().observe(&samples, engine.as_ref()));
        found
            .into_iter()
            .map(|f| Finding {
                t: f.t,
                gpu: f.gpu,
                class: f.class.as_str().to_owned(),
                rule: f.rule,
                title: f.title,
                confidence: f.confidence,
                evidence: f.evidence,
                remediation: f.remediation,
            })
            .collect()
    }
}

fn from_wit(s: GpuSample) -> core::GpuSample {
    core::GpuSample {
        t: s.t,
        gpu: s.index,
        uuid: (!s.uuid.is_empty()).then_some(s.uuid),
        sm_clock_mhz: s.sm_clock_mhz,
        graphics_clock_mhz: None,
        mem_clock_mhz: s.mem_clock_mhz,
        max_sm_clock_mhz: s.max_sm_clock_mhz,
        power_mw: s.power_mw,
        power_limit_mw: s.power_limit_mw,
        util_gpu_pct: s.util_gpu_pct,
        util_mem_pct: s.util_mem_pct,
        mem_used_bytes: s.mem_used_bytes,
        mem_total_bytes: s.mem_total_bytes,
        temp_c: s.temp_c,
        pstate: None,
        clock_event_reasons: s.clock_event_reasons,
        violation_power_ns: s.violation_power_ns,
        violation_thermal_ns: s.violation_thermal_ns,
        ecc_uncorrected: s.ecc_uncorrected,
        pcie_tx_kbps: None,
        pcie_rx_kbps: None,
        xid: s.xid_events.into_iter().map(|x| core::XidEvent { t: x.t, code: x.code }).collect(),
    }
}

export!(Plugin);
