//! `triage scripted-serve` (hidden): the scripted SSE server as a process, for tests that drive
//! a real browser against it. It prints where it listens, serves `--requests` streams with CORS,
//! then prints the server's own record of each (when it wrote every token) and exits.

use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;
use triage_core::endpoint::Api;
use triage_sim::{Script, ScriptedServer, ServerConfig};

#[derive(Args, Debug)]
pub struct ScriptedServeArgs {
    /// Streams to serve before printing the record and exiting.
    #[arg(long, default_value_t = 1)]
    pub requests: usize,
    #[arg(long, default_value_t = 200)]
    pub ttft_ms: u64,
    #[arg(long, default_value_t = 20)]
    pub gap_ms: u64,
    #[arg(long, default_value_t = 16)]
    pub tokens: usize,
    #[arg(long, default_value = "openai", value_parser = crate::args::parse_api)]
    pub api: Api,
    /// Give up (and print what was served) after this many seconds.
    #[arg(long, default_value_t = 60)]
    pub lifetime_s: u64,
}

pub async fn run(args: ScriptedServeArgs) -> anyhow::Result<()> {
    let script = Script {
        api: args.api,
        ttft: Duration::from_millis(args.ttft_ms),
        gaps: vec![Duration::from_millis(args.gap_ms)],
        tokens: args.tokens,
        ..Script::default()
    };
    let lifetime = Duration::from_secs(args.lifetime_s);
    let server = ScriptedServer::start(
        move |_| script.clone(),
        ServerConfig { max_requests: args.requests, lifetime },
    )
    .await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::json!({ "listening": server.base_url() }))?;
        out.flush()?;
    }
    let deadline = Instant::now() + lifetime;
    loop {
        let records = server.records();
        let complete = records.iter().filter(|r| r.token_written.len() >= args.tokens).count();
        if complete >= args.requests || Instant::now() >= deadline {
            let mut out = std::io::stdout().lock();
            for r in records {
                // From the request's first byte: the server's closest view of "request sent".
                let ms = |t: Instant| t.saturating_duration_since(r.request_started).as_secs_f64() * 1e3;
                let request_read_ms =
                    r.received.saturating_duration_since(r.request_started).as_secs_f64() * 1e3;
                let tokens: Vec<f64> =
                    r.token_written.iter().map(|t| (ms(*t) * 1000.0).round() / 1000.0).collect();
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({
                        "index": r.index, "response_id": r.response_id, "path": r.path,
                        "ttft_ms": tokens.first(), "token_ms": tokens, "request_read_ms": request_read_ms,
                        "traceparent": r.header("traceparent"),
                    })
                )?;
            }
            out.flush()?;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
