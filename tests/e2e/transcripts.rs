//! Real stream transcripts (from the public API documentation's examples, see tests/data/README.md)
//! through the core's stream timer: every dialect classified right, whatever the chunking or
//! line endings.

use triage_core::fault::{FaultKind, judge_stream};
use triage_core::stream::{Dialect, TokenKind};
use triage_core::timing::{RequestTiming, StreamTimer, TimerConfig, TokenSource};

fn read(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sse").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Feed `bytes` cut at `cuts`; chunk `i` arrives at `i` ns.
fn time(bytes: &[u8], cuts: &[usize]) -> RequestTiming {
    let mut t = StreamTimer::new(0, TimerConfig::default());
    let mut start = 0;
    for (i, &cut) in cuts.iter().chain(std::iter::once(&bytes.len())).enumerate() {
        t.feed(&bytes[start..cut], i as u64);
        start = cut;
    }
    t.finish(cuts.len() as u64 + 1)
}

/// Everything but arrival times.
fn shape(t: &RequestTiming) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        &t.token_kinds,
        &t.usage,
        &t.finish_reason,
        &t.stream_error,
        t.terminal_seen,
        t.dialect,
        &t.response_id,
        t.events,
        t.pings,
    )
}

struct Expect {
    file: &'static str,
    kinds: &'static [TokenKind],
    finish: Option<&'static str>,
    output: (u64, TokenSource),
    dialect: Dialect,
    fault: Option<FaultKind>,
}

use TokenKind::{Reasoning as R, Text as T, ToolCall as C};

const EXPECT: &[Expect] = &[
    Expect {
        file: "openai_chat.sse",
        kinds: &[T, T, T, T],
        finish: Some("stop"),
        output: (6, TokenSource::Usage),
        dialect: Dialect::OpenaiChat,
        fault: None,
    },
    Expect {
        file: "vllm_reasoning.sse",
        kinds: &[R, R, R, T, T],
        finish: Some("stop"),
        output: (13, TokenSource::Usage),
        dialect: Dialect::OpenaiChat,
        fault: None,
    },
    Expect {
        file: "openai_tool_calls.sse",
        kinds: &[C, C, C, C],
        finish: Some("tool_calls"),
        output: (4, TokenSource::Counted),
        dialect: Dialect::OpenaiChat,
        fault: None,
    },
    Expect {
        file: "openai_completions.sse",
        kinds: &[T, T, T],
        finish: Some("length"),
        output: (3, TokenSource::Counted),
        dialect: Dialect::OpenaiCompletions,
        fault: None,
    },
    Expect {
        file: "openai_responses.sse",
        kinds: &[T, T],
        finish: Some("completed"),
        output: (11, TokenSource::Usage),
        dialect: Dialect::OpenaiResponses,
        fault: None,
    },
    Expect {
        file: "anthropic_messages.sse",
        kinds: &[T, T],
        finish: Some("end_turn"),
        output: (15, TokenSource::Usage),
        dialect: Dialect::Anthropic,
        fault: None,
    },
    Expect {
        file: "anthropic_thinking.sse",
        kinds: &[R, R, T],
        finish: Some("end_turn"),
        output: (3, TokenSource::Counted),
        dialect: Dialect::Anthropic,
        fault: None,
    },
    Expect {
        file: "anthropic_tool_use.sse",
        kinds: &[T, T, C, C, C],
        finish: Some("tool_use"),
        output: (89, TokenSource::Usage),
        dialect: Dialect::Anthropic,
        fault: None,
    },
    Expect {
        file: "anthropic_error.sse",
        kinds: &[T],
        finish: None,
        output: (1, TokenSource::Usage),
        dialect: Dialect::Anthropic,
        fault: Some(FaultKind::StreamErrorEvent),
    },
];

#[test]
fn every_dialect_is_classified() {
    for e in EXPECT {
        let t = time(&read(e.file), &[]);
        assert_eq!(t.token_kinds, e.kinds, "{}", e.file);
        assert_eq!(t.finish_reason.as_deref(), e.finish, "{}", e.file);
        assert_eq!(t.output_tokens(), e.output, "{}", e.file);
        assert_eq!(t.dialect, Some(e.dialect), "{}", e.file);
        assert_eq!(judge_stream("text/event-stream", "u", &t).map(|f| f.kind), e.fault, "{}", e.file);
        assert!(t.response_id.is_some(), "{}", e.file);
        assert!(!t.truncated_event, "{}", e.file);
    }
}

#[test]
fn every_split_position_and_byte_by_byte_give_the_same_stream() {
    for e in EXPECT {
        let bytes = read(e.file);
        let whole = time(&bytes, &[]);
        for cut in 0..=bytes.len() {
            let split = time(&bytes, &[cut]);
            assert_eq!(shape(&split), shape(&whole), "{} split at {cut}", e.file);
        }
        let every: Vec<usize> = (1..bytes.len()).collect();
        let bytewise = time(&bytes, &every);
        assert_eq!(shape(&bytewise), shape(&whole), "{} byte by byte", e.file);
        // Byte by byte, each token event is stamped with the chunk holding its blank line:
        // strictly increasing times.
        assert!(bytewise.token_times_ns.windows(2).all(|w| w[0] < w[1]), "{}", e.file);
    }
}

#[test]
fn line_endings_do_not_matter() {
    for e in EXPECT {
        let lf = read(e.file);
        let text = String::from_utf8(lf.clone()).unwrap();
        let whole = time(&lf, &[]);
        for (name, variant) in [("crlf", text.replace('\n', "\r\n")), ("cr", text.replace('\n', "\r"))] {
            let t = time(variant.as_bytes(), &[]);
            assert_eq!(shape(&t), shape(&whole), "{} {name}", e.file);
            // CR then LF split across two chunks.
            let cut = variant.find("\r\n").map(|i| i + 1).unwrap_or(0);
            assert_eq!(
                shape(&time(variant.as_bytes(), &[cut])),
                shape(&whole),
                "{} {name} split CR|LF",
                e.file
            );
        }
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(&lf);
        assert_eq!(shape(&time(&bom, &[1, 2])), shape(&whole), "{} with a split BOM", e.file);
    }
}

#[test]
fn truncated_transcripts_are_incomplete_never_a_panic() {
    for e in EXPECT {
        let bytes = read(e.file);
        for cut in (0..bytes.len()).step_by(7) {
            let t = time(&bytes[..cut], &[]);
            let judged = judge_stream("text/event-stream", "u", &t);
            if !t.completed() && t.stream_error.is_none() && t.events > 0 {
                assert_eq!(
                    judged.map(|f| f.kind),
                    Some(FaultKind::IncompleteStream),
                    "{} cut at {cut}",
                    e.file
                );
            }
        }
    }
}
