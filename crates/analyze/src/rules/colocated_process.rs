//! Rule `colocated-process`: another process holds a large share of the GPU the engine needs.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::oom::fmt_gib;
use crate::parsers::vllm::FatalMemory;
use crate::report::{Class, EvidenceLine, Finding};
use std::collections::BTreeMap;

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ColocatedProcess,
        class: Class::Oom,
        title: "Another process holds memory on the same GPU",
        detects: "An OOM message naming other processes (`Process N has X GiB memory in use`) that hold at least 10 % of the GPU; vLLM's `Free memory on device … is less than desired GPU memory utilization`; or nvidia-smi listing two or more processes with ≥ 2 GiB each on one GPU that is nearly full or whose engine ran out of memory.",
        why: "Each engine sizes its memory from what it sees at start-up (vLLM reserves gpu_memory_utilization of the whole GPU). A second model, a notebook or a zombie worker on the same GPU takes memory the engine counted on, so one of them runs out — often long after start, when the other one grows.",
        example: "`Process 4121 has 38.00 GiB memory in use` in the OOM message, and nvidia-smi lists two python3 processes on GPU 0 with 38 GiB and 39 GiB.",
        fix: "Give each deployment its own GPUs (CUDA_VISIBLE_DEVICES, Kubernetes GPU requests, MIG partitions), kill leftover workers, and when models must share a GPU, split it explicitly with a --gpu-memory-utilization per model that sums below 0.9.",
        zh: RuleText {
            title: "同一张 GPU 上有别的进程占着显存",
            detects: "显存溢出信息里点名了其他进程（`Process N has X GiB memory in use`），且它们至少占 GPU 的 10%；vLLM 报 `Free memory on device … is less than desired GPU memory utilization`；或 nvidia-smi 显示同一张卡上有两个及以上各占 ≥ 2 GiB 的进程，而这张卡几乎满了或其引擎已经 OOM。",
            why: "每个引擎都按启动时看到的显存来规划（vLLM 预留整卡的 gpu_memory_utilization）。同卡上的第二个模型、一个 notebook 或一个僵尸 worker 会占掉引擎指望的显存，于是其中一个会 OOM——往往发生在启动很久之后另一个进程涨上来的时候。",
            example: "OOM 信息里有 `Process 4121 has 38.00 GiB memory in use`，nvidia-smi 显示 GPU 0 上有两个 python3 进程，分别占 38 GiB 和 39 GiB。",
            fix: "给每个部署分配独占的 GPU（CUDA_VISIBLE_DEVICES、Kubernetes GPU 请求、MIG 分区），清掉残留的 worker；模型必须共卡时，为每个模型显式设置 --gpu-memory-utilization，总和低于 0.9。",
        },
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

/// What one sign of another process found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let signs = [
        oom_names_others(f, lang),
        less_free_at_start(f, lang),
        taken_before_load(f, lang),
        shared_gpu(f, lang),
        engine_says_unbalanced(f, lang),
    ];
    let mut confidence: f64 = 0.0;
    let mut reasons: Vec<String> = Vec::new();
    let mut evidence: Vec<EvidenceLine> = Vec::new();
    for (c, why, lines) in signs.into_iter().flatten() {
        confidence = confidence.max(c);
        reasons.push(why);
        evidence.extend(lines);
    }
    RULE.doc.finding_from_reasons(
        lang,
        ("Another process is using the GPU's memory", "有别的进程在用这张 GPU 的显存"),
        &reasons,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "give each deployment its own GPUs: CUDA_VISIBLE_DEVICES, Kubernetes GPU requests, or MIG partitions",
                    "给每个部署分配独占的 GPU：CUDA_VISIBLE_DEVICES、Kubernetes GPU 请求或 MIG 分区",
                ),
                (
                    "find and stop leftover processes: `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`",
                    "找出并停掉残留进程：`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`",
                ),
                (
                    "if models must share a GPU, give each an explicit --gpu-memory-utilization (e.g. 0.45 + 0.45) and start them one after the other",
                    "如果模型必须共卡，为每个模型显式设置 --gpu-memory-utilization（例如 0.45 + 0.45），并依次启动",
                ),
            ]),
            next_checks: texts(lang, &[(
                "check whether the other process is a zombie worker from a previous run (same command, older start time)",
                "确认另一个进程是不是上次运行留下的僵尸 worker（命令相同、启动时间更早）",
            )]),
        },
    )
}

