//! The plugin configuration: JSON in, validated [`Settings`] out, with messages that say which
//! field is wrong and what would be right.
//!
//! An empty configuration (zero bytes, `{}` or `null`) means every default. Unknown fields are
//! refused, so a misspelt `stall_treshold_ms` is reported instead of silently ignored. See
//! `docs/proxy-plugin.md` for the reference table.

use crate::route::{Pattern, PatternError};
use serde::Deserialize;
use std::fmt;

/// The root id the deployment files use (`root_id` in Envoy, Istio's `pluginName`).
pub const ROOT_ID: &str = "triage_stream_timer";
/// The plugin name where a host names plugins with dashes (APISIX, the Istio resource name).
pub const PLUGIN_NAME: &str = "triage-stream-timer";
/// The built filter's file name (`<target>/plugins/`; Kong names a filter by its file name).
pub const WASM_FILE: &str = "triage_stream_timer.wasm";

/// How labels are written into metric names (proxy-wasm has no labels of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelStyle {
    /// `name_route=.=chat;.;` — Istio's convention; Envoy's `stats_tags` regexes
    /// (`(_route=\.=(.+?);\.;)`) turn each into a tag and strip it from the name.
    Envoy,
    /// `name.route.chat` — plain hierarchical names for hosts without tag extraction.
    Dotted,
}

/// When the filter writes a one-line summary of every timed stream to the proxy's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSummary {
    Never,
    Always,
    /// Only while the host has no metrics (APISIX): the log is then the only output besides
    /// properties.
    WithoutMetrics,
}

/// The optional stream guard: reset a stream that runs too long or goes quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardSettings {
    /// Reset a request on a matched route that has been open longer than this.
    pub max_duration_ns: Option<u64>,
    /// Reset a stream whose last token (or first byte, before any token) is older than this.
    pub max_idle_ns: Option<u64>,
    /// How often the root context checks open streams (`proxy_set_tick_period_milliseconds`).
    pub tick_ms: u32,
}

/// One named group of path patterns; the name becomes the `route` label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub patterns: Vec<Pattern>,
}

/// A validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub routes: Vec<Route>,
    /// Time a matched request only when the response is `text/event-stream`.
    pub require_event_stream: bool,
    /// A gap between two token events longer than this is a stall.
    pub stall_threshold_ns: u64,
    pub label_style: LabelStyle,
    /// Prefix of every metric name.
    pub metric_prefix: String,
    /// Write the per-request figures as properties (Envoy: filter state `wasm.<prefix><name>`).
    pub properties: bool,
    pub property_prefix: String,
    pub log_summary: LogSummary,
    /// The SSE parser's bounds (see `triage_core::sse::SseLimits`).
    pub max_line_bytes: usize,
    pub max_event_bytes: usize,
    pub guard: Option<GuardSettings>,
    /// Add a sampled W3C `traceparent` (fresh random trace id) to a matched request that carries
    /// none. Off by default: the filter otherwise only observes, and a sampled `traceparent` on
    /// every request makes a tracing upstream record and export a trace for each. The trace id
    /// of a request's own `traceparent` is reported either way.
    pub add_traceparent: bool,
}

/// Defaults: the four OpenAI/Anthropic streaming endpoints under any prefix.
pub const DEFAULT_ROUTES: [(&str, &str); 4] = [
    ("chat", "*/chat/completions"),
    ("completions", "*/completions"),
    ("responses", "*/responses"),
    ("messages", "*/messages"),
];
pub const DEFAULT_STALL_THRESHOLD_MS: u64 = 100;
pub const DEFAULT_METRIC_PREFIX: &str = "llm_stream_";
pub const DEFAULT_PROPERTY_PREFIX: &str = "llm.";
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 << 10;
pub const DEFAULT_MAX_EVENT_BYTES: usize = 32 << 10;
const MAX_ROUTES: usize = 32;
const MAX_PATTERNS: usize = 16;
const MAX_NAME: usize = 48;
const MS: u64 = 1_000_000;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            routes: DEFAULT_ROUTES
                .iter()
                .map(|(name, p)| Route {
                    name: (*name).to_owned(),
                    patterns: vec![Pattern::parse(p).unwrap_or_else(|_| Pattern::any())],
                })
                .collect(),
            require_event_stream: true,
            stall_threshold_ns: DEFAULT_STALL_THRESHOLD_MS * MS,
            label_style: LabelStyle::Envoy,
            metric_prefix: DEFAULT_METRIC_PREFIX.to_owned(),
            properties: true,
            property_prefix: DEFAULT_PROPERTY_PREFIX.to_owned(),
            log_summary: LogSummary::WithoutMetrics,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            guard: None,
            add_traceparent: false,
        }
    }
}

