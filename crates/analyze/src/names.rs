//! The metric names the analyzer reads, grouped by what they measure. A rule asks for a
//! quantity by its key (the vLLM name where vLLM has one); a scrape answers under the first of
//! the group's names it holds, so a scrape from SGLang, TensorRT-LLM, Dynamo's frontend, an
//! OpenTelemetry GenAI exporter or LiteLLM reads like one from vLLM — and a scrape that holds two
//! names of one quantity (vLLM 0.11 writes every gap to both `vllm:inter_token_latency_seconds`
//! and the deprecated `vllm:time_per_output_token_seconds`) is read under one, never both.
//!
//! Only names whose definition matches the key's are grouped (learned from each engine's
//! source: vLLM 0.11 `vllm/v1/metrics/loggers.py`, SGLang 0.5
//! `srt/observability/metrics_collector.py`, Dynamo 1.6 `prometheus_names.py` and its TRT-LLM
//! worker, LiteLLM 1.110 `integrations/prometheus.py`, the OpenTelemetry GenAI conventions).
//! Names that look alike but measure something else stay apart: LiteLLM's
//! `litellm_deployment_latency_per_output_token` divides the TTFT (streaming) or the whole
//! latency by the output tokens, so it is no time between tokens. `docs/metrics-crosswalk.md`
//! lists every name here with what the other tools call it (a repository check keeps the two
//! in step).

/// What a family's samples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (resets when the process restarts); exposed with `_total`.
    Counter,
    /// A value now.
    Gauge,
    /// Cumulative `_bucket{le}` counts with `_sum` and `_count`; named here without `_bucket`.
    Histogram,
}

/// One quantity and every name it is exposed under.
#[derive(Debug)]
pub struct Family {
    /// The name rules ask for.
    pub key: &'static str,
    /// Every name of the quantity, the preferred first (the key is one of them).
    pub names: &'static [&'static str],
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// What it measures, and its unit.
    pub definition: &'static str,
}

macro_rules! family {
    ($key:literal, $kind:ident, $def:literal, [$($name:literal),+ $(,)?]) => {
        Family { key: $key, names: &[$($name),+], kind: Kind::$kind, definition: $def }
    };
}

