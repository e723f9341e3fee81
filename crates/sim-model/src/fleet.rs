//! A fleet over an incident, as Prometheus would have stored it: several replicas of the
//! simulated engine — one running the scenario's fault, the others the healthy workload with
//! their own seeds — scraped every 15 s with their GPUs, written as one OpenMetrics file with
//! timestamps (`output::openmetrics`) that `promtool tsdb create-blocks-from openmetrics` backfills.
//!
//! What each target exports, with the labels a Kubernetes scrape gives it:
//! - the engine (`job="vllm"`, `instance="10.0.0.N:8000"`, `namespace="llm"`, `pod="vllm-N"`):
//!   vLLM's `/metrics` (`output::metrics`, the same families and labels `engine`, `model_name`),
//!   `process_start_time_seconds`, and Prometheus' own `up` — 0 while the replica starts (no
//!   `/metrics` yet), 1 after;
//! - the DCGM exporter of its node (`job="dcgm-exporter"`, `instance="10.0.1.N:9400"`): per GPU
//!   `DCGM_FI_DEV_{SM_CLOCK,MEM_CLOCK,GPU_UTIL,MEM_COPY_UTIL,FB_USED,FB_FREE,POWER_USAGE,GPU_TEMP,
//!   CLOCKS_EVENT_REASONS,XID_ERRORS}` with DCGM's labels `gpu`, `UUID`, `device`, `modelName`,
//!   `Hostname`, and the pod the GPU is given to (`namespace`, `pod`, `container`), as
//!   dcgm-exporter's Kubernetes mapping adds them (scraped with `honor_labels`).
//!
//! Every replica has as many GPUs as the faulty one (slow-gpu: four, the throttled one among
//! its peers; otherwise one). The faulty replica runs with the scenario's own seed, so its files
//! are those `triage sim --out` writes for that seed; which replica it is depends on the seed
//! too, so no reader can assume a position. Pure and deterministic like the rest of the model.

use crate::engine::{NS, Sim, WEIGHTS_BYTES};
use crate::output::gpu::{H200_MEM_MHZ, Tick};
use crate::output::metrics::{Family, Kind, Point};
use crate::output::openmetrics::{OutOfOrder, Series, Style};
use crate::rng::splitmix64;
use crate::scenario::{self, Scenario};
use serde::Serialize;
use triage_core::analyze::rules::RuleId;

/// Prometheus' usual scrape interval, and the simulator's own (`output::SCRAPE_EVERY_NS`).
pub const SCRAPE_EVERY_S: u64 = 15;
/// The most replicas one fleet may have (each is a whole simulation).
pub const MAX_REPLICAS: u32 = 16;
/// The most scrapes of all replicas together one file may hold: each is about 40 KB of text
/// (vLLM's nine histograms), so this keeps a file under about 250 MB — 3 replicas for 8 hours,
/// 16 for 90 minutes.
pub const MAX_REPLICA_SCRAPES: u64 = 6_000;
/// What a CUDA context and PyTorch hold on a GPU before any tensor, in MiB.
const CUDA_CONTEXT_MIB: u64 = 512;
/// `vllm` pods' namespace.
pub const NAMESPACE: &str = "llm";

/// How the fleet is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FleetConfig {
    /// 1 to [`MAX_REPLICAS`].
    pub replicas: u32,
    /// Unix seconds of simulated time 0 (default `output::clock::EPOCH_UNIX_S`); the first
    /// scrape is one interval later.
    pub start_unix_s: u64,
    pub seed: u64,
    /// Simulated seconds; `None`: the scenario's own duration.
    pub duration_s: Option<u64>,
}

/// One GPU of a replica, as DCGM labels it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuId {
    pub gpu: u32,
    #[serde(rename = "UUID")]
    pub uuid: String,
}

/// One replica and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replica {
    pub instance: String,
    pub pod: String,
    #[serde(rename = "Hostname")]
    pub hostname: String,
    /// The DCGM exporter's scrape address on the replica's node.
    pub dcgm_instance: String,
    pub seed: u64,
    /// Runs the scenario's fault (the healthy control's "faulty" replica runs the control).
    pub faulty: bool,
    pub gpus: Vec<GpuId>,
}

/// The answer key: which replica (and GPU) carries the fault, and the window to query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetAnswer {
    pub scenario: &'static str,
    pub class: &'static str,
    pub rules: &'static [RuleId],
    pub model_name: &'static str,
    pub namespace: &'static str,
    pub replicas: Vec<Replica>,
    /// Index into `replicas` (`None`: the healthy control, where no replica is).
    pub faulty: Option<usize>,
    /// The throttled GPU of the faulty replica (slow-gpu only).
    pub faulty_gpu: Option<GpuId>,
    /// Simulated time 0, unix seconds.
    pub start_unix_s: u64,
    /// First and last scrape, unix seconds.
    pub from_unix_s: u64,
    pub to_unix_s: u64,
    pub scrape_every_s: u64,
}