/// The OOM message itself names the other processes, holding a share of the GPU that matters.
fn oom_names_others(f: &Facts, lang: Lang) -> Option<Judged> {
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
    let (o, others, total) = oom?;
    let big = total.is_some_and(|t| others >= 0.25 * t);
    let list: Vec<String> = o
        .other_processes()
        .iter()
        .map(|(pid, gib)| {
            lang.pick(
                format!("process {pid} holds {}", fmt_gib(*gib)),
                format!("进程 {pid} 占用 {}", fmt_gib(*gib)),
            )
        })
        .collect();
    let of = total.map_or(String::new(), |t| {
        let pct = others / t * 100.0;
        lang.pick(format!(" ({pct:.0} % of {})", fmt_gib(t)), format!("（占 {} 的 {pct:.0}%）", fmt_gib(t)))
    });
    let gpu = o.gpu_name();
    let why = lang.pick(
        format!("the OOM on {gpu} says {}{of}", list.join(", ")),
        format!("{gpu} 的 OOM 信息显示{}{of}", list.join("，")),
    );
    Some((if big { 0.85 } else { 0.65 }, why, o.evidence.iter().take(2).cloned().collect()))
}

/// vLLM found less free memory at start than it was told to take.
fn less_free_at_start(f: &Facts, lang: Lang) -> Option<Judged> {
    let (_, e) = f.vllm.fatal_memory.iter().find(|(k, _)| *k == FatalMemory::FreeLessThanDesired)?;
    let why =
            lang.pick(
                "vLLM found less memory free at start-up than --gpu-memory-utilization asks for: something else holds the GPU",
                "vLLM 启动时发现空闲显存少于 --gpu-memory-utilization 的要求：有别的东西占着这张卡",
            )
            .to_owned();
    Some((0.8, why, vec![e.clone()]))
}

/// A start-up that failed for memory with most of the GPU already taken before the model
/// loaded (Ollama's and TensorRT-LLM's own figures): another process holds it.
fn taken_before_load(f: &Facts, lang: Lang) -> Option<Judged> {
    const STARTUP_OOM: &[RuleId] =
        &[RuleId::WeightsExceedGpu, RuleId::WarmupOom, RuleId::KvReservationTooLarge];
    let (free, total, e) = f.llama.free_before_load.as_ref()?;
    let mostly_taken = *free < 0.5 * total;
    if !mostly_taken || !STARTUP_OOM.iter().any(|&r| f.signals.count_for(r) > 0) {
        return None;
    }
    let taken = (1.0 - free / total) * 100.0;
    let why = lang.pick(
        format!("only {free:.1} of {total:.1} GiB was free before the model loaded ({taken:.0} % taken by something else)"),
        format!("加载模型之前只有 {free:.1} / {total:.1} GiB 空闲（{taken:.0}% 被别的东西占着）"),
    );
    let mut lines = vec![e.clone()];
    if let Some(p) =
        f.gpus.processes.iter().max_by(|a, b| a.mem_mib.unwrap_or(0.0).total_cmp(&b.mem_mib.unwrap_or(0.0)))
    {
        lines.push(p.evidence.clone());
    }
    Some((0.9, why, lines))
}

/// nvidia-smi: two or more big processes on one GPU — a cause beside an OOM, a risk on a full GPU.
fn shared_gpu(f: &Facts, lang: Lang) -> Option<Judged> {
    let mut per_gpu: BTreeMap<u32, Vec<&crate::parsers::nvidia_smi::GpuProcess>> = BTreeMap::new();
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
    let (gpu, procs) = per_gpu.iter().filter(|(_, v)| v.len() >= 2).max_by_key(|(_, v)| v.len())?;
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
    if c <= 0.0 {
        return None;
    }
    let list: Vec<String> = procs
        .iter()
        .map(|p| {
            let pid = p.pid.map_or(String::new(), |x| format!(" (pid {x})"));
            let mib = p.mem_mib.unwrap_or(0.0);
            lang.pick(
                format!("{}{pid} with {mib:.0} MiB", p.name),
                format!("{}{pid} 占 {mib:.0} MiB", p.name),
            )
        })
        .collect();
    let n = procs.len();
    let why = lang.pick(
        format!("nvidia-smi shows {n} processes on GPU {gpu}: {}", list.join(", ")),
        format!("nvidia-smi 显示 GPU {gpu} 上有 {n} 个进程：{}", list.join("，")),
    );
    Some((c, why, procs.iter().take(3).map(|p| p.evidence.clone()).collect()))
}

