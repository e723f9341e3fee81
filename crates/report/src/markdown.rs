//! The analysis report as Markdown, for tickets and chat: the one renderer that
//! `triage analyze --format markdown` prints and the site's "Copy as Markdown" copies (pure
//! string formatting; the caller escapes control characters for a terminal). It lays out the
//! report's [`Sections`], as the terminal's text renderer does.

use std::fmt::Write as _;

use crate::Report;
use crate::sections::{FindingSection, PrometheusSection, Sections, Table, Words};
use triage_base::lang::Lang;

/// Text from outside (a label value, a Prometheus warning, a figure's name), made inert in
/// Markdown: every character that opens a link, an image, emphasis, a code span, HTML or a
/// table cell is backslash-escaped, and a line break becomes a space — so a label cannot inject
/// a link, an image or markup into the ticket the report is pasted into.
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '(' | ')' | '!' | '|' | '#' | '{' | '}'
            | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The analysis report as Markdown, headings in `lang` (the report's own text is in the language
/// it was analysed in).
pub fn report(r: &Report, lang: Lang) -> String {
    let s = Sections::of(r, lang);
    let w = s.words;
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", lang.pick("Triage", "排查结论"), r.verdict.as_str());
    if s.findings.is_empty() {
        let _ = writeln!(out, "{}\n", lang.pick("No findings.", "没有发现。"));
    }
    for f in &s.findings {
        finding(&mut out, f, w);
    }
    if let Some(p) = &s.prometheus {
        prometheus(&mut out, p, w);
    }
    let (input, lines, kind, issues) =
        lang.pick(("input", "lines", "kind", "issues"), ("输入", "行", "类型", "问题"));
    let _ = writeln!(
        out,
        "## {}\n\n| {input} | {lines} | {kind} | {issues} |\n| --- | --- | --- | --- |",
        Words::capital(w.inputs())
    );
    for i in &r.inputs {
        let issues: Vec<String> =
            i.issues.iter().take(3).map(|x| w.issue(x.line, &md_escape(&x.message))).collect();
        let _ = writeln!(
            out,
            "| {} | {}–{} | {} | {} |",
            md_escape(&i.name),
            i.lines[0],
            i.lines[1],
            i.kind.as_str(),
            issues.join(lang.pick("; ", "；"))
        );
    }
    if !s.figures.is_empty() {
        let (figure, value, unit, definition) =
            lang.pick(("figure", "value", "unit", "definition"), ("指标", "数值", "单位", "定义"));
        let _ = writeln!(
            out,
            "\n## {}\n\n| {figure} | {value} | {unit} | {definition} |\n| --- | --- | --- | --- |",
            Words::capital(w.figures())
        );
        for (name, f) in &s.figures {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md_escape(name),
                md_escape(&f.display(lang)),
                md_escape(&f.unit),
                md_escape(&f.definition)
            );
        }
    }
    out
}

/// Text inside a code span: a backtick would end it.
fn code(s: &str) -> String {
    s.replace('`', "'")
}

fn finding(out: &mut String, s: &FindingSection<'_>, w: Words) {
    let f = s.finding;
    let _ = writeln!(
        out,
        "## {}. {} — `{}` ({}, {} {:.2})\n",
        s.number,
        f.title,
        f.rule,
        f.class.as_str(),
        w.confidence(),
        f.confidence
    );
    let _ = writeln!(out, "{}\n", f.summary);
    if let Some(about) = &s.about {
        let _ = writeln!(out, "{} `{}`\n", Words::capital(w.about()), code(about));
    }
    if !s.evidence.is_empty() {
        let _ = writeln!(out, "{}\n", Words::capital(w.evidence()));
        for (e, c) in &s.evidence {
            let _ = writeln!(out, "- `{}:{}` `{}`", e.input, e.line, code(&e.text));
            if let Some(c) = c {
                let _ = writeln!(
                    out,
                    "  - `{}` = {} {} {} ([{}]({}))",
                    code(&c.expr),
                    c.value,
                    w.at(),
                    c.at,
                    w.graph(),
                    md_url(&c.graph_url)
                );
            }
        }
        out.push('\n');
    }
    for (label, items) in [(w.what_to_change(), &f.remediation), (w.next_checks(), &f.next_checks)] {
        if !items.is_empty() {
            let _ = writeln!(out, "{}\n", Words::capital(label));
            for x in items {
                let _ = writeln!(out, "- {x}");
            }
            out.push('\n');
        }
    }
}

