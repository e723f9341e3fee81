//! HTTP/1.1 pieces shared by the scripted server and the live simulator: start-up and the
//! handle's accessors ([`Serving`]: bind 127.0.0.1, accept at most `max_connections` at once
//! until a deadline or a stop), the one bounded request reader ([`Conn`]), refusals, chunked
//! writes, CORS headers, and the SSE event texts of both wire dialects.
//!
//! Hand-written (see `scripted.rs` for why). Every read is bounded by [`Limits`]: a request head
//! of at most 64 KiB (else `431`), a body of at most 8 MiB, by `Content-Length` (a larger one is
//! answered `413` without reading it) or chunked (`413` as soon as it grows past the limit), the
//! whole request within 10 s of its first byte (else `408`), and 30 s of silence on an idle
//! connection closes it. What a client sends while its response is being written is read and
//! dropped, never kept, and the connection closes after that response. `Connection: close` (and
//! HTTP/1.0 without `keep-alive`) closes the connection after the response.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use triage_core::endpoint::Api;

/// What a client may send and how long it may take; what a server holds at once.
///
/// Both servers use [`Limits::default`]; tests shrink the timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Request line and headers, the blank line included. Larger: `431`, then close.
    pub max_head: usize,
    /// Request body, bytes. A larger `Content-Length` is answered `413` without reading the body;
    /// a chunked body is refused the same way once it grows past this.
    pub max_body: usize,
    /// The whole request (head and body) must arrive within this of its first byte, else `408`
    /// and close.
    pub request_timeout: Duration,
    /// A connection that sends no request for this long is closed quietly; so is one whose
    /// reader stalls one write of the response for this long.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog until one closes.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head: 64 * 1024,
            max_body: 8 * 1024 * 1024,
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }
}

