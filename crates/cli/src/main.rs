//! The `triage` binary: parse arguments, run a command, print. All logic lives in the library.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use triage_cli::args::{AnalyzeArgs, Cli, Command, Format, ProbeArgs, ReportFormat};
use triage_cli::output::{self, usage};
use triage_cli::{analyze, demo, otlp, otlp_http, probe, prometheus, render};
use triage_core::endpoint;
use triage_core::timing::{StallConfig, TimerConfig};

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            output::error(format_args!("{e:#}"));
            if output::is_usage(&e) { ExitCode::from(2) } else { ExitCode::FAILURE }
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    if let Command::Analyze(args) = &cli.command {
        return cmd_analyze(args);
    }
    if let Command::Cards(args) = &cli.command {
        return triage_cli::cards::run(args);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Command::Probe(args) => rt.block_on(cmd_probe(*args)),
        Command::Demo(args) => match &args.scenario {
            Some(name) => rt.block_on(triage_cli::sim::demo(name, args.seed, args.format)),
            None => rt.block_on(cmd_demo(args.format)),
        },
        Command::Sim(args) => rt.block_on(triage_cli::sim::run(*args)),
        Command::Watch(args) => rt.block_on(triage_cli::watch::run(*args)),
        Command::Analyze(args) => cmd_analyze(&args),
        Command::Kv(args) => triage_cli::kv::run(&args),
        Command::Cards(args) => triage_cli::cards::run(&args),
        Command::ScriptedServe(args) => {
            rt.block_on(triage_cli::scripted_serve::run(args)).map(|()| ExitCode::SUCCESS)
        }
    }
}

fn print(text: &str) -> anyhow::Result<()> {
    Ok(output::text(text)?)
}

fn print_json(json: &str) -> anyhow::Result<()> {
    Ok(output::json(json)?)
}

