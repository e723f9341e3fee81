//! The definitions every printed figure refers to. Tools disagree on names; we print ours.
//!
//! One table, read by the CLI reports, the site and the flashcards, so a figure's meaning is
//! stated the same way everywhere.

/// One measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The name llm-triage prints.
    pub name: &'static str,
    /// What is measured, from when to when.
    pub meaning: &'static str,
    /// What other tools call the same (or the nearest) figure.
    pub others: &'static str,
}

pub const TTFT: Definition = Definition {
    name: "TTFT",
    meaning: "request sent -> first SSE event carrying any generated token (text, reasoning or tool call); a role-only first chunk is not a token",
    others: "vLLM bench TTFT; aiperf TTFT; vLLM Prometheus time_to_first_token_seconds starts at server arrival, without the network",
};

pub const TTFO: Definition = Definition {
    name: "TTFO",
    meaning: "request sent -> first answer (non-reasoning) token",
    others: "aiperf TTFO; equals TTFT for models that do not reason",
};

pub const ITL: Definition = Definition {
    name: "ITL",
    meaning: "gap between successive token-carrying events, every gap of every request",
    others: "vLLM bench ITL; aiperf ICL; vLLM Prometheus inter_token_latency_seconds is the server-side per-step analogue",
};

pub const TPOT: Definition = Definition {
    name: "TPOT",
    meaning: "per request (last token - first token) / (output tokens - 1)",
    others: "vLLM bench TPOT; aiperf ITL; guidellm ITL",
};

pub const E2E: Definition = Definition {
    name: "E2E",
    meaning: "request sent -> last token (not socket close)",
    others: "vLLM bench E2EL; vLLM Prometheus e2e_request_latency_seconds (server side)",
};

pub const QUEUE: Definition = Definition {
    name: "queue",
    meaning: "enqueue -> scheduled, from server logs",
    others: "vLLM request_queue_time_seconds",
};

/// The client-side figures a probe reports, in report order.
pub const PROBE_FIGURES: &[Definition] = &[TTFT, TTFO, ITL, TPOT, E2E];

/// Every definition.
pub const ALL: &[Definition] = &[TTFT, TTFO, ITL, TPOT, E2E, QUEUE];

/// How quantiles of exact samples are computed (stated in every report that prints them).
pub const QUANTILE_METHOD: &str =
    "quantiles interpolate linearly between closest ranks (numpy's default): rank = q x (n - 1)";

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = super::ALL.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), super::ALL.len());
    }
}
