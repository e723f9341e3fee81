//! The deployment files under `plugins/stream-timer/deploy/`, checked as data: they parse, the
//! fields are there, names and root ids match the filter's, the embedded configuration passes
//! the filter's own validation, Envoy's tag regexes turn every metric name the filter defines
//! into the right tags, and the docs quote the same access-log line.

use regex::Regex;
use serde_json::{Map, Value};
use std::path::PathBuf;
use triage_stream_timer::config::{PLUGIN_NAME, ROOT_ID, WASM_FILE};
use triage_stream_timer::metrics::{MetricKind, all_names};
use triage_stream_timer::report::PROPERTY_NAMES;
use yaml_rust2::{Yaml, YamlLoader};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn docs(name: &str) -> Vec<Value> {
    let path = root().join("plugins/stream-timer/deploy").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}")).iter().map(json).collect()
}

/// YAML as JSON values (what Istio does with `pluginConfig`, and easier to walk).
fn json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(s) => s.parse::<f64>().map_or(Value::Null, Value::from),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.clone()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| (k.as_str().map_or_else(|| format!("{k:?}"), str::to_owned), json(v)))
                .collect::<Map<_, _>>(),
        ),
        _ => Value::Null,
    }
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for seg in path.split('/') {
        cur = match seg.parse::<usize>() {
            Ok(i) => &cur[i],
            Err(_) => &cur[seg],
        };
        assert!(!cur.is_null(), "missing {path} (at {seg})");
    }
    cur
}

fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).as_str().unwrap_or_else(|| panic!("{path} is not a string"))
}

fn valid_config(text: &str, what: &str) -> triage_stream_timer::Settings {
    triage_stream_timer::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn envoy_wasm_filter(envoy: &Value) -> &Value {
    let hcm = at(envoy, "static_resources/listeners/0/filter_chains/0/filters/0/typed_config");
    let filters = at(hcm, "http_filters").as_array().unwrap();
    let wasm = filters.iter().find(|f| f["name"] == "envoy.filters.http.wasm").expect("the wasm filter");
    assert_eq!(filters.last().unwrap()["name"], "envoy.filters.http.router", "router last");
    at(wasm, "typed_config/config")
}

fn envoy_access_log_line(envoy: &Value) -> String {
    let hcm = at(envoy, "static_resources/listeners/0/filter_chains/0/filters/0/typed_config");
    str_at(hcm, "access_log/0/typed_config/log_format/text_format_source/inline_string").to_owned()
}

#[test]
fn envoy_yaml() {
    let d = docs("envoy.yaml");
    assert_eq!(d.len(), 1);
    let envoy = &d[0];
    let cfg = envoy_wasm_filter(envoy);
    assert_eq!(str_at(cfg, "root_id"), ROOT_ID);
    assert_eq!(str_at(cfg, "name"), ROOT_ID);
    assert_eq!(at(cfg, "fail_open"), &Value::Bool(true));
    assert!(str_at(cfg, "vm_config/code/local/filename").ends_with(&format!("/{WASM_FILE}")));
    assert_eq!(WASM_FILE, triage_plugin_build::STREAM_TIMER.file);
    assert_eq!(str_at(cfg, "configuration/@type"), "type.googleapis.com/google.protobuf.StringValue");
    let settings = valid_config(str_at(cfg, "configuration/value"), "envoy.yaml configuration");
    assert!(settings.guard.is_some());

    // The access-log line reads the four timestamps and only properties the filter writes.
    let line = envoy_access_log_line(envoy);
    for ts in ["t_enqueue_us", "t_first_token_us", "t_last_token_us", "t_finish_us"] {
        assert!(line.contains(&format!("%FILTER_STATE(wasm.llm.{ts}:PLAIN)%")), "{ts}");
    }
    let re = Regex::new(r"%FILTER_STATE\(wasm\.([a-z_.]+):PLAIN\)%").unwrap();
    let mut n = 0;
    for c in re.captures_iter(&line) {
        let name = c[1].strip_prefix(&settings.property_prefix).expect("the configured prefix");
        assert!(PROPERTY_NAMES.contains(&name), "{name} is not a property the filter writes");
        n += 1;
    }
    assert!(n >= 10);

    // Tag extraction as Envoy does it: the first group is removed, the second is the value.
    let tags: Vec<(String, Regex)> = at(envoy, "stats_config/stats_tags")
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (str_at(t, "tag_name").to_owned(), Regex::new(str_at(t, "regex")).unwrap()))
        .collect();
    let buckets =
        Regex::new(str_at(envoy, "stats_config/histogram_bucket_settings/0/match/safe_regex/regex")).unwrap();
    let bucket_list = at(envoy, "stats_config/histogram_bucket_settings/0/buckets").as_array().unwrap();
    assert!(bucket_list.windows(2).all(|w| w[0].as_f64() < w[1].as_f64()));
    let plain = Regex::new(r"^wasmcustom\.llm_stream_[a-z0-9_]+$").unwrap();
    for (kind, name) in all_names(&settings) {
        let full = format!("wasmcustom.{name}");
        assert_eq!(buckets.is_match(&full), kind == MetricKind::Histogram, "{full}");
        let mut stripped = full.clone();
        let mut found = Vec::new();
        for (tag, re) in &tags {
            if let Some(c) = re.captures(&stripped.clone()) {
                found.push((tag.clone(), c[2].to_owned()));
                stripped = stripped.replacen(&c[1], "", 1);
            }
        }
        assert!(!stripped.contains('='), "{full} → {stripped}");
        assert!(plain.is_match(&stripped), "{stripped}");
        assert_eq!(found[0].0, "route", "{full}");
        assert!(settings.routes.iter().any(|r| r.name == found[0].1));
    }
}

