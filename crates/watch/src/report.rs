//! The `triage.watch/v1` contract: one object per interval (`triage watch --format json`, and
//! the single object of `--once`), and the one-line text form.
//!
//! Contract (extend, never rename): `{"schema":"triage.watch/v1","url","metrics_url","model",
//! "tick","at_ms","verdict","state","serving","canary":{"ok","status","error":{"kind",
//! "message"},"headers_ms","ttft_ms","e2e_ms","output_tokens"},"engine":{"family","running",
//! "waiting","counters":{…},"moved":{…},"since_previous_ms","stalled","frozen_for_ms"},
//! "metrics_error","evidence":[…],"bounds":{"ttft_ms","timeout_ms","every_ms"},
//! "definitions":[{"name","meaning"}],"counts":{"canaries","skipped","failures":{…},
//! "scrape_failures"}}`. Times are milliseconds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::engine::{EngineScrape, Family};
use super::{Watch, WatchConfig};
use triage_base::fault::Fault;
use triage_base::probe::RequestRecord;
use triage_report::Verdict;

/// The schema id every watch object carries in `schema`.
pub const SCHEMA: &str = "triage.watch/v1";

/// What the engine is doing, as the canary and the metrics show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The canary got its first token within the TTFT bound, and the metrics show no stall.
    Serving,
    /// The canary got a token, but later than the TTFT bound (or was refused with 429).
    Slow,
    /// The engine holds work and makes no token: the canary's deadline passed before headers or
    /// before its first token, or requests run with counters frozen between distinct scrapes.
    Stalled,
    /// The engine refused or failed the canary: connection refused or reset, 5xx, an error
    /// event, or an answer that is not a token stream.
    Down,
    /// Nothing to judge by this interval.
    Unknown,
}

impl State {
    /// The serialised name (`serving`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Serving => "serving",
            State::Slow => "slow",
            State::Stalled => "stalled",
            State::Down => "down",
            State::Unknown => "unknown",
        }
    }
}

/// The canary request, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanaryView {
    /// It completed without a fault.
    pub ok: bool,
    /// HTTP status, when headers arrived.
    pub status: Option<u16>,
    /// Why it failed (the probe's fault kinds), already redacted.
    pub error: Option<Fault>,
    /// Request sent → response headers, ms.
    pub headers_ms: Option<f64>,
    /// Request sent → first SSE event carrying a generated token, ms.
    pub ttft_ms: Option<f64>,
    /// Request sent → last token, ms.
    pub e2e_ms: Option<f64>,
    /// Output tokens: the server's usage, else the token events counted.
    pub output_tokens: Option<u64>,
}

impl CanaryView {
    /// The fields of a probe record the watch shows.
    pub fn of(r: &RequestRecord) -> CanaryView {
        CanaryView {
            ok: r.ok,
            status: r.status,
            error: r.error.clone(),
            headers_ms: r.headers_ms,
            ttft_ms: r.ttft_ms,
            e2e_ms: r.e2e_ms,
            output_tokens: r.output_tokens,
        }
    }
}

/// The engine's `/metrics` as the report shows them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineView {
    /// Which engine's names were found (`vllm`, `sglang`, `tgi`), `null` for none.
    pub family: Option<Family>,
    /// Requests running (summed over series).
    pub running: Option<f64>,
    /// Requests waiting (summed over series).
    pub waiting: Option<f64>,
    /// Progress counters in this scrape.
    pub counters: BTreeMap<String, f64>,
    /// Each counter's change since the previous distinct scrape.
    pub moved: BTreeMap<String, f64>,
    /// Time since the previous distinct scrape, ms (`null` for the first).
    pub since_previous_ms: Option<f64>,
    /// Requests were held in both scrapes and no progress counter moved.
    pub stalled: bool,
    /// How long the counters have been frozen with requests held, ms.
    pub frozen_for_ms: Option<f64>,
}

impl EngineView {
    /// `scrape` compared with `prev` (the previous distinct scrape), not yet judged.
    pub fn of(scrape: &EngineScrape, prev: Option<&EngineScrape>) -> EngineView {
        let counters = scrape.counters.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
        let moved = prev
            .map(|p| {
                scrape
                    .counters
                    .iter()
                    .filter_map(|(n, v)| p.counter(n).map(|a| ((*n).to_owned(), v - a)))
                    .collect()
            })
            .unwrap_or_default();
        EngineView {
            family: scrape.family,
            running: scrape.running,
            waiting: scrape.waiting,
            counters,
            moved,
            since_previous_ms: prev
                .filter(|p| scrape.at_ns > p.at_ns)
                .map(|p| triage_base::probe::ms((scrape.at_ns - p.at_ns) as f64)),
            stalled: false,
            frozen_for_ms: None,
        }
    }
}

