//! Fuzz the whole analyzer: recognition, sectioning and every parser, in two chunkings that
//! must give the same report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage_core::analyze::Analyzer;

fuzz_target!(|data: &[u8]| {
    let mut whole = Analyzer::new();
    whole.begin("fuzz");
    whole.feed(data);
    let a = whole.finish();
    let mut split = Analyzer::new();
    split.begin("fuzz");
    for chunk in data.chunks(3) {
        split.feed(chunk);
    }
    assert_eq!(a, split.finish());
});
