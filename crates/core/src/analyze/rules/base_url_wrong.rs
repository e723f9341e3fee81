//! Rule `base-url-wrong` (being written by the GPU/OOM and config work; returns nothing yet).

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "base-url-wrong",
        class: Class::Config,
        title: "The base URL is not the API base",
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