/// Why a configuration was refused. The message names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: String,
    paths: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuard {
    #[serde(default)]
    max_duration_ms: Option<u64>,
    #[serde(default)]
    max_idle_ms: Option<u64>,
    #[serde(default)]
    tick_ms: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    routes: Option<Vec<RawRoute>>,
    #[serde(default)]
    require_event_stream: Option<bool>,
    #[serde(default)]
    stall_threshold_ms: Option<u64>,
    #[serde(default)]
    label_style: Option<String>,
    #[serde(default)]
    metric_prefix: Option<String>,
    #[serde(default)]
    properties: Option<bool>,
    #[serde(default)]
    property_prefix: Option<String>,
    #[serde(default)]
    log_summary: Option<String>,
    #[serde(default)]
    max_line_bytes: Option<usize>,
    #[serde(default)]
    max_event_bytes: Option<usize>,
    #[serde(default)]
    guard: Option<RawGuard>,
    #[serde(default)]
    add_traceparent: Option<bool>,
}

fn err(msg: impl Into<String>) -> ConfigError {
    ConfigError(msg.into())
}

fn check_name(field: &str, s: &str, extra: &[u8], allow_empty: bool) -> Result<(), ConfigError> {
    if s.is_empty() && !allow_empty {
        return Err(err(format!("{field}: must not be empty")));
    }
    if s.len() > MAX_NAME {
        return Err(err(format!("{field}: at most {MAX_NAME} bytes (got {})", s.len())));
    }
    if let Some(c) = s.bytes().find(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || extra.contains(b))) {
        let allowed = String::from_utf8_lossy(extra);
        return Err(err(format!(
            "{field}: {s:?} holds {:?}; use letters, digits, '_'{}",
            char::from(c),
            if extra.is_empty() { String::new() } else { format!(" and {allowed:?}") }
        )));
    }
    Ok(())
}

fn range(field: &str, v: u64, lo: u64, hi: u64) -> Result<u64, ConfigError> {
    if v < lo || v > hi {
        Err(err(format!("{field}: must be between {lo} and {hi} (got {v})")))
    } else {
        Ok(v)
    }
}

