//! Fuzz one parser at a time: the first byte picks the input kind, the rest is read as that
//! kind without recognition, so every parser sees arbitrary lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage_core::analyze::Analyzer;
use triage_core::analyze::kind::InputKind;

const KINDS: [InputKind; 11] = [
    InputKind::RequestLog,
    InputKind::VllmLog,
    InputKind::SglangLog,
    InputKind::TgiLog,
    InputKind::PromMetrics,
    InputKind::NvidiaSmi,
    InputKind::OomTrace,
    InputKind::ClientConfig,
    InputKind::BenchOutput,
    InputKind::SseStream,
    InputKind::Unknown,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let mut a = Analyzer::new();
    a.begin_as("fuzz", KINDS[pick as usize % KINDS.len()]);
    a.feed(rest);
    let _ = a.finish();
});
