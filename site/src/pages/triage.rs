//! Triage: paste or drop what you have, get the verdict, the ranked causes with their evidence
//! lines highlighted in your own input, what to change and what to check next.
//!
//! The analysis is written in the UI language (core writes the findings in it); switching the
//! language while a report is shown analyses the same inputs again.

use super::export::Exports;
use crate::app::{click, effect, on_event, set_text, tx, use_lang};
use crate::fixed::{Erase, fixed};
use crate::i18n::{Lang, Msg, t, tf};
use crate::worker::{self, WorkerDone, WorkerInput};
use crate::{Excerpt, NamedText};
use leptos::prelude::*;
use triage_report::{Finding, Report};
use wasm_bindgen::JsCast;

/// Pastes above this size are kept out of the textarea (listed like files).
const LARGE_PASTE_BYTES: usize = 256 * 1024;

/// Built-in examples (the test corpus), so a first visit has something to analyse.
const EXAMPLES: &[(&str, &str)] = &[
    ("ttft_queueing.log", include_str!("../../../tests/data/incidents/ttft_queueing.log")),
    ("throughput_kv_leak.prom", include_str!("../../../tests/data/incidents/throughput_kv_leak.prom")),
    ("h200_oom.txt", include_str!("../../../tests/data/oom/h200_200gib.txt")),
    ("eight_gpus.txt", include_str!("../../../tests/data/smi/synthetic_8gpu_one_slow.txt")),
    ("throughput_nccl_dead.log", include_str!("../../../tests/data/incidents/throughput_nccl_dead.log")),
    (
        "ollama_ps_cpu_split.txt",
        include_str!("../../../tests/data/incidents/ollama/tbt-ps-cpu-gpu-split-slow-eval.txt"),
    ),
    (
        "llama_server_long_prefill.log",
        include_str!("../../../tests/data/incidents/llama-server/ttft-long-prompt-prefill-single-slot.log"),
    ),
    (
        "trtllm_executor_oom.log",
        include_str!("../../../tests/data/incidents/tensorrt-llm/oom-colocated-process-low-free.log"),
    ),
];

/// An input waiting on the page: a paste kept out of the textarea, or a chosen or dropped file,
/// kept as its handle (the worker reads it).
#[derive(Clone)]
enum Input {
    Text(NamedText),
    File { name: String, file: web_sys::File },
}

impl Input {
    fn name(&self) -> &str {
        match self {
            Input::Text(t) => &t.name,
            Input::File { name, .. } => name,
        }
    }

    fn size(&self) -> f64 {
        match self {
            Input::Text(t) => t.text.len() as f64,
            Input::File { file, .. } => file.size(),
        }
    }
}

fn list_files(list: web_sys::FileList) -> Vec<Input> {
    (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|file| Input::File { name: file.name(), file })
        .collect()
}

/// A report on screen: the report, its source excerpts, the inputs it was made from (to
/// analyse again when the language changes) and its exports (Markdown, JSON).
type Shown = (Report, Vec<Excerpt>, Vec<Input>, Exports);

