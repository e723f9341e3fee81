//! Plain-text rendering of reports for a person at a terminal at 2 a.m. An analysis report is
//! laid out from its sections (`triage_core::analyze::report::sections`), as its Markdown form
//! is (`triage_core::analyze::markdown`).
//!
//! Tables first, definitions always: every figure printed says what it measures.

use std::fmt::Write as _;
use triage_core::lang::Lang;
use triage_core::probe::{ProbeReport, Quantiles};

fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 10_000.0 => format!("{v:.0}"),
        Some(v) if v >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
        None => "-".to_owned(),
    }
}

fn row(out: &mut String, name: &str, q: Option<&Quantiles>) {
    row_w(out, name, 7, q);
}

fn row_w(out: &mut String, name: &str, width: usize, q: Option<&Quantiles>) {
    let _ = writeln!(
        out,
        "  {name:<width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        cell(q.map(|q| q.p50)),
        cell(q.map(|q| q.p90)),
        cell(q.map(|q| q.p99)),
        cell(q.map(|q| q.max)),
        cell(q.map(|q| q.mean)),
        q.map(|q| q.n.to_string()).unwrap_or_else(|| "0".into()),
    );
}

fn header(out: &mut String, width: usize) {
    let _ = writeln!(
        out,
        "  {:<width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "ms", "p50", "p90", "p99", "max", "mean", "n"
    );
}

/// Where ITL/tok's tokens per event came from, counted over the requests.
fn chunk_tokens_line(out: &mut String, r: &ProbeReport) {
    let src = &r.summary.chunk_token_sources;
    if src.is_empty() {
        return;
    }
    let n = |k: &str| src.get(k).copied().unwrap_or(0);
    let mut parts = Vec::new();
    if n("usage") > 0 {
        parts.push(format!("{} request(s) from the server's usage (exact)", n("usage")));
    }
    if n("estimated") > 0 {
        parts.push(format!(
            "{} from the usage total spread evenly over the events (an estimate)",
            n("estimated")
        ));
    }
    if n("counted") > 0 {
        parts.push(format!("{} without usage, one per event (ITL/tok = ITL)", n("counted")));
    }
    let _ = writeln!(out, "  ITL/tok tokens per event: {}", parts.join("; "));
}

/// The open-loop section: the schedule, the dispatch lag, the latencies from the schedule, and
/// whether the client kept up.
fn open_loop(out: &mut String, r: &ProbeReport) {
    let (s, c) = (&r.summary, &r.config);
    let Some(sch) = &s.schedule else { return };
    let arrival = c.arrival.map_or("constant", |a| a.as_str());
    let seed = c.seed.map(|s| format!(", seed {s}")).unwrap_or_default();
    let rate = c.rate_per_s.unwrap_or_default();
    let _ = writeln!(
        out,
        "\nopen loop: {arrival} arrivals at {rate}/s{seed}, {} starts fixed before the run, at most {} in flight",
        sch.scheduled, c.concurrency
    );
    header(out, 18);
    row_w(out, "dispatch lag", 18, s.dispatch_lag_ms.as_ref());
    row_w(out, "TTFT from schedule", 18, s.ttft_from_schedule_ms.as_ref());
    row_w(out, "E2E from schedule", 18, s.e2e_from_schedule_ms.as_ref());
    let p99 = s.dispatch_lag_ms.as_ref().map_or(0.0, |q| q.p99);
    let t = sch.late_threshold_ms;
    let waited = if sch.waited_for_slot > 0 {
        format!(
            "; {} found all {} --concurrency slot(s) taken at their start and waited",
            sch.waited_for_slot, c.concurrency
        )
    } else {
        String::new()
    };
    if sch.fell_behind {
        let _ = writeln!(
            out,
            "  THE CLIENT FELL BEHIND ITS SCHEDULE: dispatch lag p99 {} ms > {t} ms; {} of {} requests started more than {t} ms late{waited}. TTFT and E2E from the send hide that wait (coordinated omission): read the rows from the schedule, and raise --concurrency or lower --rate to load as asked",
            cell(Some(p99)),
            sch.late,
            sch.scheduled
        );
    } else {
        let _ = writeln!(
            out,
            "  the client kept to its schedule: dispatch lag p99 {} ms ≤ {t} ms ({} of {} late{waited})",
            cell(Some(p99)),
            sch.late,
            sch.scheduled
        );
    }
    let _ = writeln!(
        out,
        "  late = a dispatch lag above {t} ms: the mean gap between starts, held between 2 ms (the client's timer ticks every 1 ms) and 5 ms"
    );
}

