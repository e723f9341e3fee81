//! GPU presets: the memory CUDA reports as total, which is what vLLM multiplies by
//! `gpu_memory_utilization`.
//!
//! That total is less than the marketing figure and less than `nvidia-smi`'s "Total": the
//! driver reserves some (on the H200 captured in `tests/data/smi/`, nvidia-smi shows Total
//! 143,771 MiB and Reserved 616 MiB, and PyTorch's OOM message says "total capacity of
//! 139.80 GiB" = 143,155 MiB). Only the H200 figure was measured for this project; the others
//! are the totals seen in public PyTorch OOM messages and vLLM memory-profiling logs, quoted
//! from memory, and may be off by a few hundred MiB (driver and ECC settings change them).
//! When the log at hand prints `total_gpu_memory (…)` or "total capacity of …", pass that with
//! `--gpu-mem-gib`.

use crate::KvError;
use crate::units::MIB;
use serde::Serialize;

/// A GPU the estimator knows: its name and the memory CUDA reports as total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GpuPreset {
    /// The id `--gpu` takes (`h200`, `a100-80gb`, …).
    pub id: &'static str,
    /// Other names `--gpu` accepts for it.
    pub aliases: &'static [&'static str],
    /// Marketing name and memory.
    pub name: &'static str,
    /// Total memory as CUDA reports it, in MiB.
    pub cuda_total_mib: u64,
    /// Where `cuda_total_mib` comes from.
    pub source: &'static str,
    /// The same in Chinese (not serialised: JSON keeps the English field).
    #[serde(skip)]
    pub source_zh: &'static str,
    /// vLLM picks larger scheduler defaults on ≥ 70 GiB GPUs other than A100
    /// (`max_num_batched_tokens` 8192 and `max_num_seqs` 1024 for `vllm serve`).
    pub large_defaults: bool,
}

impl GpuPreset {
    /// [`GpuPreset::source`] in `lang`.
    pub fn source_in(&self, lang: triage_base::lang::Lang) -> &'static str {
        match lang {
            triage_base::lang::Lang::En => self.source,
            triage_base::lang::Lang::Zh => self.source_zh,
        }
    }

    /// `cuda_total_mib` in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.cuda_total_mib * MIB
    }
}

const FROM_LOGS: &str = "total as PyTorch/vLLM report it in public OOM messages and memory-profiling logs \
                         (from memory; ±0.3 GiB)";
const FROM_LOGS_ZH: &str = "PyTorch/vLLM 在公开的 OOM 信息和显存剖析日志中报告的总量（凭记忆；±0.3 GiB）";

/// Every GPU preset.
pub const GPUS: &[GpuPreset] = &[
    GpuPreset {
        id: "h200",
        aliases: &["h200-141gb", "h200-sxm", "nvidia-h200"],
        name: "NVIDIA H200 141 GB",
        cuda_total_mib: 143_155,
        source: "measured on one H200 (nvidia-smi Total 143,771 MiB − Reserved 616 MiB; PyTorch \
                 \"total capacity of 139.80 GiB\")",
        source_zh: "实测于一张 H200（nvidia-smi Total 143,771 MiB − Reserved 616 MiB；PyTorch \"total capacity of 139.80 GiB\"）",
        large_defaults: true,
    },
    GpuPreset {
        id: "h100",
        aliases: &["h100-80gb", "h100-sxm", "h100-pcie", "nvidia-h100"],
        name: "NVIDIA H100 80 GB",
        cuda_total_mib: 81_091,
        source: "vLLM memory profiling on H100 80GB: total_gpu_memory (79.19GiB) (from memory; ±0.3 GiB)",
        source_zh: "H100 80GB 上的 vLLM 显存剖析：total_gpu_memory (79.19GiB)（凭记忆；±0.3 GiB）",
        large_defaults: true,
    },
    GpuPreset {
        id: "a100-80gb",
        aliases: &["a100", "a100-80", "a100-sxm4-80gb"],
        name: "NVIDIA A100 80 GB",
        cuda_total_mib: 81_050,
        source: "PyTorch OOM on A100 80GB: \"79.15 GiB total capacity\" (a quoted message, not measured here; ±0.3 GiB)",
        source_zh: "A100 80GB 上的 PyTorch OOM：\"79.15 GiB total capacity\"（引用的报错原文，非本项目实测；±0.3 GiB）",
        large_defaults: false,
    },
    GpuPreset {
        id: "a100-40gb",
        aliases: &["a100-40"],
        name: "NVIDIA A100 40 GB",
        cuda_total_mib: 40_335,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "l40s",
        aliases: &["l40", "l40s-48gb"],
        name: "NVIDIA L40S / L40 48 GB",
        cuda_total_mib: 45_455,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "a10g",
        aliases: &["a10", "a10g-24gb"],
        name: "NVIDIA A10G / A10 24 GB",
        cuda_total_mib: 22_590,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "l4",
        aliases: &["l4-24gb"],
        name: "NVIDIA L4 24 GB",
        cuda_total_mib: 22_579,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "rtx-4090",
        aliases: &["4090", "rtx4090"],
        name: "NVIDIA GeForce RTX 4090 24 GB",
        cuda_total_mib: 24_218,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "rtx-3090",
        aliases: &["3090", "rtx3090"],
        name: "NVIDIA GeForce RTX 3090 24 GB",
        cuda_total_mib: 24_259,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "rtx-a6000",
        aliases: &["a6000"],
        name: "NVIDIA RTX A6000 48 GB",
        cuda_total_mib: 48_681,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "v100-32gb",
        aliases: &["v100-32"],
        name: "NVIDIA V100 32 GB",
        cuda_total_mib: 32_502,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "v100-16gb",
        aliases: &["v100", "v100-16"],
        name: "NVIDIA V100 16 GB",
        cuda_total_mib: 16_148,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
    GpuPreset {
        id: "t4",
        aliases: &["t4-16gb"],
        name: "NVIDIA T4 16 GB",
        cuda_total_mib: 15_104,
        source: FROM_LOGS,
        source_zh: FROM_LOGS_ZH,
        large_defaults: false,
    },
];

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace(['_', ' '], "-")
}

/// Look up a GPU by id or alias, case-insensitively.
pub fn gpu(name: &str) -> Result<&'static GpuPreset, KvError> {
    let n = norm(name);
    GPUS.iter()
        .find(|g| g.id == n || g.aliases.contains(&n.as_str()))
        .ok_or_else(|| KvError::UnknownGpu(name.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::fmt_gib;

    #[test]
    fn presets_print_the_totals_they_cite() {
        assert_eq!(fmt_gib(gpu("H200").unwrap().total_bytes()), "139.80 GiB");
        assert_eq!(fmt_gib(gpu("h100-80gb").unwrap().total_bytes()), "79.19 GiB");
        assert_eq!(fmt_gib(gpu("a100").unwrap().total_bytes()), "79.15 GiB");
        assert_eq!(fmt_gib(gpu("RTX 4090").unwrap().total_bytes()), "23.65 GiB");
        assert!(gpu("tpu-v5").unwrap_err().to_string().contains("--list-gpus"));
        let mut ids: Vec<&str> =
            GPUS.iter().flat_map(|g| std::iter::once(g.id).chain(g.aliases.iter().copied())).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "ids and aliases are unique");
        for g in GPUS {
            assert!(triage_base::lang::has_cjk(g.source_in(triage_base::lang::Lang::Zh)), "{}", g.id);
            assert!(!triage_base::lang::has_cjk(g.source_in(triage_base::lang::Lang::En)), "{}", g.id);
        }
    }
}
