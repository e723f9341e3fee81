//! Every fixture in `tests/data` (the corpus, and the parsers' and rules' own): a broken one is
//! never called HEALTHY. An alarm line (an error level, a traceback, an exception, a panic, an
//! error body, a 5xx, a capacity at or below zero) in a HEALTHY report must be a message the
//! catalogue marks benign.

use crate::data;
use libtest_mimic::{Failed, Trial};
use std::path::{Path, PathBuf};
use triage_core::analyze::signals::{self, BENIGN, SIGNALS};
use triage_core::analyze::{Analyzer, report::Verdict};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            // The catalogue's examples are single lines; the catalogue trials read them.
            if p.file_name().is_some_and(|n| n != "catalogue") {
                files(&p, out);
            }
        } else if !p.extension().is_some_and(|x| matches!(x.to_str(), Some("tsv" | "md" | "py")))
            && p.file_name().is_some_and(|n| n != "manifest.jsonl")
        {
            out.push(p);
        }
    }
}

fn check(path: &Path) -> Result<(), Failed> {
    let text = String::from_utf8_lossy(&std::fs::read(path).map_err(|e| e.to_string())?).into_owned();
    let mut a = Analyzer::new();
    a.add_text(&path.file_name().unwrap().to_string_lossy(), &text);
    if a.finish().verdict != Verdict::Healthy {
        return Ok(());
    }
    let unexplained: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| signals::alarm(signals::strip_prefixes(l), l).is_some())
        .filter(|(_, l)| !signals::matches(l).iter().any(|&i| SIGNALS[i].rules.contains(&BENIGN)))
        .map(|(i, l)| format!("line {}: {l}", i + 1))
        .take(3)
        .collect();
    if unexplained.is_empty() {
        Ok(())
    } else {
        Err(format!("called HEALTHY with error lines:\n{}", unexplained.join("\n")).into())
    }
}

pub fn trials() -> Vec<Trial> {
    let root = data("");
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    // A moved folder would leave no trial and nothing failing: say how many there must be.
    let found = all.len();
    let mut trials: Vec<Trial> = all
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
            Trial::test(format!("fixture::{name}"), move || check(&p))
        })
        .collect();
    trials.push(Trial::test("fixture::found", move || {
        if found >= 300 {
            Ok(())
        } else {
            Err(format!("{found} fixtures found in tests/data; there are over 300").into())
        }
    }));
    trials
}
