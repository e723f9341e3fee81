//! `triage watch`'s judgement: a canary for engines that hang while `/health` says 200.
//!
//! Every interval the host sends one tiny streamed request (the canary, timed by the probe's
//! [`triage_base::timing::StreamTimer`] into a [`RequestRecord`]) and, when it can, reads the engine's
//! `/metrics` ([`EngineScrape`]). [`Watch::observe`] takes both and says what the engine is
//! doing ([`State`]: serving, slow, stalled, down) with a [`Verdict`] of the report contract's and
//! the evidence. Sans-I/O like the foundation: times are the host's monotonic nanoseconds.
//!
//! **Stalled** has two sources. The canary: the deadline passed before headers (the server took
//! the connection and said nothing) or after headers but before the first token (or the stream
//! stopped mid-way). The metrics: requests running or waiting in two *distinct* scrapes (read at
//! different times, and not the same exposition timestamp) and none of the engine's progress
//! counters ([`engine::progress`]) moved between them. An idle engine — nothing running or
//! waiting, counters flat — is never stalled.
//!
//! Memory is bounded however long it runs: the last [`RECENT`] scrapes, a fixed-bucket TTFT
//! histogram, one counter per fault kind.

#![deny(missing_docs)]

pub mod engine;
pub mod expose;
pub mod report;

use std::collections::{BTreeMap, VecDeque};

pub use engine::{EngineScrape, Family};
pub use expose::TtftHistogram;
pub use report::{CanaryView, EngineView, Observation, State, WatchReport};
use triage_base::fault::FaultKind;
use triage_base::probe::RequestRecord;
use triage_report::Verdict;

/// Scrapes kept (their summaries, a few hundred bytes each).
pub const RECENT: usize = 8;

/// The bounds the watch judges by, stated in every report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchConfig {
    /// A canary TTFT above this is slow (TTFT_HIGH), ns. The analyzer's default TTFT target
    /// (`--slo-ttft-ms`, 2 s) unless the user gives another.
    pub ttft_bound_ns: u64,
    /// The canary's hard deadline, from sending to the end of its stream, ns.
    pub timeout_ns: u64,
    /// The interval between canaries, ns.
    pub every_ns: u64,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig { ttft_bound_ns: 2_000_000_000, timeout_ns: 10_000_000_000, every_ns: 30_000_000_000 }
    }
}

/// What one interval brought.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick<'a> {
    /// When the interval started (ns, host's monotonic clock).
    pub at_ns: u64,
    /// The canary's record; `None` when the interval sent none.
    pub canary: Option<&'a RequestRecord>,
    /// The scrape, or why it failed (already redacted); `None` without `--metrics-url`.
    pub metrics: Option<Result<EngineScrape, String>>,
}

/// The watch's bounded state across intervals.
#[derive(Clone, Debug)]
pub struct Watch {
    config: WatchConfig,
    /// The last distinct scrapes, oldest first, at most [`RECENT`].
    recent: VecDeque<EngineScrape>,
    /// The earliest scrape of the current run with work pending and counters unchanged (ns).
    frozen_since_ns: Option<u64>,
    ttft: TtftHistogram,
    ticks: u64,
    skipped: u64,
    canaries: u64,
    failures: BTreeMap<&'static str, u64>,
    scrape_failures: u64,
    last: Option<Observation>,
}

