//! `triage-runner replay`: run the rules over a recorded series (and, if given, the engine's
//! recorded samples) and print each finding raised, as JSON lines or as text.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use triage_core::gpu::engine::EngineSeries;
use triage_runner::{EngineSource, Runner, say, write_lines};

use super::{MAX_ENGINE_FILE, Replay, read_lines, report_issues, report_tick, rules};
use crate::{Format, Pace, ReplayArgs};

/// The engine's recorded samples, their issues said; none without `--engine`.
fn engine(path: Option<&std::path::Path>) -> anyhow::Result<EngineSource> {
    Ok(match path {
        Some(p) => {
            let (text, mut issues) = read_lines(p, MAX_ENGINE_FILE)?;
            let e = EngineSeries::parse(&text);
            issues.extend(e.issues.iter().map(|i| (i.line, i.message.clone())));
            report_issues(p, issues);
            EngineSource::Recorded(e)
        }
        None => EngineSource::None,
    })
}

pub(crate) fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let ReplayArgs { file, engine: engine_file, speed: Pace(pace), format, plugins } = args;
    let mut series = Replay::open(&file)?;
    let engine = engine(engine_file.as_deref())?;
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
