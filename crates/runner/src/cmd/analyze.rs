//! `triage-runner analyze`: the text-analyzer component (or, with `--builtin-rules`, the
//! analyzer compiled in) over files read in [`input::READ_CHUNK`] pieces; the
//! `triage.report/v1` JSON on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use triage_runner::host::{Limits, PluginHost};
use triage_runner::input::{self, Sectioner};
use triage_runner::{out, say};

use super::plugin_dir;
use crate::AnalyzeArgs;

pub(crate) fn analyze(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let AnalyzeArgs { files, plugin, plugins, builtin_rules, section_mib } = args;
    if builtin_rules {
        builtin(&files)?;
    } else {
        component(&files, plugin, plugins, section_mib)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every file streamed into one report by the analyzer compiled into the runner.
fn builtin(files: &[PathBuf]) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut a = triage_core::analyze::Analyzer::new();
    for f in files {
        let file = std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?;
        a.begin(&f.display().to_string());
        input::stream(file, |piece| a.feed(piece)).with_context(|| format!("reading {}", f.display()))?;
        a.end();
    }
    let mut o = stdout.lock();
    writeln!(o, "{}", out::json_pretty(&a.finish())?)?;
    Ok(())
}

/// The component, called with whole files while they fit in a section and one section at a
/// time of a file that does not: one report per call.
fn component(
    files: &[PathBuf],
    plugin: Option<PathBuf>,
    plugins: Option<PathBuf>,
    section_mib: usize,
) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
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