async fn cmd_probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let prompt = match (&args.prompt, args.prompt_tokens) {
        (Some(p), _) => p.clone(),
        (None, Some(n)) => endpoint::synthetic_prompt(n),
        (None, None) => "Write a short story about a lighthouse keeper, about 200 words.".to_owned(),
    };
    let opts = probe::ProbeOptions {
        url: args.url.clone(),
        api: args.api,
        model: args.model.clone(),
        prompt,
        max_tokens: args.max_tokens,
        requests: args.requests as usize,
        concurrency: args.concurrency as usize,
        rate: args.rate,
        arrival: args.arrival.into(),
        seed: args.seed,
        timeout: args.timeout,
        headers: args.headers.clone(),
        api_key: probe::api_key(args.api, args.api_key_env.as_deref())?,
        timer: TimerConfig {
            stall: StallConfig {
                factor: args.stall_factor,
                threshold_ns: u64::try_from(args.stall_min.as_nanos()).unwrap_or(u64::MAX),
            },
            ..TimerConfig::default()
        },
        traceparent: !args.no_traceparent,
    };
    if let Err(e) = probe::resolve(&opts) {
        return usage(e.to_string());
    }
    otlp_http::check_headers(&args.otlp_headers)?;
    let otlp_endpoint = match &args.otlp_endpoint {
        Some(url) => Some(otlp_http::Endpoint {
            base: otlp_http::base_url(url)?,
            headers: args.otlp_headers.clone(),
            timeout: args.otlp_timeout,
        }),
        None => None,
    };
    // Outputs are checked before anything is sent: a run must not be lost to a bad path.
    let mut out_file = match &args.out {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| output::UsageError(format!("--out {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let otlp_file = match &args.otlp {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| output::UsageError(format!("--otlp {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let bar = ProgressBar::new(opts.requests as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} requests {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let on_done = |r: &triage_core::probe::RequestRecord| {
        if !r.ok {
            failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        bar.set_message(format!("({} failed)", failed.load(std::sync::atomic::Ordering::Relaxed)));
        bar.inc(1);
    };
    let run = probe::run(&opts, Instant::now(), &on_done).await?;
    bar.finish_and_clear();
    if let (Some(f), Some(path)) = (&mut out_file, &args.out) {
        let mut w = std::io::BufWriter::new(f);
        for r in &run.report.requests {
            serde_json::to_writer(&mut w, r)?;
            w.write_all(b"\n")?;
        }
        w.flush().with_context(|| format!("writing {}", path.display()))?;
    }
    match args.format {
        Format::Json => print_json(&(serde_json::to_string_pretty(&run.report)? + "\n"))?,
        Format::Text => print(&render::probe_text(&run.report))?,
    }
    // The export comes after the results are printed: a receiver that fails loses nothing.
    let exported = export_otlp(&args, &opts, &run, otlp_file, otlp_endpoint.as_ref()).await;
    if let Err(e) = &exported {
        output::error(format_args!("{e:#}"));
    }
    Ok(if run.report.summary.ok > 0 && exported.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `--otlp FILE` and `--otlp-endpoint URL`: the run as OTLP/JSON, written, then posted.
async fn export_otlp(
    args: &ProbeArgs,
    opts: &probe::ProbeOptions,
    run: &probe::ProbeRun,
    file: Option<std::fs::File>,
    endpoint: Option<&otlp_http::Endpoint>,
) -> anyhow::Result<()> {
    let export = otlp::Export::of(run, &opts.model, opts.max_tokens);
    // The characters a terminal acts on as `\u` escapes, as everything the CLI writes (the
    // same JSON values).
    let line = |s: String| triage_core::safe::escape_json_controls(&s).into_owned();
    if let (Some(f), Some(path)) = (file, &args.otlp) {
        let mut w = std::io::BufWriter::new(f);
        let what = || format!("writing --otlp {}", path.display());
        w.write_all(line(otlp::metrics_json(&export)).as_bytes()).with_context(what)?;
        w.write_all(b"\n").with_context(what)?;
        for t in otlp::trace_lines(&export) {
            w.write_all(line(t).as_bytes()).with_context(what)?;
            w.write_all(b"\n").with_context(what)?;
        }
        w.flush().with_context(what)?;
    }
    if let Some(ep) = endpoint {
        let mut secrets = probe::secrets_of(opts);
        for (_, v) in &ep.headers {
            secrets.add(v);
        }
        let traces = otlp::trace_lines(&export).map(line);
        match otlp_http::post(ep, line(otlp::metrics_json(&export)), traces, &secrets).await {
            Ok(posted) => {
                for w in &posted.warnings {
                    output::note(format_args!("triage: warning: --otlp-endpoint: {w}"));
                }
                output::note(format_args!(
                    "exported the run to {} ({} OTLP request(s))",
                    secrets.redact(&ep.base),
                    posted.requests
                ));
            }
            Err(f) => {
                anyhow::bail!("--otlp-endpoint: the export failed ({}): {}", f.kind.as_str(), f.message)
            }
        }
    }
    Ok(())
}

fn cmd_analyze(args: &AnalyzeArgs) -> anyhow::Result<ExitCode> {
    for f in args.files.iter().filter(|f| *f != "-") {
        analyze::check_input(std::path::Path::new(f))?;
    }
    let lang = args.lang.into();
    let slo = triage_core::analyze::facts::Slo { ttft_ms: args.slo_ttft_ms, itl_ms: args.slo_itl_ms };
    let report = match &args.prometheus {
        None => analyze::analyze_paths_with(&args.files, lang, slo)?,
        Some(url) => {
            let opts = prometheus_options(args, url)?;
            // Files given alongside are analysed together with the window; without files,
            // standard input is not read.
            let files = if args.files.is_empty() {
                None
            } else {
                Some(analyze::analyze_paths_with(&args.files, lang, slo)?)
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            rt.block_on(prometheus::analyze(&opts, lang, slo, files))?
        }
    };
    match args.format {
        ReportFormat::Json => print_json(&(serde_json::to_string_pretty(&report)? + "\n"))?,
        ReportFormat::Text => print(&render::analyze_text_in(&report, lang))?,
        ReportFormat::Markdown => print(&triage_core::analyze::markdown::report(&report, lang))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `--prometheus` and its flags, the credential read from the environment variable named.
fn prometheus_options(args: &AnalyzeArgs, url: &str) -> anyhow::Result<prometheus::PromOptions> {
    let env = |flag: &str, var: &str| -> anyhow::Result<String> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
            _ => usage(format!("{flag} {var}: that environment variable is not set (or empty)")),
        }
    };
    let auth = match (&args.prometheus_token_env, &args.prometheus_basic_auth_env) {
        (Some(var), _) => prometheus::Auth::Bearer(env("--prometheus-token-env", var)?),
        (None, Some(var)) => match env("--prometheus-basic-auth-env", var)?.split_once(':') {
            Some((u, p)) => prometheus::Auth::Basic(u.to_owned(), p.to_owned()),
            None => return usage(format!("--prometheus-basic-auth-env {var}: expected USER:PASSWORD")),
        },
        (None, None) => prometheus::Auth::None,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64().floor());
    let end_s = args.to.unwrap_or(now);
    let start_s = match (args.from, args.since) {
        (Some(from), _) => from,
        (None, Some(since)) => end_s - since.as_secs_f64(),
        (None, None) => end_s - 1800.0,
    };
    Ok(prometheus::PromOptions {
        url: url.to_owned(),
        selector: args.selector.clone(),
        window: triage_core::prometheus::query::Window { start_s, end_s, step_s: args.step.as_secs_f64() },
        auth,
        query_timeout: args.prometheus_query_timeout,
        total_timeout: args.prometheus_timeout,
        limits: triage_core::prometheus::Limits {
            max_series: args.max_series as usize,
            max_points: args.max_points,
        },
        max_body_bytes: (args.max_body_mib as usize) << 20,
    })
}

async fn cmd_demo(format: Format) -> anyhow::Result<ExitCode> {
    eprintln!("starting the scripted SSE server on 127.0.0.1 and probing it (12 requests, 4 at a time)…");
    let (mut run, records, origin) = demo::run().await?;
    let errors = demo::timing_errors_us(&run, &records, origin);
    let line = demo::accuracy_line(&errors);
    match format {
        Format::Json => {
            run.report.limits.push(line);
            print_json(&(serde_json::to_string_pretty(&run.report)? + "\n"))?
        }
        Format::Text => {
            print(&render::probe_text(&run.report))?;
            print(&format!("\n{line}\n"))?;
            eprintln!("now a real incident, simulated: triage demo kv-leak (all of them: triage sim --list)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
