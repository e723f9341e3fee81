//! KV-cache estimator and capacity planner that matches what vLLM allocates.
//!
//! Read this module in the order the numbers flow:
//!
//! 1. a model's shape — [`model::ModelShape`], from a Hugging Face `config.json`
//!    ([`hf_config::parse_config`]) or a built-in preset ([`presets`]);
//! 2. how its layers land on GPUs and in vLLM's KV-cache groups — [`layout::Layout`];
//! 3. the memory left for KV on one GPU — [`budget`] (the profile vLLM runs at startup), or a
//!    figure given outright;
//! 4. blocks, tokens, concurrency, the `max_model_len` that fits and the reverse question —
//!    [`estimate::estimate`];
//! 5. what a server actually logged — [`startup::parse_startup`] — and why it differs —
//!    [`reconcile::reconcile`];
//! 6. the `triage.kv/v1` JSON — [`report::KvReport`]; what the inputs leave unknown is `null`
//!    there, with a [`missing::Missing`] entry naming the flag or config field that settles it.
//!
//! The formulas, checked against vLLM 0.33.0's source (the PyPI wheel; `crate::layout`
//! cites each function) and its own functions run on the test shapes
//! (`tests/data/kv/README.md`):
//!
//! - one layer, one block, standard attention: `block_size · kv_heads_per_rank ·
//!   (head_dim_k + head_dim_v) · dtype_bytes`, with `kv_heads_per_rank = max(1, kv_heads / tp)`
//!   (heads are replicated when TP exceeds them);
//! - MLA (DeepSeek V2/V3): `block_size · (kv_lora_rank + qk_rope_head_dim) · dtype_bytes`, one
//!   latent vector per token (no ×2) and the *whole* latent on every TP rank; `fp8_ds_mla`
//!   stores 656 bytes per token per layer;
//! - `num_blocks = floor(available / bytes_per_block)`, `bytes_per_block` = the largest KV-cache
//!   group's pages (all layers for dense/MLA models);
//! - max concurrency = blocks / blocks one request of `max_model_len` needs (summed over groups;
//!   sliding layers need `min(window − 1 + in-flight tokens, len)` plus one block);
//! - logged tokens (`GPU KV cache size`) = `int(max concurrency × max_model_len)` in vLLM 0.33,
//!   `blocks / groups × block_size` in older releases.
//!
//! The article's formula (`2 · layers · kv_heads · head_dim · dtype_bytes · seq · batch`) is
//! the special case of plain multi-head attention on one GPU: [`article`].

#![deny(missing_docs)]

pub mod article;
pub mod budget;
pub mod defaults;
pub mod dtype;
pub mod error;
pub mod estimate;
pub mod gpus;
pub mod hf_config;
pub mod layout;
pub mod missing;
pub mod model;
pub mod params;
pub mod presets;
pub mod reconcile;
pub mod report;
pub mod request;
pub mod startup;
pub mod units;

pub use error::KvError;
pub use estimate::{KvEstimate, KvOptions, estimate};
pub use model::{Attention, ModelShape};
pub use startup::{StartupCapacity, parse_startup};
