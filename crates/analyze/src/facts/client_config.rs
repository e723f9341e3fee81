//! A client configuration's base URLs, timeouts and retries (written by `parsers/client_config/`).

use crate::report::EvidenceLine;
use triage_base::endpoint::Api;

/// A setting and the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting<T> {
    /// The value as configured.
    pub value: T,
    /// The line that set it.
    pub evidence: EvidenceLine,
}

/// A base URL as configured, with the name it was set under.
#[derive(Clone, Debug, PartialEq)]
pub struct UrlSetting {
    /// `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `base_url` …
    pub name: String,
    /// The wire API the client speaks to it, when the name says (`ANTHROPIC_*` → Anthropic,
    /// `OPENAI_*` and Codex providers → OpenAI). Clients append different paths to a base URL
    /// (`/v1/messages` versus `/chat/completions`), so what is right depends on it.
    pub api: Option<Api>,
    /// The URL and the line that set it.
    pub url: Setting<String>,
}

/// What one client configuration says: its base URL, model, timeout, retries and key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFacts {
    /// `settings_json`, `codex_toml` or `env`.
    pub format: String,
    /// The base URL the client uses: the active Codex provider's, else the first one set.
    pub base_url: Option<Setting<String>>,
    /// The model the client asks for.
    pub model: Option<Setting<String>>,
    /// Milliseconds (`API_TIMEOUT_MS`, `timeout_ms`, `request_timeout_ms`; a bare `timeout` is
    /// read as seconds, the OpenAI SDKs' unit).
    pub timeout_ms: Option<Setting<f64>>,
    /// `max_retries`, `request_max_retries`, `*_MAX_RETRIES`.
    pub max_retries: Option<Setting<u32>>,
    /// Codex's `wire_api` (`chat` or `responses`).
    pub wire_api: Option<Setting<String>>,
    /// The variable the key is read from (never the key itself).
    pub key_env: Option<Setting<String>>,
    /// A key was written in the config in clear (its value is never kept).
    pub inline_key: Option<EvidenceLine>,
    /// Every base URL in the block, in order (a paste may configure several clients).
    pub base_urls: Vec<UrlSetting>,
    /// Codex `model_provider`: which `[model_providers.X]` table is in use.
    pub provider: Option<Setting<String>>,
    /// Codex `stream_idle_timeout_ms`: how long a stream may stay silent before the client drops it.
    pub stream_idle_timeout_ms: Option<Setting<f64>>,
    /// Codex `stream_max_retries`: reconnects of a dropped stream.
    pub stream_max_retries: Option<Setting<u32>>,
}