/// The canary's judgement alone: state, verdict, and why.
fn judge_canary(r: &RequestRecord, bound_ns: u64, timeout_ns: u64) -> (State, Verdict, String) {
    let ms = |ns: u64| ns as f64 / 1e6;
    let bound_ms = ms(bound_ns);
    let timeout_ms = ms(timeout_ns);
    let Some(fault) = &r.error else {
        return match r.ttft_ms {
            Some(t) if t > bound_ms => (
                State::Slow,
                Verdict::TtftHigh,
                format!("canary TTFT {t:.1} ms is above the {bound_ms:.0} ms bound"),
            ),
            Some(t) => (
                State::Serving,
                Verdict::Healthy,
                format!("canary TTFT {t:.1} ms, within the {bound_ms:.0} ms bound"),
            ),
            None => (State::Down, Verdict::ThroughputZero, "the canary ended without a token".to_owned()),
        };
    };
    use FaultKind as K;
    let (state, verdict) = match fault.kind {
        K::TimeoutBeforeHeaders | K::TimeoutBeforeFirstToken | K::TimeoutMidStream => {
            (State::Stalled, Verdict::ThroughputZero)
        }
        K::RateLimited => (State::Slow, Verdict::TtftHigh),
        K::InvalidUrl
        | K::Tls
        | K::Unauthorized
        | K::Forbidden
        | K::NotFound
        | K::ClientError
        | K::HtmlInsteadOfSse
        | K::NotSse
        | K::Redirect
        | K::CompressedBody => (State::Down, Verdict::Config),
        K::ConnectionRefused
        | K::Dns
        | K::Connect
        | K::ConnectionClosed
        | K::ResetMidStream
        | K::ServerError
        | K::StreamErrorEvent
        | K::IncompleteStream
        | K::Cors
        | K::NoTokens
        | K::Other => (State::Down, Verdict::ThroughputZero),
    };
    let why = match fault.kind {
        K::TimeoutBeforeHeaders => {
            format!(
                "the canary got no response headers within its {timeout_ms:.0} ms deadline: the server takes connections and answers nothing"
            )
        }
        K::TimeoutBeforeFirstToken => format!(
            "the canary got headers{} but no token within its {timeout_ms:.0} ms deadline",
            r.headers_ms.map(|h| format!(" after {h:.1} ms")).unwrap_or_default()
        ),
        K::TimeoutMidStream => {
            format!(
                "the canary's stream stopped after its first token and its {timeout_ms:.0} ms deadline passed"
            )
        }
        K::RateLimited => {
            "the canary was refused with 429: the engine's queue or a rate limit is full".to_owned()
        }
        _ => {
            format!(
                "the canary failed ({}): {}",
                fault.kind.as_str(),
                triage_base::safe::cut(&fault.message, 300)
            )
        }
    };
    (state, verdict, why)
}

impl Watch {
    /// A watch judging by `config`, with nothing seen yet.
    pub fn new(config: WatchConfig) -> Watch {
        let mut failures = BTreeMap::new();
        // Exported at 0 from the start, so `increase()` over them works from the first scrape.
        for k in [
            FaultKind::TimeoutBeforeHeaders,
            FaultKind::TimeoutBeforeFirstToken,
            FaultKind::TimeoutMidStream,
            FaultKind::ConnectionRefused,
            FaultKind::ServerError,
        ] {
            failures.insert(k.as_str(), 0);
        }
        Watch {
            config,
            recent: VecDeque::with_capacity(RECENT),
            frozen_since_ns: None,
            ttft: TtftHistogram::default(),
            ticks: 0,
            skipped: 0,
            canaries: 0,
            failures,
            scrape_failures: 0,
            last: None,
        }
    }

    /// The bounds it judges by.
    pub fn config(&self) -> WatchConfig {
        self.config
    }

    /// Count an interval whose canary was not sent because the previous one was still in flight
    /// (one canary per target at a time).
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Keep `scrape` as the one the next interval's scrape is compared with, without judging an
    /// interval (`triage watch --once` scrapes before its canary and again an interval later).
    pub fn baseline(&mut self, scrape: EngineScrape) {
        if scrape.family.is_some() {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(scrape);
        }
    }

    /// Judge one interval.
    pub fn observe(&mut self, tick: Tick<'_>) -> Observation {
        self.ticks += 1;
        let mut evidence = Vec::new();
        let mut canary_view = None;
        let (mut state, mut verdict) = (State::Unknown, Verdict::Inconclusive);
        if let Some(r) = tick.canary {
            self.canaries += 1;
            if let Some(f) = &r.error {
                *self.failures.entry(f.kind.as_str()).or_insert(0) += 1;
            }
            if let Some(t) = r.ttft_ms {
                self.ttft.observe(t / 1e3);
            }
            let (s, v, why) = judge_canary(r, self.config.ttft_bound_ns, self.config.timeout_ns);
            (state, verdict) = (s, v);
            evidence.push(why);
            canary_view = Some(CanaryView::of(r));
        } else {
            evidence.push("no canary this interval (the previous one was still in flight)".to_owned());
        }
        let mut engine_view = None;
        let mut metrics_error = None;
        match tick.metrics {
            None => {}
            Some(Err(e)) => {
                self.scrape_failures += 1;
                evidence.push(format!("/metrics could not be read: {}", triage_base::safe::cut(&e, 300)));
                metrics_error = Some(e);
            }
            Some(Ok(scrape)) => {
                let view = self.engine(scrape, &mut evidence);
                if view.stalled && !matches!((state, verdict), (State::Down, Verdict::ThroughputZero)) {
                    state = State::Stalled;
                    verdict = Verdict::ThroughputZero;
                }
                engine_view = Some(view);
            }
        }
        let obs = Observation {
            verdict,
            state,
            serving: state == State::Serving,
            canary: canary_view,
            engine: engine_view,
            metrics_error,
            evidence,
        };
        self.last = Some(obs.clone());
        obs
    }

