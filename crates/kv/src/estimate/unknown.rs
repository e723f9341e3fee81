//! The `missing` list of an estimate: one entry per unknown quantity, naming the report fields
//! it leaves null and what would settle it.

use crate::budget::Budget;
use crate::missing::{self, Missing};
use triage_base::lang::Lang;

/// What is unknown, for [`missing_entries`].
pub(super) struct Unknowns<'a> {
    pub(super) max_model_len: bool,
    pub(super) concurrency_len: bool,
    /// The GPU budget, when the KV memory is computed from one.
    pub(super) budget: Option<&'a Budget>,
    /// Whether `need` was asked.
    pub(super) need: bool,
}

/// The `missing` list: one entry per unknown quantity, with the report fields it leaves null.
pub(super) fn missing_entries(lang: Lang, u: Unknowns<'_>) -> Vec<Missing> {
    let mut out = Vec::new();
    if u.max_model_len {
        out.push(missing::max_model_len(lang, vec!["settings.max_model_len", "tokens", "max_num_seqs"]));
    }
    if u.concurrency_len {
        out.push(missing::concurrency_len(
            lang,
            vec!["concurrency_len", "blocks_per_request", "max_concurrency", "max_concurrency_whole"],
        ));
    }
    let Some(b) = u.budget else { return out };
    let mut terms = Vec::new();
    let gpu_need: &[&'static str] =
        if u.need { &["need.gpu_bytes_per_rank", "need.gpu_memory_utilization_ppm"] } else { &[] };
    let term_fields = |own: &'static str| {
        let mut f = vec![own, "budget.available_kv_bytes", "budget.shortfall_bytes"];
        f.extend(gpu_need);
        f
    };
    if b.weights_bytes.is_none() {
        out.push(missing::weights(lang, &b.weights_needs, term_fields("budget.weights_bytes")));
        terms.push("budget.weights_bytes");
    }
    if b.activation_bytes.is_none() {
        out.push(missing::activation(lang, &b.activation_needs, term_fields("budget.activation_bytes")));
        terms.push("budget.activation_bytes");
    }
    if b.available_kv_bytes.is_none() {
        let mut fields = vec![
            "available_kv_bytes",
            "blocks",
            "tokens",
            "legacy_tokens",
            "max_concurrency",
            "max_concurrency_whole",
            "max_model_len_fit",
            "max_num_seqs",
        ];
        if u.need {
            fields.push("need.fits");
        }
        out.push(missing::available(lang, terms, fields));
    }
    out
}
