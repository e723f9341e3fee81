//! The incident corpus: one trial per row, and the score.

use crate::{data, tsv};
use libtest_mimic::{Failed, Trial};
use std::collections::BTreeMap;
use std::path::Path;
use triage_core::analyze::{Analyzer, Lang, report::Report};

/// One corpus row.
#[derive(Clone, Debug)]
pub struct Case {
    /// Relative to `tests/data` (`incidents/vllm/oom-….log`, `smi/smi_idle.txt`).
    pub file: String,
    pub verdict: String,
    /// `None` for `-`.
    pub top_rule: Option<String>,
}

impl Case {
    /// The trial's name: the path under `incidents/` (or under `tests/data` for shared fixtures).
    fn name(&self) -> String {
        self.file.strip_prefix("incidents/").unwrap_or(&self.file).to_owned()
    }
}

fn read_cases(listing: &str, folder: &str, problems: &mut Vec<String>) -> Vec<Case> {
    let path = data(listing);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    tsv(&text)
        .into_iter()
        .filter_map(|(no, cols)| {
            if cols.len() < 3 {
                problems.push(format!("{listing}:{no}: fewer than 3 columns"));
                return None;
            }
            let file = if folder.is_empty() && cols[0].contains('/') {
                cols[0].clone()
            } else {
                format!("incidents/{}{}", folder, cols[0])
            };
            Some(Case {
                file,
                verdict: cols[1].trim().to_owned(),
                top_rule: (cols[2].trim() != "-").then(|| cols[2].trim().to_owned()),
            })
        })
        .collect()
}

/// Every row of the root `EXPECT.tsv` and of each folder's `CASES.tsv`, and the listing
/// problems (a file not listed, a row without a file).
pub fn cases() -> (Vec<Case>, Vec<String>) {
    let mut problems = Vec::new();
    let mut all = read_cases("incidents/EXPECT.tsv", "", &mut problems);
    let mut listed_root: Vec<String> =
        all.iter().filter_map(|c| c.file.strip_prefix("incidents/").map(str::to_owned)).collect();
    let mut folders: Vec<String> = Vec::new();
    for e in std::fs::read_dir(data("incidents")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            folders.push(name);
        } else if name != "EXPECT.tsv" && name != "README.md" && !listed_root.contains(&name) {
            problems.push(format!("incidents/{name} is not listed in EXPECT.tsv"));
        }
    }
    listed_root.sort();
    folders.sort();
    for folder in folders {
        let listing = format!("incidents/{folder}/CASES.tsv");
        let rows = read_cases(&listing, &format!("{folder}/"), &mut problems);
        for e in std::fs::read_dir(data(&format!("incidents/{folder}"))).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != "CASES.tsv" && !rows.iter().any(|c| c.file.ends_with(&format!("/{name}"))) {
                problems.push(format!("incidents/{folder}/{name} is not listed in {listing}"));
            }
        }
        all.extend(rows);
    }
    for c in &all {
        if !data(&c.file).is_file() {
            problems.push(format!("{} is listed but does not exist", c.file));
        }
    }
    (all, problems)
}

fn analyze(path: &Path, text: &str, lang: Lang) -> Report {
    let mut a = Analyzer::new().with_lang(lang);
    a.add_text(&path.file_name().unwrap().to_string_lossy(), text);
    a.finish()
}

