//! Byte units, exact decimal figures and their rounding: logs print `54.62 GiB`, we count bytes.
//!
//! Everything is integer arithmetic so that the same input gives the same output everywhere
//! (native, wasm32). A figure printed with two decimals stands for a *range* of byte counts —
//! [`Size::bytes_range`] — and the reconciler compares against that range, not a point.

use crate::KvError;
use serde::Serialize;

/// Bytes in a kibibyte (2^10).
pub const KIB: u64 = 1 << 10;
/// Bytes in a mebibyte (2^20).
pub const MIB: u64 = 1 << 20;
/// Bytes in a gibibyte (2^30).
pub const GIB: u64 = 1 << 30;
/// Decimal gigabyte (10^9 bytes), the article's unit ("137.4 GB").
pub const GB: u64 = 1_000_000_000;

/// A non-negative decimal number exactly as printed: `digits / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decimal {
    /// The number's digits, without the decimal point.
    pub digits: u64,
    /// How many of them follow the decimal point.
    pub scale: u8,
}

impl Decimal {
    /// Parse a leading decimal number (`54.62`, `447,088`, `0.9`) from `s`. Thousands commas
    /// are accepted only between digit groups of three. Returns the number and the bytes used.
    pub fn parse_prefix(s: &str) -> Option<(Decimal, usize)> {
        let b = s.as_bytes();
        let mut i = 0;
        let mut digits: u64 = 0;
        let mut scale: u8 = 0;
        let mut seen_digit = false;
        let mut in_fraction = false;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                if scale >= 18 {
                    // Further fractional digits cannot change a log figure we care about.
                    i += 1;
                    continue;
                }
                digits = digits.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                if in_fraction {
                    scale += 1;
                }
                seen_digit = true;
            } else if c == b',' && seen_digit && !in_fraction {
                // `447,088`: a comma must be followed by exactly three digits.
                let three = b.get(i + 1..i + 4).is_some_and(|g| g.iter().all(u8::is_ascii_digit));
                if !three || b.get(i + 4).is_some_and(u8::is_ascii_digit) {
                    break;
                }
            } else if c == b'.' && !in_fraction && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                in_fraction = true;
            } else {
                break;
            }
            i += 1;
        }
        seen_digit.then_some((Decimal { digits, scale }, i))
    }

    /// Parse a whole string as a decimal (surrounding spaces allowed).
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        match Decimal::parse_prefix(s) {
            Some((d, n)) if n == s.len() => Some(d),
            _ => None,
        }
    }

    fn pow10(&self) -> u128 {
        10u128.pow(u32::from(self.scale))
    }

    /// `self × unit`, rounded to the nearest integer (half up).
    pub fn times_round(&self, unit: u64) -> u64 {
        let p = self.pow10();
        let v = (u128::from(self.digits) * u128::from(unit) * 2 + p) / (2 * p);
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    /// `self × unit`, rounded down.
    pub fn times_floor(&self, unit: u64) -> u64 {
        let v = u128::from(self.digits) * u128::from(unit) / self.pow10();
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    /// The interval of true values `x` that print as `self` at this scale, times `unit`:
    /// `[(digits − ½)·unit/10^scale, (digits + ½)·unit/10^scale]`, as whole units (inner bounds).
    pub fn range_times(&self, unit: u64) -> (u64, u64) {
        let p2 = 2 * self.pow10();
        let d2 = 2 * u128::from(self.digits);
        let u = u128::from(unit);
        let lo = (d2.saturating_sub(1) * u).div_ceil(p2);
        // A figure finer than one unit holds no whole unit: collapse to the lower bound.
        let hi = (((d2 + 1) * u) / p2).max(lo);
        (u64::try_from(lo).unwrap_or(u64::MAX), u64::try_from(hi).unwrap_or(u64::MAX))
    }

    /// The same number written with at least `scale` decimals (`20.0` → `20.00`), for figures
    /// known to be rounded to that many decimals even when printed with fewer.
    pub fn with_min_scale(self, scale: u8) -> Decimal {
        let mut d = self;
        while d.scale < scale {
            match d.digits.checked_mul(10) {
                Some(v) => {
                    d.digits = v;
                    d.scale += 1;
                }
                None => break,
            }
        }
        d
    }

    /// As an `f64`, for display only.
    pub fn as_f64(&self) -> f64 {
        self.digits as f64 / self.pow10() as f64
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.scale == 0 {
            return write!(f, "{}", self.digits);
        }
        let p = 10u64.pow(u32::from(self.scale));
        write!(f, "{}.{:0w$}", self.digits / p, self.digits % p, w = usize::from(self.scale))
    }
}

/// A byte unit as printed in a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SizeUnit {
    /// Gibibytes (2^30 bytes).
    #[serde(rename = "GiB")]
    Gib,
    /// Engines print `GB` for either 10^9 or 2^30 bytes. SGLang's `K size: … GB` divides by
    /// 2^30 (its memory pool defines `GB = 1024 ** 3`, from memory of the source): the parser
    /// records what was printed, and [`SizeUnit::bytes`] treats `GB` as 2^30 only when told.
    #[serde(rename = "GB")]
    Gb,
    /// Mebibytes (2^20 bytes).
    #[serde(rename = "MiB")]
    Mib,
    /// Megabytes (10^6 bytes).
    #[serde(rename = "MB")]
    Mb,
}

