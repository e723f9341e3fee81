//! Failure lines, and the known messages that explain them.
//!
//! Two questions are asked of every line of every input, whatever section it is in:
//!
//! - **Is it an alarm?** A line that an engine or runtime marks as a failure: an `ERROR` /
//!   `CRITICAL` / `FATAL` log level, a `Traceback`, an `XyzError:` line, a Rust panic, an
//!   `Error:` exit, a JSON error body, an HTTP 5xx access line, a capacity figure at or below
//!   zero. Consecutive alarm lines and the traceback lines between them form one [`Block`].
//! - **Is it a known message?** [`SIGNALS`] lists the message templates the engines print (mined
//!   from their own source: `tests/data/catalogue/`), each with the rules that explain it. Rules
//!   read the hits ([`Signals::hits`]) instead of matching text themselves, so one table decides
//!   what a message means.
//!
//! After the rules ran, a block is *claimed* when a rule that fired cites one of its lines, or a
//! signal in it belongs to a rule that fired, or to [`BENIGN`]. Every other block is an error no
//! rule explains: the `unclaimed-error` finding quotes it, and the verdict cannot be HEALTHY.

use super::families::{Family, WORDS};
use super::heard::{ANNOUNCE_KEYS, CLIENT_KEYS, STATUS_KEYS, families_of_line};
pub use super::heard::{FamilyHits, Ports};
pub use super::prefixes::strip_prefixes;
pub(crate) use super::prefixes::strip_remembered;
use super::report::EvidenceLine;
use super::rules::Both;
use super::text::{finder, number_after, quote_redacted};
use crate::rules::RuleId;
use std::collections::BTreeMap;

/// The pseudo-rule of messages that look like failures but are not faults.
pub const BENIGN: RuleId = RuleId::Benign;
/// The rule of errors no other rule explains.
pub const UNCLAIMED: RuleId = RuleId::UnclaimedError;

/// A known message: every needle occurs in the line (the first one is searched for, the others
/// checked after). Needles are literal pieces of the template as the engine's source writes it.
#[derive(Clone, Copy, Debug)]
pub struct Signal {
    /// Stable name, e.g. `vllm-no-cache-blocks`.
    pub id: &'static str,
    /// Literal pieces of the message; the first is searched for, the rest must also occur.
    pub needles: &'static [&'static str],
    /// Rules that explain it (any one firing claims the line), or [`BENIGN`], or [`UNCLAIMED`]
    /// for errors that are known but name no cause by themselves.
    pub rules: &'static [RuleId],
    /// For [`UNCLAIMED`] signals: what to paste or run next, in both languages.
    pub next: Option<Both>,
}

pub use super::signal_table::SIGNALS;

/// The needle that [`scan`] reports for a capacity figure at or below zero.
pub const CAPACITY_SIGNAL: &str = "\u{0}capacity";

/// Capacity figures that must be positive: (key, the number follows it).
const CAPACITY_KEYS: &[&str] = &[
    "Available KV cache memory:",
    "GPU KV cache size:",
    "# GPU blocks:",
    "num_gpu_blocks=",
    "the rest of the memory reserved for KV Cache is",
    "max_total_num_tokens=",
    "KV Cache is allocated. #tokens:",
];

/// Substrings besides the signals' that one line's scan looks for, each a bit of [`Scan::aux`].
mod aux {
    pub const CAPACITY: u32 = 1 << 0;
    pub const JSON_ERROR: u32 = 1 << 1;
    pub const HTTP: u32 = 1 << 2;
    pub const DEATH: u32 = 1 << 3;
    pub const PANIC: u32 = 1 << 4;
    pub const POST: u32 = 1 << 5;
    pub const RATE: u32 = 1 << 6;
    pub const GIN: u32 = 1 << 7;
    pub const WORK: u32 = 1 << 8;
    pub const LLAMA: u32 = 1 << 9;
    pub const STATUS: u32 = 1 << 10;
    pub const ANNOUNCE: u32 = 1 << 11;
    pub const CLIENT: u32 = 1 << 12;
}

