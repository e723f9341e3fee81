//! Metric names and the table of metric ids, with the "no metrics on this host" switch.
//!
//! Names follow vLLM's Prometheus names and the OTel GenAI semantic conventions as closely as
//! proxy metric naming allows (no `:`; units in the name because proxy-wasm values are bare
//! integers; microseconds because Envoy histograms hold integers):
//!
//! | name (after the prefix, default `llm_stream_`) | kind | vLLM / OTel analogue |
//! | --- | --- | --- |
//! | `time_to_first_token_us` | histogram | `vllm:time_to_first_token_seconds`, `gen_ai.server.time_to_first_token` |
//! | `time_to_first_answer_token_us` | histogram | aiperf TTFO (first non-reasoning token) |
//! | `inter_token_latency_us` | histogram | `vllm:inter_token_latency_seconds` (here: between token-carrying events) |
//! | `time_per_output_token_us` | histogram | `vllm:time_per_output_token_seconds` per request, `gen_ai.server.time_per_output_token` |
//! | `e2e_request_latency_us` | histogram | `vllm:e2e_request_latency_seconds`, `gen_ai.server.request.duration` |
//! | `requests_total` | counter | `vllm:request_success_total` + failures |
//! | `errors_total{reason}` | counter | — (`http_status`, `stream_error`, `incomplete`, `reset`, `guard`) |
//! | `stalls_total` | counter | — (gaps above `stall_threshold_ms`) |
//! | `tokens_total{type}` | counter | `vllm:prompt_tokens_total` / `generation_tokens_total`, `gen_ai.client.token.usage{gen_ai.token.type}` (`input`, `output`, `reasoning`) |
//! | `guard_resets_total{reason}` | counter | — (`max_duration`, `max_idle`) |
//! | `active_streams` | gauge | `vllm:num_requests_running` as the gateway sees it |
//!
//! Every metric carries the `route` label. proxy-wasm has no labels: [`LabelStyle::Envoy`]
//! writes `name_route=.=chat;.;_reason=.=reset;.;` (Istio's convention, turned into tags by
//! Envoy `stats_tags` regexes), [`LabelStyle::Dotted`] writes `name.route.chat.reason.reset`.
//!
//! Any status other than OK from `proxy_define_metric`, `proxy_record_metric` or
//! `proxy_increment_metric` switches metrics off for good (the SDK's wrappers would trap the
//! whole filter instead; APISIX answers "unimplemented" to all of them).

use crate::config::{LabelStyle, Settings};
use crate::timer::{Breach, ErrorReason};

/// proxy-wasm metric types (ABI values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MetricKind {
    Counter = 0,
    Gauge = 1,
    Histogram = 2,
}

/// The histograms, recorded in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hist {
    Ttft,
    Ttfo,
    Itl,
    Tpot,
    E2e,
}

impl Hist {
    pub const ALL: [Hist; 5] = [Hist::Ttft, Hist::Ttfo, Hist::Itl, Hist::Tpot, Hist::E2e];
    pub fn name(self) -> &'static str {
        match self {
            Hist::Ttft => "time_to_first_token_us",
            Hist::Ttfo => "time_to_first_answer_token_us",
            Hist::Itl => "inter_token_latency_us",
            Hist::Tpot => "time_per_output_token_us",
            Hist::E2e => "e2e_request_latency_us",
        }
    }
}

/// The `type` label of `tokens_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    Input,
    Output,
    Reasoning,
}

impl TokenType {
    pub const ALL: [TokenType; 3] = [TokenType::Input, TokenType::Output, TokenType::Reasoning];
    pub fn as_str(self) -> &'static str {
        match self {
            TokenType::Input => "input",
            TokenType::Output => "output",
            TokenType::Reasoning => "reasoning",
        }
    }
}

/// A counter or gauge of one route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    Requests,
    Stalls,
    Errors(ErrorReason),
    Tokens(TokenType),
    GuardResets(Breach),
    Active,
}

