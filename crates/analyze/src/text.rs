//! Small text helpers shared by the parsers: ANSI stripping, number scanning, field lookup.

use std::borrow::Cow;

pub(crate) use triage_base::finder;
pub use triage_base::safe::{quote, quote_redacted};

/// One line of text in both languages: (English, Chinese).
pub(crate) type Both = (&'static str, &'static str);

/// Remove ANSI escape sequences (colours in terminal logs). Borrowed when there are none.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if memchr::memchr(0x1b, s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // CSI: parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The number that follows `key` in `line` (e.g. `after(line, "Running: ")` → 14.0 for
/// `Running: 14 reqs`). Accepts thousands separators (`447,088`) and a sign.
pub fn number_after(line: &str, key: &str) -> Option<f64> {
    let start = line.find(key)? + key.len();
    leading_number(&line[start..])
}

/// The number at the start of `s` (after spaces), with `,` thousands separators allowed.
pub fn leading_number(s: &str) -> Option<f64> {
    let s = s.trim_start();
    if let Some(v) = plain_decimal(s.as_bytes()) {
        return Some(v);
    }
    let b = s.as_bytes();
    let mut end = 0;
    let mut commas = false;
    while end < b.len() {
        match b[end] {
            b'0'..=b'9' | b'.' | b'e' | b'E' => {}
            b'-' | b'+' if end == 0 || matches!(b[end - 1], b'e' | b'E') => {}
            b',' if end > 0 && b.get(end + 1).is_some_and(u8::is_ascii_digit) => commas = true,
            _ => break,
        }
        end += 1;
    }
    let text = s[..end].trim_end_matches(['.', 'e', 'E', '-', '+']);
    let parsed = if commas { text.replace(',', "").parse() } else { text.parse() };
    parsed.ok().filter(|v: &f64| v.is_finite())
}

/// The common case of [`leading_number`], without the float parser: up to 15 digits with an
/// optional fraction, ended by a byte that cannot continue a number. The result is the one
/// `str::parse` gives: both the digits (below 2^53) and the power of ten (≤ 10^15) are exact
/// in an f64, and IEEE division rounds correctly.
fn plain_decimal(b: &[u8]) -> Option<f64> {
    let (mut mantissa, mut digits, mut scale, mut i) = (0u64, 0u32, 0i32, 0usize);
    let mut dot = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                digits += 1;
                if dot {
                    scale += 1;
                }
            }
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    let ends = match b.get(i) {
        None => true,
        // What leading_number would read on: an exponent, a thousands separator, a sign.
        Some(c) => !matches!(c, b'e' | b'E' | b',' | b'-' | b'+' | b'.'),
    };
    if digits == 0 || digits > 15 || !ends || (dot && scale == 0) {
        return None;
    }
    Some(mantissa as f64 / 10f64.powi(scale))
}

/// Gin's access line (`[GIN] 2025/09/22 - 14:01:10 | 500 |  30.001221904s | 10.0.0.9 | POST
/// "/api/chat"`): the status, and the latency field as printed.
pub(crate) fn gin_fields(line: &str) -> Option<(u16, Option<&str>)> {
    let (_, rest) = line.split_once("[GIN] ")?;
    let mut fields = rest.split('|').skip(1);
    let status = fields.next()?.trim().parse().ok()?;
    Some((status, fields.next().map(str::trim)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_read_as_the_float_parser_reads_them() {
        for text in
            ["0", "7", "12.5", "1234.56", "0.1", "99.99", "123456789012345", "3.141592653589", "40.5 %"]
        {
            let word = text.split(' ').next().unwrap();
            assert_eq!(leading_number(text), word.parse::<f64>().ok(), "{text}");
        }
        // Left to the general path: separators, exponents, signs, a trailing dot, long numbers.
        assert_eq!(leading_number("1,234.5 tokens"), Some(1234.5));
        assert_eq!(leading_number("1e3"), Some(1000.0));
        assert_eq!(leading_number("-2.31 GiB"), Some(-2.31));
        assert_eq!(leading_number("5. reqs"), Some(5.0));
        assert_eq!(leading_number("12345678901234567890"), Some(12345678901234567890.0));
        assert_eq!(plain_decimal(b"5."), None);
    }

    #[test]
    fn ansi() {
        assert_eq!(strip_ansi("\x1b[32mINFO\x1b[0m ok"), "INFO ok");
        assert_eq!(strip_ansi("plain"), "plain");
        assert_eq!(strip_ansi("\x1b"), "");
    }

    #[test]
    fn numbers() {
        assert_eq!(number_after("Running: 14 reqs", "Running: "), Some(14.0));
        assert_eq!(number_after("GPU KV cache size: 447,088 tokens", "size: "), Some(447_088.0));
        assert_eq!(number_after("usage: 76.5%,", "usage: "), Some(76.5));
        assert_eq!(number_after("x: -3.5e2 y", "x: "), Some(-350.0));
        assert_eq!(number_after("x: 1,2", "x: "), Some(12.0));
        assert_eq!(number_after("x: abc", "x: "), None);
        assert_eq!(number_after("took 14.9888 GiB.", "took "), Some(14.9888));
        assert_eq!(leading_number("13.64x"), Some(13.64));
    }
}
