//! The analysis report as Markdown, for tickets and chat: the one renderer that
//! `triage analyze --format markdown` prints and the site's "Copy as Markdown" copies (pure
//! string formatting; the caller escapes control characters for a terminal).

use std::fmt::Write as _;

use crate::Report;
use crate::prometheus::PrometheusInput;
use crate::short_number as opt_num;
use triage_base::lang::Lang;

/// Text from outside (a label value, a Prometheus warning, a figure's name), made inert in
/// Markdown: every character that opens a link, an image, emphasis, a code span, HTML or a
/// table cell is backslash-escaped, and a line break becomes a space — so a label cannot inject
/// a link, an image or markup into the ticket the report is pasted into.
fn md_escape(s: &str) -> String {
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
    let l = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", l("Triage", "排查结论"), r.verdict.as_str());
    if r.findings.is_empty() {
        let _ = writeln!(out, "{}\n", l("No findings.", "没有发现。"));
    }
    for (i, f) in r.findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "## {}. {} — `{}` ({}, {} {:.2})\n",
            i + 1,
            f.title,
            f.rule,
            f.class.as_str(),
            l("confidence", "可信度"),
            f.confidence
        );
        let _ = writeln!(out, "{}\n", f.summary);
        if let Some(about) = &f.subject {
            let _ = writeln!(out, "{} `{}`\n", l("About:", "对象："), about.describe().replace('`', "'"));
        }
        if !f.evidence.is_empty() {
            let _ = writeln!(out, "{}\n", l("Evidence:", "证据："));
            for e in &f.evidence {
                let _ = writeln!(out, "- `{}:{}` `{}`", e.input, e.line, e.text.replace('`', "'"));
                if let Some(c) = r.citation(e) {
                    let _ = writeln!(
                        out,
                        "  - `{}` = {} {} {} ([{}]({}))",
                        c.expr.replace('`', "'"),
                        c.value,
                        l("at", "于"),
                        c.at,
                        l("graph", "图表"),
                        md_url(&c.graph_url)
                    );
                }
            }
            out.push('\n');
        }
        if !f.remediation.is_empty() {
            let _ = writeln!(out, "{}\n", l("What to change:", "该改什么："));
            for x in &f.remediation {
                let _ = writeln!(out, "- {x}");
            }
            out.push('\n');
        }
        if !f.next_checks.is_empty() {
            let _ = writeln!(out, "{}\n", l("Next checks:", "下一步检查："));
            for x in &f.next_checks {
                let _ = writeln!(out, "- {x}");
            }
            out.push('\n');
        }
    }
    if let Some(p) = &r.prometheus {
        prometheus_markdown(&mut out, p, lang);
    }
    let _ = writeln!(
        out,
        "{}",
        l(
            "## Inputs\n\n| input | lines | kind | issues |\n| --- | --- | --- | --- |",
            "## 输入\n\n| 输入 | 行 | 类型 | 问题 |\n| --- | --- | --- | --- |"
        )
    );
    for i in &r.inputs {
        let issues: Vec<String> = i
            .issues
            .iter()
            .take(3)
            .map(|x| {
                let (no, msg) = (x.line, md_escape(&x.message));
                lang.pick(format!("line {no}: {msg}"), format!("第 {no} 行：{msg}"))
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {}–{} | {} | {} |",
            md_escape(&i.name),
            i.lines[0],
            i.lines[1],
            i.kind.as_str(),
            issues.join(l("; ", "；"))
        );
    }
    let plain: Vec<_> = r.figures.iter().filter(|(k, _)| !k.ends_with(".slowest")).collect();
    if !plain.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            l(
                "\n## Figures\n\n| figure | value | unit | definition |\n| --- | --- | --- | --- |",
                "\n## 指标\n\n| 指标 | 数值 | 单位 | 定义 |\n| --- | --- | --- | --- |"
            )
        );
        for (name, f) in plain {
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

/// A URL inside Markdown link parentheses: the characters that would end it, encoded.
fn md_url(u: &str) -> String {
    u.replace('(', "%28").replace(')', "%29").replace(' ', "%20")
}

fn prometheus_markdown(out: &mut String, p: &PrometheusInput, lang: Lang) {
    let l = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let _ = writeln!(out, "## {}\n", l("From Prometheus", "来自 Prometheus"));
    let _ = writeln!(out, "- {} `{}`", l("server:", "服务器："), p.url.replace('`', "'"));
    let _ = writeln!(
        out,
        "- {} {} → {} ({} {} s)",
        l("window:", "时间窗："),
        p.start,
        p.end,
        l("step", "步长"),
        p.step_s
    );
    if !p.selector.trim().is_empty() {
        let _ = writeln!(out, "- {} `{}`", l("selector:", "选择器："), p.selector.replace('`', "'"));
    }
    if let Some(s) = &p.scraping {
        let _ = writeln!(out, "- {} {}", l("scraping:", "抓取："), s.limits);
        if s.stale_series > 0 {
            let _ = writeln!(
                out,
                "- {}",
                lang.pick(
                    format!("stale: {} series stopped being scraped", s.stale_series),
                    format!("过期：{} 个序列不再被抓取", s.stale_series)
                )
            );
        }
    }
    let _ = writeln!(
        out,
        "- {}",
        lang.pick(
            format!("read: {} series, {} points", p.series, p.points),
            format!("读取：{} 个序列，{} 个点", p.series, p.points)
        )
    );
    for q in &p.queries {
        let _ = writeln!(
            out,
            "- `{}` `{}` ({} series, [{}]({}))",
            q.api,
            q.expr.replace('`', "'"),
            q.series,
            l("graph", "图表"),
            md_url(&q.graph_url)
        );
    }
    for c in &p.cut {
        let _ = writeln!(out, "- {} {}", l("cut:", "截断："), md_escape(c));
    }
    out.push('\n');
    if !p.fleet.replicas.is_empty() {
        let _ = writeln!(out, "{} `{}`\n", l("Replicas ranked by", "副本排序依据"), p.fleet.ranked_by);
        let _ = writeln!(
            out,
            "| replica | verdict | TTFT p99 (s) | ITL p99 (s) | waiting | KV | gen tok/s |\n| --- | --- | --- | --- | --- | --- | --- |"
        );
        for r in &p.fleet.replicas {
            let who = r.subject.instance.as_deref().or(r.subject.pod.as_deref()).unwrap_or("-");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                md_escape(who),
                r.verdict.as_str(),
                md_escape(r.ttft_p99.as_deref().unwrap_or("-")),
                md_escape(r.itl_p99.as_deref().unwrap_or("-")),
                opt_num(r.waiting_max),
                opt_num(r.kv_usage_max),
                opt_num(r.generation_tokens_per_s)
            );
        }
        out.push('\n');
    }
    if !p.fleet.gateways.is_empty() {
        let _ = writeln!(
            out,
            "{}\n",
            l("Gateways (llm_stream_*, as clients saw it):", "网关（llm_stream_*，客户端视角）：")
        );
        let _ = writeln!(
            out,
            "| instance | TTFT p99 (s) | ITL p99 (s) | req/s | err/s |\n| --- | --- | --- | --- | --- |"
        );
        for g in &p.fleet.gateways {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                md_escape(g.subject.instance.as_deref().or(g.subject.pod.as_deref()).unwrap_or("-")),
                md_escape(g.ttft_p99.as_deref().unwrap_or("-")),
                md_escape(g.itl_p99.as_deref().unwrap_or("-")),
                opt_num(g.requests_per_s),
                opt_num(g.errors_per_s)
            );
        }
        out.push('\n');
    }
    if !p.fleet.gpus.is_empty() {
        let _ = writeln!(
            out,
            "{}\n",
            l(
                "GPUs ranked by SM clock against their node's peers:",
                "GPU 按 SM 时钟与同节点其他卡之比排序："
            )
        );
        let _ = writeln!(
            out,
            "| Hostname | gpu | UUID | SM MHz | peers | ratio | °C | util % |\n| --- | --- | --- | --- | --- | --- | --- | --- |"
        );
        for g in p.fleet.gpus.iter().take(32) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                md_escape(g.subject.hostname.as_deref().or(g.subject.instance.as_deref()).unwrap_or("-")),
                md_escape(g.subject.gpu.as_deref().unwrap_or("-")),
                md_escape(g.subject.uuid.as_deref().unwrap_or("-")),
                opt_num(Some(g.sm_clock_mhz)),
                opt_num(g.peer_median_mhz),
                opt_num(g.ratio),
                opt_num(g.temp_c),
                opt_num(g.util_pct)
            );
        }
        out.push('\n');
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
