//! Into the ticket: a report shown on the page, copied as Markdown or saved as JSON — the bytes
//! `triage analyze --format markdown` and `--format json` print for the same inputs. Both are
//! made where the report is, in the analysis worker (core's one Markdown renderer,
//! `triage_report::markdown`; the CLI's pretty JSON), so the page's module carries
//! neither; keys and credential shapes are already redacted in the report itself.
//!
//! A probe's results are made here, on the page, where the run is: `triage.probe/v1` as
//! `triage probe --format json` prints it (the same `ProbeReport`, pretty, a final newline;
//! messages in English as the CLI writes them), and a Markdown summary for the ticket.

use crate::app::{click, tx, use_lang};
use crate::browser;
use crate::fixed::fixed;
use crate::i18n::{Lang, Msg, t};
use leptos::prelude::*;
use std::fmt::Write as _;
use triage_base::endpoint::{self, Api};
use triage_base::probe::{ProbeReport, Quantiles, RequestRecord, RunConfig};
// Text from outside (a URL, a model name, a server's message) made inert as the report's Markdown makes it.
use triage_report::markdown::md_escape;

/// A report's two exports, as the worker wrote them.
#[derive(Clone, Debug, PartialEq)]
pub struct Exports {
    /// `triage.report/v1`, pretty, with a final newline (`--format json`).
    pub json: String,
    /// The report as Markdown (`--format markdown`).
    pub markdown: String,
}

/// What the copy button last did.
#[derive(Clone, Copy, PartialEq)]
enum CopyState {
    Idle,
    Done,
    Failed,
}

/// "Copy as Markdown" and "Download JSON" for one report; `probe`: for the probe's results
/// (the test ids take a `probe-` prefix, the file is `triage-probe.json`).
#[component]
pub fn ExportButtons(exports: Exports, #[prop(optional)] probe: bool) -> impl IntoView {
    let lang = use_lang();
    let id = move |name: &str| if probe { format!("probe-{name}") } else { name.to_owned() };
    let (file, note) = if probe {
        ("triage-probe.json", Msg::ProbeExportNote)
    } else {
        ("triage-report.json", Msg::ExportNote)
    };
    let state = RwSignal::new(CopyState::Idle);
    let Exports { json, markdown } = exports;
    let md = StoredValue::new(markdown);
    let copy = move |_| {
        let text = md.get_value();
        leptos::task::spawn_local(async move {
            let ok = browser::copy_text(&text).await.is_ok();
            state.set(if ok { CopyState::Done } else { CopyState::Failed });
        });
    };
    let download = move |_| browser::download(file, &json, "application/json");
    fixed(view! {
        <div class="row export">
            <button data-testid=id("copy-markdown") on:click=click(copy)>{tx(lang, Msg::CopyMarkdown)}</button>
            <button data-testid=id("download-json") on:click=click(download)>{tx(lang, Msg::DownloadJson)}</button>
            <span class="note" data-testid=id("copy-status")>
                {move || match state.get() {
                    CopyState::Idle => tx(lang, note)(),
                    CopyState::Done => tx(lang, Msg::Copied)(),
                    CopyState::Failed => tx(lang, Msg::CopyFailed)(),
                }}
            </span>
        </div>
        // Where the clipboard is refused (plain http on a LAN address, a locked-down browser):
        // the Markdown itself, selected, for copying by hand.
        {move || (state.get() == CopyState::Failed).then(|| {
            let text = md.get_value();
            fixed(view! {
                <textarea class="export-fallback" readonly rows="8" data-testid=id("markdown-fallback")
                    on:focus=|ev: leptos::ev::FocusEvent| {
                        let el: web_sys::HtmlTextAreaElement = event_target(&ev);
                        el.select();
                    }
                    prop:value=text
                ></textarea>
            })
        })}
    })
}

/// What a probe run was asked to do, kept from its start for its exports.
#[derive(Clone, PartialEq)]
pub struct ProbeRun {
    /// The endpoint as typed (resolved again for the report, in English).
    pub url: String,
    pub api: Api,
    pub model: String,
    pub requests: usize,
    pub concurrency: usize,
    pub timeout_ms: u64,
    pub max_tokens: u32,
    pub prompt_chars: usize,
    /// The key sent, for redaction only (never written).
    pub key: String,
    /// The chunks were read and stamped in the probe worker (else on the page's thread).
    pub in_worker: bool,
}

