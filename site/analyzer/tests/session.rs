//! The worker's streaming analysis, natively: what `worker.js` feeds it equals the analysis of
//! the same inputs read as text, in any chunking.

use triage_core::lang::Lang;

/// The worker's streaming session (`AnalysisSession`, fed what `File.stream()` yields) gives
/// exactly the report and source excerpts the page computes from the same inputs read as text
/// (`File.text()`: invalid UTF-8 replaced, a leading BOM dropped), in every chunking — lines,
/// UTF-8 sequences and the BOM split anywhere — in both languages.
#[test]
fn the_streaming_session_equals_the_page_analysis_in_any_chunking() {
    use triage_site_analyzer::{AnalysisSession, NamedText, analyze_inputs, excerpts};
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut oom = BOM.to_vec();
    oom.extend_from_slice(include_bytes!("../../../tests/data/oom/h200_200gib.txt"));
    // Broken UTF-8 and a CJK character inside an evidence line, CRLF, no final newline.
    oom.extend_from_slice(
        b"\r\nRuntimeError: CUDA error: out of memory \xFF\xFE \xE4\xB8\xAD\xE6\r\nnext line \xE4\xB8",
    );
    let inputs: Vec<(&str, Vec<u8>, bool)> = vec![
        ("ttft.log", include_bytes!("../../../tests/data/incidents/ttft_queueing.log").to_vec(), true),
        ("oom.txt", oom, true),
        ("empty.log", Vec::new(), true),
        // Starts like a BOM but is not one: those bytes are the input's own.
        ("odd.txt", b"\xEF\xBBnot a BOM\nERROR boom\n".to_vec(), true),
        ("paste", b"\xEF\xBB\xBFa paste keeps its bytes\nERROR engine died\n".to_vec(), false),
    ];
    let texts: Vec<NamedText> = inputs
        .iter()
        .map(|(name, bytes, file)| {
            let bytes = if *file { bytes.strip_prefix(BOM).unwrap_or(bytes) } else { bytes };
            NamedText { name: (*name).into(), text: String::from_utf8_lossy(bytes).into_owned() }
        })
        .collect();
    for lang in [Lang::En, Lang::Zh] {
        let want = analyze_inputs(&texts, lang);
        let want_excerpts = excerpts(&want, &texts);
        assert!(
            want_excerpts
                .iter()
                .any(|(n, lines)| n == "oom.txt" && lines.iter().any(|l| l.1.contains('\u{FFFD}'))),
            "the broken line is not in an excerpt: {want_excerpts:?}"
        );
        let (want, want_excerpts) =
            (serde_json::to_string(&want).unwrap(), serde_json::to_string(&want_excerpts).unwrap());
        for step in [1, 2, 3, 7, 64, 4096, usize::MAX] {
            let mut s = AnalysisSession::new(lang.as_str());
            for (name, bytes, file) in &inputs {
                s.begin(name, *file);
                bytes.chunks(step.min(bytes.len()).max(1)).for_each(|c| s.feed(c));
                s.end();
            }
            assert_eq!(s.finish().unwrap(), want, "report, {lang:?}, chunks of {step}");
            for (name, bytes, file) in &inputs {
                if s.wants_excerpt(name) {
                    s.excerpt_begin(name, *file);
                    for c in bytes.chunks(step.min(bytes.len()).max(1)) {
                        if !s.excerpt_feed(c) {
                            break;
                        }
                    }
                    s.excerpt_end();
                }
            }
            assert_eq!(s.excerpts().unwrap(), want_excerpts, "excerpts, {lang:?}, chunks of {step}");
        }
    }
}

/// The excerpt reader keeps lines as `str::lines` splits them: a CR before LF dropped, a last
/// line without LF (and its CR) kept, only the wanted lines and their context.
#[test]
fn the_excerpt_reader_splits_lines_like_str_lines() {
    use triage_site_analyzer::ExcerptReader;
    let mut r = ExcerptReader::new("x", vec![3, 9]);
    r.feed(b"1\n2\r\n3\n4\n5\n6\n7\n8\n9\r");
    let (name, lines) = r.finish().unwrap();
    assert_eq!(name, "x");
    let got: Vec<(usize, &str, bool)> = lines.iter().map(|(n, t, e)| (*n, t.as_str(), *e)).collect();
    assert_eq!(
        got,
        vec![
            (1, "1", false),
            (2, "2", false),
            (3, "3", true),
            (4, "4", false),
            (5, "5", false),
            (7, "7", false),
            (8, "8", false),
            (9, "9\r", true)
        ]
    );
    assert!(ExcerptReader::new("y", vec![]).finish().is_none());
}
