//! `triage-runner run`: sample every GPU (NVML, or a recorded series with `--replay`) each
//! tick, run the rules, serve the exposition, log findings raised and cleared, and (with
//! `--stats`) say what the run cost.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use triage_core::gpu::GpuSample;
use triage_core::gpu::series::{self, Meta};
use triage_runner::nvml::NvmlSource;
use triage_runner::scrape::EngineUrl;
use triage_runner::{EngineSource, Rules, Runner, out, say, write_lines};

use super::{Replay, nap, report_tick, rules, unix_now};
use crate::RunArgs;

/// How long one scrape of the engine may take, all of it (connect, send, every read).
const SCRAPE_DEADLINE: Duration = Duration::from_millis(500);

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let engine = match &args.engine_url {
        Some(u) => EngineSource::Url(EngineUrl::parse(u).map_err(|e| anyhow::anyhow!(e))?),
        None => EngineSource::None,
    };
    // The source: NVML, or a recorded series.
    let (nvml, replayed, meta) = match &args.replay {
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
    let rules = rules(&args.plugins)?;
    let mut runner = Runner::new(rules, engine, meta.clone());
    runner.scrape_timeout = SCRAPE_DEADLINE;
    // Served from the start: before the first tick, the runner's own gauges.
    let page = Arc::new(Mutex::new(runner.exposition()));
    if !args.no_listen && !args.once {
        serve(args.listen, &page)?;
    }
    let log = open_log(args.findings_log.as_deref())?;
    let rec = open_record(args.record.as_deref(), meta.as_ref())?;
    let started = Instant::now();
    // When the run ends: every wait and every scrape stops there.
    let end = args.duration_s.and_then(|d| started.checked_add(Duration::from_secs_f64(d.min(1e9))));
    let mut run = Ticking {
        runner,
        nvml,
        replayed,
        page,
        log,
        rec,
        end,
        once: args.once,
        pace: args.speed.0,
        period: Duration::from_millis(args.interval_ms),
        first_tick: None,
    };
    run.ticks()?;
    if let Some(f) = run.rec.as_mut() {
        f.flush()?;
    }
    if let Some(series) = &mut run.replayed {
        series.end();
    }
    if args.stats {
        print_stats(started.elapsed(), run.runner.counters.ticks, run.first_tick);
    }
    Ok(ExitCode::SUCCESS)
}

/// Serve the exposition page on `listen`, saying where (and when that is not loopback).
fn serve(listen: std::net::SocketAddr, page: &Arc<Mutex<String>>) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        say!(
            "serving metrics on {listen}, which is not a loopback address: anyone who reaches it reads the GPUs' state"
        );
    }
    let bound = triage_runner::export::serve(listen, page.clone())
        .with_context(|| format!("listening on {listen}"))?;
    say!("metrics on http://{bound}/metrics");
    Ok(())
}

/// The findings log, opened for appending.
fn open_log(path: Option<&Path>) -> anyhow::Result<Option<std::fs::File>> {
    Ok(match path {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?,
        ),
        None => None,
    })
}

/// The series file every sample is also written to, its meta line written.
fn open_record(
    path: Option<&Path>,
    meta: Option<&Meta>,
) -> anyhow::Result<Option<std::io::BufWriter<std::fs::File>>> {
    Ok(match path {
        Some(p) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
            );
            if let Some(m) = meta {
                writeln!(f, "{}", series::meta_line(m))?;
            }
            Some(f)
        }
        None => None,
    })
}

/// Has the run's end passed?
fn over(end: Option<Instant>) -> bool {
    end.is_some_and(|e| Instant::now() >= e)
}

/// What the next turn of the loop does.
enum Next {
    /// Run the rules over these samples.
    Samples(Vec<GpuSample>),
    /// Nothing to read yet: go round again.
    Again,
    /// The source is over.
    Stop,
}

/// The tick loop and what it writes to.
struct Ticking {
    runner: Runner,
    nvml: Option<NvmlSource>,
    replayed: Option<Replay>,
    page: Arc<Mutex<String>>,
    log: Option<std::fs::File>,
    rec: Option<std::io::BufWriter<std::fs::File>>,
    end: Option<Instant>,
    once: bool,
    /// With a replay: `None` goes as fast as it can, else this factor of the recorded pace.
    pace: Option<f64>,
    period: Duration,
    /// When the first tick ended, and the CPU time used by then.
    first_tick: Option<(Instant, f64)>,
}

