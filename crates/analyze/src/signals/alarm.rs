//! Is a line an alarm: log levels, tracebacks, exception lines, panics, JSON error bodies, 5xx
//! access lines — and the lines that show work done.

use super::*;

/// Why a line is an alarm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Alarm {
    /// `ERROR` / `CRITICAL` / `FATAL` level, glog `E1203`, `[E …]`.
    Level,
    /// `Traceback (most recent call last):`.
    TracebackHead,
    /// `SomeError: message` (also a bare `SomeError` at the end of a traceback).
    Exception,
    /// Rust `panicked at`, `Error: …` exits.
    Exit,
    /// `{"object":"error"…}`, `{"error":{…}}`.
    JsonError,
    /// An access line answering 5xx.
    ServerError,
    /// A capacity figure at or below zero.
    Capacity,
}

/// Is this line (prefixes already stripped) an alarm? Cheap: most lines are rejected by their
/// first bytes.
pub fn alarm(t: &str, line: &str) -> Option<Alarm> {
    let scan = scan(line);
    alarm_of(shape_alarm(t, &scan), status_of(line, &scan), &scan)
}

/// The alarm a line's shape makes, digits aside: levels, tracebacks, exceptions, exits, JSON
/// error bodies, the driver's and Kubernetes' death notices.
pub(super) fn shape_alarm(t: &str, scan: &Scan) -> Option<Alarm> {
    let t = t.trim_start();
    let level = level_word(t);
    if level && exception_line(message(t)) {
        return Some(Alarm::Exception);
    }
    if level {
        return Some(Alarm::Level);
    }
    if t.starts_with("Traceback (most recent call last)") {
        return Some(Alarm::TracebackHead);
    }
    if exception_line(t) {
        return Some(Alarm::Exception);
    }
    if t.starts_with("Error: ")
        || t.starts_with("error: ")
        || t.starts_with("curl: (")
        // GGML's fatal lines (llama.cpp, Ollama): `CUDA error: …` then the abort.
        || t.starts_with("CUDA error: ")
        || t.starts_with("GGML_ASSERT(")
        || scan.aux & aux::PANIC != 0
    {
        return Some(Alarm::Exit);
    }
    if scan.aux & aux::JSON_ERROR != 0 {
        return Some(Alarm::JsonError);
    }
    // The driver's Xid events, a GPU nvidia-smi cannot reach, Kubernetes' words for a container
    // that died (`Reason: OOMKilled`, `CrashLoopBackOff`).
    if scan.aux & aux::DEATH != 0 || t.starts_with("Unable to determine the device handle") {
        return Some(Alarm::Exit);
    }
    None
}

/// The shape's alarm, else the ones its digits make: an access line answering 5xx, a capacity
/// figure at or below zero.
pub(super) fn alarm_of(shape: Option<Alarm>, status: Option<u16>, scan: &Scan) -> Option<Alarm> {
    if shape.is_some() {
        return shape;
    }
    if status.is_some_and(|c| (500..600).contains(&c)) {
        return Some(Alarm::ServerError);
    }
    if scan.signals.iter().any(|&i| SIGNALS[i].needles[0] == CAPACITY_SIGNAL) {
        return Some(Alarm::Capacity);
    }
    if scan.signals.iter().any(|&i| ALARM_SIGNALS.contains(&SIGNALS[i].id)) {
        return Some(Alarm::Level);
    }
    None
}

/// Known errors printed without an error level or an exception's shape: llama.cpp's decode
/// failures (`decode: Compute error. off = 0, n_batch = 512, ret = -3`).
pub(super) const ALARM_SIGNALS: &[&str] = &["llama-cpp-compute-error", "llama-cpp-graph-compute-failed"];

/// A level word among the first fields: `ERROR 05-12 …` (vLLM), `ERROR:root:` (Python's
/// default), `2025-… - vllm - ERROR - …`, `| ERROR |` (loguru), `level=error`, `[E …]` / `E1203`
/// (glog, PyTorch's C++ logs), `"level":"ERROR"`.
pub(super) fn level_word(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() > 5 && b[0] == b'E' && b[1..5].iter().all(u8::is_ascii_digit) && b[5] == b' ' {
        return true;
    }
    if t.starts_with("[E ") || t.starts_with("[E] ") {
        return true;
    }
    if let Some(g) = t.strip_prefix('[')
        && g.len() > 5
        && g.as_bytes()[0] == b'E'
        && g.as_bytes()[1..5].iter().all(u8::is_ascii_digit)
    {
        return true;
    }
    for word in t.split_ascii_whitespace().take(5) {
        let w = word.trim_matches(|c: char| matches!(c, '[' | ']' | '|' | '-' | ':' | ',' | '(' | ')'));
        let w = w.split(':').next().unwrap_or(w);
        if matches!(w, "ERROR" | "CRITICAL" | "FATAL" | "level=error" | "level=fatal" | "level=critical") {
            return true;
        }
    }
    t.contains("\"level\":\"ERROR\"")
        || t.contains("\"level\":\"error\"")
        || t.contains("\"level\": \"error\"")
}