/// The probe report as text.
pub fn probe_text(r: &ProbeReport) -> String {
    let mut out = String::new();
    let s = &r.summary;
    let c = &r.config;
    let _ = writeln!(out, "triage probe · {} · {}", c.api.as_str(), r.url);
    let _ = writeln!(
        out,
        "model {} · {} requests, concurrency {}{} · max_tokens {} · timeout {} ms · wall {:.0} ms",
        c.model,
        c.requests,
        c.concurrency,
        c.rate_per_s.map(|r| format!(", {r}/s")).unwrap_or_default(),
        c.max_tokens,
        c.timeout_ms,
        r.wall_ms
    );
    let _ = writeln!(
        out,
        "result: {} ok, {} failed · {} output tokens{} · {} stalls",
        s.ok,
        s.failed,
        s.output_tokens,
        s.throughput_tok_s.map(|t| format!(" ({t} tok/s over the run)")).unwrap_or_default(),
        s.stalls
    );
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out.push('\n');
    header(&mut out, 7);
    row(&mut out, "TTFT", s.ttft_ms.as_ref());
    row(&mut out, "TTFO", s.ttfo_ms.as_ref());
    row(&mut out, "ITL", s.itl_ms.as_ref());
    row(&mut out, "ITL/tok", s.itl_per_token_ms.as_ref());
    row(&mut out, "TPOT", s.tpot_ms.as_ref());
    row(&mut out, "E2E", s.e2e_ms.as_ref());
    chunk_tokens_line(&mut out, r);
    open_loop(&mut out, r);

    let failed: Vec<_> = r.requests.iter().filter(|q| q.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\nfailures:");
        for (kind, n) in &s.failures {
            let _ = writeln!(out, "  {kind} × {n}");
        }
        let mut seen = std::collections::BTreeSet::new();
        for q in failed {
            if let Some(e) = &q.error {
                // One example per kind: the same message fifty times helps nobody.
                if seen.insert(e.kind) {
                    let status = q.status.map(|s| format!(" [HTTP {s}]")).unwrap_or_default();
                    let _ = writeln!(out, "  #{}{status} {}: {}", q.index, e.kind.as_str(), e.message);
                }
            }
        }
    }
    // What a bounded record left out, said where a person reads.
    let cut: u64 = r.requests.iter().map(|q| q.cut_events).sum();
    if cut > 0 {
        let n = r.requests.iter().filter(|q| q.cut_events > 0).count();
        let _ = writeln!(
            out,
            "\ncut events: {cut} event(s) in {n} request(s) were longer than the SSE parser's limit (a line over 1 MiB, an event over 4 MiB) and could not be read whole"
        );
    }
    let beyond: Vec<_> = r.requests.iter().filter(|q| q.tokens_beyond_cap > 0).collect();
    if !beyond.is_empty() {
        let _ = writeln!(
            out,
            "\nlong streams: {} request(s) sent more than 65,536 token events; gaps after that are summarised (sketch, ≤ 1 % error), not listed:",
            beyond.len()
        );
        for q in beyond.iter().take(5) {
            let g = q.gaps_beyond_cap.as_ref();
            let _ = writeln!(
                out,
                "  request #{}: {} more token events, later gaps p50 {} ms p99 {} ms max {} ms",
                q.index,
                q.tokens_beyond_cap,
                cell(g.map(|g| g.p50)),
                cell(g.map(|g| g.p99)),
                cell(g.map(|g| g.max)),
            );
        }
    }
    let stalled: Vec<_> = r.requests.iter().filter(|q| !q.stalls.is_empty()).collect();
    if !stalled.is_empty() {
        let _ = writeln!(out, "\nstalls (a gap above max(k × running median of earlier gaps, floor)):");
        for q in stalled.iter().take(10) {
            for st in q.stalls.iter().take(3) {
                let _ = writeln!(
                    out,
                    "  request #{} gap {} : {:.1} ms (threshold {:.1} ms){}",
                    q.index,
                    st.gap_index,
                    st.gap_ms,
                    st.threshold_ms,
                    q.response_id.as_deref().map(|id| format!(" id {id}")).unwrap_or_default()
                );
            }
        }
    }
    crate::slowest::write(&mut out, r);
    let _ = writeln!(out, "\ndefinitions:");
    for d in &r.definitions {
        let _ = writeln!(out, "  {:<7} {}", d.name, d.meaning);
        let _ = writeln!(out, "          (others: {})", d.others);
    }
    let _ = writeln!(out, "  {}", r.quantile_method);
    for l in &r.limits {
        let _ = writeln!(out, "  limit: {l}");
    }
    out
}