#[test]
fn istio_wasmplugin_yaml() {
    let d = docs("istio-wasmplugin.yaml");
    let w = &d[0];
    assert_eq!(str_at(w, "apiVersion"), "extensions.istio.io/v1alpha1");
    assert_eq!(str_at(w, "kind"), "WasmPlugin");
    assert_eq!(str_at(w, "metadata/name"), PLUGIN_NAME);
    assert_eq!(str_at(w, "spec/pluginName"), ROOT_ID);
    assert_eq!(str_at(w, "spec/failStrategy"), "FAIL_OPEN");
    assert_eq!(str_at(w, "spec/type"), "HTTP");
    assert!(str_at(w, "spec/url").starts_with("oci://"));
    assert!(at(w, "spec/selector/matchLabels").is_object());
    // Istio hands `pluginConfig` to the filter as JSON.
    let cfg = serde_json::to_string(at(w, "spec/pluginConfig")).unwrap();
    let s = valid_config(&cfg, "istio pluginConfig");
    assert_eq!(s.routes.len(), 2);
}

#[test]
fn apisix_yaml() {
    let d = docs("apisix.yaml");
    assert_eq!(d.len(), 2, "config.yaml snippet, then the route");
    let plugin = at(&d[0], "wasm/plugins/0");
    assert_eq!(str_at(plugin, "name"), PLUGIN_NAME);
    assert!(str_at(plugin, "file").ends_with(&format!("/{WASM_FILE}")));
    assert!(at(plugin, "priority").is_i64());
    let conf = str_at(&d[1], &format!("routes/0/plugins/{PLUGIN_NAME}/conf"));
    let s = valid_config(conf, "apisix conf");
    assert_eq!(s.log_summary, triage_stream_timer::config::LogSummary::WithoutMetrics);
}

#[test]
fn kong_yaml() {
    let d = docs("kong.yaml");
    let k = &d[0];
    assert_eq!(str_at(k, "_format_version"), "3.0");
    let f = at(k, "services/0/filter_chains/0/filters/0");
    assert_eq!(format!("{}.wasm", str_at(f, "name")), WASM_FILE, "Kong names a filter by its file");
    assert_eq!(at(f, "enabled"), &Value::Bool(true));
    valid_config(str_at(f, "config"), "kong config");
}

#[test]
fn the_docs_quote_the_deployed_names() {
    let doc = std::fs::read_to_string(root().join("docs/proxy-plugin.md")).unwrap();
    let envoy = &docs("envoy.yaml")[0];
    // The access-log line, exactly as deployed.
    let line = envoy_access_log_line(envoy);
    assert!(
        doc.contains(line.trim_end_matches('\n')),
        "docs/proxy-plugin.md must quote envoy.yaml's access-log line"
    );
    for (_, name) in all_names(&triage_stream_timer::Settings::default()) {
        let base = name.split("_route=").next().unwrap();
        assert!(doc.contains(base), "{base} is not documented");
    }
    for p in PROPERTY_NAMES {
        assert!(doc.contains(&format!("`{p}`")), "property {p} is not documented");
    }
    for tag in ["(_route=\\.=(.+?);\\.;)", "(_reason=\\.=(.+?);\\.;)", "(_type=\\.=(.+?);\\.;)"] {
        assert!(doc.contains(tag), "{tag}");
    }
}
