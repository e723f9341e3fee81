//! Rule `retries-mask-failures` (being written by the GPU/OOM and config work; returns nothing yet).

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "retries-mask-failures",
        class: Class::Config,
        title: "Client retries hide the failure rate",
        detects: "placeholder until the rule is written",
        why: "placeholder until the rule is written",
        example: "placeholder until the rule is written",
        fix: "placeholder until the rule is written",
    },
    check,
};

fn check(_facts: &Facts) -> Option<Finding> {
    None
}