const AUX: &[(&str, u32)] = &[
    ("{\"object\":\"error\"", aux::JSON_ERROR),
    ("{\"object\": \"error\"", aux::JSON_ERROR),
    ("{\"error\":{", aux::JSON_ERROR),
    ("{\"error\": {", aux::JSON_ERROR),
    ("{\"type\":\"error\"", aux::JSON_ERROR),
    ("{\"type\": \"error\"", aux::JSON_ERROR),
    (" HTTP/", aux::HTTP),
    ("NVRM: Xid", aux::DEATH),
    ("OOMKilled", aux::DEATH),
    ("CrashLoopBackOff", aux::DEATH),
    ("' panicked at ", aux::PANIC),
    ("POST /v", aux::POST),
    ("POST /generate", aux::POST),
    ("--request-rate", aux::RATE),
    ("--rate ", aux::RATE),
    ("Traffic request rate: ", aux::RATE),
    // Gin's access line (Ollama): `[GIN] 2025/09/22 - 14:01:10 | 500 | 30.0s | 10.0.0.9 | POST "/api/chat"`.
    ("[GIN] ", aux::GIN),
    // Work done, in llama.cpp's slot timings, `ollama run --verbose` and llama-server's access line.
    ("eval time =", aux::WORK),
    ("eval rate:", aux::WORK),
    ("request: POST ", aux::WORK),
    // The figures `parsers::llama` reads (with the Gin and work lines above).
    ("prompt processing, n_tokens =", aux::LLAMA),
    ("| n_gen =", aux::LLAMA),
    (" started in ", aux::LLAMA),
    ("load duration:", aux::LLAMA),
    ("evicting", aux::LLAMA),
    ("will fit in available VRAM", aux::LLAMA),
    ("fits with existing models, loading", aux::LLAMA),
    ("loading first model", aux::LLAMA),
    ("llamacpp:requests_", aux::LLAMA),
    ("num_scheduled_requests", aux::LLAMA),
    ("LMCache hit tokens:", aux::LLAMA),
    ("inference compute", aux::LLAMA),
    ("Total GPU memory (GiB)", aux::LLAMA),
    ("model: ", aux::LLAMA),
];

/// What one pattern of the line scan means (a pattern can mean several things at once).
#[derive(Default)]
struct Target {
    /// The signals it is the first needle of.
    signals: Vec<usize>,
    aux: u32,
    /// Bits of the vLLM parser's dispatch needles ([`crate::parsers::vllm::NEEDLE_TEXT`]).
    vllm: u64,
    /// One of its signals has a digit in a later needle ([`Scan::digit_bound`]).
    digit_bound: bool,
    /// The [`Family`] bits of the generic words it is ([`super::families::WORDS`]).
    family: u32,
}

/// One automaton for every substring a line is asked about: the signals' first needles, the
/// capacity keys and [`AUX`]. A line is read once, whatever the table's size.
static SCANNER: std::sync::LazyLock<(Automaton, Vec<Target>, Vec<&'static str>)> =
    std::sync::LazyLock::new(|| {
        // Each pattern once, with everything it means (one pattern may mean several things).
        fn slot<'t>(table: &'t mut Vec<(&'static str, Target)>, text: &'static str) -> &'t mut Target {
            let p = table.iter().position(|(p, _)| *p == text).unwrap_or_else(|| {
                table.push((text, Target::default()));
                table.len() - 1
            });
            &mut table[p].1
        }
        let mut table: Vec<(&'static str, Target)> = Vec::new();
        for (i, sig) in SIGNALS.iter().enumerate() {
            if sig.needles[0] != CAPACITY_SIGNAL {
                let t = slot(&mut table, sig.needles[0]);
                t.signals.push(i);
                t.digit_bound |= sig.needles[1..].iter().any(|n| n.bytes().any(|b| b.is_ascii_digit()));
            }
        }
        for key in CAPACITY_KEYS {
            slot(&mut table, key).aux |= aux::CAPACITY;
        }
        for (text, bit) in AUX {
            slot(&mut table, text).aux |= bit;
        }
        for (text, family) in WORDS {
            slot(&mut table, text).family |= family.bit();
        }
        for (keys, bit) in
            [(STATUS_KEYS, aux::STATUS), (ANNOUNCE_KEYS, aux::ANNOUNCE), (CLIENT_KEYS, aux::CLIENT)]
        {
            for key in keys {
                slot(&mut table, key).aux |= bit;
            }
        }
        for (i, text) in crate::parsers::vllm::NEEDLE_TEXT.iter().enumerate() {
            slot(&mut table, text).vllm |= 1 << i;
        }
        let (patterns, targets): (Vec<&str>, Vec<Target>) = table.into_iter().unzip();
        (automaton(&patterns), targets, patterns)
    });

/// The scan's automaton: `aho-corasick`'s DFA natively; on wasm32 core's small one
/// ([`super::needles`]), which finds the same matches in far less code (the site's wasm).
#[cfg(not(target_arch = "wasm32"))]
type Automaton = aho_corasick::AhoCorasick;
#[cfg(target_arch = "wasm32")]
type Automaton = super::needles::Needles;

#[cfg(not(target_arch = "wasm32"))]
fn automaton(patterns: &[&str]) -> Automaton {
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(patterns)
        .expect("static patterns build")
}

#[cfg(target_arch = "wasm32")]
fn automaton(patterns: &[&str]) -> Automaton {
    super::needles::Needles::new(patterns)
}

/// Call `f` with the pattern index of every match in `line`, overlapping ones included.
#[cfg(not(target_arch = "wasm32"))]
fn each_match(a: &Automaton, line: &str, mut f: impl FnMut(usize)) {
    for m in a.find_overlapping_iter(line) {
        f(m.pattern().as_usize());
    }
}

#[cfg(target_arch = "wasm32")]
fn each_match(a: &Automaton, line: &str, f: impl FnMut(usize)) {
    a.each_in(line.as_bytes(), f);
}

/// What one pass over a line found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Signals whose every needle is in the line (indexes into [`SIGNALS`]), in table order.
    pub signals: Vec<usize>,
    /// Bits of [`AUX`] (and the capacity keys) that occur.
    aux: u32,
    /// Bits of the vLLM parser's needles that occur: its dispatch needs no scan of its own.
    pub vllm: u64,
    /// [`Family`] bits of the generic words that occur.
    pub families: u32,
    /// Some signal's first needle occurs whose other needles have digits: lines of the same
    /// shape may hold different signals, so the answer is not cached.
    digit_bound: bool,
}

