//! The runner's output points. Everything it writes for a person or a log reader passes here,
//! so text from outside — an engine's answer, a plugin's finding or trap message, a file name,
//! a line of a file — can never drive a terminal: control characters are written as escapes
//! (`triage_core::safe`), and one-line messages stay one line.

use std::borrow::Cow;
use std::io::Write;

use serde::Serialize;
use triage_core::safe;

/// `s` made safe for a terminal as one line: control characters escaped, line breaks written
/// as `\n` (so a quoted string cannot forge a line of its own).
pub fn line(s: &str) -> Cow<'_, str> {
    match safe::escape_controls(s) {
        Cow::Borrowed(b) if !b.contains('\n') => Cow::Borrowed(b),
        other => Cow::Owned(other.replace('\n', "\\n")),
    }
}

/// `s` made safe for a terminal, line breaks kept (a page: the exposition, a pretty report).
pub fn block(s: &str) -> Cow<'_, str> {
    safe::escape_controls(s)
}

/// `value` as one line of JSON, with the characters a terminal acts on escaped in a way JSON
/// readers decode back to the same value.
pub fn json_line(value: &impl Serialize) -> serde_json::Result<String> {
    serde_json::to_string(value).map(|j| safe::escape_json_controls(&j).into_owned())
}

/// [`json_line`], pretty-printed.
pub fn json_pretty(value: &impl Serialize) -> serde_json::Result<String> {
    serde_json::to_string_pretty(value).map(|j| safe::escape_json_controls(&j).into_owned())
}

/// A message on stderr, `triage-runner: ` first, as one safe line.
pub fn say(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "triage-runner: {}", line(msg));
}

/// [`say`] with `format!` arguments.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::out::say(&format!($($arg)*)) };
}

/// A one-line message from outside, fit for quoting: credentials redacted, then cut to
/// `max_chars`, then whitespace runs (line breaks included) made one space.
pub fn quote(s: &str, max_chars: usize) -> String {
    let redacted = safe::redact(s);
    let one: String = redacted.split_whitespace().collect::<Vec<_>>().join(" ");
    safe::cut(&one, max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_escaped_and_lines_stay_lines() {
        let evil = "ok \x1b]0;pwned\x07 \u{9b}31m\nforged line";
        let l = line(evil);
        assert!(
            !l.contains('\x1b') && !l.contains('\x07') && !l.contains('\u{9b}') && !l.contains('\n'),
            "{l}"
        );
        assert!(l.contains("\\x1b]0;pwned\\x07") && l.contains("\\u009b"), "{l}");
        assert_eq!(line("plain"), "plain");
        let j = json_line(&serde_json::json!({ "title": evil })).unwrap();
        assert!(!j.contains('\u{9b}') && !j.contains('\x1b'), "{j}");
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back["title"], evil, "the value is unchanged");
    }

    #[test]
    fn quotes_are_redacted_before_they_are_cut() {
        let q = quote("failed: Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz0123", 40);
        assert!(!q.contains("abcdef"), "{q}");
        assert!(q.chars().count() <= 41, "{q}");
    }
}
