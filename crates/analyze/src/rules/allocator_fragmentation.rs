//! Rule `allocator-fragmentation`: the OOM's memory is free in total — reserved by PyTorch but
//! unallocated — yet no block is large enough.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::oom::fmt_gib;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::AllocatorFragmentation,
        class: Class::Oom,
        title: "Memory is free in total but fragmented",
        detects: "An OOM whose `reserved by PyTorch but unallocated` memory is at least the failed allocation and at least 5 % of the GPU (older messages: `reserved in total` minus `already allocated`).",
        why: "PyTorch's caching allocator keeps freed blocks for reuse. When requests of changing sizes leave those blocks scattered, the memory is free in total but no single block fits the next request, and the allocation fails although the sum would suffice.",
        example: "`Tried to allocate 2.00 GiB … Of the allocated memory 60.10 GiB is allocated by PyTorch, and 8.40 GiB is reserved by PyTorch but unallocated.`",
        fix: "Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (segments grow in place instead of fragmenting), keep the KV cache in the engine's paged allocator with prefix caching rather than per-request tensors, and restart the worker to reset the pool now.",
        zh: RuleText {
            title: "显存总量够，但碎片化了",
            detects: "一次显存溢出中，`reserved by PyTorch but unallocated`（已预留未分配）的显存不小于申请失败的大小，且至少占 GPU 的 5%（旧版报错：`reserved in total` 减去 `already allocated`）。",
            why: "PyTorch 的缓存分配器会保留释放掉的块以便复用。请求大小不断变化时，这些块被切得七零八落：空闲显存加起来够，却没有一块连续的能放下下一次申请，于是分配失败。",
            example: "已预留未分配的显存比申请的大小还多：`Tried to allocate 2.00 GiB … Of the allocated memory 60.10 GiB is allocated by PyTorch, and 8.40 GiB is reserved by PyTorch but unallocated.`",
            fix: "设置 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`（段原地扩展，不再碎片化）；KV 缓存交给引擎的分页分配器（paged KV）并开启 prefix caching，而不是按请求分配张量；现在先重启 worker 重置显存池。",
        },
    },
    check,
};

/// Reserved-but-unallocated must also be this share of the GPU to matter.
const MIN_SHARE: f64 = 0.05;
/// Without a known total, this many GiB.
const MIN_GIB: f64 = 1.0;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let (o, idle, tried) = f
        .ooms
        .iter()
        .filter_map(|o| {
            let (idle, tried) = (o.reserved_unallocated_gib?, o.tried_gib?);
            let floor = o.total_or_smi(&f.gpus).map_or(MIN_GIB, |t| MIN_SHARE * t);
            (idle >= tried && idle >= floor).then_some((o, idle, tried))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let free = o.free_gib.map_or(String::new(), |x| {
        lang.pick(
            format!(" (plus {} free on the device)", fmt_gib(x)),
            format!("（设备上另有 {} 空闲）", fmt_gib(x)),
        )
    });
    let (idle_gib, gpu, tried_gib) = (fmt_gib(idle), o.gpu_name(), fmt_gib(tried));
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "{idle_gib} is reserved by PyTorch but unallocated on {gpu}{free} — at least the {tried_gib} the failed allocation asked for: the memory exists, but not in one block."
            ),
            format!(
                "{gpu} 上有 {idle_gib} 被 PyTorch 预留但未分配{free}——不少于申请失败的 {tried_gib}：显存是有的，只是不在一个连续块里。"
            ),
        ),
        FindingBody {
            confidence: if idle >= 2.0 * tried { 0.8 } else { 0.75 },
            evidence: o.evidence.iter().take(2).cloned().collect(),
            remediation: texts(lang, &[
                (
                    "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the server's environment and restart it",
                    "在服务的环境变量里设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 并重启",
                ),
                ("restart the worker now to reset the allocator's pool", "现在先重启 worker，重置分配器的显存池"),
                (
                    "keep the KV cache in the engine's paged allocator and enable prefix caching (--enable-prefix-caching) instead of growing per-request tensors",
                    "KV 缓存交给引擎的分页分配器并开启 prefix caching（--enable-prefix-caching），不要按请求增长张量",
                ),
                (
                    "if it recurs, lower --gpu-memory-utilization slightly so the allocator has headroom outside the KV cache",
                    "如果反复出现，稍微调低 --gpu-memory-utilization，让分配器在 KV 缓存之外有余量",
                ),
            ]),
            next_checks: texts(lang, &[(
                "track torch.cuda.memory_reserved() against memory_allocated() over time to see the pool fragment",
                "持续对比 torch.cuda.memory_reserved() 与 memory_allocated()，观察显存池如何碎片化",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    #[test]
    fn fires_on_the_briefs_example() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free. Process 1234 has 77.91 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";
        let report = case(&[("oom", oom)]).en;
        assert_eq!(report.findings[0].rule, RuleId::AllocatorFragmentation, "{:?}", report.findings);
        let f = case(&[("oom", oom)]).snapshot(RuleId::AllocatorFragmentation, "briefs_example").unwrap();
        assert!(
            f.summary.starts_with("6.50 GiB is reserved by PyTorch but unallocated on GPU 0"),
            "{}",
            f.summary
        );
        // Process 1234 is the failing process itself (older PyTorch named it by pid).
        assert!(case(&[("oom", oom)]).fired(RuleId::ColocatedProcess).is_none());
    }

    #[test]
    fn fires_on_the_older_format() {
        let oom = "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 39.59 GiB total capacity; 30.10 GiB already allocated; 512.00 MiB free; 37.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.\n";
        let f = case(&[("oom", oom)]).snapshot(RuleId::AllocatorFragmentation, "older_format").unwrap();
        assert!(f.summary.starts_with("7.40 GiB is reserved"), "{}", f.summary);
    }

    #[test]
    fn quiet_when_little_is_reserved() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.91 GiB memory in use. Of the allocated memory 76.00 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated.\n";
        assert!(
            case(&[("oom", oom)]).snapshot(RuleId::AllocatorFragmentation, "quiet_little_reserved").is_none()
        );
        let h200 = fixture!("oom/h200_200gib.txt");
        assert!(
            case(&[("oom", h200)])
                .snapshot(RuleId::AllocatorFragmentation, "quiet_when_little_is_reserved")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_oom_fragmentation_ansi_h200: [("oom-fragmentation-ansi-h200.log", fixture!("incidents/torch/oom-fragmentation-ansi-h200.log"))],
        corpus_oom_fragmentation_kubectl_tp4: [("oom-fragmentation-kubectl-tp4.log", fixture!("incidents/torch/oom-fragmentation-kubectl-tp4.log"))],
    }
}
