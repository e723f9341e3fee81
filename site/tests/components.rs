//! Component tests in a real browser (wasm-bindgen-test, headless Chromium): pages mounted on
//! their own, showing what core computes.

use leptos::prelude::*;
use triage_site::i18n::Lang;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn mount_in_div(f: impl FnOnce() -> AnyView + 'static) -> web_sys::HtmlElement {
    mount_in_lang(RwSignal::new(Lang::En), f)
}

fn mount_in_lang(lang: RwSignal<Lang>, f: impl FnOnce() -> AnyView + 'static) -> web_sys::HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let div: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    doc.body().unwrap().append_child(&div).unwrap();
    let handle = mount_to(div.clone(), move || {
        provide_context(lang);
        f()
    });
    handle.forget();
    div
}

fn cjk(s: &str) -> bool {
    triage_core::lang::has_cjk(s)
}

fn text_of(root: &web_sys::HtmlElement, testid: &str) -> String {
    root.query_selector(&format!("[data-testid={testid}]"))
        .unwrap()
        .map(|e| e.text_content().unwrap_or_default())
        .unwrap_or_default()
}

#[wasm_bindgen_test]
fn the_kv_page_shows_the_estimate_for_the_default_preset() {
    let root = mount_in_div(|| triage_site::pages::kv::KvPage().into_any());
    // Llama-3.1-8B in bf16: 32 layers × 8 KV heads × 256 values × 2 bytes.
    assert_eq!(text_of(&root, "kv-bytes-per-token"), "131,072");
    assert!(text_of(&root, "kv-concurrency").ends_with('x'));
}

/// A pasted config without `vocab_size` still gives the bytes per token; what needs the weights
/// reads "unknown", and the list says what settles it — until the KV memory is given.
#[wasm_bindgen_test]
async fn the_kv_page_answers_what_a_partial_config_determines() {
    let root = mount_in_div(|| triage_site::pages::kv::KvPage().into_any());
    let input = |testid: &str, value: &str| {
        let el = root.query_selector(&format!("[data-testid={testid}]")).unwrap().unwrap();
        match el.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            Some(t) => t.set_value(value),
            None => el.unchecked_ref::<web_sys::HtmlInputElement>().set_value(value),
        }
        el.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    };
    input(
        "kv-config",
        r#"{"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
            "num_key_value_heads":8,"max_position_embeddings":131072}"#,
    );
    leptos::task::tick().await;
    assert_eq!(text_of(&root, "kv-error"), "", "not refused");
    assert_eq!(text_of(&root, "kv-bytes-per-token"), "131,072");
    assert_eq!(text_of(&root, "kv-tokens"), "unknown");
    assert_eq!(text_of(&root, "kv-concurrency"), "unknown");
    let missing = text_of(&root, "kv-missing");
    assert!(missing.contains("config.vocab_size") && missing.contains("--available-kv-gib"), "{missing}");
    input("kv-available", "54.62");
    leptos::task::tick().await;
    assert_eq!(text_of(&root, "kv-tokens"), "447,440");
    assert_eq!(text_of(&root, "kv-missing"), "", "nothing left unknown");
}

/// The rule docs as the worker answers them (`docs`).
fn docs() -> Vec<triage_site::pages::playbook::Doc> {
    serde_json::from_value(triage_site_analyzer::answer("docs", "").unwrap()).unwrap()
}

#[wasm_bindgen_test]
fn the_playbook_lists_every_rule_as_a_branch() {
    use triage_core::analyze::report::Class;
    use triage_site::pages::playbook::Branches;
    let classes = [
        Class::TtftHigh,
        Class::TbtTail,
        Class::Oom,
        Class::ThroughputZero,
        Class::Config,
        Class::Inconclusive,
    ];
    let root = mount_in_div(move || {
        classes.into_iter().map(|class| view! { <Branches class docs=docs()/> }).collect_view().into_any()
    });
    let branches = root.query_selector_all("[data-testid=playbook-branch]").unwrap().length() as usize;
    assert_eq!(branches, triage_core::analyze::rules::RULES.len());
}