use triage_core::analyze::report::Report;
use triage_core::analyze::report::sections::{
    Align, Column, FindingSection, PrometheusSection, Sections, Table, Words,
};

fn opt(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The analysis report as text (English headings).
pub fn analyze_text(r: &Report) -> String {
    analyze_text_in(r, Lang::En)
}

/// The analysis report as text, headings in `lang` (the report's own text is in the language it
/// was analysed in): the report's [`Sections`], laid out for a terminal.
pub fn analyze_text_in(r: &Report, lang: Lang) -> String {
    let s = Sections::of(r, lang);
    let w = s.words;
    let mut out = String::new();
    let recognised = r.inputs.iter().filter(|i| i.kind.as_str() != "unknown").count();
    let (verdict, n) = (r.verdict.as_str(), r.findings.len());
    let _ = writeln!(
        out,
        "{}",
        lang.pick(
            format!(
                "triage analyze · verdict: {verdict} · {n} finding(s) · {recognised} section(s) recognised"
            ),
            format!("triage analyze · 结论：{verdict} · {n} 个发现 · 识别出 {recognised} 个片段"),
        )
    );
    for f in &s.findings {
        finding_text(&mut out, f, w);
    }
    if s.findings.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            match r.verdict.as_str() {
                "HEALTHY" => lang.pick("Nothing wrong found in what was recognised.", "已识别的内容中没有发现问题。"),
                _ => lang.pick(
                    "Nothing was recognised: paste vLLM/SGLang/TGI logs, /metrics scrapes, nvidia-smi output, OOM tracebacks, request logs or client configs.",
                    "没有识别出任何内容：请提供 vLLM/SGLang/TGI 日志、/metrics 抓取、nvidia-smi 输出、OOM 堆栈、请求日志或客户端配置。",
                ),
            }
        );
    }
    if let Some(p) = &s.prometheus {
        prometheus_text(&mut out, p, w);
    }
    let _ = writeln!(out, "\n{}{}", w.inputs(), w.colon());
    for i in &r.inputs {
        let (name, a, b, kind) = (&i.name, i.lines[0], i.lines[1], i.kind.as_str());
        let _ = writeln!(
            out,
            "{}",
            lang.pick(format!("  {name} lines {a}-{b}  {kind}"), format!("  {name} 第 {a}-{b} 行  {kind}"))
        );
        for issue in i.issues.iter().take(5) {
            let _ = writeln!(out, "      {}", w.issue(issue.line, &issue.message));
        }
        if i.issues.len() > 5 {
            let more = i.issues.len() - 5;
            let _ = writeln!(
                out,
                "{}",
                lang.pick(format!("      … {more} more issue(s)"), format!("      … 另有 {more} 个问题"))
            );
        }
    }
    if !s.figures.is_empty() {
        let _ = writeln!(out, "\n{}{}", w.figures(), w.colon());
        for (name, f) in &s.figures {
            let _ = writeln!(out, "  {name}: {}", f.display(lang));
            let _ = writeln!(out, "      = {}", f.definition);
        }
    }
    slowest_text(&mut out, r, lang);
    out
}

/// One finding: its heading line, summary, subject, evidence (with the Prometheus citation
/// behind a line), what to change and what to check next.
fn finding_text(out: &mut String, s: &FindingSection<'_>, w: Words) {
    let f = s.finding;
    let _ = writeln!(
        out,
        "\n{}. [{}] {} ({}) · {} {:.2}",
        s.number,
        f.class.as_str(),
        f.title,
        f.rule,
        w.confidence(),
        f.confidence
    );
    let _ = writeln!(out, "   {}", f.summary);
    if let Some(about) = &s.about {
        let _ = writeln!(out, "   {} {about}", w.about());
    }
    if !s.evidence.is_empty() {
        let _ = writeln!(out, "   {}", w.evidence());
        for (e, c) in &s.evidence {
            let _ = writeln!(out, "     {}:{}  {}", e.input, e.line, e.text);
            if let Some(c) = c {
                let _ = writeln!(out, "       ↳ {} = {} {} {}", c.expr, c.value, w.at(), c.at);
                let _ = writeln!(out, "         {}", c.graph_url);
            }
        }
    }
    for (label, items) in [(w.what_to_change(), &f.remediation), (w.next_checks(), &f.next_checks)] {
        if !items.is_empty() {
            let _ = writeln!(out, "   {label}");
            for x in items {
                let _ = writeln!(out, "     - {x}");
            }
        }
    }
}

