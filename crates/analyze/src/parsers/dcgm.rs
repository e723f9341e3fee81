//! dcgm-exporter's `DCGM_FI_DEV_*` samples in a pasted scrape, read as the one GPU model: each
//! scrape gives one [`GpuReading`] per GPU (so the snapshot rules, `slow-gpu` first, compare the
//! GPUs of one moment as they do for nvidia-smi), and scrapes one after another are a GPU
//! recording ([`Recording`]) the runner's GPU rules judge over their whole length.
//!
//! A scrape's samples come metric by metric (every GPU's SM clock, then every GPU's power…), so
//! each GPU's reading is gathered over the scrape and written when the next scrape starts. A
//! scrape's time is its samples' timestamp when they carry one (federation, `promtool`), else
//! [`super::gpu_series::ASSUMED_INTERVAL_S`] after the one before. One node per input: GPUs are
//! keyed by their `gpu` label, so samples of a second `Hostname` (or `instance`) are counted and
//! left out rather than mixed with the first node's.

use super::Cx;
use super::gpu_series::{GpuSeriesFacts, MIN_SERIES_TICKS, SeriesSource, TickClock};
use super::nvidia_smi::GpuReading;
use crate::report::EvidenceLine;
use std::collections::BTreeMap;
use triage_gpu::recording::Recording;
use triage_gpu::sample::{REASONS_KNOWN, XidEvent};
use triage_gpu::{GpuSample, WatchConfig};

/// Most GPUs of one scrape.
const MAX_GPUS: usize = 1_024;

/// A DCGM field this reader uses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    SmClock,
    MemClock,
    MaxSmClock,
    Power,
    PowerLimit,
    Util,
    FbUsed,
    FbFree,
    FbReserved,
    FbTotal,
    Temp,
    Reasons,
    Xid,
    EccDbe,
}

/// Whether a series is a DCGM field this reader uses.
pub(super) fn is_field(name: &str) -> bool {
    field(name).is_some()
}

fn field(name: &str) -> Option<Field> {
    Some(match name {
        "DCGM_FI_DEV_SM_CLOCK" => Field::SmClock,
        "DCGM_FI_DEV_MEM_CLOCK" => Field::MemClock,
        "DCGM_FI_DEV_MAX_SM_CLOCK" => Field::MaxSmClock,
        "DCGM_FI_DEV_POWER_USAGE" => Field::Power,
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT" | "DCGM_FI_DEV_POWER_MGMT_LIMIT" => Field::PowerLimit,
        "DCGM_FI_DEV_GPU_UTIL" => Field::Util,
        "DCGM_FI_DEV_FB_USED" => Field::FbUsed,
        "DCGM_FI_DEV_FB_FREE" => Field::FbFree,
        "DCGM_FI_DEV_FB_RESERVED" => Field::FbReserved,
        "DCGM_FI_DEV_FB_TOTAL" => Field::FbTotal,
        "DCGM_FI_DEV_GPU_TEMP" => Field::Temp,
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" | "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" => Field::Reasons,
        "DCGM_FI_DEV_XID_ERRORS" => Field::Xid,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" => Field::EccDbe,
        _ => return None,
    })
}

/// One GPU's fields in the scrape being read.
#[derive(Debug, Default)]
struct Gathered {
    uuid: Option<String>,
    model: Option<String>,
    bus_id: Option<String>,
    values: Vec<(Field, f64)>,
    /// The first line of this GPU in the scrape, and its SM clock's line (the one to quote).
    first_line: usize,
    evidence: Option<EvidenceLine>,
}

impl Gathered {
    fn get(&self, f: Field) -> Option<f64> {
        self.values.iter().find(|(k, _)| *k == f).map(|(_, v)| *v)
    }
}

/// The DCGM samples of one section of Prometheus text.
#[derive(Debug)]
pub(super) struct DcgmSeries {
    recording: Recording,
    clock: TickClock,
    /// The node read (`Hostname`, else `instance`), once known.
    node: Option<String>,
    /// Samples of other nodes, left out.
    other_nodes: u64,
    other_line: usize,
    tick: BTreeMap<u32, Gathered>,
    tick_ts: Option<f64>,
    ticks: u64,
    samples: u64,
    /// Each GPU's last XID code: a new one is an event.
    last_xid: BTreeMap<u32, u64>,
}

