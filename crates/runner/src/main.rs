//! `triage-runner`: sample the GPUs, run the rule plugins, export what they find.
//! See the crate docs ([`triage_runner`]) and `docs/runner.md`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use triage_core::gpu::engine::EngineSeries;
use triage_core::gpu::series::{self, Series};
use triage_runner::host::{Limits, PluginHost, World};
use triage_runner::nvml::NvmlSource;
use triage_runner::scrape::EngineUrl;
use triage_runner::{EngineSource, Rules, Runner, Tick, write_lines};

/// Exit code when NVML (the NVIDIA driver) is not there.
const EXIT_NO_NVML: u8 = 3;
const DEFAULT_PLUGINS: &str = "/usr/local/lib/triage-runner/plugins";

#[derive(Parser)]
#[command(
    name = "triage-runner",
    version,
    about = "Samples NVIDIA GPUs, runs llm-triage's sandboxed rule plugins, exports findings and DCGM-style gauges to Prometheus"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct PluginArgs {
    /// Folder of rule plugins (*.wasm components); default $TRIAGE_RUNNER_PLUGINS or /usr/local/lib/triage-runner/plugins.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Run the rules compiled into the runner instead of plugins (no sandbox).
    #[arg(long, conflicts_with = "plugins")]
    builtin_rules: bool,
    /// Memory limit per plugin instance, MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    plugin_memory_mib: usize,
    /// Wall-time limit per plugin call, milliseconds.
    #[arg(long, default_value_t = 250, value_name = "MS")]
    plugin_deadline_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Format {
    Jsonl,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Sample every GPU (NVML, or a recorded series with --replay), run the plugins each tick,
    /// serve Prometheus metrics, log findings.
    Run {
        #[command(flatten)]
        plugins: PluginArgs,
        /// Sampling period, milliseconds (default 1000: 1 Hz).
        #[arg(long, default_value_t = 1000, value_name = "MS")]
        interval_ms: u64,
        /// Serve the exposition here (loopback by default).
        #[arg(long, default_value = "127.0.0.1:9477", value_name = "ADDR")]
        listen: std::net::SocketAddr,
        /// Do not serve the exposition.
        #[arg(long)]
        no_listen: bool,
        /// The local engine's metrics page, loopback only: http://127.0.0.1:8000/metrics.
        #[arg(long, value_name = "URL")]
        engine_url: Option<String>,
        /// Append findings raised and cleared to this JSON-lines file.
        #[arg(long, value_name = "FILE")]
        findings_log: Option<PathBuf>,
        /// One tick, print the exposition to stdout, exit.
        #[arg(long)]
        once: bool,
        /// Stop after this many seconds.
        #[arg(long, value_name = "S")]
        duration_s: Option<f64>,
        /// Take samples from a recorded series instead of NVML.
        #[arg(long, value_name = "FILE")]
        replay: Option<PathBuf>,
        /// With --replay: recorded (default), max, or a factor like 10.
        #[arg(long, default_value = "recorded")]
        speed: String,
        /// Also write every sample taken to this series file (as `record` does).
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// At exit, print CPU time and peak memory to stderr.
        #[arg(long)]
        stats: bool,
    },
    /// Run the rules over a recorded series and print each finding raised.
    Replay {
        file: PathBuf,
        /// Engine samples: JSON lines of {t, running, waiting, kv_usage, …} or one /metrics scrape.
        #[arg(long, value_name = "FILE")]
        engine: Option<PathBuf>,
        /// max (default), recorded, or a factor like 10.
        #[arg(long, default_value = "max")]
        speed: String,
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Write an NVML series (JSON lines) for later replay.
    Record {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[arg(long, default_value_t = 100, value_name = "MS")]
        interval_ms: u64,
        #[arg(long, default_value_t = 20.0, value_name = "S")]
        duration_s: f64,
    },
    /// Run the text-analyzer component on files; print the triage.report/v1 JSON.
    Analyze {
        files: Vec<PathBuf>,
        /// The component (default: analyzer.wasm in the plugin folder).
        #[arg(long, value_name = "FILE")]
        plugin: Option<PathBuf>,
        #[arg(long, value_name = "DIR")]
        plugins: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(no) = e.downcast_ref::<triage_runner::nvml::NoNvml>() {
                eprintln!("triage-runner: {no}");
                return ExitCode::from(EXIT_NO_NVML);
            }
            eprintln!("triage-runner: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn plugin_dir(arg: Option<&Path>) -> PathBuf {
    arg.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("TRIAGE_RUNNER_PLUGINS").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGINS))
}

fn rules(args: &PluginArgs) -> anyhow::Result<Rules> {
    if args.builtin_rules {
        return Ok(Runner::builtin());
    }
    let dir = plugin_dir(args.plugins.as_deref());
    let limits = Limits {
        memory_bytes: args.plugin_memory_mib << 20,
        deadline: Duration::from_millis(args.plugin_deadline_ms),
        ..Limits::default()
    };
    let host = PluginHost::open(&dir, limits)?;
    for (name, err) in host.errors() {
        eprintln!("triage-runner: plugin {name}: {err}");
    }
    if host.paths(World::GpuRules).is_empty() {
        bail!(
            "no GPU-rules plugin in {} (build them with `cargo xtask plugins`, or use --builtin-rules)",
            dir.display()
        );
    }
    Ok(Rules::Plugins(Box::new(host)))
}

/// `max` → None (no waiting); `recorded` → 1; `10` → 10× faster.
fn speed(s: &str) -> anyhow::Result<Option<f64>> {
    match s {
        "max" => Ok(None),
        "recorded" => Ok(Some(1.0)),
        x => match x.trim_end_matches('x').parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => Ok(Some(f)),
            _ => bail!("--speed must be max, recorded or a positive factor, not {x:?}"),
        },
    }
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn read_series(path: &Path) -> anyhow::Result<Series> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let series = Series::parse(&text);
    for i in series.issues.iter().take(5) {
        eprintln!("triage-runner: {}:{}: {}", path.display(), i.line, i.message);
    }
    if series.ticks.is_empty() {
        bail!("{} holds no NVML samples", path.display());
    }
    Ok(series)
}

fn report_tick(tick: &Tick, log: &mut Option<std::fs::File>) -> anyhow::Result<()> {
    for c in &tick.calls {
        if let Err(f) = &c.result {
            eprintln!(
                "triage-runner: plugin {} {f} after {:.1} ms{}",
                c.plugin,
                c.took.as_secs_f64() * 1e3,
                if c.disabled { "; disabled until its file changes" } else { "" }
            );
        }
        if c.truncated {
            eprintln!(
                "triage-runner: plugin {} answered more than {} findings; the rest were dropped",
                c.plugin,
                triage_runner::host::MAX_FINDINGS
            );
        }
    }
    if let Some(f) = log.as_mut() {
        write_lines(f, Some("raised"), &tick.raised)?;
        write_lines(f, Some("cleared"), &tick.cleared)?;
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Replay { file, engine, speed: s, format, plugins } => {
            let series = read_series(&file)?;
            let engine = match engine {
                Some(p) => {
                    let e = EngineSeries::parse(
                        &std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?,
                    );
                    for i in e.issues.iter().take(5) {
                        eprintln!("triage-runner: {}:{}: {}", p.display(), i.line, i.message);
                    }
                    EngineSource::Recorded(e)
                }
                None => EngineSource::None,
            };
            let pace = speed(&s)?;
            let mut runner = Runner::new(rules(&plugins)?, engine, series.meta.clone());
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let mut prev_t: Option<f64> = None;
            let mut no_log = None;
            for tick in &series.ticks {
                let t = tick.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
                if let (Some(factor), Some(p)) = (pace, prev_t) {
                    let wait = (t - p) / factor;
                    if wait > 0.0 && wait < 3600.0 {
                        std::thread::sleep(Duration::from_secs_f64(wait));
                    }
                }
                prev_t = Some(t);
                let done = runner.tick(tick.clone());
                report_tick(&done, &mut no_log)?;
                match format {
                    Format::Jsonl => write_lines(&mut out, None, &done.raised)?,
                    Format::Text => {
                        for (plugin, f) in &done.raised {
                            writeln!(
                                out,
                                "t={:.1} {} [{}] {} (confidence {:.2}, {plugin})",
                                f.t,
                                f.class.as_str(),
                                f.rule,
                                f.title,
                                f.confidence
                            )?;
                            for e in &f.evidence {
                                writeln!(out, "    {e}")?;
                            }
                        }
                    }
                }
                out.flush()?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Record { out, interval_ms, duration_s } => {
            let mut nvml = NvmlSource::open()?;
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?,
            );
            writeln!(f, "{}", series::meta_line(nvml.meta()))?;
            let started = Instant::now();
            let period = Duration::from_millis(interval_ms.max(1));
            let mut next = Instant::now();
            while started.elapsed().as_secs_f64() < duration_s {
                for s in nvml.sample(unix_now()) {
                    serde_json::to_writer(&mut f, &s)?;
                    f.write_all(b"\n")?;
                }
                next += period;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            f.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Analyze { files, plugin, plugins } => {
            let path = plugin.unwrap_or_else(|| plugin_dir(plugins.as_deref()).join("analyzer.wasm"));
            let bytes = std::fs::read(&path)
                .with_context(|| format!("reading the analyzer component {}", path.display()))?;
            let mut inputs = Vec::new();
            for f in &files {
                let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
                inputs.push((f.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
            }
            let limits =
                Limits { memory_bytes: 1 << 30, fuel: u64::MAX / 2, deadline: Duration::from_secs(120) };
            let host = PluginHost::new(limits)?;
            let json = host.analyze_text(&bytes, &inputs).map_err(|e| anyhow::anyhow!(e))?;
            let value: serde_json::Value =
                serde_json::from_str(&json).context("the analyzer's report is not JSON")?;
            println!("{}", serde_json::to_string_pretty(&value)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            plugins,
            interval_ms,
            listen,
            no_listen,
            engine_url,
            findings_log,
            once,
            duration_s,
            replay,
            speed: s,
            record,
            stats,
        } => {
            let engine = match engine_url {
                Some(u) => EngineSource::Url(EngineUrl::parse(&u).map_err(|e| anyhow::anyhow!(e))?),
                None => EngineSource::None,
            };
            // The source: NVML, or a recorded series.
            let (mut nvml, replayed, meta) = match &replay {
                Some(p) => {
                    let series = read_series(p)?;
                    let meta = series.meta.clone();
                    (None, Some(series), meta)
                }
                None => {
                    let n = NvmlSource::open()?;
                    let meta = Some(n.meta().clone());
                    (Some(n), None, meta)
                }
            };
            let pace = speed(&s)?;
            let rules = rules(&plugins)?;
            let mut runner = Runner::new(rules, engine, meta.clone());
            let page = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            if !no_listen && !once {
                if !listen.ip().is_loopback() {
                    eprintln!(
                        "triage-runner: serving metrics on {listen}, which is not a loopback address: anyone who reaches it reads the GPUs' state"
                    );
                }
                let bound = triage_runner::export::serve(listen, page.clone())
                    .with_context(|| format!("listening on {listen}"))?;
                eprintln!("triage-runner: metrics on http://{bound}/metrics");
            }
            let mut log = match &findings_log {
                Some(p) => Some(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .with_context(|| format!("opening {}", p.display()))?,
                ),
                None => None,
            };
            let mut rec = match &record {
                Some(p) => {
                    let mut f = std::io::BufWriter::new(
                        std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
                    );
                    if let Some(m) = &meta {
                        writeln!(f, "{}", series::meta_line(m))?;
                    }
                    Some(f)
                }
                None => None,
            };
            let started = Instant::now();
            let period = Duration::from_millis(interval_ms.max(1));
            let mut next = Instant::now();
            let mut replay_pos = 0usize;
            let mut last_reload = Instant::now();
            let mut engine_said = false;
            let mut first_tick: Option<(Instant, f64)> = None;
            loop {
                let samples = match (&mut nvml, &replayed) {
                    (Some(n), _) => n.sample(unix_now()),
                    (None, Some(series)) => match series.ticks.get(replay_pos) {
                        Some(t) => {
                            replay_pos += 1;
                            t.clone()
                        }
                        // The series is over: with --duration-s, keep serving the last state
                        // until it has passed (a scraper still reads the end of the replay).
                        None => match duration_s {
                            Some(d) if started.elapsed().as_secs_f64() < d => {
                                std::thread::sleep(Duration::from_millis(100));
                                continue;
                            }
                            _ => break,
                        },
                    },
                    (None, None) => break,
                };
                if let Some(f) = rec.as_mut() {
                    for s in &samples {
                        serde_json::to_writer(&mut *f, s)?;
                        f.write_all(b"\n")?;
                    }
                }
                let t = samples.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
                let tick = runner.tick(samples);
                if first_tick.is_none() {
                    first_tick = Some((Instant::now(), usage().0));
                }
                if let Some(e) = &tick.engine_error
                    && !engine_said
                {
                    eprintln!("triage-runner: engine metrics: {e} (said once; see triage_runner_engine_up)");
                    engine_said = true;
                }
                report_tick(&tick, &mut log)?;
                for (plugin, f) in &tick.raised {
                    eprintln!(
                        "triage-runner: raised {} on {} ({plugin}): {}",
                        f.rule,
                        f.gpu.map_or("node".into(), |g| format!("GPU {g}")),
                        f.title
                    );
                }
                let text = runner.exposition();
                if once {
                    print!("{text}");
                    write_lines(&mut std::io::stdout(), Some("active"), runner.active())?;
                    break;
                }
                if let Ok(mut p) = page.lock() {
                    *p = text;
                }
                if duration_s.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
                    break;
                }
                if last_reload.elapsed() >= Duration::from_secs(2) {
                    last_reload = Instant::now();
                    if let Rules::Plugins(host) = &mut runner.rules {
                        for name in host.reload() {
                            eprintln!("triage-runner: plugin {name} (re)loaded");
                        }
                        for (name, err) in host.errors() {
                            eprintln!("triage-runner: plugin {name}: {err}");
                        }
                    }
                }
                // Pace: NVML by the interval; a replay by its own timestamps.
                match (&replayed, pace) {
                    (Some(_), None) => {}
                    (Some(_), Some(factor)) => {
                        if let Some(next_tick) = replayed.as_ref().and_then(|s| s.ticks.get(replay_pos)) {
                            let nt = next_tick.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
                            let wait = (nt - t) / factor;
                            if wait > 0.0 && wait < 3600.0 {
                                std::thread::sleep(Duration::from_secs_f64(wait));
                            }
                        }
                    }
                    (None, _) => {
                        next += period;
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                }
            }
            if let Some(f) = rec.as_mut() {
                f.flush()?;
            }
            if stats {
                print_stats(started.elapsed(), runner.counters.ticks, first_tick);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// CPU seconds this process has used, and its peak RSS in KiB (getrusage).
fn usage() -> (f64, i64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(u.ru_utime) + secs(u.ru_stime), u.ru_maxrss)
}

/// CPU time and memory of this process: overall, and from the end of the first tick on
/// (`steady`: without start-up, which compiles the plugins).
fn print_stats(wall: Duration, ticks: u64, first: Option<(Instant, f64)>) {
    let (cpu, peak_kb) = usage();
    let rss_now_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    let steady = first.map_or(0.0, |(at, cpu0)| 100.0 * (cpu - cpu0) / at.elapsed().as_secs_f64().max(1e-9));
    eprintln!(
        "triage-runner stats: wall {:.1} s, ticks {ticks}, cpu {:.3} s ({:.2} % of one core; steady {steady:.2} %), rss now {:.1} MiB, peak {:.1} MiB",
        wall.as_secs_f64(),
        cpu,
        100.0 * cpu / wall.as_secs_f64().max(1e-9),
        rss_now_kb as f64 / 1024.0,
        peak_kb as f64 / 1024.0
    );
}
