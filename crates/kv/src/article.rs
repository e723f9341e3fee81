//! The article's KV formula — the multi-head-attention special case of [`crate::layout`].
//!
//! The source article sizes the cache as `2 · layers · kv_heads · head_dim · dtype_bytes ·
//! seq · batch` and gives a 7B example: 32 layers, 32 heads, head_dim 128, fp16, 4096 tokens,
//! batch 64 → 137.4 GB (decimal gigabytes; 128 GiB). It equals what vLLM allocates when every
//! layer keeps every token with separate K and V, on one GPU, and `seq` is a whole number of
//! blocks. It does not know grouped-query replication across TP, MLA's single latent, sliding
//! windows or block rounding — the estimator does.

/// The article's formula, in bytes; `None` on overflow.
pub fn article_kv_bytes(
    layers: u64,
    kv_heads: u64,
    head_dim: u64,
    dtype_bytes: u64,
    seq: u64,
    batch: u64,
) -> Option<u64> {
    2u64.checked_mul(layers)?
        .checked_mul(kv_heads)?
        .checked_mul(head_dim)?
        .checked_mul(dtype_bytes)?
        .checked_mul(seq)?
        .checked_mul(batch)
}

/// The article's 7B example as printed: `est_kv_bytes(32, 32, 128, 4096, 64) / 1e9` GB.
pub const ARTICLE_7B_BYTES: u64 = 137_438_953_472;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{KvDtype, ModelDtype};
    use crate::layout::{Layout, LayoutOptions};
    use crate::model::ModelShape;
    use crate::units::fmt_gb;

    #[test]
    fn the_articles_7b_example() {
        let b = article_kv_bytes(32, 32, 128, 2, 4096, 64).unwrap();
        assert_eq!(b, ARTICLE_7B_BYTES);
        assert_eq!(fmt_gb(b), "137.4 GB");
        assert_eq!(article_kv_bytes(u64::MAX, 2, 1, 1, 1, 1), None);
    }

    #[test]
    fn it_is_the_mha_special_case_of_the_layout() {
        let m = ModelShape::plain("llama-2-7b", 32, 32, 32, 128);
        let o = LayoutOptions {
            tp: 1,
            pp: 1,
            block_size: 16,
            kv_dtype: KvDtype::Auto,
            serving_dtype: ModelDtype::Fp16,
            hybrid: true,
            lang: triage_base::lang::Lang::En,
        };
        let l = Layout::new(&m, &o).unwrap();
        let per_seq = l.blocks_per_request(4096, 8192) * l.block_bytes(&l.ranks[0]);
        assert_eq!(per_seq * 64, ARTICLE_7B_BYTES);
        assert_eq!(l.bytes_per_token_per_rank(), article_kv_bytes(32, 32, 128, 2, 1, 1).unwrap());
    }
}
