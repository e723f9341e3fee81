//! Diagnose straight from Prometheus (or Thanos, Mimir, VictoriaMetrics: the same HTTP API),
//! without HTTP: the host fetches, this crate asks the questions and reads the answers.
//!
//! - `query.rs` — the user's `--selector` read and checked, the one series matcher for every
//!   family the rules know ([`query::FAMILIES`]), the `/api/v1/series` and `/api/v1/query_range`
//!   paths, the window fitted to the point bound, the graph-UI link, UTC timestamps.
//! - `exchange.rs` — the conversation without transport: the two POSTs to make and what each
//!   answer leads to; the CLI (reqwest) and the site (`fetch`) both drive it.
//! - `answer.rs` — the JSON answers read with bounds on series and points (what was cut is
//!   said), and every failure classified ([`PromError`]).
//! - `samples.rs` — the series' own samples over the recent slice (a raw range vector): the
//!   scrape interval, the step never finer than it, stale series, the recent tail of at least
//!   four scrapes — so that "did not move" is judged between distinct samples only.
//!
//! The analyzer's replay (`triage_analyze::prometheus::replay`) turns what was read into a
//! report; the site's page drives the conversation's window parsing without linking any rule.
//!
//! Pure like the foundation: the host passes the time window, the server's base URL (without
//! credentials) and the bytes it received.

#![deny(missing_docs)]

pub mod answer;
pub mod exchange;
pub mod query;
pub mod samples;

/// Everything that can go wrong asking Prometheus, in words a person acts on.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PromError {
    /// `--selector` could not be read.
    #[error("bad --selector: {0}")]
    BadSelector(String),
    /// `--from`, `--to`, `--since` or `--step` make no window.
    #[error("bad window: {0}")]
    BadWindow(String),
    /// Prometheus answered with an error of its own (`bad_data` for a selector or window it
    /// refused, `timeout`, `execution`…).
    #[error("Prometheus refused the query (HTTP {status}, {error_type}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// Prometheus's `errorType` (`bad_data`, `timeout`, `execution`…).
        error_type: String,
        /// Prometheus's `error`, redacted and cut.
        message: String,
    },
    /// The answer is not Prometheus's API: a login page, a proxy's error, another service.
    #[error("not a Prometheus server: {0}")]
    NotPrometheus(String),
    /// A status without a Prometheus explanation.
    #[error("the server answered HTTP {status}: {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// What the body said, redacted and cut.
        message: String,
    },
    /// Nothing the rules read exists in the window.
    #[error("no series in the window: {0}")]
    Empty(String),
    /// The body is gzip-compressed (it starts with `1f 8b`) though no compression was asked
    /// for: a proxy or the server compresses regardless; its bytes are not shown.
    #[error(
        "the server answered HTTP {status} with gzip-compressed content (the body starts with the bytes 1f 8b), which this client did not ask for (no Accept-Encoding): a proxy or the server compresses regardless; ask it not to, or point --prometheus at Prometheus itself"
    )]
    Compressed {
        /// The HTTP status.
        status: u16,
    },
    /// The host's reading of a streamed answer failed (its deadline, its byte bound, a cut
    /// connection) or the answer holds a string too long to read.
    #[error("reading the answer: {0}")]
    Read(String),
}

impl PromError {
    /// The user's own input is at fault (exit 2): a selector or window Prometheus cannot read.
    pub fn is_usage(&self) -> bool {
        match self {
            PromError::BadSelector(_) | PromError::BadWindow(_) => true,
            PromError::Rejected { error_type, .. } => error_type == "bad_data",
            _ => false,
        }
    }
}

/// Bounds on what is read from the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most series of the families read; the rest are dropped and named in `cut`. The engines'
    /// liveness (`up`, `process_start_time_seconds`) adds at most two series per engine read.
    pub max_series: usize,
    /// Most points read over all series; past it the step is widened or series dropped.
    pub max_points: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_series: 5_000, max_points: 2_000_000 }
    }
}

pub use triage_report::prometheus::{
    Citation, Fleet, GatewayRank, GpuRank, Group, PrometheusInput, QueryRecord, ReplicaRank,
};