#[wasm_bindgen_test]
fn the_catalogue_has_both_languages_for_every_message() {
    use triage_site::i18n::{Msg, t};
    for m in [
        Msg::NavTriage,
        Msg::Analyze,
        Msg::ProbeStart,
        Msg::KvBytesPerToken,
        Msg::KvMissing,
        Msg::KvUnknown,
        Msg::CardsShow,
        Msg::CardsRight,
        Msg::CardsUnsaved,
        Msg::CardsRetentionDef,
        Msg::DrillNew,
        Msg::LegendQueue,
        Msg::LegendPrefill,
        Msg::LegendDecode,
        Msg::ChartVllmStats,
        Msg::ChartThroughput,
        Msg::ChartGpuClocks,
        Msg::KvChartX,
        Msg::TreeOom,
        Msg::PromTitle,
        Msg::PromErrCors,
        Msg::PromErrNotProm,
        Msg::PromErrEmpty,
        Msg::FleetTitle,
    ] {
        assert!(!t(Lang::En, m).is_empty() && !t(Lang::Zh, m).is_empty());
        assert_ne!(t(Lang::En, m), t(Lang::Zh, m));
        assert!(cjk(t(Lang::Zh, m)), "{m:?}");
    }
    assert_eq!(triage_site::i18n::tf(Lang::Zh, Msg::LineNo, &[("n", "7")]), "第 7 行");
}

/// The playbook's rule docs follow the language, in place.
#[wasm_bindgen_test]
async fn the_playbook_shows_rule_docs_in_the_ui_language() {
    use triage_core::analyze::report::Class;
    use triage_site::pages::playbook::Branches;
    let lang = RwSignal::new(Lang::Zh);
    let root = mount_in_lang(lang, || view! { <Branches class=Class::TtftHigh docs=docs()/> }.into_any());
    let summary = || {
        root.query_selector("[data-testid=playbook-branch] summary").unwrap().unwrap().text_content().unwrap()
    };
    assert!(cjk(&summary()), "{}", summary());
    assert!(summary().contains("queueing-exceeds-capacity"));
    lang.set(Lang::En);
    leptos::task::tick().await;
    assert!(!cjk(&summary()), "{}", summary());
}

/// A report analysed in Chinese shows Chinese findings with the same rule ids and verdict.
#[wasm_bindgen_test]
fn a_report_in_chinese_keeps_rule_ids_and_verdict() {
    use triage_site_analyzer::{NamedText, analyze_inputs, excerpts};
    let inputs = vec![NamedText {
        name: "paste".into(),
        text: include_str!("../../tests/data/incidents/ttft_queueing.log").into(),
    }];
    let zh = analyze_inputs(&inputs, Lang::Zh);
    let en = analyze_inputs(&inputs, Lang::En);
    assert_eq!(zh.verdict, en.verdict);
    let shown = excerpts(&zh, &inputs);
    let root = mount_in_lang(RwSignal::new(Lang::Zh), move || {
        view! { <triage_site::pages::triage::ReportView report=zh excerpts=shown/> }.into_any()
    });
    // The evidence line is shown in the source view, marked.
    assert!(root.query_selector("div.hit").unwrap().is_some(), "no evidence line in the source view");
    assert!(text_of(&root, "verdict").contains("TTFT_HIGH"));
    let finding = root.query_selector("[data-testid=finding]").unwrap().unwrap();
    assert_eq!(finding.get_attribute("data-rule").as_deref(), Some(en.findings[0].rule.as_str()));
    assert!(cjk(&finding.text_content().unwrap()));
}

/// The plotters charts ink their canvas, redraw over what was there, and draw empty axes (no
/// panic) for no data, zeros, or zero bins.
#[wasm_bindgen_test]
fn the_charts_draw_and_survive_degenerate_data() {
    use triage_site::pages::chart;
    use web_sys::HtmlCanvasElement;
    let doc = web_sys::window().unwrap().document().unwrap();
    let canvas = || {
        let c: HtmlCanvasElement = doc.create_element("canvas").unwrap().unchecked_into();
        c.set_width(370);
        c.set_height(220);
        doc.body().unwrap().append_child(&c).unwrap();
        c
    };
    let image = |c: &HtmlCanvasElement| c.to_data_url().unwrap();
    let blank = image(&canvas());
    let drawn = |draw: &dyn Fn(&HtmlCanvasElement)| {
        let c = canvas();
        draw(&c);
        image(&c)
    };
    let queue = [
        ("running", "#5b8def", vec![(0.0, 10.0), (10.0, 64.0), (20.0, 64.0)]),
        ("waiting", "#d9534f", vec![(0.0, 0.0), (10.0, 30.0), (20.0, 130.0)]),
    ];
    let gpus = [("GPU 0".to_string(), 1800.0), ("GPU 1".to_string(), 800.0)];
    let cdf = [(0.0, 0.0), (120.0, 0.5), (3000.0, 1.0)];
    assert_ne!(drawn(&|c| chart::histogram(c, &[1.0, 2.0, 2.5, 40.0], 10, "TTFT (ms)")), blank);
    assert_ne!(drawn(&|c| chart::line(c, &cdf, "TTFT (ms)")), blank);
    assert_ne!(drawn(&|c| chart::lines(c, &queue, "seconds")), blank);
    assert_ne!(drawn(&|c| chart::bars(c, &gpus, "SM clock (MHz)")), blank);
    // Redrawn (e.g. on a language switch): the old chart is cleared first.
    let line_alone = drawn(&|c| chart::line(c, &cdf, "x"));
    let line_over_bars = drawn(&|c| {
        chart::bars(c, &gpus, "MHz");
        chart::line(c, &cdf, "x");
    });
    assert_eq!(line_over_bars, line_alone);
    // Nothing to show: axes alone.
    assert_ne!(drawn(&|c| chart::histogram(c, &[], 20, "ITL (ms)")), blank);
    drawn(&|c| chart::histogram(c, &[0.0, 0.0], 20, "x"));
    drawn(&|c| chart::histogram(c, &[5.0], 0, "x"));
    drawn(&|c| chart::line(c, &[], "x"));
    drawn(&|c| chart::line(c, &[(0.0, 0.0)], "x"));
    drawn(&|c| chart::lines(c, &[], "x"));
    drawn(&|c| chart::bars(c, &[], "x"));
}

