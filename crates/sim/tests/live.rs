//! The live simulator over real HTTP: streams, rejections, CORS, metrics, logs, disconnects and
//! its own shutdown, with a minimal HTTP/1.1 client so the server is tested byte for byte.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use triage_sim::model::scenario;
use triage_sim::{LiveConfig, SimServer};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn start(name: &str) -> SimServer {
    let s = scenario::find(name).unwrap();
    let cfg = LiveConfig { lifetime: Duration::from_secs(60), ..LiveConfig::default() };
    SimServer::start(&s, scenario::DEFAULT_SEED, cfg).await.unwrap()
}

/// Send one request with `connection: close` and return (status line, headers, body), the body
/// de-chunked.
async fn call(server: &SimServer, method: &str, path: &str, body: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut raw)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    let body = if headers.contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_owned() };
    (status.to_owned(), headers.to_ascii_lowercase(), body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

fn chat(words: usize, max_tokens: u32) -> String {
    let prompt = vec!["word"; words].join(" ");
    serde_json::json!({"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "stream": true})
        .to_string()
}

#[test]
fn a_healthy_stream_is_timed_by_the_model() {
    rt().block_on(async {
        let server = start("healthy").await;
        let t0 = Instant::now();
        let (status, headers, body) = call(&server, "POST", "/v1/chat/completions", &chat(94, 8)).await;
        let elapsed = t0.elapsed();
        assert!(status.contains("200"), "{status}");
        assert!(headers.contains("text/event-stream") && headers.contains("access-control-allow-origin: *"));
        assert_eq!(body.matches("\"content\":\"tok").count(), 8, "{body}");
        assert!(body.contains("\"prompt_tokens\":100,\"completion_tokens\":8"), "{body}");
        assert!(body.contains("\"finish_reason\":\"length\"") && body.ends_with("data: [DONE]\n\n"));
        // Prefill plus 7 decode steps of ~63 ms, shared with the background traffic.
        assert!(elapsed > Duration::from_millis(400) && elapsed < Duration::from_secs(5), "{elapsed:?}");
        let id = body.split("\"id\":\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
        let (_, _, log) = call(&server, "GET", "/logs/requests.jsonl", "").await;
        let row = log.lines().find(|l| l.contains(&id)).expect("our request in the request log");
        assert!(row.contains("\"output_tokens\":8") && row.contains("\"status\":\"200\""), "{row}");
    });
}

#[test]
fn anthropic_dialect_and_cors_preflight() {
    rt().block_on(async {
        let server = start("healthy").await;
        let (status, _, body) = call(&server, "POST", "/v1/messages", &chat(10, 3)).await;
        assert!(status.contains("200"));
        assert!(body.starts_with("event: message_start") && body.contains("\"id\":\"msg_"), "{body}");
        assert_eq!(body.matches("text_delta").count(), 3);
        assert!(
            body.contains("\"stop_reason\":\"max_tokens\"")
                && body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
        );
        let (status, headers, _) = call(&server, "OPTIONS", "/v1/messages", "").await;
        assert!(status.contains("204") && headers.contains("access-control-allow-headers: *"));
    });
}

#[test]
fn metrics_logs_and_the_answer_key() {
    rt().block_on(async {
        let server = start("kv-deadlock").await;
        let (_, headers, metrics) = call(&server, "GET", "/metrics", "").await;
        assert!(headers.contains("text/plain; version=0.0.4"));
        assert!(
            metrics.contains("vllm:num_requests_running{engine=\"0\",model_name=\"sim/llama-1.1b-h200\"}")
        );
        let (_, _, index) = call(&server, "GET", "/logs", "").await;
        let index: serde_json::Value = serde_json::from_str(&index).unwrap();
        let names: Vec<&str> =
            index.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["vllm.log", "metrics.txt", "requests.jsonl"]);
        let (_, _, log) = call(&server, "GET", "/logs/vllm.log", "").await;
        assert!(log.contains("non-default args: {'model': 'sim/llama-1.1b-h200'"), "{}", &log[..300]);
        let (_, _, key) = call(&server, "GET", "/scenario", "").await;
        let key: serde_json::Value = serde_json::from_str(&key).unwrap();
        assert_eq!(key["class"], "THROUGHPUT_ZERO");
        let (status, _, _) = call(&server, "GET", "/logs/nope", "").await;
        assert!(status.contains("404"));
        let (status, _, _) = call(&server, "GET", "/v1/nothing", "").await;
        assert!(status.contains("404"));
    });
}

#[test]
fn a_cut_upstream_answers_503_and_the_node_logs_nothing() {
    rt().block_on(async {
        let server = start("upstream-cut").await;
        let before = call(&server, "GET", "/logs/vllm.log", "").await.2.len();
        let (status, _, body) = call(&server, "POST", "/v1/chat/completions", &chat(10, 4)).await;
        assert!(status.contains("503"), "{status}");
        assert_eq!(body, "no healthy upstream");
        let log = call(&server, "GET", "/logs/vllm.log", "").await.2;
        assert!(!log[before..].contains("POST"), "the node never saw it");
    });
}

#[test]
fn over_long_prompts_get_400_and_oom_an_error_event() {
    rt().block_on(async {
        let server = start("healthy").await;
        let (status, _, body) = call(&server, "POST", "/v1/chat/completions", &chat(40_000, 4)).await;
        assert!(status.contains("400") && body.contains("maximum context length is 32768"), "{status} {body}");
        let server = start("oom-long-input").await;
        let (status, _, body) = call(&server, "POST", "/v1/chat/completions", &chat(65_530, 4)).await;
        assert!(status.contains("200"));
        assert!(body.contains("\"error\":{\"object\":\"error\",\"message\":\"CUDA out of memory. Tried to allocate 256.00 GiB"), "{body}");
        let log = call(&server, "GET", "/logs/vllm.log", "").await.2;
        assert!(log.matches("torch.OutOfMemoryError").count() >= 2, "the scenario's and ours");
    });
}

#[test]
fn a_client_that_hangs_up_is_aborted() {
    rt().block_on(async {
        let server = start("healthy").await;
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        let body = chat(10, 500);
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut first = [0u8; 4096];
        let n = s.read(&mut first).await.unwrap();
        let text = String::from_utf8_lossy(&first[..n]).into_owned();
        let id = text.split("\"id\":\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
        drop(s);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let log = call(&server, "GET", "/logs/vllm.log", "").await.2;
        assert!(log.contains(&format!("Aborted request {id}.")), "{id}");
    });
}

#[test]
fn speed_compresses_time() {
    rt().block_on(async {
        let s = scenario::find("healthy").unwrap();
        let cfg = LiveConfig { speed: 10.0, lifetime: Duration::from_secs(30), ..LiveConfig::default() };
        let server = SimServer::start(&s, 1, cfg).await.unwrap();
        let t0 = Instant::now();
        let (_, _, body) = call(&server, "POST", "/v1/chat/completions", &chat(10, 20)).await;
        assert_eq!(body.matches("\"content\":\"tok").count(), 20);
        // 20 steps of ~63 simulated ms take ~0.13 s of real time at 10×.
        assert!(t0.elapsed() < Duration::from_millis(700), "{:?}", t0.elapsed());
        assert!(server.sim_seconds() > s.incident_at_s + 1.0);
    });
}

#[test]
fn it_stops_by_itself() {
    rt().block_on(async {
        let s = scenario::find("healthy").unwrap();
        let cfg = LiveConfig { lifetime: Duration::from_millis(300), ..LiveConfig::default() };
        let server = SimServer::start(&s, 1, cfg).await.unwrap();
        let addr = server.addr();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(TcpStream::connect(addr).await.is_err(), "still listening after its lifetime");
    });
}
