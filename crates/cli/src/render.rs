//! Plain-text rendering of reports for a person at a terminal at 2 a.m. (the Markdown form of
//! an analysis report is core's, `triage_core::analyze::markdown`).
//!
//! Tables first, definitions always: every figure printed says what it measures.

use std::fmt::Write as _;
use triage_core::analyze::report::short_number as opt_num;
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
    let _ = writeln!(
        out,
        "  {name:<5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        cell(q.map(|q| q.p50)),
        cell(q.map(|q| q.p90)),
        cell(q.map(|q| q.p99)),
        cell(q.map(|q| q.max)),
        cell(q.map(|q| q.mean)),
        q.map(|q| q.n.to_string()).unwrap_or_else(|| "0".into()),
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
    let _ = writeln!(
        out,
        "  {:<5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "ms", "p50", "p90", "p99", "max", "mean", "n"
    );
    row(&mut out, "TTFT", s.ttft_ms.as_ref());
    row(&mut out, "TTFO", s.ttfo_ms.as_ref());
    row(&mut out, "ITL", s.itl_ms.as_ref());
    row(&mut out, "TPOT", s.tpot_ms.as_ref());
    row(&mut out, "E2E", s.e2e_ms.as_ref());

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
        let _ = writeln!(out, "  {:<5} {}", d.name, d.meaning);
        let _ = writeln!(out, "        (others: {})", d.others);
    }
    let _ = writeln!(out, "  {}", r.quantile_method);
    for l in &r.limits {
        let _ = writeln!(out, "  limit: {l}");
    }
    out
}

