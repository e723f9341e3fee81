//! One line of an NVML recording read into a [`GpuSample`] without serde's generic machinery:
//! the runner writes flat objects of numbers and one plain string, and reading them by hand is
//! about three times faster — a 24-hour recording spent a quarter of its time in serde.
//!
//! The fast path accepts only what it reads exactly as `serde_json` would: known fields once
//! each, unsigned integers without sign, fraction or exponent, `t` as digits with an optional
//! fraction of at most 22 digits whose digits fit a u64 (computed as serde_json computes it: the
//! digits as one integer, converted to f64, divided by an exact power of ten; the tests check it
//! bit for bit against serde on every recording in the repository), strings without escapes or control characters, `null` for optional fields,
//! an empty `xid` list, unknown fields with a plain value. Anything else — an XID event, an
//! escape, a malformed line — goes to `serde_json`, which reads it or says why not, so results
//! and error messages are serde's in every case.

use super::sample::GpuSample;

/// Read one sample line: the fast path when the line is plain, else `serde_json`.
pub fn parse_sample(line: &str) -> Result<GpuSample, serde_json::Error> {
    match fast(line) {
        Some(s) => Ok(s),
        None => serde_json::from_str(line),
    }
}

struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'"' => {
                    self.i += 1;
                    // Between two ASCII quotes of a `str`: a valid slice.
                    return self.s.get(start..self.i - 1);
                }
                b'\\' | 0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
        None
    }

    /// `null`.
    fn null(&mut self) -> bool {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// An unsigned integer: digits only, no leading zero unless it is `0`, then a delimiter.
    fn unsigned(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.i) {
            if !c.is_ascii_digit() {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let n = self.i - start;
        if n == 0 || (n > 1 && self.b[start] == b'0') || !self.delimited() {
            return None;
        }
        Some(v)
    }

    /// `t`: digits with an optional fraction of at most 22 digits, all of them one u64; its value
    /// as serde_json computes it (that integer as f64, divided by an exact power of ten).
    fn time(&mut self) -> Option<f64> {
        self.ws();
        let start = self.i;
        let (mut mantissa, mut scale): (u64, i32) = (0, 0);
        let mut seen_dot = false;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'0'..=b'9' => {
                    mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                    if seen_dot {
                        scale += 1;
                    }
                    if scale > 22 {
                        return None;
                    }
                }
                b'.' if !seen_dot => seen_dot = true,
                _ => break,
            }
            self.i += 1;
        }
        let text = &self.b[start..self.i];
        let int_len = text.iter().position(|c| *c == b'.').unwrap_or(text.len());
        let bad = int_len == 0
            || (int_len > 1 && text[0] == b'0')
            || text.last() == Some(&b'.')
            || !self.delimited();
        if bad {
            return None;
        }
        Some(if scale == 0 { mantissa as f64 } else { mantissa as f64 / POW10[scale as usize] })
    }

    /// The next byte ends a value.
    fn delimited(&mut self) -> bool {
        matches!(self.b.get(self.i), Some(b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
    }
}

/// Powers of ten that are exact f64 values.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// The known fields' names, quoted, in the order the runner writes them ([`field_number`]'s).
const KEYS: [&str; 22] = [
    "\"t\"",
    "\"gpu\"",
    "\"uuid\"",
    "\"sm_clock_mhz\"",
    "\"graphics_clock_mhz\"",
    "\"mem_clock_mhz\"",
    "\"max_sm_clock_mhz\"",
    "\"power_mw\"",
    "\"power_limit_mw\"",
    "\"util_gpu_pct\"",
    "\"util_mem_pct\"",
    "\"mem_used_bytes\"",
    "\"mem_total_bytes\"",
    "\"temp_c\"",
    "\"pstate\"",
    "\"clock_event_reasons\"",
    "\"violation_power_ns\"",
    "\"violation_thermal_ns\"",
    "\"ecc_uncorrected\"",
    "\"pcie_tx_kbps\"",
    "\"pcie_rx_kbps\"",
    "\"xid\"",
];

/// A known field's number (its bit in the duplicate check).
fn field_number(key: &str) -> Option<usize> {
    Some(match key {
        "t" => 0,
        "gpu" => 1,
        "uuid" => 2,
        "sm_clock_mhz" => 3,
        "graphics_clock_mhz" => 4,
        "mem_clock_mhz" => 5,
        "max_sm_clock_mhz" => 6,
        "power_mw" => 7,
        "power_limit_mw" => 8,
        "util_gpu_pct" => 9,
        "util_mem_pct" => 10,
        "mem_used_bytes" => 11,
        "mem_total_bytes" => 12,
        "temp_c" => 13,
        "pstate" => 14,
        "clock_event_reasons" => 15,
        "violation_power_ns" => 16,
        "violation_thermal_ns" => 17,
        "ecc_uncorrected" => 18,
        "pcie_tx_kbps" => 19,
        "pcie_rx_kbps" => 20,
        "xid" => 21,
        _ => return None,
    })
}

fn fast(line: &str) -> Option<GpuSample> {
    let b = line.as_bytes();
    let mut c = Cursor { s: line, b, i: 0 };
    c.eat(b'{')?;
    let mut s = GpuSample::default();
    let (mut seen, mut has_t, mut has_gpu) = (0u32, false, false);
    if c.peek()? == b'}' {
        return None;
    }
    // The runner writes the fields in one order: the next key is first tried as the field
    // after the last one read, a comparison of its quoted name instead of a byte-by-byte scan.
    let mut next = 0;
    loop {
        c.ws();
        let known = KEYS.get(next).filter(|key| same_prefix(&b[c.i..], key.as_bytes()));
        let number = match known {
            Some(key) => {
                c.i += key.len();
                Some(next)
            }
            None => field_number(c.string()?),
        };
        c.eat(b':')?;
        next = number.map_or(next, |k| k + 1);
        match number {
            Some(k) => {
                if seen & (1 << k) != 0 {
                    return None;
                }
                seen |= 1 << k;
                field(&mut c, &mut s, k, &mut has_t, &mut has_gpu)?;
            }
            None => skip_plain(&mut c)?,
        }
        match c.peek()? {
            b',' => c.i += 1,
            b'}' => {
                c.i += 1;
                break;
            }
            _ => return None,
        }
    }
    c.ws();
    (c.i == b.len() && has_t && has_gpu).then_some(s)
}

/// `rest` starts with `key` (a short name: compared in line, a call to `memcmp` cost more).
fn same_prefix(rest: &[u8], key: &[u8]) -> bool {
    rest.len() >= key.len() && rest.iter().zip(key).fold(true, |same, (a, b)| same & (a == b))
}

/// An optional unsigned field of width `T`: `null` is `None`.
fn opt<T: TryFrom<u64>>(c: &mut Cursor<'_>) -> Option<Option<T>> {
    if c.null() {
        return if c.delimited() { Some(None) } else { None };
    }
    Some(Some(T::try_from(c.unsigned()?).ok()?))
}

fn field(
    c: &mut Cursor<'_>,
    s: &mut GpuSample,
    k: usize,
    has_t: &mut bool,
    has_gpu: &mut bool,
) -> Option<()> {
    match k {
        0 => {
            s.t = c.time()?;
            *has_t = true;
        }
        1 => {
            s.gpu = u32::try_from(c.unsigned()?).ok()?;
            *has_gpu = true;
        }
        2 => {
            s.uuid = if c.null() { None } else { Some(c.string()?.to_owned()) };
        }
        3 => s.sm_clock_mhz = opt(c)?,
        4 => s.graphics_clock_mhz = opt(c)?,
        5 => s.mem_clock_mhz = opt(c)?,
        6 => s.max_sm_clock_mhz = opt(c)?,
        7 => s.power_mw = opt(c)?,
        8 => s.power_limit_mw = opt(c)?,
        9 => s.util_gpu_pct = opt(c)?,
        10 => s.util_mem_pct = opt(c)?,
        11 => s.mem_used_bytes = opt(c)?,
        12 => s.mem_total_bytes = opt(c)?,
        13 => s.temp_c = opt(c)?,
        14 => s.pstate = opt(c)?,
        15 => s.clock_event_reasons = opt(c)?,
        16 => s.violation_power_ns = opt(c)?,
        17 => s.violation_thermal_ns = opt(c)?,
        18 => s.ecc_uncorrected = opt(c)?,
        19 => s.pcie_tx_kbps = opt(c)?,
        20 => s.pcie_rx_kbps = opt(c)?,
        // `xid`: only the empty list; events go to serde.
        _ => {
            c.eat(b'[')?;
            c.eat(b']')?;
        }
    }
    Some(())
}

/// An unknown field's value when it is a number, a plain string, `true`, `false` or `null`.
fn skip_plain(c: &mut Cursor<'_>) -> Option<()> {
    match c.peek()? {
        b'"' => c.string().map(|_| ()),
        b'0'..=b'9' => c.unsigned().map(|_| ()),
        _ if c.null() => Some(()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use triage_base::fixture;

    fn same(line: &str) {
        let fast = fast(line);
        let serde: Result<GpuSample, _> = serde_json::from_str(line);
        if let Some(f) = fast {
            let s = serde.unwrap_or_else(|e| panic!("fast read {line:?}, serde refused: {e}"));
            assert_eq!(f, s, "{line}");
            assert_eq!(f.t.to_bits(), s.t.to_bits(), "{line}");
        }
        assert_eq!(
            parse_sample(line).map_err(|e| e.to_string()),
            serde_json::from_str::<GpuSample>(line).map_err(|e| e.to_string()),
            "{line}"
        );
    }

    /// Every line of the recordings reads the same both ways, and the fast path takes them all.
    #[test]
    fn the_recordings_read_as_serde_reads_them() {
        for text in [fixture!("nvml/h200_series.jsonl"), fixture!("nvml/h200x8_one_slow.jsonl")] {
            for line in text.lines().skip(1) {
                assert!(fast(line).is_some(), "{line}");
                same(line);
            }
        }
    }

    /// Lines the fast path must hand to serde, or read exactly as serde does.
    #[test]
    fn odd_lines_read_as_serde_reads_them() {
        for line in [
            r#"{"t": 1.5, "gpu": 0}"#,
            r#"{"gpu": 0, "t": 12}"#,
            r#"{"t": 1795991686.2339261, "gpu": 0}"#,
            r#"{"t": 1795991686.233926123456, "gpu": 0}"#,
            r#"{"t": 1.7e9, "gpu": 0}"#,
            r#"{"t": -1.5, "gpu": 0}"#,
            r#"{"t": 01.5, "gpu": 0}"#,
            r#"{"t": 1., "gpu": 0}"#,
            r#"{"t": .5, "gpu": 0}"#,
            r#"{"t": 1.5, "gpu": 0, "gpu": 1}"#,
            r#"{"t": 1.5}"#,
            r#"{"t": 1.5, "gpu": -1}"#,
            r#"{"t": 1.5, "gpu": 4294967296}"#,
            r#"{"t": 1.5, "gpu": 0, "sm_clock_mhz": null}"#,
            r#"{"t": 1.5, "gpu": 0, "sm_clock_mhz": 1.0}"#,
            r#"{"t": 1.5, "gpu": 0, "sm_clock_mhz": 99999999999}"#,
            r#"{"t": 1.5, "gpu": 0, "uuid": "GPU-\u0041"}"#,
            r#"{"t": 1.5, "gpu": 0, "uuid": "GPU-ä"}"#,
            r#"{"t": 1.5, "gpu": 0, "uuid": null}"#,
            r#"{"t": 1.5, "gpu": 0, "xid": []}"#,
            r#"{"t": 1.5, "gpu": 0, "xid": [{"t": 1.5, "code": 79}]}"#,
            r#"{"t": 1.5, "gpu": 0, "extra": "x", "more": 3, "none": null}"#,
            r#"{"t": 1.5, "gpu": 0, "nested": {"a": 1}}"#,
            r#"{"t": 1.5, "gpu": 0} trailing"#,
            r#"{"t": 1.5, "gpu": 0,}"#,
            r#"{"t":1.5,"gpu":0}"#,
            "{\"t\": 1.5, \"gpu\": 0, \"uuid\": \"a\tb\"}",
            r#"{}"#,
            r#"{"t": 1.5 "gpu": 0}"#,
            r#"{"t": 1.5, "gpu": 0, "pstate": nul}"#,
            r#"{"t": 1.5, "gpu": 0, "pstate": nullx}"#,
        ] {
            same(line);
        }
    }

    #[test]
    fn the_keys_in_order_are_the_field_numbers() {
        for (k, key) in KEYS.iter().enumerate() {
            assert_eq!(field_number(key.trim_matches('"')), Some(k), "{key}");
        }
    }
}
