//! The incident simulator served live: the pure model of `triage-sim-model`, driven by the wall
//! clock, behind OpenAI- and Anthropic-compatible SSE endpoints, a vLLM `/metrics` and the
//! logs it has written so far — on 127.0.0.1, CORS on, so the site and the probe can use it.
//!
//! A live run first fast-forwards the scenario offline to its incident (the history that made
//! the logs), then maps simulated time onto the wall clock (`speed` × real time) and keeps the
//! background workload running. A request that arrives over HTTP joins the same engine as the
//! simulated clients: it queues, is batched, preempted or leaked like theirs, and each token is
//! written to the socket when the step that produced it ends. A client that hangs up is a
//! disconnect to the model (aborted — or leaked, in the leak scenario).
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/completions` (legacy `text_completion`),
//! `POST /v1/messages`, `GET /metrics`, `GET /health`, `GET /v1/models` (vLLM's list, or
//! Anthropic's page when the request carries `anthropic-version`), `GET /logs` (a JSON index) and
//! `GET /logs/NAME`, `GET /scenario` (the answer key). Generations follow vLLM's OpenAI server:
//! `"stream": true` gets SSE, anything else one JSON body with `usage` once the whole simulated
//! generation has ended; the node's refusals (400 past `max_model_len`, 429 with `Retry-After`)
//! and a mid-generation OOM (500) come in the API's own error shape, a gateway's 503 as the
//! gateway writes it. Bounded like the scripted server: 127.0.0.1 only, every request read
//! within [`Limits`], at most `max_requests` generations, and it stops by itself after
//! `lifetime` or when dropped.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc, watch};
use triage_core::endpoint::Api;
use triage_sim_model::{Artifact, ExternalEvent, Outcome, Scenario, Sim};

use crate::http::{
    CORS, Conn, Events, Limits, Next, Serving, error_body, hangup, lock, reason, send, write_chunk,
};

/// How a live run behaves.
#[derive(Clone, Copy, Debug)]
pub struct LiveConfig {
    /// Simulated seconds per wall-clock second (1: real time).
    pub speed: f64,
    /// At most this many generation requests are served.
    pub max_requests: usize,
    /// The server stops by itself after this long.
    pub lifetime: Duration,
    /// 0: any free port.
    pub port: u16,
    /// What a client may send and how long it may take.
    pub limits: Limits,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            speed: 1.0,
            max_requests: 10_000,
            lifetime: Duration::from_secs(1800),
            port: 0,
            limits: Limits::default(),
        }
    }
}

struct State {
    sim: Sim,
    origin: Instant,
    base_ns: u64,
    speed: f64,
    subscribers: HashMap<u32, mpsc::UnboundedSender<ExternalEvent>>,
}

impl State {
    fn sim_time(&self, at: Instant) -> u64 {
        self.base_ns + (at.saturating_duration_since(self.origin).as_nanos() as f64 * self.speed) as u64
    }

    fn wall_time(&self, sim_ns: u64) -> Instant {
        let ahead = sim_ns.saturating_sub(self.base_ns) as f64 / self.speed;
        self.origin + Duration::from_nanos(ahead.min(1e15) as u64)
    }

    /// Run the model up to the present and hand live requests their events.
    fn catch_up(&mut self) {
        let now = self.sim_time(Instant::now());
        self.sim.advance(now);
        for ev in self.sim.drain_external() {
            let (id, done) = match &ev {
                ExternalEvent::Token { id, .. } => (*id, false),
                ExternalEvent::Done { id, .. } => (*id, true),
            };
            if let Some(tx) = self.subscribers.get(&id) {
                let _ = tx.send(ev);
            }
            if done {
                self.subscribers.remove(&id);
            }
        }
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Notify,
    scenario_json: String,
    max_requests: usize,
    served: AtomicUsize,
    limits: Limits,
}

/// A running live simulation. Dropping it stops it.
pub struct SimServer {
    serving: Serving,
    shared: Arc<Shared>,
}

impl SimServer {
    /// Fast-forward `scenario` (with `seed`) to its incident, then serve it live on 127.0.0.1.
    pub async fn start(scenario: &Scenario, seed: u64, config: LiveConfig) -> io::Result<SimServer> {
        let mut sim = Sim::new(scenario.config(seed));
        sim.run(scenario.incident_ns());
        let key = serde_json::json!({
            "name": scenario.name,
            "class": scenario.class_str(),
            "cause": scenario.cause,
            "rules": scenario.rules,
            "symptom": scenario.symptom,
            "seed": seed,
            "incident_at_s": scenario.incident_at_s,
        });
        SimServer::start_sim(sim, key.to_string(), config).await
    }

    /// Serve an already built (and possibly fast-forwarded) simulation from its current time.
    pub async fn start_sim(sim: Sim, scenario_json: String, config: LiveConfig) -> io::Result<SimServer> {
        let base_ns = sim.now_ns();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sim,
                origin: Instant::now(),
                base_ns,
                speed: if config.speed.is_finite() && config.speed > 0.0 { config.speed } else { 1.0 },
                subscribers: HashMap::new(),
            }),
            wake: Notify::new(),
            scenario_json,
            max_requests: config.max_requests,
            served: AtomicUsize::new(0),
            limits: config.limits,
        });
        let deadline = Instant::now() + config.lifetime;
        let serving = {
            let shared = Arc::clone(&shared);
            Serving::start(config.port, deadline, shared.limits.max_connections, move |stream| {
                serve_connection(stream, Arc::clone(&shared))
            })
            .await?
        };
        tokio::spawn(engine_loop(Arc::clone(&shared), serving.stopped(), deadline));
        Ok(SimServer { serving, shared })
    }

    pub fn addr(&self) -> SocketAddr {
        self.serving.addr()
    }

    /// `http://127.0.0.1:PORT/v1` — OpenAI clients append `/chat/completions`, Anthropic ones
    /// `/messages`.
    pub fn base_url(&self) -> String {
        self.serving.base_url()
    }

    /// Every file the simulated service has written up to now.
    pub fn artifacts(&self) -> Vec<Artifact> {
        let mut st = lock(&self.shared.state);
        st.catch_up();
        st.sim.artifacts()
    }

    /// Jump simulated time to `sim_ns` at once (nothing happens if it has already passed), as
    /// if the on-call came back later; then go on in real time from there. Streams still open
    /// see the jump.
    pub fn fast_forward(&self, sim_ns: u64) {
        {
            let mut st = lock(&self.shared.state);
            st.catch_up();
            if sim_ns > st.sim.now_ns() {
                st.sim.advance(sim_ns);
                st.base_ns = sim_ns;
                st.origin = Instant::now();
                st.catch_up();
            }
        }
        self.shared.wake.notify_one();
    }

    /// Simulated seconds since the scenario began.
    pub fn sim_seconds(&self) -> f64 {
        let st = lock(&self.shared.state);
        st.sim_time(Instant::now()) as f64 / 1e9
    }

    /// Stop serving (dropping the server does too).
    pub fn shutdown(&self) {
        self.serving.shutdown();
    }
}

