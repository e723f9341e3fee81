//! One pass over a line: one automaton for the signals' first needles, the capacity keys and
//! the auxiliary substrings, and the known messages it finds.

use super::*;

/// The needle that [`scan`] reports for a capacity figure at or below zero.
pub const CAPACITY_SIGNAL: &str = "\u{0}capacity";

/// Capacity figures that must be positive: (key, the number follows it).
pub(super) const CAPACITY_KEYS: &[&str] = &[
    "Available KV cache memory:",
    "GPU KV cache size:",
    "# GPU blocks:",
    "num_gpu_blocks=",
    "the rest of the memory reserved for KV Cache is",
    "max_total_num_tokens=",
    "KV Cache is allocated. #tokens:",
];

/// Substrings besides the signals' that one line's scan looks for, each a bit of [`Scan::aux`].
pub(super) mod aux {
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

pub(super) const AUX: &[(&str, u32)] = &[
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
pub(super) struct Target {
    /// The signals it is the first needle of.
    signals: Vec<usize>,
    pub(super) aux: u32,
    /// Bits of the vLLM parser's dispatch needles ([`super::vllm_needles::NEEDLE_TEXT`]).
    vllm: u64,
    /// One of its signals has a digit in a later needle ([`Scan::digit_bound`]).
    pub(super) digit_bound: bool,
    /// The [`Family`] bits of the generic words it is ([`crate::families::WORDS`]).
    family: u32,
}

/// One automaton for every substring a line is asked about: the signals' first needles, the
/// capacity keys and [`AUX`]. A line is read once, whatever the table's size.
pub(super) static SCANNER: std::sync::LazyLock<(Automaton, Vec<Target>, Vec<&'static str>)> =
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
        for (i, text) in vllm_needles::NEEDLE_TEXT.iter().enumerate() {
            slot(&mut table, text).vllm |= 1 << i;
        }
        let (patterns, targets): (Vec<&str>, Vec<Target>) = table.into_iter().unzip();
        (automaton(&patterns), targets, patterns)
    });

/// The scan's automaton: `aho-corasick`'s DFA natively; on wasm32 core's small one
/// ([`crate::needles`]), which finds the same matches in far less code (the site's wasm).
#[cfg(not(target_arch = "wasm32"))]
pub(super) type Automaton = aho_corasick::AhoCorasick;
#[cfg(target_arch = "wasm32")]
pub(super) type Automaton = crate::needles::Needles;

#[cfg(not(target_arch = "wasm32"))]
pub(super) fn automaton(patterns: &[&str]) -> Automaton {
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(patterns)
        .expect("static patterns build")
}

#[cfg(target_arch = "wasm32")]
pub(super) fn automaton(patterns: &[&str]) -> Automaton {
    crate::needles::Needles::new(patterns)
}

/// Call `f` with the pattern index of every match in `line`, overlapping ones included.
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn each_match(a: &Automaton, line: &str, mut f: impl FnMut(usize)) {
    for m in a.find_overlapping_iter(line) {
        f(m.pattern().as_usize());
    }
}

#[cfg(target_arch = "wasm32")]
pub(super) fn each_match(a: &Automaton, line: &str, f: impl FnMut(usize)) {
    a.each_in(line.as_bytes(), f);
}

/// What one pass over a line found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Signals whose every needle is in the line (indexes into [`SIGNALS`]), in table order.
    pub signals: Vec<usize>,
    /// Bits of [`AUX`] (and the capacity keys) that occur.
    pub(super) aux: u32,
    /// Bits of the vLLM parser's needles that occur: its dispatch needs no scan of its own.
    pub vllm: u64,
    /// [`Family`] bits of the generic words that occur.
    pub families: u32,
    /// Some signal's first needle occurs whose other needles have digits: lines of the same
    /// shape may hold different signals, so the answer is not cached.
    pub(super) digit_bound: bool,
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
pub(super) fn capacity_not_positive(line: &str) -> bool {
    CAPACITY_KEYS.iter().any(|key| {
        line.match_indices(key).any(|(i, _)| number_after(&line[i..], key).is_some_and(|v| v <= 0.0))
    })
}
