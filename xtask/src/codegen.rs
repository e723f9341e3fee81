//! `cargo xtask codegen [--check]`: source files generated from data, written or checked.
//!
//! The analyzer's signal table (`crates/analyze/src/signals/table.rs`) is generated from
//! `tests/data/catalogue/signals.tsv` (its header says how that file is laid out). The catalogue
//! rows' `signal` column must name signals of the table. `--check` writes nothing and fails when
//! the committed file differs from what would be generated (CI runs it).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The data, relative to the workspace root.
const SIGNALS_TSV: &str = "tests/data/catalogue/signals.tsv";
/// The catalogue whose rows name the signals written for them.
const CATALOGUE: &str = "tests/data/catalogue";
/// The generated file, relative to the workspace root.
const SIGNAL_TABLE: &str = "crates/analyze/src/signals/table.rs";

/// The Rust type of one rule in the generated code: the analyzer's typed id.
const RULE_TYPE: &str = "RuleId";

/// The Rust expression of one rule id of the data: `kv-leak` is `RuleId::KvLeak` (a rule id the
/// registry does not declare fails to compile, naming the variant).
fn rule(id: &str) -> String {
    match id {
        "benign" => "BENIGN".to_owned(),
        "unclaimed-error" => "UNCLAIMED".to_owned(),
        _ => {
            let variant: String = id
                .split('-')
                .map(|w| {
                    let mut c = w.chars();
                    c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
                })
                .collect();
            format!("RuleId::{variant}")
        }
    }
}

/// A needle or rules cell that names a Rust constant: `@NAME`.
fn constant(cell: &str) -> Option<&str> {
    cell.strip_prefix('@').filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

/// One line of the table's body.
#[derive(Debug, PartialEq)]
enum Item {
    /// A `#` line: copied as a `//` comment.
    Comment(String),
    /// A signal: its id, needles, rules (ids, or one `@NAME` set) and what to paste next.
    Signal { id: String, needles: Vec<String>, rules: Vec<String>, next: Option<(String, String)> },
}

/// The data: named rule sets, then the signals with their comments, in order.
#[derive(Debug, Default, PartialEq)]
struct Table {
    sets: Vec<(String, Vec<String>)>,
    items: Vec<Item>,
}

/// Reads `signals.tsv`. The header is the `#` lines up to the column names (`# signal\t…`);
/// after it, `#` lines are the table's comments.
fn parse(text: &str) -> anyhow::Result<Table> {
    let mut table = Table::default();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    if !lines.by_ref().any(|(_, l)| l.starts_with("# signal\t")) {
        bail!("{SIGNALS_TSV}: no column names (`# signal<TAB>needles…<TAB>rules`)");
    }
    let mut ids = std::collections::BTreeSet::new();
    for (no, line) in lines {
        let at = || format!("{SIGNALS_TSV}:{no}");
        if line.trim().is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            table.items.push(Item::Comment(c.strip_prefix(' ').unwrap_or(c).trim_end().to_owned()));
            continue;
        }
        let cells: Vec<&str> = line.split('\t').collect();
        if let Some(name) = constant(cells[0]) {
            let rules: Vec<String> = cells[1..].join(" ").split_whitespace().map(str::to_owned).collect();
            if cells.len() != 2 || rules.is_empty() || rules.iter().any(|r| r.starts_with('@')) {
                bail!("{}: a rule set is `@NAME<TAB>rule rule …`", at());
            }
            if table.sets.iter().any(|(n, _)| n == name) {
                bail!("{}: the rule set {name} is defined twice", at());
            }
            table.sets.push((name.to_owned(), rules));
            continue;
        }
        if cells[0] == "next" {
            let [_, en, zh] = cells[..] else { bail!("{}: `next<TAB>English<TAB>Chinese`", at()) };
            match table.items.last_mut() {
                Some(Item::Signal { next: next @ None, .. }) => {
                    *next = Some((en.to_owned(), zh.trim_end().to_owned()))
                }
                _ => bail!("{}: a `next` line follows the signal it belongs to", at()),
            }
            continue;
        }
        let (id, needles, rules) = match &cells[..] {
            [id, needles @ .., rules] if !needles.is_empty() => (*id, needles, *rules),
            _ => bail!("{}: a signal is `id<TAB>needle<TAB>…<TAB>rules`", at()),
        };
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            bail!("{}: signal id {id:?}: lower-case words joined by `-`", at());
        }
        if !ids.insert(id.to_owned()) {
            bail!("{}: the signal {id} is defined twice", at());
        }
        if needles.iter().any(|n| n.is_empty()) {
            bail!("{}: {id}: an empty needle", at());
        }
        let rules: Vec<String> = rules.split_whitespace().map(str::to_owned).collect();
        let set = rules.iter().find_map(|r| r.strip_prefix('@'));
        match set {
            None if rules.is_empty() => bail!("{}: {id}: no rules", at()),
            Some(name) if rules.len() > 1 || !table.sets.iter().any(|(n, _)| n == name) => {
                bail!("{}: {id}: `@{name}` must stand alone and name a rule set defined above", at())
            }
            _ => {}
        }
        let needles = needles.iter().map(|n| (*n).to_owned()).collect();
        table.items.push(Item::Signal { id: id.to_owned(), needles, rules, next: None });
    }
    Ok(table)
}