/// Lines of the same shape (equal but for their digits) are read alike: first needles, [`AUX`],
/// the capacity keys and the vLLM parser's needles have no digits (a test holds this), so the
/// answer depends only on the shape and on the digit-bearing parts recomputed from the aux bits
/// (status codes, capacity figures, rates) — unless a signal whose first needle occurs has a
/// digit in another needle (`exitcode  : -9`): such lines are scanned each time. A big log is a
/// few shapes repeated: its periodic stats, access lines and per-request messages (`Aborted
/// request …`) are scanned once per shape.
///
/// Lines that differ in hex ids (`chatcmpl-3f2a…`) are different shapes. Zeroing hex tokens as
/// well was tried: on a vLLM log with an id in a third of its lines it cost more (a byte-wise
/// pass over every such line) than the scans it saved, as lines naming a request id mostly hold
/// a first needle (`Aborted request`) and are scanned anyway.
#[derive(Debug, Default)]
pub struct ScanCache {
    quiet: std::collections::HashMap<u64, Quiet, std::hash::BuildHasherDefault<ShapeHasher>>,
}

/// What a shape's lines share: the signals, the aux bits and the alarm their shape makes.
#[derive(Clone, Debug)]
struct Quiet {
    signals: Vec<usize>,
    aux: u32,
    vllm: u64,
    families: u32,
    alarm: Option<Alarm>,
}

/// Shapes remembered at most; then the cache starts afresh, so that the shapes a log prints
/// later (after a burst of one-off lines) are remembered too.
const MAX_SHAPES: usize = 4_096;

impl ScanCache {
    /// The line's scan, and whether its shape alone makes it an alarm (digit-bearing alarms —
    /// a 5xx status, a capacity at or below zero — are [`alarm_of`]'s to add).
    fn scan(&mut self, t: &str, line: &str) -> (Scan, Option<Alarm>) {
        let shape = shape_of(line.as_bytes());
        if let Some(q) = self.quiet.get(&shape) {
            let mut out = Scan {
                signals: q.signals.clone(),
                aux: q.aux,
                vllm: q.vllm,
                families: q.families,
                digit_bound: false,
            };
            if q.aux & aux::CAPACITY != 0
                && capacity_not_positive(line)
                && let Some(i) = SIGNALS.iter().position(|s| s.needles[0] == CAPACITY_SIGNAL)
            {
                out.signals.push(i);
                triage_base::sort::sort(&mut out.signals);
            }
            return (out, q.alarm);
        }
        let out = scan(line);
        let alarm = shape_alarm(t, &out);
        if !out.digit_bound {
            if self.quiet.len() >= MAX_SHAPES {
                self.quiet.clear();
            }
            // The capacity signal is recomputed from each line's figure.
            let signals =
                out.signals.iter().copied().filter(|&i| SIGNALS[i].needles[0] != CAPACITY_SIGNAL).collect();
            self.quiet.insert(
                shape,
                Quiet { signals, aux: out.aux, vllm: out.vllm, families: out.families, alarm },
            );
        }
        (out, alarm)
    }
}

/// The key is a hash already.
#[derive(Default)]
struct ShapeHasher(u64);

impl std::hash::Hasher for ShapeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A hash of the line with every ASCII digit read as `0`, eight bytes at a time.
fn shape_of(line: &[u8]) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HI: u64 = 0x8080_8080_8080_8080;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let mix = |h: u64, w: u64| (h.rotate_left(26) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let normal = |x: u64| {
        // Exact per byte: ASCII bytes from '0' to '9' (no carry crosses a byte: x & 0x7f + 0x50
        // stays below 0x100).
        let x7 = x & LO7;
        let ge_0 = x7.wrapping_add(0x5050_5050_5050_5050) & HI;
        let ge_colon = x7.wrapping_add(0x4646_4646_4646_4646) & HI;
        let digit = ge_0 & !ge_colon & !x & HI;
        let m = (digit >> 7) * 0xff;
        (x & !m) | (m & ZEROS)
    };
    let (words, tail) = line.as_chunks::<8>();
    let mut h = line.len() as u64;
    for w in words {
        h = mix(h, normal(u64::from_le_bytes(*w)));
    }
    if !tail.is_empty() {
        let mut last = [0u8; 8];
        last[..tail.len()].copy_from_slice(tail);
        h = mix(h, normal(u64::from_le_bytes(last)));
    }
    h
}

