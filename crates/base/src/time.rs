//! Timestamps as logs write them: unix seconds, milliseconds, microseconds or nanoseconds, and
//! ISO 8601 / RFC 3339 (with `T` or a space, optional fraction, `Z` or an offset).
//!
//! Everything becomes unix seconds as `f64` (microsecond precision survives until 2255).

/// Interpret a number as a unix timestamp by its magnitude: > 1e17 ns, > 1e14 µs, > 1e11 ms,
/// else seconds. Small values (monotonic clocks, seconds since start) stay seconds; their
/// differences are still right.
pub fn from_number(x: f64) -> Option<f64> {
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    Some(if x > 1e17 {
        x / 1e9
    } else if x > 1e14 {
        x / 1e6
    } else if x > 1e11 {
        x / 1e3
    } else {
        x
    })
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian), Howard Hinnant's algorithm.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A civil date (proleptic Gregorian) from days since 1970-01-01: (year, month, day), Howard
/// Hinnant's `civil_from_days`, the inverse of the parsing above.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn digits(s: &str, n: usize) -> Option<(i64, &str)> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, &s[n..]))
}

/// Parse `2026-11-29T10:00:00.123Z`, `2026-11-29 10:00:00,123`, `…+08:00`. A time without a
/// zone is taken as UTC (logs rarely say; differences between timestamps are unaffected).
pub fn parse_iso(s: &str) -> Option<f64> {
    let s = s.trim().trim_matches('"');
    let (y, r) = digits(s, 4)?;
    let r = r.strip_prefix('-')?;
    let (mo, r) = digits(r, 2)?;
    let r = r.strip_prefix('-')?;
    let (d, r) = digits(r, 2)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut secs = days_from_civil(y, mo, d) as f64 * 86_400.0;
    let r = match r.strip_prefix(['T', 't', ' ']) {
        Some(r) => r,
        None if r.is_empty() => return Some(secs),
        None => return None,
    };
    let (h, r) = digits(r, 2)?;
    let r = r.strip_prefix(':')?;
    let (mi, r) = digits(r, 2)?;
    let (sec, mut r) = match r.strip_prefix(':') {
        Some(r) => digits(r, 2)?,
        None => (0, r),
    };
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    secs += (h * 3600 + mi * 60 + sec) as f64;
    if let Some(frac) = r.strip_prefix(['.', ',']) {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            let f: f64 = format!("0.{}", &frac[..n]).parse().ok()?;
            secs += f;
        }
        r = &frac[n..];
    }
    let r = r.trim();
    match r.as_bytes().first() {
        None | Some(b'Z' | b'z') => Some(secs),
        Some(b'+' | b'-') => {
            let sign = if r.starts_with('-') { -1.0 } else { 1.0 };
            let z = r[1..].replace(':', "");
            let (oh, rest) = digits(&z, 2)?;
            let om = digits(rest, 2).map(|(m, _)| m).unwrap_or(0);
            Some(secs - sign * (oh * 3600 + om * 60) as f64)
        }
        _ if r.eq_ignore_ascii_case("utc") => Some(secs),
        _ => None,
    }
}

/// A timestamp written either way.
pub fn parse_timestamp(s: &str) -> Option<f64> {
    let t = s.trim().trim_matches('"');
    match t.parse::<f64>() {
        Ok(x) => from_number(x),
        Err(_) => parse_iso(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magnitudes() {
        assert_eq!(from_number(1_764_460_800.5), Some(1_764_460_800.5));
        assert_eq!(from_number(1_764_460_800_500.0), Some(1_764_460_800.5));
        assert_eq!(from_number(1_764_460_800_500_000.0), Some(1_764_460_800.5));
        assert_eq!(from_number(1.764_460_800_5e18), Some(1_764_460_800.5));
        assert_eq!(from_number(12.5), Some(12.5));
        assert_eq!(from_number(-1.0), None);
        assert_eq!(from_number(f64::NAN), None);
    }

    #[test]
    fn iso() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_iso("2026-11-30T00:00:00Z"), Some(1_795_996_800.0));
        assert_eq!(parse_iso("2026-11-30 00:00:01.250"), Some(1_795_996_801.25));
        assert_eq!(parse_iso("2026-11-30T08:00:00+08:00"), Some(1_795_996_800.0));
        assert_eq!(parse_iso("2026-11-29T19:00:00-05:00"), Some(1_795_996_800.0));
        assert_eq!(parse_iso("2026-11-30 00:00:00,5"), Some(1_795_996_800.5));
        assert_eq!(parse_iso("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(parse_iso("2026-11-30T"), None);
        assert_eq!(parse_timestamp("\"1764460800000\""), Some(1_764_460_800.0));
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }
}
