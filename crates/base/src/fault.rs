//! How a probe request failed, in words an on-call engineer can act on.
//!
//! Hosts map their transport errors onto [`FaultKind`] (the CLI from reqwest/io errors, the
//! browser from `fetch` rejections); everything decided from bytes — HTTP status, an HTML page
//! where SSE was expected, an error event, a stream that stopped early — is decided here, so
//! every surface says the same thing about the same failure.

use crate::lang::Lang;
use crate::timing::RequestTiming;
use serde::{Deserialize, Serialize};

/// The class of a failed request. Serialised in snake_case: part of `triage.probe/v1`.
///
/// Not `#[non_exhaustive]`: the crates that map every kind to something (the watch's state and
/// verdict) match it exhaustively, so a new kind cannot be added without deciding it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The URL cannot be probed ([`crate::endpoint::EndpointError`]).
    InvalidUrl,
    /// Nothing listens on the port.
    ConnectionRefused,
    /// The host name did not resolve.
    Dns,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// Another failure to connect.
    Connect,
    /// The server closed the connection before sending a response.
    ConnectionClosed,
    /// The deadline passed before the response status and headers arrived.
    TimeoutBeforeHeaders,
    /// Headers arrived but no token did before the deadline.
    TimeoutBeforeFirstToken,
    /// The stream stalled after tokens had started and the deadline passed.
    TimeoutMidStream,
    /// The connection was reset (or broke) while the body was streaming.
    ResetMidStream,
    /// HTTP 401: the key is missing or wrong.
    Unauthorized,
    /// HTTP 403: the key may not use this model or route.
    Forbidden,
    /// HTTP 404: wrong path or unknown model.
    NotFound,
    /// HTTP 429: rate limited (see `retry_after`).
    RateLimited,
    /// Another HTTP 4xx.
    ClientError,
    /// HTTP 5xx.
    ServerError,
    /// An HTML page came where an event stream was expected (a web page, a gateway's error page).
    HtmlInsteadOfSse,
    /// A 2xx response that is not an event stream (e.g. a non-streaming JSON body).
    NotSse,
    /// The stream reported an error event (`event: error`, `{"error": …}`, `response.failed`).
    StreamErrorEvent,
    /// The body ended without a finish reason or a terminal event (`[DONE]`, `message_stop`).
    IncompleteStream,
    /// Browser only: the response was hidden by the same-origin policy.
    Cors,
    /// A 3xx answer. The probe follows no redirect: it would carry the key and headers to
    /// another URL, and 301/302/303 turn the POST into a GET.
    Redirect,
    /// A 2xx stream that ended without a single token event.
    NoTokens,
    /// The body came compressed (`Content-Encoding`) although the probe asked for `identity`.
    CompressedBody,
    /// Anything else the host could not classify.
    Other,
}

impl FaultKind {
    /// The serialised name (`connection_refused`, …), as in `triage.probe/v1`.
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
            FaultKind::Redirect => "redirect",
            FaultKind::NoTokens => "no_tokens",
            FaultKind::CompressedBody => "compressed_body",
            FaultKind::Other => "other",
        }
    }
}

/// A classified failure: `{"kind", "message"}` in `triage.probe/v1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// What kind of failure it is.
    pub kind: FaultKind,
    /// What happened, in words an on-call engineer can act on (the status, a quoted body).
    pub message: String,
}

impl Fault {
    /// A fault of `kind` saying `message`.
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Fault {
        Fault { kind, message: message.into() }
    }
}

/// Up to `max` characters of `s` on one line, for quoting a response body in a message:
/// credential-shaped words redacted first, then cut ([`crate::safe`]). Callers that know the
/// run's exact secrets redact them before (`Secrets::redact`).
pub fn excerpt(s: &str, max: usize) -> String {
    crate::safe::Secrets::new().excerpt(s, max)
}

