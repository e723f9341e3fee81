//! A scripted streaming server: OpenAI- and Anthropic-compatible SSE on 127.0.0.1 with exact,
//! scripted timing and faults, recording when it actually wrote every event.
//!
//! Tests and the probe benchmark compare what a client measured with this record. The HTTP/1.1
//! is written by hand on purpose: faults such as a reset in the middle of a stream, a hang before
//! the headers or an HTML page instead of SSE need control below what an HTTP framework exposes.
//!
//! The script decides the timing, the dialect and the faults; the request decides two things, as
//! vLLM's server does: `POST /v1/completions` gets legacy `text_completion` chunks, and a request
//! that says `"stream": false` (with no fault scripted) gets one JSON body with `usage` after the
//! scripted generation. A request that does not say streams, as this server always has.
//!
//! Bounded by construction: it binds 127.0.0.1 only, serves at most `max_requests` requests,
//! reads every request within [`Limits`], honours `Connection: close`, drops a connection whose
//! client hung up even while its script hangs, and stops by itself after `lifetime`, aborting
//! whatever is still running.

use crate::http::{CORS, Conn, Events, Limits, Next, Serving, hangup, lock, reason, send, write_chunk};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::net::tcp::WriteHalf;
use triage_core::endpoint::Api;

/// What goes wrong, if anything.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Answer with this status, content type and body (e.g. 401, 404, 429, 503).
    Status { code: u16, content_type: String, body: String, retry_after: Option<u32> },
    /// 200 with a web page, as a site's homepage answers a mistaken base URL.
    Html,
    /// 200 with a non-streaming JSON completion.
    JsonNotSse,
    /// An `error` event after this many tokens, then the stream ends.
    ErrorEvent { after_tokens: usize },
    /// A TCP reset after this many tokens.
    ResetAfter { after_tokens: usize },
    /// A pause after this many tokens, then the stream goes on.
    StallAfter { after_tokens: usize, stall: Duration },
    /// Nothing more after this many tokens; the connection stays open.
    HangAfter { after_tokens: usize },
    /// A clean end after this many tokens without finish reason or `[DONE]`.
    EndWithoutDone { after_tokens: usize },
    /// Read the request, then never answer.
    HangBeforeHeaders,
    /// Read the request, then close the connection without answering.
    CloseBeforeHeaders,
}

/// How one response is produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    pub api: Api,
    /// Pause between the request and the response headers.
    pub headers_delay: Duration,
    /// Pause between the headers and the first token event.
    pub ttft: Duration,
    /// Gap before token event `i + 1`; the last value repeats; empty means no pause.
    pub gaps: Vec<Duration>,
    /// Token events (chunks) in the stream; each carries `tokens_per_chunk` tokens.
    pub tokens: usize,
    /// Tokens each token event carries (speculative decoding, a coalescing proxy); at least 1.
    /// The usage reports `tokens × tokens_per_chunk`.
    pub tokens_per_chunk: usize,
    /// OpenAI: every chunk carries the cumulative usage so far, as vLLM does with
    /// `stream_options.continuous_usage_stats` (the per-chunk token count of the stream).
    pub usage_per_chunk: bool,
    /// The first tokens are reasoning (`reasoning_content` / `thinking_delta`).
    pub reasoning_tokens: usize,
    /// Send usage (OpenAI: a usage chunk; Anthropic: always in `message_delta`).
    pub usage: bool,
    pub fault: Fault,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            api: Api::Openai,
            headers_delay: Duration::ZERO,
            ttft: Duration::from_millis(50),
            gaps: vec![Duration::from_millis(10)],
            tokens: 8,
            tokens_per_chunk: 1,
            usage_per_chunk: false,
            reasoning_tokens: 0,
            usage: true,
            fault: Fault::None,
        }
    }
}

impl Script {
    fn gap_before(&self, token: usize) -> Duration {
        if token == 0 {
            return self.ttft;
        }
        self.gaps.get(token - 1).or(self.gaps.last()).copied().unwrap_or_default()
    }
}

/// What the server saw and did for one request. Instants are the server's monotonic clock,
/// the same clock a probe in the same process uses.
#[derive(Clone, Debug)]
pub struct Record {
    pub index: usize,
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub received: Instant,
    /// When the request's first byte arrived (`received` is after its last byte).
    pub request_started: Instant,
    pub headers_written: Option<Instant>,
    /// When each token event was fully written to the socket.
    pub token_written: Vec<Instant>,
    /// The id carried in the stream (`chatcmpl-scripted-N` / `msg_scripted_N`).
    pub response_id: String,
}

impl Record {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Limits that make the server stop by itself.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    pub max_requests: usize,
    pub lifetime: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { max_requests: 10_000, lifetime: Duration::from_secs(120) }
    }
}

type ScriptFn = dyn Fn(usize) -> Script + Send + Sync;

struct Shared {
    script: Box<ScriptFn>,
    records: Mutex<Vec<Record>>,
    next: Mutex<usize>,
    max_requests: usize,
    limits: Limits,
}