/// The fleet's OpenMetrics file and its answer key.
#[derive(Clone, Debug)]
pub struct FleetRun {
    pub answer: FleetAnswer,
    pub openmetrics: String,
}

/// Why a fleet could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetError {
    /// `replicas` × `scrapes` is above [`MAX_REPLICA_SCRAPES`]; nothing was simulated.
    TooLarge { replicas: u32, scrapes: u64 },
    /// A point older than its metric's last one (a bug in the writer's caller).
    OutOfOrder(OutOfOrder),
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::TooLarge { replicas, scrapes } => write!(
                f,
                "{replicas} replicas × {scrapes} scrapes is more than {MAX_REPLICA_SCRAPES} scrapes in one file (fewer replicas or a shorter --duration)"
            ),
            FleetError::OutOfOrder(o) => {
                write!(f, "the fleet wrote {} {} out of time order", o.family, o.labels)
            }
        }
    }
}

impl From<OutOfOrder> for FleetError {
    fn from(o: OutOfOrder) -> FleetError {
        FleetError::OutOfOrder(o)
    }
}

/// Which replica of `replicas` is faulty for `seed`.
pub fn faulty_index(seed: u64, replicas: u32) -> usize {
    let mut state = seed ^ 0x00F1_EE70_0000_0000;
    (splitmix64(&mut state) % u64::from(replicas.max(1))) as usize
}

