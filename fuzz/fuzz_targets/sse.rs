//! Fuzz the SSE parser and the stream timer: any bytes, any chunking, same events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage_core::sse::SseParser;
use triage_core::timing::{StreamTimer, TimerConfig};

fuzz_target!(|data: &[u8]| {
    let whole = SseParser::new().feed_collect(data, 0);
    let mut p = SseParser::new();
    let mut bytewise = Vec::new();
    for b in data {
        bytewise.extend(p.feed_collect(std::slice::from_ref(b), 0));
    }
    assert_eq!(whole, bytewise);
    let mut t = StreamTimer::new(0, TimerConfig::default());
    t.feed(data, 1);
    let _ = t.finish(2);
});
