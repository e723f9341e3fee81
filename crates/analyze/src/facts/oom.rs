//! What an out-of-memory trace says (written by `parsers/oom.rs`).

use super::nvidia_smi::GpuFacts;
use crate::report::EvidenceLine;

/// What one OOM message says. Sizes in GiB as PyTorch prints them (MiB/GiB/KiB converted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OomFacts {
    /// The GPU the message names.
    pub gpu: Option<u32>,
    /// `Tried to allocate X`.
    pub tried_gib: Option<f64>,
    /// `total capacity of X`.
    pub total_gib: Option<f64>,
    /// `of which X is free`.
    pub free_gib: Option<f64>,
    /// `Of the allocated memory X is allocated by PyTorch` (older: `X already allocated`).
    pub allocated_by_pytorch_gib: Option<f64>,
    /// `and Y is reserved by PyTorch but unallocated`: large means fragmentation. Older
    /// messages give the reserved total instead; then this is reserved − allocated.
    pub reserved_unallocated_gib: Option<f64>,
    /// `Process N has X GiB memory in use`: (pid, GiB). PyTorch names *other* processes this
    /// way; its own process is [`OomFacts::this_process_gib`].
    pub processes: Vec<(u32, f64)>,
    /// The message line and the lines that proved the figures.
    pub evidence: Vec<EvidenceLine>,
    /// `Including non-PyTorch memory, this process has X memory in use`.
    pub this_process_gib: Option<f64>,
    /// Older messages: `Y reserved in total by PyTorch`.
    pub reserved_gib: Option<f64>,
    /// A raw `CUDA error: out of memory` (from a kernel or cuBLAS, not the caching allocator):
    /// no figures to read.
    pub cuda_error: bool,
}

impl OomFacts {
    /// The `Process N has X` entries that are *other* processes. Newer PyTorch names its own
    /// process `this process`; older releases listed it by pid like any other. Without a
    /// `this process` entry, the failing process is taken to be the smallest entry that can
    /// hold what PyTorch allocated (else the largest), and left out.
    pub fn other_processes(&self) -> Vec<(u32, f64)> {
        if self.this_process_gib.is_some() || self.processes.is_empty() {
            return self.processes.clone();
        }
        let by_size = |a: &&(u32, f64), b: &&(u32, f64)| a.1.total_cmp(&b.1);
        let own = match self.allocated_by_pytorch_gib {
            Some(p) => self.processes.iter().filter(|(_, g)| *g + 1e-9 >= p).min_by(by_size),
            None => None,
        }
        .or_else(|| self.processes.iter().max_by(by_size))
        .copied();
        let mut skipped = false;
        self.processes
            .iter()
            .filter(|e| {
                let is_own = !skipped && Some(**e) == own;
                skipped |= is_own;
                !is_own
            })
            .copied()
            .collect()
    }

    /// GiB held by other processes on the same GPU.
    pub fn others_gib(&self) -> f64 {
        self.other_processes().iter().map(|(_, g)| g).sum()
    }

    /// The GPU's capacity: from the message, else from an nvidia-smi reading of that GPU in the
    /// same analysis (a truncated message often lost it).
    pub fn total_or_smi(&self, gpus: &GpuFacts) -> Option<f64> {
        self.total_gib.or_else(|| {
            gpus.readings
                .iter()
                .filter(|r| self.gpu.is_none_or(|g| g == r.index))
                .find_map(|r| r.mem_total_mib)
                .map(|mib| mib / 1024.0)
        })
    }

    /// `figure / total` when both are known and total is positive.
    pub fn share(figure: Option<f64>, total: Option<f64>) -> Option<f64> {
        match (figure, total) {
            (Some(x), Some(t)) if t > 0.0 => Some(x / t),
            _ => None,
        }
    }

    /// `GPU 3` or `the GPU`.
    pub fn gpu_name(&self) -> String {
        self.gpu.map_or_else(|| "the GPU".to_owned(), |g| format!("GPU {g}"))
    }
}
