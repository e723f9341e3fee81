//! The `triage.kv/v1` report: what `triage kv --format json` prints and the site renders.
//!
//! Contract (extend, never rename): `{"schema":"triage.kv/v1","model","settings":{…},
//! "bytes_per_token","bytes_per_token_per_rank","bytes_per_token_past_windows_per_rank",
//! "layers":[{"kind","window","count","layers","kv_heads_per_rank","cached_dim",
//! "bytes_per_token_per_layer","bytes_per_token","groups","max_tokens_per_request"}],
//! "kv_cache_groups","pool_tensors","padding_layers","page_bytes","block_bytes","budget",
//! "available_kv_bytes","available_kv_source","blocks","tokens","concurrency_len","blocks_per_request",
//! "max_concurrency","max_concurrency_whole","max_model_len_fit","max_num_seqs","need",
//! "article_bytes_per_token","formula":[…],"assumptions":[…],"warnings":[…],"missing":[…],
//! "reconcile"}` — `missing` ([`crate::missing`]) only when a figure is unknown (then
//! `null`).
//! Bytes, blocks and tokens are integers; `max_concurrency` has two decimals (rounded half
//! up); "per rank" means one GPU (the busiest pipeline stage); `bytes_per_token` sums all
//! `tp × pp` GPUs including replicated heads and MLA latents.

use crate::estimate::KvEstimate;
use crate::reconcile::Reconciliation;
use serde::Serialize;

/// The schema id every KV report carries in `schema`.
pub const SCHEMA: &str = "triage.kv/v1";

/// The `triage.kv/v1` document: the estimate, and its comparison with a startup log when one was given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvReport {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The estimate (its fields are the document's top level).
    #[serde(flatten)]
    pub estimate: KvEstimate,
    /// Present when startup lines were given to compare with.
    pub reconcile: Option<Reconciliation>,
}

impl KvReport {
    /// The report of `estimate`, compared with a startup log when `reconcile` is given.
    pub fn new(estimate: KvEstimate, reconcile: Option<Reconciliation>) -> Self {
        KvReport { schema: SCHEMA, estimate, reconcile }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{KvBudget, KvOptions, estimate};
    use crate::presets::preset;

    #[test]
    fn json_has_the_contract_fields_in_order() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let e = estimate(&m, &KvOptions::default(), &KvBudget::Available(1 << 30)).unwrap();
        let json = serde_json::to_string(&KvReport::new(e, None)).unwrap();
        assert!(json.starts_with(r#"{"schema":"triage.kv/v1","model":"llama-3.1-8b""#), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        for k in [
            "bytes_per_token",
            "bytes_per_token_per_rank",
            "layers",
            "blocks",
            "tokens",
            "max_concurrency",
            "max_model_len_fit",
            "max_num_seqs",
            "assumptions",
            "reconcile",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["bytes_per_token"], 131_072);
        assert_eq!(v["layers"][0]["kind"], "full");
        assert_eq!(v["settings"]["kv_cache_dtype"], "auto");
    }
}
