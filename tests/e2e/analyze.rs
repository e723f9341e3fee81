//! The incident corpus (tests/data/incidents, described in EXPECT.tsv) through the analyzer:
//! each gives its expected verdict and top rule, and its whole report is snapshotted (insta),
//! so any change in what the product tells a person shows up in review.

use std::path::{Path, PathBuf};
use triage_core::analyze::{Analyzer, report::Report};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(rel)
}

fn analyze_file(path: &Path) -> Report {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut a = Analyzer::new();
    a.add_text(&name, &std::fs::read_to_string(path).unwrap());
    a.finish()
}

struct Expect {
    file: String,
    verdict: String,
    top_rule: Option<String>,
}

fn expectations() -> Vec<Expect> {
    std::fs::read_to_string(data("incidents/EXPECT.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let file =
                if cols[0].contains('/') { cols[0].to_owned() } else { format!("incidents/{}", cols[0]) };
            Expect {
                file,
                verdict: cols[1].to_owned(),
                top_rule: (cols[2] != "-").then(|| cols[2].to_owned()),
            }
        })
        .collect()
}

#[test]
fn every_incident_gets_its_verdict_and_top_rule() {
    let expect = expectations();
    // Every fixture is listed, and every listed fixture exists.
    let mut files: Vec<String> = std::fs::read_dir(data("incidents"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "EXPECT.tsv")
        .collect();
    files.sort();
    let mut listed: Vec<String> =
        expect.iter().filter_map(|e| e.file.strip_prefix("incidents/").map(str::to_owned)).collect();
    listed.sort();
    assert_eq!(files, listed, "tests/data/incidents and EXPECT.tsv disagree");
    for e in &expect {
        let r = analyze_file(&data(&e.file));
        assert_eq!(
            r.verdict.as_str(),
            e.verdict,
            "{}: {:?}",
            e.file,
            r.findings.iter().map(|f| &f.rule).collect::<Vec<_>>()
        );
        assert_eq!(r.findings.first().map(|f| f.rule.clone()), e.top_rule, "{}", e.file);
        for f in &r.findings {
            assert!(!f.evidence.is_empty(), "{}: {} cites no line", e.file, f.rule);
            assert!(!f.remediation.is_empty(), "{}: {} says nothing to change", e.file, f.rule);
        }
        // Chart series are long lists of numbers: the snapshot keeps their lengths.
        let mut v = serde_json::to_value(&r).unwrap();
        if let Some(series) = v.get_mut("series").and_then(|s| s.as_object_mut()) {
            for points in series.values_mut() {
                *points = serde_json::json!(format!("{} points", points.as_array().map_or(0, Vec::len)));
            }
        }
        insta::assert_json_snapshot!(e.file.replace("incidents/", "").replace('/', "__"), v);
    }
}

/// Every listed incident analysed in Chinese: the same verdict, rules, classes, confidences,
/// evidence, inputs, figure values and series as in English; only the text differs, and the
/// titles and summaries are Chinese.
#[test]
fn every_incident_reads_the_same_in_chinese() {
    use triage_core::lang::{Lang, has_cjk};
    for e in expectations() {
        let path = data(&e.file);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let en = analyze_file(&path);
        let mut a = Analyzer::new().with_lang(Lang::Zh);
        a.add_text(&name, &text);
        let zh = a.finish();
        assert_eq!(zh.verdict, en.verdict, "{}", e.file);
        assert_eq!(zh.inputs.len(), en.inputs.len(), "{}", e.file);
        for (z, n) in zh.inputs.iter().zip(&en.inputs) {
            assert_eq!(
                (&z.name, z.kind, z.lines, z.issues.len()),
                (&n.name, n.kind, n.lines, n.issues.len())
            );
        }
        assert_eq!(zh.findings.len(), en.findings.len(), "{}", e.file);
        for (z, n) in zh.findings.iter().zip(&en.findings) {
            assert_eq!((&z.rule, z.class, z.confidence), (&n.rule, n.class, n.confidence), "{}", e.file);
            assert_eq!(z.evidence, n.evidence, "{}: {}", e.file, z.rule);
            assert_eq!(z.remediation.len(), n.remediation.len(), "{}: {}", e.file, z.rule);
            assert!(has_cjk(&z.title) && has_cjk(&z.summary), "{}: {z:?}", e.file);
        }
        let values =
            |r: &Report| r.figures.iter().map(|(k, f)| (k.clone(), f.value.clone())).collect::<Vec<_>>();
        assert_eq!(values(&zh), values(&en), "{}", e.file);
        assert_eq!(zh.series, en.series, "{}", e.file);
    }
}

#[test]
fn messy_copies_give_the_same_findings() {
    // CRLF line ends, ANSI colours, a partial last line: what real pastes look like.
    for e in expectations() {
        let path = data(&e.file);
        let clean = analyze_file(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let messy: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| if i % 3 == 0 { format!("\x1b[32m{l}\x1b[0m\r\n") } else { format!("{l}\r\n") })
            .collect();
        let mut a = Analyzer::new();
        a.add_text(path.file_name().unwrap().to_str().unwrap(), &messy);
        let r = a.finish();
        let rules = |r: &Report| r.findings.iter().map(|f| f.rule.clone()).collect::<Vec<_>>();
        assert_eq!(rules(&r), rules(&clean), "{}", e.file);
        assert_eq!(r.verdict, clean.verdict, "{}", e.file);
    }
}
