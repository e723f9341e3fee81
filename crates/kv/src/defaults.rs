//! vLLM's defaults for the settings the KV estimate takes, in one place.
//!
//! The same settings are described three times — [`KvOptions`](crate::KvOptions) (typed,
//! what the estimator reads), [`KvRequest`](crate::request::KvRequest) (the flags as text,
//! what the CLI and the site fill in) and [`BudgetInputs`](crate::budget::BudgetInputs)
//! (the memory budget's terms) — and each has defaults. They all read them from here (so do the
//! CLI's flags and the model listings' bytes per token), so that what `triage kv` assumes without
//! a flag is what the library assumes.

use crate::dtype::KvDtype;

/// `--kv-cache-dtype auto`: the KV cache is stored in the serving dtype.
pub const KV_DTYPE: KvDtype = KvDtype::Auto;

/// `--tensor-parallel-size`.
pub const TP: u32 = 1;

/// `--pipeline-parallel-size`.
pub const PP: u32 = 1;

/// `--block-size` on CUDA.
pub const BLOCK_SIZE: u32 = 16;

/// `--gpu-memory-utilization` 0.9, in parts per million (integers: see `budget`'s rounding).
/// Written back as text with [`crate::units::fmt_ppm`] where a flag's text is wanted.
pub const GPU_MEMORY_UTILIZATION_PPM: u32 = 900_000;

/// The hybrid KV-cache manager is on unless `--disable-hybrid-kv-cache-manager`.
pub const HYBRID: bool = true;

/// Async scheduling is on unless `--no-async-scheduling`.
pub const ASYNC_SCHEDULING: bool = true;

/// `--gpu-memory-utilization` as its flag's text (`0.9`).
pub fn gpu_memory_utilization() -> String {
    crate::units::fmt_ppm(GPU_MEMORY_UTILIZATION_PPM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BudgetInputs;
    use crate::request::KvRequest;
    use crate::units::parse_fraction_ppm;
    use crate::{KvOptions, estimate::DEFAULT_BLOCK_SIZE};

    /// The three descriptions agree with each other and with vLLM's flags.
    #[test]
    fn every_description_has_the_same_defaults() {
        let (o, r, b) = (KvOptions::default(), KvRequest::default(), BudgetInputs::new(1 << 30));
        assert_eq!((o.kv_dtype, KvDtype::parse(&r.kv_dtype)), (KvDtype::Auto, Ok(KvDtype::Auto)));
        assert_eq!((o.tp, o.pp, r.tp, r.pp), (1, 1, 1, 1));
        assert_eq!((o.hybrid, !r.no_hybrid), (true, true));
        assert_eq!((o.async_scheduling, !r.no_async_scheduling), (true, true));
        assert_eq!(r.gpu_memory_utilization, "0.9");
        assert_eq!(parse_fraction_ppm("u", &r.gpu_memory_utilization), Ok(b.utilization_ppm));
        assert_eq!((o.block_size, r.block_size, DEFAULT_BLOCK_SIZE), (None, None, 16));
    }
}