#[component]
pub fn TriagePage() -> impl IntoView {
    let lang = use_lang();
    let tr = move |m: Msg| t(lang.get(), m);
    let text = RwSignal::new(String::new());
    let textarea = NodeRef::<leptos::html::Textarea>::new();
    let files = RwSignal::new_local(Vec::<Input>::new());
    let result = RwSignal::new_local(None::<Shown>);
    let progress = RwSignal::new(None::<f64>);
    let error = RwSignal::new(None::<String>);
    let cancelled = RwSignal::new(false);
    // The worker run in progress, for Cancel.
    let running = StoredValue::new(None::<u32>);

    // Analyse `inputs` in `l`, in the worker (the analyzer's own module, off the page thread).
    let analyze = move |inputs: Vec<Input>, l: Lang| {
        error.set(None);
        cancelled.set(false);
        progress.set(Some(0.0));
        let sent: Vec<WorkerInput<'_>> = inputs
            .iter()
            .map(|i| match i {
                Input::Text(t) => WorkerInput::Text { name: &t.name, text: &t.text },
                Input::File { name, file } => WorkerInput::File { name, file },
            })
            .collect();
        let kept = std::rc::Rc::new(std::cell::RefCell::new(Some(inputs.clone())));
        let started = worker::run(
            &sent,
            l,
            move |p| progress.set(Some(p)),
            move |done| {
                progress.set(None);
                running.set_value(None);
                match done {
                    WorkerDone::Report { report: json, excerpts, markdown } => {
                        let parsed = serde_json::from_str::<Report>(&json)
                            .and_then(|r| Ok((r, serde_json::from_str::<Vec<Excerpt>>(&excerpts)?)));
                        match parsed {
                            Ok((report, shown)) => {
                                let inputs = kept.borrow_mut().take().unwrap_or_default();
                                result.set(Some((report, shown, inputs, Exports { json, markdown })));
                            }
                            Err(e) => error.set(Some(e.to_string())),
                        }
                    }
                    WorkerDone::Failed(e) => error.set(Some(tf(l, Msg::WorkerFailed, &[("error", &e)]))),
                    WorkerDone::Cancelled => cancelled.set(true),
                }
            },
        );
        match started {
            Ok(id) => running.set_value(Some(id)),
            Err(e) => {
                progress.set(None);
                error.set(Some(tf(l, Msg::WorkerFailed, &[("error", &e)])));
            }
        }
    };
    let run = move || {
        let mut inputs: Vec<Input> = files.get_untracked();
        let pasted = text.get_untracked();
        if !pasted.trim().is_empty() {
            inputs.push(Input::Text(NamedText { name: "paste".into(), text: pasted }));
        }
        analyze(inputs, lang.get_untracked());
    };
    let cancel = move || {
        if let Some(id) = running.get_value() {
            worker::cancel(id);
        }
    };
    // A report on screen follows the language: the same inputs, analysed again in the new one.
    Effect::new(move |prev: Option<Lang>| {
        let l = lang.get();
        if prev.is_some_and(|p| p != l)
            && let Some((_, _, inputs, _)) = result.get_untracked()
        {
            analyze(inputs, l);
        }
        l
    });

    let on_files = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        worker::warm();
        if let Some(list) = input.files() {
            files.update(|f| f.extend(list_files(list)));
        }
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        worker::warm();
        if let Some(list) = ev.data_transfer().and_then(|d| d.files()) {
            files.update(|f| f.extend(list_files(list)));
        }
    };

    fixed(view! {
        <section class="input" on:dragover=|ev: leptos::ev::DragEvent| ev.prevent_default() on:drop=on_drop>
            // Uncontrolled: writing a 10 MB value back into the textarea on every input event
            // costs seconds of layout. Only loading an example writes it (through the ref).
            <textarea
                data-testid="paste-input"
                rows="14"
                node_ref=textarea
                spellcheck="false"
                autocomplete="off"
                placeholder=tx(lang, Msg::PastePlaceholder)
                on:input=set_text(text)
                // The analyzer's module is fetched and compiled while the user is still typing.
                on:focus=|_| worker::warm()
                on:paste=move |ev: leptos::ev::ClipboardEvent| {
                    // A big paste becomes an input of its own, listed like a file: laying out
                    // megabytes in a textarea freezes the page for seconds and shows nothing useful.
                    let Some(pasted) = ev.clipboard_data().and_then(|d| d.get_data("text/plain").ok()) else { return };
                    if pasted.len() >= LARGE_PASTE_BYTES {
                        ev.prevent_default();
                        files.update(|f| {
                            let name = format!("paste-{}", f.len() + 1);
                            f.push(Input::Text(NamedText { name, text: pasted }));
                        });
                    }
                }
            ></textarea>
            <div class="row">
                <label class="file">
                    {tx(lang, Msg::AddFiles)}
                    <input type="file" multiple data-testid="file-input" on:change=on_event(on_files)/>
                </label>
                <select
                    data-testid="example-select"
                    on:change=on_event(move |ev| {
                        let name = event_target_value(&ev);
                        if let Some((_, body)) = EXAMPLES.iter().find(|(n, _)| *n == name) {
                            text.set((*body).to_owned());
                            if let Some(el) = textarea.get_untracked() {
                                el.set_value(body);
                            }
                        }
                    })
                >
                    <option value="">{tx(lang, Msg::Example)}</option>
                    {EXAMPLES.iter().map(|(n, _)| fixed(view! { <option value=*n>{*n}</option> })).collect_view()}
                </select>
                <button data-testid="analyze-button" class="primary" on:click=click(move |_| run())>
                    {move || if progress.get().is_some() { tr(Msg::Analyzing) } else { tr(Msg::Analyze) }}
                </button>
            </div>
            <ul class="files">
                {move || files.get().iter().map(|f| fixed(view! { <li>{f.name().to_owned()} " · " {f.size()} " B"</li> })).collect_view()}
            </ul>
            {move || progress.get().map(|p| fixed(view! {
                <progress data-testid="analyze-progress" max="1" value=p></progress>
                " "
                <button data-testid="analyze-cancel" on:click=click(move |_| cancel())>{tx(lang, Msg::Cancel)}</button>
            }))}
            {move || cancelled.get().then(|| fixed(view! { <p data-testid="analyze-cancelled">{tx(lang, Msg::Cancelled)}</p> }))}
            {move || error.get().map(|e| fixed(view! { <p class="error">{e}</p> }))}
        </section>
        {move || result.get().map(|(report, excerpts, _, exports)| fixed(view! { <ReportView report excerpts exports/> }))}
        <super::prometheus::PromSource/>
    })
}

