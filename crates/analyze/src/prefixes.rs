//! The prefixes log collectors and multi-process engines put before an engine's message —
//! container timestamps, `[rank0]:`, `(EngineCore_0 pid=12)`, SGLang's `[2025-03-04 10:00:01
//! TP0] ` — removed for the line scan (`signals/`) and the parsers' `bare` line. (The damage a
//! paste adds on top — markdown, journald, compose — is `normalize.rs`'s.)

/// Remove what log collectors and multi-process engines put before a message: container
/// timestamps (`2025-03-04T10:00:01.123Z `), `[rank0]:`, `(EngineCore_0 pid=12)`,
/// `(VllmWorker rank=1 pid=9)`, SGLang's `[2025-03-04 10:00:01 TP0] `. Leading spaces of the
/// message itself are kept (a traceback's frame lines are indented).
pub fn strip_prefixes(line: &str) -> &str {
    let mut s = line;
    loop {
        // Most lines start with a letter: no prefix, nothing to trim.
        if s.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic()) {
            return s;
        }
        let t = s.trim_start();
        if let Some(rest) = iso_stamp(t) {
            s = rest.strip_prefix(' ').unwrap_or(rest);
            continue;
        }
        let p = process_prefix(t);
        if p > 0 {
            s = &t[p..];
            continue;
        }
        if t.starts_with('[')
            && t.as_bytes().get(1..5).is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && t.as_bytes().get(5) == Some(&b'-')
            && let Some(end) = t.find(']')
        {
            s = t[end + 1..].strip_prefix(' ').unwrap_or(&t[end + 1..]);
            continue;
        }
        return if s.len() - t.len() > 0 && s.starts_with("  ") { s } else { t };
    }
}

/// The process or rank prefix a line starts with (`(APIServer pid=1) ` with its space,
/// `[rank0]:`): its length; 0 when there is none.
fn process_prefix(line: &str) -> usize {
    let b = line.as_bytes();
    match b.first() {
        Some(b'(') => match b.iter().position(|&c| c == b')') {
            Some(end) if has_pid(&b[..end]) => end + 1 + usize::from(b.get(end + 1) == Some(&b' ')),
            _ => 0,
        },
        Some(b'[') if line.starts_with("[rank") => match line[5..].find("]:") {
            Some(end) if line[5..5 + end].bytes().all(|c| c.is_ascii_digit()) => 5 + end + 2,
            _ => 0,
        },
        _ => 0,
    }
}

/// [`strip_prefixes`], remembering the process prefix of the last line: a multi-process log
/// repeats it on line after line, and comparing bytes costs less than parsing it again.
pub(crate) fn strip_remembered<'l>(prefix: &mut Vec<u8>, line: &'l str) -> &'l str {
    let p = if !prefix.is_empty() && line.as_bytes().starts_with(prefix) {
        prefix.len()
    } else {
        let p = process_prefix(line);
        prefix.clear();
        if p <= 64 {
            prefix.extend_from_slice(&line.as_bytes()[..p]);
        }
        p
    };
    strip_prefixes(&line[p..])
}

/// `pid=` in a short prefix (a plain loop: cheaper than a searcher on 20 bytes).
fn has_pid(b: &[u8]) -> bool {
    (3..b.len()).any(|i| b[i] == b'=' && &b[i - 3..i] == b"pid")
}

/// `2025-03-04T10:00:01.123456789Z` / `2025-03-04 10:00:01,123` at the start: the rest.
fn iso_stamp(t: &str) -> Option<&str> {
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if !(digits(0..4) && b.get(4) == Some(&b'-') && digits(5..7) && b.get(7) == Some(&b'-') && digits(8..10))
    {
        return None;
    }
    if !(matches!(b.get(10), Some(b'T' | b' ')) && digits(11..13) && b.get(13) == Some(&b':')) {
        return None;
    }
    let end = t[11..].find(|c: char| c.is_whitespace()).map_or(t.len(), |i| 11 + i);
    // Python logging's `,123` milliseconds are part of the first field already; a trailing
    // timezone word is not.
    Some(&t[end..])
}