impl Count {
    pub fn all() -> Vec<Count> {
        let mut v = vec![Count::Requests, Count::Stalls];
        v.extend(ErrorReason::ALL.map(Count::Errors));
        v.extend(TokenType::ALL.map(Count::Tokens));
        v.extend([Count::GuardResets(Breach::MaxDuration), Count::GuardResets(Breach::MaxIdle)]);
        v.push(Count::Active);
        v
    }
    fn slot(self) -> usize {
        match self {
            Count::Requests => 0,
            Count::Stalls => 1,
            Count::Errors(r) => 2 + r.index(),
            Count::Tokens(t) => 7 + t as usize,
            Count::GuardResets(Breach::MaxDuration) => 10,
            Count::GuardResets(Breach::MaxIdle) => 11,
            Count::Active => 12,
        }
    }
    pub fn kind(self) -> MetricKind {
        if self == Count::Active { MetricKind::Gauge } else { MetricKind::Counter }
    }
    /// Base name and the label past `route`, if any.
    pub fn name(self) -> (&'static str, Option<(&'static str, &'static str)>) {
        match self {
            Count::Requests => ("requests_total", None),
            Count::Stalls => ("stalls_total", None),
            Count::Errors(r) => ("errors_total", Some(("reason", r.as_str()))),
            Count::Tokens(t) => ("tokens_total", Some(("type", t.as_str()))),
            Count::GuardResets(b) => ("guard_resets_total", Some(("reason", b.as_str()))),
            Count::Active => ("active_streams", None),
        }
    }
}

const COUNT_SLOTS: usize = 13;

/// The full metric name with labels written in `style`.
pub fn metric_name(style: LabelStyle, prefix: &str, base: &str, labels: &[(&str, &str)]) -> String {
    let mut s = String::with_capacity(prefix.len() + base.len() + 48);
    s.push_str(prefix);
    s.push_str(base);
    for (k, v) in labels {
        match style {
            LabelStyle::Envoy => {
                s.push('_');
                s.push_str(k);
                s.push_str("=.=");
                s.push_str(v);
                s.push_str(";.;");
            }
            LabelStyle::Dotted => {
                s.push('.');
                s.push_str(k);
                s.push('.');
                s.push_str(v);
            }
        }
    }
    s
}

/// Every (kind, name) the filter defines for `settings`, route by route.
pub fn all_names(settings: &Settings) -> Vec<(MetricKind, String)> {
    let mut out = Vec::new();
    for r in &settings.routes {
        let route = [("route", r.name.as_str())];
        for h in Hist::ALL {
            out.push((
                MetricKind::Histogram,
                metric_name(settings.label_style, &settings.metric_prefix, h.name(), &route),
            ));
        }
        for c in Count::all() {
            let (base, extra) = c.name();
            let mut labels = route.to_vec();
            labels.extend(extra);
            out.push((c.kind(), metric_name(settings.label_style, &settings.metric_prefix, base, &labels)));
        }
    }
    out
}

/// The host's three metric calls; a status other than 0 is an error.
pub trait MetricHost {
    fn define(&mut self, kind: MetricKind, name: &str) -> Result<u32, u32>;
    fn record(&mut self, id: u32, value: u64) -> Result<(), u32>;
    fn increment(&mut self, id: u32, delta: i64) -> Result<(), u32>;
}

#[derive(Clone, Copy, Debug, Default)]
struct RouteIds {
    hist: [u32; 5],
    count: [u32; COUNT_SLOTS],
}

/// Metric ids per route, or "off" once the host refused a call.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    routes: Vec<RouteIds>,
    /// The status that switched metrics off, if any.
    off: Option<u32>,
}

fn off_message(call: &str, status: u32) -> String {
    format!(
        "metrics unavailable on this host ({call} answered status {status}): \
         writing logs and properties only from now on"
    )
}

impl Metrics {
    /// Metrics switched off before any definition (no configuration yet, or a bad one).
    pub fn disabled() -> Metrics {
        Metrics { routes: Vec::new(), off: Some(u32::MAX) }
    }

    /// Define every metric. `Err` carries the one log line to write when the host refused.
    pub fn define(host: &mut dyn MetricHost, settings: &Settings) -> (Metrics, Option<String>) {
        let mut m = Metrics { routes: vec![RouteIds::default(); settings.routes.len()], off: None };
        let names = all_names(settings);
        let per_route = Hist::ALL.len() + Count::all().len();
        for (i, (kind, name)) in names.iter().enumerate() {
            match host.define(*kind, name) {
                Ok(id) => {
                    let (r, k) = (i / per_route, i % per_route);
                    if k < Hist::ALL.len() {
                        m.routes[r].hist[k] = id;
                    } else {
                        m.routes[r].count[Count::all()[k - Hist::ALL.len()].slot()] = id;
                    }
                }
                Err(status) => {
                    m.off = Some(status);
                    m.routes.clear();
                    return (m, Some(off_message("proxy_define_metric", status)));
                }
            }
        }
        (m, None)
    }

    pub fn enabled(&self) -> bool {
        self.off.is_none()
    }

    fn refused(&mut self, call: &str, status: u32) -> Option<String> {
        self.off = Some(status);
        self.routes.clear();
        Some(off_message(call, status))
    }

