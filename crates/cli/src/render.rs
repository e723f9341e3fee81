//! Plain-text rendering of reports for a person at a terminal at 2 a.m.
//!
//! Tables first, definitions always: every figure printed says what it measures.

use std::fmt::Write as _;
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
