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
    call_with(server, method, path, "", body).await
}

/// [`call`] with more header lines (`extra`, each ending in CRLF).
async fn call_with(
    server: &SimServer,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> (String, String, String) {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
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
        // In the API's error shape, the gateway's words as the message.
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["message"], "no healthy upstream", "{body}");
        assert_eq!(v["error"]["code"], 503, "{body}");
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
        let cfg = LiveConfig { speed: 20.0, lifetime: Duration::from_secs(30), ..LiveConfig::default() };
        let server = SimServer::start(&s, 1, cfg).await.unwrap();
        let t0 = Instant::now();
        let (_, _, body) = call(&server, "POST", "/v1/chat/completions", &chat(10, 60)).await;
        assert_eq!(body.matches("\"content\":\"tok").count(), 60);
        // 60 steps of ~63 simulated ms: ~3.8 s uncompressed, ~0.19 s of real time at 20×. The
        // bound sits between, generous for a loaded 2-core machine.
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
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

/// A request body with `stream` set as given (`None`: not said, which means not streamed).
fn request(words: usize, max_tokens: u32, stream: Option<bool>, route: &str) -> String {
    let prompt = vec!["word"; words].join(" ");
    let mut v = if route == "/v1/completions" {
        serde_json::json!({"model": "m", "prompt": prompt, "max_tokens": max_tokens})
    } else {
        serde_json::json!({"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens})
    };
    if let Some(stream) = stream {
        v["stream"] = stream.into();
    }
    v.to_string()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn without_stream_the_answer_is_one_json_body_after_the_generation() {
    rt().block_on(async {
        let server = start("healthy").await;
        let t0 = Instant::now();
        let (status, headers, body) =
            call(&server, "POST", "/v1/chat/completions", &request(94, 8, None, "chat")).await;
        assert!(t0.elapsed() > Duration::from_millis(400), "after the whole generation: {:?}", t0.elapsed());
        assert!(status.starts_with("HTTP/1.1 200 OK"), "{status}");
        assert!(headers.contains("content-type: application/json") && headers.contains("content-length: "));
        let v = json(&body);
        assert_eq!(v["object"], "chat.completion");
        assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert_eq!(v["choices"][0]["message"]["role"], "assistant");
        assert_eq!(v["choices"][0]["message"]["content"], "tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 ");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["usage"], serde_json::json!({"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108, "prompt_tokens_details": null}));
        let (status, _, body) =
            call(&server, "POST", "/v1/messages", &request(10, 3, Some(false), "messages")).await;
        assert!(status.contains("200"), "{status}");
        let v = json(&body);
        assert_eq!((v["type"].as_str(), v["role"].as_str()), (Some("message"), Some("assistant")));
        assert!(v["id"].as_str().unwrap().starts_with("msg_"));
        assert_eq!(v["content"], serde_json::json!([{"type": "text", "text": "tok0 tok1 tok2 "}]));
        assert_eq!(v["stop_reason"], "max_tokens");
        assert_eq!(v["usage"], serde_json::json!({"input_tokens": 16, "output_tokens": 3}));
        // The request log has both, finished.
        let (_, _, log) = call(&server, "GET", "/logs/requests.jsonl", "").await;
        let id = v["id"].as_str().unwrap().replacen("msg_", "chatcmpl-", 1);
        assert!(log.lines().any(|l| l.contains(&id) && l.contains("\"output_tokens\":3")), "{id}");
    });
}

#[test]
fn legacy_completions_stream_text_completion_chunks_or_answer_whole() {
    rt().block_on(async {
        let server = start("healthy").await;
        let (status, headers, body) =
            call(&server, "POST", "/v1/completions", &request(10, 4, Some(true), "/v1/completions")).await;
        assert!(status.contains("200") && headers.contains("text/event-stream"), "{status}");
        let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 4 + 2 + 1, "{body}");
        for (i, e) in events[..4].iter().enumerate() {
            let v = json(e.strip_prefix("data: ").unwrap());
            assert_eq!(v["object"], "text_completion");
            assert!(v["id"].as_str().unwrap().starts_with("cmpl-"));
            assert_eq!(v["choices"][0]["text"], format!("tok{i} "));
            assert_eq!(v["choices"][0]["finish_reason"], serde_json::Value::Null);
        }
        let last = json(events[4].strip_prefix("data: ").unwrap());
        assert_eq!(
            (last["choices"][0]["text"].as_str(), last["choices"][0]["finish_reason"].as_str()),
            (Some(""), Some("length"))
        );
        let usage = json(events[5].strip_prefix("data: ").unwrap());
        assert_eq!(usage["usage"]["completion_tokens"], 4);
        assert_eq!(usage["choices"], serde_json::json!([]));
        assert_eq!(events[6], "data: [DONE]");
        let (status, _, body) =
            call(&server, "POST", "/v1/completions", &request(10, 4, None, "/v1/completions")).await;
        assert!(status.contains("200"), "{status}");
        let v = json(&body);
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["choices"][0]["text"], "tok0 tok1 tok2 tok3 ");
        assert_eq!(v["usage"]["prompt_tokens"], 16);
    });
}

#[test]
fn models_answer_in_the_dialect_of_the_client() {
    rt().block_on(async {
        let server = start("healthy").await;
        let (_, _, body) = call(&server, "GET", "/v1/models", "").await;
        let v = json(&body);
        assert_eq!(v["object"], "list");
        let m = &v["data"][0];
        assert_eq!(m["id"], "sim/llama-1.1b-h200");
        assert_eq!((m["object"].as_str(), m["owned_by"].as_str()), (Some("model"), Some("vllm")));
        assert!(m["created"].is_u64() && m["max_model_len"] == 32768);
        let (_, _, body) =
            call_with(&server, "GET", "/v1/models?limit=20", "anthropic-version: 2023-06-01\r\n", "").await;
        let v = json(&body);
        assert_eq!(v["has_more"], false);
        assert_eq!(v["data"][0]["type"], "model");
        assert_eq!(v["data"][0]["id"], "sim/llama-1.1b-h200");
        assert!(v["data"][0]["created_at"].as_str().unwrap().ends_with('Z'));
    });
}

#[test]
fn errors_come_in_each_apis_shape() {
    rt().block_on(async {
        let server = start("healthy").await;
        let long = request(40_000, 4, Some(true), "chat");
        let (status, _, body) = call(&server, "POST", "/v1/chat/completions", &long).await;
        assert!(status.starts_with("HTTP/1.1 400 Bad Request"), "{status}");
        let v = json(&body);
        assert_eq!(
            (v["error"]["type"].as_str(), v["error"]["code"].as_u64()),
            (Some("BadRequestError"), Some(400))
        );
        assert!(v["error"]["message"].as_str().unwrap().contains("maximum context length is 32768"));
        let (status, _, body) = call(&server, "POST", "/v1/messages", &long).await;
        assert!(status.contains("400"), "{status}");
        let v = json(&body);
        assert_eq!(
            (v["type"].as_str(), v["error"]["type"].as_str()),
            (Some("error"), Some("invalid_request_error"))
        );
        assert!(v["error"]["message"].as_str().unwrap().contains("maximum context length"));
        let (status, _, body) = call(&server, "POST", "/v1/messages", "{not json").await;
        assert!(
            status.contains("400") && json(&body)["error"]["type"] == "invalid_request_error",
            "{status} {body}"
        );
        let (status, headers, _) = call(&server, "GET", "/v1/chat/completions", "").await;
        assert!(
            status.starts_with("HTTP/1.1 405 Method Not Allowed") && headers.contains("allow: post"),
            "{status}"
        );
        // A failed generation that was not streamed: 500 in the same shape.
        let server = start("oom-long-input").await;
        let (status, _, body) =
            call(&server, "POST", "/v1/messages", &request(65_530, 4, None, "messages")).await;
        assert!(status.starts_with("HTTP/1.1 500 Internal Server Error"), "{status}");
        let v = json(&body);
        assert_eq!(v["error"]["type"], "api_error");
        assert!(v["error"]["message"].as_str().unwrap().starts_with("CUDA out of memory"), "{body}");
    });
}

#[test]
fn rate_limited_requests_get_429_with_retry_after_in_each_shape() {
    rt().block_on(async {
        let server = start("client-retries").await;
        let mut seen = Vec::new();
        for i in 0..60 {
            let route = if i % 2 == 0 { "/v1/chat/completions" } else { "/v1/messages" };
            let (status, headers, body) = call(&server, "POST", route, &request(5, 1, None, route)).await;
            if status.contains("429") {
                assert!(status.starts_with("HTTP/1.1 429 Too Many Requests"), "{status}");
                assert!(headers.contains("retry-after: 1"), "{headers}");
                let v = json(&body);
                let kind = if route == "/v1/messages" { &v["error"]["type"] } else { &v["error"]["code"] };
                seen.push((route, kind.clone()));
            }
            if seen.iter().any(|s| s.0 == "/v1/messages") && seen.iter().any(|s| s.0 != "/v1/messages") {
                break;
            }
        }
        assert!(seen.contains(&("/v1/messages", serde_json::json!("rate_limit_error"))), "{seen:?}");
        assert!(seen.contains(&("/v1/chat/completions", serde_json::json!(429))), "{seen:?}");
    });
}
