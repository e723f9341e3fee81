//! `nvidia-smi --query-gpu … --format=csv`: a header of query field names (`clocks.sm [MHz]`)
//! names the columns; each row that fits it is one reading. Throttle reasons come from the
//! `clocks_event_reasons.active` mask or per-reason columns (`clocks_throttle_reasons.…` on
//! older drivers). A series (`-l 1`) gives a new snapshot whenever a GPU index repeats.

use super::{Cx, GpuReading, SmiParser, is_active, learn_bus, mib, num};
use triage_gpu::sample::{
    REASON_APPLICATIONS_CLOCKS, REASON_DISPLAY_CLOCKS, REASON_HW_POWER_BRAKE, REASON_HW_SLOWDOWN,
    REASON_HW_THERMAL, REASON_IDLE, REASON_SW_POWER_CAP, REASON_SW_THERMAL, REASON_SYNC_BOOST, REASONS_KNOWN,
};

/// A `--query-gpu` column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Col {
    Timestamp,
    Index,
    Name,
    Uuid,
    BusId,
    Pstate,
    Sm,
    Graphics,
    MaxSm,
    Power,
    PowerLimit,
    Util,
    MemUsed,
    MemTotal,
    Temp,
    ReasonMask,
    Reason(u64),
    Other,
}

/// `--query-gpu` reason fields (after `clocks_event_reasons.` / `clocks_throttle_reasons.`).
fn reason_of_field(field: &str) -> Option<u64> {
    Some(match field {
        "gpu_idle" => REASON_IDLE,
        "applications_clocks_setting" => REASON_APPLICATIONS_CLOCKS,
        "sw_power_cap" => REASON_SW_POWER_CAP,
        "hw_slowdown" => REASON_HW_SLOWDOWN,
        "hw_thermal_slowdown" => REASON_HW_THERMAL,
        "hw_power_brake_slowdown" => REASON_HW_POWER_BRAKE,
        "sync_boost" => REASON_SYNC_BOOST,
        "sw_thermal_slowdown" => REASON_SW_THERMAL,
        "display_clock_setting" => REASON_DISPLAY_CLOCKS,
        _ => return None,
    })
}

/// The column a header field names (`clocks.sm [MHz]` → [`Col::Sm`]).
fn col_of(header: &str) -> Col {
    let name = header.split('[').next().unwrap_or("").trim().to_ascii_lowercase();
    let reason_field =
        name.strip_prefix("clocks_event_reasons.").or_else(|| name.strip_prefix("clocks_throttle_reasons."));
    if let Some(field) = reason_field {
        return match field {
            "active" => Col::ReasonMask,
            other => reason_of_field(other).map_or(Col::Other, Col::Reason),
        };
    }
    match name.as_str() {
        "timestamp" => Col::Timestamp,
        "index" => Col::Index,
        "name" | "gpu_name" => Col::Name,
        "uuid" | "gpu_uuid" => Col::Uuid,
        "pci.bus_id" | "gpu_bus_id" => Col::BusId,
        "pstate" => Col::Pstate,
        "clocks.sm" | "clocks.current.sm" => Col::Sm,
        "clocks.gr" | "clocks.current.graphics" => Col::Graphics,
        "clocks.max.sm" | "clocks.max.sm_clock" => Col::MaxSm,
        "power.draw" | "power.draw.average" | "power.draw.instant" => Col::Power,
        "power.limit" | "enforced.power.limit" | "power.limit.enforced" => Col::PowerLimit,
        "utilization.gpu" => Col::Util,
        "memory.used" => Col::MemUsed,
        "memory.total" => Col::MemTotal,
        "temperature.gpu" => Col::Temp,
        _ => Col::Other,
    }
}

/// The CSV's `timestamp` (`2026/11/30 00:11:05.732`, local time, read as UTC).
pub(super) fn smi_time(value: &str) -> Option<f64> {
    let value = value.trim();
    let iso = value.get(..10).filter(|date| date.as_bytes().get(4) == Some(&b'/'))?.replace('/', "-");
    triage_base::time::parse_iso(&format!("{iso}{}", &value[10..]))
}