/// The KV page's assumptions, warnings and formula follow the UI language; the numbers do not.
#[wasm_bindgen_test]
async fn the_kv_page_explains_itself_in_the_ui_language() {
    let lang = RwSignal::new(Lang::En);
    let root = mount_in_lang(lang, || triage_site::pages::kv::KvPage().into_any());
    let text = |sel: &str| root.query_selector(sel).unwrap().unwrap().text_content().unwrap();
    let tokens = text("[data-testid=kv-tokens]");
    assert!(!cjk(&text("ul.assumptions")), "{}", text("ul.assumptions"));
    assert!(!cjk(&text("ul.formula")));
    lang.set(Lang::Zh);
    leptos::task::tick().await;
    let assumptions = text("ul.assumptions");
    assert!(cjk(&assumptions), "{assumptions}");
    assert!(assumptions.contains("block size 16（vLLM 默认值）"), "{assumptions}");
    assert!(cjk(&text("ul.formula")), "{}", text("ul.formula"));
    assert_eq!(text("[data-testid=kv-tokens]"), tokens, "the figures do not change with the language");
    // An input error is in the UI language too, naming the flag as the CLI does.
    let available: web_sys::HtmlInputElement =
        root.query_selector("[data-testid=kv-available]").unwrap().unwrap().unchecked_into();
    available.set_value("lots");
    available.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    leptos::task::tick().await;
    let error = text("[data-testid=kv-error]");
    assert!(cjk(&error) && error.contains("--available-kv-gib"), "{error}");
}