/// The engine's own check says another process holds memory on some GPU (SGLang's
/// `The memory capacity is unbalanced`).
fn engine_says_unbalanced(f: &Facts, lang: Lang) -> Option<Judged> {
    let said = f.signals.own_lines(RULE.doc.id, 2);
    if said.is_empty() {
        return None;
    }
    let why = lang.pick(
        "the engine found less free memory on some GPUs than on others: another process holds memory there"
            .to_owned(),
        "引擎发现部分 GPU 的可用显存比其他 GPU 少：那里有别的进程占着显存".to_owned(),
    );
    Some((0.8, why, said))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const NEWER: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 350.00 MiB is free. Process 4121 has 38.00 GiB memory in use. Including non-PyTorch memory, this process has 40.80 GiB memory in use. Of the allocated memory 39.00 GiB is allocated by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated.\n";

    #[test]
    fn fires_on_another_process_in_the_oom() {
        let report = case(&[("oom", NEWER)]).en;
        assert_eq!(report.findings[0].rule, RuleId::ColocatedProcess, "{:?}", report.findings);
        let f =
            case(&[("oom", NEWER)]).snapshot(RuleId::ColocatedProcess, "another_process_in_the_oom").unwrap();
        assert!(f.summary.contains("process 4121 holds 38.00 GiB (48 % of 79.15 GiB)"), "{}", f.summary);
    }

    #[test]
    fn fires_on_two_big_processes_in_the_table_next_to_an_oom() {
        let smi = fixture!("smi/smi_power_capped.txt").replace(
            "|    0   N/A  N/A             428      C   python3                                1130MiB |",
            "|    0   N/A  N/A             428      C   python3                               70130MiB |\n|    0   N/A  N/A             977      C   python3                               64002MiB |",
        );
        let f = case(&[("smi", &smi), ("oom", "RuntimeError: CUDA error: out of memory\n")])
            .snapshot(RuleId::ColocatedProcess, "two_big_processes_and_an_oom")
            .unwrap();
        assert!(f.summary.contains("2 processes on GPU 0"), "{}", f.summary);
        // Without the OOM, and with the GPU far from full, sharing alone is no finding.
        assert!(
            case(&[("smi", &smi)])
                .snapshot(RuleId::ColocatedProcess, "quiet_two_big_processes_without_an_oom")
                .is_none()
        );
    }

    #[test]
    fn fires_on_vllm_free_memory_less_than_desired() {
        let log = "ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n";
        case(&[("vllm.log", log)])
            .snapshot(RuleId::ColocatedProcess, "vllm_free_memory_less_than_desired")
            .unwrap();
    }

    #[test]
    fn quiet_on_a_lone_process() {
        let h200 = fixture!("oom/h200_200gib.txt");
        assert!(
            case(&[("oom", h200)]).snapshot(RuleId::ColocatedProcess, "quiet_lone_process_oom").is_none()
        );
        let smi = fixture!("smi/smi_power_capped.txt");
        assert!(
            case(&[("smi", smi)]).snapshot(RuleId::ColocatedProcess, "quiet_on_a_lone_process").is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_oom_v012_cudamalloc_colocated: [("oom-v012-cudamalloc-colocated.log", fixture!("incidents/ollama/oom-v012-cudamalloc-colocated.log"))],
        corpus_oom_046_tp_memory_unbalanced: [("oom-046-tp-memory-unbalanced.log", fixture!("incidents/sglang/oom-046-tp-memory-unbalanced.log"))],
    }
}