/// A URL inside Markdown link parentheses: the characters that would end it, encoded.
fn md_url(u: &str) -> String {
    u.replace('(', "%28").replace(')', "%29").replace(' ', "%20")
}

/// A fleet table: the header row, then each row, cells from outside escaped.
fn table(out: &mut String, t: &Table) {
    let names: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
    let rule = vec!["---"; names.len()];
    let _ = writeln!(out, "| {} |\n| {} |", names.join(" | "), rule.join(" | "));
    for row in &t.rows {
        let cells: Vec<String> =
            row.iter().map(|c| if c.outside { md_escape(&c.text) } else { c.text.clone() }).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

fn prometheus(out: &mut String, s: &PrometheusSection<'_>, w: Words) {
    let p = s.input;
    let _ = writeln!(out, "## {}\n", Words::capital(w.from_prometheus()));
    let _ = writeln!(out, "- {} `{}`", w.server(), code(&p.url));
    let _ = writeln!(out, "- {} {} → {} ({} {} s)", w.window(), p.start, p.end, w.step(), p.step_s);
    if !p.selector.trim().is_empty() {
        let _ = writeln!(out, "- {} `{}`", w.selector(), code(&p.selector));
    }
    if let Some(sc) = &p.scraping {
        let _ = writeln!(out, "- {} {}", w.scraping(), sc.limits);
        if sc.stale_series > 0 {
            let _ = writeln!(out, "- {}", w.stale(sc.stale_series));
        }
    }
    let _ = writeln!(out, "- {}", w.read(p.series, p.points));
    for q in &p.queries {
        let _ = writeln!(
            out,
            "- `{}` `{}` ({} series, [{}]({}))",
            q.api,
            code(&q.expr),
            q.series,
            w.graph(),
            md_url(&q.graph_url)
        );
    }
    for c in &p.cut {
        let _ = writeln!(out, "- {} {}", w.cut(), md_escape(c));
    }
    out.push('\n');
    if let Some(t) = &s.replicas {
        let _ = writeln!(out, "{} `{}`\n", Words::capital(w.replicas_ranked_by()), p.fleet.ranked_by);
        table(out, t);
    }
    if let Some(t) = &s.gateways {
        let _ = writeln!(out, "{}\n", Words::capital(w.gateways()));
        table(out, t);
    }
    if let Some(t) = &s.gpus {
        let _ = writeln!(out, "{}{}\n", w.gpus_ranked(), w.colon());
        table(out, t);
    }
}

#[cfg(test)]
mod tests {
    use super::md_escape;

    /// A label value or warning cannot open a link, an image, HTML, emphasis or a code span,
    /// end a table cell or start a new block.
    #[test]
    fn markdown_from_outside_is_inert() {
        let hostile = "x](http://evil.example) ![img](http://evil.example/p.png) <script>alert(1)</script> `code` **bold** a|b\n# heading";
        let e = md_escape(hostile);
        assert!(!e.contains('\n'), "{e}");
        let chars: Vec<char> = e.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if "`*_[]<>()!|#{}~".contains(*c) {
                assert!(i > 0 && chars[i - 1] == '\\', "{c} at {i} is not escaped: {e}");
            }
        }
        // Every character is still there, escaped.
        let plain: String = e.chars().filter(|c| *c != '\\').collect();
        assert_eq!(plain, hostile.replace('\n', " "));
    }
}
