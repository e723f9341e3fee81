//! `triage sim` (the incident simulator: list, write a scenario's files, serve it live) and
//! `triage demo SCENARIO` (simulate, probe, analyse, and say whether the fault was named).
//!
//! The model is `triage-sim-model` (pure, also in the browser); `triage-sim` serves it over
//! HTTP. This module only chooses, writes files and prints.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use triage_core::analyze::Analyzer;
use triage_core::analyze::report::Report;
use triage_core::analyze::rules::listed;
use triage_core::arrival::Arrival;
use triage_core::endpoint::{self, Api};
use triage_core::timing::TimerConfig;
use triage_sim::model::engine::Totals;
use triage_sim::model::fleet::{self, FleetConfig};
use triage_sim::model::output::clock;
use triage_sim::model::{Artifact, Scenario, Sim, scenario};
use triage_sim::{LiveConfig, SimServer};

use crate::args::{Format, SimArgs};
use crate::probe::{self, ProbeOptions, ProbeRun};
use crate::render;

fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// One line of `triage sim --list --format json`.
#[derive(Serialize)]
struct Listed {
    name: &'static str,
    class: &'static str,
    cause: &'static str,
}

/// The answer key of a scenario, as `--format json` prints it.
pub fn answer_key(s: &Scenario, seed: u64) -> serde_json::Value {
    serde_json::json!({
        "name": s.name,
        "class": s.class_str(),
        "cause": s.cause,
        "rules": s.rules,
        "symptom": s.symptom,
        "seed": seed,
    })
}

/// The slowest and fastest `--speed`: slower leaves a request waiting on a frozen clock, faster
/// makes the engine spend more than a core simulating.
pub const SPEED_RANGE: std::ops::RangeInclusive<f64> = 0.01..=1000.0;

/// `--speed`: simulated seconds per real second, a number in [`SPEED_RANGE`] (not NaN, not
/// infinite, not zero or negative).
pub fn parse_speed(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if SPEED_RANGE.contains(&v) => Ok(v),
        _ => Err(format!(
            "expected simulated seconds per real second, from {} to {}, got {s:?}",
            SPEED_RANGE.start(),
            SPEED_RANGE.end()
        )),
    }
}

fn unknown(name: &str) -> ExitCode {
    let names: Vec<&str> = scenario::all().iter().map(|s| s.name).collect();
    eprintln!("triage: error: unknown scenario {name:?}; one of: {}", names.join(", "));
    ExitCode::from(2)
}