impl Default for DcgmSeries {
    fn default() -> DcgmSeries {
        DcgmSeries {
            recording: Recording::new(WatchConfig::default()),
            clock: TickClock::default(),
            node: None,
            other_nodes: 0,
            other_line: 0,
            tick: BTreeMap::new(),
            tick_ts: None,
            ticks: 0,
            samples: 0,
            last_xid: BTreeMap::new(),
        }
    }
}

/// One exposition sample line, as the Prometheus parser read it.
pub(super) struct SampleLine<'a> {
    /// Its line number and text.
    pub no: usize,
    pub text: &'a str,
    /// The series' name and labels, its value and timestamp (ms) when it has one.
    pub name: &'a str,
    pub labels: &'a [(String, String)],
    pub value: f64,
    pub ts_ms: Option<i64>,
}

fn label<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

impl DcgmSeries {
    /// A sample line of the scrape being read; anything but a `DCGM_FI_DEV_*` field this reader
    /// uses is ignored.
    pub(super) fn sample(&mut self, cx: &Cx<'_>, line: &SampleLine<'_>) {
        let &SampleLine { no, text: line, name, labels, value, ts_ms } = line;
        let Some(f) = field(name) else { return };
        let Some(gpu) = label(labels, "gpu").and_then(|g| g.parse::<u32>().ok()) else { return };
        if !value.is_finite() {
            return;
        }
        let node = label(labels, "Hostname").or_else(|| label(labels, "instance"));
        match (&self.node, node) {
            (None, Some(n)) => self.node = Some(n.to_owned()),
            (Some(known), Some(n)) if known != n => {
                self.other_nodes += 1;
                if self.other_line == 0 {
                    self.other_line = no;
                }
                return;
            }
            _ => {}
        }
        if self.tick.len() >= MAX_GPUS && !self.tick.contains_key(&gpu) {
            return;
        }
        if self.tick_ts.is_none() {
            self.tick_ts = ts_ms.map(|ms| ms as f64 / 1000.0);
        }
        let g = self.tick.entry(gpu).or_insert_with(|| Gathered { first_line: no, ..Gathered::default() });
        let text = |k: &str| label(labels, k).map(crate::text::quote_redacted);
        if g.uuid.is_none() {
            g.uuid = text("UUID");
            g.model = text("modelName");
            g.bus_id = text("pci_bus_id");
        }
        if f == Field::SmClock || g.evidence.is_none() {
            g.evidence = Some(cx.evidence(no, line));
        }
        if g.values.iter().all(|(k, _)| *k != f) {
            g.values.push((f, value));
        }
    }

    /// The scrape ended: each GPU's reading is written, and the scrape is the recording's next
    /// tick.
    pub(super) fn end_scrape(&mut self, cx: &mut Cx<'_>) {
        if self.tick.is_empty() {
            return;
        }
        let own = self.tick_ts.take();
        let t = self.clock.next(own);
        self.ticks += 1;
        cx.facts.gpus.snapshots += 1;
        let snapshot = cx.facts.gpus.snapshots;
        for (gpu, g) in std::mem::take(&mut self.tick) {
            let sample = self.sample_of(gpu, &g, t);
            self.samples += 1;
            let reading = reading(gpu, &g, &sample, snapshot, own, cx);
            super::nvidia_smi::push_reading(cx, reading);
            self.recording.push(sample, g.first_line);
        }
    }