/// The signal ids the table defines.
fn signal_ids(table: &Table) -> impl Iterator<Item = &str> {
    table.items.iter().filter_map(|i| match i {
        Item::Signal { id, .. } => Some(id.as_str()),
        Item::Comment(_) => None,
    })
}

/// Every id in the catalogue rows' `signal` column (the eighth) is a signal of the table.
fn check_catalogue(root: &Path, table: &Table) -> anyhow::Result<()> {
    let ids: std::collections::BTreeSet<&str> = signal_ids(table).collect();
    let mut files: Vec<_> = std::fs::read_dir(root.join(CATALOGUE))
        .with_context(|| format!("reading {CATALOGUE}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsv") && !p.ends_with(SIGNALS_TSV))
        .collect();
    files.sort();
    let mut unknown = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.starts_with('#')) {
            for id in line.split('\t').nth(7).unwrap_or("").split_whitespace() {
                if !ids.contains(id) {
                    unknown.push(format!("{name}:{}: {id}", no + 1));
                }
            }
        }
    }
    if !unknown.is_empty() {
        bail!("catalogue rows name signals {SIGNALS_TSV} does not define:\n  {}", unknown.join("\n  "));
    }
    Ok(())
}

/// `&["a", "b"]`, or the set's name.
fn rules_expr(rules: &[String]) -> String {
    match rules {
        [one] if one.starts_with('@') => one[1..].to_owned(),
        _ => format!("&[{}]", rules.iter().map(|r| rule(r)).collect::<Vec<_>>().join(", ")),
    }
}

fn needles_expr(needles: &[String]) -> String {
    let one = |n: &String| constant(n).map_or_else(|| format!("{n:?}"), str::to_owned);
    format!("&[{}]", needles.iter().map(one).collect::<Vec<_>>().join(", "))
}