    /// Add a scrape to the recent ones and judge the last two distinct ones.
    fn engine(&mut self, scrape: EngineScrape, evidence: &mut Vec<String>) -> EngineView {
        let prev = self.recent.back().cloned();
        let distinct = prev.as_ref().is_none_or(|p| {
            scrape.at_ns > p.at_ns
                && (scrape.exposition_ms.is_none() || scrape.exposition_ms != p.exposition_ms)
        });
        let mut view = EngineView::of(&scrape, prev.as_ref());
        let Some(family) = scrape.family else {
            evidence.push(format!(
                "/metrics holds none of the engine names the watch reads ({} sample lines): vLLM, SGLang or TGI expected",
                scrape.samples
            ));
            return view;
        };
        let pending = scrape.pending();
        let gauge = |g: Option<f64>| g.map_or("?".to_owned(), |v| format!("{v:.0}"));
        let work = format!("{} running, {} waiting", gauge(scrape.running), gauge(scrape.waiting));
        if !distinct {
            evidence.push(format!(
                "{}: {work}; same sample as the previous scrape (same time or exposition timestamp): not compared",
                family.as_str()
            ));
            return view;
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(scrape.clone());
        let Some(prev) = prev else {
            evidence.push(format!(
                "{}: {work}; first scrape — counters are compared from the next one",
                family.as_str()
            ));
            return view;
        };
        let common: Vec<(&str, f64, f64)> =
            scrape.counters.iter().filter_map(|(n, v)| prev.counter(n).map(|p| (*n, p, *v))).collect();
        let secs = (scrape.at_ns - prev.at_ns) as f64 / 1e9;
        let busy_both = pending.is_some_and(|p| p > 0.0) && prev.pending().is_some_and(|p| p > 0.0);
        let moved = common.iter().any(|(_, a, b)| a != b);
        if common.is_empty() {
            self.frozen_since_ns = None;
            evidence.push(format!(
                "{}: {work}; no progress counter in both scrapes, so a stall cannot be read from metrics",
                family.as_str()
            ));
        } else if moved {
            self.frozen_since_ns = None;
            let deltas: Vec<String> = common
                .iter()
                .filter(|(_, a, b)| a != b)
                .map(|(n, a, b)| format!("{n} {:+}", b - a))
                .collect();
            evidence.push(format!("{}: {work}; in {secs:.1} s {}", family.as_str(), deltas.join(", ")));
        } else if busy_both {
            let since = *self.frozen_since_ns.get_or_insert(prev.at_ns);
            let frozen_s = (scrape.at_ns - since) as f64 / 1e9;
            let names: Vec<&str> = common.iter().map(|(n, _, _)| *n).collect();
            let same = if scrape.digest == prev.digest { " (the body is byte-identical)" } else { "" };
            evidence.push(format!(
                "{}: {work} in two scrapes {secs:.1} s apart, and {} did not move for {frozen_s:.1} s{same}: requests are held and no token is made",
                family.as_str(),
                names.join(", ")
            ));
            view.stalled = true;
            view.frozen_for_ms = Some(triage_base::probe::ms((scrape.at_ns - since) as f64));
        } else {
            self.frozen_since_ns = None;
            evidence.push(format!(
                "{}: {work}; counters flat in {secs:.1} s with nothing to do — idle, not stalled",
                family.as_str()
            ));
        }
        view
    }

    /// The last observation, if any.
    pub fn last(&self) -> Option<&Observation> {
        self.last.as_ref()
    }

    /// Intervals judged so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Intervals skipped because a canary was still in flight.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Canaries sent so far.
    pub fn canaries(&self) -> u64 {
        self.canaries
    }

    /// Failed canaries by fault kind (`timeout_before_first_token`, …).
    pub fn failures(&self) -> &BTreeMap<&'static str, u64> {
        &self.failures
    }

    /// Scrapes of `/metrics` that failed.
    pub fn scrape_failures(&self) -> u64 {
        self.scrape_failures
    }

    /// The canary TTFT histogram.
    pub fn ttft(&self) -> &TtftHistogram {
        &self.ttft
    }
}

#[cfg(test)]
mod tests;