/// A `--query-gpu` header: every field looks like a query name (`clocks.sm [MHz]`) and at least
/// one is a column we read.
pub(super) fn csv_header(trimmed: &str) -> Option<Vec<Col>> {
    let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
    let looks_like_query = fields.iter().all(|field| {
        let name = field.split(" [").next().unwrap_or("");
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_')
    });
    if !looks_like_query {
        return None;
    }
    let cols: Vec<Col> = fields.iter().map(|field| col_of(field)).collect();
    cols.iter().any(|col| *col != Col::Other).then_some(cols)
}

/// The CSV header being read.
pub(super) struct Csv {
    pub(super) cols: Vec<Col>,
    /// Rows since the header: the index when there is no index column.
    pub(super) rows: u32,
}

impl Csv {
    /// A row of this header: as many fields, and numbers (or `[N/A]`) where numbers belong, so a
    /// one-column query cannot swallow the prose that follows it.
    pub(super) fn fits(&self, trimmed: &str) -> bool {
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        fields.len() == self.cols.len()
            && self.cols.iter().zip(&fields).all(|(col, value)| match col {
                Col::Index => value.parse::<u32>().is_ok(),
                Col::Sm
                | Col::Graphics
                | Col::MaxSm
                | Col::Power
                | Col::PowerLimit
                | Col::Util
                | Col::MemUsed
                | Col::MemTotal
                | Col::Temp => num(value).is_some() || value.starts_with('[') || *value == "N/A",
                _ => true,
            })
    }
}

impl SmiParser {
    /// A row that [`Csv::fits`] the header: one reading.
    pub(super) fn csv_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, trimmed: &str) {
        let Some(csv) = self.csv.as_mut() else { return };
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        let mut reading = GpuReading { evidence: cx.evidence(no, line), ..GpuReading::default() };
        let mut index = None;
        let mut graphics = None;
        for (col, value) in csv.cols.iter().zip(&fields) {
            let text = || (!value.starts_with('[') && !value.is_empty()).then(|| (*value).to_owned());
            match col {
                Col::Timestamp => reading.t = smi_time(value),
                Col::Index => index = value.parse::<u32>().ok(),
                Col::Name => reading.name = text(),
                Col::Uuid => reading.uuid = text(),
                Col::BusId => reading.bus_id = text(),
                Col::Pstate => reading.pstate = text(),
                Col::Sm => reading.sm_clock_mhz = num(value),
                Col::Graphics => graphics = num(value),
                Col::MaxSm => reading.max_sm_clock_mhz = num(value),
                Col::Power => reading.power_w = reading.power_w.or(num(value)),
                Col::PowerLimit => reading.power_limit_w = reading.power_limit_w.or(num(value)),
                Col::Util => reading.util_pct = num(value),
                Col::MemUsed => reading.mem_used_mib = mib(value),
                Col::MemTotal => reading.mem_total_mib = mib(value),
                Col::Temp => reading.temp_c = num(value),
                Col::ReasonMask => {
                    reading.reasons_known = true;
                    let hex = value.strip_prefix("0x").or_else(|| value.strip_prefix("0X"));
                    match hex.map(|digits| u64::from_str_radix(digits, 16)) {
                        Some(Ok(mask)) => {
                            reading.reason_mask = Some(mask);
                            reading.reasons |= mask & REASONS_KNOWN;
                        }
                        Some(Err(_)) => cx.issue_in(
                            no,
                            format!("a reasons mask that is not hexadecimal: {value}"),
                            format!("降频原因掩码不是十六进制数：{value}"),
                        ),
                        None => {} // [N/A], [Not Supported]
                    }
                }
                Col::Reason(reason) => {
                    reading.reasons_known = true;
                    if is_active(value) {
                        reading.reasons |= reason;
                    }
                }
                Col::Other => {}
            }
        }
        // Graphics and SM clocks are one clock domain on the datacenter parts this tool meets.
        reading.sm_clock_mhz = reading.sm_clock_mhz.or(graphics);
        let index = index
            .or_else(|| reading.bus_id.as_ref().and_then(|bus| self.bus_index.get(bus).copied()))
            .unwrap_or(csv.rows);
        csv.rows += 1;
        reading.index = index;
        if let Some(bus) = &reading.bus_id {
            learn_bus(&mut self.bus_index, bus, index);
        }
        reading.snapshot = self.group.id(&mut cx.facts.gpus, index);
        self.push_series_reading(cx, no, reading);
    }
}