impl Ticking {
    /// Tick until the source or the run is over (or after one tick, with `--once`).
    fn ticks(&mut self) -> anyhow::Result<()> {
        let mut next = Instant::now();
        let mut last_reload = Instant::now();
        let mut engine_said = false;
        loop {
            if last_reload.elapsed() >= Duration::from_secs(2) {
                last_reload = Instant::now();
                self.reload();
            }
            let samples = match self.next_samples()? {
                Next::Samples(s) => s,
                Next::Again => continue,
                Next::Stop => break,
            };
            if let Some(f) = self.rec.as_mut() {
                for s in &samples {
                    serde_json::to_writer(&mut *f, s)?;
                    f.write_all(b"\n")?;
                }
            }
            let t = samples.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
            self.runner.scrape_timeout = self.end.map_or(SCRAPE_DEADLINE, |e| {
                SCRAPE_DEADLINE.min(e.saturating_duration_since(Instant::now()))
            });
            let tick = self.runner.tick(samples);
            if self.first_tick.is_none() {
                self.first_tick = Some((Instant::now(), usage().0));
            }
            if let Some(e) = &tick.engine_error
                && !engine_said
            {
                say!("engine metrics: {e} (said once; see triage_runner_engine_up)");
                engine_said = true;
            }
            report_tick(&tick, &mut self.log)?;
            for (plugin, f) in &tick.raised {
                say!(
                    "raised {} on {} ({plugin}): {}",
                    f.rule,
                    f.gpu.map_or("node".into(), |g| format!("GPU {g}")),
                    f.title
                );
            }
            let text = self.runner.exposition();
            if self.once {
                let stdout = std::io::stdout();
                let mut o = stdout.lock();
                o.write_all(out::block(&text).as_bytes())?;
                write_lines(&mut o, Some("active"), self.runner.active())?;
                break;
            }
            if let Ok(mut p) = self.page.lock() {
                *p = text;
            }
            if over(self.end) {
                break;
            }
            self.wait(t, &mut next);
            if over(self.end) {
                break;
            }
        }
        Ok(())
    }

    /// Plugins whose files changed are loaded again; their notices said.
    fn reload(&mut self) {
        if let Rules::Plugins(host) = &mut self.runner.rules {
            host.reload();
            for n in host.take_notices() {
                say!("{n}");
            }
        }
    }

    /// The next samples: from NVML now, or the replay's next tick.
    fn next_samples(&mut self) -> anyhow::Result<Next> {
        Ok(match (&mut self.nvml, &mut self.replayed) {
            (Some(n), _) => Next::Samples(n.sample(unix_now())),
            (None, Some(series)) => match series.next()? {
                Some(t) => Next::Samples(t),
                // The series is over: with --duration-s, keep serving the last state
                // until it has passed (a scraper still reads the end of the replay).
                None if self.end.is_some() && !over(self.end) => {
                    nap(Duration::from_millis(100), self.end);
                    Next::Again
                }
                None => Next::Stop,
            },
            (None, None) => Next::Stop,
        })
    }

    /// Pace: NVML by the interval (`next` is when the next sample is due); a replay by its own
    /// timestamps, `t` being the time of the tick just run.
    fn wait(&mut self, t: f64, next: &mut Instant) {
        match (&mut self.replayed, self.pace) {
            (Some(_), None) => {}
            (Some(series), Some(factor)) => {
                if let Some(nt) = series.next_time() {
                    let wait = (nt - t) / factor;
                    if wait > 0.0 && wait < 3600.0 {
                        nap(Duration::from_secs_f64(wait), self.end);
                    }
                }
            }
            (None, _) => {
                *next += self.period;
                nap(next.saturating_duration_since(Instant::now()), self.end);
            }
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
pub(crate) fn print_stats(wall: Duration, ticks: u64, first: Option<(Instant, f64)>) {
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
