//! Real pastes from public bug reports (`tests/data/real-pastes/`, each row of its
//! `manifest.jsonl` with the thread it came from): the score a stranger's paste gets.
//!
//! One trial, `real::score`, prints top-1 (the verdict is the labelled class), INCONCLUSIVE,
//! confidently wrong and false-HEALTHY counts and every miss, and fails below the bar. The bar
//! is what the analyzer reaches today, so a change that loses a case fails; raise it with every
//! family that lands. The pastes are kept verbatim (damage included): they are for learning how
//! strangers' text looks, and a rule written for one of them proves nothing.

use crate::data;
use libtest_mimic::{Failed, Trial};
use triage_core::analyze::{Analyzer, report::Verdict};

/// Top-1 right at least this many of the 80.
const MIN_RIGHT: usize = 77;
/// INCONCLUSIVE at most this many.
const MAX_INCONCLUSIVE: usize = 3;
/// Broken systems called HEALTHY at most this many (the goal is none).
const MAX_FALSE_HEALTHY: usize = 0;

struct Row {
    file: String,
    expected: String,
}

fn rows() -> Result<Vec<Row>, String> {
    let path = data("real-pastes/manifest.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: serde_json::Value =
                serde_json::from_str(l).map_err(|e| format!("manifest.jsonl:{}: {e}", i + 1))?;
            let field = |k: &str| {
                v.get(k)
                    .and_then(|x| x.as_str())
                    .map(str::to_owned)
                    .ok_or(format!("manifest.jsonl:{}: no {k}", i + 1))
            };
            // Every paste keeps the thread it came from.
            field("source")?;
            Ok(Row { file: field("file")?, expected: field("expected_class")? })
        })
        .collect()
}

fn score() -> Result<(), Failed> {
    let rows = rows()?;
    let (mut right, mut inconclusive, mut wrong, mut false_healthy) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for r in &rows {
        let path = data(&format!("real-pastes/{}", r.file));
        let text =
            String::from_utf8_lossy(&std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?)
                .into_owned();
        let mut a = Analyzer::new();
        a.add_text(&r.file, &text);
        let report = a.finish();
        let got = report.verdict.as_str();
        if got == r.expected {
            right += 1;
            continue;
        }
        if report.verdict == Verdict::Inconclusive {
            inconclusive += 1;
        } else {
            wrong += 1;
        }
        if report.verdict == Verdict::Healthy {
            false_healthy += 1;
        }
        misses.push(format!("  {}: expected {}, got {got}", r.file, r.expected));
    }
    let n = rows.len();
    println!(
        "real pastes: {n} cases, top-1 {right} ({:.0} %), INCONCLUSIVE {inconclusive}, wrong {wrong}, false HEALTHY {false_healthy}\n{}",
        100.0 * right as f64 / n.max(1) as f64,
        misses.join("\n")
    );
    let mut problems = Vec::new();
    if n != 80 {
        problems.push(format!("the manifest lists {n} pastes; there are 80"));
    }
    if right < MIN_RIGHT {
        problems.push(format!("{right} right, below the bar of {MIN_RIGHT}"));
    }
    if inconclusive > MAX_INCONCLUSIVE {
        problems.push(format!("{inconclusive} INCONCLUSIVE, above the bar of {MAX_INCONCLUSIVE}"));
    }
    if false_healthy > MAX_FALSE_HEALTHY {
        problems.push(format!(
            "{false_healthy} broken systems called HEALTHY, above the bar of {MAX_FALSE_HEALTHY}"
        ));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ").into()) }
}

pub fn trials() -> Vec<Trial> {
    vec![Trial::test("real::score", score)]
}
