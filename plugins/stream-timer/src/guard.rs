//! The optional stream guard (off by default): a maximum duration for requests on a matched
//! route and a maximum idle gap for their streams. A stream that breaches either is reset by the
//! root context on its next tick — the article's `guarded_generate` (hard timeout + abort so the
//! engine frees the request's KV cache), at the gateway.
//!
//! Pure bookkeeping; the wasm glue calls the host. Resets are issued from `proxy_on_tick` only,
//! never from inside a stream's own callback: a reset there can make the host re-enter the
//! filter for the same stream (Envoy destroys the stream synchronously), which the SDK's
//! dispatcher cannot take. A breach seen when a chunk arrives is marked and reset on the next
//! tick, at most `tick_ms` later.
//!
//! Memory: one small entry per open guarded request, removed when the request ends.

use crate::config::GuardSettings;
use crate::timer::Breach;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    route: usize,
    start_ns: u64,
    /// Last token (or first byte) instant; `None` until the body starts.
    last_activity_ns: Option<u64>,
    /// Response headers went downstream: a local response is no longer possible.
    headers_sent: bool,
    breach: Option<Breach>,
    reset: Reset,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reset {
    NotYet,
    Issued,
    /// The host refused the reset: not retried, and the stream is not reported as reset.
    Refused,
}

/// What the root context must do for one stream on this tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub context_id: u32,
    /// The route index the request matched (for the `guard_resets_total` label).
    pub route: usize,
    pub breach: Breach,
    /// No response headers yet: answer with a local 504 instead of resetting.
    pub before_headers: bool,
}

/// Open guarded requests by context id.
#[derive(Clone, Debug)]
pub struct Guard {
    settings: GuardSettings,
    entries: HashMap<u32, Entry>,
}

impl Guard {
    pub fn new(settings: GuardSettings) -> Guard {
        Guard { settings, entries: HashMap::new() }
    }

    pub fn settings(&self) -> GuardSettings {
        self.settings
    }

    pub fn open(&self) -> usize {
        self.entries.len()
    }

    pub fn register(&mut self, context_id: u32, route: usize, now_ns: u64) {
        self.entries.insert(
            context_id,
            Entry {
                route,
                start_ns: now_ns,
                last_activity_ns: None,
                headers_sent: false,
                breach: None,
                reset: Reset::NotYet,
            },
        );
    }

    pub fn headers_sent(&mut self, context_id: u32) {
        if let Some(e) = self.entries.get_mut(&context_id) {
            e.headers_sent = true;
        }
    }

    /// The stream's last activity (token or first byte) moved to `at_ns`.
    pub fn activity(&mut self, context_id: u32, at_ns: Option<u64>) {
        if let Some(e) = self.entries.get_mut(&context_id) {
            e.last_activity_ns = at_ns.or(e.last_activity_ns);
        }
    }

    fn breach_of(settings: GuardSettings, e: &Entry, now_ns: u64) -> Option<Breach> {
        if settings.max_duration_ns.is_some_and(|d| now_ns.saturating_sub(e.start_ns) > d) {
            return Some(Breach::MaxDuration);
        }
        match (settings.max_idle_ns, e.last_activity_ns) {
            (Some(i), Some(last)) if now_ns.saturating_sub(last) > i => Some(Breach::MaxIdle),
            _ => None,
        }
    }

    /// Check one stream now (a chunk arrived); marks and returns a new breach.
    pub fn check(&mut self, context_id: u32, now_ns: u64) -> Option<Breach> {
        let settings = self.settings;
        let e = self.entries.get_mut(&context_id)?;
        if e.breach.is_some() {
            return None;
        }
        e.breach = Self::breach_of(settings, e, now_ns);
        e.breach
    }

    /// The breach recorded for a stream, if the guard acted on it or will.
    pub fn breach(&self, context_id: u32) -> Option<Breach> {
        self.entries.get(&context_id).and_then(|e| e.breach)
    }

    /// The breach the guard has already reset this stream for.
    pub fn reset_issued(&self, context_id: u32) -> Option<Breach> {
        self.entries.get(&context_id).filter(|e| e.reset == Reset::Issued).and_then(|e| e.breach)
    }

    /// The host refused to reset the stream `due` returned.
    pub fn reset_refused(&mut self, context_id: u32) {
        if let Some(e) = self.entries.get_mut(&context_id) {
            e.reset = Reset::Refused;
        }
    }

    /// The streams to reset on this tick (each once), in context-id order.
    pub fn due(&mut self, now_ns: u64) -> Vec<Due> {
        let settings = self.settings;
        let mut out = Vec::new();
        for (&id, e) in &mut self.entries {
            if e.reset != Reset::NotYet {
                continue;
            }
            if e.breach.is_none() {
                e.breach = Self::breach_of(settings, e, now_ns);
            }
            if let Some(breach) = e.breach {
                e.reset = Reset::Issued;
                out.push(Due { context_id: id, route: e.route, breach, before_headers: !e.headers_sent });
            }
        }
        out.sort_unstable_by_key(|d| d.context_id);
        out
    }

    pub fn remove(&mut self, context_id: u32) {
        self.entries.remove(&context_id);
        if self.entries.is_empty() && self.entries.capacity() > 1024 {
            self.entries.shrink_to(64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn duration_and_idle() {
        let mut g = Guard::new(GuardSettings {
            max_duration_ns: Some(1_000 * MS),
            max_idle_ns: Some(100 * MS),
            tick_ms: 10,
        });
        g.register(2, 0, 0);
        g.register(3, 1, 0);
        g.register(4, 1, 0);
        assert!(g.due(50 * MS).is_empty());
        // No body yet: idle does not apply, only the duration.
        assert!(g.due(500 * MS).is_empty());
        g.activity(3, Some(400 * MS));
        g.headers_sent(3);
        g.activity(4, Some(450 * MS));
        g.headers_sent(4);
        assert_eq!(g.check(4, 520 * MS), None);
        assert_eq!(
            g.due(520 * MS),
            vec![Due { context_id: 3, route: 1, breach: Breach::MaxIdle, before_headers: false }]
        );
        assert_eq!(g.check(4, 560 * MS), Some(Breach::MaxIdle));
        assert_eq!(g.reset_issued(4), None, "marked, not reset yet");
        assert_eq!(g.reset_issued(3), Some(Breach::MaxIdle));
        assert_eq!(g.check(4, 570 * MS), None, "reported once");
        assert_eq!(
            g.due(600 * MS),
            vec![Due { context_id: 4, route: 1, breach: Breach::MaxIdle, before_headers: false }]
        );
        assert_eq!(
            g.due(1_001 * MS),
            vec![Due { context_id: 2, route: 0, breach: Breach::MaxDuration, before_headers: true }]
        );
        assert!(g.due(5_000 * MS).is_empty(), "each stream once");
        g.reset_refused(4);
        assert_eq!(g.reset_issued(4), None);
        assert_eq!(g.breach(2), Some(Breach::MaxDuration));
        g.remove(2);
        g.remove(3);
        g.remove(4);
        assert_eq!(g.open(), 0);
        assert_eq!(g.breach(2), None);
    }
}
