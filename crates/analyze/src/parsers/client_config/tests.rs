//! The client-config parser's tests: the article's three forms on one line and on many, the
//! scanners, secrets never kept, totality on prose and garbage, bounds.

use super::*;
use crate::testutil::{fixture, run};
use triage_base::endpoint::Api;

const SETTINGS_ONELINE: &str = fixture!("configs/claude_settings_oneline.json");
const SETTINGS_PRETTY: &str = fixture!("configs/claude_settings.json");
const CODEX_ONELINE: &str = fixture!("configs/codex_oneline.toml");
const CODEX: &str = fixture!("configs/codex_config.toml");
const EXPORTS: &str = fixture!("configs/exports.sh");

fn no_key_anywhere(facts: &[ClientFacts], secret: &str) {
    let dump = format!("{facts:?}");
    assert!(!dump.contains(secret), "the key leaked: {dump}");
}

#[test]
fn article_settings_json_on_one_line() {
    let (f, sections) = run("paste", SETTINGS_ONELINE).take(|f| f.clients);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert_eq!(sections[0].kind, InputKind::ClientConfig);
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    assert_eq!(f.len(), 1);
    let c = &f[0];
    assert_eq!(c.format, "settings_json");
    assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
    assert_eq!(c.base_urls[0].name, "ANTHROPIC_BASE_URL");
    assert_eq!(c.base_urls[0].api, Some(Api::Anthropic));
    assert_eq!(c.model.as_ref().unwrap().value, "claude-sonnet-4-20250514");
    assert_eq!(c.timeout_ms.as_ref().unwrap().value, 60_000.0);
    let key = c.inline_key.as_ref().unwrap();
    assert!(key.text.contains("\"ANTHROPIC_AUTH_TOKEN\": \"***\""), "{}", key.text);
    no_key_anywhere(&f, "sk-");
}

#[test]
fn pretty_settings_json() {
    let (f, sections) = run("paste", SETTINGS_PRETTY).take(|f| f.clients);
    assert_eq!(f.len(), 1, "{sections:?}");
    let c = &f[0];
    assert_eq!(
        c.base_url.as_ref().unwrap().value,
        "https://gw.example.com/api?utm_source=blog&utm_medium=csdn"
    );
    assert_eq!(c.base_url.as_ref().unwrap().evidence.line, 4);
    assert_eq!(c.timeout_ms.as_ref().unwrap().value, 10_000.0);
    assert_eq!(c.model.as_ref().unwrap().value, "claude-sonnet-4-20250514");
    assert!(c.inline_key.is_some());
    no_key_anywhere(&f, "sk-ant-");
    // The opening `{` and `"env": {` lines carry no client word; the analyzer hands them to
    // the config section that follows, as it does a traceback's head.
    let kinds: Vec<_> = sections.iter().map(|s| (s.kind, s.lines[0])).collect();
    assert_eq!(kinds, [(InputKind::ClientConfig, 1)]);
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
}

#[test]
fn article_codex_toml_on_one_line() {
    let (f, sections) = run("paste", CODEX_ONELINE).take(|f| f.clients);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    let c = &f[0];
    assert_eq!(c.format, "codex_toml");
    assert_eq!(c.provider.as_ref().unwrap().value, "taotoken");
    assert_eq!(c.model.as_ref().unwrap().value, "gpt-4o");
    assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
    assert_eq!(c.base_urls[0].api, Some(Api::Openai));
    assert_eq!(c.key_env.as_ref().unwrap().value, "TAOTOKEN_API_KEY");
    assert_eq!(c.wire_api.as_ref().unwrap().value, "chat");
    assert_eq!(c.timeout_ms.as_ref().unwrap().value, 60_000.0);
    assert_eq!(c.max_retries.as_ref().unwrap().value, 2);
    assert!(c.inline_key.is_none());
}

#[test]
fn codex_toml_picks_the_active_provider() {
    let (f, sections) = run("paste", CODEX).take(|f| f.clients);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    assert_eq!(f.len(), 1);
    let c = &f[0];
    assert_eq!(c.provider.as_ref().unwrap().value, "gateway");
    assert_eq!(c.base_url.as_ref().unwrap().value, "http://vllm.internal:8000/v1");
    assert_eq!(c.base_urls.len(), 2);
    assert_eq!(c.max_retries.as_ref().unwrap().value, 6);
    assert_eq!(c.stream_max_retries.as_ref().unwrap().value, 10);
    assert_eq!(c.stream_idle_timeout_ms.as_ref().unwrap().value, 20_000.0);
    assert_eq!(c.wire_api.as_ref().unwrap().value, "responses");
    assert_eq!(c.key_env.as_ref().unwrap().value, "GATEWAY_API_KEY");
    // The MCP server's key sits in a table of its own: redacted, counted as a key in clear,
    // and its timeout is not the API's.
    assert!(c.timeout_ms.is_none(), "{:?}", c.timeout_ms);
    assert!(c.inline_key.is_some());
    no_key_anywhere(&f, "ghp_");
}

