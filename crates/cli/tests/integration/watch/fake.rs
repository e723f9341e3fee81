//! Fake engines for `triage watch`: an HTTP/1.1 server on 127.0.0.1 whose chat completions,
//! `/metrics` and `/health` answers a test scripts by the time since it started.
//!
//! Bounded: at most `MAX_CONNECTIONS` connections, each on its own thread and held at most
//! `HOLD`; it stops accepting after `LIFETIME`. Every answer closes its connection.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MAX_CONNECTIONS: usize = 200;
/// Longest a hung answer holds its connection.
const HOLD: Duration = Duration::from_secs(3);
/// The server stops accepting after this long.
const LIFETIME: Duration = Duration::from_secs(30);

/// How a chat completion is answered.
#[derive(Clone, Debug)]
pub enum Completion {
    /// (a) Take the request and say nothing.
    Hang,
    /// (b) 200 and SSE headers, a role-only chunk, then nothing.
    HeadersThenHang,
    /// Stream four tokens, the first after this many ms, then `[DONE]`.
    Stream { ttft_ms: u64 },
    /// Answer with this status and body.
    Status(u16, String),
    /// A 302 to another URL.
    Redirect(String),
}

/// What the engine answers at `elapsed` since it started: the completion and the `/metrics` body.
pub type Script = dyn Fn(Duration) -> (Completion, String) + Send + Sync;

/// A running fake engine.
pub struct Fake {
    pub port: u16,
    /// Every request head received, in order.
    pub heads: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn metrics(&self) -> String {
        format!("{}/metrics", self.base())
    }

    /// Heads of requests whose first line contains `what`.
    pub fn heads_of(&self, what: &str) -> Vec<String> {
        self.heads
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.lines().next().unwrap_or("").contains(what))
            .cloned()
            .collect()
    }
}

/// vLLM's names, one engine.
pub fn vllm_metrics(running: u32, waiting: u32, generated: u64) -> String {
    format!(
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {running}.0\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} {waiting}.0\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{engine=\"0\",model_name=\"m\"}} {generated}.0\n"
    )
}

pub fn start(script: impl Fn(Duration) -> (Completion, String) + Send + Sync + 'static) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let script: Arc<Script> = Arc::new(script);
    let h = Arc::clone(&heads);
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut served = 0;
        while served < MAX_CONNECTIONS && started.elapsed() < LIFETIME {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            served += 1;
            let script = Arc::clone(&script);
            let heads = Arc::clone(&h);
            std::thread::spawn(move || handle(stream, started, &*script, &heads));
        }
    });
    Fake { port, heads }
}

fn handle(mut s: TcpStream, started: Instant, script: &Script, heads: &Mutex<Vec<String>>) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let Some(head) = read_request(&mut s) else { return };
    heads.lock().unwrap().push(head.clone());
    let first = head.lines().next().unwrap_or("").to_owned();
    let (completion, metrics) = script(started.elapsed());
    if first.starts_with("GET /metrics") {
        return reply(&mut s, "200 OK", "text/plain; version=0.0.4", &metrics);
    }
    if first.starts_with("GET /health") {
        return reply(&mut s, "200 OK", "text/plain", "");
    }
    if !first.starts_with("POST /v1/chat/completions") {
        return reply(&mut s, "404 Not Found", "text/plain", "no such route");
    }
    match completion {
        Completion::Hang => std::thread::sleep(HOLD),
        Completion::HeadersThenHang => {
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            let _ = s.write_all(chunk("{\"role\":\"assistant\"}").as_bytes());
            let _ = s.flush();
            std::thread::sleep(HOLD);
        }
        Completion::Stream { ttft_ms } => {
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            let _ = s.write_all(chunk("{\"role\":\"assistant\"}").as_bytes());
            let _ = s.flush();
            std::thread::sleep(Duration::from_millis(ttft_ms));
            for w in ["o", "k", ".", "!"] {
                let _ = s.write_all(chunk(&format!("{{\"content\":\"{w}\"}}")).as_bytes());
                let _ = s.flush();
                std::thread::sleep(Duration::from_millis(2));
            }
            let done = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
            let _ = s.write_all(done.as_bytes());
        }
        Completion::Status(code, body) => {
            reply(&mut s, &format!("{code} Status"), "application/json", &body);
        }
        Completion::Redirect(to) => {
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
    }
    let _ = s.flush();
    let _ = s.shutdown(std::net::Shutdown::Both);
}

fn chunk(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
    )
}

fn reply(s: &mut TcpStream, status: &str, content_type: &str, body: &str) {
    let _ = s.write_all(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let _ = s.flush();
    let _ = s.shutdown(std::net::Shutdown::Both);
}

/// The request head (and its body, by Content-Length, which is dropped); `None` on a closed
/// or silent connection. At most 64 KiB.
fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if raw.len() > 64 << 10 {
            return None;
        }
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0)
        .min(1 << 20);
    let mut have = raw.len() - end;
    while have < length {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Some(head)
}

/// `GET path` from 127.0.0.1:`port`: status and body. Bounded in time and size.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.take(4 << 20).read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((head.split(' ').nth(1)?.parse().ok()?, body.to_owned()))
}
