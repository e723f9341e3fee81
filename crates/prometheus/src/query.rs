//! The questions asked of Prometheus: the user's selector read and checked, the one series
//! matcher the rules need, the query strings of `/api/v1/series` and `/api/v1/query_range`, and
//! the link that opens an expression in the Prometheus graph UI.

use super::PromError;

/// Metric families the analyzer reads: the engines' `/metrics` (vLLM, SGLang, TGI,
/// TensorRT-LLM), Dynamo's frontend, the OpenTelemetry GenAI server metrics, LiteLLM's two
/// latency histograms the analyzer reads (not its spend and budget series), the GPUs
/// (DCGM exporter, or `triage-runner`'s DCGM-named gauges and `triage_*`), and the gateway's
/// proxy filter (`llm_stream_*`, `envoy_wasmcustom_llm_stream_*` on older Envoys). One regular
/// expression on `__name__`.
pub const FAMILIES: &str = "vllm:.+|sglang:.+|tgi_.+|trtllm_.+|dynamo_frontend_.+|gen_ai_server_.+|litellm_(request_total_latency_metric|llm_api_time_to_first_token_metric)_.+|DCGM_FI_.+|(envoy_)?(wasmcustom_)?llm_stream_.+|triage_.+";

/// Prometheus refuses a range query of more points than this per series.
/// Most points Prometheus returns for one series of a range query (its own limit).
pub const MAX_STEPS: u64 = 11_000;

/// One label matcher of a selector: `name op "value"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matcher {
    /// The label name.
    pub name: String,
    /// How the value is compared.
    pub op: MatchOp,
    /// The value or regex, unescaped.
    pub value: String,
}

/// A matcher's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `=~` (a fully anchored RE2 regex)
    Re,
    /// `!~`
    NotRe,
}

impl MatchOp {
    fn as_str(self) -> &'static str {
        match self {
            MatchOp::Eq => "=",
            MatchOp::Ne => "!=",
            MatchOp::Re => "=~",
            MatchOp::NotRe => "!~",
        }
    }
}

impl Matcher {
    /// `name="value"` with the value escaped as PromQL reads it.
    pub fn render(&self) -> String {
        format!("{}{}\"{}\"", self.name, self.op.as_str(), escape_value(&self.value))
    }
}

/// A PromQL string literal's inside: backslash, double quote and newline escaped.
pub fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn is_label_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Read `--selector`: `{namespace="llm", pod=~"vllm-.*"}` (braces optional, `"` or `'` quotes,
/// `=`, `!=`, `=~`, `!~`). A mistake is a [`PromError::BadSelector`] that says where.
pub fn parse_selector(text: &str) -> Result<Vec<Matcher>, PromError> {
    let bad = |why: &str| PromError::BadSelector(format!("{why} in {:?}", triage_base::safe::cut(text, 200)));
    let t = text.trim();
    let inner = match (t.strip_prefix('{'), t.ends_with('}')) {
        (Some(rest), true) => &rest[..rest.len() - 1],
        (None, false) => t,
        _ => return Err(bad("unbalanced braces")),
    };
    let chars: Vec<char> = inner.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect();
        if !is_label_name(&name) {
            return Err(bad("expected a label name"));
        }
        skip_ws(&mut i);
        let op = match (chars.get(i), chars.get(i + 1)) {
            (Some('='), Some('~')) => MatchOp::Re,
            (Some('!'), Some('=')) => MatchOp::Ne,
            (Some('!'), Some('~')) => MatchOp::NotRe,
            (Some('='), _) => MatchOp::Eq,
            _ => return Err(bad(&format!("expected =, !=, =~ or !~ after {name}"))),
        };
        i += if op == MatchOp::Eq { 1 } else { 2 };
        skip_ws(&mut i);
        let quote = match chars.get(i) {
            Some(q @ ('"' | '\'')) => *q,
            _ => return Err(bad(&format!("expected a quoted value after {name}{}", op.as_str()))),
        };
        i += 1;
        let mut value = String::new();
        loop {
            match chars.get(i) {
                None => return Err(bad("unterminated string")),
                Some('\\') => {
                    match chars.get(i + 1) {
                        Some('n') => value.push('\n'),
                        Some('t') => value.push('\t'),
                        Some(c) => value.push(*c),
                        None => return Err(bad("unterminated string")),
                    }
                    i += 2;
                }
                Some(c) if *c == quote => {
                    i += 1;
                    break;
                }
                Some(c) => {
                    value.push(*c);
                    i += 1;
                }
            }
        }
        out.push(Matcher { name, op, value });
        skip_ws(&mut i);
        match chars.get(i) {
            Some(',') => i += 1,
            None => break,
            Some(_) => return Err(bad("expected , between matchers")),
        }
    }
    Ok(out)
}