    fn sample_of(&mut self, gpu: u32, g: &Gathered, t: f64) -> GpuSample {
        let whole = |x: Option<f64>, scale: f64| {
            x.map(|v| v * scale).filter(|v| v.is_finite() && *v >= 0.0).map(|v| v.round() as u64)
        };
        let u32_of = |x: Option<f64>, scale: f64| whole(x, scale).and_then(|v| u32::try_from(v).ok());
        const MIB: f64 = 1024.0 * 1024.0;
        let used = g.get(Field::FbUsed);
        let total = g
            .get(Field::FbTotal)
            .or_else(|| Some(used? + g.get(Field::FbFree)? + g.get(Field::FbReserved).unwrap_or(0.0)));
        let mut xid = Vec::new();
        if let Some(code) = whole(g.get(Field::Xid), 1.0).filter(|c| *c > 0)
            && self.last_xid.insert(gpu, code) != Some(code)
        {
            xid.push(XidEvent { t, code });
        }
        GpuSample {
            t,
            gpu,
            uuid: g.uuid.clone(),
            sm_clock_mhz: u32_of(g.get(Field::SmClock), 1.0),
            mem_clock_mhz: u32_of(g.get(Field::MemClock), 1.0),
            max_sm_clock_mhz: u32_of(g.get(Field::MaxSmClock), 1.0),
            power_mw: u32_of(g.get(Field::Power), 1000.0),
            power_limit_mw: u32_of(g.get(Field::PowerLimit), 1000.0),
            util_gpu_pct: u32_of(g.get(Field::Util), 1.0),
            mem_used_bytes: whole(used, MIB),
            mem_total_bytes: whole(total, MIB),
            temp_c: u32_of(g.get(Field::Temp), 1.0),
            clock_event_reasons: whole(g.get(Field::Reasons), 1.0),
            ecc_uncorrected: whole(g.get(Field::EccDbe), 1.0),
            xid,
            ..GpuSample::default()
        }
    }

    /// The section ended: the last scrape is written, a long enough series becomes a recording,
    /// and samples of other nodes are said.
    pub(super) fn finish(mut self, cx: &mut Cx<'_>) {
        self.end_scrape(cx);
        if self.other_nodes > 0 {
            let n = self.other_nodes;
            let node = crate::text::quote_redacted(self.node.as_deref().unwrap_or(""));
            cx.issue_in(
                self.other_line,
                format!("{n} DCGM sample(s) of other nodes were not read as GPU readings: one node per input ({node} was read)"),
                format!("{n} 个其他节点的 DCGM 样本未作为 GPU 读数：每份输入只读一个节点（已读 {node}）"),
            );
        }
        if self.ticks < MIN_SERIES_TICKS {
            return;
        }
        cx.facts.gpu_series.push(GpuSeriesFacts {
            input: cx.input.clone(),
            source: SeriesSource::Dcgm,
            assumed_interval_s: self.clock.assumed_interval_s(),
            meta: None,
            finished: self.recording.finish(),
            samples: self.samples,
        });
    }
}

/// The scrape's reading of one GPU, as nvidia-smi's readings are written.
fn reading(gpu: u32, g: &Gathered, s: &GpuSample, snapshot: u64, t: Option<f64>, cx: &Cx<'_>) -> GpuReading {
    let mib = |b: Option<u64>| b.map(|b| b as f64 / (1024.0 * 1024.0));
    GpuReading {
        index: gpu,
        name: g.model.clone(),
        uuid: g.uuid.clone(),
        sm_clock_mhz: s.sm_clock_mhz.map(f64::from),
        max_sm_clock_mhz: s.max_sm_clock_mhz.map(f64::from),
        power_w: g.get(Field::Power),
        power_limit_w: g.get(Field::PowerLimit),
        util_pct: g.get(Field::Util),
        mem_used_mib: mib(s.mem_used_bytes),
        mem_total_mib: mib(s.mem_total_bytes),
        temp_c: g.get(Field::Temp),
        reasons: s.clock_event_reasons.unwrap_or(0) & REASONS_KNOWN,
        reason_mask: s.clock_event_reasons,
        reasons_known: s.clock_event_reasons.is_some(),
        evidence: g.evidence.clone().unwrap_or_else(|| cx.evidence(g.first_line, "")),
        bus_id: g.bus_id.clone(),
        snapshot,
        t,
        ..GpuReading::default()
    }
}
