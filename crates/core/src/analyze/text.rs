//! Small text helpers shared by the parsers: ANSI stripping, number scanning, field lookup.

use std::borrow::Cow;

/// Remove ANSI escape sequences (colours in terminal logs). Borrowed when there are none.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.contains('\x1b') {
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

/// Shorten a line for quoting as evidence.
pub fn quote(line: &str) -> String {
    const MAX: usize = 300;
    let t = line.trim();
    if t.len() <= MAX {
        return t.to_owned();
    }
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