use triage_core::analyze::report::Report;

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
/// was analysed in).
pub fn analyze_text_in(r: &Report, lang: Lang) -> String {
    let l = |en: &'static str, zh: &'static str| lang.pick(en, zh);
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
    for (i, f) in r.findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n{}. [{}] {} ({}) · {} {:.2}",
            i + 1,
            f.class.as_str(),
            f.title,
            f.rule,
            l("confidence", "可信度"),
            f.confidence
        );
        let _ = writeln!(out, "   {}", f.summary);
        if let Some(about) = &f.subject {
            let _ = writeln!(out, "   {} {}", l("about:", "对象："), about.describe());
        }
        if !f.evidence.is_empty() {
            let _ = writeln!(out, "   {}", l("evidence:", "证据："));
            for e in &f.evidence {
                let _ = writeln!(out, "     {}:{}  {}", e.input, e.line, e.text);
                if let Some(c) = r.citation(e) {
                    let _ = writeln!(out, "       ↳ {} = {} {} {}", c.expr, c.value, l("at", "于"), c.at);
                    let _ = writeln!(out, "         {}", c.graph_url);
                }
            }
        }
        if !f.remediation.is_empty() {
            let _ = writeln!(out, "   {}", l("what to change:", "该改什么："));
            for x in &f.remediation {
                let _ = writeln!(out, "     - {x}");
            }
        }
        if !f.next_checks.is_empty() {
            let _ = writeln!(out, "   {}", l("next checks:", "下一步检查："));
            for x in &f.next_checks {
                let _ = writeln!(out, "     - {x}");
            }
        }
    }
    if r.findings.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            match r.verdict.as_str() {
                "HEALTHY" => l("Nothing wrong found in what was recognised.", "已识别的内容中没有发现问题。"),
                _ => l(
                    "Nothing was recognised: paste vLLM/SGLang/TGI logs, /metrics scrapes, nvidia-smi output, OOM tracebacks, request logs or client configs.",
                    "没有识别出任何内容：请提供 vLLM/SGLang/TGI 日志、/metrics 抓取、nvidia-smi 输出、OOM 堆栈、请求日志或客户端配置。",
                ),
            }
        );
    }
    if let Some(p) = &r.prometheus {
        prometheus_text(&mut out, p, lang);
    }
    let _ = writeln!(out, "\n{}", l("inputs:", "输入："));
    for i in &r.inputs {
        let (name, a, b, kind) = (&i.name, i.lines[0], i.lines[1], i.kind.as_str());
        let _ = writeln!(
            out,
            "{}",
            lang.pick(format!("  {name} lines {a}-{b}  {kind}"), format!("  {name} 第 {a}-{b} 行  {kind}"))
        );
        for issue in i.issues.iter().take(5) {
            let (no, msg) = (issue.line, &issue.message);
            let _ = writeln!(
                out,
                "{}",
                lang.pick(format!("      line {no}: {msg}"), format!("      第 {no} 行：{msg}"))
            );
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
    let plain: Vec<_> = r.figures.iter().filter(|(k, _)| !k.ends_with(".slowest")).collect();
    if !plain.is_empty() {
        let _ = writeln!(out, "\n{}", l("figures:", "指标："));
        for (name, f) in plain {
            let _ = writeln!(out, "  {name}: {}", f.display(lang));
            let _ = writeln!(out, "      = {}", f.definition);
        }
    }
    if let Some(slow) = r.figures.get("request_log.slowest")
        && let Some(rows) = slow.value.as_array()
    {
        let _ = writeln!(
            out,
            "\n{} {}",
            l("slowest requests by TTFT (ms):", "TTFT 最慢的请求（ms）："),
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
    out
}

/// The `prometheus` input: server, window, queries, cuts, groups and the fleet view.
fn prometheus_text(out: &mut String, p: &triage_core::prometheus::PrometheusInput, lang: Lang) {
    let l = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let _ = writeln!(out, "\n{}", l("from Prometheus:", "来自 Prometheus："));
    let _ = writeln!(out, "  {} {}", l("server:", "服务器："), p.url);
    let _ = writeln!(
        out,
        "  {} {} → {} ({} {} s)",
        l("window:", "时间窗："),
        p.start,
        p.end,
        l("step", "步长"),
        p.step_s
    );
    if !p.selector.trim().is_empty() {
        let _ = writeln!(out, "  {} {}", l("selector:", "选择器："), p.selector);
    }
    if let Some(s) = &p.scraping {
        let _ = writeln!(out, "  {} {}", l("scraping:", "抓取："), s.limits);
        if s.stale_series > 0 {
            let _ = writeln!(
                out,
                "  {}",
                lang.pick(
                    format!("stale: {} series stopped being scraped (a target that stopped answering, not a counter that stopped)", s.stale_series),
                    format!("过期：{} 个序列不再被抓取（目标不再应答，而不是计数器停止）", s.stale_series)
                )
            );
        }
    }
    let _ = writeln!(
        out,
        "  {}",
        lang.pick(
            format!("read: {} series, {} points", p.series, p.points),
            format!("读取：{} 个序列，{} 个点", p.series, p.points)
        )
    );
    for q in &p.queries {
        let _ = writeln!(out, "  {} {} ({} series)", q.api, q.expr, q.series);
        let _ = writeln!(out, "      {}", q.graph_url);
    }
    for c in &p.cut {
        let _ = writeln!(out, "  {} {c}", l("cut:", "截断："));
    }
    if !p.fleet.replicas.is_empty() {
        let _ = writeln!(
            out,
            "\n{} {}",
            l("fleet — replicas ranked by", "集群 — 副本排序依据"),
            p.fleet.ranked_by
        );
        let _ = writeln!(
            out,
            "  {:<28} {:<15} {:>22} {:>22} {:>8} {:>7} {:>10}",
            "replica", "verdict", "TTFT p99 (s)", "ITL p99 (s)", "waiting", "KV", "gen tok/s"
        );
        for r in &p.fleet.replicas {
            let who = r.subject.instance.as_deref().or(r.subject.pod.as_deref()).unwrap_or("-");
            let _ = writeln!(
                out,
                "  {:<28} {:<15} {:>22} {:>22} {:>8} {:>7} {:>10}",
                who,
                r.verdict.as_str(),
                r.ttft_p99.as_deref().unwrap_or("-"),
                r.itl_p99.as_deref().unwrap_or("-"),
                opt_num(r.waiting_max),
                opt_num(r.kv_usage_max),
                opt_num(r.generation_tokens_per_s)
            );
        }
    }
    if !p.fleet.gateways.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            l("gateways (llm_stream_*, as clients saw it):", "网关（llm_stream_*，客户端视角）：")
        );
        let _ = writeln!(
            out,
            "  {:<28} {:>22} {:>22} {:>8} {:>8}",
            "instance", "TTFT p99 (s)", "ITL p99 (s)", "req/s", "err/s"
        );
        for g in &p.fleet.gateways {
            let _ = writeln!(
                out,
                "  {:<28} {:>22} {:>22} {:>8} {:>8}",
                g.subject.instance.as_deref().or(g.subject.pod.as_deref()).unwrap_or("-"),
                g.ttft_p99.as_deref().unwrap_or("-"),
                g.itl_p99.as_deref().unwrap_or("-"),
                opt_num(g.requests_per_s),
                opt_num(g.errors_per_s)
            );
        }
    }
    if !p.fleet.gpus.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            l(
                "fleet — GPUs ranked by SM clock against their node's peers",
                "集群 — GPU 按 SM 时钟与同节点其他卡之比排序"
            )
        );
        let _ = writeln!(
            out,
            "  {:<24} {:>4} {:>9} {:>9} {:>6} {:>6} {:>6}",
            "Hostname", "gpu", "SM MHz", "peers", "ratio", "°C", "util%"
        );
        for g in p.fleet.gpus.iter().take(32) {
            let host = g.subject.hostname.as_deref().or(g.subject.instance.as_deref()).unwrap_or("-");
            let _ = writeln!(
                out,
                "  {:<24} {:>4} {:>9} {:>9} {:>6} {:>6} {:>6}",
                host,
                g.subject.gpu.as_deref().unwrap_or("-"),
                opt_num(Some(g.sm_clock_mhz)),
                opt_num(g.peer_median_mhz),
                opt_num(g.ratio),
                opt_num(g.temp_c),
                opt_num(g.util_pct)
            );
        }
        if p.fleet.gpus.len() > 32 {
            let more = p.fleet.gpus.len() - 32;
            let _ = writeln!(
                out,
                "{}",
                lang.pick(format!("  … {more} more GPU(s)"), format!("  … 另有 {more} 张 GPU"))
            );
        }
    }
}
