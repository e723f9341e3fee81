//! The whole llm-triage text analyzer ([`triage_core::analyze`]) as a WASI 0.2 component
//! implementing the world `triage:plugin/text-analyzer` (`plugins/wit/triage.wit`): inputs in,
//! the `triage.report/v1` report out — the same JSON `triage analyze --format json` prints.
//!
//! Build: `cargo xtask plugins` (→ `<target>/plugins/analyzer.wasm`).

#![allow(
    clippy::too_many_arguments,
    reason = "wit-bindgen's generated glue passes a record's fields as separate arguments"
)]

use triage::plugin::types::Finding;
use triage_core::analyze::Analyzer;

wit_bindgen::generate!({
    world: "text-analyzer",
    path: "../wit",
});

struct Plugin;

impl Guest for Plugin {
    fn analyze_text(inputs: Vec<TextInput>) -> Report {
        let mut analyzer = Analyzer::new();
        for input in &inputs {
            analyzer.begin(&input.name);
            analyzer.feed(input.text.as_bytes());
            analyzer.end();
        }
        let report = analyzer.finish();
        let json = serde_json::to_string(&report).unwrap_or_default();
        Report {
            verdict: report.verdict.as_str().to_owned(),
            findings: report
                .findings
                .iter()
                .map(|f| Finding {
                    t: 0.0,
                    gpu: None,
                    class: f.class.as_str().to_owned(),
                    rule: f.rule.clone(),
                    title: f.title.clone(),
                    confidence: f.confidence,
                    evidence: f
                        .evidence
                        .iter()
                        .map(|e| format!("{}:{}: {}", e.input, e.line, e.text))
                        .collect(),
                    remediation: f.remediation.join("\n"),
                })
                .collect(),
            json,
        }
    }
}

export!(Plugin);