/// `triage sim`.
pub async fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        let list: Vec<Listed> = scenario::faults()
            .iter()
            .map(|s| Listed { name: s.name, class: s.class_str(), cause: s.cause })
            .collect();
        match args.format {
            Format::Json => print(&(serde_json::to_string_pretty(&list)? + "\n"))?,
            Format::Text => {
                let mut t = String::new();
                for s in &list {
                    t.push_str(&format!("{:<26} {:<16} {}\n", s.name, s.class, s.cause));
                }
                t.push_str("\nalso: healthy (the control: nothing injected)\n");
                print(&t)?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.scenario.as_deref().unwrap_or_default();
    let Some(s) = scenario::find(name) else { return Ok(unknown(name)) };
    if let Some(file) = &args.openmetrics {
        return openmetrics(&s, &args, file);
    }
    // clap's `requires` gives way to `conflicts_with` (--openmetrics conflicts with --out), so
    // the fleet's options are checked here.
    if args.replicas.is_some() || args.start.is_some() {
        eprintln!("triage: error: --replicas and --start go with --openmetrics FILE");
        return Ok(ExitCode::from(2));
    }
    match (&args.out, args.serve) {
        (Some(dir), None) => offline(&s, &args, dir),
        (None, Some(port)) => serve(&s, &args, port).await,
        _ => {
            eprintln!(
                "triage: error: give --out DIR (write the files), --openmetrics FILE (the fleet's time series) or --serve PORT (serve it live)"
            );
            Ok(ExitCode::from(2))
        }
    }
}

/// `--openmetrics FILE`: the fleet over the incident as OpenMetrics time series.
fn openmetrics(s: &Scenario, args: &SimArgs, file: &Path) -> anyhow::Result<ExitCode> {
    let cfg = FleetConfig {
        replicas: args.replicas.unwrap_or(3),
        start_unix_s: args.start.unwrap_or(clock::EPOCH_UNIX_S),
        seed: args.seed,
        duration_s: args.duration.map(|d| d.as_secs().max(1)),
    };
    let started = Instant::now();
    let run = match fleet::run(s, cfg) {
        Ok(run) => run,
        Err(e @ fleet::FleetError::TooLarge { .. }) => {
            eprintln!("triage: error: --openmetrics: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => anyhow::bail!("{e}"),
    };
    let took = started.elapsed();
    if let Err(refusal) = write_file(file, &run.openmetrics, args.force, "--openmetrics")? {
        eprintln!("triage: error: {refusal}");
        return Ok(ExitCode::from(2));
    }
    let a = &run.answer;
    match args.format {
        Format::Json => {
            let out = serde_json::json!({
                "scenario": answer_key(s, args.seed),
                "openmetrics": file.display().to_string(),
                "bytes": run.openmetrics.len(),
                "wall_ms": (took.as_secs_f64() * 1e6).round() / 1e3,
                "fleet": a,
            });
            print(&(serde_json::to_string_pretty(&out)? + "\n"))?;
        }
        Format::Text => {
            let fault = match a.faulty.map(|i| &a.replicas[i]) {
                Some(f) => format!("on {} ({}", f.pod, f.instance),
                None => "on no replica (the healthy control".to_owned(),
            };
            let mut t = format!(
                "scenario {} ({}), seed {}: {} replicas of {} scraped every {} s from {} to {} (unix s) in {:.1} ms\n  {}  {} bytes  OpenMetrics with timestamps\n\n",
                s.name,
                s.class_str(),
                args.seed,
                a.replicas.len(),
                a.model_name,
                a.scrape_every_s,
                a.from_unix_s,
                a.to_unix_s,
                took.as_secs_f64() * 1e3,
                file.display(),
                run.openmetrics.len()
            );
            for r in &a.replicas {
                t.push_str(&format!(
                    "  {:<8} {:<16} {:<11} {} GPU(s)  seed {}\n",
                    r.pod,
                    r.instance,
                    r.hostname,
                    r.gpus.len(),
                    r.seed
                ));
            }
            let gpu =
                a.faulty_gpu.as_ref().map(|g| format!(", GPU {} ({})", g.gpu, g.uuid)).unwrap_or_default();
            t.push_str(&format!(
                "\nthe fault to find: {} {fault}{gpu}) (the answer: --format json)\nnow: promtool tsdb create-blocks-from openmetrics {} DIR\n     prometheus --storage.tsdb.path=DIR --storage.tsdb.retention.time=100y --config.file=EMPTY.yml\n     triage analyze --prometheus http://localhost:9090 --from {} --to {}\n",
                s.symptom,
                file.display(),
                a.from_unix_s,
                a.to_unix_s
            ));
            print(&t)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--force` must never replace: anything but a regular file or a link (a device, a FIFO,
/// a socket — `--openmetrics /dev/null --force` as root would have replaced `/dev/null`).
fn not_replaceable(m: &std::fs::Metadata) -> bool {
    !(m.is_file() || m.file_type().is_symlink())
}

/// Write one file without following a symbolic link at `path`: a regular file that exists (or a
/// link) is replaced only with `force`, by a new file renamed over it; nothing else is ever
/// replaced, and a missing parent folder is refused. `Ok(Err(why))` is a refusal (exit 2).
fn write_file(path: &Path, content: &str, force: bool, flag: &str) -> anyhow::Result<Result<(), String>> {
    let path: PathBuf = path.components().collect();
    if path.file_name().is_none() {
        return Ok(Err(format!("{flag} {} names no file", path.display())));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Ok(Err(format!("{flag} {}: the folder {} does not exist", path.display(), parent.display())));
    }
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => Ok(Err(format!("{flag} {} is a directory", path.display()))),
        Ok(m) if not_replaceable(&m) => {
            Ok(Err(format!("{flag} {} is not a regular file; nothing was written", path.display())))
        }
        Ok(m) if !force => {
            let what = if m.file_type().is_symlink() { " (a symbolic link)" } else { "" };
            Ok(Err(format!("{} exists{what}; nothing was written (--force replaces it)", path.display())))
        }
        Ok(_) => {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
            let written = create_new(&tmp, content).and_then(|()| std::fs::rename(&tmp, &path));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                return Err(e).with_context(|| format!("replacing {}", path.display()));
            }
            Ok(Ok(()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_new(&path, content).with_context(|| format!("writing {}", path.display()))?;
            Ok(Ok(()))
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// `--out DIR`: the incident's files, written into `dir`.
fn offline(s: &Scenario, args: &SimArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    let seed = args.seed;
    let until = args.duration.map_or(s.duration_ns(), |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let started = Instant::now();
    let mut sim = Sim::new(s.config(seed));
    sim.run(until);
    let files = sim.artifacts();
    let took = started.elapsed();
    if let Err(refusal) = write_files(dir, &files, args.force)? {
        eprintln!("triage: error: {refusal}");
        return Ok(ExitCode::from(2));
    }
    let totals = sim.totals();
    match args.format {
        Format::Json => {
            let listed: Vec<_> = files
                .iter()
                .map(|f| serde_json::json!({"name": f.name, "what": f.what, "bytes": f.content.len(), "analyzable": f.analyzable}))
                .collect();
            let out = serde_json::json!({
                "scenario": answer_key(s, seed),
                "simulated_s": until as f64 / 1e9,
                "wall_ms": (took.as_secs_f64() * 1e6).round() / 1e3,
                "dir": dir.display().to_string(),
                "totals": totals,
                "files": listed,
            });
            print(&(serde_json::to_string_pretty(&out)? + "\n"))?;
        }
        Format::Text => {
            let run =
                OfflineRun { scenario: s, seed, until_ns: until, took, dir, files: &files, totals: &totals };
            print(&offline_text(&run))?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Write `files` into `dir` without ever following a symbolic link: `dir` itself must not be
/// one, and a file that exists is replaced only with `force` — by a new file renamed over it, so
/// a planted link is replaced, not written through. `Ok(Err(why))` is a refusal (nothing was
/// written); `Err` an I/O failure.
fn write_files(dir: &Path, files: &[Artifact], force: bool) -> anyhow::Result<Result<(), String>> {
    // `out/` and `out` are the same directory; a trailing slash would make the check follow a link.
    let dir: PathBuf = dir.components().collect();
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Ok(Err(format!(
                "--out {} is a symbolic link; give the directory it points to",
                dir.display()
            )));
        }
        Ok(m) if !m.is_dir() => return Ok(Err(format!("--out {} is not a directory", dir.display()))),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    let mut paths = Vec::with_capacity(files.len());
    for f in files {
        if Path::new(&f.name).file_name() != Some(std::ffi::OsStr::new(&f.name)) {
            anyhow::bail!("the simulator named a file {:?}, which is not a plain file name", f.name);
        }
        let path = dir.join(&f.name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => return Ok(Err(format!("{} is a directory", path.display()))),
            Ok(m) if not_replaceable(&m) => {
                return Ok(Err(format!("{} is not a regular file; nothing was written", path.display())));
            }
            Ok(m) if !force => {
                let what = if m.file_type().is_symlink() { " (a symbolic link)" } else { "" };
                return Ok(Err(format!(
                    "{} exists{what}; nothing was written (--force replaces it)",
                    path.display()
                )));
            }
            Ok(_) => paths.push((path, true)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => paths.push((path, false)),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    for (f, (path, exists)) in files.iter().zip(&paths) {
        if *exists {
            let tmp = dir.join(format!(".{}.{}.tmp", f.name, std::process::id()));
            let written = create_new(&tmp, &f.content).and_then(|()| std::fs::rename(&tmp, path));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                return Err(e).with_context(|| format!("replacing {}", path.display()));
            }
        } else {
            create_new(path, &f.content).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(Ok(()))
}

/// Create `path`, failing if anything is there — a file, or a link (never followed).
fn create_new(path: &Path, content: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(content.as_bytes())?;
    file.flush()
}

/// One offline run, written: what its summary reports.
#[derive(Clone, Copy)]
struct OfflineRun<'a> {
    scenario: &'a Scenario,
    seed: u64,
    /// Simulated time covered.
    until_ns: u64,
    /// Wall time the simulation took.
    took: Duration,
    dir: &'a Path,
    files: &'a [Artifact],
    totals: &'a Totals,
}

fn offline_text(run: &OfflineRun<'_>) -> String {
    let OfflineRun { scenario: s, seed, until_ns, took, dir, files, totals: t } = *run;
    let mut out = format!(
        "scenario {} ({}), seed {seed}: {:.0} simulated seconds in {:.1} ms\n",
        s.name,
        s.class_str(),
        until_ns as f64 / 1e9,
        took.as_secs_f64() * 1e3
    );
    out.push_str(&format!(
        "  {} requests reached the engine: {} finished, {} refused, {} abandoned by their client, {} out of memory; {} preemptions, {} tokens generated\n\n",
        t.attempts, t.finished, t.rejected, t.client_gone, t.oom, t.preemptions, t.generated_tokens
    ));
    for f in files {
        out.push_str(&format!(
            "  {:<40} {:>10} bytes  {}\n",
            dir.join(&f.name).display(),
            f.content.len(),
            f.what
        ));
    }
    let analyzable: Vec<String> =
        files.iter().filter(|f| f.analyzable).map(|f| dir.join(&f.name).display().to_string()).collect();
    out.push_str(&format!(
        "\nthe incident to find: {} (the answer: triage sim --scenario {} --format json, or the `rules` of --list)\nnow: triage analyze {}\n",
        s.symptom,
        s.name,
        analyzable.join(" ")
    ));
    out
}

/// The most simulated time one run may cover (offline `--duration`, live `--speed` × `--lifetime`):
/// the simulated service keeps its logs in memory, ~3 MB per simulated hour.
const MAX_SIMULATED_S: f64 = 86_400.0;

async fn serve(s: &Scenario, args: &SimArgs, port: u16) -> anyhow::Result<ExitCode> {
    let simulated_s = args.speed * args.lifetime.as_secs_f64();
    if simulated_s > MAX_SIMULATED_S {
        eprintln!(
            "triage: error: --speed {} for --lifetime {:.0} s would simulate {:.0} h; at most {:.0} h (lower either)",
            args.speed,
            args.lifetime.as_secs_f64(),
            simulated_s / 3600.0,
            MAX_SIMULATED_S / 3600.0
        );
        return Ok(ExitCode::from(2));
    }
    let config = LiveConfig { speed: args.speed, lifetime: args.lifetime, port, ..LiveConfig::default() };
    let server = SimServer::start(s, args.seed, config).await.context("starting the simulator")?;
    let base = server.base_url();
    let root = base.trim_end_matches("/v1").to_owned();
    match args.format {
        Format::Json => print(
            &(serde_json::json!({
                "listening": base,
                "metrics": format!("{root}/metrics"),
                "logs": format!("{root}/logs"),
                "scenario": s.name,
                "incident_at_s": s.incident_at_s,
                "lifetime_s": args.lifetime.as_secs_f64(),
            })
            .to_string()
                + "\n"),
        )?,
        Format::Text => print(&format!(
            "scenario {} fast-forwarded to {:.0} s; serving live on 127.0.0.1 for {:.0} s (Ctrl-C stops it):\n  OpenAI     POST {base}/chat/completions  (and {base}/completions; \"stream\": true or not)\n  Anthropic  POST {base}/messages\n  metrics    GET  {root}/metrics\n  logs       GET  {root}/logs  and  {root}/logs/NAME\n  try: triage probe {base} --model {} -n 8 -c 4\n",
            s.name,
            s.incident_at_s,
            args.lifetime.as_secs_f64(),
            scenario::MODEL
        ))?,
    }
    tokio::time::sleep(args.lifetime).await;
    server.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// A demo run: the live incident, what the probe saw, what the analyzer said.
pub struct ScenarioDemo {
    pub scenario: Scenario,
    pub seed: u64,
    pub url: String,
    pub probe: ProbeRun,
    pub report: Report,
    /// The files the analyzer read.
    pub analyzed: Vec<String>,
    /// The simulated moment they were read.
    pub logs_at_s: f64,
}

impl ScenarioDemo {
    /// The analyzer's top finding is one of the scenario's rules (or, for the healthy control,
    /// there is none).
    pub fn named(&self) -> bool {
        match self.report.findings.first() {
            Some(top) => listed(self.scenario.rules, &top.rule),
            None => self.scenario.rules.is_empty(),
        }
    }

    /// Some finding names the fault, with the scenario's class.
    pub fn found(&self) -> bool {
        self.scenario.rules.is_empty() && self.report.findings.is_empty()
            || self
                .report
                .findings
                .iter()
                .any(|f| listed(self.scenario.rules, &f.rule) && Some(f.class) == self.scenario.class)
    }
}

/// Start the scenario live, probe it with its plan, then analyse everything it logged.
pub async fn run_demo(name: &str, seed: u64) -> anyhow::Result<ScenarioDemo> {
    let s = scenario::find(name).with_context(|| format!("unknown scenario {name:?}"))?;
    let p = s.probe;
    let budget = Duration::from_secs_f64(p.timeout_s * f64::from(p.requests) + 60.0);
    let server = SimServer::start(&s, seed, LiveConfig { lifetime: budget, ..LiveConfig::default() })
        .await
        .context("starting the simulator")?;
    let opts = ProbeOptions {
        url: server.base_url(),
        api: Api::Openai,
        model: scenario::MODEL.to_owned(),
        prompt: endpoint::synthetic_prompt(p.prompt_tokens as usize),
        max_tokens: p.max_tokens,
        requests: p.requests as usize,
        concurrency: p.concurrency as usize,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs_f64(p.timeout_s),
        headers: Vec::new(),
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: false,
    };
    let mut run = probe::run(&opts, Instant::now(), &|_| {}).await?;
    run.report.warnings.retain(|w| !w.starts_with("no API key"));
    if let Some(t) = s.logs_at_ns() {
        server.fast_forward(t);
    }
    let logs_at_s = server.sim_seconds();
    let files = server.artifacts();
    server.shutdown();
    let mut a = Analyzer::new();
    let mut analyzed = Vec::new();
    for f in files.iter().filter(|f| f.analyzable) {
        a.add_text(&f.name, &f.content);
        analyzed.push(f.name.clone());
    }
    Ok(ScenarioDemo { url: opts.url, scenario: s, seed, probe: run, report: a.finish(), analyzed, logs_at_s })
}

/// `triage demo SCENARIO`.
pub async fn demo(name: &str, seed: u64, format: Format) -> anyhow::Result<ExitCode> {
    let Some(s) = scenario::find(name) else { return Ok(unknown(name)) };
    let p = s.probe;
    eprintln!(
        "simulating {} (seed {seed}): {:.0} s of traffic fast-forwarded, then live on 127.0.0.1; probing it with {} request(s), {} at a time, {}-token prompts, max_tokens {}, {:.0} s timeout…",
        s.name, s.incident_at_s, p.requests, p.concurrency, p.prompt_tokens, p.max_tokens, p.timeout_s
    );
    let d = run_demo(name, seed).await?;
    match format {
        Format::Json => {
            let out = serde_json::json!({
                "scenario": answer_key(&d.scenario, seed),
                "url": d.url,
                "probe": d.probe.report,
                "analyzed": d.analyzed,
                "logs_at_s": d.logs_at_s,
                "report": d.report,
                "named": d.named(),
            });
            print(&(serde_json::to_string_pretty(&out)? + "\n"))?;
        }
        Format::Text => print(&demo_text(&d))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn demo_text(d: &ScenarioDemo) -> String {
    let s = &d.scenario;
    let mut out = format!(
        "== the service: simulated incident `{}` at {} ==\nA continuous-batching engine with a paged KV cache (vLLM-style), timings calibrated on a real H200 decode trace, {:.0} s into the incident.\n\n== what the probe saw ==\n",
        s.name, d.url, s.incident_at_s
    );
    out.push_str(&render::probe_text(&d.probe.report));
    out.push_str(&format!(
        "\n== what its logs and metrics say at {:.0} s ({}) ==\n",
        d.logs_at_s,
        d.analyzed.join(", ")
    ));
    out.push_str(&render::analyze_text(&d.report));
    out.push_str(&format!("\n== the answer ==\ninjected: {} ({}): {}\n", s.name, s.class_str(), s.cause));
    let verdict = match d.report.findings.first() {
        Some(top) => format!(
            "the analyzer's top finding: {} ({}, confidence {:.2}) — {}",
            top.rule,
            top.class.as_str(),
            top.confidence,
            if d.named() {
                "the injected fault, named"
            } else if d.found() {
                "not the injected fault; that one is further down the list"
            } else {
                "the injected fault was not found"
            }
        ),
        None => format!(
            "the analyzer found nothing wrong — {}",
            if d.named() { "right, this is the healthy control" } else { "it missed the injected fault" }
        ),
    };
    out.push_str(&verdict);
    out.push_str(&format!(
        "\nreplay it: triage sim --scenario {} --seed {} --out DIR, then triage analyze DIR/*\n",
        s.name, d.seed
    ));
    out
}
