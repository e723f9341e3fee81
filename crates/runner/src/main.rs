//! `triage-runner`: sample the GPUs, run the rule plugins, export what they find.
//! See the crate docs ([`triage_runner`]) and `docs/runner.md`.
//!
//! Here: the command line and the dispatch; each subcommand is a module of [`cmd`].

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use triage_runner::say;

/// Exit code when NVML (the NVIDIA driver) is not there.
const EXIT_NO_NVML: u8 = 3;

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
    Run(RunArgs),
    /// Run the rules over a recorded series and print each finding raised.
    Replay(ReplayArgs),
    /// Write an NVML series (JSON lines) for later replay.
    Record(RecordArgs),
    /// Run the text-analyzer component on files; print the triage.report/v1 JSON.
    ///
    /// Files are read in 64 KiB pieces and handed to the component in sections of at most
    /// --section-mib, cut at line ends: inputs up to that size give one report, exactly as one
    /// call would; larger ones give one report per section, one JSON document after another.
    /// --builtin-rules streams every file into one report with the analyzer compiled into the
    /// runner (as `triage analyze`), in a few MiB whatever the size.
    Analyze(AnalyzeArgs),
}

// `run`'s options (the variant's doc comment is its help).
#[derive(clap::Args)]
struct RunArgs {
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
}

// `replay`'s options (the variant's doc comment is its help).
#[derive(clap::Args)]
struct ReplayArgs {
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
}

// `record`'s options (the variant's doc comment is its help).
#[derive(clap::Args)]
struct RecordArgs {
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[arg(long, default_value = "100", value_name = "MS", value_parser = millis)]
    interval_ms: u64,
    #[arg(long, default_value = "20", value_name = "S", value_parser = seconds)]
    duration_s: f64,
}

// `analyze`'s options (the variant's doc comment is its help).
#[derive(clap::Args)]
struct AnalyzeArgs {
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

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => cmd::run::run(args),
        Command::Replay(args) => cmd::replay::replay(args),
        Command::Record(args) => cmd::record::record(args),
        Command::Analyze(args) => cmd::analyze::analyze(args),
    }
}