async fn engine_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>, deadline: Instant) {
    loop {
        let next = {
            let mut st = lock(&shared.state);
            st.catch_up();
            st.sim.next_event_ns().map(|t| st.wall_time(t))
        };
        let wake_at = next.unwrap_or(deadline).min(deadline);
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at.into()) => {}
            _ = shared.wake.notified() => {}
            _ = stopped.changed() => break,
        }
        if Instant::now() >= deadline {
            break;
        }
    }
}

/// One whole response: status, content type, extra header lines (each ending in CRLF) and body.
#[derive(Clone, Copy)]
struct Reply<'a> {
    code: u16,
    content_type: &'a str,
    extra: &'a str,
    body: &'a str,
}

impl<'a> Reply<'a> {
    fn new(code: u16, content_type: &'a str, body: &'a str) -> Reply<'a> {
        Reply { code, content_type, extra: "", body }
    }
}

/// Write `reply`; `close` adds `connection: close` (the connection ends after it).
async fn respond<W: AsyncWrite + Unpin>(
    stream: &mut W,
    limits: &Limits,
    close: bool,
    reply: Reply<'_>,
) -> bool {
    let Reply { code, content_type, extra, body } = reply;
    let close = if close { "connection: close\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}{close}{CORS}\r\n",
        reason(code),
        body.len()
    );
    send(stream, head.as_bytes(), limits.idle_timeout).await.is_ok()
        && send(stream, body.as_bytes(), limits.idle_timeout).await.is_ok()
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let limits = shared.limits;
    let mut conn = Conn::new(stream, limits);
    loop {
        let req = match conn.next_request().await {
            Next::Request(r) => r,
            Next::Closed => return,
            Next::Refuse(code) => return conn.refuse(code).await,
        };
        let close = !req.keep_alive;
        let path = req.path.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        let json = "application/json";
        let stream = &mut conn.stream;
        // Whether the client sent anything while its answer was being written (dropped).
        let mut spoke = false;
        let keep = match (req.method.as_str(), path) {
            ("OPTIONS", _) => {
                let head = format!(
                    "HTTP/1.1 204 No Content\r\n{CORS}access-control-max-age: 600\r\ncontent-length: 0\r\n{}\r\n",
                    if close { "connection: close\r\n" } else { "" }
                );
                send(stream, head.as_bytes(), limits.idle_timeout).await.is_ok()
            }
            ("GET", "/metrics") => {
                let text = {
                    let mut st = lock(&shared.state);
                    st.catch_up();
                    st.sim.metrics_text()
                };
                respond(
                    stream,
                    &limits,
                    close,
                    Reply::new(200, "text/plain; version=0.0.4; charset=utf-8", &text),
                )
                .await
            }
            ("GET", "/health") => respond(stream, &limits, close, Reply::new(200, "text/plain", "")).await,
            ("GET", "/scenario") => {
                respond(stream, &limits, close, Reply::new(200, json, &shared.scenario_json)).await
            }
            ("GET", "/v1/models") => {
                let (model, len) = {
                    let st = lock(&shared.state);
                    let e = &st.sim.config().engine;
                    (e.model.clone(), e.max_model_len)
                };
                let body = models(&model, len, dialect(&req.headers, Api::Openai));
                respond(stream, &limits, close, Reply::new(200, json, &body)).await
            }
            ("GET", "/logs") => {
                let files = {
                    let mut st = lock(&shared.state);
                    st.catch_up();
                    st.sim.artifacts()
                };
                let index: Vec<_> = files
                    .iter()
                    .map(|f| serde_json::json!({"name": f.name, "what": f.what, "analyzable": f.analyzable, "bytes": f.content.len()}))
                    .collect();
                let index = serde_json::Value::from(index).to_string();
                respond(stream, &limits, close, Reply::new(200, json, &index)).await
            }
            ("GET", p) if p.starts_with("/logs/") => {
                let name = &p["/logs/".len()..];
                let file = {
                    let mut st = lock(&shared.state);
                    st.catch_up();
                    st.sim.artifacts().into_iter().find(|f| f.name == name)
                };
                match file {
                    Some(f) => {
                        respond(
                            stream,
                            &limits,
                            close,
                            Reply::new(200, "text/plain; charset=utf-8", &f.content),
                        )
                        .await
                    }
                    None => {
                        respond(stream, &limits, close, Reply::new(404, json, r#"{"detail":"Not Found"}"#))
                            .await
                    }
                }
            }
            ("POST", "/v1/chat/completions") => {
                generate(stream, &shared, close, Route::Chat, &req.body, &mut spoke).await
            }
            ("POST", "/v1/completions") => {
                generate(stream, &shared, close, Route::Completions, &req.body, &mut spoke).await
            }
            ("POST", "/v1/messages") => {
                generate(stream, &shared, close, Route::Messages, &req.body, &mut spoke).await
            }
            (_, "/v1/chat/completions" | "/v1/completions" | "/v1/messages") => {
                let body = r#"{"detail":"Method Not Allowed"}"#;
                respond(
                    stream,
                    &limits,
                    close,
                    Reply { extra: "allow: POST\r\n", ..Reply::new(405, json, body) },
                )
                .await
            }
            _ => respond(stream, &limits, close, Reply::new(404, json, r#"{"detail":"Not Found"}"#)).await,
        };
        if !keep {
            return;
        }
        if close || spoke {
            return conn.close().await;
        }
    }
}

/// The server's token count of a request: words of every message (the article's probe prompts
/// are one word per token) plus the chat template's few tokens.
pub fn prompt_tokens(body: &serde_json::Value) -> u32 {
    fn words(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::String(s) => s.split_whitespace().count(),
            serde_json::Value::Array(a) => a.iter().map(words).sum(),
            serde_json::Value::Object(o) => o
                .iter()
                .filter(|(k, _)| matches!(k.as_str(), "content" | "text"))
                .map(|(_, v)| words(v))
                .sum(),
            _ => 0,
        }
    }
    let n = words(&body["messages"]) + words(&body["system"]) + words(&body["prompt"]);
    u32::try_from(n + 6).unwrap_or(u32::MAX)
}

/// The generation routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /v1/completions` (OpenAI's legacy `text_completion`)
    Completions,
    /// `POST /v1/messages` (Anthropic)
    Messages,
}

impl Route {
    fn api(self) -> Api {
        match self {
            Route::Chat | Route::Completions => Api::Openai,
            Route::Messages => Api::Anthropic,
        }
    }
}

/// Anthropic's SDKs send `anthropic-version` on every request; a route both APIs share
/// (`/v1/models`) answers in that dialect then.
fn dialect(headers: &[(String, String)], default: Api) -> Api {
    if headers.iter().any(|(k, _)| k == "anthropic-version") { Api::Anthropic } else { default }
}

/// `GET /v1/models`: vLLM's model list, or Anthropic's page of models.
fn models(model: &str, max_model_len: u32, api: Api) -> String {
    let body = match api {
        Api::Openai => serde_json::json!({"object": "list", "data": [{
            "id": model, "object": "model", "created": 1_764_460_800u64, "owned_by": "vllm",
            "root": model, "parent": null, "max_model_len": max_model_len, "permission": [],
        }]}),
        Api::Anthropic => serde_json::json!({
            "data": [{"type": "model", "id": model, "display_name": model,
                      "created_at": "2025-11-30T00:00:00Z", "lifecycle": "active"}],
            "has_more": false, "first_id": model, "last_id": model,
        }),
    };
    body.to_string()
}

/// Serve one generation, streamed (`"stream": true`) or as one JSON body after the whole
/// simulated generation. Returns whether the response was written whole; `spoke` is set when
/// the client sent anything meanwhile (dropped unread: the connection must close after it).
async fn generate(
    stream: &mut TcpStream,
    shared: &Shared,
    close: bool,
    route: Route,
    body: &str,
    spoke: &mut bool,
) -> bool {
    let limits = &shared.limits;
    let limit = limits.idle_timeout;
    let api = route.api();
    let json = "application/json";
    let parsed = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) | Err(_) => {
            let body = error_body(api, 400, "The request body is not a JSON object.");
            return respond(stream, limits, close, Reply::new(400, json, &body)).await;
        }
    };
    if shared.served.fetch_add(1, Ordering::Relaxed) >= shared.max_requests {
        return false;
    }
    let streaming = parsed["stream"].as_bool().unwrap_or(false);
    let prompt = prompt_tokens(&parsed);
    let max_tokens = parsed["max_tokens"]
        .as_u64()
        .or_else(|| parsed["max_completion_tokens"].as_u64())
        .unwrap_or(256)
        .clamp(1, 1 << 20) as u32;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let admitted = {
        let mut st = lock(&shared.state);
        st.catch_up();
        match st.sim.submit(prompt, max_tokens) {
            Ok(id) => {
                st.subscribers.insert(id, tx);
                Ok((id, st.sim.request_id(id), st.sim.config().engine.model.clone()))
            }
            Err(rejection) => Err(rejection),
        }
    };
    shared.wake.notify_one();
    let (id, rid, model) = match admitted {
        Ok(a) => a,
        Err(r) => {
            let extra = if r.status == 429 { "retry-after: 1\r\n" } else { "" };
            // Every refusal is written in the API's error shape, as the SDKs parse it: the node's
            // own (a JSON `message`) and a gateway's (its text, e.g. `no healthy upstream`,
            // becomes the message, so the cause stays readable).
            let message = if r.content_type != json {
                r.body.trim().to_owned()
            } else {
                serde_json::from_str::<serde_json::Value>(&r.body)
                    .ok()
                    .and_then(|v| v["message"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| reason(r.status).to_owned())
            };
            let body = error_body(api, r.status, &message);
            return respond(stream, limits, close, Reply { extra, ..Reply::new(r.status, json, &body) })
                .await;
        }
    };
    let rid = match route {
        Route::Chat => rid,
        Route::Completions => rid.replacen("chatcmpl-", "cmpl-", 1),
        Route::Messages => rid.replacen("chatcmpl-", "msg_", 1),
    };
    let events = Events {
        api,
        legacy: route == Route::Completions,
        id: &rid,
        reasoning: 0,
        model: &model,
        prompt_tokens: prompt as usize,
        per_chunk: 1,
        usage_per_chunk: false,
    };
    let gone = |shared: &Shared| {
        lock(&shared.state).sim.disconnect(id);
        shared.wake.notify_one();
    };
    if !streaming {
        // The answer is written when the generation has ended; a hang-up before is a disconnect.
        let done = {
            let (mut rd, _) = stream.split();
            loop {
                tokio::select! {
                    ev = rx.recv() => match ev {
                        Some(ExternalEvent::Token { .. }) => {}
                        Some(ExternalEvent::Done { outcome, output_tokens, error, .. }) => {
                            break Some((outcome, output_tokens, error));
                        }
                        None => break None,
                    },
                    () = hangup(&mut rd, spoke) => {
                        gone(shared);
                        break None;
                    }
                }
            }
        };
        return match done {
            Some((Outcome::Oom, _, error)) => {
                let body = error_body(api, 500, error.as_deref().unwrap_or("CUDA out of memory"));
                respond(stream, limits, close, Reply::new(500, json, &body)).await
            }
            Some((outcome, tokens, _)) => {
                let body = events.whole(tokens as usize, outcome == Outcome::Length);
                respond(stream, limits, close, Reply::new(200, json, &body)).await
            }
            None => false,
        };
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n{}{CORS}\r\n",
        if close { "connection: close\r\n" } else { "" }
    );
    let preamble = events.preamble();
    if send(stream, head.as_bytes(), limit).await.is_err()
        || (!preamble.is_empty() && write_chunk(stream, preamble.as_bytes(), limit).await.is_err())
    {
        gone(shared);
        return false;
    }
    let (mut rd, mut wr) = stream.split();
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ExternalEvent::Token { index, .. }) => {
                    if write_chunk(&mut wr, events.token(index as usize).as_bytes(), limit).await.is_err() {
                        gone(shared);
                        return false;
                    }
                }
                Some(ExternalEvent::Done { outcome, output_tokens, error, .. }) => {
                    let text = match outcome {
                        Outcome::Oom => events.server_error(error.as_deref().unwrap_or("CUDA out of memory")),
                        Outcome::Length => events.ending_with(output_tokens as usize, true, true),
                        _ => events.ending(output_tokens as usize, true),
                    };
                    let ok = write_chunk(&mut wr, text.as_bytes(), limit).await.is_ok()
                        && write_chunk(&mut wr, b"", limit).await.is_ok();
                    return ok;
                }
                None => return false,
            },
            // Whatever the client sends meanwhile is dropped; a hang-up is a disconnect.
            () = hangup(&mut rd, spoke) => {
                gone(shared);
                return false;
            }
        }
    }
}