/// Id of the element showing `line` of `input` in the source view.
fn line_id(input: &str, line: usize) -> String {
    let safe: String = input.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("src-{safe}-{line}")
}

#[component]
fn FindingView(finding: Finding) -> impl IntoView {
    let lang = use_lang();
    let class = finding.class.as_str();
    fixed(view! {
        <article class=format!("finding class-{class}") data-testid="finding" data-rule=finding.rule.clone()>
            <h3>
                <span class="badge">{class}</span>
                " " {finding.title.clone()} " "
                <code>{finding.rule.clone()}</code>
                <span class="confidence">{tx(lang, Msg::Confidence)} " " {format!("{:.2}", finding.confidence)}</span>
            </h3>
            {finding.subject.as_ref().map(|s| fixed(view! {
                <p data-testid="finding-subject">{tx(lang, Msg::FindingSubject)} ": " <code>{s.describe()}</code></p>
            }))}
            <p>{finding.summary.clone()}</p>
            <h4>{tx(lang, Msg::Evidence)}</h4>
            <ul class="evidence">
                {finding
                    .evidence
                    .iter()
                    .map(|e| {
                        let href = format!("#{}", line_id(&e.input, e.line));
                        fixed(view! {
                            <li>
                                <a
                                    class="loc"
                                    href=href.clone()
                                    on:click=click(move |ev| {
                                        ev.prevent_default();
                                        if let Some(el) = web_sys::window()
                                            .and_then(|w| w.document())
                                            .and_then(|d| d.get_element_by_id(href.trim_start_matches('#')))
                                        {
                                            el.scroll_into_view();
                                        }
                                    })
                                >
                                    {format!("{}:{}", e.input, e.line)}
                                </a>
                                " "
                                <code>{e.text.clone()}</code>
                            </li>
                        })
                    })
                    .collect_view()}
            </ul>
            <h4>{tx(lang, Msg::WhatToChange)}</h4>
            <ul>{finding.remediation.iter().map(|r| fixed(view! { <li><code>{r.clone()}</code></li> })).collect_view()}</ul>
            <h4>{tx(lang, Msg::NextChecks)}</h4>
            <ul>{finding.next_checks.iter().map(|r| fixed(view! { <li>{r.clone()}</li> })).collect_view()}</ul>
        </article>
    })
}