#[test]
fn article_exports_on_one_line_and_on_many() {
    let (f, sections) = run("paste", EXPORTS).take(|f| f.clients);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    assert_eq!(f.len(), 1);
    let c = &f[0];
    assert_eq!(c.format, "env");
    let names: Vec<_> = c.base_urls.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"]);
    assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
    assert_eq!(c.key_env.as_ref().unwrap().value, "TAOTOKEN_API_KEY");
    assert_eq!(c.timeout_ms.as_ref().unwrap().value, 10_000.0);
    assert_eq!(c.max_retries.as_ref().unwrap().value, 5);
    assert!(c.inline_key.as_ref().unwrap().text.contains("TAOTOKEN_API_KEY=\"***\""));
    no_key_anywhere(&f, "sk-");
}

#[test]
fn scanners() {
    let (a, d, peak) = scan_json(r#"{ "env": { "A": "x\"y", "N": 5, "B": true }, "l": ["a", 1] }"#);
    assert_eq!((d, peak), (0, 2));
    let keys: Vec<_> = a.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["A", "N", "B"]);
    assert_eq!(a[0].value, Value::Str("x\"y".into()));
    assert_eq!(a[1].value, Value::Num(5.0));
    let (items, junk) = scan_toml(r#"a = "x" [t.u] b = 60_000 c = [1, "]"] d = { e = 1 } # note"#);
    assert!(!junk);
    assert_eq!(items.len(), 6, "{items:?}");
    assert!(matches!(&items[4], TomlItem::Assign(a) if a.key == "d.e"));
    assert_eq!(items[1], TomlItem::Table("t.u".into()));
    assert!(matches!(&items[2], TomlItem::Assign(a) if a.value == Value::Num(60_000.0)));
    let (items, junk) = scan_toml("max_retries 设 2 而不是默认的 5");
    assert!(items.is_empty() && junk);
    assert!(scan_toml("[2026-11-29 10:00:00] Prefill batch").0.is_empty());
    assert_eq!(scan_toml("[[a]é = 1"), (Vec::new(), true));
    assert_eq!(scan_toml("[[a.b]] x = 1").0.len(), 2);
    let (a, junk) = scan_env(r#"export A="1" export B='2'; C=3 $env:D = "4""#);
    assert!(!junk);
    assert_eq!(a.len(), 4);
    assert_eq!(a[3].key, "D");
    assert_eq!(a[3].value, Value::Str("4".into()));
}

/// A key in clear is cut out of the evidence (the cutting is `safe::redact_spans`'s, tested
/// there with the patterns); a key read from a variable is named.
#[test]
fn redaction() {
    let (f, _) = run("paste", "api_key = 12345678\nbase_url = \"http://h/v1\"\n").take(|f| f.clients);
    assert!(f[0].inline_key.as_ref().unwrap().text.contains("api_key = ***"), "{f:?}");
    no_key_anywhere(&f, "12345678");
    assert_eq!(env_reference("${TAOTOKEN_API_KEY}"), Some("TAOTOKEN_API_KEY"));
    assert_eq!(env_reference("sk-1"), None);
}

#[test]
fn prose_and_garbage_are_issues_not_panics() {
    let text = "max_retries 设 2 而不是默认的 5\n{ \"env\": { \"API_TIMEOUT_MS\": \"abc\" \n\u{0}\"\\u12\n";
    let (f, sections) = run("paste", text).take(|f| f.clients);
    assert!(f.is_empty(), "{f:?}");
    assert!(!sections[0].issues.is_empty());
    for cut in 0..SETTINGS_ONELINE.len() {
        if SETTINGS_ONELINE.is_char_boundary(cut) {
            let (f, _) = run("paste", &SETTINGS_ONELINE[..cut]).take(|f| f.clients);
            no_key_anywhere(&f, "sk-你");
        }
    }
}

#[test]
fn many_blocks_are_bounded() {
    let line = "{\"env\":{\"ANTHROPIC_BASE_URL\":\"https://x\"}}\n";
    let (f, _) = run("paste", &line.repeat(MAX_CLIENTS * 4)).take(|f| f.clients);
    assert_eq!(f.len(), MAX_CLIENTS);
}

#[test]
fn engine_words_inside_a_config_stay_in_it() {
    let text = "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"http://sglang.svc:30000/v1\"\nmodel = \"vllm.served/llama\"\n";
    let (f, sections) = run("paste", text).take(|f| f.clients);
    assert_eq!(sections.len(), 1, "{sections:?}");
    assert_eq!(f[0].base_url.as_ref().unwrap().value, "http://sglang.svc:30000/v1");
}