fn replica_seed(seed: u64, index: u32) -> u64 {
    let mut state = seed.wrapping_add(u64::from(index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    splitmix64(&mut state)
}

fn uuid(replica: u32, gpu: u32) -> String {
    format!("GPU-5a1e{replica:02x}{gpu:02x}-0000-4000-8000-0000{replica:04x}{gpu:04x}")
}

/// Run the fleet through the scenario and write what Prometheus would hold. Counters start at
/// zero with the window (Prometheus' `rate` needs nothing before it).
pub fn run(s: &Scenario, cfg: FleetConfig) -> Result<FleetRun, FleetError> {
    let replicas = cfg.replicas.clamp(1, MAX_REPLICAS);
    let end_s = cfg.duration_s.unwrap_or(s.duration_ns() / NS);
    let scrapes = end_s / SCRAPE_EVERY_S;
    if u64::from(replicas) * scrapes > MAX_REPLICA_SCRAPES {
        return Err(FleetError::TooLarge { replicas, scrapes });
    }
    let faulty = faulty_index(cfg.seed, replicas);
    let healthy = scenario::find("healthy").expect("the healthy control exists");
    let fault_cfg = s.config(cfg.seed);
    let gpu_count = fault_cfg.gpus.as_ref().map_or(1, |g| g.count);
    let slow = fault_cfg.gpus.as_ref().and_then(|g| g.slow);
    let mut layout = Vec::with_capacity(replicas as usize);
    let mut sims = Vec::with_capacity(replicas as usize);
    for r in 0..replicas {
        let is_faulty = r as usize == faulty && s.class.is_some();
        // The chosen replica runs the scenario with its own seed (the control too).
        let chosen = r as usize == faulty;
        let seed = if chosen { cfg.seed } else { replica_seed(cfg.seed, r) };
        let mut c = if chosen { s.config(seed) } else { healthy.config(seed) };
        if c.gpus.is_none() {
            c.gpus = Some(scenario::one_gpu(&c.engine, gpu_count));
        }
        layout.push(Replica {
            instance: format!("10.0.0.{}:8000", 11 + r),
            pod: format!("vllm-{r}"),
            hostname: format!("gpu-node-{r}"),
            dcgm_instance: format!("10.0.1.{}:9400", 11 + r),
            seed,
            faulty: is_faulty,
            gpus: (0..gpu_count).map(|g| GpuId { gpu: g, uuid: uuid(r, g) }).collect(),
        });
        sims.push(Sim::new(c));
    }
    let mut series = Series::default();
    // The first scrape is one interval in, as the simulator's own: at 0 every replica would be
    // an engine that has done nothing yet — idle GPUs with their memory reserved, which is no
    // fleet's steady state.
    let mut t_s = SCRAPE_EVERY_S;
    while t_s <= end_s {
        let t_ms = (cfg.start_unix_s + t_s) * 1000;
        for (r, sim) in sims.iter_mut().enumerate() {
            sim.advance(t_s * NS);
            scrape(&mut series, sim, &layout[r], cfg.start_unix_s, t_ms)?;
        }
        t_s += SCRAPE_EVERY_S;
    }
    let last = end_s / SCRAPE_EVERY_S * SCRAPE_EVERY_S;
    let answer = FleetAnswer {
        scenario: s.name,
        class: s.class_str(),
        rules: s.rules,
        model_name: scenario::MODEL,
        namespace: NAMESPACE,
        faulty_gpu: slow.map(|g| GpuId { gpu: g.index, uuid: uuid(faulty as u32, g.index) }),
        replicas: layout,
        faulty: s.class.map(|_| faulty),
        start_unix_s: cfg.start_unix_s,
        from_unix_s: cfg.start_unix_s + SCRAPE_EVERY_S,
        to_unix_s: cfg.start_unix_s + last,
        scrape_every_s: SCRAPE_EVERY_S,
    };
    Ok(FleetRun { answer, openmetrics: series.render() })
}

fn gauge(name: &'static str, help: &'static str, labels: Vec<(&'static str, String)>, value: f64) -> Family {
    Family { name, kind: Kind::Gauge, help, points: vec![Point { suffix: "", labels, value }] }
}

/// One scrape of the replica's two targets at `t_ms`.
fn scrape(
    series: &mut Series,
    sim: &Sim,
    r: &Replica,
    start_unix_s: u64,
    t_ms: u64,
) -> Result<(), OutOfOrder> {
    let engine = &sim.config().engine;
    let up = sim.now_ns() >= engine.ready_ns;
    let target = |job: &str, instance: &str| {
        vec![
            ("instance", instance.to_owned()),
            ("job", job.to_owned()),
            ("namespace", NAMESPACE.to_owned()),
            ("pod", r.pod.clone()),
        ]
    };
    let vllm = target("vllm", &r.instance);
    let up_help = "Whether the target answered its scrape (Prometheus' own series).";
    series.add(&gauge("up", up_help, Vec::new(), if up { 1.0 } else { 0.0 }), &vllm, t_ms, Style::Go)?;
    if up {
        // A replica that starts in the incident started at its beginning; the others days before.
        let started =
            if engine.ready_ns > 0 { start_unix_s } else { start_unix_s.saturating_sub(3 * 86_400) };
        series.add(
            &gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                Vec::new(),
                started as f64,
            ),
            &vllm,
            t_ms,
            Style::Python,
        )?;
        for f in sim.metrics().families(&engine.model, sim.cache_info()) {
            series.add(&f, &vllm, t_ms, Style::Python)?;
        }
    }
    let dcgm = target("dcgm-exporter", &r.dcgm_instance);
    series.add(&gauge("up", up_help, Vec::new(), 1.0), &dcgm, t_ms, Style::Go)?;
    let Some(setup) = &sim.config().gpus else { return Ok(()) };
    // The second that ended at the scrape (tick i closes second i + 1).
    let i = sim.gpu_ticks().len().checked_sub(1);
    let tick = i.map_or(Tick { t_ns: 0, busy: 0.0 }, |i| sim.gpu_ticks()[i]);
    // While the engine starts it holds its weights and a CUDA context; the KV cache (the rest
    // of its `gpu_memory_utilization`) is allocated at the end of start-up.
    let used_mib = if up {
        setup.mem_used_mib
    } else {
        (WEIGHTS_BYTES >> 20) / u64::from(setup.count.max(1)) + CUDA_CONTEXT_MIB
    };
    let mut families: Vec<Family> = Vec::new();
    for g in &r.gpus {
        let read = setup.reading(i.unwrap_or(0) as u64, &tick, g.gpu);
        let labels = vec![
            ("gpu", g.gpu.to_string()),
            ("UUID", g.uuid.clone()),
            ("device", format!("nvidia{}", g.gpu)),
            ("modelName", "NVIDIA H200".to_owned()),
            ("Hostname", r.hostname.clone()),
            ("container", "vllm".to_owned()),
        ];
        let values: [(&'static str, &'static str, f64); 10] = [
            ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", f64::from(read.sm)),
            ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", f64::from(H200_MEM_MHZ)),
            ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", f64::from(read.util)),
            ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", (tick.busy * 62.0).round()),
            ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", used_mib as f64),
            (
                "DCGM_FI_DEV_FB_FREE",
                "Framebuffer memory free (in MiB).",
                setup.mem_total_mib.saturating_sub(used_mib) as f64,
            ),
            ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", (read.power_w * 1000.0).round() / 1000.0),
            ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", f64::from(read.temp)),
            (
                "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                "Active clock event (throttle) reasons, NVML bitmask: 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake.",
                read.reasons as f64,
            ),
            ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered (0: none seen).", 0.0),
        ];
        for (name, help, value) in values {
            let point = Point { suffix: "", labels: labels.clone(), value };
            match families.iter_mut().find(|f| f.name == name) {
                Some(f) => f.points.push(point),
                None => families.push(Family { name, kind: Kind::Gauge, help, points: vec![point] }),
            }
        }
    }
    for f in &families {
        series.add(f, &dcgm, t_ms, Style::Go)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
