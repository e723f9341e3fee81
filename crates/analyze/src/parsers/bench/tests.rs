//! The benchmark parser's tests: every tool's fixture, console and JSON, wrapped rows, mixed
//! pastes, totality on garbage and cut input.

use super::vllm::vllm_json_key;
use super::*;
use crate::analyze;
use crate::testutil::{fixture, run};

const VLLM_TXT: &str = fixture!("bench/vllm_bench_serve.txt");
const VLLM_JSON: &str = fixture!("bench/vllm_bench_serve.json");
const VLLM_PRETTY: &str = fixture!("bench/vllm_bench_serve_pretty.json");
const SGLANG_TXT: &str = fixture!("bench/sglang_bench_serving.txt");
const AIPERF_TXT: &str = fixture!("bench/aiperf_console.txt");
const AIPERF_JSON: &str = fixture!("bench/profile_export_aiperf.json");
const GUIDELLM_JSON: &str = fixture!("bench/guidellm_benchmarks.json");
const GUIDELLM_TXT: &str = fixture!("bench/guidellm_console.txt");

fn fig(b: &BenchFacts, name: &str) -> f64 {
    *b.figures.get(name).unwrap_or_else(|| panic!("no {name} in {:?}", b.figures))
}

#[test]
fn trtllm_bench_report() {
    let (b, _) = run(
        "bench",
        concat!(
            "===========================================================\n",
            "= PERFORMANCE OVERVIEW\n",
            "===========================================================\n",
            "Request Throughput (req/sec):                     12.4812\n",
            "[TTFT] AVERAGE: 812.2210\n",
            "[TTFT] P99    : 6120.4410\n",
            "[TPOT] P99    : 41.8820\n",
        ),
    )
    .take(|f| f.bench);
    let b = &b[0];
    assert_eq!(b.figures.get("request_throughput"), Some(&12.4812));
    assert_eq!(b.figures.get("ttft_ms.p99"), Some(&6120.441));
    assert_eq!(b.figures.get("ttft_ms.mean"), Some(&812.221));
    assert_eq!(b.figures.get("tpot_ms.p99"), Some(&41.882));
}

#[test]
fn vllm_console() {
    let (b, sections) = run("bench", VLLM_TXT).take(|f| f.bench);
    let kinds: Vec<_> = sections.iter().map(|s| s.kind).collect();
    assert!(kinds.iter().all(|k| *k == InputKind::BenchOutput), "{sections:?}");
    assert_eq!(b.len(), 1);
    let b = &b[0];
    assert_eq!(b.tool, "vllm");
    assert_eq!(fig(b, "completed"), 1000.0);
    assert_eq!(fig(b, "failed"), 0.0);
    assert_eq!(fig(b, "request_throughput"), 22.74);
    assert_eq!(fig(b, "output_throughput"), 2862.61);
    assert_eq!(fig(b, "ttft_ms.mean"), 1509.36);
    assert_eq!(fig(b, "ttft_ms.median"), 1459.52);
    assert_eq!(fig(b, "ttft_ms.p99"), 3137.85);
    assert_eq!(fig(b, "tpot_ms.p99"), 132.52);
    assert_eq!(fig(b, "itl_ms.p99"), 421.73);
    assert_eq!(fig(b, "e2e_ms.mean"), 14813.97);
    assert!(b.evidence[0].text.starts_with("P99 TTFT (ms):"), "{:?}", b.evidence);
    assert!(b.notes.iter().any(|n| n.contains("pools every gap")));
}

#[test]
fn vllm_json_one_line_and_pretty() {
    let (b, sections) = run("bench", VLLM_JSON).take(|f| f.bench);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    let one = &b[0];
    assert_eq!(one.tool, "vllm");
    assert_eq!(fig(one, "ttft_ms.mean"), 1509.36);
    assert_eq!(fig(one, "ttft_ms.p99"), 3137.85);
    assert_eq!(fig(one, "ttft_ms.std"), 702.1);
    assert_eq!(fig(one, "e2e_ms.p99"), 20012.4);
    assert_eq!(fig(one, "duration_s"), 43.97);
    assert_eq!(fig(one, "failed"), 4.0);
    let (p, sections) = run("bench", VLLM_PRETTY).take(|f| f.bench);
    // The opening `{` (and keys before the first benchmark word) are handed to the section
    // that follows: one section from line 1.
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert_eq!((sections[0].kind, sections[0].lines[0]), (InputKind::BenchOutput, 1));
    assert!(sections.iter().all(|s| s.kind != InputKind::RequestLog), "{sections:?}");
    assert_eq!(p.len(), 1);
    for (k, v) in &one.figures {
        if k != "failed" && k != "num_prompts" {
            assert_eq!(p[0].figures.get(k), Some(v), "{k}");
        }
    }
    assert_eq!(p[0].lines["ttft_ms.p99"].text, "\"p99_ttft_ms\": 3137.85,");
}