/// The series matcher: every family the rules know, narrowed by the user's matchers and, when
/// the series had to be cut, by the replicas kept (`instance=~"^(a|b)$"`-style extra matchers).
pub fn series_matcher(user: &[Matcher]) -> String {
    let mut parts = vec![format!("__name__=~\"{}\"", escape_value(FAMILIES))];
    parts.extend(user.iter().map(Matcher::render));
    format!("{{{}}}", parts.join(","))
}

/// Series every Prometheus target has that say when it started and whether it answered; asked
/// only for the engines' own instances ([`liveness_matcher`]), so the rules see a restart
/// inside the window (`cold-start`).
pub const LIVENESS: &str = "up|process_start_time_seconds";

/// A literal inside an RE2 alternation: the metacharacters escaped.
pub fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `{__name__=~"up|process_start_time_seconds",<user's matchers>,instance=~"a|b"}` for these
/// instances; `None` without any.
pub fn liveness_matcher(user: &[Matcher], instances: &[&str]) -> Option<String> {
    if instances.is_empty() {
        return None;
    }
    let alternatives: Vec<String> = instances.iter().map(|i| regex_literal(i)).collect();
    let mut parts = vec![format!("__name__=~\"{LIVENESS}\"")];
    parts.extend(user.iter().map(Matcher::render));
    parts.push(format!("instance=~\"{}\"", escape_value(&alternatives.join("|"))));
    Some(format!("{{{}}}", parts.join(",")))
}

/// Is this one of the serving processes' own families: an engine's (`vllm:`, `sglang:`, `tgi_`,
/// `trtllm_`), a serving frontend's (`dynamo_frontend_`, LiteLLM's `litellm_`) or the
/// OpenTelemetry GenAI server metrics as Prometheus names them (`gen_ai_server_`)?
pub fn is_engine_metric(name: &str) -> bool {
    ["vllm:", "sglang:", "tgi_", "trtllm_", "dynamo_frontend_", "gen_ai_server_", "litellm_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// One series as a selector: `name{a="b",…}` (its exact labels), for citations and links.
pub fn series_selector(labels: &std::collections::BTreeMap<String, String>) -> String {
    let name = labels.get("__name__").map_or("", String::as_str);
    let rest: Vec<String> = labels
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| format!("{k}=\"{}\"", escape_value(v)))
        .collect();
    if name.is_empty() || !rest.is_empty() {
        format!("{name}{{{}}}", rest.join(","))
    } else {
        name.to_owned()
    }
}

/// Percent-encode a query-string component (RFC 3986 unreserved characters kept).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Seconds as Prometheus writes them in query strings: `1764460800`, `1764460800.5`.
pub fn secs(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.3}") }
}

/// The window asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Unix seconds.
    pub start_s: f64,
    /// Unix seconds.
    pub end_s: f64,
    /// Seconds between points.
    pub step_s: f64,
}

