//! The one place `triage` writes for people: every byte passes through here.
//!
//! Text and Markdown are escaped with [`safe::escape_controls`] (a quoted log line or server
//! body can carry ESC, BEL, BS or C1 codes that would retitle, clear or recolour a terminal);
//! JSON with [`safe::escape_json_controls`], which keeps the value the same. Errors go to
//! stderr the same way. A usage error ([`UsageError`]) exits 2, as the help says.

use std::fmt;
use std::io::Write;

use triage_core::safe;

/// A mistake in how `triage` was called (a flag's value, a file that cannot be read): exit 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `Err(UsageError)` as an `anyhow` error.
pub fn usage<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(message.into()).into())
}

/// Is this error (anywhere in its chain) a usage error?
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<UsageError>().is_some())
}

/// Write text (or Markdown) to stdout, control characters escaped.
pub fn text(s: &str) -> std::io::Result<()> {
    write_all(&mut std::io::stdout().lock(), &safe::escape_controls(s))
}

/// Write serialised JSON to stdout, with the characters a terminal acts on written as `\u`
/// escapes (the same JSON value).
pub fn json(s: &str) -> std::io::Result<()> {
    write_all(&mut std::io::stdout().lock(), &safe::escape_json_controls(s))
}

fn write_all(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// `triage: error: …` on stderr, escaped.
pub fn error(message: impl fmt::Display) {
    eprintln!("triage: error: {}", safe::escape_controls(&message.to_string()));
}

/// A note on stderr, escaped.
pub fn note(message: impl fmt::Display) {
    eprintln!("{}", safe::escape_controls(&message.to_string()));
}