/// Read `line` once for everything [`Watch`] asks of it.
pub fn scan(line: &str) -> Scan {
    let (ac, targets, _) = &*SCANNER;
    let mut out = Scan::default();
    each_match(ac, line, |p| {
        let target = &targets[p];
        out.aux |= target.aux;
        out.vllm |= target.vllm;
        out.families |= target.family;
        out.digit_bound |= target.digit_bound;
        for &i in &target.signals {
            if !out.signals.contains(&i) && SIGNALS[i].needles[1..].iter().all(|n| line.contains(n)) {
                out.signals.push(i);
            }
        }
    });
    if out.aux & aux::CAPACITY != 0
        && capacity_not_positive(line)
        && let Some(i) = SIGNALS.iter().position(|s| s.needles[0] == CAPACITY_SIGNAL)
    {
        out.signals.push(i);
    }
    triage_base::sort::sort(&mut out.signals);
    out
}

/// The signals in `line` (indexes into [`SIGNALS`]), in table order.
pub fn matches(line: &str) -> Vec<usize> {
    scan(line).signals
}

/// A capacity figure at or below zero (`Available KV cache memory: -1.2 GiB`, `# GPU blocks: 0`).
fn capacity_not_positive(line: &str) -> bool {
    CAPACITY_KEYS.iter().any(|key| {
        line.match_indices(key).any(|(i, _)| number_after(&line[i..], key).is_some_and(|v| v <= 0.0))
    })
}

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
fn shape_alarm(t: &str, scan: &Scan) -> Option<Alarm> {
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
fn alarm_of(shape: Option<Alarm>, status: Option<u16>, scan: &Scan) -> Option<Alarm> {
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
const ALARM_SIGNALS: &[&str] = &["llama-cpp-compute-error", "llama-cpp-graph-compute-failed"];

/// A level word among the first fields: `ERROR 05-12 …` (vLLM), `ERROR:root:` (Python's
/// default), `2025-… - vllm - ERROR - …`, `| ERROR |` (loguru), `level=error`, `[E …]` / `E1203`
/// (glog, PyTorch's C++ logs), `"level":"ERROR"`.
fn level_word(t: &str) -> bool {
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
fn message(t: &str) -> &str {
    match t.find("] ") {
        Some(i) if i < 100 => &t[i + 2..],
        _ => t,
    }
}

/// `RuntimeError: …`, `torch.OutOfMemoryError: …`, `ray.exceptions.RayActorError: …`, a bare
/// `asyncio.exceptions.CancelledError`. Not warnings.
fn exception_line(t: &str) -> bool {
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
fn status_of(line: &str, scan: &Scan) -> Option<u16> {
    if scan.aux & aux::GIN != 0 {
        return super::parsers::llama::gin_fields(line).map(|(status, _)| status);
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
fn ok_response(line: &str) -> bool {
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
fn work_done(line: &str) -> bool {
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
fn continues(t: &str) -> bool {
    let u = t.trim_start();
    t.starts_with("  ")
        || t.starts_with('\t')
        || u.starts_with("File \"")
        || u.starts_with('^')
        || u.starts_with('~')
        || u.starts_with("During handling of the above exception")
        || u.starts_with("The above exception was the direct cause")
}

/// One run of alarm lines (and the traceback lines between them) in one input.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The input the block is in.
    pub input: String,
    /// Its first line (1-based).
    pub first: usize,
    /// Its last line (1-based, inclusive).
    pub last: usize,
    /// The line that says the most: the last exception line, else the first alarm line.
    pub quote: EvidenceLine,
    /// What made its lines alarms (level, traceback, exception, …).
    pub kinds: Vec<Alarm>,
    /// Signals seen in the block (indexes into [`SIGNALS`]).
    pub signals: Vec<usize>,
    /// [`Family`] bits of the generic words in the block's lines.
    pub families: u32,
    /// Only a traceback's head was seen (the paste was cut before the exception line).
    pub cut: bool,
    /// Alarm lines that carry no known message (a traceback's head, an unknown exception, the
    /// frames of a logged traceback).
    pub unknown_lines: u32,
    quote_rank: u8,
}

/// Most blocks kept; beyond, blocks are counted (and whether any had no known message).
pub const MAX_BLOCKS: usize = 256;
const MAX_HITS: usize = 8;

/// Hits of one signal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hits {
    /// Lines the signal matched.
    pub count: u64,
    /// The first few lines.
    pub lines: Vec<EvidenceLine>,
}

/// What [`Watch`] learned, for the rules and the claim check.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// Signal index → hits.
    pub hits: BTreeMap<usize, Hits>,
    /// Alarm blocks in input order, at most [`MAX_BLOCKS`].
    pub blocks: Vec<Block>,
    /// Blocks beyond [`MAX_BLOCKS`], and how many of them had no known message.
    pub blocks_dropped: u64,
    /// Of the dropped blocks, those with an alarm line that carries no known message.
    pub dropped_unknown: u64,
    /// Signals seen in dropped blocks.
    pub dropped_signals: Vec<usize>,
    /// Lines that show a request served: HTTP access lines (any server or proxy, Gin's) that
    /// answered 2xx to an API call, llama.cpp's and Ollama's timings of a finished generation.
    /// Evidence of health.
    pub ok_responses: u64,
    /// A benchmark's requested rate (`--request-rate N`, `--rate N`, `Traffic request rate: N`),
    /// wherever it was pasted.
    pub requested_rate: Option<(f64, EvidenceLine)>,
    /// The generic words seen ([`super::families`]), by family: the line's leading family only.
    pub families: BTreeMap<Family, FamilyHits>,
    /// Family hits so far, across inputs: [`FamilyHits::first`] orders families in time.
    pub family_hits: u64,
    /// HTTP access lines of any method and path that answered 2xx (a health check included).
    pub ok_access: u64,
    /// Ports servers announced and ports clients call.
    pub ports: Ports,
}

impl Signals {
    /// Every hit of the signals whose rules include `rule`, in table order.
    pub fn for_rule(&self, rule: RuleId) -> impl Iterator<Item = (&'static Signal, &Hits)> {
        self.hits
            .iter()
            .filter(move |(i, _)| SIGNALS[**i].rules.contains(&rule))
            .map(|(i, h)| (&SIGNALS[*i], h))
    }

    /// Lines of the signals that `rule` explains: up to `max`, in input order.
    pub fn lines_for(&self, rule: RuleId, max: usize) -> Vec<EvidenceLine> {
        self.lines_where(|s| s.rules.contains(&rule), max)
    }

    /// Lines of the signals whose first rule is `rule` (not those it only shares, such as the
    /// OOM message every OOM rule explains): up to `max`, in input order.
    pub fn own_lines(&self, rule: RuleId, max: usize) -> Vec<EvidenceLine> {
        self.lines_where(|s| s.rules.first() == Some(&rule), max)
    }

    fn lines_where(&self, keep: impl Fn(&Signal) -> bool, max: usize) -> Vec<EvidenceLine> {
        let mut lines: Vec<EvidenceLine> = self
            .hits
            .iter()
            .filter(|(i, _)| keep(&SIGNALS[**i]))
            .flat_map(|(_, h)| h.lines.iter().cloned())
            .collect();
        triage_base::sort::sort_by(&mut lines, |a, b| a.input.cmp(&b.input).then(a.line.cmp(&b.line)));
        lines.dedup();
        lines.truncate(max);
        lines
    }

    /// How many lines the signals of `rule` matched.
    pub fn count_for(&self, rule: RuleId) -> u64 {
        self.for_rule(rule).map(|(_, h)| h.count).sum()
    }

    /// Was signal `id` seen?
    pub fn seen(&self, id: &str) -> Option<&Hits> {
        self.hits.iter().find(|(i, _)| SIGNALS[**i].id == id).map(|(_, h)| h)
    }
}

/// What [`Watch::line`] learnt of a line that the parsers can use instead of reading it again.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'l> {
    /// The line without the prefixes people paste ([`strip_prefixes`]).
    pub bare: &'l str,
    /// Bits of the vLLM parser's needles that occur in the line.
    pub vllm: u64,
    /// The line may hold a figure of llama.cpp or Ollama ([`crate::parsers::llama`]).
    pub llama: bool,
}

/// The per-input state of the alarm watch.
#[derive(Debug, Default)]
pub struct Watch {
    cache: ScanCache,
    /// The process or rank prefix of the last line that had one (see [`strip_remembered`]).
    prefix: Vec<u8>,
    open: Option<Block>,
    /// A traceback head block closed before its exception line: joins the next block.
    pending_head: Option<Block>,
}

impl Watch {
    /// Look at one line (ANSI already stripped). Returns what the parsers may reuse.
    pub fn line<'l>(&mut self, out: &mut Signals, input: &str, no: usize, line: &'l str) -> Seen<'l> {
        let t = strip_remembered(&mut self.prefix, line);
        let (scan, shape_alarm) = self.cache.scan(t, line);
        let found = &scan.signals;
        for &i in found {
            let hits = out.hits.entry(i).or_default();
            hits.count += 1;
            if hits.lines.len() < MAX_HITS {
                hits.lines.push(EvidenceLine { input: input.into(), line: no, text: quote_redacted(line) });
            }
        }
        let seen =
            Seen { bare: t, vllm: scan.vllm, llama: scan.aux & (aux::LLAMA | aux::GIN | aux::WORK) != 0 };
        if t.bytes().all(|b| b.is_ascii_whitespace()) {
            return seen;
        }
        if scan.aux & aux::RATE != 0
            && out.requested_rate.is_none()
            && let Some(rate) = ["--request-rate ", "--request-rate=", "--rate ", "Traffic request rate: "]
                .iter()
                .find_map(|k| number_after(line, k))
        {
            out.requested_rate = Some((rate, EvidenceLine::quoted(input, no, line)));
        }
        let status = status_of(line, &scan);
        let post = scan.aux & aux::POST != 0 || scan.aux & aux::GIN != 0 && line.contains("| POST ");
        if post && status.map_or_else(|| ok_response(line), |c| (200..300).contains(&c))
            || scan.aux & aux::WORK != 0 && work_done(line)
        {
            out.ok_responses += 1;
        }
        if status.is_some_and(|c| (200..300).contains(&c)) {
            out.ok_access += 1;
        }
        out.ports.line(input, no, line, scan.aux & aux::ANNOUNCE != 0, scan.aux & aux::CLIENT != 0);
        // A line with a known message is the exact rules' (a benign one is no failure); only a
        // known message that names no cause leaves its words to the generic layer.
        let known = found.iter().any(|&i| SIGNALS[i].rules != [UNCLAIMED]);
        let status_key = scan.aux & aux::STATUS != 0;
        let failure = families_of_line(out, (input, no, line), scan.families, (status, status_key), known);
        let alarm = alarm_of(shape_alarm, status, &scan);
        match (alarm, self.open.as_mut()) {
            (Some(kind), Some(block)) => {
                block.extend(no, kind, line, found);
            }
            (None, Some(block)) if continues(t) => {
                block.last = no;
                block.add_signals(found);
            }
            (Some(kind), None) => {
                let mut block = self.pending_head.take().unwrap_or_else(|| Block::new(input, no));
                block.extend(no, kind, line, found);
                self.open = Some(block);
            }
            (None, Some(_)) => self.close(out),
            (None, None) => {}
        }
        // The line joined the open block (if it did not, the block was closed): its words too.
        if let Some(block) = self.open.as_mut() {
            block.families |= failure;
        }
        seen
    }

    /// The input ended.
    pub fn end(&mut self, out: &mut Signals) {
        self.close(out);
        if let Some(head) = self.pending_head.take() {
            keep(out, head);
        }
    }

    fn close(&mut self, out: &mut Signals) {
        let Some(mut block) = self.open.take() else { return };
        block.cut = block.kinds.iter().all(|k| *k == Alarm::TracebackHead);
        if block.cut {
            if let Some(earlier) = self.pending_head.replace(block) {
                keep(out, earlier);
            }
            return;
        }
        keep(out, block);
    }
}

impl Block {
    fn new(input: &str, no: usize) -> Block {
        Block {
            input: input.to_owned(),
            first: no,
            last: no,
            quote: EvidenceLine { input: input.into(), line: no, text: String::new() },
            quote_rank: 0,
            unknown_lines: 0,
            kinds: Vec::new(),
            signals: Vec::new(),
            families: 0,
            cut: false,
        }
    }

    fn extend(&mut self, no: usize, kind: Alarm, line: &str, found: &[usize]) {
        self.last = no;
        if found.is_empty() {
            self.unknown_lines += 1;
        }
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        // The quote: the last exception or exit line, else the first line with a known
        // message, else the first alarm line.
        let rank = match kind {
            Alarm::Exception | Alarm::Exit => 3,
            _ if !found.is_empty() => 2,
            _ => 1,
        };
        if rank > self.quote_rank || rank == 3 {
            self.quote = EvidenceLine::quoted(&self.input, no, line);
            self.quote_rank = rank;
        }
        self.add_signals(found);
    }

    fn add_signals(&mut self, found: &[usize]) {
        for &i in found {
            if !self.signals.contains(&i) {
                self.signals.push(i);
            }
        }
    }
}

fn keep(out: &mut Signals, block: Block) {
    if out.blocks.len() < MAX_BLOCKS {
        out.blocks.push(block);
    } else {
        out.blocks_dropped += 1;
        if block.signals.is_empty() {
            out.dropped_unknown += 1;
        }
        for i in block.signals {
            if !out.dropped_signals.contains(&i) {
                out.dropped_signals.push(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {

    /// The wasm32 automaton finds what `aho-corasick` finds, on the scan's own patterns: each
    /// pattern alone in a line, and lines holding several, overlapping.
    #[test]
    fn the_small_automaton_agrees_with_aho_corasick_on_the_table() {
        let (_, _, patterns) = &*SCANNER;
        let ours = crate::needles::Needles::new(patterns);
        let theirs = aho_corasick::AhoCorasick::new(patterns).expect("builds");
        let mut lines: Vec<String> =
            patterns.iter().map(|p| format!("INFO 12:00:01 [x] {p} (tail)")).collect();
        lines.extend(patterns.chunks(7).map(|c| c.concat()));
        lines.extend(
            patterns.windows(2).map(|w| format!("{}{}", w[0].get(..w[0].len() / 2).unwrap_or(""), w[1])),
        );
        for line in &lines {
            let mut a = Vec::new();
            ours.each_in(line.as_bytes(), |p| a.push(p));
            let mut b: Vec<usize> =
                theirs.find_overlapping_iter(line.as_str()).map(|m| m.pattern().as_usize()).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "{line}");
        }
    }
    use super::*;

    /// Every pattern of the line scan.
    fn scan_patterns() -> Vec<&'static str> {
        let mut all: Vec<&'static str> =
            SIGNALS.iter().map(|s| s.needles[0]).filter(|n| *n != CAPACITY_SIGNAL).collect();
        all.extend(AUX.iter().map(|(t, _)| *t));
        all.extend(CAPACITY_KEYS);
        all.extend(crate::parsers::vllm::NEEDLE_TEXT);
        all
    }

    #[test]
    fn scan_patterns_have_no_digits() {
        // What makes ScanCache sound: lines equal but for their digits hold the same patterns.
        for p in scan_patterns() {
            assert!(!p.bytes().any(|b| b.is_ascii_digit()), "{p:?}");
        }
    }

    /// Every fixture under `tests/data/<sub>` and its text (files that are not UTF-8 left out).
    #[allow(clippy::disallowed_methods, reason = "a test reads the fixtures; the core itself does no I/O")]
    fn fixtures(sub: &str) -> Vec<(std::path::PathBuf, String)> {
        fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push((p, text));
                }
            }
        }
        let mut out = Vec::new();
        walk(&crate::testutil::data_dir().join(sub), &mut out);
        out
    }

    #[test]
    fn the_cache_reads_every_fixture_line_as_the_scan_does() {
        // Each line of every fixture, read twice (the second time from the cache when quiet).
        let files = fixtures("");
        assert!(files.len() > 100, "the fixtures are found");
        let mut lines = 0;
        for (f, text) in files {
            let mut cache = ScanCache::default();
            for line in text.lines().take(5_000) {
                let t = strip_prefixes(line);
                // The same line with other digits primes the cache.
                let other: String = line.chars().map(|c| if c.is_ascii_digit() { '7' } else { c }).collect();
                cache.scan(strip_prefixes(&other), &other);
                lines += 1;
                let (cached, alarm) = cache.scan(t, line);
                let fresh = scan(line);
                assert_eq!(
                    (&cached.signals, cached.aux, cached.vllm, alarm),
                    (&fresh.signals, fresh.aux, fresh.vllm, shape_alarm(t, &fresh)),
                    "{}: {line}",
                    f.display()
                );
            }
        }
        assert!(lines > 10_000, "{lines} lines");
    }

    #[test]
    fn remembered_prefixes_strip_as_strip_prefixes_does() {
        let lines = [
            "(APIServer pid=2215) INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Running: 1 reqs",
            "(APIServer pid=2215) INFO:     10.0.0.1:5 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
            "(APIServer pid=2215)   File \"/x.py\", line 1, in f",
            "(EngineCore_0 pid=3121) ERROR 11-29 10:00:00 [core.py:702] EngineCore encountered a fatal error.",
            "[rank0]:[E1129 10:02:00.000000 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout",
            "[rank0]:    raise RuntimeError(x)",
            "(APIServer pid=2215)",
            "(pid=12, ip=10.0.0.2) x",
            "2025-03-04T10:00:01.123Z (APIServer pid=7) INFO x",
            "plain line",
        ];
        let mut prefix = Vec::new();
        for _ in 0..2 {
            for l in lines {
                assert_eq!(strip_remembered(&mut prefix, l), strip_prefixes(l), "{l}");
            }
        }
        // And every incident line, in order.
        let mut n = 0;
        for (_, text) in fixtures("incidents") {
            for l in text.lines() {
                assert_eq!(strip_remembered(&mut prefix, l), strip_prefixes(l), "{l}");
                n += 1;
            }
        }
        assert!(n > 5_000, "{n} lines");
    }

    #[test]
    fn the_cache_answers_as_the_scan_does() {
        let mut cache = ScanCache::default();
        let lines = [
            r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#,
            r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error"#,
            "INFO 05-12 10:00:01 [gpu_worker.py:1] Available KV cache memory: 54.62 GiB",
            "INFO 05-12 10:00:02 [gpu_worker.py:1] Available KV cache memory: -2.31 GiB",
            "      Exit Code:    0",
            "      Exit Code:    137",
            "  exitcode  : 1 (pid: 2224)",
            "  exitcode  : -9 (pid: 2224)",
        ];
        for _ in 0..2 {
            for l in lines {
                let t = strip_prefixes(l);
                let ((a, shape), b) = (cache.scan(t, l), scan(l));
                assert_eq!((&a.signals, a.aux), (&b.signals, b.aux), "{l}");
                assert_eq!(alarm_of(shape, status_of(l, &a), &a), alarm(t, l), "{l}");
            }
        }
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            strip_prefixes("[rank1]:[E ProcessGroupNCCL.cpp:616] x"),
            "[E ProcessGroupNCCL.cpp:616] x"
        );
        assert_eq!(
            strip_prefixes(
                "2025-03-04T10:00:01.123456789Z (EngineCore_0 pid=123) ERROR 03-04 10:00:01 [core.py:1] x"
            ),
            "ERROR 03-04 10:00:01 [core.py:1] x"
        );
        assert_eq!(
            strip_prefixes("[2025-03-04 10:00:01 TP0] Scheduler hit an exception"),
            "Scheduler hit an exception"
        );
        assert_eq!(
            strip_prefixes("(VllmWorker rank=1 pid=9)   File \"x.py\", line 3"),
            "  File \"x.py\", line 3"
        );
        assert_eq!(strip_prefixes("INFO 1"), "INFO 1");
    }

    #[test]
    fn alarms() {
        let a = |l: &str| alarm(strip_prefixes(l), l);
        assert_eq!(a("ERROR 05-12 10:00:01 [core.py:390] EngineCore failed to start."), Some(Alarm::Level));
        assert_eq!(
            a("2024-05-01T10:00:00.000000Z ERROR text_generation_launcher: Shard 0 failed"),
            Some(Alarm::Level)
        );
        assert_eq!(a("2025-01-01 10:00:00,123 - vllm - ERROR - boom"), Some(Alarm::Level));
        assert_eq!(
            a("[rank0]:[E1203 10:00:00.123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog"),
            Some(Alarm::Level)
        );
        assert_eq!(a("E1203 10:00:00.123456 123 ProcessGroupNCCL.cpp:616] x"), Some(Alarm::Level));
        assert_eq!(a("Traceback (most recent call last):"), Some(Alarm::TracebackHead));
        assert_eq!(a("torch.OutOfMemoryError: CUDA out of memory."), Some(Alarm::Exception));
        assert_eq!(a("asyncio.exceptions.CancelledError"), Some(Alarm::Exception));
        assert_eq!(a("thread 'main' panicked at src/main.rs:3:5:"), Some(Alarm::Exit));
        assert_eq!(a("Error: ShardCannotStart"), Some(Alarm::Exception));
        assert_eq!(
            a(r#"{"object":"error","message":"The model `x` does not exist.","code":404}"#),
            Some(Alarm::JsonError)
        );
        assert_eq!(
            a(r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error"#),
            Some(Alarm::ServerError)
        );
        assert_eq!(
            a("INFO 05-12 10:00:01 [gpu_worker.py:1] Available KV cache memory: -2.31 GiB"),
            Some(Alarm::Capacity)
        );
        assert!(ok_response(r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#));
        assert!(ok_response(
            "(ProxyActor pid=1601) INFO 2025-12-05 16:25:02,331 proxy 10.0.3.17 7e2a -- POST /v1/chat/completions 200 1840.2ms"
        ));
        assert!(!ok_response(r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found"#));
        for quiet in [
            "INFO 05-12 10:00:01 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s",
            "WARNING 05-12 10:00:01 [x.py:1] UserWarning: deprecated",
            r#"INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#,
            "INFO 05-12 10:00:01 [gpu_worker.py:1] Available KV cache memory: 54.62 GiB",
            "Errors: 0",
            "the error rate was 0",
        ] {
            assert_eq!(a(quiet), None, "{quiet}");
        }
    }

    #[test]
    fn signals_match_all_needles() {
        let ids = |l: &str| matches(l).into_iter().map(|i| SIGNALS[i].id).collect::<Vec<_>>();
        assert_eq!(
            ids("ValueError: No available memory for the cache blocks. Try increasing"),
            ["vllm-no-cache-blocks"]
        );
        assert_eq!(ids("Shard 0 failed to start"), ["tgi-shard-cannot-start"]);
        assert!(ids("failed to start").is_empty());
        assert_eq!(ids("INFO x # GPU blocks: 0, # CPU blocks: 2048"), ["capacity-not-positive"]);
    }

    fn blocks(text: &str) -> Signals {
        let mut out = Signals::default();
        let mut w = Watch::default();
        for (i, l) in text.lines().enumerate() {
            w.line(&mut out, "in", i + 1, l);
        }
        w.end(&mut out);
        out
    }

    #[test]
    fn a_traceback_is_one_block_quoted_by_its_exception() {
        let s = blocks(
            "INFO start\nTraceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\nRuntimeError: CUDA error: an illegal memory access was encountered\nINFO next\n",
        );
        assert_eq!(s.blocks.len(), 1);
        let b = &s.blocks[0];
        assert_eq!((b.first, b.last, b.quote.line, b.cut), (2, 5, 5, false));
        assert_eq!(SIGNALS[b.signals[0]].id, "cuda-illegal-memory-access");
    }

    #[test]
    fn a_cut_traceback_stays_a_block() {
        let s = blocks("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n");
        assert_eq!(s.blocks.len(), 1);
        assert!(s.blocks[0].cut);
    }

    #[test]
    fn a_head_interrupted_by_other_lines_joins_its_exception() {
        let s = blocks(
            "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nINFO other process\nValueError: No available memory for the cache blocks.\n",
        );
        assert_eq!(s.blocks.len(), 1);
        assert_eq!((s.blocks[0].first, s.blocks[0].last, s.blocks[0].cut), (1, 4, false));
    }

    #[test]
    fn every_vllm_error_line_of_one_traceback_is_one_block() {
        let p = "(EngineCore_0 pid=7) ERROR 05-12 10:00:01 [core.py:390]";
        let text = format!(
            "{p} EngineCore failed to start.\n{p} Traceback (most recent call last):\n{p}   File \"x.py\", line 3, in f\n{p} ValueError: No available memory for the cache blocks.\nINFO 05-12 done\n"
        );
        let s = blocks(&text);
        assert_eq!(s.blocks.len(), 1);
        assert_eq!(s.blocks[0].quote.line, 4);
    }
}
