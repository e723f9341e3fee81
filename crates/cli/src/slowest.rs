//! The probe's text report, part: the slowest requests by TTFT, each with the ids that find it
//! elsewhere — the W3C trace id it was sent with (the tracing backend's search) and the server's
//! response id (the server's log) — so "request 17 took 3.2 s to first token" is a lookup.

use std::fmt::Write as _;
use triage_core::probe::ProbeReport;

/// How many of the slowest requests the text report lists.
pub const LISTED: usize = 5;

/// Append the list to `out` (nothing when no request had a first token).
pub fn write(out: &mut String, r: &ProbeReport) {
    let slowest = r.slowest_by_ttft(LISTED);
    if slowest.is_empty() {
        return;
    }
    let traced = slowest.iter().any(|q| q.trace_id.is_some());
    let _ = writeln!(
        out,
        "\nslowest requests by TTFT{}:",
        if traced { " (find them in your tracing backend by trace id)" } else { "" }
    );
    for q in slowest {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            out,
            "  #{} TTFT {} · E2E {}{}{}",
            q.index,
            ms(q.ttft_ms),
            ms(q.e2e_ms),
            q.trace_id.as_deref().map(|t| format!(" · trace {t}")).unwrap_or_default(),
            q.response_id.as_deref().map(|id| format!(" · id {id}")).unwrap_or_default(),
        );
    }
}

#[cfg(test)]
mod tests {
    use triage_core::endpoint::Api;
    use triage_core::probe::{ProbeReport, RequestRecord, RunConfig};

    fn record(index: usize, ttft_ms: Option<f64>, trace: Option<&str>) -> RequestRecord {
        let mut r = RequestRecord::new(index, 0, 0, Some(200), None, None);
        r.ttft_ms = ttft_ms;
        r.e2e_ms = ttft_ms.map(|t| t + 100.0);
        r.trace_id = trace.map(str::to_owned);
        r
    }

    fn report(requests: Vec<RequestRecord>) -> ProbeReport {
        let config = RunConfig {
            api: Api::Openai,
            model: "m".into(),
            requests: requests.len(),
            concurrency: 1,
            rate_per_s: None,
            timeout_ms: 1_000,
            max_tokens: 8,
            prompt_chars: 2,
            arrival: None,
            seed: None,
        };
        ProbeReport::new("http://h/v1/chat/completions".into(), config, vec![], 10.0, requests)
    }

    #[test]
    fn lists_the_slowest_first_with_their_trace_ids() {
        let t = "4bf92f3577b34da6a3ce929d0e0e4736";
        let mut requests: Vec<RequestRecord> = (0..8).map(|i| record(i, Some(i as f64), None)).collect();
        requests[3] = record(3, Some(3200.0), Some(t));
        requests.push(record(8, None, Some("0af7651916cd43dd8448eb211c80319c")));
        let mut out = String::new();
        super::write(&mut out, &report(requests));
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[1].contains("tracing backend"), "{out}");
        assert_eq!(lines[2], format!("  #3 TTFT 3200.0 ms · E2E 3300.0 ms · trace {t}"));
        assert!(lines[3].starts_with("  #7 TTFT 7.0 ms"), "{out}");
        assert_eq!(lines.len(), 2 + super::LISTED, "{out}");
        assert!(!out.contains("0af76519"), "no TTFT, not listed: {out}");
    }

    #[test]
    fn says_nothing_without_a_first_token() {
        let mut out = String::new();
        super::write(&mut out, &report(vec![record(0, None, None)]));
        assert_eq!(out, "");
    }
}
