//! The message catalogue (`tests/data/catalogue/*.tsv`): templates mined from the engines' own
//! source, each with the rule that explains it. See `tests/data/catalogue/README.md`.
//! `signals.tsv` there is not a catalogue file: it is the analyzer's signal table's data.

use crate::{data, tsv};
use libtest_mimic::{Failed, Trial};
use triage_core::analyze::signals::{self, BENIGN, CAPACITY_SIGNAL, SIGNALS, Signal, UNCLAIMED};
use triage_core::analyze::{analyze, kind::InputKind, report::Report};

/// One catalogue row.
#[derive(Clone, Debug)]
pub struct Row {
    pub at: String,
    pub level: String,
    pub template: String,
    pub example: String,
    pub maps_to: String,
    /// The signals written for this row (its `signal` column).
    pub signals: Vec<String>,
}

/// The signal table's data, beside the catalogue files but not one of them.
const SIGNALS_TSV: &str = "signals.tsv";

pub fn rows() -> Vec<Row> {
    let mut files: Vec<_> = std::fs::read_dir(data("catalogue"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsv") && !p.ends_with(SIGNALS_TSV))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for (no, cols) in tsv(&std::fs::read_to_string(&f).unwrap()) {
            let col = |i: usize| cols.get(i).map(|s| s.trim().to_owned()).unwrap_or_default();
            out.push(Row {
                at: format!("{name}:{no}"),
                level: col(3),
                template: col(4),
                example: col(5),
                maps_to: col(6),
                signals: col(7).split_whitespace().map(str::to_owned).collect(),
            });
        }
    }
    out
}

fn cites_line_1(r: &Report, rule: &str) -> bool {
    r.findings.iter().any(|f| f.rule == rule && f.evidence.iter().any(|e| e.line == 1))
}

fn check(row: &Row) -> Result<(), Failed> {
    if row.example.is_empty() || row.maps_to.is_empty() {
        return Err(format!("{}: a row needs an example and what it maps to", row.at).into());
    }
    let r = analyze(&[("example", &row.example)]);
    let rules: Vec<&str> = r.findings.iter().map(|f| f.rule.as_str()).collect();
    let alarm = signals::alarm(signals::strip_prefixes(&row.example), &row.example).is_some();
    let known = |rule: &str| {
        signals::matches(&row.example)
            .iter()
            .any(|&i| triage_core::analyze::rules::listed(SIGNALS[i].rules, rule))
    };
    // Read as a known format (a stats line, a benchmark figure): its parser is the recogniser.
    let read = r.inputs.iter().any(|s| s.kind != InputKind::Unknown);
    let ok = match row.maps_to.as_str() {
        // Not a fault: nothing cites it.
        m if BENIGN.is(m) => !r.findings.iter().any(|f| f.evidence.iter().any(|e| e.line == 1)),
        // Known, and names no cause by itself: quoted as an error no rule explains.
        m if UNCLAIMED.is(m) => cites_line_1(&r, m) || known(m),
        // Any other: the analyzer knows the line as that rule's (a signal whose needles are the
        // template's own words), or the rule fires from the line alone, or — for the figures a
        // rule judges in context (stats lines, benchmark tables) — the line is read as its format.
        // The corpus shows each rule firing in context; an alarm line alone is never HEALTHY.
        rule => {
            (known(rule) || rules.contains(&rule) || row.level == "stats" && read)
                && !(alarm && r.verdict.as_str() == "HEALTHY")
        }
    };
    if ok {
        Ok(())
    } else {
        let known: Vec<&str> = signals::matches(&row.example).iter().map(|&i| SIGNALS[i].id).collect();
        Err(format!(
            "{} ({}): maps to {}, the analyzer says {:?} (alarm: {alarm}, signals: {known:?})\n  {}",
            row.at, row.level, row.maps_to, rules, row.example
        )
        .into())
    }
}

/// Every needle of `signal` stands in the row's template (or its example, for a row with one).
fn stands_in(signal: &Signal, r: &Row) -> bool {
    signal.needles.iter().all(|n| r.template.contains(n) || r.example.contains(n) && !r.template.is_empty())
}

/// Every known message of the analyzer stands in some catalogued template, word for word.
fn signals_are_templates(rows: &[Row]) -> Result<(), Failed> {
    let missing: Vec<String> = SIGNALS
        .iter()
        .filter(|s| s.needles[0] != CAPACITY_SIGNAL)
        .filter(|s| !rows.iter().any(|r| stands_in(s, r)))
        .map(|s| format!("{} {:?}", s.id, s.needles))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("signals in no catalogued template: {missing:#?}").into())
    }
}

/// The signals a row's `signal` column names exist, and stand in that row.
fn signal_columns_hold(rows: &[Row]) -> Result<(), Failed> {
    let wrong: Vec<String> = rows
        .iter()
        .flat_map(|r| r.signals.iter().map(move |id| (r, id)))
        .filter_map(|(r, id)| match SIGNALS.iter().find(|s| s.id == *id) {
            None => Some(format!("{}: no signal {id}", r.at)),
            Some(s) if !stands_in(s, r) => Some(format!("{}: {id} {:?} is not in this row", r.at, s.needles)),
            Some(_) => None,
        })
        .collect();
    if wrong.is_empty() { Ok(()) } else { Err(format!("catalogue `signal` columns: {wrong:#?}").into()) }
}

pub fn trials() -> Vec<Trial> {
    let rows = rows();
    let mut trials: Vec<Trial> = rows
        .iter()
        .map(|row| {
            let row = row.clone();
            Trial::test(format!("catalogue::{}", row.at), move || check(&row))
        })
        .collect();
    let both = rows.clone();
    trials.push(Trial::test("catalogue::signals_are_templates", move || signals_are_templates(&both)));
    trials.push(Trial::test("catalogue::signal_columns_hold", move || signal_columns_hold(&rows)));
    trials
}
