//! How a probe request failed, in words an on-call engineer can act on.
//!
//! Hosts map their transport errors onto [`FaultKind`] (the CLI from reqwest/io errors, the
//! browser from `fetch` rejections); everything decided from bytes — HTTP status, an HTML page
//! where SSE was expected, an error event, a stream that stopped early — is decided here, so
//! every surface says the same thing about the same failure.

use crate::timing::RequestTiming;
use serde::{Deserialize, Serialize};

/// The class of a failed request. Serialised in snake_case: part of `triage.probe/v1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FaultKind {
    InvalidUrl,
    ConnectionRefused,
    Dns,
    Tls,
    /// Another failure to connect.
    Connect,
    /// The server closed the connection before sending a response.
    ConnectionClosed,
    TimeoutBeforeHeaders,
    TimeoutBeforeFirstToken,
    /// The stream stalled after tokens had started and the deadline passed.
    TimeoutMidStream,
    /// The connection was reset (or broke) while the body was streaming.
    ResetMidStream,
    Unauthorized,
    Forbidden,
    NotFound,
    RateLimited,
    ClientError,
    ServerError,
    HtmlInsteadOfSse,
    /// A 2xx response that is not an event stream (e.g. a non-streaming JSON body).
    NotSse,
    StreamErrorEvent,
    /// The body ended without a finish reason or a terminal event (`[DONE]`, `message_stop`).
    IncompleteStream,
    /// Browser only: the response was hidden by the same-origin policy.
    Cors,
    Other,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::InvalidUrl => "invalid_url",
            FaultKind::ConnectionRefused => "connection_refused",
            FaultKind::Dns => "dns",
            FaultKind::Tls => "tls",
            FaultKind::Connect => "connect",
            FaultKind::ConnectionClosed => "connection_closed",
            FaultKind::TimeoutBeforeHeaders => "timeout_before_headers",
            FaultKind::TimeoutBeforeFirstToken => "timeout_before_first_token",
            FaultKind::TimeoutMidStream => "timeout_mid_stream",
            FaultKind::ResetMidStream => "reset_mid_stream",
            FaultKind::Unauthorized => "unauthorized",
            FaultKind::Forbidden => "forbidden",
            FaultKind::NotFound => "not_found",
            FaultKind::RateLimited => "rate_limited",
            FaultKind::ClientError => "client_error",
            FaultKind::ServerError => "server_error",
            FaultKind::HtmlInsteadOfSse => "html_instead_of_sse",
            FaultKind::NotSse => "not_sse",
            FaultKind::StreamErrorEvent => "stream_error_event",
            FaultKind::IncompleteStream => "incomplete_stream",
            FaultKind::Cors => "cors",
            FaultKind::Other => "other",
        }
    }
}

/// A classified failure: `{"kind", "message"}` in `triage.probe/v1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

impl Fault {
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Fault {
        Fault { kind, message: message.into() }
    }
}

