//! An nvidia-smi series — `--query-gpu … --format=csv -l N` or `dmon` — read as a GPU
//! recording: each reading becomes the one GPU model's [`GpuSample`] and goes to the same
//! [`Recording`] the runner's NVML recordings go to, so the GPU rules `triage-runner replay`
//! runs judge it over its whole length, in bounded memory. A tick is one snapshot (a GPU index
//! repeating starts the next); its time is the CSV's `timestamp` or dmon's `-o DT` columns, else
//! [`crate::parsers::gpu_series::ASSUMED_INTERVAL_S`] after the tick before.

use super::{Cx, GpuReading};
use crate::parsers::gpu_series::{GpuSeriesFacts, MIN_SERIES_TICKS, SeriesSource, TickClock};
use triage_gpu::recording::Recording;
use triage_gpu::sample::REASON_SW_THERMAL;
use triage_gpu::{GpuSample, WatchConfig};

/// One series being read.
pub(super) struct SmiSeries {
    source: SeriesSource,
    recording: Recording,
    clock: TickClock,
    /// The snapshot of the tick being read and its time.
    snapshot: Option<u64>,
    tick_t: f64,
    ticks: u64,
    samples: u64,
}

impl SmiSeries {
    pub(super) fn new(source: SeriesSource) -> SmiSeries {
        SmiSeries {
            source,
            recording: Recording::new(WatchConfig::default()),
            clock: TickClock::default(),
            snapshot: None,
            tick_t: 0.0,
            ticks: 0,
            samples: 0,
        }
    }

    /// The next reading, read from line `line`.
    pub(super) fn push(&mut self, reading: &GpuReading, line: usize) {
        if self.snapshot != Some(reading.snapshot) {
            self.snapshot = Some(reading.snapshot);
            self.tick_t = self.clock.next(reading.t);
            self.ticks += 1;
        }
        self.samples += 1;
        self.recording.push(sample(reading, self.tick_t), line);
    }

    /// The series ended: long enough to be judged, its findings become facts.
    pub(super) fn finish(self, cx: &mut Cx<'_>) {
        if self.ticks < MIN_SERIES_TICKS {
            return;
        }
        cx.facts.gpu_series.push(GpuSeriesFacts {
            input: cx.input.clone(),
            source: self.source,
            assumed_interval_s: self.clock.assumed_interval_s(),
            meta: None,
            finished: self.recording.finish(),
            samples: self.samples,
        });
    }
}

/// A whole number of a unit from a reading (`None` when absent, negative or not finite).
fn whole<T: TryFrom<u64>>(x: Option<f64>, scale: f64) -> Option<T> {
    let v = x? * scale;
    (v.is_finite() && v >= 0.0).then(|| T::try_from(v.round() as u64).ok()).flatten()
}

/// The reading as the one GPU model's sample at `t`.
fn sample(r: &GpuReading, t: f64) -> GpuSample {
    const MIB: f64 = 1024.0 * 1024.0;
    GpuSample {
        t,
        gpu: r.index,
        uuid: r.uuid.clone(),
        sm_clock_mhz: whole(r.sm_clock_mhz, 1.0),
        max_sm_clock_mhz: whole(r.max_sm_clock_mhz, 1.0),
        power_mw: whole(r.power_w, 1000.0),
        power_limit_mw: whole(r.power_limit_w, 1000.0),
        util_gpu_pct: whole(r.util_pct, 1.0),
        mem_used_bytes: whole(r.mem_used_mib, MIB),
        mem_total_bytes: whole(r.mem_total_mib, MIB),
        temp_c: whole(r.temp_c, 1.0),
        pstate: r.pstate.as_deref().and_then(|p| p.trim_start_matches('P').parse().ok()),
        // dmon's `tviol`: time in thermal violation, the driver's thermal slowdown.
        clock_event_reasons: r
            .reasons_known
            .then(|| r.reasons | if r.thermal_violation == Some(true) { REASON_SW_THERMAL } else { 0 }),
        ..GpuSample::default()
    }
}
