//! Rule `colocated-process`: another process holds a large share of the GPU the engine needs.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::parsers::oom::fmt_gib;
use crate::analyze::parsers::vllm::FatalMemory;
use crate::analyze::report::{Class, EvidenceLine, Finding};
use std::collections::BTreeMap;

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "colocated-process",
        class: Class::Oom,
        title: "Another process holds memory on the same GPU",
        detects: "An OOM message naming other processes (`Process N has X GiB memory in use`) that hold at least 10 % of the GPU; vLLM's `Free memory on device … is less than desired GPU memory utilization`; or nvidia-smi listing two or more processes with ≥ 2 GiB each on one GPU that is nearly full or whose engine ran out of memory.",
        why: "Each engine sizes its memory from what it sees at start-up (vLLM reserves gpu_memory_utilization of the whole GPU). A second model, a notebook or a zombie worker on the same GPU takes memory the engine counted on, so one of them runs out — often long after start, when the other one grows.",
        example: "`Process 4121 has 38.00 GiB memory in use` in the OOM message, and nvidia-smi lists two python3 processes on GPU 0 with 38 GiB and 39 GiB.",
        fix: "Give each deployment its own GPUs (CUDA_VISIBLE_DEVICES, Kubernetes GPU requests, MIG partitions), kill leftover workers, and when models must share a GPU, split it explicitly with a --gpu-memory-utilization per model that sums below 0.9.",
    },
    check,
};

/// Other processes must hold this share of the GPU to be the cause.
const MIN_SHARE: f64 = 0.1;
/// Without a known total, this many GiB.
const MIN_GIB: f64 = 2.0;
/// nvidia-smi processes smaller than this are CUDA contexts, not models.
const BIG_PROCESS_MIB: f64 = 2048.0;
/// A GPU this full has no room for a second tenant to grow.
const FULL_SHARE: f64 = 0.9;

