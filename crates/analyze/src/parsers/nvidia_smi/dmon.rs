//! `nvidia-smi dmon`: a `# gpu pwr gtemp …` header (`#Date Time gpu …` with `-o DT`) names the
//! columns, each fitting row is one reading, a repeated GPU index starts a new snapshot. The
//! `pviol` column (time spent power-capped) stands for the `sw_power_cap` reason.

use super::{Cx, GpuReading, SmiParser, num};
use triage_gpu::sample::REASON_SW_POWER_CAP;

/// dmon's header (`# gpu pwr gtemp …`, or `#Date Time gpu …` with `-o DT`).
pub(super) fn dmon_header(trimmed: &str) -> Option<Vec<String>> {
    let cols: Vec<String> =
        trimmed.strip_prefix('#')?.split_whitespace().map(str::to_ascii_lowercase).collect();
    let has = |name: &str| cols.iter().any(|col| col == name);
    (has("gpu") && (has("pwr") || has("sm") || has("pclk") || has("fb"))).then_some(cols)
}

/// `-o DT`'s date and time (`20261130 00:11:05`, local time, read as UTC).
fn dmon_time(date: &str, time: &str) -> Option<f64> {
    let (y, rest) = (date.get(..4)?, date.get(4..)?);
    let (m, d) = (rest.get(..2)?, rest.get(2..)?);
    triage_base::time::parse_iso(&format!("{y}-{m}-{d} {time}"))
}

/// The dmon header being read: its column names, lower case.
pub(super) struct Dmon {
    pub(super) cols: Vec<String>,
}

impl Dmon {
    /// A row of this header: as many columns, all numbers, `-`, or a `-o DT` date and time.
    pub(super) fn fits(&self, trimmed: &str) -> bool {
        trimmed.split_whitespace().count() == self.cols.len()
            && trimmed.starts_with(|c: char| c.is_ascii_digit())
            && trimmed
                .split_whitespace()
                .all(|word| word.bytes().all(|b| b.is_ascii_digit() || b"-.:/".contains(&b)))
    }
}

impl SmiParser {
    /// A row that [`Dmon::fits`] the header: one reading.
    pub(super) fn dmon_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, trimmed: &str) {
        let Some(dmon) = self.dmon.as_ref() else { return };
        let mut reading = GpuReading { evidence: cx.evidence(no, line), ..GpuReading::default() };
        let (mut index, mut date, mut time) = (None, None, None);
        for (col, value) in dmon.cols.iter().zip(trimmed.split_whitespace()) {
            match col.as_str() {
                "gpu" => index = value.parse::<u32>().ok(),
                "date" => date = Some(value),
                "time" => time = Some(value),
                "pwr" => reading.power_w = num(value),
                "gtemp" | "temp" => reading.temp_c = num(value),
                "sm" => reading.util_pct = num(value),
                "pclk" => reading.sm_clock_mhz = num(value),
                "fb" => reading.mem_used_mib = num(value),
                "pviol" => {
                    reading.power_violation_pct = num(value);
                    reading.reasons_known = true;
                    // Time spent power-capped during the interval: the SW power cap at work.
                    if reading.power_violation_pct.is_some_and(|pct| pct > 0.0) {
                        reading.reasons |= REASON_SW_POWER_CAP;
                    }
                }
                "tviol" => reading.thermal_violation = num(value).map(|flag| flag > 0.0),
                _ => {}
            }
        }
        let Some(index) = index else {
            cx.issue_in(no, "a dmon row without a GPU index", "dmon 行缺少 GPU 编号");
            return;
        };
        reading.index = index;
        reading.t = date.zip(time).and_then(|(d, t)| dmon_time(d, t));
        reading.snapshot = self.group.id(&mut cx.facts.gpus, index);
        self.push_series_reading(cx, no, reading);
    }
}