/// A running scripted server. Dropping it stops it.
pub struct ScriptedServer {
    serving: Serving,
    shared: Arc<Shared>,
}

impl ScriptedServer {
    /// Bind 127.0.0.1 on a free port and serve on the current tokio runtime. `script(i)` gives
    /// the script of the `i`-th request (0-based, in arrival order).
    pub async fn start(
        script: impl Fn(usize) -> Script + Send + Sync + 'static,
        config: ServerConfig,
    ) -> io::Result<ScriptedServer> {
        ScriptedServer::start_with_limits(script, config, Limits::default()).await
    }

    /// [`ScriptedServer::start`] with other bounds on what clients may send (tests shrink the
    /// timeouts).
    pub async fn start_with_limits(
        script: impl Fn(usize) -> Script + Send + Sync + 'static,
        config: ServerConfig,
        limits: Limits,
    ) -> io::Result<ScriptedServer> {
        let shared = Arc::new(Shared {
            script: Box::new(script),
            records: Mutex::new(Vec::new()),
            next: Mutex::new(0),
            max_requests: config.max_requests,
            limits,
        });
        let deadline = Instant::now() + config.lifetime;
        let serving = {
            let shared = Arc::clone(&shared);
            Serving::start(0, deadline, limits.max_connections, move |stream| {
                serve_connection(stream, Arc::clone(&shared))
            })
            .await?
        };
        Ok(ScriptedServer { serving, shared })
    }

    pub fn addr(&self) -> SocketAddr {
        self.serving.addr()
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI style) — Anthropic clients append `/messages`.
    pub fn base_url(&self) -> String {
        self.serving.base_url()
    }

    /// Requests seen so far, in arrival order.
    pub fn records(&self) -> Vec<Record> {
        let mut r = lock(&self.shared.records).clone();
        r.sort_by_key(|r| r.index);
        r
    }

    /// Stop serving (dropping the server does too).
    pub fn shutdown(&self) {
        self.serving.shutdown();
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let mut conn = Conn::new(stream, shared.limits);
    loop {
        let req = match conn.next_request().await {
            Next::Request(r) => r,
            Next::Closed => return,
            Next::Refuse(code) => return conn.refuse(code).await,
        };
        let received = Instant::now();
        let keep_alive = req.keep_alive;
        let close = if keep_alive { "" } else { "connection: close\r\n" };
        if req.method == "OPTIONS" {
            let head = format!(
                "HTTP/1.1 204 No Content\r\n{CORS}access-control-max-age: 600\r\ncontent-length: 0\r\n{close}\r\n"
            );
            if send(&mut conn.stream, head.as_bytes(), shared.limits.idle_timeout).await.is_err() {
                return;
            }
            if !keep_alive {
                return conn.close().await;
            }
            continue;
        }
        let index = {
            let mut next = lock(&shared.next);
            let i = *next;
            *next += 1;
            i
        };
        if index >= shared.max_requests {
            return;
        }
        let script = (shared.script)(index);
        let asked = Asked::of(&req.path, &req.body);
        let response_id = match script.api {
            Api::Openai if asked.legacy => format!("cmpl-scripted-{index}"),
            Api::Openai => format!("chatcmpl-scripted-{index}"),
            Api::Anthropic => format!("msg_scripted_{index}"),
        };
        lock(&shared.records).push(Record {
            index,
            method: req.method,
            path: req.path,
            headers: req.headers,
            body: req.body,
            received,
            request_started: req.first_byte,
            headers_written: None,
            token_written: Vec::new(),
            response_id: response_id.clone(),
        });
        // The script runs while the client is watched: a hang-up ends it, even a scripted hang.
        let mut spoke = false;
        let keep_going = {
            let (mut rd, mut wr) = conn.stream.split();
            tokio::select! {
                keep = respond(&mut wr, &shared, Answer { index, script: &script, id: &response_id, asked }, close) => keep,
                () = hangup(&mut rd, &mut spoke) => false,
            }
        };
        if !keep_going {
            return;
        }
        if spoke || !keep_alive {
            return conn.close().await;
        }
    }
}

/// What the request asked for that the script does not decide.
#[derive(Clone, Copy, Debug)]
struct Asked {
    /// `POST /v1/completions`: OpenAI's legacy `text_completion` objects.
    legacy: bool,
    /// `"stream": false` said explicitly: one JSON body after the scripted timing (a request
    /// that does not say streams, as this server always has).
    whole: bool,
}

impl Asked {
    fn of(path: &str, body: &str) -> Asked {
        let path = path.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        let whole = serde_json::from_str::<serde_json::Value>(body)
            .is_ok_and(|v| v.get("stream") == Some(&serde_json::Value::Bool(false)));
        Asked { legacy: path.ends_with("/v1/completions"), whole }
    }
}

fn update(shared: &Shared, index: usize, f: impl FnOnce(&mut Record)) {
    if let Some(r) = lock(&shared.records).iter_mut().find(|r| r.index == index) {
        f(r);
    }
}

fn reset(stream: &WriteHalf<'_>) {
    // SO_LINGER 0 makes close() send RST instead of FIN: the client sees "connection reset".
    let stream: &TcpStream = stream.as_ref();
    let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
}

/// Serve one response. Returns whether the connection may serve another request. `close` is
/// the `connection: close` header line when the connection ends after this response, else empty.
/// The request being answered: its place in arrival order, its script, the response id it gets
/// and what it asked for.
#[derive(Clone, Copy)]
struct Answer<'a> {
    index: usize,
    script: &'a Script,
    id: &'a str,
    asked: Asked,
}