/// Up to `max` characters of `s` on one line, for quoting a response body in a message.
pub fn excerpt(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

fn html_title(body: &str) -> Option<&str> {
    let lower = body.to_ascii_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = lower[start..].find("</title>")? + start;
    Some(body[start..end].trim())
}

/// Does this body look like a web page?
pub fn looks_like_html(content_type: &str, body_prefix: &str) -> bool {
    let head = body_prefix.trim_start().get(..15).unwrap_or(body_prefix.trim_start()).to_ascii_lowercase();
    content_type.to_ascii_lowercase().contains("text/html")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html")
}

/// A response whose status is not 2xx. `body` is what could be read of it (a prefix is fine),
/// `retry_after` the header's raw value.
pub fn from_status(status: u16, url: &str, body: &str, retry_after: Option<&str>) -> Fault {
    let said = if body.trim().is_empty() {
        String::new()
    } else {
        format!("; the server said: {}", excerpt(body, 200))
    };
    let said = if body.to_ascii_lowercase().contains("<html") {
        match html_title(body) {
            Some(t) => format!("; the server sent an HTML page titled {t:?}"),
            None => "; the server sent an HTML page".to_owned(),
        }
    } else {
        said
    };
    match status {
        401 => Fault::new(
            FaultKind::Unauthorized,
            format!(
                "HTTP 401 from {url}: the key was rejected — check that it is set, belongs to this provider, and has not expired{said}"
            ),
        ),
        403 => Fault::new(
            FaultKind::Forbidden,
            format!(
                "HTTP 403 from {url}: the key is valid but not allowed here (model access, region, or IP allow-list){said}"
            ),
        ),
        404 => Fault::new(
            FaultKind::NotFound,
            format!(
                "HTTP 404 from {url}: no API at this path — the base URL may point at a web site instead of the API base \
                 (e.g. https://host/v1), or carry tracking parameters; clients often report this as \"model unavailable\"{said}"
            ),
        ),
        429 => {
            let retry = match retry_after {
                Some(r) => format!(" (retry-after: {r} s)"),
                None => " (no retry-after header)".to_owned(),
            };
            Fault::new(
                FaultKind::RateLimited,
                format!(
                    "HTTP 429 from {url}: rate limited{retry} — count these as failures; retries hide them{said}"
                ),
            )
        }
        500..=599 => Fault::new(
            FaultKind::ServerError,
            format!("HTTP {status} from {url}: the server or a gateway in front of it failed{said}"),
        ),
        _ => Fault::new(FaultKind::ClientError, format!("HTTP {status} from {url}{said}")),
    }
}

/// Judge a 2xx response after its body ended: `None` when it is a complete stream.
pub fn judge_stream(content_type: &str, url: &str, t: &RequestTiming) -> Option<Fault> {
    if looks_like_html(content_type, &t.body_prefix) {
        let title = html_title(&t.body_prefix).map(|t| format!(" titled {t:?}")).unwrap_or_default();
        return Some(Fault::new(
            FaultKind::HtmlInsteadOfSse,
            format!(
                "{url} answered with an HTML page{title} where an SSE stream was expected: the URL is a web page, \
                 not the API endpoint — use the API base URL from the provider's docs"
            ),
        ));
    }
    if let Some(e) = &t.stream_error {
        return Some(Fault::new(
            FaultKind::StreamErrorEvent,
            format!("the stream carried an error event: {e}"),
        ));
    }
    if t.events == 0 {
        let ct = if content_type.is_empty() { "no content-type" } else { content_type };
        return Some(Fault::new(
            FaultKind::NotSse,
            format!(
                "{url} answered 2xx with {ct} and no SSE events (is streaming disabled, or is this not a chat endpoint?); body: {}",
                excerpt(&t.body_prefix, 160)
            ),
        ));
    }
    if !t.completed() {
        let tokens = t.token_times_ns.len();
        return Some(Fault::new(
            FaultKind::IncompleteStream,
            format!(
                "the stream ended after {tokens} token events without a finish reason or terminal event{}",
                if t.truncated_event { " (the last event was cut off mid-way)" } else { "" }
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::{StreamTimer, TimerConfig};

    #[test]
    fn statuses() {
        assert_eq!(from_status(401, "u", "", None).kind, FaultKind::Unauthorized);
        let f = from_status(404, "http://h/x", "<html><title>Home</title></html>", None);
        assert_eq!(f.kind, FaultKind::NotFound);
        assert!(f.message.contains("tracking parameters") && f.message.contains("\"Home\""), "{}", f.message);
        let f = from_status(429, "u", "{\"error\":\"slow down\"}", Some("20"));
        assert!(f.message.contains("retry-after: 20 s"), "{}", f.message);
        assert_eq!(from_status(503, "u", "", None).kind, FaultKind::ServerError);
        assert_eq!(from_status(422, "u", "", None).kind, FaultKind::ClientError);
    }

    #[test]
    fn stream_judgements() {
        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(b"<!DOCTYPE html><html><head><title>Acme AI</title>", 1);
        let f = judge_stream("text/html", "u", &t.finish(2)).unwrap();
        assert_eq!(f.kind, FaultKind::HtmlInsteadOfSse);
        assert!(f.message.contains("Acme AI"));

        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(br#"{"choices":[{"message":{"content":"hi"}}]}"#, 1);
        assert_eq!(judge_stream("application/json", "u", &t.finish(2)).unwrap().kind, FaultKind::NotSse);

        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", 1);
        assert_eq!(
            judge_stream("text/event-stream", "u", &t.finish(2)).unwrap().kind,
            FaultKind::IncompleteStream
        );

        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n", 1);
        assert_eq!(judge_stream("text/event-stream", "u", &t.finish(2)), None);

        let mut t = StreamTimer::new(0, TimerConfig::default());
        t.feed(b"data: {\"error\":{\"message\":\"engine dead\"}}\n\n", 1);
        assert_eq!(
            judge_stream("text/event-stream", "u", &t.finish(2)).unwrap().kind,
            FaultKind::StreamErrorEvent
        );
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        assert_eq!(excerpt("a\n  b", 10), "a b");
        assert_eq!(excerpt("ééééé", 2), "éé…");
    }
}
