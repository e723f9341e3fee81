//! Client configurations: Claude Code `settings.json` (`env.ANTHROPIC_BASE_URL` …), Codex
//! `config.toml` (`model_provider`, `[model_providers.X] base_url …`), shell `export` lines.
//! (Being written: see ClientFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;

/// A setting and the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub evidence: EvidenceLine,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFacts {
    /// `settings_json`, `codex_toml` or `env`.
    pub format: String,
    pub base_url: Option<Setting<String>>,
    pub model: Option<Setting<String>>,
    /// Milliseconds.
    pub timeout_ms: Option<Setting<f64>>,
    pub max_retries: Option<Setting<u32>>,
    pub wire_api: Option<Setting<String>>,
    /// The variable the key is read from (never the key itself).
    pub key_env: Option<Setting<String>>,
    /// A key was written in the config in clear (its value is never kept).
    pub inline_key: Option<EvidenceLine>,
}

#[derive(Default)]
pub struct ClientParser;

impl SectionParser for ClientParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