/// A whole report: verdict, findings, inputs, figures, evidence in the source. Also used by the
/// drill page. The source view shows `excerpts` (read by the worker).
#[component]
pub fn ReportView(
    report: Report,
    #[prop(optional)] excerpts: Vec<Excerpt>,
    #[prop(optional)] exports: Option<Exports>,
) -> impl IntoView {
    let lang = use_lang();
    let verdict = report.verdict.as_str();
    let empty = report.findings.is_empty();
    // Source excerpts: every evidence line with two lines of context, per input.
    let slowest = report.figures.get("request_log.slowest").and_then(|f| f.value.as_array().cloned());
    fixed(view! {
        <section class="report">
            <div data-testid="verdict" class=format!("verdict verdict-{verdict}")>
                {tx(lang, Msg::Verdict)} ": " <strong>{verdict}</strong>
            </div>
            {exports.map(|exports| fixed(view! { <super::export::ExportButtons exports/> }))}
            <h2>{tx(lang, Msg::Findings)}</h2>
            {if empty {
                let msg = if verdict == "HEALTHY" { Msg::NoFindingsHealthy } else { Msg::NoFindingsInconclusive };
                fixed(view! { <p>{tx(lang, msg)}</p> })
            } else {
                report.findings.iter().cloned().map(|finding| fixed(view! { <FindingView finding/> })).collect_view().erase()
            }}
            {slowest.map(|rows| fixed(view! { <SlowestChart rows/> }))}
            <ReportCharts report=report.clone()/>
            <h2>{tx(lang, Msg::Inputs)}</h2>
            <table class="inputs">
                <tbody>
                    {report
                        .inputs
                        .iter()
                        .map(|i| {
                            let issues: Vec<(usize, String)> =
                                i.issues.iter().take(3).map(|x| (x.line, x.message.clone())).collect();
                            let issues = move || {
                                let l = lang.get();
                                issues
                                    .iter()
                                    .map(|(n, m)| format!("{}: {m}", tf(l, Msg::LineNo, &[("n", &n.to_string())])))
                                    .collect::<Vec<_>>()
                                    .join(if l == Lang::Zh { "；" } else { "; " })
                            };
                            fixed(view! {
                                <tr>
                                    <td>{i.name.clone()}</td>
                                    <td>{format!("{}–{}", i.lines[0], i.lines[1])}</td>
                                    <td data-testid="input-kind"><code>{i.kind.as_str()}</code></td>
                                    <td class="issues">{issues}</td>
                                </tr>
                            })
                        })
                        .collect_view()}
                </tbody>
            </table>
            <h2>{tx(lang, Msg::Figures)}</h2>
            <table class="figures">
                <tbody>
                    {report
                        .figures
                        .iter()
                        .filter(|(k, _)| !k.ends_with(".slowest"))
                        .map(|(k, f)| {
                            fixed(view! {
                                <tr>
                                    <td><code>{k.clone()}</code></td>
                                    <td>{f.display(lang.get())}</td>
                                    <td class="def">{f.definition.clone()}</td>
                                </tr>
                            })
                        })
                        .collect_view()}
                </tbody>
            </table>
            {(!excerpts.is_empty()).then(|| fixed(view! {
                <h2>{tx(lang, Msg::SourceView)}</h2>
                {excerpts
                    .into_iter()
                    .map(|(name, lines)| {
                        fixed(view! {
                            <div class="source">
                                <div class="source-name">{name.clone()}</div>
                                <pre>
                                    {lines
                                        .into_iter()
                                        .map(|(n, l, hit)| {
                                            fixed(view! {
                                                <div id=line_id(&name, n) class:hit=hit>
                                                    <span class="ln">{n}</span>
                                                    {l}
                                                </div>
                                            })
                                        })
                                        .collect_view()}
                                </pre>
                            </div>
                        })
                    })
                    .collect_view()}
            }))}
        </section>
    })
}

/// Horizontal bars: queue, prefill and decode of the slowest requests.
#[component]
fn SlowestChart(rows: Vec<serde_json::Value>) -> impl IntoView {
    let lang = use_lang();
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(effect(move |_| {
        let Some(c) = canvas.get() else { return };
        let c: web_sys::HtmlCanvasElement = c.unchecked_into();
        let Ok(Some(ctx)) = c.get_context("2d") else { return };
        let ctx: web_sys::CanvasRenderingContext2d = ctx.unchecked_into();
        let (w, row_h) = (c.width() as f64, 22.0);
        ctx.clear_rect(0.0, 0.0, w, c.height() as f64);
        let get = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or(0.0);
        let max = rows
            .iter()
            .map(|r| get(r, "queue_ms") + get(r, "prefill_ms") + get(r, "decode_ms").max(0.0))
            .fold(1.0, f64::max);
        let scale = (w - 160.0) / max;
        for (i, r) in rows.iter().enumerate() {
            let y = 10.0 + i as f64 * row_h;
            ctx.set_fill_style_str("#333");
            ctx.set_font("12px sans-serif");
            let label = r["id"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| tf(lang.get(), Msg::LineNo, &[("n", &r["line"].to_string())]));
            let _ = ctx.fill_text(&label.chars().take(18).collect::<String>(), 4.0, y + 14.0);
            let mut x = 150.0;
            for (k, color) in [("queue_ms", "#e4a11b"), ("prefill_ms", "#d9534f"), ("decode_ms", "#5b8def")] {
                let v = get(r, k) * scale;
                ctx.set_fill_style_str(color);
                ctx.fill_rect(x, y, v, row_h - 6.0);
                x += v;
            }
        }
    }));
    let height = 20 + 22 * 10;
    fixed(view! {
        <h2>{tx(lang, Msg::Slowest)}</h2>
        <p class="legend">
            <span class="q">{tx(lang, Msg::LegendQueue)}</span> " "
            <span class="p">{tx(lang, Msg::LegendPrefill)}</span> " "
            <span class="d">{tx(lang, Msg::LegendDecode)}</span>
        </p>
        <canvas node_ref=canvas width="760" height=height data-testid="slowest-chart"></canvas>
    })
}

