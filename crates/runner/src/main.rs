//! `triage-runner`: sample the GPUs, run the rule plugins, export what they find.
//! See the crate docs ([`triage_runner`]) and `docs/runner.md`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use triage_core::gpu::engine::EngineSeries;
use triage_core::gpu::series;
use triage_runner::host::{Limits, PluginHost, World};
use triage_runner::input::{self, Sectioner};
use triage_runner::nvml::NvmlSource;
use triage_runner::out;
use triage_runner::scrape::EngineUrl;
use triage_runner::{EngineSource, Rules, Runner, Tick, say, write_lines};

/// Exit code when NVML (the NVIDIA driver) is not there.
const EXIT_NO_NVML: u8 = 3;
const DEFAULT_PLUGINS: &str = "/usr/local/lib/triage-runner/plugins";
/// How long one scrape of the engine may take, all of it (connect, send, every read).
const SCRAPE_DEADLINE: Duration = Duration::from_millis(500);

// Value checks are clap value parsers, so a bad value is a usage error (exit 2) with its reason.

/// A whole number from `lo` to `hi`.
fn whole(s: &str, lo: u64, hi: u64, unit: &str) -> Result<u64, String> {
    let t = s.trim();
    let v: u64 = t.parse().map_err(|_| {
        if t.starts_with('-') {
            format!("must be at least {lo} {unit}, not negative")
        } else {
            format!("{t:?} is not a whole number of {unit}")
        }
    })?;
    if v < lo || v > hi {
        return Err(format!("must be from {lo} to {hi} {unit}, not {v}"));
    }
    Ok(v)
}

/// Milliseconds, 1 ms to a day.
fn millis(s: &str) -> Result<u64, String> {
    whole(s, 1, 86_400_000, "ms")
}

/// MiB of plugin memory, 1 MiB to 64 GiB.
fn mebibytes(s: &str) -> Result<usize, String> {
    whole(s, 1, 65_536, "MiB").map(|v| v as usize)
}

/// Seconds: a finite number above zero.
fn seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() {
        return Err(format!("must be a finite number of seconds, not {s}"));
    }
    if v <= 0.0 {
        return Err(format!("must be above 0 seconds, not {s}"));
    }
    Ok(v)
}

/// How fast to go through a recorded series.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pace(Option<f64>);