#[test]
fn sglang_console() {
    let (b, _) = run("bench", SGLANG_TXT).take(|f| f.bench);
    let b = &b[0];
    assert_eq!(b.tool, "sglang");
    assert_eq!(fig(b, "e2e_ms.mean"), 9011.41);
    assert_eq!(fig(b, "e2e_ms.median"), 8702.35);
    assert_eq!(fig(b, "itl_ms.p95"), 41.77);
    assert_eq!(fig(b, "itl_ms.max"), 1980.65);
    assert_eq!(fig(b, "concurrency.mean"), 181.37);
}

#[test]
fn aiperf_console_and_json() {
    let (b, sections) = run("bench", AIPERF_TXT).take(|f| f.bench);
    assert_eq!(sections.len(), 1, "{sections:?}");
    let b = &b[0];
    assert_eq!(b.tool, "aiperf");
    assert_eq!(fig(b, "ttft_ms.mean"), 18.26);
    assert_eq!(fig(b, "ttft_ms.p99"), 68.82);
    assert_eq!(fig(b, "ttft_ms.median"), 16.62);
    // aiperf's "Inter Token Latency" is TPOT.
    assert_eq!(fig(b, "tpot_ms.p99"), 12.48);
    assert!(!b.figures.contains_key("itl_ms.p99"));
    assert_eq!(fig(b, "e2e_ms.max"), 769.57);
    assert_eq!(fig(b, "output_throughput"), 10_944.03);
    assert_eq!(fig(b, "request_throughput"), 255.54);
    assert_eq!(fig(b, "completed"), 711.0);
    assert!(b.notes.iter().any(|n| n.contains("Inter Token Latency")));

    let (j, sections) = run("bench", AIPERF_JSON).take(|f| f.bench);
    assert!(sections.iter().any(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
    let j = &j[0];
    assert_eq!(j.tool, "aiperf");
    assert_eq!(fig(j, "ttft_ms.mean"), 18.26);
    assert_eq!(fig(j, "ttft_ms.p99"), 68.82);
    assert_eq!(fig(j, "tpot_ms.mean"), 11.23);
    assert_eq!(fig(j, "itl_ms.p99"), 30.54);
    assert_eq!(fig(j, "duration_s"), 2.78);
    assert_eq!(fig(j, "failed"), 3.0);
}

#[test]
fn guidellm_json_sweep() {
    let (b, sections) = run("bench", GUIDELLM_JSON).take(|f| f.bench);
    assert!(sections.iter().any(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b.iter().all(|r| r.tool == "guidellm"));
    assert_eq!(b[0].label.as_deref(), Some("synchronous"));
    assert_eq!(b[1].label.as_deref(), Some("throughput"));
    assert_eq!(fig(&b[1], "ttft_ms.mean"), 850.5);
    assert_eq!(fig(&b[1], "ttft_ms.median"), 610.2);
    assert_eq!(fig(&b[1], "ttft_ms.p99"), 4120.0);
    assert_eq!(fig(&b[1], "e2e_ms.p99"), 9800.0);
    assert_eq!(fig(&b[1], "tpot_ms.mean"), 22.1);
    assert_eq!(fig(&b[1], "guidellm_tpot_incl_ttft_ms.mean"), 27.3);
    assert_eq!(fig(&b[1], "request_throughput"), 11.62);
    assert_eq!(fig(&b[1], "completed"), 1396.0);
    assert_eq!(fig(&b[1], "failed"), 4.0);
    assert!(b[1].notes.iter().any(|n| n.contains("TTFT included")));
}

#[test]
fn guidellm_console_tables() {
    let (b, sections) = run("bench", GUIDELLM_TXT).take(|f| f.bench);
    assert!(sections.iter().all(|s| s.kind == InputKind::BenchOutput), "{sections:?}");
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(b[0].label.as_deref(), Some("synchronous"));
    assert_eq!(fig(&b[0], "ttft_ms.median"), 45.1);
    assert_eq!(fig(&b[0], "e2e_ms.p95"), 1300.0);
    assert_eq!(fig(&b[1], "ttft_ms.p95"), 3900.2);
    assert_eq!(fig(&b[1], "tpot_ms.median"), 21.4);
    assert_eq!(fig(&b[1], "request_throughput"), 11.6);
    assert_eq!(fig(&b[1], "concurrency.median"), 180.0);
    assert!(!b[1].figures.contains_key("ttft_ms.p99"));
}

/// A terminal 60 columns wide wraps every table row; the figures are the same.
#[test]
fn guidellm_rows_wrapped_by_a_terminal_read_the_same() {
    let wrapped: String = GUIDELLM_TXT
        .lines()
        .flat_map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let pieces: Vec<String> = chars.chunks(60).map(|c| c.iter().collect()).collect();
            if pieces.is_empty() { vec![String::new()] } else { pieces }
        })
        .map(|l| l + "\n")
        .collect();
    let ((whole, _), (cut, _)) =
        (run("bench", GUIDELLM_TXT).take(|f| f.bench), run("bench", &wrapped).take(|f| f.bench));
    assert_eq!(cut.len(), whole.len());
    for (c, w) in cut.iter().zip(&whole) {
        assert_eq!(c.figures, w.figures);
        assert_eq!(c.label, w.label);
    }
}

#[test]
fn two_results_and_noise() {
    let text = format!("{VLLM_TXT}{VLLM_TXT}100%|██████████| 1000/1000 [00:43<00:00, 22.74it/s]\n");
    let (b, sections) = run("bench", &text).take(|f| f.bench);
    assert_eq!(b.len(), 2);
    assert!(sections.iter().flat_map(|s| &s.issues).any(|i| i.message.contains("skipped")));
}

#[test]
fn total_on_garbage_and_cut_json() {
    for cut in (0..VLLM_JSON.len()).step_by(7) {
        if VLLM_JSON.is_char_boundary(cut) {
            let _ = run("bench", &VLLM_JSON[..cut]).take(|f| f.bench);
        }
    }
    let (b, _) =
        run("bench", "Mean TTFT (ms): abc\n{\"mean_ttft_ms\": \"x\", \"p99_ttft_ms\": 1e999}\n]]]}}}\n")
            .take(|f| f.bench);
    assert!(b.iter().all(|r| r.figures.values().all(|v| v.is_finite())));
    let deep = "[".repeat(1000) + "{\"mean_ttft_ms\": 5}" + &"]".repeat(1000);
    let _ = run("bench", &format!("{{\"p99_ttft_ms\": 1, \"x\": {deep}}}\n")).take(|f| f.bench);
}

#[test]
fn every_fixture_cut_anywhere_is_read_without_panic() {
    let fixtures = [
        VLLM_TXT,
        VLLM_JSON,
        VLLM_PRETTY,
        SGLANG_TXT,
        AIPERF_TXT,
        AIPERF_JSON,
        GUIDELLM_JSON,
        GUIDELLM_TXT,
        fixture!("configs/claude_settings.json"),
        fixture!("configs/claude_settings_oneline.json"),
        fixture!("configs/codex_config.toml"),
        fixture!("configs/codex_oneline.toml"),
        fixture!("configs/exports.sh"),
        fixture!("sglang/server.log"),
        fixture!("tgi/router.log"),
        fixture!("tgi/router_json.log"),
    ];
    for text in fixtures {
        let step = (text.len() / 120).max(1);
        for cut in (0..text.len()).step_by(step) {
            // Cut at a byte that may sit inside a character: the analyzer reads lossily.
            let bytes = &text.as_bytes()[cut..];
            let mut a = crate::Analyzer::new();
            a.begin("cut");
            a.feed(bytes);
            a.feed(&text.as_bytes()[..cut]);
            let report = a.finish();
            assert!(report.findings.iter().all(|f| (0.0..=1.0).contains(&f.confidence)));
        }
    }
}

#[test]
fn names() {
    assert_eq!(vllm_json_key("p99.9_ttft_ms").as_deref(), Some("ttft_ms.p99.9"));
    assert_eq!(vllm_json_key("median_e2e_latency_ms").as_deref(), Some("e2e_ms.median"));
    assert_eq!(vllm_json_key("mean_ttft"), None);
    assert_eq!(stat_name("p05").as_deref(), Some("p5"));
    assert_eq!(stat_name("p999").as_deref(), Some("p99.9"));
    assert_eq!(stat_name("Mdn").as_deref(), Some("median"));
    assert_eq!(console_figure("P90 TPOT (ms)"), Some(("tpot_ms.p90".into(), 1.0)));
    assert_eq!(console_figure("Mean E2E Latency (ms)"), Some(("e2e_ms.mean".into(), 1.0)));
    assert_eq!(console_figure("Mean Foo (ms)"), None);
}

#[test]
fn mixed_paste_splits_into_sections() {
    let settings = fixture!("configs/claude_settings_oneline.json");
    let access = "INFO:     10.0.0.7:51234 - \"POST /api/v1/messages?utm_source=taotoken_aicg_blog_end HTTP/1.1\" 404 Not Found\n";
    let paste = format!("{settings}{access}{access}{VLLM_TXT}");
    let report = analyze(&[("paste", &paste)]);
    let kinds: Vec<_> = report.inputs.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [InputKind::ClientConfig, InputKind::VllmLog, InputKind::BenchOutput],
        "{:?}",
        report.inputs
    );
    assert_eq!(report.inputs[1].lines, [2, 3]);
}