/// The probe's two exports: `records` of `run` over `wall_ms`, with each failure's message in
/// both languages by request index (`messages`); the Markdown in `lang`.
pub fn probe(
    run: &ProbeRun,
    records: &[RequestRecord],
    wall_ms: f64,
    messages: &[(usize, [String; 2])],
    lang: Lang,
) -> Exports {
    let secrets = triage_base::safe::Secrets::new().with(&run.key);
    let redact = |s: &str| secrets.redact(s).into_owned();
    let say = |records: &[RequestRecord], pick: usize| -> Vec<RequestRecord> {
        let mut out = records.to_vec();
        for r in &mut out {
            if let (Some(e), Some((_, both))) = (&mut r.error, messages.iter().find(|(i, _)| *i == r.index)) {
                e.message.clone_from(&both[pick]);
            }
        }
        out
    };
    let report = |l: Lang| {
        let (url, mut warnings) = match endpoint::resolve_in(&run.url, run.api, l) {
            Ok(r) => (redact(&r.url), r.warnings.iter().map(|w| redact(w)).collect()),
            Err(e) => (redact(&run.url), vec![redact(&e.message_in(l))]),
        };
        if run.key.is_empty() {
            warnings.push(
                l.pick(
                    "no API key given; requests went out without one",
                    "未填写 API Key；请求未带 Key 发出",
                )
                .to_owned(),
            );
        }
        let config = RunConfig {
            api: run.api,
            model: run.model.clone(),
            requests: run.requests,
            concurrency: run.concurrency,
            rate_per_s: None,
            timeout_ms: run.timeout_ms,
            max_tokens: run.max_tokens,
            prompt_chars: run.prompt_chars,
            arrival: None,
            seed: None,
        };
        let mut report =
            ProbeReport::new(url, config, warnings, wall_ms, say(records, usize::from(l == Lang::Zh)));
        report.limits = vec![
            format!(
                "{} {}",
                l.pick("browser timing, stamp_source user:", "浏览器计时，stamp_source user："),
                t(l, if run.in_worker { Msg::ProbeLimits } else { Msg::ProbeLimitsPage })
            ),
            l.pick(
                "chunks can coalesce several SSE events (proxies, TCP); those events share one arrival time and their gaps read 0",
                "一个数据块可能合并多个 SSE 事件（代理、TCP）；这些事件共用一个到达时间，其间隔为 0",
            )
            .to_owned(),
            l.pick(
                "output tokens come from the server's usage when it sends one, otherwise they are counted events (token_source)",
                "输出 token 数取自服务器返回的 usage，没有时按事件计数（token_source）",
            )
            .to_owned(),
        ];
        report
    };
    let json = serde_json::to_string_pretty(&report(Lang::En)).map(|j| j + "\n").unwrap_or_default();
    Exports { json, markdown: probe_markdown(&report(lang), lang) }
}

/// A probe report as Markdown, in `lang`.
pub fn probe_markdown(r: &ProbeReport, lang: Lang) -> String {
    let l = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let (s, c) = (&r.summary, &r.config);
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {} ok, {} failed\n", l("Probe", "探测"), s.ok, s.failed);
    let _ = writeln!(out, "- {}: {} ({})", l("Endpoint", "接口"), md_escape(&r.url), c.api.as_str());
    let _ = writeln!(
        out,
        "- {}: {} · {} {} · {} {} · max_tokens {} · timeout {} ms · wall {:.0} ms",
        l("Model", "模型"),
        md_escape(&c.model),
        c.requests,
        l("requests", "个请求"),
        l("concurrency", "并发"),
        c.concurrency,
        c.max_tokens,
        c.timeout_ms,
        r.wall_ms
    );
    let _ = writeln!(
        out,
        "- {}: {}{} · {} {}\n",
        l("Output tokens", "输出 token"),
        s.output_tokens,
        s.throughput_tok_s.map(|t| format!(" ({t} tok/s)")).unwrap_or_default(),
        l("stalls", "卡顿"),
        s.stalls
    );
    for w in &r.warnings {
        let _ = writeln!(out, "> ⚠ {}\n", md_escape(w));
    }
    let _ = writeln!(out, "| ms | p50 | p90 | p99 | max | mean | n |\n|---|---:|---:|---:|---:|---:|---:|");
    for (name, q) in [
        ("TTFT", &s.ttft_ms),
        ("TTFO", &s.ttfo_ms),
        ("ITL", &s.itl_ms),
        ("ITL/tok", &s.itl_per_token_ms),
        ("TPOT", &s.tpot_ms),
        ("E2E", &s.e2e_ms),
    ] {
        let cell =
            |f: fn(&Quantiles) -> f64| q.as_ref().map_or_else(|| "-".to_owned(), |q| format!("{:.1}", f(q)));
        let n = q.as_ref().map_or(0, |q| q.n);
        let (p50, p90, p99, max, mean) =
            (cell(|q| q.p50), cell(|q| q.p90), cell(|q| q.p99), cell(|q| q.max), cell(|q| q.mean));
        let _ = writeln!(out, "| {name} | {p50} | {p90} | {p99} | {max} | {mean} | {n} |");
    }
    out.push('\n');
    let failed: Vec<_> = r.requests.iter().filter_map(|q| q.error.as_ref().map(|e| (q, e))).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## {}\n", l("Failures", "失败"));
        for (q, e) in failed {
            let status = q.status.map(|s| format!(" [HTTP {s}]")).unwrap_or_default();
            let _ = writeln!(out, "- #{}{status} `{}`: {}", q.index, e.kind.as_str(), md_escape(&e.message));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## {}\n", l("Requests", "请求"));
    let _ = writeln!(
        out,
        "| # | {} | TTFT | TTFO | E2E | {} | id |\n|---:|---:|---:|---:|---:|---:|---|",
        l("status", "状态"),
        l("tokens", "token 数")
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
    for q in &r.requests {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            q.index,
            q.status.map(|s| s.to_string()).unwrap_or_else(|| "-".to_owned()),
            ms(q.ttft_ms),
            ms(q.ttfo_ms),
            ms(q.e2e_ms),
            q.output_tokens.map_or_else(|| "-".to_owned(), |n| n.to_string()),
            q.response_id.as_deref().map(|id| format!("`{}`", id.replace('`', "'"))).unwrap_or_default()
        );
    }
    out.push('\n');
    let _ = writeln!(out, "## {}\n", l("What the figures mean", "指标含义"));
    for d in triage_base::defs::PROBE_FIGURES {
        let _ = writeln!(out, "- **{}**: {} ({})", d.name, d.meaning_in(lang), d.others_in(lang));
    }
    out.push('\n');
    let _ = writeln!(out, "## {}\n", l("Limits", "局限"));
    for x in &r.limits {
        let _ = writeln!(out, "- {}", md_escape(x));
    }
    out
}