/// The message of a logged line: what follows the logger's `[file.py:123] ` location, if any.
pub(super) fn message(t: &str) -> &str {
    match t.find("] ") {
        Some(i) if i < 100 => &t[i + 2..],
        _ => t,
    }
}

/// `RuntimeError: …`, `torch.OutOfMemoryError: …`, `ray.exceptions.RayActorError: …`, a bare
/// `asyncio.exceptions.CancelledError`. Not warnings.
pub(super) fn exception_line(t: &str) -> bool {
    let end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(t.len());
    if end == 0 {
        return false;
    }
    let name = &t[..end];
    let rest = &t[end..];
    let named = ["Error", "Exception", "Exit", "Interrupt", "Failure", "Timeout", "Fault"]
        .iter()
        .any(|w| name.ends_with(w))
        && name.as_bytes()[0].is_ascii_alphabetic();
    named && (rest.is_empty() || rest.starts_with(':') || rest.starts_with("(\""))
}

/// The status of an access line: `"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error`.
pub(super) fn status_of(line: &str, scan: &Scan) -> Option<u16> {
    if scan.aux & aux::GIN != 0 {
        return crate::text::gin_fields(line).map(|(status, _)| status);
    }
    if scan.aux & aux::HTTP == 0 {
        return None;
    }
    let b = line.as_bytes();
    // Mostly the last quote closes the request (`… HTTP/1.1" 200 OK`): look there first.
    let close = match memchr::memrchr(b'"', b) {
        Some(q) if b[q.saturating_sub(10)..q].windows(7).any(|w| w == b" HTTP/1") => q,
        _ => {
            let i = finder!(" HTTP/1.").find(b)?;
            i + memchr::memchr(b'"', &b[i..])?
        }
    };
    line[close + 1..].split_ascii_whitespace().next().and_then(|c| c.parse::<u16>().ok())
}

/// An access line of an API call that answered 2xx: uvicorn's `"POST /v1/chat/completions
/// HTTP/1.1" 200 OK`, Ray Serve's `POST /v1/chat/completions 200 1840.2ms`.
pub(super) fn ok_response(line: &str) -> bool {
    let b = line.as_bytes();
    let Some(i) = finder!("POST /v1/").find(b).or_else(|| finder!("POST /generate").find(b)) else {
        return false;
    };
    // Past the method and the path (and `HTTP/1.1"` when there is one), the first word is the
    // status.
    let after_path = line[i + 5..].split_once(' ').map_or("", |(_, r)| r);
    let rest = if after_path.starts_with("HTTP/") {
        after_path.split_once(' ').map_or("", |(_, r)| r)
    } else {
        after_path
    };
    rest.split_whitespace()
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .is_some_and(|c| (200..300).contains(&c))
}

/// A line that shows a request served: llama.cpp's `eval time = … ms / N tokens` with N > 0,
/// `ollama run --verbose`'s `eval rate: X tokens/s` with X > 0, llama-server's access line
/// `request: POST /v1/chat/completions 10.0.0.2 200`.
pub(super) fn work_done(line: &str) -> bool {
    if let Some(i) = line.find("eval time =") {
        return number_after(&line[i..], "ms /").is_some_and(|n| n > 0.0);
    }
    if line.contains("eval rate:") {
        return number_after(line, "eval rate:").is_some_and(|n| n > 0.0);
    }
    line.contains("request: POST ")
        && line
            .split_ascii_whitespace()
            .last()
            .and_then(|c| c.parse::<u16>().ok())
            .is_some_and(|c| (200..300).contains(&c))
}

/// A line that continues an open block: a traceback frame or code line, a caret line, a chained
/// exception's connecting sentence.
pub(super) fn continues(t: &str) -> bool {
    let u = t.trim_start();
    t.starts_with("  ")
        || t.starts_with('\t')
        || u.starts_with("File \"")
        || u.starts_with('^')
        || u.starts_with('~')
        || u.starts_with("During handling of the above exception")
        || u.starts_with("The above exception was the direct cause")
}