/// Every family the analyzer reads from a scrape.
pub static FAMILIES: &[Family] = &[
    family!(
        "vllm:time_to_first_token_seconds",
        Histogram,
        "time from a request's arrival to its first output token, seconds",
        [
            "vllm:time_to_first_token_seconds",
            "sglang:time_to_first_token_seconds",
            "trtllm_time_to_first_token_seconds",
            "dynamo_frontend_time_to_first_token_seconds",
            "gen_ai_server_time_to_first_token_seconds",
            "litellm_llm_api_time_to_first_token_metric"
        ]
    ),
    family!(
        "vllm:inter_token_latency_seconds",
        Histogram,
        "every gap between two successive output tokens of a request, seconds",
        [
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds",
            "trtllm_inter_token_latency_seconds",
            "dynamo_frontend_inter_token_latency_seconds"
        ]
    ),
    family!(
        "vllm:request_time_per_output_token_seconds",
        Histogram,
        "per request, (last token − first token) / (output tokens − 1), seconds",
        [
            "vllm:request_time_per_output_token_seconds",
            "sglang:request_time_per_output_token_seconds",
            "gen_ai_server_time_per_output_token_seconds"
        ]
    ),
    family!(
        "vllm:e2e_request_latency_seconds",
        Histogram,
        "time from a request's arrival to its last token, seconds",
        [
            "vllm:e2e_request_latency_seconds",
            "sglang:e2e_request_latency_seconds",
            "trtllm_e2e_request_latency_seconds",
            "dynamo_frontend_request_duration_seconds",
            "gen_ai_server_request_duration_seconds",
            "litellm_request_total_latency_metric"
        ]
    ),
    family!(
        "vllm:request_queue_time_seconds",
        Histogram,
        "time a request waited in the engine's queue before it was scheduled, seconds",
        ["vllm:request_queue_time_seconds", "sglang:queue_time_seconds", "trtllm_request_queue_time_seconds"]
    ),
    family!(
        "vllm:request_prefill_time_seconds",
        Histogram,
        "time a request spent in prefill (scheduled to first token), seconds",
        ["vllm:request_prefill_time_seconds"]
    ),
    family!(
        "vllm:request_decode_time_seconds",
        Histogram,
        "time a request spent in decode (first token to last), seconds",
        ["vllm:request_decode_time_seconds"]
    ),
    family!(
        "vllm:request_prompt_tokens",
        Histogram,
        "prompt length per request, tokens",
        ["vllm:request_prompt_tokens"]
    ),
    family!(
        "vllm:num_requests_running",
        Gauge,
        "requests in the running batch now",
        ["vllm:num_requests_running", "sglang:num_running_reqs"]
    ),
    family!(
        "vllm:num_requests_waiting",
        Gauge,
        "requests waiting to be scheduled now",
        ["vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size"]
    ),
    family!(
        "vllm:kv_cache_usage_perc",
        Gauge,
        "share of the KV cache in use now, 0 to 1",
        ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"]
    ),
    family!(
        "vllm:generation_tokens_total",
        Counter,
        "output tokens generated",
        ["vllm:generation_tokens_total", "sglang:generation_tokens_total"]
    ),
    family!(
        "vllm:prompt_tokens_total",
        Counter,
        "prompt tokens processed (cached ones included)",
        ["vllm:prompt_tokens_total", "sglang:prompt_tokens_total"]
    ),
    family!(
        "vllm:request_success_total",
        Counter,
        "requests finished (label `finished_reason`)",
        ["vllm:request_success_total", "trtllm_request_success_total"]
    ),
    family!(
        "vllm:num_preemptions_total",
        Counter,
        "running requests evicted for lack of KV cache (vLLM preempts, SGLang retracts)",
        ["vllm:num_preemptions_total", "sglang:num_retracted_requests_total"]
    ),
    family!(
        "sglang:num_retracted_reqs",
        Gauge,
        "requests SGLang retracted in its last logging interval",
        ["sglang:num_retracted_reqs"]
    ),
    family!(
        "vllm:prefix_cache_queries_total",
        Counter,
        "prompt tokens looked up in the prefix cache",
        ["vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"]
    ),
    family!(
        "vllm:prefix_cache_hits_total",
        Counter,
        "prompt tokens found in the prefix cache",
        ["vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"]
    ),
    family!(
        "sglang:cached_tokens_total",
        Counter,
        "prompt tokens served from the prefix (radix) cache",
        ["sglang:cached_tokens_total"]
    ),
    family!(
        "sglang:cache_hit_rate",
        Gauge,
        "share of prompt tokens of the last prefill batch found in the cache, 0 to 1",
        ["sglang:cache_hit_rate"]
    ),
    family!(
        "vllm:spec_decode_num_drafts_total",
        Counter,
        "speculative steps that proposed drafts",
        ["vllm:spec_decode_num_drafts_total"]
    ),
    family!(
        "vllm:spec_decode_num_draft_tokens_total",
        Counter,
        "draft tokens proposed",
        ["vllm:spec_decode_num_draft_tokens_total"]
    ),
    family!(
        "vllm:spec_decode_num_accepted_tokens_total",
        Counter,
        "draft tokens accepted",
        ["vllm:spec_decode_num_accepted_tokens_total"]
    ),
    family!(
        "sglang:spec_accept_length",
        Gauge,
        "tokens per speculative step (accepted drafts + the bonus token) over the last interval; 0 when speculative decoding is off",
        ["sglang:spec_accept_length", "trtllm_spec_decode_acceptance_length"]
    ),
];

/// The family `name` belongs to, if any.
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.names.contains(&name))
}

/// The names to read for `name`: its family's, preferred first, or `name` alone.
pub fn names_for(name: &str) -> Vec<&str> {
    match family(name) {
        Some(f) => f.names.to_vec(),
        None => vec![name],
    }
}