fn check(f: &Facts) -> Option<Finding> {
    let mut confidence: f64 = 0.0;
    let mut reasons: Vec<String> = Vec::new();
    let mut evidence: Vec<EvidenceLine> = Vec::new();

    // The OOM message itself names the other processes.
    let oom = f
        .ooms
        .iter()
        .filter_map(|o| {
            let others = o.others_gib();
            let total = o.total_or_smi(&f.gpus);
            let floor = total.map_or(MIN_GIB, |t| MIN_SHARE * t);
            (others > 0.0 && others >= floor).then_some((o, others, total))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((o, others, total)) = oom {
        let big = total.is_some_and(|t| others >= 0.25 * t);
        confidence = confidence.max(if big { 0.85 } else { 0.65 });
        let list: Vec<String> = o
            .other_processes()
            .iter()
            .map(|(pid, gib)| format!("process {pid} holds {}", fmt_gib(*gib)))
            .collect();
        let of = total.map_or(String::new(), |t| format!(" ({:.0} % of {})", others / t * 100.0, fmt_gib(t)));
        reasons.push(format!("the OOM on {} says {}{of}", o.gpu_name(), list.join(", ")));
        evidence.extend(o.evidence.iter().take(2).cloned());
    }

    // vLLM found less free memory at start than it was told to take.
    if let Some((_, e)) = f.vllm.fatal_memory.iter().find(|(k, _)| *k == FatalMemory::FreeLessThanDesired) {
        confidence = confidence.max(0.8);
        reasons.push("vLLM found less memory free at start-up than --gpu-memory-utilization asks for: something else holds the GPU".to_owned());
        evidence.push(e.clone());
    }

    // nvidia-smi: two or more big processes on one GPU.
    let mut per_gpu: BTreeMap<u32, Vec<&crate::analyze::parsers::nvidia_smi::GpuProcess>> = BTreeMap::new();
    for p in &f.gpus.processes {
        if let (Some(gpu), Some(mib)) = (p.gpu, p.mem_mib)
            && mib >= BIG_PROCESS_MIB
        {
            let procs = per_gpu.entry(gpu).or_default();
            if !procs.iter().any(|q| q.pid.is_some() && q.pid == p.pid) {
                procs.push(p);
            }
        }
    }
    if let Some((gpu, procs)) = per_gpu.iter().filter(|(_, v)| v.len() >= 2).max_by_key(|(_, v)| v.len()) {
        let full = f.gpus.readings.iter().any(|r| {
            r.index == *gpu
                && matches!((r.mem_used_mib, r.mem_total_mib), (Some(u), Some(t)) if t > 0.0 && u / t >= FULL_SHARE)
        });
        // Sharing is a risk, not a failure: it becomes the likely cause with an OOM beside it.
        let c = if !f.ooms.is_empty() || !f.vllm.fatal_memory.is_empty() {
            0.7
        } else if full {
            0.4
        } else {
            0.0
        };
        if c > 0.0 {
            confidence = confidence.max(c);
            let list: Vec<String> = procs
                .iter()
                .map(|p| {
                    let pid = p.pid.map_or(String::new(), |x| format!(" (pid {x})"));
                    format!("{}{pid} with {:.0} MiB", p.name, p.mem_mib.unwrap_or(0.0))
                })
                .collect();
            reasons.push(format!(
                "nvidia-smi shows {} processes on GPU {gpu}: {}",
                procs.len(),
                list.join(", ")
            ));
            evidence.extend(procs.iter().take(3).map(|p| p.evidence.clone()));
        }
    }

    if reasons.is_empty() {
        return None;
    }
    Some(RULE.doc.finding(
        confidence,
        format!("Another process is using the GPU's memory: {}.", reasons.join("; ")),
        evidence,
        &[
            "give each deployment its own GPUs: CUDA_VISIBLE_DEVICES, Kubernetes GPU requests, or MIG partitions",
            "find and stop leftover processes: `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`",
            "if models must share a GPU, give each an explicit --gpu-memory-utilization (e.g. 0.45 + 0.45) and start them one after the other",
        ],
        &["check whether the other process is a zombie worker from a previous run (same command, older start time)"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const NEWER: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 350.00 MiB is free. Process 4121 has 38.00 GiB memory in use. Including non-PyTorch memory, this process has 40.80 GiB memory in use. Of the allocated memory 39.00 GiB is allocated by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated.\n";

    #[test]
    fn fires_on_another_process_in_the_oom() {
        let report = crate::analyze::analyze(&[("oom", NEWER)]);
        let f = &report.findings[0];
        assert_eq!(f.rule, "colocated-process", "{:?}", report.findings);
        assert_eq!(f.confidence, 0.85);
        assert!(f.summary.contains("process 4121 holds 38.00 GiB (48 % of 79.15 GiB)"), "{}", f.summary);
    }

    #[test]
    fn fires_on_two_big_processes_in_the_table_next_to_an_oom() {
        let smi = include_str!("../../../../../tests/data/smi/smi_power_capped.txt").replace(
            "|    0   N/A  N/A             428      C   python3                                1130MiB |",
            "|    0   N/A  N/A             428      C   python3                               70130MiB |\n|    0   N/A  N/A             977      C   python3                               64002MiB |",
        );
        let f = fired(
            &[("smi", &smi), ("oom", "RuntimeError: CUDA error: out of memory\n")],
            "colocated-process",
        )
        .unwrap();
        assert_eq!(f.confidence, 0.7);
        assert!(f.summary.contains("2 processes on GPU 0"), "{}", f.summary);
        // Without the OOM, and with the GPU far from full, sharing alone is no finding.
        assert!(fired(&[("smi", &smi)], "colocated-process").is_none());
    }

    #[test]
    fn fires_on_vllm_free_memory_less_than_desired() {
        let log = "ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n";
        let f = fired(&[("vllm.log", log)], "colocated-process").unwrap();
        assert_eq!(f.confidence, 0.8);
    }

    #[test]
    fn quiet_on_a_lone_process() {
        let h200 = include_str!("../../../../../tests/data/oom/h200_200gib.txt");
        assert!(fired(&[("oom", h200)], "colocated-process").is_none());
        let smi = include_str!("../../../../../tests/data/smi/smi_power_capped.txt");
        assert!(fired(&[("smi", smi)], "colocated-process").is_none());
    }
}