fn read(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

/// What the snapshot keeps: the verdict and each finding's rule, class, confidence, summary and
/// evidence (line numbers and text).
fn digest(r: &Report) -> String {
    let mut out = format!("verdict: {}\n", r.verdict.as_str());
    for f in &r.findings {
        out += &format!("- {} ({}, {:.2}): {}\n", f.rule, f.class.as_str(), f.confidence, f.summary);
        for e in &f.evidence {
            out += &format!("    {}:{}: {}\n", e.input, e.line, e.text);
        }
    }
    out
}

/// The first finding that names something to fix: advisories (blind spots in observation,
/// `rules::ADVISORIES`) never decide the verdict, so they are not its top rule either.
fn top(r: &Report) -> Option<String> {
    use triage_core::analyze::rules::{ADVISORIES, listed};
    r.findings.iter().find(|f| !listed(ADVISORIES, &f.rule)).map(|f| f.rule.clone())
}

fn check(case: &Case) -> Result<(), Failed> {
    let path = data(&case.file);
    let text = read(&path);
    let r = analyze(&path, &text, Lang::En);
    let mut wrong = Vec::new();
    if r.verdict.as_str() != case.verdict || top(&r) != case.top_rule {
        wrong.push(format!(
            "expected {} / {}, got {} / {}\n{}",
            case.verdict,
            case.top_rule.as_deref().unwrap_or("-"),
            r.verdict.as_str(),
            top(&r).as_deref().unwrap_or("-"),
            digest(&r)
        ));
    }
    for f in &r.findings {
        if f.evidence.is_empty() || f.remediation.is_empty() {
            wrong.push(format!("{} cites no line or says nothing to change", f.rule));
        }
    }
    // The same findings in Chinese, only the text differs.
    let zh = analyze(&path, &text, Lang::Zh);
    let key = |r: &Report| {
        r.findings.iter().map(|f| (f.rule.clone(), f.confidence, f.evidence.clone())).collect::<Vec<_>>()
    };
    if zh.verdict != r.verdict || key(&zh) != key(&r) {
        wrong.push("the Chinese report differs beyond its text".to_owned());
    }
    // A messy copy (CRLF, colours on every third line) reads the same.
    let messy: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i % 3 == 0 { format!("\x1b[32m{l}\x1b[0m\r\n") } else { format!("{l}\r\n") })
        .collect();
    let m = analyze(&path, &messy, Lang::En);
    let rules = |r: &Report| r.findings.iter().map(|f| f.rule.clone()).collect::<Vec<_>>();
    if m.verdict != r.verdict || rules(&m) != rules(&r) {
        wrong.push(format!("a messy copy reads differently: {} {:?}", m.verdict.as_str(), rules(&m)));
    }
    if !wrong.is_empty() {
        return Err(wrong.join("\n").into());
    }
    let name = case.name().replace('/', "__");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(&path);
    settings.bind(|| insta::assert_snapshot!(name, digest(&r)));
    Ok(())
}

/// The score over every row: accuracy, false HEALTHY, confusions.
fn score(cases: &[Case]) -> Result<(), Failed> {
    let mut right = 0;
    let mut false_healthy = Vec::new();
    let mut confusions: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in cases {
        let path = data(&c.file);
        let r = analyze(&path, &read(&path), Lang::En);
        let got = r.verdict.as_str();
        if got == c.verdict {
            right += 1;
        } else {
            *confusions.entry((c.verdict.clone(), got.to_owned())).or_default() += 1;
        }
        if got == "HEALTHY" && c.verdict != "HEALTHY" {
            false_healthy.push(c.name());
        }
    }
    let n = cases.len();
    let accuracy = right as f64 / n.max(1) as f64;
    let mut worst: Vec<_> = confusions.into_iter().collect();
    worst.sort_by_key(|w| std::cmp::Reverse(w.1));
    println!(
        "corpus: {n} cases, verdict right {right} ({:.1} %), false HEALTHY {}, confusions (expected → got): {:?}",
        accuracy * 100.0,
        false_healthy.len(),
        worst.iter().take(6).map(|((e, g), k)| format!("{e}→{g} ×{k}")).collect::<Vec<_>>()
    );
    if !false_healthy.is_empty() {
        return Err(format!("broken systems called HEALTHY: {false_healthy:?}").into());
    }
    if n < 150 {
        return Err(format!("the corpus has {n} cases; it must keep at least 150").into());
    }
    if accuracy < 0.9 {
        return Err(format!("verdict accuracy {:.1} % is below 90 %", accuracy * 100.0).into());
    }
    Ok(())
}

pub fn trials() -> Vec<Trial> {
    let (cases, problems) = cases();
    let mut trials: Vec<Trial> = cases
        .iter()
        .map(|c| {
            let c = c.clone();
            Trial::test(format!("case::{}", c.name()), move || check(&c))
        })
        .collect();
    trials.push(Trial::test("corpus::listing", move || {
        if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
    }));
    trials.push(Trial::test("corpus::score", move || score(&cases)));
    trials
}