impl SizeUnit {
    /// Bytes per unit. `binary_gb` says whether `GB` means 2^30 (SGLang) or 10^9.
    pub fn bytes(self, binary_gb: bool) -> u64 {
        match self {
            SizeUnit::Gib => GIB,
            SizeUnit::Gb if binary_gb => GIB,
            SizeUnit::Gb => GB,
            SizeUnit::Mib => MIB,
            SizeUnit::Mb => 1_000_000,
        }
    }

    /// The unit as printed (`GiB`, `GB`, `MiB`, `MB`).
    pub fn as_str(self) -> &'static str {
        match self {
            SizeUnit::Gib => "GiB",
            SizeUnit::Gb => "GB",
            SizeUnit::Mib => "MiB",
            SizeUnit::Mb => "MB",
        }
    }
}

/// A memory size exactly as a log printed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Size {
    /// The number as printed.
    pub value: Decimal,
    /// The unit as printed.
    pub unit: SizeUnit,
}

impl Size {
    /// Parse `54.62 GiB`, `54.62GiB`, `12.74 GB` at the start of `s`.
    pub fn parse_prefix(s: &str) -> Option<(Size, usize)> {
        let (value, n) = Decimal::parse_prefix(s)?;
        let rest = &s[n..];
        let trimmed = rest.trim_start();
        let skipped = rest.len() - trimmed.len();
        for (text, unit) in
            [("GiB", SizeUnit::Gib), ("GB", SizeUnit::Gb), ("MiB", SizeUnit::Mib), ("MB", SizeUnit::Mb)]
        {
            if trimmed.starts_with(text) {
                return Some((Size { value, unit }, n + skipped + text.len()));
            }
        }
        None
    }

    /// Nearest byte count.
    pub fn bytes(&self, binary_gb: bool) -> u64 {
        self.value.times_round(self.unit.bytes(binary_gb))
    }

    /// Every byte count that prints as this figure.
    pub fn bytes_range(&self, binary_gb: bool) -> (u64, u64) {
        self.value.range_times(self.unit.bytes(binary_gb))
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.value, self.unit.as_str())
    }
}

/// Parse a user-given size in GiB (`54.62`, `80`), exactly, rounded down to whole bytes.
/// Negative, non-numeric and absurd (> 1 PiB) values are rejected, naming `field`.
pub fn parse_gib(field: &str, s: &str) -> Result<u64, KvError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(KvError::invalid(field, t, "memory cannot be negative"));
    }
    let d = Decimal::parse(t.strip_prefix('+').unwrap_or(t))
        .ok_or_else(|| KvError::invalid(field, format!("{t:?}"), "expected a number of GiB, e.g. 54.62"))?;
    let bytes = d.times_floor(GIB);
    if bytes > (1 << 50) {
        return Err(KvError::invalid(field, t, "more than 1 PiB of memory on one GPU is not plausible"));
    }
    Ok(bytes)
}

/// Parse a fraction in (0, 1] (`0.9`) as parts per million.
pub fn parse_fraction_ppm(field: &str, s: &str) -> Result<u32, KvError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(KvError::invalid(field, t, "must be a fraction in (0, 1], e.g. 0.9"));
    }
    let d =
        Decimal::parse(t).ok_or_else(|| KvError::invalid(field, format!("{t:?}"), "expected e.g. 0.9"))?;
    let ppm = d.times_round(1_000_000);
    if ppm == 0 || ppm > 1_000_000 {
        return Err(KvError::invalid(field, t, "must be a fraction in (0, 1], e.g. 0.9"));
    }
    u32::try_from(ppm).map_err(|_| KvError::invalid(field, t, "must be a fraction in (0, 1]"))
}

/// `bytes` in GiB with two decimals, rounded half up: `54.58 GiB`.
pub fn fmt_gib(bytes: u64) -> String {
    let centi = (u128::from(bytes) * 200 + u128::from(GIB)) / (2 * u128::from(GIB));
    format!("{}.{:02} GiB", centi / 100, centi % 100)
}

/// `bytes` in MiB with one decimal: `38.0 MiB`.
pub fn fmt_mib(bytes: u64) -> String {
    let deci = (u128::from(bytes) * 20 + u128::from(MIB)) / (2 * u128::from(MIB));
    format!("{}.{} MiB", deci / 10, deci % 10)
}

