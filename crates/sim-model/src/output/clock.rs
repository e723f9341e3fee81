//! The wall clock of the simulated timeline: simulated nanosecond 0 is a fixed moment, so every
//! run of a seed prints the same timestamps.

/// Simulated time 0: 2026-11-29 02:00:00 UTC, a night shift's incident.
pub const EPOCH_UNIX_S: u64 = 1_795_917_600;

/// Unix seconds of simulated time `t_ns`.
pub fn unix_s(t_ns: u64) -> f64 {
    EPOCH_UNIX_S as f64 + t_ns as f64 / 1e9
}

struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn civil(t_ns: u64) -> Civil {
    let total_ms = EPOCH_UNIX_S * 1000 + t_ns / 1_000_000;
    let secs = total_ms / 1000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let sod = secs % 86_400;
    Civil {
        year,
        month,
        day,
        hour: (sod / 3600) as u32,
        minute: (sod / 60 % 60) as u32,
        second: (sod % 60) as u32,
        millis: (total_ms % 1000) as u32,
    }
}

/// vLLM's log prefix time: `11-29 02:00:05` (it prints no year and no fraction).
pub fn vllm_stamp(t_ns: u64) -> String {
    let c = civil(t_ns);
    format!("{:02}-{:02} {:02}:{:02}:{:02}", c.month, c.day, c.hour, c.minute, c.second)
}

/// nvidia-smi's `timestamp` column: `2026/11/29 02:00:05.000`.
pub fn smi_stamp(t_ns: u64) -> String {
    let c = civil(t_ns);
    format!(
        "{}/{:02}/{:02} {:02}:{:02}:{:02}.{:03}",
        c.year, c.month, c.day, c.hour, c.minute, c.second, c.millis
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_formats() {
        assert_eq!(vllm_stamp(0), "11-29 02:00:00");
        assert_eq!(smi_stamp(1_500_000_000), "2026/11/29 02:00:01.500");
        // Past midnight and into December.
        assert_eq!(vllm_stamp(22 * 3600 * 1_000_000_000 + 5_000_000_000), "11-30 00:00:05");
        assert_eq!(vllm_stamp(46 * 3600 * 1_000_000_000), "12-01 00:00:00");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert!((unix_s(2_000_000_000) - 1_795_917_602.0).abs() < 1e-6);
    }
}
