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
        // The session hands over what `triage analyze --format json` prints: pretty, a final
        // newline, terminal controls escaped.
        let want =
            triage_core::safe::escape_json_controls(&(serde_json::to_string_pretty(&want).unwrap() + "\n"))
                .into_owned();
        let want_excerpts = serde_json::to_string(&want_excerpts).unwrap();
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

/// The excerpt pass as `worker.js` makes it: only the regions of the plan, each after a seek.
fn planned_excerpts(
    s: &mut triage_site_analyzer::AnalysisSession,
    name: &str,
    bytes: &[u8],
    step: usize,
) -> u64 {
    let plan = s.excerpt_plan(name);
    s.excerpt_begin(name, true);
    let mut read = 0u64;
    'regions: for r in plan.chunks(3) {
        s.excerpt_seek(r[2] as usize);
        let end = if r[1] < 0.0 { bytes.len() } else { r[1] as usize };
        for c in bytes[r[0] as usize..end].chunks(step) {
            read += c.len() as u64;
            if !s.excerpt_feed(c) {
                break 'regions;
            }
        }
    }
    s.excerpt_end();
    read
}

/// A large input with evidence near its start and its end: the excerpt pass reads the regions
/// around them only, and shows exactly what reading all of it shows, in any chunking.
#[test]
fn the_excerpt_pass_reads_only_around_the_evidence_and_shows_the_same() {
    use triage_site_analyzer::{AnalysisSession, NamedText, analyze_inputs, excerpts};
    let mut big = b"\xEF\xBB\xBF".to_vec();
    big.extend_from_slice(include_bytes!("../../../tests/data/oom/h200_200gib.txt"));
    let filler = b"INFO 01-01 00:00:01 [engine.py:1] nothing to see here, just a busy engine log line\n";
    while big.len() < 12 << 20 {
        big.extend_from_slice(filler);
    }
    big.extend_from_slice(include_bytes!("../../../tests/data/incidents/ttft_queueing.log"));
    let text = NamedText {
        name: "big.log".into(),
        text: String::from_utf8_lossy(big.strip_prefix(b"\xEF\xBB\xBF").unwrap()).into_owned(),
    };
    let want = analyze_inputs(std::slice::from_ref(&text), Lang::En);
    let want_excerpts = serde_json::to_string(&excerpts(&want, &[text])).unwrap();
    assert!(want_excerpts.len() > 100, "{want_excerpts}");
    for step in [1 << 16, 1 << 20, 3 << 20] {
        let mut s = AnalysisSession::new("en");
        s.begin("big.log", true);
        big.chunks(step).for_each(|c| s.feed(c));
        s.end();
        s.finish().unwrap();
        let read = planned_excerpts(&mut s, "big.log", &big, step);
        assert_eq!(s.excerpts().unwrap(), want_excerpts, "chunks of {step}");
        assert!(read < big.len() as u64 / 2, "read {read} of {} B again", big.len());
    }
}

#[test]
fn regions_cover_each_wanted_line_and_merge_when_they_touch() {
    use triage_site_analyzer::session::plan;
    let marks = [(0, 1), (1000, 50), (2000, 100), (3000, 150)];
    assert_eq!(plan(&marks, &[]), vec![]);
    assert_eq!(plan(&marks, &[2]), vec![(0, Some(1000), 1)]);
    // Line 120: from the mark at line 100 to the one at 150.
    assert_eq!(plan(&marks, &[120]), vec![(2000, Some(3000), 100)]);
    // Near a mark, the context reaches back: line 51 needs line 49.
    assert_eq!(plan(&marks, &[51]), vec![(0, Some(2000), 1)]);
    // Past the last mark: to the end.
    assert_eq!(plan(&marks, &[10, 160]), vec![(0, Some(1000), 1), (3000, None, 150)]);
    // Touching regions merge.
    assert_eq!(plan(&marks, &[60, 120]), vec![(1000, Some(3000), 50)]);
}
