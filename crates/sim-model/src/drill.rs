//! Incident drills for the site: a random incident (by seed), the files it left, the causes to
//! choose from, and the check of a pick. Pure, so the page runs it in wasm; the page shows the
//! evidence by feeding `files` to core's `Analyzer`, exactly as `triage analyze` would.

use crate::Sim;
use crate::output::Artifact;
use crate::rng::Rng;
use crate::scenario::{self, Scenario};
use serde::Serialize;
use triage_core::analyze::rules::RuleId;
use triage_core::lang::Lang;

/// One cause a person can pick.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Choice {
    pub name: &'static str,
    pub class: &'static str,
    pub cause: &'static str,
}

/// A drill: the incident's files and the candidate causes. The answer stays inside until
/// [`Drill::check`] is asked.
#[derive(Clone, Debug)]
pub struct Drill {
    pub seed: u64,
    /// What a user of the service would report (the probe's view), without naming the cause.
    pub symptom: &'static str,
    pub files: Vec<Artifact>,
    pub choices: Vec<Choice>,
    scenario: Scenario,
}

/// What a pick was worth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub correct: bool,
    /// Right class, wrong cause (e.g. overload for a cold start: both TTFT_HIGH).
    pub same_class: bool,
    pub answer: &'static str,
    pub class: &'static str,
    pub cause: &'static str,
    /// The analyzer rules that name it: look for them in the report of `files`.
    pub rules: &'static [RuleId],
}

impl Choice {
    /// [`Choice::cause`] in `lang`.
    pub fn cause_in(&self, lang: Lang) -> &'static str {
        scenario::find(self.name).map_or(self.cause, |s| s.cause_in(lang))
    }
}

impl Verdict {
    /// [`Verdict::cause`] in `lang`.
    pub fn cause_in(&self, lang: Lang) -> &'static str {
        scenario::find(self.answer).map_or(self.cause, |s| s.cause_in(lang))
    }
}

impl Drill {
    /// [`Drill::symptom`] in `lang`.
    pub fn symptom_in(&self, lang: Lang) -> &'static str {
        self.scenario.symptom_in(lang)
    }

    /// The incident for `seed`: the scenario is drawn from the seed, and so is its traffic.
    pub fn new(seed: u64) -> Drill {
        let faults = scenario::faults();
        let pick = Rng::derive(seed, 0xD811).below(faults.len() as u64) as usize;
        Drill::of(faults[pick].clone(), seed)
    }

    /// A drill of a given scenario.
    pub fn of(scenario: Scenario, seed: u64) -> Drill {
        let mut sim = Sim::new(scenario.config(seed));
        sim.run(scenario.duration_ns());
        let choices = scenario::faults()
            .iter()
            .map(|s| Choice { name: s.name, class: s.class_str(), cause: s.cause })
            .collect();
        Drill { seed, symptom: scenario.symptom, files: sim.artifacts(), choices, scenario }
    }

    pub fn check(&self, pick: &str) -> Verdict {
        let s = &self.scenario;
        let picked_class = scenario::find(pick).map(|p| p.class_str());
        Verdict {
            correct: pick == s.name,
            same_class: picked_class == Some(s.class_str()),
            answer: s.name,
            class: s.class_str(),
            cause: s.cause,
            rules: s.rules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drill_hides_its_answer_until_checked() {
        let d = Drill::new(3);
        assert_eq!(d.seed, 3);
        assert!(d.choices.len() >= 11);
        assert!(d.files.iter().any(|f| f.name == "vllm.log"));
        let answer = d.check("no-such-cause").answer;
        let v = d.check(answer);
        assert!(v.correct && v.same_class);
        assert!(!d.check("no-such-cause").correct);
        // Seeds spread over the catalogue.
        let mut seen: Vec<&str> = (0..40).map(|s| Drill::new(s).check("").answer).collect();
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() >= 6, "{seen:?}");
    }

    /// The runs of digits in `s`, sorted.
    fn numbers(s: &str) -> Vec<&str> {
        let mut v: Vec<&str> = s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).collect();
        v.sort_unstable();
        v
    }

    fn zh_of(en: &str, zh: &str) {
        use triage_core::lang::has_cjk;
        assert!(!has_cjk(en), "{en}");
        assert!(has_cjk(zh), "{zh}");
        assert_ne!(en, zh);
        assert_eq!(numbers(en), numbers(zh), "\n{en}\n{zh}");
    }

    /// Every scenario's symptom and cause, every file description and every choice has a
    /// Chinese form with the same numbers; English stays what it was.
    #[test]
    fn every_drill_text_has_a_chinese_form() {
        for s in scenario::all() {
            assert_eq!((s.cause_in(Lang::En), s.symptom_in(Lang::En)), (s.cause, s.symptom));
            zh_of(s.cause, s.cause_in(Lang::Zh));
            zh_of(s.symptom, s.symptom_in(Lang::Zh));
        }
        let mut whats = std::collections::BTreeSet::new();
        for s in scenario::faults() {
            let d = Drill::of(s.clone(), 1);
            assert_eq!(d.symptom_in(Lang::Zh), s.symptom_in(Lang::Zh));
            for f in &d.files {
                assert_eq!(f.what_in(Lang::En), f.what);
                assert!(triage_core::lang::has_cjk(f.what_in(Lang::Zh)), "{}", f.what);
                assert_ne!(f.what_in(Lang::Zh), f.what);
                whats.insert(f.what.clone());
            }
            for c in &d.choices {
                assert_eq!(c.cause_in(Lang::En), c.cause);
                zh_of(c.cause, c.cause_in(Lang::Zh));
            }
            let v = d.check(s.name);
            zh_of(v.cause, v.cause_in(Lang::Zh));
        }
        assert!(whats.len() >= 6, "{whats:?}");
    }
}