impl Window {
    /// Check the window and, when it holds more than [`MAX_STEPS`] steps or more than
    /// `max_points / series` of them, widen the step to fit. Returns the window used and, when
    /// the step changed, a note saying so.
    pub fn fitted(self, series: usize, max_points: u64) -> Result<(Window, Option<String>), PromError> {
        if !(self.start_s.is_finite() && self.end_s.is_finite() && self.step_s.is_finite()) {
            return Err(PromError::BadWindow("the window's bounds must be numbers".into()));
        }
        if self.end_s <= self.start_s {
            return Err(PromError::BadWindow(
                "the window ends before it starts (--from must be before --to)".into(),
            ));
        }
        if self.step_s <= 0.0 {
            return Err(PromError::BadWindow("--step must be positive".into()));
        }
        let per_series = (max_points / series.max(1) as u64).clamp(2, MAX_STEPS);
        let steps = ((self.end_s - self.start_s) / self.step_s).floor() as u64 + 1;
        if steps <= per_series {
            return Ok((self, None));
        }
        let step_s = ((self.end_s - self.start_s) / (per_series - 1) as f64).ceil();
        let note = format!(
            "step widened from {} s to {step_s} s: {steps} points per series × {} series exceeds the bound",
            secs(self.step_s),
            series.max(1)
        );
        Ok((Window { step_s, ..self }, Some(note)))
    }

    /// Points one series has over the window at this step.
    pub fn points_per_series(&self) -> u64 {
        ((self.end_s - self.start_s) / self.step_s).floor() as u64 + 1
    }
}

/// Path and query of `/api/v1/series` for `matcher` over the window.
pub fn series_path(matcher: &str, w: &Window) -> String {
    format!("/api/v1/series?match%5B%5D={}&start={}&end={}", encode(matcher), secs(w.start_s), secs(w.end_s))
}

/// Path and query of `/api/v1/query_range`.
pub fn range_path(expr: &str, w: &Window) -> String {
    format!(
        "/api/v1/query_range?query={}&start={}&end={}&step={}",
        encode(expr),
        secs(w.start_s),
        secs(w.end_s),
        secs(w.step_s)
    )
}

/// `2026-11-29T10:00:00Z` (UTC, seconds; a fraction when there is one).
pub fn iso(unix_s: f64) -> String {
    let (date, time) = civil(unix_s);
    let frac = unix_s - unix_s.floor();
    if frac.abs() < 5e-4 {
        format!("{date}T{time}Z")
    } else {
        format!("{date}T{time}.{:03}Z", (frac * 1000.0).round() as u32 % 1000)
    }
}