/// The drill's symptom, file descriptions and choices follow the UI language, in place.
#[wasm_bindgen_test]
async fn the_drill_page_switches_to_chinese() {
    use triage_site::pages::drill::{DrillShown, DrillView};
    let drill: DrillView =
        serde_json::from_value(triage_site_analyzer::answer("drill", r#"{"seed":3}"#).unwrap()).unwrap();
    let lang = RwSignal::new(Lang::En);
    let root = mount_in_lang(lang, move || view! { <DrillShown drill/> }.into_any());
    let el =
        |sel: &str| -> web_sys::HtmlElement { root.query_selector(sel).unwrap().unwrap().unchecked_into() };
    let text = |sel: &str| el(sel).text_content().unwrap();
    let (symptom, file, choice) = (
        text("[data-testid=drill-symptom]"),
        text("[data-testid=drill-file] summary"),
        text("[data-testid=drill-choice]"),
    );
    assert!(!cjk(&symptom) && !cjk(&file) && !cjk(&choice), "{symptom} / {file} / {choice}");
    lang.set(Lang::Zh);
    leptos::task::tick().await;
    for sel in
        ["[data-testid=drill-symptom]", "[data-testid=drill-file] summary", "[data-testid=drill-choice]"]
    {
        assert!(cjk(&text(sel)), "{sel}: {}", text(sel));
    }
    assert!(text("[data-testid=drill-file] summary").contains("vllm.log"));
    assert_eq!(
        el("[data-testid=drill-choice]").get_attribute("data-name"),
        Some("long-prompt-no-chunking".into())
    );
    lang.set(Lang::En);
    leptos::task::tick().await;
    assert_eq!(text("[data-testid=drill-symptom]"), symptom);
}

/// Flashcards: a typed numeric answer tolerates separators and a percent sign and refuses what
/// is not a finite number; the card browser's search matches every word, in either language;
/// the page shows that it is loading the deck (its counts are core's, tested there).
#[wasm_bindgen_test]
fn flashcard_answers_parse_and_the_search_matches_either_language() {
    use triage_site::pages::cards::{browse::matches, review::parse_typed};
    assert_eq!(parse_typed("32,768"), Some(32768.0));
    assert_eq!(parse_typed(" 1 234.5 "), Some(1234.5));
    assert_eq!(parse_typed("1.2e4"), Some(12000.0));
    assert_eq!(parse_typed("87.5%"), Some(87.5));
    assert_eq!(parse_typed("abc"), None);
    assert_eq!(parse_typed("inf"), None);
    let deck = triage_core::cards::deck();
    let c = deck.iter().find(|c| c.id.starts_with("rule:kv-leak")).expect("kv-leak's cards");
    assert!(matches(c, "") && matches(c, "KV-LEAK"));
    let zh: String = c.front_zh.chars().filter(|ch| cjk(&ch.to_string())).take(2).collect();
    assert!(zh.chars().count() == 2 && matches(c, &zh), "{zh}");
    assert!(!matches(c, "kv-leak no-such-word"));
    let ui = mount_in_div(|| triage_site::pages::cards::CardsPage().into_any());
    assert!(ui.query_selector("[data-testid=cards-loading]").unwrap().is_some());
}

/// The Prometheus source's deadline of one query (30 s) can be shortened by a test through a
/// page global, never lengthened or turned off: only a positive number below it is read.
#[wasm_bindgen_test]
fn the_prometheus_deadline_can_only_be_shortened() {
    use triage_site::pages::prometheus::query_timeout_ms;
    let w = web_sys::window().unwrap();
    let key = wasm_bindgen::JsValue::from_str("__triageTestDeadlineMs");
    assert_eq!(query_timeout_ms(), 30_000.0);
    let cases: [(wasm_bindgen::JsValue, f64); 8] = [
        (2000.0.into(), 2000.0),
        (29_999.0.into(), 29_999.0),
        (30_001.0.into(), 30_000.0),
        (1e12.into(), 30_000.0),
        (f64::INFINITY.into(), 30_000.0),
        (0.0.into(), 30_000.0),
        ((-1.0).into(), 30_000.0),
        ("2000".into(), 30_000.0),
    ];
    for (v, want) in cases {
        js_sys::Reflect::set(&w, &key, &v).unwrap();
        assert_eq!(query_timeout_ms(), want, "{v:?}");
    }
    js_sys::Reflect::set(&w, &key, &f64::NAN.into()).unwrap();
    assert_eq!(query_timeout_ms(), 30_000.0);
    js_sys::Reflect::delete_property(&w.into(), &key).unwrap();
}

/// The Prometheus source checks what it can before asking anything: a URL that is not http(s)
/// or carries credentials, and a time range it cannot read, end in their own error, in the UI
/// language, and nothing is sent.
#[wasm_bindgen_test]
async fn the_prometheus_source_refuses_bad_urls_and_windows_before_asking() {
    let lang = RwSignal::new(Lang::En);
    let root = mount_in_lang(lang, || view! { <triage_site::pages::prometheus::PromSource/> }.into_any());
    let input = |id: &str| -> web_sys::HtmlInputElement {
        root.query_selector(&format!("[data-testid={id}]")).unwrap().unwrap().unchecked_into()
    };
    let set = |id: &str, v: &str| {
        let el = input(id);
        el.set_value(v);
        el.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    };
    let run = || input("prom-run").click();
    let kind = || {
        root.query_selector("[data-testid=prom-error]").unwrap().and_then(|e| e.get_attribute("data-kind"))
    };
    for bad in ["ftp://prom:9090", "http://user:pw@prom:9090", "http://prom:9090/?x=1", "prom"] {
        set("prom-url", bad);
        run();
        leptos::task::tick().await;
        leptos::task::tick().await;
        assert_eq!(kind().as_deref(), Some("url"), "{bad}");
    }
    set("prom-url", "http://127.0.0.1:9/");
    set("prom-from", "yesterday");
    run();
    leptos::task::tick().await;
    assert_eq!(kind().as_deref(), Some("window"));
    assert!(text_of(&root, "prom-error").contains("yesterday"));
    lang.set(Lang::Zh);
    leptos::task::tick().await;
    assert!(cjk(&text_of(&root, "prom-error")));
    set("prom-from", "");
    set("prom-step", "0s");
    run();
    leptos::task::tick().await;
    assert_eq!(kind().as_deref(), Some("window"));
}
