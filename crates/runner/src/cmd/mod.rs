//! What the subcommands share: where the rules come from, reading a recorded series a tick at a
//! time, reading a whole file as lines, saying a file's issues and a tick's plugin failures,
//! and waiting without passing the end of the run. One module per subcommand beside it.

pub(crate) mod analyze;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod run;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use triage_runner::host::{Limits, PluginHost, World};
use triage_runner::input;
use triage_runner::{Rules, Runner, Tick, say, write_lines};

use crate::PluginArgs;

const DEFAULT_PLUGINS: &str = "/usr/local/lib/triage-runner/plugins";

pub(crate) fn plugin_dir(arg: Option<&Path>) -> PathBuf {
    arg.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("TRIAGE_RUNNER_PLUGINS").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGINS))
}

pub(crate) fn rules(args: &PluginArgs) -> anyhow::Result<Rules> {
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

pub(crate) fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Largest engine series read (`replay --engine`; it is held whole, unlike the GPU series).
pub(crate) const MAX_ENGINE_FILE: u64 = 256 << 20;

/// A file as text, line by line: a line that is not UTF-8 is reported (with the first lines
/// the reader could not use) and skipped; the rest is read. At most `max` bytes: a larger file
/// (or one without an end, like `/dev/zero`) is refused.
pub(crate) fn read_lines(path: &Path, max: u64) -> anyhow::Result<(String, Vec<(usize, String)>)> {
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
pub(crate) fn report_issues(path: &Path, mut issues: Vec<(usize, String)>) {
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
pub(crate) struct Replay {
    path: PathBuf,
    pub(crate) ticks: input::Ticks<std::fs::File>,
    said: usize,
}

impl Replay {
    /// Open `path` and read up to its first tick (and its meta line).
    pub(crate) fn open(path: &Path) -> anyhow::Result<Replay> {
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
    pub(crate) fn next(&mut self) -> anyhow::Result<Option<Vec<triage_core::gpu::GpuSample>>> {
        let t = self.ticks.next_tick().with_context(|| format!("reading {}", self.path.display()))?;
        self.say_issues();
        Ok(t)
    }

    /// The time of the tick after the last one handed out.
    pub(crate) fn next_time(&mut self) -> Option<f64> {
        let t = self.ticks.peek().ok()??;
        Some(t.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max))
    }

    /// Say how many issues were not said.
    pub(crate) fn end(&mut self) {
        let more = self.ticks.series.issue_count().saturating_sub(self.said);
        if more > 0 {
            say!("{}: {more} more issues", self.path.display());
        }
    }
}

pub(crate) fn report_tick(tick: &Tick, log: &mut Option<std::fs::File>) -> anyhow::Result<()> {
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
pub(crate) fn nap(d: Duration, end: Option<Instant>) {
    let d = end.map_or(d, |e| d.min(e.saturating_duration_since(Instant::now())));
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}
