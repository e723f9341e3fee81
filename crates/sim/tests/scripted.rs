//! The scripted server answers what the request asks where the script leaves it open: legacy
//! completions by path, one JSON body for `"stream": false`, after the scripted timing.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use triage_core::endpoint::Api;
use triage_sim::{Script, ScriptedServer, ServerConfig};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// One request with `connection: close`: (status line, headers, raw body).
async fn call(server: &ScriptedServer, path: &str, body: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap();
    (status.to_owned(), headers.to_ascii_lowercase(), body.to_owned())
}

#[test]
fn stream_false_gets_one_json_body_after_the_scripted_timing() {
    rt().block_on(async {
        let script = |i: usize| Script {
            api: if i == 1 { Api::Anthropic } else { Api::Openai },
            ttft: Duration::from_millis(100),
            gaps: vec![Duration::from_millis(20)],
            tokens: 4,
            ..Script::default()
        };
        let server = ScriptedServer::start(script, ServerConfig::default()).await.unwrap();
        let t0 = Instant::now();
        let (status, headers, body) =
            call(&server, "/v1/chat/completions", r#"{"model":"m","messages":[],"stream":false}"#).await;
        assert!(t0.elapsed() >= Duration::from_millis(160), "{:?}", t0.elapsed());
        assert!(status.starts_with("HTTP/1.1 200 OK") && headers.contains("content-type: application/json"));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "tok0 tok1 tok2 tok3 ");
        assert_eq!(v["usage"]["completion_tokens"], 4);
        let (_, _, body) = call(&server, "/v1/messages", r#"{"stream":false}"#).await;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((v["type"].as_str(), v["usage"]["output_tokens"].as_u64()), (Some("message"), Some(4)));
        // Legacy completions, streamed: text_completion chunks, no role chunk first.
        let (_, headers, body) = call(&server, "/v1/completions", r#"{"prompt":"hi","stream":true}"#).await;
        assert!(headers.contains("text/event-stream"));
        assert!(body.contains(r#""id":"cmpl-scripted-2","object":"text_completion""#), "{body}");
        assert!(!body.contains("\"role\""), "{body}");
        assert_eq!(body.matches(r#""text":"tok"#).count(), 4, "{body}");
        // Not said: streamed, as this server always has.
        let (_, headers, _) = call(&server, "/v1/chat/completions", "{}").await;
        assert!(headers.contains("text/event-stream"));
        let records = server.records();
        assert_eq!(records.len(), 4);
        assert!(records[0].token_written.is_empty() && records[0].headers_written.is_some());
    });
}