/// Parse and validate the plugin configuration bytes.
pub fn parse(bytes: &[u8]) -> Result<Settings, ConfigError> {
    let text = std::str::from_utf8(bytes).map_err(|e| err(format!("configuration is not UTF-8: {e}")))?;
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Settings::default());
    }
    let raw: RawConfig =
        serde_json::from_str(trimmed).map_err(|e| err(format!("configuration JSON: {e}")))?;
    let mut s = Settings::default();
    if let Some(routes) = raw.routes {
        if routes.is_empty() {
            return Err(err("routes: give at least one route, or leave the field out for the defaults"));
        }
        if routes.len() > MAX_ROUTES {
            return Err(err(format!("routes: at most {MAX_ROUTES} (got {})", routes.len())));
        }
        s.routes.clear();
        for (i, r) in routes.into_iter().enumerate() {
            check_name(&format!("routes[{i}].name"), &r.name, b"-", false)?;
            if s.routes.iter().any(|o| o.name == r.name) {
                return Err(err(format!("routes[{i}].name: {:?} is used twice", r.name)));
            }
            if r.paths.is_empty() || r.paths.len() > MAX_PATTERNS {
                return Err(err(format!(
                    "routes[{i}].paths: give 1 to {MAX_PATTERNS} patterns (got {})",
                    r.paths.len()
                )));
            }
            let mut patterns = Vec::with_capacity(r.paths.len());
            for (j, p) in r.paths.iter().enumerate() {
                patterns
                    .push(Pattern::parse(p).map_err(|e: PatternError| {
                        err(format!("routes[{i}].paths[{j}]: {e} (got {p:?})"))
                    })?);
            }
            s.routes.push(Route { name: r.name, patterns });
        }
    }
    if let Some(v) = raw.require_event_stream {
        s.require_event_stream = v;
    }
    if let Some(ms) = raw.stall_threshold_ms {
        s.stall_threshold_ns = range("stall_threshold_ms", ms, 1, 3_600_000)? * MS;
    }
    if let Some(style) = raw.label_style {
        s.label_style = match style.as_str() {
            "envoy" => LabelStyle::Envoy,
            "dotted" => LabelStyle::Dotted,
            other => return Err(err(format!("label_style: {other:?} is not one of \"envoy\", \"dotted\""))),
        };
    }
    if let Some(p) = raw.metric_prefix {
        check_name("metric_prefix", &p, b"", true)?;
        s.metric_prefix = p;
    }
    if let Some(v) = raw.properties {
        s.properties = v;
    }
    if let Some(v) = raw.add_traceparent {
        s.add_traceparent = v;
    }
    if let Some(p) = raw.property_prefix {
        check_name("property_prefix", &p, b".-", true)?;
        s.property_prefix = p;
    }
    if let Some(l) = raw.log_summary {
        s.log_summary = match l.as_str() {
            "never" => LogSummary::Never,
            "always" => LogSummary::Always,
            "without_metrics" => LogSummary::WithoutMetrics,
            other => {
                return Err(err(format!(
                    "log_summary: {other:?} is not one of \"never\", \"always\", \"without_metrics\""
                )));
            }
        };
    }
    if let Some(v) = raw.max_line_bytes {
        s.max_line_bytes = range("max_line_bytes", v as u64, 256, 1 << 20)? as usize;
    }
    if let Some(v) = raw.max_event_bytes {
        s.max_event_bytes = range("max_event_bytes", v as u64, 1 << 10, 4 << 20)? as usize;
    }
    if let Some(g) = raw.guard {
        let d = g.max_duration_ms.map(|v| range("guard.max_duration_ms", v, 1, 86_400_000)).transpose()?;
        let i = g.max_idle_ms.map(|v| range("guard.max_idle_ms", v, 1, 86_400_000)).transpose()?;
        let smallest = match (d, i) {
            (None, None) => {
                return Err(err(
                    "guard: set max_duration_ms and/or max_idle_ms, or leave the guard out (it is off by default)",
                ));
            }
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        let tick = match g.tick_ms {
            Some(t) => range("guard.tick_ms", t, 1, 60_000)?,
            None => (smallest / 10).clamp(10, 1000),
        };
        s.guard = Some(GuardSettings {
            max_duration_ns: d.map(|v| v * MS),
            max_idle_ns: i.map(|v| v * MS),
            tick_ms: tick as u32,
        });
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_defaults() {
        for input in ["", "  ", "null", "{}"] {
            assert_eq!(parse(input.as_bytes()), Ok(Settings::default()), "{input:?}");
        }
        let s = Settings::default();
        assert_eq!(s.routes.len(), 4);
        assert!(s.guard.is_none());
        assert_eq!(s.stall_threshold_ns, 100 * MS);
    }

    #[test]
    fn full_configuration() {
        let s = parse(
            br#"{"routes":[{"name":"llama-70b","paths":["/llama/*","*/chat/completions"]}],
                "require_event_stream":false,"stall_threshold_ms":250,"label_style":"dotted",
                "metric_prefix":"gw_","properties":false,"property_prefix":"t.","log_summary":"always",
                "max_line_bytes":4096,"max_event_bytes":65536,"add_traceparent":true,
                "guard":{"max_duration_ms":600000,"max_idle_ms":30000}}"#,
        )
        .unwrap();
        assert_eq!(s.routes[0].name, "llama-70b");
        assert_eq!(s.routes[0].patterns.len(), 2);
        assert!(!s.require_event_stream);
        assert_eq!(s.stall_threshold_ns, 250 * MS);
        assert_eq!(s.label_style, LabelStyle::Dotted);
        assert_eq!(s.log_summary, LogSummary::Always);
        assert!(s.add_traceparent && !Settings::default().add_traceparent);
        assert_eq!(
            s.guard,
            Some(GuardSettings {
                max_duration_ns: Some(600_000 * MS),
                max_idle_ns: Some(30_000 * MS),
                tick_ms: 1000
            })
        );
        let g = parse(br#"{"guard":{"max_idle_ms":200}}"#).unwrap().guard.unwrap();
        assert_eq!((g.max_duration_ns, g.tick_ms), (None, 20));
    }

    #[test]
    fn clear_messages() {
        let cases: &[(&str, &str)] = &[
            (r#"{"stall_treshold_ms":5}"#, "unknown field `stall_treshold_ms`"),
            (r#"{"routes":[]}"#, "routes: give at least one route"),
            (r#"{"routes":[{"name":"a b","paths":["/x"]}]}"#, "routes[0].name: \"a b\" holds ' '"),
            (r#"{"routes":[{"name":"a","paths":["x"]}]}"#, "routes[0].paths[0]: "),
            (r#"{"routes":[{"name":"a","paths":["/x"]},{"name":"a","paths":["/y"]}]}"#, "used twice"),
            (r#"{"label_style":"prom"}"#, "label_style: \"prom\" is not one of"),
            (r#"{"stall_threshold_ms":0}"#, "stall_threshold_ms: must be between 1 and"),
            (r#"{"guard":{}}"#, "guard: set max_duration_ms"),
            (r#"{"guard":{"max_idle_ms":-1}}"#, "configuration JSON: invalid value"),
            (r#"{"max_event_bytes":10}"#, "max_event_bytes: must be between"),
            (r#"{"metric_prefix":"a.b"}"#, "metric_prefix: \"a.b\" holds '.'"),
            ("{", "configuration JSON: EOF"),
            ("[1]", "configuration JSON: invalid type"),
        ];
        for (input, want) in cases {
            let e = parse(input.as_bytes()).unwrap_err();
            assert!(e.0.contains(want), "{input}: {e}");
        }
        assert!(parse(b"\xff").unwrap_err().0.contains("not UTF-8"));
    }
}
