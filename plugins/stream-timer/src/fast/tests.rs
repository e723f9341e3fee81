//! The fast reading's differential tests against `classify` — the hot shapes, every recorded
//! event and thousands of mutations of them — and the test data the shape's tests share: the
//! recorded streams and a seeded mutator.

use super::*;
use triage_core::sse::{SseItem, SseParser};
use triage_core::stream::classify;

fn same(event: &str, data: &str) -> bool {
    match quick(data) {
        None => false,
        Some(v) => {
            let c = classify(event, data);
            assert_eq!(v, View::of(&c), "{event:?} {data:?}");
            true
        }
    }
}

/// The events of every recorded stream, one list per stream.
pub(super) fn recorded_streams() -> Vec<Vec<(String, String)>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sse");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names
        .iter()
        .map(|path| {
            let mut out = Vec::new();
            SseParser::new().feed(&std::fs::read(path).unwrap(), 0, &mut |item| {
                if let SseItem::Event(e) = item {
                    out.push((e.event.to_owned(), e.data.to_owned()));
                }
            });
            out
        })
        .collect()
}

pub(super) fn recorded() -> Vec<(String, String)> {
    recorded_streams().into_iter().flatten().collect()
}

#[test]
fn hot_shapes_take_the_fast_path_and_agree() {
    let hot = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"hm","content":null}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"content":"line\nbreak \u00e9 \"q\""}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
        r#"{"id":"cmpl-1","object":"text_completion","choices":[{"text":" world","index":0,"finish_reason":null}]}"#,
        r#"{"choices":[]}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#,
        r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#,
        r#"  {"choices":[{"delta":{"content":"x"}}]}  "#,
    ];
    for data in hot {
        assert!(same("message", data), "{data}");
    }
    for data in [
        "[DONE]",
        r#"{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}"#,
        r#"{"error":{"message":"x"}}"#,
        r#"{"type":"message_start","message":{}}"#,
        r#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
        r#"{"choices":[{"delta":{"content":"x","content":"y"}}]}"#,
        r#"{"choices":[{"delta":{"content":1}}]}"#,
        r#"{"a":1e5,"choices":[]}"#,
        r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
        r#"{"type":"response.completed","response":{}}"#,
        "{",
    ] {
        assert!(quick(data).is_none(), "{data}");
    }
}

#[test]
fn agrees_with_classify_on_recorded_events_and_their_mutations() {
    let events = recorded();
    assert!(events.len() > 50);
    let mut fast = 0;
    for (e, d) in &events {
        fast += usize::from(same(e, d));
    }
    // Short documented examples: many lifecycle events; the token events are the fast ones.
    assert!(fast * 3 > events.len(), "the token events take the fast path ({fast}/{})", events.len());
    // Mutations: byte edits, deletions and insertions of JSON-significant bytes.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut tried, mut compared) = (0, 0);
    for (e, d) in &events {
        for _ in 0..300 {
            let b = rng.mutate(d, br#"{}[]:,"\ nu0e1-.x"#, None);
            if let Ok(s) = String::from_utf8(b) {
                compared += usize::from(same(e, &s));
                tried += 1;
            }
        }
    }
    assert!(tried > 10_000);
    assert!(compared > 2_000, "{compared} of {tried} mutations read fast and compared");
}

/// xorshift64: the tests' mutations, the same on every run.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        (*x % n as u64) as usize
    }

    /// `d` with one to three bytes replaced, removed or inserted (from `alphabet`); with
    /// `around`, half the edits fall inside that range.
    pub(super) fn mutate(&mut self, d: &str, alphabet: &[u8], around: Option<(usize, usize)>) -> Vec<u8> {
        let mut b = d.as_bytes().to_vec();
        for _ in 0..1 + self.below(3) {
            let at = match around {
                Some((from, to)) if self.below(2) == 0 => from + self.below(to - from + 1),
                _ => self.below(b.len() + 1),
            }
            .min(b.len());
            match self.below(3) {
                0 if at < b.len() => b[at] = alphabet[self.below(alphabet.len())],
                1 if at < b.len() => {
                    b.remove(at);
                }
                _ => b.insert(at, alphabet[self.below(alphabet.len())]),
            }
        }
        b
    }
}
