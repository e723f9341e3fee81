//! `triage analyze`: stream files (or stdin) through the core's analyzer.
//!
//! Files are read in 64 KiB pieces and never held whole, so a multi-gigabyte request log is
//! analysed in the analyzer's bounded memory. Inputs are only read.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use triage_core::analyze::Analyzer;
use triage_core::analyze::facts::Slo;
use triage_core::analyze::report::Report;
use triage_core::lang::Lang;

/// Feed one reader into the analyzer as the input `name`.
pub fn feed_reader(a: &mut Analyzer, name: &str, mut r: impl Read) -> std::io::Result<u64> {
    a.begin(name);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        a.feed(&buf[..n]);
    }
    a.end();
    Ok(total)
}

/// Check that `path` can be read as an input before anything else happens: it exists and is
/// not a directory. FIFOs, `/dev/fd/N` and process substitutions (`<(cmd)`) are inputs too.
/// Failures are usage errors (exit 2).
pub fn check_input(path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => crate::output::usage(format!("{shown}: is a directory")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::output::usage(format!("{shown}: no such file"))
        }
        Err(e) => crate::output::usage(format!("{shown}: {e}")),
    }
}

/// Analyse files by path (`-` is stdin). The input names are the paths as given.
pub fn analyze_paths(paths: &[String]) -> anyhow::Result<Report> {
    analyze_paths_in(paths, Lang::En)
}

/// [`analyze_paths`], writing the report's text in `lang`.
pub fn analyze_paths_in(paths: &[String], lang: Lang) -> anyhow::Result<Report> {
    analyze_paths_with(paths, lang, Slo::default())
}

/// [`analyze_paths_in`], judging tails against `slo`.
pub fn analyze_paths_with(paths: &[String], lang: Lang, slo: Slo) -> anyhow::Result<Report> {
    let mut a = Analyzer::new().with_lang(lang).with_slo(slo);
    if paths.is_empty() {
        feed_reader(&mut a, "stdin", std::io::stdin().lock()).context("reading stdin")?;
    }
    for p in paths {
        if p == "-" {
            feed_reader(&mut a, "stdin", std::io::stdin().lock()).context("reading stdin")?;
        } else {
            let f = std::fs::File::open(Path::new(p)).with_context(|| format!("opening {p}"))?;
            feed_reader(&mut a, p, f).with_context(|| format!("reading {p}"))?;
        }
    }
    Ok(a.finish())
}
