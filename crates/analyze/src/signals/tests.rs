//! The line scan, the alarms and the blocks, tested together.
use super::scan::{AUX, CAPACITY_KEYS, SCANNER};

/// The wasm32 automaton finds what `aho-corasick` finds, on the scan's own patterns: each
/// pattern alone in a line, and lines holding several, overlapping.
#[test]
fn the_small_automaton_agrees_with_aho_corasick_on_the_table() {
    let (_, _, patterns) = &*SCANNER;
    let ours = crate::needles::Needles::new(patterns);
    let theirs = aho_corasick::AhoCorasick::new(patterns).expect("builds");
    let mut lines: Vec<String> = patterns.iter().map(|p| format!("INFO 12:00:01 [x] {p} (tail)")).collect();
    lines.extend(patterns.chunks(7).map(|c| c.concat()));
    lines
        .extend(patterns.windows(2).map(|w| format!("{}{}", w[0].get(..w[0].len() / 2).unwrap_or(""), w[1])));
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
    all.extend(vllm_needles::NEEDLE_TEXT);
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
    assert_eq!(strip_prefixes("[rank1]:[E ProcessGroupNCCL.cpp:616] x"), "[E ProcessGroupNCCL.cpp:616] x");
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