/// `bytes` in decimal GB with one decimal, rounded half up: `137.4 GB` (the article's unit).
pub fn fmt_gb(bytes: u64) -> String {
    let deci = (u128::from(bytes) * 20 + u128::from(GB)) / (2 * u128::from(GB));
    format!("{}.{} GB", deci / 10, deci % 10)
}

/// A size the way a person reads it: MiB below 1 GiB, GiB above.
pub fn fmt_size(bytes: u64) -> String {
    if bytes < GIB { fmt_mib(bytes) } else { fmt_gib(bytes) }
}

/// `447088` → `447,088`.
pub fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Parts per million as a decimal fraction: `900000` → `0.9`.
pub fn fmt_ppm(ppm: u32) -> String {
    let s = format!("{}.{:06}", ppm / 1_000_000, ppm % 1_000_000);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Hundredths as `13.64`.
pub fn fmt_centi(centi: u64) -> String {
    format!("{}.{:02}", centi / 100, centi % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_as_printed() {
        assert_eq!(Decimal::parse_prefix("54.62 GiB"), Some((Decimal { digits: 5462, scale: 2 }, 5)));
        assert_eq!(Decimal::parse_prefix("447,088 tokens"), Some((Decimal { digits: 447_088, scale: 0 }, 7)));
        assert_eq!(Decimal::parse_prefix("32,768 tokens"), Some((Decimal { digits: 32_768, scale: 0 }, 6)));
        // A comma that is a list separator, not a thousands separator.
        assert_eq!(Decimal::parse_prefix("715, # CPU"), Some((Decimal { digits: 715, scale: 0 }, 3)));
        assert_eq!(Decimal::parse_prefix("13.64x"), Some((Decimal { digits: 1364, scale: 2 }, 5)));
        assert_eq!(Decimal::parse_prefix("7."), Some((Decimal { digits: 7, scale: 0 }, 1)));
        assert_eq!(Decimal::parse_prefix("715,"), Some((Decimal { digits: 715, scale: 0 }, 3)));
        assert_eq!(Decimal::parse_prefix("1,00"), Some((Decimal { digits: 1, scale: 0 }, 1)));
        assert_eq!(Decimal::parse_prefix("x"), None);
        assert_eq!(Decimal::parse_prefix("99999999999999999999999"), None);
        assert_eq!(Decimal::parse("0.90").map(|d| d.to_string()), Some("0.90".into()));
    }

    #[test]
    fn a_printed_figure_is_a_range() {
        let (s, _) = Size::parse_prefix("54.62 GiB").unwrap();
        let (lo, hi) = s.bytes_range(false);
        // 54.615 GiB .. 54.625 GiB.
        assert_eq!(lo, 58_642_409_718);
        assert_eq!(hi, 58_653_147_136);
        assert_eq!(s.bytes(false), 58_647_778_427);
        let (s, n) = Size::parse_prefix("12.74 GB, V size").unwrap();
        assert_eq!((s.unit, n), (SizeUnit::Gb, 8));
        assert_eq!(s.bytes(true), 13_679_470_838);
        assert_eq!(s.bytes(false), 12_740_000_000);
        assert_eq!(
            Size::parse_prefix("0.18GiB;").map(|(s, n)| (s.to_string(), n)),
            Some(("0.18 GiB".into(), 7))
        );
        // Finer than a byte: an empty interval collapses instead of inverting.
        let (tiny, _) = Size::parse_prefix("0.000000000001 GiB").unwrap();
        let (lo, hi) = tiny.bytes_range(false);
        assert!(lo <= hi);
    }

    #[test]
    fn user_sizes_are_exact_and_checked() {
        assert_eq!(parse_gib("--available-kv-gib", "54.62"), Ok(58_647_778_426));
        assert_eq!(parse_gib("x", "1"), Ok(GIB));
        assert!(parse_gib("--available-kv-gib", "-3").unwrap_err().to_string().contains("negative"));
        assert!(parse_gib("x", "lots").is_err());
        assert!(parse_gib("x", "99999999").is_err());
        assert_eq!(parse_fraction_ppm("u", "0.9"), Ok(900_000));
        assert!(parse_fraction_ppm("u", "1.5").is_err());
        assert!(parse_fraction_ppm("u", "0").is_err());
        assert!(parse_fraction_ppm("u", "-0.5").is_err());
    }

    #[test]
    fn formatting_rounds_half_up() {
        assert_eq!(fmt_gib(58_601_078_784), "54.58 GiB");
        assert_eq!(fmt_gb(137_438_953_472), "137.4 GB");
        assert_eq!(fmt_int(447_088), "447,088");
        assert_eq!(fmt_int(0), "0");
        assert_eq!(fmt_int(1_000), "1,000");
        assert_eq!(fmt_ppm(900_000), "0.9");
        assert_eq!(fmt_ppm(1_000_000), "1");
        assert_eq!(fmt_centi(1364), "13.64");
        assert_eq!(fmt_mib(39_845_888), "38.0 MiB");
    }
}