/// A 3xx answer, which the probe does not follow. `location` is the `Location` header (already
/// redacted by the caller), when there was one.
/// `status` 0 means the status is hidden (a browser's `opaqueredirect`).
pub fn from_redirect(status: u16, url: &str, location: Option<&str>, lang: Lang) -> Fault {
    let to = location.map(|l| excerpt(l, 300));
    let status = if status == 0 { "3xx".to_owned() } else { status.to_string() };
    Fault::new(
        FaultKind::Redirect,
        match to {
            Some(to) => lang.pick(
                format!(
                    "HTTP {status} from {url}: redirected to {to} — the probe follows no redirect (it would carry the key and headers there, and {status} turns a POST into a GET); if you trust that URL, probe it directly"
                ),
                format!(
                    "{url} 返回 HTTP {status}：重定向到 {to}——探测不跟随重定向（那会把 key 和请求头带过去， 而且 {status} 会把 POST 变成 GET）；如果信任那个地址，请直接探测它"
                ),
            ),
            None => lang.pick(
                format!("HTTP {status} from {url}: a redirect without a Location header — the probe follows no redirect"),
                format!("{url} 返回 HTTP {status}：没有 Location 头的重定向——探测不跟随重定向"),
            ),
        },
    )
}

/// The body came with a `Content-Encoding` other than `identity`.
pub fn compressed(encoding: &str, url: &str, lang: Lang) -> Fault {
    let e = excerpt(encoding, 40);
    Fault::new(
        FaultKind::CompressedBody,
        lang.pick(
            format!(
                "{url} sent the stream compressed (Content-Encoding: {e}) although the probe asked for identity: a proxy compressing text/event-stream also buffers it, so token times would be the compressor's — turn compression off for event streams"
            ),
            format!(
                "{url} 返回了压缩过的流（Content-Encoding: {e}），而探测请求的是 identity： 对 text/event-stream 做压缩的代理也会缓冲它，token 时间就成了压缩器的时间——请对事件流关闭压缩"
            ),
        ),
    )
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
    from_status_in(status, url, body, retry_after, Lang::En)
}

/// [`from_status`] with the message written in `lang` (the kind is the same).
pub fn from_status_in(status: u16, url: &str, body: &str, retry_after: Option<&str>, lang: Lang) -> Fault {
    let said = if body.trim().is_empty() {
        String::new()
    } else {
        let e = excerpt(body, 200);
        lang.pick(format!("; the server said: {e}"), format!("；服务端返回：{e}"))
    };
    let said = if body.to_ascii_lowercase().contains("<html") {
        match html_title(body) {
            Some(t) => lang.pick(
                format!("; the server sent an HTML page titled {t:?}"),
                format!("；服务端返回了一个 HTML 页面，标题为 {t:?}"),
            ),
            None => lang.pick("; the server sent an HTML page", "；服务端返回了一个 HTML 页面").to_owned(),
        }
    } else {
        said
    };
    let msg = |en: String, zh: String| lang.pick(en, zh);
    match status {
        401 => Fault::new(
            FaultKind::Unauthorized,
            msg(
                format!(
                    "HTTP 401 from {url}: the key was rejected — check that it is set, belongs to this provider, and has not expired{said}"
                ),
                format!(
                    "{url} 返回 HTTP 401：key 被拒绝——检查 key 是否已设置、是否属于这家服务商、是否已过期{said}"
                ),
            ),
        ),
        403 => Fault::new(
            FaultKind::Forbidden,
            msg(
                format!(
                    "HTTP 403 from {url}: the key is valid but not allowed here (model access, region, or IP allow-list){said}"
                ),
                format!("{url} 返回 HTTP 403：key 有效，但无权访问这里（模型权限、地域或 IP 白名单）{said}"),
            ),
        ),
        404 => Fault::new(
            FaultKind::NotFound,
            msg(
                format!(
                    "HTTP 404 from {url}: no API at this path — the base URL may point at a web site instead of the API base \
                     (e.g. https://host/v1), or carry tracking parameters; clients often report this as \"model unavailable\"{said}"
                ),
                format!(
                    "{url} 返回 HTTP 404：这个路径下没有 API——base URL 可能指向的是网站而不是 API 基础地址\
                     （例如 https://host/v1），或者带了跟踪参数；客户端常把它报成 \"model unavailable\"（模型不可用）{said}"
                ),
            ),
        ),
        429 => {
            let retry = match retry_after {
                Some(r) => lang.pick(format!(" (retry-after: {r} s)"), format!("（retry-after：{r} s）")),
                None => lang.pick(" (no retry-after header)", "（没有 retry-after 头）").to_owned(),
            };
            Fault::new(
                FaultKind::RateLimited,
                msg(
                    format!(
                        "HTTP 429 from {url}: rate limited{retry} — count these as failures; retries hide them{said}"
                    ),
                    format!("{url} 返回 HTTP 429：被限流{retry}——应计为失败；重试会把它们掩盖掉{said}"),
                ),
            )
        }
        500..=599 => Fault::new(
            FaultKind::ServerError,
            msg(
                format!("HTTP {status} from {url}: the server or a gateway in front of it failed{said}"),
                format!("{url} 返回 HTTP {status}：服务端或其前面的网关出错{said}"),
            ),
        ),
        _ => Fault::new(
            FaultKind::ClientError,
            msg(format!("HTTP {status} from {url}{said}"), format!("{url} 返回 HTTP {status}{said}")),
        ),
    }
}

