//! The analyzer's one test harness: text run through the real pipeline, and the shared fixtures.
//!
//! Every parser's tests used to carry their own `read()` (add the text, take one parser's facts
//! out of the analyzer, sometimes its sections, sometimes a second whole analysis for the
//! report); they drifted in what they ran. Here there is one way: [`run`] begins an input,
//! feeds it, ends it and finishes — exactly what `triage analyze` does — and hands back both the
//! [`Facts`] the parsers wrote and the [`Report`] the rules made of them, so a test asserts on
//! either without analysing twice.
//!
//! [`fixture!`] names a file under the repository's `tests/data/` by its path there
//! (`fixture!("smi/smi_idle.txt")`), the same from every module, instead of a
//! `../../../../tests/data/…` path that depends on how deep the test sits.

use crate::facts::Facts;
use crate::report::{InputSection, Report};
use crate::{Analyzer, Lang};

pub(crate) use triage_base::{fixture, fixture_bytes};

/// The repository's `tests/data/` folder, for a test that walks it.
pub(crate) fn data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// What one analysis left: the parsers' facts and the report.
#[derive(Debug)]
pub(crate) struct Run {
    pub facts: Facts,
    pub report: Report,
}

impl Run {
    /// The sections the input was split into (the report's `inputs`).
    pub fn sections(&self) -> &[InputSection] {
        &self.report.inputs
    }

    /// One parser's facts (`pick` takes them out of [`Facts`]) and the sections, owned.
    pub fn take<T>(self, pick: impl FnOnce(Facts) -> T) -> (T, Vec<InputSection>) {
        (pick(self.facts), self.report.inputs)
    }
}

/// `text` as one input called `name`, in English.
pub(crate) fn run(name: &str, text: &str) -> Run {
    run_inputs(Lang::En, &[(name, text.as_bytes())])
}

/// `text` as one input called `name`, the report written in `lang`.
pub(crate) fn run_in(lang: Lang, name: &str, text: &str) -> Run {
    run_inputs(lang, &[(name, text.as_bytes())])
}

/// Several inputs, each begun, fed whole and ended in order, then one finish.
pub(crate) fn run_inputs(lang: Lang, inputs: &[(&str, &[u8])]) -> Run {
    let mut a = Analyzer::new().with_lang(lang);
    for (name, bytes) in inputs {
        a.begin(name);
        a.feed(bytes);
        a.end();
    }
    let (report, facts) = a.finish_with_facts();
    Run { facts, report }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness is the pipeline: its report is the one `analyze` gives, in either language,
    /// and its facts are what the parsers wrote.
    #[test]
    fn the_harness_reports_what_analyze_reports() {
        let text = fixture!("incidents/ttft_queueing.log");
        let en = run("ttft_queueing.log", text);
        assert_eq!(en.report, crate::analyze(&[("ttft_queueing.log", text)]));
        assert!(!en.facts.vllm.stats.is_empty());
        assert_eq!(en.sections()[0].name, "ttft_queueing.log");
        let zh = run_in(Lang::Zh, "ttft_queueing.log", text);
        assert_eq!(zh.report, crate::analyze_in(Lang::Zh, &[("ttft_queueing.log", text)]));
        assert_ne!(zh.report.findings[0].title, en.report.findings[0].title);
    }

    /// The macros embed the file the folder holds.
    #[test]
    #[allow(clippy::disallowed_methods, reason = "a test reads the fixture; the core itself does no I/O")]
    fn fixtures_are_the_files_in_tests_data() {
        let on_disk = std::fs::read(data_dir().join("smi/smi_idle.txt")).unwrap();
        assert_eq!(fixture!("smi/smi_idle.txt").as_bytes(), on_disk.as_slice());
        assert_eq!(fixture_bytes!("smi/smi_idle.txt"), on_disk.as_slice());
    }
}
