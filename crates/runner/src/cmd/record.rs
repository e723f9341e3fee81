//! `triage-runner record`: write an NVML series (a meta line, then one JSON line per GPU
//! sample) for later replay.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use triage_core::gpu::series;
use triage_runner::nvml::NvmlSource;

use super::{nap, unix_now};
use crate::RecordArgs;

pub(crate) fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let RecordArgs { out, interval_ms, duration_s } = args;
    let mut nvml = NvmlSource::open()?;
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?,
    );
    writeln!(f, "{}", series::meta_line(nvml.meta()))?;
    let started = Instant::now();
    let end = started.checked_add(Duration::from_secs_f64(duration_s.min(1e9)));
    let period = Duration::from_millis(interval_ms);
    let mut next = Instant::now();
    while started.elapsed().as_secs_f64() < duration_s {
        for s in nvml.sample(unix_now()) {
            serde_json::to_writer(&mut f, &s)?;
            f.write_all(b"\n")?;
        }
        next += period;
        nap(next.saturating_duration_since(Instant::now()), end);
    }
    f.flush()?;
    Ok(ExitCode::SUCCESS)
}
