//! Paste damage, undone: every corpus case, damaged line by line the ways real pastes are
//! (a markdown quote, journald, docker compose, CRI and `kubectl --prefix` prefixes, a log
//! viewer's box frame, a JSON logger's wrapper, HTML left from a web page, and two of them
//! combined), gives the same verdict and the same findings citing the same line numbers as the
//! clean case (`analyze::normalize`). One trial per kind of damage; a failure lists the cases
//! that read differently.

use crate::cases::{Case, cases};
use crate::data;
use libtest_mimic::{Failed, Trial};
use triage_core::analyze::{Analyzer, report::Report};

/// One kind of damage: how it changes one line.
struct Damage {
    name: &'static str,
    apply: fn(&str) -> String,
    /// Cases this damage cannot be undone for, by design (what they already contain makes the
    /// damage ambiguous), as a predicate over the clean text.
    skip: fn(&str) -> bool,
}

fn json_wrap(line: &str) -> String {
    format!(
        "{{\"log\":{},\"stream\":\"stderr\",\"time\":\"2025-03-04T10:00:01.123456789Z\"}}",
        serde_json::to_string(&format!("{line}\n")).unwrap_or_default()
    )
}

const DAMAGES: &[Damage] = &[
    Damage { name: "markdown-quote", apply: |l| format!("> {l}"), skip: |_| false },
    Damage {
        name: "journald",
        apply: |l| format!("Mar  4 10:00:01 gpu-node-3 vllm[2215]: {l}"),
        skip: |_| false,
    },
    Damage { name: "compose", apply: |l| format!("engine-1  | {l}"), skip: |_| false },
    Damage {
        name: "cri",
        apply: |l| format!("2025-03-04T10:00:01.123456789Z stdout F {l}"),
        skip: |_| false,
    },
    Damage { name: "kubectl-prefix", apply: |l| format!("[pod/engine-0/server] {l}"), skip: |_| false },
    // A frame around lines that already draw frames (box tables) is ambiguous.
    Damage {
        name: "box-frame",
        apply: |l| format!("│ {l:<100} │"),
        skip: |text| text.contains('│') || text.contains('┃') || text.contains('║'),
    },
    Damage { name: "json-wrapper", apply: json_wrap, skip: |_| false },
    Damage {
        name: "html-remnants",
        apply: |l| format!("<span class=\"line\">{l}</span>"),
        // Text that holds markup of its own (an HTML error page) is read as such.
        skip: |text| text.contains("</") || text.contains("&lt;") || text.contains("&amp;"),
    },
    Damage { name: "quote+compose", apply: |l| format!("> engine-1  | {l}"), skip: |_| false },
    Damage {
        name: "journald+json",
        apply: |l| format!("Mar  4 10:00:01 gpu-node-3 dockerd[88]: {}", json_wrap(l)),
        skip: |_| false,
    },
];

fn analyze(name: &str, text: &str) -> Report {
    let mut a = Analyzer::new();
    a.add_text(name, text);
    a.finish()
}

/// What must not change: the verdict, and each finding's rule with the line numbers it cites.
fn key(r: &Report) -> (String, Vec<(String, Vec<usize>)>) {
    (
        r.verdict.as_str().to_owned(),
        r.findings.iter().map(|f| (f.rule.clone(), f.evidence.iter().map(|e| e.line).collect())).collect(),
    )
}

fn check(damage: &Damage, all: &[Case]) -> Result<(), Failed> {
    let mut differ = Vec::new();
    let mut tried = 0;
    for case in all {
        let path = data(&case.file);
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
        if (damage.skip)(&text) {
            continue;
        }
        tried += 1;
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let clean = key(&analyze(&name, &text));
        let damaged: String = text.lines().map(|l| (damage.apply)(l) + "\n").collect();
        let got = key(&analyze(&name, &damaged));
        if got != clean {
            differ.push(format!("  {}: clean {:?}\n    damaged {:?}", case.file, clean, got));
        }
    }
    if tried < all.len() / 2 {
        return Err(format!("{} tried only {tried} of {} cases", damage.name, all.len()).into());
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {tried} cases read differently under {}:\n{}",
            differ.len(),
            damage.name,
            differ.join("\n")
        )
        .into())
    }
}

pub fn trials() -> Vec<Trial> {
    let (all, _) = cases();
    let all = std::sync::Arc::new(all);
    DAMAGES
        .iter()
        .map(|d| {
            let all = all.clone();
            Trial::test(format!("damage::{}", d.name), move || check(d, &all))
        })
        .collect()
}