/// (`YYYY-MM-DD`, `HH:MM:SS`) of a unix time, UTC.
fn civil(unix_s: f64) -> (String, String) {
    let t = unix_s.floor() as i64;
    let (days, rem) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (y, m, d) = triage_base::time::civil_from_days(days);
    (format!("{y:04}-{m:02}-{d:02}"), format!("{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60))
}

/// A duration as the graph UI's range field takes it: `30m`, `2h`, `90s`.
fn ui_duration(secs: f64) -> String {
    let s = secs.round().max(1.0) as u64;
    if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// The link that opens `expr` over the window in Prometheus's graph UI (2.x:
/// `/graph?g0.expr=…&g0.tab=0&g0.range_input=30m&g0.end_input=2026-11-29 10:30&g0.step_input=15`).
/// Both UIs of 2.x read these: the classic one (Debian's 2.42 ships it) parses `end_input` as
/// `YYYY-MM-DD HH:mm` in UTC, `range_input` as `^[0-9]+[ywdhms]+$` and `step_input` as an
/// integer, so the end is rounded up to the minute (the range widened to keep the start) and the
/// step up to a whole second. `base` is the server's URL without credentials.
pub fn graph_url(base: &str, expr: &str, w: &Window) -> String {
    let end = (w.end_s / 60.0).ceil() * 60.0;
    let (date, time) = civil(end);
    format!(
        "{}/graph?g0.expr={}&g0.tab=0&g0.range_input={}&g0.end_input={}&g0.step_input={}",
        base.trim_end_matches('/'),
        encode(expr),
        ui_duration(end - w.start_s),
        encode(&format!("{date} {}", &time[..5])),
        w.step_s.ceil().max(1.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_read_and_rendered_back() {
        let m = parse_selector(r#"{namespace="llm", pod=~'vllm-.*',job!="x\"y"}"#).unwrap();
        assert_eq!(
            m.iter().map(Matcher::render).collect::<Vec<_>>(),
            vec![r#"namespace="llm""#, r#"pod=~"vllm-.*""#, r#"job!="x\"y""#]
        );
        assert_eq!(parse_selector("").unwrap(), vec![]);
        assert_eq!(parse_selector("{}").unwrap(), vec![]);
        assert_eq!(parse_selector(r#"a!~"b""#).unwrap()[0].op, MatchOp::NotRe);
        for bad in
            ["{a=b}", "{a=\"b\"", "a=\"b\"}", "{1a=\"b\"}", "{a=\"b\" c=\"d\"}", "{a~\"b\"}", "{a=\"b}"]
        {
            let e = parse_selector(bad).unwrap_err();
            assert!(matches!(e, PromError::BadSelector(_)), "{bad}: {e:?}");
        }
    }

    #[test]
    fn the_matcher_names_the_families_and_the_users_labels() {
        let m = series_matcher(&parse_selector(r#"{namespace="llm"}"#).unwrap());
        assert_eq!(m, format!(r#"{{__name__=~"{FAMILIES}",namespace="llm"}}"#));
        let w = Window { start_s: 100.0, end_s: 160.0, step_s: 15.0 };
        assert_eq!(
            series_path("{a=\"b\"}", &w),
            "/api/v1/series?match%5B%5D=%7Ba%3D%22b%22%7D&start=100&end=160"
        );
        assert_eq!(range_path("up", &w), "/api/v1/query_range?query=up&start=100&end=160&step=15");
    }

    #[test]
    fn liveness_is_asked_for_the_engines_instances_only() {
        assert_eq!(regex_literal("10.0.0.1:8000"), "10\\.0\\.0\\.1:8000");
        let user = parse_selector(r#"{namespace="llm"}"#).unwrap();
        assert_eq!(
            liveness_matcher(&user, &["10.0.0.1:8000", "b"]).unwrap(),
            r#"{__name__=~"up|process_start_time_seconds",namespace="llm",instance=~"10\\.0\\.0\\.1:8000|b"}"#
        );
        assert_eq!(liveness_matcher(&user, &[]), None);
        assert!(is_engine_metric("vllm:num_requests_waiting") && !is_engine_metric("DCGM_FI_DEV_SM_CLOCK"));
    }

    #[test]
    fn windows_are_checked_and_fitted() {
        let w = Window { start_s: 0.0, end_s: 1800.0, step_s: 15.0 };
        assert_eq!(w.points_per_series(), 121);
        assert_eq!(w.fitted(10, 1_000_000).unwrap(), (w, None));
        let (wide, note) = w.fitted(1000, 50_000).unwrap();
        assert_eq!(wide.step_s, 37.0);
        assert!(wide.points_per_series() <= 50, "{wide:?}");
        assert!(note.unwrap().contains("step widened"));
        let day = Window { start_s: 0.0, end_s: 86_400.0 * 7.0, step_s: 1.0 };
        assert!(day.fitted(1, u64::MAX).unwrap().0.points_per_series() <= MAX_STEPS);
        assert!(Window { start_s: 5.0, end_s: 5.0, step_s: 1.0 }.fitted(1, 10).is_err());
        assert!(Window { start_s: 0.0, end_s: 5.0, step_s: 0.0 }.fitted(1, 10).is_err());
    }

    #[test]
    fn times_and_links() {
        assert_eq!(iso(1_764_460_800.0), "2025-11-30T00:00:00Z");
        assert_eq!(iso(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(951_825_600.25), "2000-02-29T12:00:00.250Z");
        assert_eq!(triage_base::time::parse_iso(&iso(1_800_000_123.0)), Some(1_800_000_123.0));
        let w = Window { start_s: 1_764_460_800.0, end_s: 1_764_462_600.0, step_s: 15.0 };
        assert_eq!(
            graph_url("http://prom:9090/", "rate(x_total[5m])", &w),
            "http://prom:9090/graph?g0.expr=rate%28x_total%5B5m%5D%29&g0.tab=0&g0.range_input=30m&g0.end_input=2025-11-30%2000%3A30&g0.step_input=15"
        );
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("__name__".to_owned(), "vllm:num_requests_waiting".to_owned());
        labels.insert("instance".to_owned(), "a\"b".to_owned());
        assert_eq!(series_selector(&labels), r#"vllm:num_requests_waiting{instance="a\"b"}"#);
    }
}
