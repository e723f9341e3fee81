//! HTTP/1.1 pieces shared by the scripted server and the live simulator: reading one request,
//! chunked writes, CORS headers, and the SSE event texts of both wire dialects.
//!
//! Hand-written (see `scripted.rs` for why); bounded: a head of at most 64 KiB, a body of at
//! most 8 MiB.

use std::io;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use triage_core::endpoint::Api;

pub(crate) struct Request {
    /// When the first byte of this request arrived (or, for a pipelined request already
    /// buffered, when reading it began): the server's closest view of "request sent".
    pub first_byte: std::time::Instant,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

pub(crate) async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Request>> {
    let mut first_byte = (!buf.is_empty()).then(std::time::Instant::now);
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request head too large"));
        }
        let mut tmp = [0u8; 8192];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        first_byte.get_or_insert_with(std::time::Instant::now);
        buf.extend_from_slice(&tmp[..n]);
        if !buf[0].is_ascii_uppercase() {
            // Not HTTP at all (a TLS ClientHello starts with 0x16): answer like real servers do.
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not an HTTP request"));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
        .min(MAX_BODY_BYTES);
    let body_start = head_end + 4;
    while buf.len() < body_start + len {
        let mut tmp = [0u8; 8192];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = String::from_utf8_lossy(&buf[body_start..body_start + len]).into_owned();
    buf.drain(..body_start + len);
    let first_byte = first_byte.unwrap_or_else(std::time::Instant::now);
    Ok(Some(Request { first_byte, method, path, headers, body }))
}

pub(crate) const CORS: &str = "access-control-allow-origin: *\r\naccess-control-allow-headers: *\r\naccess-control-allow-methods: POST, GET, OPTIONS\r\naccess-control-expose-headers: *\r\ntiming-allow-origin: *\r\n";

pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(stream: &mut W, data: &[u8]) -> io::Result<()> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    stream.write_all(&out).await?;
    stream.flush().await
}

pub(crate) fn reason(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// The event texts of one response, in the dialect's exact shapes.
pub(crate) struct Events<'a> {
    pub api: Api,
    pub id: &'a str,
    pub reasoning: usize,
    pub model: &'a str,
    pub prompt_tokens: usize,
}

impl Events<'_> {
    fn openai_chunk(&self, delta: &str, finish: &str) -> String {
        format!(
            "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":1764460800,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n",
            self.id, self.model
        )
    }

    pub(crate) fn preamble(&self) -> String {
        match self.api {
            Api::Openai => self.openai_chunk(r#"{"role":"assistant","content":""}"#, "null"),
            Api::Anthropic => {
                let block = if self.reasoning > 0 {
                    r#"{"type":"thinking","thinking":""}"#
                } else {
                    r#"{"type":"text","text":""}"#
                };
                format!(
                    "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"{}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"{}\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\"output_tokens\":1}}}}}}\n\nevent: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{block}}}\n\nevent: ping\ndata: {{\"type\": \"ping\"}}\n\n",
                    self.id, self.model, self.prompt_tokens
                )
            }
        }
    }

    pub(crate) fn token(&self, i: usize) -> String {
        let reasoning = i < self.reasoning;
        match self.api {
            Api::Openai if reasoning => {
                self.openai_chunk(&format!(r#"{{"reasoning_content":"think{i} "}}"#), "null")
            }
            Api::Openai => self.openai_chunk(&format!(r#"{{"content":"tok{i} "}}"#), "null"),
            Api::Anthropic => {
                let mut s = String::new();
                if i == self.reasoning && self.reasoning > 0 {
                    s.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
                }
                let (index, delta) = if reasoning {
                    (0, format!(r#"{{"type":"thinking_delta","thinking":"think{i} "}}"#))
                } else {
                    (usize::from(self.reasoning > 0), format!(r#"{{"type":"text_delta","text":"tok{i} "}}"#))
                };
                s.push_str(&format!(
                    "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{delta}}}\n\n"
                ));
                s
            }
        }
    }

    /// The end of a stream that stopped by itself (`length`: it reached max_tokens).
    pub(crate) fn ending(&self, tokens: usize, usage: bool) -> String {
        self.ending_with(tokens, usage, false)
    }

    pub(crate) fn ending_with(&self, tokens: usize, usage: bool, length: bool) -> String {
        match self.api {
            Api::Openai => {
                let mut s = self.openai_chunk("{}", if length { "\"length\"" } else { "\"stop\"" });
                if usage {
                    s.push_str(&format!(
                        "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":1764460800,\"model\":\"{}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}\n\n",
                        self.id,
                        self.model,
                        self.prompt_tokens,
                        tokens + self.prompt_tokens
                    ));
                }
                s.push_str("data: [DONE]\n\n");
                s
            }
            Api::Anthropic => format!(
                "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{}}}\n\nevent: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{}\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{tokens}}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
                usize::from(self.reasoning > 0),
                if length { "max_tokens" } else { "end_turn" }
            ),
        }
    }

    pub(crate) fn error(&self) -> String {
        match self.api {
            Api::Openai => "data: {\"error\":{\"message\":\"scripted failure: engine died\",\"type\":\"server_error\",\"code\":null}}\n\n".to_owned(),
            Api::Anthropic => "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
        }
    }

    /// A server error mid-stream with this message, as vLLM's OpenAI server and Anthropic's API
    /// send it (then the stream ends).
    pub(crate) fn server_error(&self, message: &str) -> String {
        let msg = serde_json::to_string(message).unwrap_or_else(|_| "\"error\"".to_owned());
        match self.api {
            Api::Openai => format!(
                "data: {{\"error\":{{\"object\":\"error\",\"message\":{msg},\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}}}\n\ndata: [DONE]\n\n"
            ),
            Api::Anthropic => {
                format!(
                    "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":{msg}}}}}\n\n"
                )
            }
        }
    }
}