/// The Rust source of the table, before rustfmt.
fn render(table: &Table) -> String {
    let mut imports = std::collections::BTreeSet::from(["Signal".to_owned()]);
    let mut body = String::new();
    for item in &table.items {
        match item {
            Item::Comment(c) if c.is_empty() => body.push_str("//\n"),
            Item::Comment(c) => body.push_str(&format!("// {c}\n")),
            Item::Signal { id, needles, rules, next } => {
                imports.extend(needles.iter().filter_map(|n| constant(n)).map(str::to_owned));
                imports.extend(
                    rules
                        .iter()
                        .filter(|r| !r.starts_with('@'))
                        .map(|r| rule(r))
                        .filter(|r| !r.starts_with("RuleId::")),
                );
                let (n, r) = (needles_expr(needles), rules_expr(rules));
                match next {
                    None => body.push_str(&format!("s({id:?}, {n}, {r}),\n")),
                    Some((en, zh)) => body.push_str(&format!(
                        "Signal {{ id: {id:?}, needles: {n}, rules: {r}, next: Some(({en:?}, {zh:?})) }},\n"
                    )),
                }
            }
        }
    }
    let sets: String = table
        .sets
        .iter()
        .map(|(name, rules)| format!("const {name}: &[{RULE_TYPE}] = {};\n", rules_expr(rules)))
        .collect();
    let imports = imports.into_iter().collect::<Vec<_>>().join(", ");
    let static_rule = RULE_TYPE.replacen('&', "&'static ", 1);
    format!(
        "//! The known messages (see `signals/mod.rs`), generated by `cargo xtask codegen` from
//! `{SIGNALS_TSV}`: do not edit by hand — edit the data and rerun it
//! (`cargo xtask codegen --check`, a step of `cargo xtask ci`, fails while this file is stale).
//! Each entry's needles are literal pieces of a template the engine's own source prints
//! (`{CATALOGUE}/`); the catalogue test checks both ways.
//! Size: generated from one data table, one entry per message the engines print.

use super::{{{imports}}};
use crate::ids::RuleId;

const fn s(id: &'static str, needles: &'static [&'static str], rules: &'static [{static_rule}]) -> Signal {{
    Signal {{ id, needles, rules, next: None }}
}}

{sets}
/// The known messages, grouped by what they mean; the catalogue test checks each against the
/// templates mined from the engines' source.
pub static SIGNALS: &[Signal] = &[
{body}];
"
    )
}

/// `text` as `cargo fmt` writes it (the workspace's rustfmt.toml, edition 2024).
fn rustfmt(root: &Path, text: &str) -> anyhow::Result<String> {
    use std::io::Write;
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--config-path"])
        .arg(root.join("rustfmt.toml"))
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting rustfmt")?;
    child.stdin.take().context("rustfmt's stdin")?.write_all(text.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("rustfmt failed on the generated {SIGNAL_TABLE} (see above)");
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// `cargo xtask codegen [--check]`.
pub fn run(root: &Path, check: bool) -> anyhow::Result<()> {
    let data =
        std::fs::read_to_string(root.join(SIGNALS_TSV)).with_context(|| format!("reading {SIGNALS_TSV}"))?;
    let table = parse(&data)?;
    check_catalogue(root, &table)?;
    let generated = rustfmt(root, &render(&table))?;
    let path = root.join(SIGNAL_TABLE);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        eprintln!("codegen: {SIGNAL_TABLE} is up to date");
    } else if check {
        bail!(
            "{SIGNAL_TABLE} is stale: it differs from what {SIGNALS_TSV} generates. Run `cargo xtask codegen` \
             and commit the result (edit the data, never the generated file)"
        );
    } else {
        std::fs::write(&path, generated).with_context(|| format!("writing {SIGNAL_TABLE}"))?;
        eprintln!("codegen: wrote {SIGNAL_TABLE}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "# doc\n# signal\tneedles…\trules\n";

    #[test]
    fn reads_sets_signals_comments_and_next() {
        let t = parse(&format!(
            "{HEAD}@KV\tkv-a kv-b\n# Group.\n#\na-b\tx \t y\tkv-a benign\nc\t@CAP\t@KV\nd\tz\tunclaimed-error\nnext\ten\tzh\n"
        ))
        .unwrap();
        assert_eq!(t.sets, [("KV".to_owned(), vec!["kv-a".to_owned(), "kv-b".to_owned()])]);
        let s = |id: &str, n: &[&str], r: &[&str], next: Option<(&str, &str)>| Item::Signal {
            id: id.to_owned(),
            needles: n.iter().map(|x| (*x).to_owned()).collect(),
            rules: r.iter().map(|x| (*x).to_owned()).collect(),
            next: next.map(|(a, b)| (a.to_owned(), b.to_owned())),
        };
        assert_eq!(
            t.items,
            [
                Item::Comment("Group.".to_owned()),
                Item::Comment(String::new()),
                s("a-b", &["x ", " y"], &["kv-a", "benign"], None),
                s("c", &["@CAP"], &["@KV"], None),
                s("d", &["z"], &["unclaimed-error"], Some(("en", "zh"))),
            ]
        );
        let rust = render(&t);
        assert!(rust.contains("use super::{BENIGN, CAP, Signal, UNCLAIMED};"), "{rust}");
        assert!(rust.contains("const KV: &[RuleId] = &[RuleId::KvA, RuleId::KvB];"), "{rust}");
        assert!(
            rust.contains("// Group.\n//\ns(\"a-b\", &[\"x \", \" y\"], &[RuleId::KvA, BENIGN]),\n"),
            "{rust}"
        );
        assert!(rust.contains("s(\"c\", &[CAP], KV),\n"), "{rust}");
        assert!(rust.contains("next: Some((\"en\", \"zh\")) },\n"), "{rust}");
    }

    #[test]
    fn refuses_what_it_cannot_generate() {
        for (body, says) in [
            ("a\tx\tr\na\ty\tr\n", "defined twice"),
            ("a\tx\t@NOPE\n", "name a rule set"),
            ("next\ten\tzh\n", "follows the signal"),
            ("a\tr\n", "id<TAB>needle"),
            ("a\t\tr\n", "empty needle"),
            ("A b\tx\tr\n", "lower-case"),
        ] {
            let e = parse(&format!("{HEAD}{body}")).unwrap_err().to_string();
            assert!(e.contains(says), "{body:?}: {e}");
        }
        assert!(parse("a\tx\tr\n").unwrap_err().to_string().contains("column names"));
    }
}