/// `max` → no waiting; `recorded` → 1; `10` or `10x` → 10× faster.
fn pace(s: &str) -> Result<Pace, String> {
    match s.trim() {
        "max" => Ok(Pace(None)),
        "recorded" => Ok(Pace(Some(1.0))),
        x => match x.trim_end_matches('x').parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => Ok(Pace(Some(f))),
            _ => Err(format!("must be max, recorded or a factor above 0 (like 10), not {x:?}")),
        },
    }
}

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
    #[arg(long, default_value = "64", value_name = "MIB", value_parser = mebibytes)]
    plugin_memory_mib: usize,
    /// Wall-time limit per plugin call, milliseconds.
    #[arg(long, default_value = "250", value_name = "MS", value_parser = millis)]
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
        #[arg(long, default_value = "1000", value_name = "MS", value_parser = millis)]
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
        /// Stop after this many seconds (a slow engine scrape or plugin call does not delay it
        /// by more than the scrape deadline, 0.5 s, or the plugin deadline).
        #[arg(long, value_name = "S", value_parser = seconds)]
        duration_s: Option<f64>,
        /// Take samples from a recorded series instead of NVML.
        #[arg(long, value_name = "FILE")]
        replay: Option<PathBuf>,
        /// With --replay: recorded (default), max, or a factor like 10.
        #[arg(long, default_value = "recorded", value_parser = pace)]
        speed: Pace,
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
        #[arg(long, default_value = "max", value_parser = pace)]
        speed: Pace,
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Write an NVML series (JSON lines) for later replay.
    Record {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[arg(long, default_value = "100", value_name = "MS", value_parser = millis)]
        interval_ms: u64,
        #[arg(long, default_value = "20", value_name = "S", value_parser = seconds)]
        duration_s: f64,
    },
    /// Run the text-analyzer component on files; print the triage.report/v1 JSON.
    ///
    /// Files are read in 64 KiB pieces and handed to the component in sections of at most
    /// --section-mib, cut at line ends: inputs up to that size give one report, exactly as one
    /// call would; larger ones give one report per section, one JSON document after another.
    /// --builtin-rules streams every file into one report with the analyzer compiled into the
    /// runner (as `triage analyze`), in a few MiB whatever the size.
    Analyze {
        files: Vec<PathBuf>,
        /// The component (default: analyzer.wasm in the plugin folder).
        #[arg(long, value_name = "FILE", conflicts_with = "builtin_rules")]
        plugin: Option<PathBuf>,
        #[arg(long, value_name = "DIR", conflicts_with = "builtin_rules")]
        plugins: Option<PathBuf>,
        /// Analyse with the analyzer compiled into the runner (no sandbox), streaming.
        #[arg(long)]
        builtin_rules: bool,
        /// Most text handed to the component in one call, MiB.
        #[arg(long, default_value = "32", value_name = "MIB", value_parser = mebibytes)]
        section_mib: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(no) = e.downcast_ref::<triage_runner::nvml::NoNvml>() {
                say!("{no}");
                return ExitCode::from(EXIT_NO_NVML);
            }
            say!("error: {e:#}");
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
    // Nothing named a folder and the install path is absent (a developer machine, a replay on a
    // laptop): the built-in rules are the same rules, compiled in. Say so, and how to get plugins.
    let implicit = args.plugins.is_none() && std::env::var_os("TRIAGE_RUNNER_PLUGINS").is_none();
    if implicit && !dir.exists() {
        say!(
            "no plugins at {} (the install path): using the built-in rules; build the plugins with \
             `cargo xtask plugins` and pass --plugins <target>/plugins, or pass --builtin-rules to say so",
            dir.display()
        );
        return Ok(Runner::builtin());
    }
    let limits = Limits {
        memory_bytes: args.plugin_memory_mib << 20,
        deadline: Duration::from_millis(args.plugin_deadline_ms),
        ..Limits::default()
    };
    let mut host = PluginHost::open(&dir, limits)?;
    for n in host.take_notices() {
        say!("{n}");
    }
    if host.paths(World::GpuRules).is_empty() {
        bail!(
            "no GPU-rules plugin in {} (build them with `cargo xtask plugins`, or use --builtin-rules)",
            dir.display()
        );
    }
    Ok(Rules::Plugins(Box::new(host)))
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Largest engine series read (`replay --engine`; it is held whole, unlike the GPU series).
const MAX_ENGINE_FILE: u64 = 256 << 20;

/// A file as text, line by line: a line that is not UTF-8 is reported (with the first lines
/// the reader could not use) and skipped; the rest is read. At most `max` bytes: a larger file
/// (or one without an end, like `/dev/zero`) is refused.
fn read_lines(path: &Path, max: u64) -> anyhow::Result<(String, Vec<(usize, String)>)> {
    let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > max {
        bail!("{} is larger than {} MiB, more than this file ever needs", path.display(), max >> 20);
    }
    let (text, bad) = input::text_by_lines(bytes);
    Ok((text, bad.into_iter().map(|b| (b.line, b.message)).collect()))
}

/// Issues shown: the first five by line, then how many more.
const SHOWN_ISSUES: usize = 5;

/// Report the issues of a file: the first five by line, then how many more.
fn report_issues(path: &Path, mut issues: Vec<(usize, String)>) {
    issues.sort_by_key(|(line, _)| if *line == 0 { usize::MAX } else { *line });
    for (line, message) in issues.iter().take(SHOWN_ISSUES) {
        match line {
            0 => say!("{}: {message}", path.display()),
            n => say!("{}:{n}: {message}", path.display()),
        }
    }
    if issues.len() > SHOWN_ISSUES {
        say!("{}: {} more issues", path.display(), issues.len() - SHOWN_ISSUES);
    }
}

/// A series being replayed, read a tick at a time; its first issues are said as they are met,
/// the rest counted at the end ([`Replay::end`]).
struct Replay {
    path: PathBuf,
    ticks: input::Ticks<std::fs::File>,
    said: usize,
}

impl Replay {
    /// Open `path` and read up to its first tick (and its meta line).
    fn open(path: &Path) -> anyhow::Result<Replay> {
        let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let ticks = input::Ticks::new(f).with_context(|| format!("reading {}", path.display()))?;
        let mut r = Replay { path: path.to_path_buf(), ticks, said: 0 };
        r.say_issues();
        if r.ticks.peek()?.is_none() {
            r.end();
            bail!("{} holds no NVML samples", path.display());
        }
        Ok(r)
    }

    fn say_issues(&mut self) {
        for i in
            self.ticks.series.issues().iter().skip(self.said).take(SHOWN_ISSUES.saturating_sub(self.said))
        {
            say!("{}:{}: {}", self.path.display(), i.line, i.message);
            self.said += 1;
        }
    }

    /// The next tick, `None` at the end.
    fn next(&mut self) -> anyhow::Result<Option<Vec<triage_core::gpu::GpuSample>>> {
        let t = self.ticks.next_tick().with_context(|| format!("reading {}", self.path.display()))?;
        self.say_issues();
        Ok(t)
    }

    /// The time of the tick after the last one handed out.
    fn next_time(&mut self) -> Option<f64> {
        let t = self.ticks.peek().ok()??;
        Some(t.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max))
    }

    /// Say how many issues were not said.
    fn end(&mut self) {
        let more = self.ticks.series.issue_count().saturating_sub(self.said);
        if more > 0 {
            say!("{}: {more} more issues", self.path.display());
        }
    }
}

