//! The configuration file of the client that sends a stream's requests, for the scenarios whose
//! fault is on the client side: a Claude Code `settings.json` or a Codex `config.toml`, written
//! the way those tools document them. Keys are obviously fake.

use serde::Serialize;

/// Which client, configured how.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ClientFile {
    /// Claude Code `~/.claude/settings.json` with `API_TIMEOUT_MS`.
    ClaudeSettings { base_url: String, model: String, timeout_ms: u64 },
    /// Codex `~/.codex/config.toml` with a provider and `request_max_retries`.
    CodexConfig { base_url: String, model: String, max_retries: u32, stream_idle_timeout_ms: u64 },
}

impl ClientFile {
    pub fn file_name(&self) -> &'static str {
        match self {
            ClientFile::ClaudeSettings { .. } => "settings.json",
            ClientFile::CodexConfig { .. } => "config.toml",
        }
    }

    pub fn render(&self) -> String {
        match self {
            ClientFile::ClaudeSettings { base_url, model, timeout_ms } => format!(
                "{{\n  \"env\": {{\n    \"ANTHROPIC_BASE_URL\": \"{base_url}\",\n    \"ANTHROPIC_AUTH_TOKEN\": \"sk-sim-FAKEKEYFORTHESIMULATOR000000\",\n    \"ANTHROPIC_MODEL\": \"{model}\",\n    \"API_TIMEOUT_MS\": \"{timeout_ms}\"\n  }},\n  \"model\": \"{model}\"\n}}\n"
            ),
            ClientFile::CodexConfig { base_url, model, max_retries, stream_idle_timeout_ms } => format!(
                "model_provider = \"gateway\"\nmodel = \"{model}\"\n\n[model_providers.gateway]\nname = \"Inference gateway\"\nbase_url = \"{base_url}\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"chat\"\nrequest_max_retries = {max_retries}\nstream_idle_timeout_ms = {stream_idle_timeout_ms}\n"
            ),
        }
    }
}