/// A running server: where it listens and the switch that stops it. Dropping it stops the
/// server (connections in progress are aborted).
pub(crate) struct Serving {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl Serving {
    /// Bind 127.0.0.1:`port` (0: a free port) and accept connections on the current tokio
    /// runtime until `deadline` or [`Serving::shutdown`], at most `max_connections` at once,
    /// each handed to `serve`.
    pub async fn start<F, Fut>(
        port: u16,
        deadline: Instant,
        max_connections: usize,
        serve: F,
    ) -> io::Result<Serving>
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(accept_loop(listener, stopped, deadline, max_connections, serve));
        Ok(Serving { addr, stop })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1` — OpenAI clients append `/chat/completions`, Anthropic ones
    /// `/messages`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Changes to `true` when the server is told to stop (for the server's other tasks).
    pub fn stopped(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The state behind `m`, also after a connection task panicked while holding it: one panicking
/// connection must not take the whole server down with a poisoned lock.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn accept_loop<F, Fut>(
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
    deadline: Instant,
    max_connections: usize,
    serve: F,
) where
    F: Fn(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let lifetime = tokio::time::sleep_until(deadline.into());
    tokio::pin!(lifetime);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut lifetime => break,
            _ = stopped.changed() => break,
            accepted = listener.accept(), if conns.len() < max_connections => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors, most likely: wait instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                conns.spawn(serve(stream));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
}

pub(crate) struct Request {
    /// When the first byte of this request arrived (or, for a pipelined request already
    /// buffered, when reading it began): the server's closest view of "request sent".
    pub first_byte: Instant,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The connection may serve another request after this one: HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
    pub keep_alive: bool,
}

/// What [`Conn::next_request`] found.
pub(crate) enum Next {
    Request(Request),
    /// The client closed, or sent nothing for the idle timeout: close without a word.
    Closed,
    /// Refuse the request with this status ([`Conn::refuse`]): the connection cannot go on.
    Refuse(u16),
}

/// Why reading stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    Eof,
    Timeout,
    Status(u16),
}

/// One read asks for at most this much.
const READ_CHUNK: usize = 8 * 1024;
/// A chunk-size line (with extensions) longer than this is refused.
const MAX_CHUNK_LINE: usize = 1024;
/// After the last answer, unread input is drained (and dropped) for at most this long, so the
/// close is a FIN the client reads after the answer, not a reset that destroys it.
const LINGER: Duration = Duration::from_secs(1);

/// A client connection and the one request reader every server uses. Holds at most one
/// request (head ≤ `max_head`, body ≤ `max_body`) plus one read past it.
pub(crate) struct Conn {
    pub stream: TcpStream,
    /// Bytes read and not yet consumed: the request being read, then at most the start of a
    /// pipelined one.
    buf: Vec<u8>,
    limits: Limits,
}

impl Conn {
    pub fn new(stream: TcpStream, limits: Limits) -> Conn {
        Conn { stream, buf: Vec::new(), limits }
    }

    /// Read the next request, within the limits.
    pub async fn next_request(&mut self) -> Next {
        if self.buf.is_empty() {
            let idle = Instant::now() + self.limits.idle_timeout;
            if self.fill(READ_CHUNK, idle).await.is_err() {
                return Next::Closed;
            }
        }
        let first_byte = Instant::now();
        let deadline = first_byte + self.limits.request_timeout;
        match self.read_request(first_byte, deadline).await {
            Ok(r) => Next::Request(r),
            Err(Stop::Eof) => Next::Closed,
            Err(Stop::Timeout) => Next::Refuse(408),
            Err(Stop::Status(code)) => Next::Refuse(code),
        }
    }

    /// Read once, at most `max` bytes (≥ 1), before `deadline`.
    async fn fill(&mut self, max: usize, deadline: Instant) -> Result<(), Stop> {
        let mut tmp = [0u8; READ_CHUNK];
        let want = max.clamp(1, READ_CHUNK);
        match tokio::time::timeout_at(deadline.into(), self.stream.read(&mut tmp[..want])).await {
            Err(_) => Err(Stop::Timeout),
            Ok(Ok(0) | Err(_)) => Err(Stop::Eof),
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Ok(())
            }
        }
    }

    /// Read until `buf` holds at least `n` bytes, never reading past them.
    async fn need(&mut self, n: usize, deadline: Instant) -> Result<(), Stop> {
        while self.buf.len() < n {
            self.fill(n - self.buf.len(), deadline).await?;
        }
        Ok(())
    }

    /// Take one CRLF-terminated line of at most `max` bytes (without the CRLF) off `buf`.
    async fn line(&mut self, max: usize, deadline: Instant) -> Result<Vec<u8>, Stop> {
        let mut scanned = 0;
        loop {
            if let Some(i) = find(&self.buf[scanned..], b"\r\n") {
                let i = scanned + i;
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > max {
                return Err(Stop::Status(400));
            }
            scanned = self.buf.len().saturating_sub(1);
            self.fill(READ_CHUNK, deadline).await?;
        }
    }

    async fn read_request(&mut self, first_byte: Instant, deadline: Instant) -> Result<Request, Stop> {
        let max_head = self.limits.max_head;
        let mut scanned = 0;
        let head_end = loop {
            if !self.buf[0].is_ascii_uppercase() {
                // Not HTTP at all (a TLS ClientHello starts with 0x16): answer like real servers do.
                return Err(Stop::Status(400));
            }
            if let Some(i) = find(&self.buf[scanned..], b"\r\n\r\n") {
                break scanned + i;
            }
            if self.buf.len() >= max_head {
                return Err(Stop::Status(431));
            }
            scanned = self.buf.len().saturating_sub(3);
            self.fill(READ_CHUNK, deadline).await?;
        };
        if head_end + 4 > max_head {
            return Err(Stop::Status(431));
        }
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let (Some(method), Some(path), Some(version), None) =
            (first.next(), first.next(), first.next(), first.next())
        else {
            return Err(Stop::Status(400));
        };
        let mut keep_alive = match version {
            "HTTP/1.1" => true,
            "HTTP/1.0" => false,
            v if v.starts_with("HTTP/") => return Err(Stop::Status(505)),
            _ => return Err(Stop::Status(400)),
        };
        let mut headers = Vec::new();
        for line in lines {
            let Some((k, v)) = line.split_once(':') else { return Err(Stop::Status(400)) };
            if k.is_empty() || k.starts_with([' ', '\t']) {
                return Err(Stop::Status(400));
            }
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        for token in values(&headers, "connection") {
            if token.eq_ignore_ascii_case("close") {
                keep_alive = false;
                break;
            }
            if token.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        }
        let codings: Vec<&str> = values(&headers, "transfer-encoding").collect();
        let lengths: Vec<&str> = values(&headers, "content-length").collect();
        let body = if !codings.is_empty() {
            if codings.len() != 1 || !codings[0].eq_ignore_ascii_case("chunked") {
                return Err(Stop::Status(501));
            }
            // Both framings at once is how requests are smuggled: answer this one, then close.
            keep_alive &= lengths.is_empty();
            self.read_chunked(deadline).await?
        } else if let Some(first) = lengths.first() {
            if lengths.iter().any(|l| l != first) || !first.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Stop::Status(400));
            }
            // All digits: a parse failure is an overflow, a length past any limit.
            let len = first.parse::<usize>().unwrap_or(usize::MAX);
            if len > self.limits.max_body {
                return Err(Stop::Status(413));
            }
            self.need(len, deadline).await?;
            let rest = self.buf.split_off(len);
            std::mem::replace(&mut self.buf, rest)
        } else {
            Vec::new()
        };
        Ok(Request {
            first_byte,
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            keep_alive,
        })
    }

    /// A chunked body, at most `max_body` bytes decoded; trailers are read and dropped.
    async fn read_chunked(&mut self, deadline: Instant) -> Result<Vec<u8>, Stop> {
        let max = self.limits.max_body;
        let mut body = Vec::new();
        loop {
            let line = self.line(MAX_CHUNK_LINE, deadline).await?;
            let size = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
            if size.is_empty() || !size.iter().all(u8::is_ascii_hexdigit) {
                return Err(Stop::Status(400));
            }
            let size = std::str::from_utf8(size)
                .ok()
                .and_then(|s| usize::from_str_radix(s, 16).ok())
                .unwrap_or(usize::MAX);
            if size == 0 {
                break;
            }
            if size > max - body.len() {
                return Err(Stop::Status(413));
            }
            self.need(size + 2, deadline).await?;
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err(Stop::Status(400));
            }
            body.extend_from_slice(&self.buf[..size]);
            self.buf.drain(..size + 2);
        }
        let mut trailers = 0;
        loop {
            let line = self.line(self.limits.max_head, deadline).await?;
            if line.is_empty() {
                return Ok(body);
            }
            trailers += line.len() + 2;
            if trailers > self.limits.max_head {
                return Err(Stop::Status(431));
            }
        }
    }

    /// Answer `code` with an empty body and close.
    pub async fn refuse(self, code: u16) {
        let head = format!(
            "HTTP/1.1 {code} {}\r\ncontent-length: 0\r\nconnection: close\r\n{CORS}\r\n",
            reason(code)
        );
        let mut conn = self;
        let _ = tokio::time::timeout(LINGER, conn.stream.write_all(head.as_bytes())).await;
        conn.close().await;
    }

    /// Close after the last answer: FIN first, then unread input is drained and dropped for at
    /// most [`LINGER`], so the client reads the answer before the connection goes.
    pub async fn close(mut self) {
        let _ = self.stream.shutdown().await;
        let deadline = Instant::now() + LINGER;
        let mut scratch = [0u8; READ_CHUNK];
        while let Ok(Ok(1..)) = tokio::time::timeout_at(deadline.into(), self.stream.read(&mut scratch)).await
        {
        }
    }
}

/// While a response is being written: resolves when the client hangs up (end of stream or an
/// error). Whatever it sends meanwhile is read and dropped — a client must wait for its answer —
/// and `spoke` is set, so the server closes the connection after this response instead of
/// reading a next request out of what it dropped.
pub(crate) async fn hangup<R: AsyncRead + Unpin>(rd: &mut R, spoke: &mut bool) {
    let mut scratch = [0u8; READ_CHUNK];
    loop {
        match rd.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => *spoke = true,
        }
    }
}

/// The comma-separated values of every `name` header (names are lowercased).
fn values<'a>(headers: &'a [(String, String)], name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(k, _)| k == name)
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Write all of `data`, or fail if the client's reader stalls it past `limit`.
pub(crate) async fn send<W: AsyncWrite + Unpin>(
    stream: &mut W,
    data: &[u8],
    limit: Duration,
) -> io::Result<()> {
    match tokio::time::timeout(limit, async {
        stream.write_all(data).await?;
        stream.flush().await
    })
    .await
    {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")),
    }
}

pub(crate) const CORS: &str = "access-control-allow-origin: *\r\naccess-control-allow-headers: *\r\naccess-control-allow-methods: POST, GET, OPTIONS\r\naccess-control-expose-headers: *\r\ntiming-allow-origin: *\r\n";

pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(
    stream: &mut W,
    data: &[u8],
    limit: Duration,
) -> io::Result<()> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    send(stream, &out, limit).await
}

pub(crate) fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        // Anthropic's "overloaded" status; it has no registered phrase.
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// The `created` stamp of every OpenAI object the servers write (fixed: answers are
/// reproducible byte for byte).
const CREATED: u64 = 1_764_460_800;

/// The event texts of one response, in the dialect's exact shapes.
pub(crate) struct Events<'a> {
    pub api: Api,
    /// OpenAI's legacy completions (`/v1/completions`: `text_completion` objects) rather than
    /// chat completions. Ignored for Anthropic.
    pub legacy: bool,
    pub id: &'a str,
    pub reasoning: usize,
    pub model: &'a str,
    pub prompt_tokens: usize,
    /// Tokens each token event carries (at least 1).
    pub per_chunk: usize,
    /// OpenAI: every chunk carries the cumulative usage (vLLM's `continuous_usage_stats`).
    pub usage_per_chunk: bool,
}

impl Events<'_> {
    /// `chunk` with the cumulative usage after `generated` tokens, when every chunk carries one.
    fn with_usage(&self, chunk: String, generated: usize) -> String {
        if !self.usage_per_chunk || self.api != Api::Openai {
            return chunk;
        }
        let Some(head) = chunk.strip_suffix("}\n\n") else { return chunk };
        format!(
            "{head},\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{generated},\"total_tokens\":{}}}}}\n\n",
            self.prompt_tokens,
            self.prompt_tokens + generated
        )
    }

    fn openai_chunk(&self, delta: &str, finish: &str) -> String {
        format!(
            "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{CREATED},\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n",
            self.id, self.model
        )
    }

    /// One `text_completion` chunk as vLLM streams it; `text` is a JSON string.
    fn completion_chunk(&self, text: &str, finish: &str) -> String {
        format!(
            "data: {{\"id\":\"{}\",\"object\":\"text_completion\",\"created\":{CREATED},\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":{text},\"logprobs\":null,\"finish_reason\":{finish},\"stop_reason\":null}}]}}\n\n",
            self.id, self.model
        )
    }

    fn legacy(&self) -> bool {
        self.legacy && self.api == Api::Openai
    }

    /// What the stream starts with before its first token; empty for legacy completions, whose
    /// first chunk carries the first token.
    pub(crate) fn preamble(&self) -> String {
        match self.api {
            Api::Openai if self.legacy() => String::new(),
            Api::Openai => {
                self.with_usage(self.openai_chunk(r#"{"role":"assistant","content":""}"#, "null"), 0)
            }
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

    /// The `i`-th token event: `per_chunk` tokens (`tok{j} ` each; `think{j} ` while reasoning).
    pub(crate) fn token(&self, i: usize) -> String {
        let reasoning = i < self.reasoning;
        let k = self.per_chunk.max(1);
        let words = |w: &str| (i * k..(i + 1) * k).map(|j| format!("{w}{j} ")).collect::<String>();
        let (tok, think) = (words("tok"), words("think"));
        let generated = (i + 1) * k;
        match self.api {
            Api::Openai if self.legacy() => {
                self.with_usage(self.completion_chunk(&format!("\"{tok}\""), "null"), generated)
            }
            Api::Openai if reasoning => self.with_usage(
                self.openai_chunk(&format!(r#"{{"reasoning_content":"{think}"}}"#), "null"),
                generated,
            ),
            Api::Openai => {
                self.with_usage(self.openai_chunk(&format!(r#"{{"content":"{tok}"}}"#), "null"), generated)
            }
            Api::Anthropic => {
                let mut s = String::new();
                if i == self.reasoning && self.reasoning > 0 {
                    s.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
                }
                let (index, delta) = if reasoning {
                    (0, format!(r#"{{"type":"thinking_delta","thinking":"{think}"}}"#))
                } else {
                    (usize::from(self.reasoning > 0), format!(r#"{{"type":"text_delta","text":"{tok}"}}"#))
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
                let finish = if length { "\"length\"" } else { "\"stop\"" };
                let (mut s, object) = if self.legacy() {
                    (self.completion_chunk("\"\"", finish), "text_completion")
                } else {
                    (self.openai_chunk("{}", finish), "chat.completion.chunk")
                };
                if usage {
                    s.push_str(&format!(
                        "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{CREATED},\"model\":\"{}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}\n\n",
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

    /// The whole answer as one JSON body, for a request that did not ask to stream: what the
    /// stream would have carried, with `usage` (`length`: it reached max_tokens).
    pub(crate) fn whole(&self, tokens: usize, length: bool) -> String {
        use serde_json::json;
        let thinking: String = (0..tokens.min(self.reasoning)).map(|i| format!("think{i} ")).collect();
        let text: String = (self.reasoning.min(tokens)..tokens).map(|i| format!("tok{i} ")).collect();
        let (prompt, id, model) = (self.prompt_tokens, self.id, self.model);
        let usage = json!({"prompt_tokens": prompt, "total_tokens": prompt + tokens, "completion_tokens": tokens, "prompt_tokens_details": null});
        let finish = if length { "length" } else { "stop" };
        let body = match self.api {
            Api::Openai if self.legacy() => json!({
                "id": id, "object": "text_completion", "created": CREATED, "model": model,
                "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish,
                             "stop_reason": null, "prompt_logprobs": null}],
                "service_tier": null, "system_fingerprint": null, "usage": usage,
            }),
            Api::Openai => json!({
                "id": id, "object": "chat.completion", "created": CREATED, "model": model,
                "choices": [{"index": 0,
                             "message": {"role": "assistant", "content": text, "refusal": null,
                                         "annotations": null, "audio": null, "function_call": null,
                                         "tool_calls": [],
                                         "reasoning_content": if thinking.is_empty() { None } else { Some(thinking) }},
                             "logprobs": null, "finish_reason": finish, "stop_reason": null}],
                "service_tier": null, "system_fingerprint": null, "usage": usage, "prompt_logprobs": null,
            }),
            Api::Anthropic => {
                let mut content = Vec::new();
                if !thinking.is_empty() {
                    content.push(json!({"type": "thinking", "thinking": thinking, "signature": ""}));
                }
                content.push(json!({"type": "text", "text": text}));
                json!({
                    "id": id, "type": "message", "role": "assistant", "content": content, "model": model,
                    "stop_reason": if length { "max_tokens" } else { "end_turn" }, "stop_sequence": null,
                    "usage": {"input_tokens": prompt, "output_tokens": tokens},
                })
            }
        };
        body.to_string()
    }
}

/// An error answer's body in the API's own shape: vLLM's OpenAI `{"error": {message, type,
/// param, code}}`, or Anthropic's `{"type": "error", "error": {type, message}}` with the error
/// type the Anthropic SDKs dispatch on.
pub(crate) fn error_body(api: Api, code: u16, message: &str) -> String {
    let body = match api {
        Api::Openai => {
            let kind = match code {
                400 => "BadRequestError",
                404 => "NotFoundError",
                422 => "UnprocessableEntityError",
                500 => "InternalServerError",
                503 => "ServiceUnavailableError",
                _ => reason(code),
            };
            serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Api::Anthropic => {
            let kind = match code {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                503 | 529 => "overloaded_error",
                500.. => "api_error",
                _ => "invalid_request_error",
            };
            serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    body.to_string()
}

#[cfg(test)]
mod tests {
    //! The request reader against a real socket on 127.0.0.1: what it accepts, what it refuses,
    //! and that it never holds more than one bounded request.

    use super::*;
    use tokio::net::TcpListener;

    fn small() -> Limits {
        Limits {
            max_head: 1024,
            max_body: 100,
            request_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(200),
            max_connections: 4,
        }
    }

    /// A server-side `Conn` and the client's socket.
    async fn pair(limits: Limits) -> (Conn, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (Conn::new(server, limits), client)
    }

    /// Feed `bytes` from the client side in the background, ignoring a server that stops reading.
    fn push(mut client: TcpStream, bytes: Vec<u8>) -> tokio::task::JoinHandle<TcpStream> {
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(3), client.write_all(&bytes)).await;
            client
        })
    }

    fn run<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), f).await.expect("bounded in time") })
    }

    async fn read(limits: Limits, bytes: &[u8]) -> (Next, usize) {
        let (mut conn, client) = pair(limits).await;
        let _client = push(client, bytes.to_vec());
        let next = conn.next_request().await;
        (next, conn.buf.len())
    }

    fn status(next: &Next) -> Option<u16> {
        match next {
            Next::Refuse(code) => Some(*code),
            _ => None,
        }
    }

    #[test]
    fn a_content_length_past_the_limit_is_refused_without_reading_the_body() {
        run(async {
            let mut bytes =
                b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 104857600\r\n\r\n".to_vec();
            bytes.extend(std::iter::repeat_n(b'x', 1 << 20));
            let (next, held) = read(Limits::default(), &bytes).await;
            assert_eq!(status(&next), Some(413));
            assert!(held <= READ_CHUNK, "{held} bytes held");
            let (next, _) = read(small(), b"POST / HTTP/1.1\r\ncontent-length: 101\r\n\r\n").await;
            assert_eq!(status(&next), Some(413));
            // All digits but past usize: an overflow, not a small number.
            let (next, _) =
                read(small(), b"POST / HTTP/1.1\r\ncontent-length: 99999999999999999999999\r\n\r\n").await;
            assert_eq!(status(&next), Some(413));
        });
    }

    #[test]
    fn a_head_past_the_limit_is_refused_and_never_held_whole() {
        run(async {
            let mut bytes = b"GET / HTTP/1.1\r\nx-filler: ".to_vec();
            bytes.extend(std::iter::repeat_n(b'a', 1 << 20));
            let (next, held) = read(small(), &bytes).await;
            assert_eq!(status(&next), Some(431));
            assert!(held < small().max_head + READ_CHUNK, "{held} bytes held");
            let (next, held) = read(Limits::default(), &bytes).await;
            assert_eq!(status(&next), Some(431));
            assert!(held < Limits::default().max_head + READ_CHUNK, "{held} bytes held");
        });
    }

    #[test]
    fn chunked_bodies_are_decoded_within_the_limit() {
        run(async {
            let (next, held) = read(
                small(),
                b"POST /a HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6;name=v\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n",
            )
            .await;
            let Next::Request(r) = next else { panic!("not a request") };
            assert_eq!((r.method.as_str(), r.path.as_str(), r.body.as_str()), ("POST", "/a", "hello world"));
            assert!(r.keep_alive);
            assert_eq!(held, 0);
            // 60 + 60 > 100: refused as soon as the second chunk announces itself.
            let chunk = format!("3c\r\n{}\r\n", "y".repeat(60));
            let body =
                format!("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n{chunk}{chunk}0\r\n\r\n");
            assert_eq!(status(&read(small(), body.as_bytes()).await.0), Some(413));
            let huge = b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffffffffff\r\n";
            assert_eq!(status(&read(small(), huge).await.0), Some(413));
            let bad = b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n";
            assert_eq!(status(&read(small(), bad).await.0), Some(400));
            let gzip = b"POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n";
            assert_eq!(status(&read(small(), gzip).await.0), Some(501));
            // Both framings: read by the chunks, then the connection ends.
            let both = b"POST / HTTP/1.1\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
            let Next::Request(r) = read(small(), both).await.0 else { panic!("not a request") };
            assert_eq!(r.body, "ok");
            assert!(!r.keep_alive);
        });
    }

    #[test]
    fn a_slow_head_times_out_with_408() {
        run(async {
            let (mut conn, mut client) = pair(small()).await;
            let drip = tokio::spawn(async move {
                for b in b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter() {
                    if client.write_all(&[*b]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
            let started = Instant::now();
            assert_eq!(status(&conn.next_request().await), Some(408));
            // The head never ends, so without the deadline this never returns: a generous bound
            // (a loaded 2-core machine) still fails a hang.
            assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
            drip.abort();
            // So does a body that never finishes.
            let (next, _) = read(small(), b"POST / HTTP/1.1\r\ncontent-length: 50\r\n\r\nonly this").await;
            assert_eq!(status(&next), Some(408));
        });
    }

    #[test]
    fn a_silent_connection_is_closed_quietly() {
        run(async {
            let (mut conn, _client) = pair(small()).await;
            assert!(matches!(conn.next_request().await, Next::Closed));
        });
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection_header() {
        run(async {
            let cases: [(&[u8], bool); 6] = [
                (b"GET / HTTP/1.1\r\n\r\n", true),
                (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false),
                (b"GET / HTTP/1.1\r\nconnection: keep-alive, Close\r\n\r\n", false),
                (b"GET / HTTP/1.0\r\n\r\n", false),
                (b"GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n", true),
                (b"GET / HTTP/1.1\r\nconnection: upgrade\r\n\r\n", true),
            ];
            for (bytes, keep) in cases {
                let Next::Request(r) = read(small(), bytes).await.0 else { panic!("not a request") };
                assert_eq!(r.keep_alive, keep, "{}", String::from_utf8_lossy(bytes));
            }
            assert_eq!(status(&read(small(), b"GET / HTTP/2.0\r\n\r\n").await.0), Some(505));
            assert_eq!(status(&read(small(), b"GET /\r\n\r\n").await.0), Some(400));
            assert_eq!(status(&read(small(), b"\x16\x03\x01\x02\x00\x01").await.0), Some(400));
            assert_eq!(status(&read(small(), b"GET / HTTP/1.1\r\nno colon\r\n\r\n").await.0), Some(400));
            let twice = b"POST / HTTP/1.1\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc";
            assert_eq!(status(&read(small(), twice).await.0), Some(400));
            let signed = b"POST / HTTP/1.1\r\ncontent-length: +2\r\n\r\nab";
            assert_eq!(status(&read(small(), signed).await.0), Some(400));
        });
    }

    #[test]
    fn pipelined_requests_are_read_in_turn() {
        run(async {
            let (mut conn, client) = pair(small()).await;
            let _client = push(
                client,
                b"POST /a HTTP/1.1\r\ncontent-length: 2\r\n\r\nhiGET /b HTTP/1.1\r\nconnection: close\r\n\r\n".to_vec(),
            );
            let Next::Request(a) = conn.next_request().await else { panic!("no first request") };
            assert_eq!((a.path.as_str(), a.body.as_str(), a.keep_alive), ("/a", "hi", true));
            let Next::Request(b) = conn.next_request().await else { panic!("no second request") };
            assert_eq!((b.path.as_str(), b.keep_alive), ("/b", false));
        });
    }

    #[test]
    fn what_a_client_sends_during_its_response_is_dropped() {
        run(async {
            let (mut conn, client) = pair(small()).await;
            let pusher = push(client, vec![b'z'; 4 << 20]);
            let mut spoke = false;
            let drained = async {
                let client = pusher.await.unwrap();
                drop(client);
            };
            // `hangup` reads all 4 MiB and ends at the client's close, keeping nothing.
            tokio::join!(hangup(&mut conn.stream, &mut spoke), drained);
            assert!(spoke);
            assert!(conn.buf.is_empty());
        });
    }

    #[test]
    fn a_client_that_stops_reading_fails_the_write_in_time() {
        run(async {
            let (mut conn, _client) = pair(small()).await;
            let started = Instant::now();
            let big = vec![b'a'; 64 << 20];
            let err = send(&mut conn.stream, &big, Duration::from_millis(200)).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut);
            // The client never reads, so without the deadline the write never ends: a generous
            // bound (a loaded 2-core machine) still fails a hang.
            assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        });
    }

    #[test]
    fn every_status_the_servers_send_has_its_phrase() {
        for code in [200, 204, 400, 401, 403, 404, 408, 413, 429, 431, 500, 501, 502, 503, 504, 505] {
            assert_ne!(reason(code), "Status", "{code}");
        }
        assert_eq!(reason(413), "Payload Too Large");
        assert_eq!(reason(408), "Request Timeout");
    }
}
