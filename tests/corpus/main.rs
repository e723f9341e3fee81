//! The incident corpus and the message catalogue, one test per row (like ruff's rule tests: a
//! failing row names itself and does not hide the others).
//!
//! - `case::<folder>/<file>`: every row of `tests/data/incidents/EXPECT.tsv` and of each
//!   `tests/data/incidents/<folder>/CASES.tsv`: the expected verdict and top rule, the same
//!   findings in Chinese and from a messy copy (CRLF, ANSI), and a snapshot of the findings with
//!   their evidence line numbers (`tests/corpus/snapshots/`).
//! - `corpus::score`: accuracy over the whole corpus, false-HEALTHY count (must be 0) and the
//!   largest confusions, printed.
//! - `fixture::<path>`: every fixture in `tests/data` — a HEALTHY report holds no error line
//!   but those the catalogue marks benign.
//! - `catalogue::<file>:<line>`: every row of `tests/data/catalogue/*.tsv` (templates mined from
//!   the engines' own source): the analyzer, given the row's example line, reports the rule the
//!   row maps to — or, for a `benign` row, no finding about that line.
//!
//! - `real::score`: the real pastes of `tests/data/real-pastes/` (strangers' text from public bug
//!   reports): top-1, INCONCLUSIVE, wrong and false-HEALTHY counts, failing below the bar.
//!
//! - `damage::<kind>`: every corpus case damaged line by line as pastes are (markdown quote,
//!   journald, compose, CRI, kubectl prefixes, box frame, JSON wrapper, HTML, two combined)
//!   reads as the clean one: the same verdict, findings and cited line numbers.
//!
//! Run one: `cargo test -p triage-tests --test corpus -- vllm/oom-v1`.

mod cases;
mod catalogue;
mod damage;
mod fixtures;
mod real;

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = cases::trials();
    trials.extend(catalogue::trials());
    trials.extend(fixtures::trials());
    trials.extend(real::trials());
    trials.extend(damage::trials());
    libtest_mimic::run(&args, trials).exit();
}

/// `tests/data/<rel>`.
pub(crate) fn data(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(rel)
}

/// Rows of a TSV file: `#` lines and blank lines skipped; (line number, columns).
pub(crate) fn tsv(text: &str) -> Vec<(usize, Vec<String>)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.split('\t').map(str::to_owned).collect()))
        .collect()
}
