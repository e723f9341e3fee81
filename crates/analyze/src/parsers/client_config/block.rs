//! One config block (a settings.json object, a config.toml, a run of exports): the settings read
//! from it and the [`ClientFacts`] they make — which provider is active, which base URL is in use.

use super::{ClientFacts, Format, Setting, Slot, UrlSetting, Value, to_count};
use crate::report::EvidenceLine;
use triage_base::endpoint::Api;

pub(super) struct Item {
    pub(super) provider: Option<String>,
    pub(super) name: String,
    pub(super) slot: Slot,
    pub(super) value: Value,
    pub(super) evidence: EvidenceLine,
}

/// Most settings kept per block: a config has a few dozen; a runaway paste must not grow memory.
pub(super) const MAX_ITEMS: usize = 256;

/// One config block being read: a settings.json object, a config.toml, a run of exports.
pub(super) struct Block {
    pub(super) format: Format,
    pub(super) items: Vec<Item>,
    pub(super) inline_key: Option<EvidenceLine>,
    /// A JSON object was opened in this block…
    pub(super) json_opened: bool,
    /// …and closed again: another `{` starts another block. A paste that starts inside an
    /// object (its `{` went to another section) stays open until its first object closes.
    pub(super) json_closed: bool,
}

fn api_of(name: &str, in_provider: bool) -> Option<Api> {
    let n = name.to_ascii_lowercase();
    if n.contains("anthropic") {
        Some(Api::Anthropic)
    } else if n.contains("openai") || in_provider {
        Some(Api::Openai)
    } else {
        None
    }
}

impl Block {
    pub(super) fn new(format: Format) -> Block {
        Block { format, items: Vec::new(), inline_key: None, json_opened: false, json_closed: false }
    }

    pub(super) fn build(self) -> Option<ClientFacts> {
        let mut f = ClientFacts {
            format: self.format.name().to_owned(),
            inline_key: self.inline_key,
            ..Default::default()
        };
        // Codex: the provider `model_provider` names, if its table is here; else the first table.
        let named = self
            .items
            .iter()
            .rev()
            .find(|i| i.slot == Slot::Provider && i.provider.is_none())
            .and_then(|i| i.value.text().map(str::to_owned));
        let chosen = named
            .filter(|n| self.items.iter().any(|i| i.provider.as_ref() == Some(n)))
            .or_else(|| self.items.iter().find_map(|i| i.provider.clone()));
        let mut url_rank = 0;
        for it in self.items {
            let in_scope = it.provider.is_none() || it.provider == chosen;
            if !in_scope && it.slot != Slot::BaseUrl {
                continue;
            }
            let text =
                || it.value.text().map(|s| Setting { value: s.to_owned(), evidence: it.evidence.clone() });
            let number = |scale: f64| {
                it.value.number().map(|x| Setting { value: x * scale, evidence: it.evidence.clone() })
            };
            let count = || {
                it.value
                    .number()
                    .and_then(to_count)
                    .map(|x| Setting { value: x, evidence: it.evidence.clone() })
            };
            match it.slot {
                Slot::BaseUrl => {
                    let Some(url) = text() else { continue };
                    // The active provider's URL is the one in use; then the first set outside any
                    // provider table; other providers' URLs are only listed.
                    let rank = match (&it.provider, in_scope) {
                        (Some(_), true) => 2,
                        (None, _) => 1,
                        (Some(_), false) => 0,
                    };
                    if rank > url_rank {
                        url_rank = rank;
                        f.base_url = Some(url.clone());
                    }
                    f.base_urls.push(UrlSetting {
                        api: api_of(&it.name, it.provider.is_some()),
                        name: it.name.clone(),
                        url,
                    });
                }
                Slot::Model => f.model = text().or(f.model),
                Slot::Timeout(scale) => f.timeout_ms = number(scale).or(f.timeout_ms),
                Slot::StreamIdle => f.stream_idle_timeout_ms = number(1.0).or(f.stream_idle_timeout_ms),
                Slot::MaxRetries => f.max_retries = count().or(f.max_retries),
                Slot::StreamMaxRetries => f.stream_max_retries = count().or(f.stream_max_retries),
                Slot::WireApi => f.wire_api = text().or(f.wire_api),
                Slot::KeyEnv => f.key_env = text().or(f.key_env),
                Slot::Provider => {
                    if it.provider.is_none() {
                        f.provider = text().or(f.provider);
                    }
                }
                Slot::Secret => {}
            }
        }
        (!f.is_empty()).then_some(f)
    }
}
