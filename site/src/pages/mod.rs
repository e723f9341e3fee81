//! One page per file; each is a component reading core's results, never parsing itself.

pub mod cards;
pub mod chart;
pub mod drill;
pub mod export;
pub mod kv;
pub mod playbook;
pub mod probe;
pub mod prometheus;
pub mod triage;