async fn respond(stream: &mut WriteHalf<'_>, shared: &Shared, answer: Answer<'_>, close: &str) -> bool {
    let Answer { index, script, id, asked } = answer;
    let limit = shared.limits.idle_timeout;
    if !script.headers_delay.is_zero() {
        tokio::time::sleep(script.headers_delay).await;
    }
    match &script.fault {
        Fault::HangBeforeHeaders => {
            std::future::pending::<()>().await;
            return false;
        }
        Fault::CloseBeforeHeaders => return false,
        Fault::Status { code, content_type, body, retry_after } => {
            let retry = retry_after.map(|s| format!("retry-after: {s}\r\n")).unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {code} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{retry}{close}{CORS}\r\n",
                reason(*code),
                body.len()
            );
            let ok = send(stream, head.as_bytes(), limit).await.is_ok()
                && send(stream, body.as_bytes(), limit).await.is_ok();
            update(shared, index, |r| r.headers_written = Some(Instant::now()));
            return ok;
        }
        Fault::Html => {
            let body = "<!DOCTYPE html>\n<html><head><title>Welcome to Example AI</title></head><body><h1>Build with our models</h1></body></html>\n";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n{close}{CORS}\r\n",
                body.len()
            );
            let ok = send(stream, head.as_bytes(), limit).await.is_ok()
                && send(stream, body.as_bytes(), limit).await.is_ok();
            update(shared, index, |r| r.headers_written = Some(Instant::now()));
            return ok;
        }
        Fault::JsonNotSse => {
            let body = format!(
                r#"{{"id":"{id}","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":"hello"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":3,"completion_tokens":1}}}}"#
            );
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{close}{CORS}\r\n",
                body.len()
            );
            let ok = send(stream, head.as_bytes(), limit).await.is_ok()
                && send(stream, body.as_bytes(), limit).await.is_ok();
            update(shared, index, |r| r.headers_written = Some(Instant::now()));
            return ok;
        }
        _ => {}
    }
    let events = Events {
        api: script.api,
        legacy: asked.legacy,
        id,
        reasoning: script.reasoning_tokens,
        model: "scripted",
        prompt_tokens: 12,
        per_chunk: script.tokens_per_chunk.max(1),
        usage_per_chunk: script.usage_per_chunk,
    };
    let generated = script.tokens * script.tokens_per_chunk.max(1);
    if asked.whole && script.fault == Fault::None {
        // The whole scripted generation, then the answer at once.
        let total: Duration = (0..script.tokens).map(|t| script.gap_before(t)).sum();
        tokio::time::sleep(total).await;
        let body = events.whole(generated, false);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-scripted-request: {index}\r\n{close}{CORS}\r\n",
            body.len()
        );
        let ok = send(stream, head.as_bytes(), limit).await.is_ok()
            && send(stream, body.as_bytes(), limit).await.is_ok();
        update(shared, index, |r| r.headers_written = Some(Instant::now()));
        return ok;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nx-scripted-request: {index}\r\n{close}{CORS}\r\n"
    );
    if send(stream, head.as_bytes(), limit).await.is_err() {
        return false;
    }
    update(shared, index, |r| r.headers_written = Some(Instant::now()));
    let preamble = events.preamble();
    if !preamble.is_empty() && write_chunk(stream, preamble.as_bytes(), limit).await.is_err() {
        return false;
    }
    for token in 0..script.tokens {
        match script.fault {
            Fault::ErrorEvent { after_tokens } if after_tokens == token => {
                let _ = write_chunk(stream, events.error().as_bytes(), limit).await;
                let _ = write_chunk(stream, b"", limit).await;
                return true;
            }
            Fault::ResetAfter { after_tokens } if after_tokens == token => {
                reset(stream);
                return false;
            }
            Fault::StallAfter { after_tokens, stall } if after_tokens == token => {
                tokio::time::sleep(stall).await
            }
            Fault::HangAfter { after_tokens } if after_tokens == token => {
                std::future::pending::<()>().await;
            }
            Fault::EndWithoutDone { after_tokens } if after_tokens == token => {
                let _ = write_chunk(stream, b"", limit).await;
                return true;
            }
            _ => {}
        }
        let gap = script.gap_before(token);
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        if write_chunk(stream, events.token(token).as_bytes(), limit).await.is_err() {
            return false;
        }
        let at = Instant::now();
        update(shared, index, |r| r.token_written.push(at));
    }
    if write_chunk(stream, events.ending(generated, script.usage).as_bytes(), limit).await.is_err() {
        return false;
    }
    write_chunk(stream, b"", limit).await.is_ok()
}