fn report_tick(tick: &Tick, log: &mut Option<std::fs::File>) -> anyhow::Result<()> {
    for c in &tick.calls {
        if let Err(f) = &c.result {
            say!(
                "plugin {} {f} after {:.1} ms{}",
                c.plugin,
                c.took.as_secs_f64() * 1e3,
                if c.disabled { "; disabled until its file changes" } else { "" }
            );
        }
        if c.truncated {
            say!(
                "plugin {} answered more than {} findings; the rest were dropped",
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

/// Sleep `d`, but not past `end`.
fn nap(d: Duration, end: Option<Instant>) {
    let d = end.map_or(d, |e| d.min(e.saturating_duration_since(Instant::now())));
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}

/// `triage-runner analyze`: every file read in [`input::READ_CHUNK`] pieces.
fn analyze(
    files: &[PathBuf],
    plugin: Option<PathBuf>,
    plugins: Option<PathBuf>,
    builtin: bool,
    section_mib: usize,
) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    if builtin {
        let mut a = triage_core::analyze::Analyzer::new();
        for f in files {
            let file = std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?;
            a.begin(&f.display().to_string());
            input::stream(file, |piece| a.feed(piece)).with_context(|| format!("reading {}", f.display()))?;
            a.end();
        }
        let mut o = stdout.lock();
        writeln!(o, "{}", out::json_pretty(&a.finish())?)?;
        return Ok(());
    }
    let path = plugin.unwrap_or_else(|| plugin_dir(plugins.as_deref()).join("analyzer.wasm"));
    let bytes = triage_runner::host::read_component(&path)
        .map_err(|e| anyhow::anyhow!("the analyzer component {}: {e}", path.display()))?;
    let limits = Limits { memory_bytes: 1 << 30, fuel: u64::MAX / 2, deadline: Duration::from_secs(120) };
    let host = PluginHost::new(limits)?;
    let component = host
        .text_analyzer(&bytes)
        .map_err(|e| anyhow::anyhow!("plugin {}: {e}", path.file_name().unwrap_or_default().display()))?;
    let max = section_mib << 20;
    // The inputs of the next call, and their size: a call gets whole files while they fit,
    // and one section of a file larger than a section.
    let mut batch: Vec<(String, String)> = Vec::new();
    let mut batch_len = 0usize;
    let mut reports = 0usize;
    let mut flush = |batch: &mut Vec<(String, String)>, batch_len: &mut usize| -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        *batch_len = 0;
        let json = component.run(std::mem::take(batch)).map_err(|e| anyhow::anyhow!(e))?;
        let value: serde_json::Value =
            serde_json::from_str(&json).context("the analyzer's report is not JSON")?;
        drop(json);
        writeln!(stdout.lock(), "{}", out::json_pretty(&value)?)?;
        reports += 1;
        Ok(())
    };
    let mut failed: Option<anyhow::Error> = None;
    for f in files {
        let name = f.display().to_string();
        let file = std::fs::File::open(f).with_context(|| format!("opening {name}"))?;
        let mut sections = Sectioner::new(max);
        let mut add = |sec: input::Section| {
            if failed.is_some() {
                return;
            }
            let label = if sec.index == 0 {
                name.clone()
            } else {
                format!("{name} (section {} from line {})", sec.index + 1, sec.first_line)
            };
            if sec.index == 1 {
                say!("{name} is larger than a section ({section_mib} MiB): one report per section");
            }
            if batch_len + sec.text.len() > max
                && let Err(e) = flush(&mut batch, &mut batch_len)
            {
                failed = Some(e);
                return;
            }
            batch_len += sec.text.len();
            batch.push((label, sec.text));
        };
        input::stream(file, |piece| sections.push(piece, &mut add))
            .with_context(|| format!("reading {name}"))?;
        sections.finish(&mut add);
        if let Some(e) = failed.take() {
            return Err(e);
        }
    }
    flush(&mut batch, &mut batch_len)?;
    if files.is_empty() {
        // No input: the component's report on nothing, as one call on an empty list gives.
        let json = component.run(Vec::new()).map_err(|e| anyhow::anyhow!(e))?;
        let value: serde_json::Value =
            serde_json::from_str(&json).context("the analyzer's report is not JSON")?;
        writeln!(stdout.lock(), "{}", out::json_pretty(&value)?)?;
    }
    if reports > 1 {
        say!(
            "{reports} reports, one per section of at most {section_mib} MiB (--builtin-rules gives one report)"
        );
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Replay { file, engine, speed: Pace(pace), format, plugins } => {
            let mut series = Replay::open(&file)?;
            let engine = match engine {
                Some(p) => {
                    let (text, mut issues) = read_lines(&p, MAX_ENGINE_FILE)?;
                    let e = EngineSeries::parse(&text);
                    issues.extend(e.issues.iter().map(|i| (i.line, i.message.clone())));
                    report_issues(&p, issues);
                    EngineSource::Recorded(e)
                }
                None => EngineSource::None,
            };
            let mut runner = Runner::new(rules(&plugins)?, engine, series.ticks.series.meta.clone());
            let stdout = std::io::stdout();
            let mut o = stdout.lock();
            let mut prev_t: Option<f64> = None;
            let mut no_log = None;
            let mut raised = 0usize;
            while let Some(tick) = series.next()? {
                let t = tick.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
                if let (Some(factor), Some(p)) = (pace, prev_t) {
                    let wait = (t - p) / factor;
                    if wait > 0.0 && wait < 3600.0 {
                        std::thread::sleep(Duration::from_secs_f64(wait));
                    }
                }
                prev_t = Some(t);
                let done = runner.tick(tick);
                report_tick(&done, &mut no_log)?;
                raised += done.raised.len();
                match format {
                    Format::Jsonl => write_lines(&mut o, None, &done.raised)?,
                    Format::Text => {
                        for (plugin, f) in &done.raised {
                            o.write_all(triage_runner::finding_text(plugin, f).as_bytes())?;
                        }
                    }
                }
                o.flush()?;
            }
            series.end();
            // Text is for a person: a quiet replay says so instead of printing nothing.
            if matches!(format, Format::Text) {
                say!(
                    "replayed {} ticks of {} GPU(s): {raised} finding(s) raised",
                    series.ticks.ticks,
                    series.ticks.gpu_count()
                );
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
            let end = started.checked_add(Duration::from_secs_f64(duration_s.min(1e9)));
            let period = Duration::from_millis(interval_ms);
            let mut next = Instant::now();
            while started.elapsed().as_secs_f64() < duration_s {
                for s in nvml.sample(unix_now()) {
                    serde_json::to_writer(&mut f, &s)?;
                    f.write_all(b"\n")?;
                }
                next += period;
                nap(next.saturating_duration_since(Instant::now()), end);
            }
            f.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Analyze { files, plugin, plugins, builtin_rules, section_mib } => {
            analyze(&files, plugin, plugins, builtin_rules, section_mib)?;
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
            speed: Pace(pace),
            record,
            stats,
        } => {
            let engine = match engine_url {
                Some(u) => EngineSource::Url(EngineUrl::parse(&u).map_err(|e| anyhow::anyhow!(e))?),
                None => EngineSource::None,
            };
            // The source: NVML, or a recorded series.
            let (mut nvml, mut replayed, meta) = match &replay {
                Some(p) => {
                    let series = Replay::open(p)?;
                    let meta = series.ticks.series.meta.clone();
                    (None, Some(series), meta)
                }
                None => {
                    let n = NvmlSource::open()?;
                    let meta = Some(n.meta().clone());
                    (Some(n), None, meta)
                }
            };
            let rules = rules(&plugins)?;
            let mut runner = Runner::new(rules, engine, meta.clone());
            runner.scrape_timeout = SCRAPE_DEADLINE;
            // Served from the start: before the first tick, the runner's own gauges.
            let page = std::sync::Arc::new(std::sync::Mutex::new(runner.exposition()));
            if !no_listen && !once {
                if !listen.ip().is_loopback() {
                    say!(
                        "serving metrics on {listen}, which is not a loopback address: anyone who reaches it reads the GPUs' state"
                    );
                }
                let bound = triage_runner::export::serve(listen, page.clone())
                    .with_context(|| format!("listening on {listen}"))?;
                say!("metrics on http://{bound}/metrics");
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
            // When the run ends: every wait and every scrape stops there.
            let end = duration_s.and_then(|d| started.checked_add(Duration::from_secs_f64(d.min(1e9))));
            let over = || end.is_some_and(|e| Instant::now() >= e);
            let period = Duration::from_millis(interval_ms);
            let mut next = Instant::now();
            let mut last_reload = Instant::now();
            let mut engine_said = false;
            let mut first_tick: Option<(Instant, f64)> = None;
            loop {
                if last_reload.elapsed() >= Duration::from_secs(2) {
                    last_reload = Instant::now();
                    if let Rules::Plugins(host) = &mut runner.rules {
                        host.reload();
                        for n in host.take_notices() {
                            say!("{n}");
                        }
                    }
                }
                let samples = match (&mut nvml, &mut replayed) {
                    (Some(n), _) => n.sample(unix_now()),
                    (None, Some(series)) => match series.next()? {
                        Some(t) => t,
                        // The series is over: with --duration-s, keep serving the last state
                        // until it has passed (a scraper still reads the end of the replay).
                        None if end.is_some() && !over() => {
                            nap(Duration::from_millis(100), end);
                            continue;
                        }
                        None => break,
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
                runner.scrape_timeout = end.map_or(SCRAPE_DEADLINE, |e| {
                    SCRAPE_DEADLINE.min(e.saturating_duration_since(Instant::now()))
                });
                let tick = runner.tick(samples);
                if first_tick.is_none() {
                    first_tick = Some((Instant::now(), usage().0));
                }
                if let Some(e) = &tick.engine_error
                    && !engine_said
                {
                    say!("engine metrics: {e} (said once; see triage_runner_engine_up)");
                    engine_said = true;
                }
                report_tick(&tick, &mut log)?;
                for (plugin, f) in &tick.raised {
                    say!(
                        "raised {} on {} ({plugin}): {}",
                        f.rule,
                        f.gpu.map_or("node".into(), |g| format!("GPU {g}")),
                        f.title
                    );
                }
                let text = runner.exposition();
                if once {
                    let stdout = std::io::stdout();
                    let mut o = stdout.lock();
                    o.write_all(out::block(&text).as_bytes())?;
                    write_lines(&mut o, Some("active"), runner.active())?;
                    break;
                }
                if let Ok(mut p) = page.lock() {
                    *p = text;
                }
                if over() {
                    break;
                }
                // Pace: NVML by the interval; a replay by its own timestamps.
                match (&mut replayed, pace) {
                    (Some(_), None) => {}
                    (Some(series), Some(factor)) => {
                        if let Some(nt) = series.next_time() {
                            let wait = (nt - t) / factor;
                            if wait > 0.0 && wait < 3600.0 {
                                nap(Duration::from_secs_f64(wait), end);
                            }
                        }
                    }
                    (None, _) => {
                        next += period;
                        nap(next.saturating_duration_since(Instant::now()), end);
                    }
                }
                if over() {
                    break;
                }
            }
            if let Some(f) = rec.as_mut() {
                f.flush()?;
            }
            if let Some(series) = &mut replayed {
                series.end();
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