/// Judge a 2xx response after its body ended: `None` when it is a complete stream.
pub fn judge_stream(content_type: &str, url: &str, t: &RequestTiming) -> Option<Fault> {
    judge_stream_in(content_type, url, t, Lang::En)
}

/// [`judge_stream`] with the message written in `lang` (the kind is the same).
pub fn judge_stream_in(content_type: &str, url: &str, t: &RequestTiming, lang: Lang) -> Option<Fault> {
    if looks_like_html(content_type, &t.body_prefix) {
        let title = html_title(&t.body_prefix)
            .map(|t| lang.pick(format!(" titled {t:?}"), format!("（标题 {t:?}）")))
            .unwrap_or_default();
        return Some(Fault::new(
            FaultKind::HtmlInsteadOfSse,
            lang.pick(
                format!(
                    "{url} answered with an HTML page{title} where an SSE stream was expected: the URL is a web page, \
                     not the API endpoint — use the API base URL from the provider's docs"
                ),
                format!(
                    "{url} 返回了一个 HTML 页面{title}，而这里应是 SSE 流：这个 URL 是网页，不是 API 端点——\
                     请使用服务商文档中给出的 API base URL"
                ),
            ),
        ));
    }
    if let Some(e) = &t.stream_error {
        let e = excerpt(e, 300);
        return Some(Fault::new(
            FaultKind::StreamErrorEvent,
            lang.pick(format!("the stream carried an error event: {e}"), format!("流中出现了错误事件：{e}")),
        ));
    }
    if t.events == 0 {
        let ct = if content_type.is_empty() {
            lang.pick("no content-type", "没有 content-type")
        } else {
            content_type
        };
        let body = excerpt(&t.body_prefix, 160);
        return Some(Fault::new(
            FaultKind::NotSse,
            lang.pick(
                format!(
                    "{url} answered 2xx with {ct} and no SSE events (is streaming disabled, or is this not a chat endpoint?); body: {body}"
                ),
                format!(
                    "{url} 返回 2xx，{ct}，但没有任何 SSE 事件（是否关闭了流式输出，或者这不是 chat 端点？）；响应体：{body}"
                ),
            ),
        ));
    }
    if !t.completed() {
        let tokens = t.token_events();
        let cut = if t.truncated_event {
            lang.pick(" (the last event was cut off mid-way)", "（最后一个事件在中途被截断）")
        } else {
            ""
        };
        return Some(Fault::new(
            FaultKind::IncompleteStream,
            lang.pick(
                format!(
                    "the stream ended after {tokens} token events without a finish reason or terminal event{cut}"
                ),
                format!("流在 {tokens} 个 token 事件后结束，没有 finish reason，也没有终止事件{cut}"),
            ),
        ));
    }
    if t.token_events() == 0 {
        let cut = match t.cut_events {
            0 => String::new(),
            n => lang.pick(
                format!(" ({n} event(s) were cut at the size limit and could not be read)"),
                format!("（有 {n} 个事件超过大小上限被截断，无法读取）"),
            ),
        };
        return Some(Fault::new(
            FaultKind::NoTokens,
            lang.pick(
                format!(
                    "the stream ended without a single token event{cut}: the server answered but generated nothing (max_tokens 0, an empty completion, or a broken stream) — not a success"
                ),
                format!(
                    "流结束了，却没有任何 token 事件{cut}：服务端有应答但什么都没生成 （max_tokens 为 0、空补全，或流本身有问题）——不算成功"
                ),
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

    /// The runs of digits in `s`, sorted.
    fn numbers(s: &str) -> Vec<&str> {
        let mut v: Vec<&str> = s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).collect();
        v.sort_unstable();
        v
    }

    fn assert_same_fault_in_zh(en: &Fault, zh: &Fault, seen: &mut std::collections::BTreeSet<FaultKind>) {
        use crate::lang::has_cjk;
        assert_eq!(en.kind, zh.kind);
        assert!(!has_cjk(&en.message), "{}", en.message);
        assert!(has_cjk(&zh.message), "{}", zh.message);
        assert_ne!(en.message, zh.message);
        assert_eq!(numbers(&en.message), numbers(&zh.message), "\n{}\n{}", en.message, zh.message);
        seen.insert(zh.kind);
    }

    /// Every failure class decided here has a Chinese message with the same numbers and URL.
    #[test]
    fn every_fault_from_bytes_has_a_chinese_message() {
        let mut seen = std::collections::BTreeSet::new();
        let url = "https://api.example.com/v1/chat/completions";
        for (status, body, retry) in [
            (401, "", None),
            (403, "{\"error\":\"region 7\"}", None),
            (404, "<html><title>Home 2</title></html>", None),
            (404, "<html>no title</html>", None),
            (429, "", Some("20")),
            (429, "slow down", None),
            (503, "upstream 1 failed", None),
            (422, "bad field", None),
        ] {
            let en = from_status(status, url, body, retry);
            let zh = from_status_in(status, url, body, retry, Lang::Zh);
            assert_eq!(en, from_status_in(status, url, body, retry, Lang::En));
            assert!(zh.message.contains(url));
            assert_same_fault_in_zh(&en, &zh, &mut seen);
        }
        for (en, zh) in [
            (
                from_redirect(302, url, Some("https://evil.example/x?key=abc123"), Lang::En),
                from_redirect(302, url, Some("https://evil.example/x?key=abc123"), Lang::Zh),
            ),
            (from_redirect(307, url, None, Lang::En), from_redirect(307, url, None, Lang::Zh)),
            (compressed("gzip", url, Lang::En), compressed("gzip", url, Lang::Zh)),
        ] {
            assert!(!en.message.contains("abc123"), "{}", en.message);
            assert_same_fault_in_zh(&en, &zh, &mut seen);
        }
        let streams: [(&str, &[u8]); 7] = [
            ("text/html", b"<!DOCTYPE html><html><head><title>Acme AI 3</title>"),
            ("application/json", br#"{"choices":[{"message":{"content":"hi"}}]}"#),
            ("", b"x"),
            ("text/event-stream", b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"),
            ("text/event-stream", b"data: {\"error\":{\"message\":\"engine dead\"}}\n\n"),
            ("text/event-stream", b"data: [DONE]\n\n"),
            (
                "text/event-stream",
                b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
            ),
        ];
        for (ct, bytes) in streams {
            let mut t = StreamTimer::new(0, TimerConfig::default());
            t.feed(bytes, 1);
            let t = t.finish(2);
            let en = judge_stream(ct, url, &t).unwrap();
            assert_eq!(Some(en.clone()), judge_stream_in(ct, url, &t, Lang::En));
            assert_same_fault_in_zh(&en, &judge_stream_in(ct, url, &t, Lang::Zh).unwrap(), &mut seen);
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            [
                FaultKind::Unauthorized,
                FaultKind::Forbidden,
                FaultKind::NotFound,
                FaultKind::RateLimited,
                FaultKind::ClientError,
                FaultKind::ServerError,
                FaultKind::HtmlInsteadOfSse,
                FaultKind::NotSse,
                FaultKind::StreamErrorEvent,
                FaultKind::IncompleteStream,
                FaultKind::Redirect,
                FaultKind::NoTokens,
                FaultKind::CompressedBody,
            ]
        );
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        assert_eq!(excerpt("a\n  b", 10), "a b");
        assert_eq!(excerpt("ééééé", 2), "éé…");
    }
}