/// Every name the analyzer reads: each family's, histograms with `_bucket`, `_sum` and `_count`
/// implied.
pub fn all() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().flat_map(|f| f.names.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engines' state names (`triage_base::engine_metrics`, read by the GPU rules and the
    /// watch) are grouped as here: each vLLM or SGLang name is in this table's family of its
    /// quantity, so the three readers agree on what a name measures.
    #[test]
    fn engine_state_names_are_grouped_as_here() {
        use triage_base::engine_metrics::{ENGINE_METRICS, Engine, Quantity};
        for m in ENGINE_METRICS.iter().filter(|m| m.engine != Engine::Tgi) {
            let key = match m.quantity {
                Quantity::Running => "vllm:num_requests_running",
                Quantity::Waiting => "vllm:num_requests_waiting",
                Quantity::KvUsage => "vllm:kv_cache_usage_perc",
                Quantity::PromptTokens => "vllm:prompt_tokens_total",
                Quantity::GenerationTokens => "vllm:generation_tokens_total",
                Quantity::Steps => continue,
            };
            assert_eq!(family(m.name).map(|f| f.key), Some(key), "{}", m.name);
        }
    }

    #[test]
    fn a_name_is_in_one_family_and_the_key_first() {
        let mut seen = std::collections::BTreeSet::new();
        for f in FAMILIES {
            assert_eq!(f.names[0], f.key, "{}", f.key);
            for n in f.names {
                assert!(seen.insert(*n), "{n} is in two families");
                assert_eq!(n.ends_with("_total"), f.kind == Kind::Counter, "{n}");
            }
        }
        assert_eq!(names_for("sglang:num_queue_reqs")[0], "vllm:num_requests_waiting");
        assert_eq!(names_for("x_total"), vec!["x_total"]);
    }

    /// Verdict and causes of a paste, without their text.
    fn diagnosis(name: &str, text: &str) -> (crate::report::Verdict, Vec<String>) {
        let r = crate::rules::case(&[(name, text)]).en;
        let mut rules: Vec<String> = r.findings.iter().map(|f| format!("{}:{:?}", f.rule, f.class)).collect();
        rules.sort();
        (r.verdict, rules)
    }

    /// Scrapes of one incident written with an engine's older and newer names (and by the
    /// frontends and conventions that time the same requests) are diagnosed alike.
    #[test]
    fn newer_names_diagnose_like_the_older_ones() {
        use crate::report::Verdict::{TbtTail, TtftHigh};
        use triage_base::fixture;
        let decode = diagnosis("vllm-0.8.prom", fixture!("scrapes/vllm-0.8-decode-slow.prom"));
        assert_eq!(decode, (TbtTail, vec!["tbt-above-target:TbtTail".to_owned()]));
        for (name, text) in [
            // vLLM 0.11 writes every gap twice (new and deprecated name); 0.12 only the new.
            ("vllm-0.11.prom", fixture!("scrapes/vllm-0.11-decode-slow.prom")),
            ("vllm-0.12.prom", fixture!("scrapes/vllm-0.12-decode-slow.prom")),
            ("sglang-0.4.prom", fixture!("scrapes/sglang-0.4-decode-slow.prom")),
            ("sglang-0.5.prom", fixture!("scrapes/sglang-0.5-decode-slow.prom")),
            ("trtllm.prom", fixture!("scrapes/trtllm-decode-slow.prom")),
            ("dynamo.prom", fixture!("scrapes/dynamo-frontend-decode-slow.prom")),
            // Per-request time per output token only (no gap histogram).
            ("otel.prom", fixture!("scrapes/otel-genai-decode-slow.prom")),
        ] {
            assert_eq!(diagnosis(name, text), decode, "{name}");
        }
        let ttft = diagnosis("vllm-0.11.prom", fixture!("scrapes/vllm-0.11-ttft-slow.prom"));
        assert_eq!(ttft.0, TtftHigh);
        for (name, text) in [
            ("trtllm.prom", fixture!("scrapes/trtllm-ttft-slow.prom")),
            ("dynamo.prom", fixture!("scrapes/dynamo-frontend-ttft-slow.prom")),
            ("otel.prom", fixture!("scrapes/otel-genai-ttft-slow.prom")),
            ("litellm.prom", fixture!("scrapes/litellm-ttft-slow.prom")),
        ] {
            assert_eq!(diagnosis(name, text), ttft, "{name}");
        }
    }

    /// vLLM 0.11's two histograms of the same gaps are read as one: the quantiles are those of
    /// either alone, the window's count is not doubled, and the report says which one it read.
    #[test]
    fn a_measurement_under_two_names_is_counted_once() {
        use triage_base::fixture;
        let both = crate::testutil::run("m.prom", fixture!("scrapes/vllm-0.11-decode-slow.prom"));
        let only = crate::testutil::run("m.prom", fixture!("scrapes/vllm-0.12-decode-slow.prom"));
        let (m, sections) = both.take(|f| f.metrics);
        let m2 = only.facts.metrics;
        let (b, name) = m.window_histogram("vllm:time_per_output_token_seconds").unwrap();
        assert_eq!(name, "vllm:inter_token_latency_seconds");
        assert_eq!(b, m2.window_histogram("vllm:inter_token_latency_seconds").unwrap().0);
        assert_eq!(b.last().map(|x| x.1), Some(4000.0));
        let issues: Vec<&str> = sections.iter().flat_map(|s| &s.issues).map(|i| i.message.as_str()).collect();
        assert_eq!(
            issues,
            vec![
                "`vllm:time_per_output_token_seconds` and `vllm:inter_token_latency_seconds` are the same measurement (every gap between two successive output tokens of a request, seconds): only `vllm:inter_token_latency_seconds` is read, never both"
            ]
        );
        // The older gauge and counters answer for the new names.
        let old = crate::testutil::run("m.prom", fixture!("scrapes/vllm-0.8-decode-slow.prom")).facts.metrics;
        assert_eq!(old.delta("vllm:prefix_cache_hits_total"), Some(10_000.0));
        assert_eq!(old.latest().and_then(|s| s.max("vllm:kv_cache_usage_perc")).map(|x| x.0), Some(0.41));
    }
}