/// One GPU's line in a chart: legend, colour, points.
type Curve = (String, &'static str, Vec<(f64, f64)>);

/// The distributions, time series and per-GPU clocks a report carries in `series`/`figures`.
#[component]
fn ReportCharts(report: Report) -> impl IntoView {
    let lang = use_lang();
    let ttft: Vec<f64> = report
        .series
        .get("request_log.ttft_ms")
        .map(|s| s.iter().map(|p| p[1]).collect())
        .unwrap_or_default();
    let pts = |name: &str| -> Vec<(f64, f64)> {
        report.series.get(name).map(|s| s.iter().map(|p| (p[0], p[1])).collect()).unwrap_or_default()
    };
    // vLLM's stats lines when there are any, else SGLang's batch lines: the same three charts.
    let engine = if report.series.contains_key("vllm.running") { "vllm" } else { "sglang" };
    // Series: (legend message, colour, points); the legends are looked up when drawn.
    let queue = if engine == "vllm" {
        [
            (Msg::LegendRunning, "#5b8def", pts("vllm.running")),
            (Msg::LegendWaiting, "#d9534f", pts("vllm.waiting")),
        ]
    } else {
        [
            (Msg::LegendRunning, "#5b8def", pts("sglang.running")),
            (Msg::LegendQueue, "#d9534f", pts("sglang.queue")),
        ]
    };
    let kv = pts(if engine == "vllm" { "vllm.kv_usage_pct" } else { "sglang.token_usage_pct" });
    let tps = pts(if engine == "vllm" { "vllm.gen_tps" } else { "sglang.gen_tps" });
    let (queue_label, kv_label, tps_label) = if engine == "vllm" {
        (Msg::ChartVllmStats, Msg::ChartVllmKv, Msg::ChartThroughput)
    } else {
        (Msg::ChartSglangBatches, Msg::ChartSglangKv, Msg::ChartThroughput)
    };
    let (queue_id, kv_id) = if engine == "vllm" {
        ("chart-vllm-queue", "chart-vllm-kv")
    } else {
        ("chart-sglang-queue", "chart-sglang-kv")
    };
    let clocks: Vec<(String, f64)> = report
        .figures
        .get("gpus.sm_clock_mhz")
        .and_then(|f| f.value.as_object().cloned())
        .map(|m| m.into_iter().filter_map(|(k, v)| Some((format!("GPU {k}"), v.as_f64()?))).collect())
        .unwrap_or_default();
    // A GPU recording: each GPU's SM clock and power over time, the straggler(s) the report
    // names (`slow-gpu`) in red.
    let stragglers: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.rule == "slow-gpu")
        .filter_map(|f| f.subject.as_ref()?.gpu.clone())
        .collect();
    let curves = |prefix: &str| -> Vec<Curve> {
        const PEERS: [&str; 6] = ["#5b8def", "#6c8ebf", "#3f6fb5", "#8aa9d6", "#2d5a99", "#9db4d9"];
        let mut v: Vec<(u32, String)> = report
            .series
            .keys()
            .filter_map(|k| Some((k.strip_prefix(prefix)?.parse().ok()?, k.clone())))
            .collect();
        triage_base::sort::sort_by_key(&mut v, |(g, _)| *g);
        v.into_iter()
            .map(|(g, k)| {
                let slow = stragglers.contains(&g.to_string());
                let name = if slow { format!("GPU {g} (slow-gpu)") } else { format!("GPU {g}") };
                let colour = if slow { "#d9534f" } else { PEERS[g as usize % PEERS.len()] };
                (name, colour, pts(&k))
            })
            .collect()
    };
    let (gpu_sm, gpu_power) = (curves("gpu.sm_clock_mhz."), curves("gpu.power_w."));
    let has_curves = !gpu_sm.is_empty();
    let (sm_canvas, power_canvas) =
        (NodeRef::<leptos::html::Canvas>::new(), NodeRef::<leptos::html::Canvas>::new());
    let (hist, cdf, q_canvas, kv_canvas, gpu_canvas, tps_canvas) = (
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
    );
    let (has_ttft, has_stats, has_kv, has_gpus, has_tps) =
        (!ttft.is_empty(), !queue[0].2.is_empty(), !kv.is_empty(), clocks.len() >= 2, !tps.is_empty());
    Effect::new(effect(move |_| {
        let l = lang.get();
        let canvas = |r: NodeRef<leptos::html::Canvas>| {
            r.get().map(|c| -> web_sys::HtmlCanvasElement { c.unchecked_into() })
        };
        if let Some(c) = canvas(hist) {
            super::chart::histogram(&c, &ttft, 30, t(l, Msg::ChartTtft));
        }
        if let Some(c) = canvas(cdf) {
            let mut sorted = ttft.clone();
            triage_base::sort::sort_by(&mut sorted, f64::total_cmp);
            let n = sorted.len().max(1) as f64;
            let points: Vec<(f64, f64)> =
                sorted.iter().enumerate().map(|(i, v)| (*v, (i + 1) as f64 / n)).collect();
            super::chart::line(&c, &points, t(l, Msg::ChartTtftCdf));
        }
        if let Some(c) = canvas(q_canvas) {
            let series: Vec<super::chart::Series<'_>> =
                queue.iter().map(|(m, colour, points)| (t(l, *m), *colour, points.clone())).collect();
            super::chart::lines(&c, &series, t(l, queue_label));
        }
        if let Some(c) = canvas(kv_canvas) {
            super::chart::line(&c, &kv, t(l, kv_label));
        }
        if let Some(c) = canvas(tps_canvas) {
            super::chart::line(&c, &tps, t(l, tps_label));
        }
        if let Some(c) = canvas(gpu_canvas) {
            super::chart::bars(&c, &clocks, t(l, Msg::ChartGpuClocks));
        }
        for (r, curves, msg) in [
            (sm_canvas, &gpu_sm, Msg::ChartGpuSmOverTime),
            (power_canvas, &gpu_power, Msg::ChartGpuPowerOverTime),
        ] {
            if let Some(c) = canvas(r) {
                let series: Vec<super::chart::Series<'_>> = curves
                    .iter()
                    .map(|(name, colour, points)| (name.as_str(), *colour, points.clone()))
                    .collect();
                super::chart::lines(&c, &series, t(l, msg));
            }
        }
    }));
    fixed(view! {
        <div class="charts">
            {has_ttft.then(|| fixed(view! {
                <canvas node_ref=hist width="370" height="220" data-testid="chart-ttft-hist"></canvas>
                <canvas node_ref=cdf width="370" height="220" data-testid="chart-ttft-cdf"></canvas>
            }))}
            {has_stats.then(|| fixed(view! { <canvas node_ref=q_canvas width="370" height="220" data-testid=queue_id></canvas> }))}
            {has_kv.then(|| fixed(view! { <canvas node_ref=kv_canvas width="370" height="220" data-testid=kv_id></canvas> }))}
            {has_tps.then(|| fixed(view! { <canvas node_ref=tps_canvas width="370" height="220" data-testid="chart-throughput"></canvas> }))}
            {has_gpus.then(|| fixed(view! { <canvas node_ref=gpu_canvas width="370" height="220" data-testid="chart-gpu-clocks"></canvas> }))}
            {has_curves.then(|| fixed(view! {
                <canvas node_ref=sm_canvas width="760" height="260" data-testid="chart-gpu-sm-clock"></canvas>
                <canvas node_ref=power_canvas width="760" height="260" data-testid="chart-gpu-power"></canvas>
            }))}
        </div>
    })
}