/// One interval's judgement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// `HEALTHY`, `TTFT_HIGH`, `THROUGHPUT_ZERO`, `CONFIG` (the canary's request is refused as
    /// wrong: 4xx, a redirect, a web page) or `INCONCLUSIVE` (nothing to judge by).
    pub verdict: Verdict,
    /// What the engine is doing.
    pub state: State,
    /// `state == serving`: the exit status of `--once` is 0 exactly then.
    pub serving: bool,
    /// The canary, `null` when none was sent.
    pub canary: Option<CanaryView>,
    /// The engine's metrics, `null` without `--metrics-url` or when the scrape failed.
    pub engine: Option<EngineView>,
    /// Why `/metrics` could not be read, when it could not.
    pub metrics_error: Option<String>,
    /// Why: one line per thing seen, every number with its unit.
    pub evidence: Vec<String>,
}

impl Observation {
    /// One line for a terminal: verdict, state, then the evidence.
    pub fn line(&self) -> String {
        format!("{} {} — {}", self.verdict.as_str(), self.state.as_str(), self.evidence.join("; "))
    }
}

/// The bounds the verdict used, ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// A canary TTFT above this is TTFT_HIGH.
    pub ttft_ms: f64,
    /// The canary's hard deadline.
    pub timeout_ms: f64,
    /// The interval.
    pub every_ms: f64,
}

impl From<WatchConfig> for Bounds {
    fn from(c: WatchConfig) -> Bounds {
        Bounds {
            ttft_ms: c.ttft_bound_ns as f64 / 1e6,
            timeout_ms: c.timeout_ns as f64 / 1e6,
            every_ms: c.every_ns as f64 / 1e6,
        }
    }
}

/// A figure's or a word's definition, as printed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Def {
    /// The name printed.
    pub name: String,
    /// What it means.
    pub meaning: String,
}

/// The watch's counts since it started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Canaries sent.
    pub canaries: u64,
    /// Intervals skipped because a canary was still in flight.
    pub skipped: u64,
    /// Failed canaries by fault kind.
    pub failures: BTreeMap<String, u64>,
    /// `/metrics` scrapes that failed.
    pub scrape_failures: u64,
}

/// One `triage.watch/v1` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The canary's endpoint, redacted.
    pub url: String,
    /// The engine's `/metrics` URL, redacted, when given.
    pub metrics_url: Option<String>,
    /// The model the canary asks.
    pub model: String,
    /// The interval's number, from 1.
    pub tick: u64,
    /// When the interval started, ms after the watch started.
    pub at_ms: f64,
    /// The judgement.
    #[serde(flatten)]
    pub observation: Observation,
    /// The bounds it used.
    pub bounds: Bounds,
    /// What the words and figures mean.
    pub definitions: Vec<Def>,
    /// Counts since the watch started.
    pub counts: Counts,
}

/// What the report says its words and figures mean.
pub fn definitions(c: WatchConfig) -> Vec<Def> {
    let b = Bounds::from(c);
    let d = |name: &str, meaning: String| Def { name: name.to_owned(), meaning };
    vec![
        d("TTFT", triage_base::defs::TTFT.meaning.to_owned()),
        d("headers_ms", "request sent -> response status and headers".to_owned()),
        d("e2e_ms", "request sent -> last token".to_owned()),
        d(
            "canary",
            format!(
                "one streamed request with a tiny max_tokens per interval ({:.0} ms), at most one in flight, cut at its {:.0} ms deadline",
                b.every_ms, b.timeout_ms
            ),
        ),
        d("serving", format!("the canary got its first token within {:.0} ms (the TTFT bound) and the metrics show no stall", b.ttft_ms)),
        d("slow", format!("the canary's TTFT was above the {:.0} ms bound, or it was refused with 429", b.ttft_ms)),
        d(
            "stalled",
            "the canary's deadline passed before headers or before its first token (or its stream stopped), or requests were running or waiting in two distinct /metrics scrapes while none of the engine's progress counters moved between them".to_owned(),
        ),
        d("down", "the canary was refused or failed: connection refused or reset, 5xx, an error event, an answer that is not a token stream".to_owned()),
        d("idle", "nothing running or waiting and counters flat: not a stall".to_owned()),
        d(
            "progress counters",
            super::engine::progress().map(|m| m.name).collect::<Vec<_>>().join(", "),
        ),
    ]
}

impl WatchReport {
    /// Wrap `observation` with the target and the watch's bounds and counts.
    pub fn new(
        url: &str,
        metrics_url: Option<&str>,
        model: &str,
        at_ms: f64,
        observation: Observation,
        watch: &Watch,
    ) -> WatchReport {
        WatchReport {
            schema: SCHEMA.to_owned(),
            url: url.to_owned(),
            metrics_url: metrics_url.map(str::to_owned),
            model: model.to_owned(),
            tick: watch.ticks(),
            at_ms: triage_base::probe::ms(at_ms * 1e6),
            observation,
            bounds: watch.config().into(),
            definitions: definitions(watch.config()),
            counts: Counts {
                canaries: watch.canaries(),
                skipped: watch.skipped(),
                failures: watch.failures().iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
                scrape_failures: watch.scrape_failures(),
            },
        }
    }
}