/// The slowest requests of a request log, by TTFT (a table only the terminal shows).
fn slowest_text(out: &mut String, r: &Report, lang: Lang) {
    let Some(slow) = r.figures.get("request_log.slowest") else { return };
    let Some(rows) = slow.value.as_array() else { return };
    let _ = writeln!(
        out,
        "\n{} {}",
        lang.pick("slowest requests by TTFT (ms):", "TTFT 最慢的请求（ms）："),
        slow.definition
    );
    let _ = writeln!(
        out,
        "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  where",
        "id", "TTFT", "queue", "prefill", "decode", "E2E", "prompt"
    );
    for row in rows {
        let id = opt(&row["id"]);
        let _ = writeln!(
            out,
            "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {}:{}",
            id.chars().take(18).collect::<String>(),
            opt(&row["ttft_ms"]),
            opt(&row["queue_ms"]),
            opt(&row["prefill_ms"]),
            opt(&row["decode_ms"]),
            opt(&row["e2e_ms"]),
            opt(&row["prompt_tokens"]),
            opt(&row["input"]),
            opt(&row["line"])
        );
    }
}

/// A fleet table in fixed-width columns (the columns a terminal has no room for left out),
/// then how many rows were left out.
fn table_text(out: &mut String, t: &Table, lang: Lang) {
    let names = t.columns.iter().map(|c| c.terminal.map_or(c.name, |(name, _, _)| name));
    row_text(out, &t.columns, names);
    for row in &t.rows {
        row_text(out, &t.columns, row.iter().map(|c| c.text.as_str()));
    }
    if t.more > 0 {
        let more = t.more;
        let _ = writeln!(
            out,
            "{}",
            lang.pick(format!("  … {more} more GPU(s)"), format!("  … 另有 {more} 张 GPU"))
        );
    }
}

/// One line of a table: each cell the terminal shows, padded to its column.
fn row_text<'a>(out: &mut String, columns: &[Column], cells: impl Iterator<Item = &'a str>) {
    out.push(' ');
    for (column, cell) in columns.iter().zip(cells) {
        match column.terminal {
            Some((_, width, Align::Left)) => {
                let _ = write!(out, " {cell:<width$}");
            }
            Some((_, width, Align::Right)) => {
                let _ = write!(out, " {cell:>width$}");
            }
            None => {}
        }
    }
    out.push('\n');
}

/// The `prometheus` input: server, window, queries, cuts, groups and the fleet view.
fn prometheus_text(out: &mut String, s: &PrometheusSection<'_>, w: Words) {
    let p = s.input;
    let _ = writeln!(out, "\n{}{}", w.from_prometheus(), w.colon());
    let _ = writeln!(out, "  {} {}", w.server(), p.url);
    let _ = writeln!(out, "  {} {} → {} ({} {} s)", w.window(), p.start, p.end, w.step(), p.step_s);
    if !p.selector.trim().is_empty() {
        let _ = writeln!(out, "  {} {}", w.selector(), p.selector);
    }
    if let Some(sc) = &p.scraping {
        let _ = writeln!(out, "  {} {}", w.scraping(), sc.limits);
        if sc.stale_series > 0 {
            let _ = writeln!(out, "  {}{}", w.stale(sc.stale_series), w.stale_why());
        }
    }
    let _ = writeln!(out, "  {}", w.read(p.series, p.points));
    for q in &p.queries {
        let _ = writeln!(out, "  {} {} ({} series)", q.api, q.expr, q.series);
        let _ = writeln!(out, "      {}", q.graph_url);
    }
    for c in &p.cut {
        let _ = writeln!(out, "  {} {c}", w.cut());
    }
    let lang = w.0;
    if let Some(t) = &s.replicas {
        let _ = writeln!(out, "\n{}{} {}", w.fleet(), w.replicas_ranked_by(), p.fleet.ranked_by);
        table_text(out, t, lang);
    }
    if let Some(t) = &s.gateways {
        let _ = writeln!(out, "\n{}", w.gateways());
        table_text(out, t, lang);
    }
    if let Some(t) = &s.gpus {
        let _ = writeln!(out, "\n{}{}", w.fleet(), w.gpus_ranked());
        table_text(out, t, lang);
    }
}