    /// Record `value_us` in histogram `h` of `route`. Returns a log line when metrics just went off.
    pub fn record(
        &mut self,
        host: &mut dyn MetricHost,
        route: usize,
        h: Hist,
        value_us: u64,
    ) -> Option<String> {
        let id = self.routes.get(route)?.hist[h as usize];
        match host.record(id, value_us) {
            Ok(()) => None,
            Err(status) => self.refused("proxy_record_metric", status),
        }
    }

    /// Add `delta` to counter or gauge `c` of `route`. Returns a log line when metrics just went off.
    pub fn add(&mut self, host: &mut dyn MetricHost, route: usize, c: Count, delta: i64) -> Option<String> {
        if delta == 0 {
            return None;
        }
        let id = self.routes.get(route)?.count[c.slot()];
        match host.increment(id, delta) {
            Ok(()) => None,
            Err(status) => self.refused("proxy_increment_metric", status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Fake {
        names: HashMap<u32, String>,
        values: HashMap<String, Vec<i64>>,
        fail_define_after: Option<usize>,
        fail_record: bool,
    }

    impl MetricHost for Fake {
        fn define(&mut self, _: MetricKind, name: &str) -> Result<u32, u32> {
            if self.fail_define_after.is_some_and(|n| self.names.len() >= n) {
                return Err(12);
            }
            let id = self.names.len() as u32 + 1;
            self.names.insert(id, name.to_owned());
            Ok(id)
        }
        fn record(&mut self, id: u32, value: u64) -> Result<(), u32> {
            if self.fail_record {
                return Err(99);
            }
            self.values.entry(self.names[&id].clone()).or_default().push(value as i64);
            Ok(())
        }
        fn increment(&mut self, id: u32, delta: i64) -> Result<(), u32> {
            self.values.entry(self.names[&id].clone()).or_default().push(delta);
            Ok(())
        }
    }

    #[test]
    fn names_in_both_styles() {
        assert_eq!(
            metric_name(
                LabelStyle::Envoy,
                "llm_stream_",
                "errors_total",
                &[("route", "chat"), ("reason", "reset")]
            ),
            "llm_stream_errors_total_route=.=chat;.;_reason=.=reset;.;"
        );
        assert_eq!(
            metric_name(LabelStyle::Dotted, "gw_", "errors_total", &[("route", "chat"), ("reason", "reset")]),
            "gw_errors_total.route.chat.reason.reset"
        );
        let s = Settings::default();
        let names = all_names(&s);
        assert_eq!(names.len(), 4 * 18);
        assert!(names.contains(&(
            MetricKind::Histogram,
            "llm_stream_time_to_first_token_us_route=.=chat;.;".to_owned()
        )));
        assert!(
            names.contains(&(MetricKind::Gauge, "llm_stream_active_streams_route=.=messages;.;".to_owned()))
        );
        let unique: std::collections::HashSet<_> = names.iter().map(|(_, n)| n).collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn record_and_switch_off() {
        let s = parse(br#"{"routes":[{"name":"a","paths":["/a"]},{"name":"b","paths":["/b"]}]}"#).unwrap();
        let mut host = Fake::default();
        let (mut m, msg) = Metrics::define(&mut host, &s);
        assert!(msg.is_none() && m.enabled());
        assert!(m.record(&mut host, 1, Hist::Itl, 42).is_none());
        assert!(m.add(&mut host, 0, Count::Errors(ErrorReason::Reset), 1).is_none());
        assert!(m.add(&mut host, 0, Count::Active, -1).is_none());
        assert_eq!(host.values["llm_stream_inter_token_latency_us_route=.=b;.;"], vec![42]);
        assert_eq!(host.values["llm_stream_errors_total_route=.=a;.;_reason=.=reset;.;"], vec![1]);
        assert_eq!(host.values["llm_stream_active_streams_route=.=a;.;"], vec![-1]);
        host.fail_record = true;
        let msg = m.record(&mut host, 0, Hist::Ttft, 1).unwrap();
        assert!(msg.contains("proxy_record_metric answered status 99"), "{msg}");
        assert!(!m.enabled());
        assert!(m.record(&mut host, 0, Hist::Ttft, 1).is_none(), "said once");
        assert!(m.add(&mut host, 0, Count::Requests, 1).is_none());

        let mut host = Fake { fail_define_after: Some(5), ..Fake::default() };
        let (m, msg) = Metrics::define(&mut host, &s);
        assert!(!m.enabled());
        assert!(msg.unwrap().contains("proxy_define_metric answered status 12"));
        assert!(!Metrics::disabled().enabled());
    }
}
