//! Rule `nccl-hang`: a collective operation timed out; the tensor-parallel group is stuck.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts, with_signal_lines};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::NcclHang,
        class: Class::ThroughputZero,
        title: "NCCL collective timeout: the GPU group is stuck",
        detects: "`Watchdog caught collective operation timeout`, `NCCL error`, `ncclInternalError` / `ncclSystemError` in the engine log.",
        why: "With tensor or pipeline parallelism every step needs all ranks; if one rank dies, hangs or loses its link, the others wait in an all-reduce until the watchdog fires. Throughput is zero until the whole group restarts.",
        example: "After another rank went silent, rank 0 logs `[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.`",
        fix: "Restart the whole group; find the rank that failed first (its own log, XID errors in `dmesg`, `nvidia-smi nvlink -e`), run with `NCCL_DEBUG=INFO` to see the failing link.",
        zh: RuleText {
            title: "NCCL 集合通信超时：GPU 组卡住了",
            detects: "引擎日志中出现 `Watchdog caught collective operation timeout`、`NCCL error`、`ncclInternalError` / `ncclSystemError`。",
            why: "在张量并行或流水线并行下，每一步都需要所有 rank 参与；只要一个 rank 挂了、卡住或链路断了，其他 rank 就一直在 all-reduce 里等，直到 watchdog 触发。整个组重启之前，吞吐都是零。",
            example: "另一个 rank 失联后，rank 0 的日志：`[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.`",
            fix: "重启整个组；找出最先出错的 rank（看它自己的日志、`dmesg` 里的 XID 错误、`nvidia-smi nvlink -e`），用 `NCCL_DEBUG=INFO` 运行以定位故障链路。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // The vLLM parser's lines, and the known messages of any other section (a bare paste of
    // PyTorch's or another engine's lines).
    let lines = with_signal_lines(f.vllm.nccl.clone(), f, RULE.doc.id, 8);
    if lines.is_empty() {
        return None;
    }
    let n = lines.len();
    // During a start-up that failed, NCCL could not set the group up: engine-start-failed leads.
    let starting = f.signals.count_for(RuleId::EngineStartFailed) > 0
        && f.vllm.stats.is_empty()
        && f.sglang.batches.is_empty();
    let confidence = if starting { 0.6 } else { 0.85 };
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("The engine log reports {n} NCCL failure line(s): a rank of the parallel group stopped answering."),
            format!("引擎日志中有 {n} 行 NCCL 故障：并行组里有一个 rank 不再响应。"),
        ),
        FindingBody {
            confidence,
            evidence: lines.iter().take(3).cloned().collect(),
            remediation: texts(lang, &[
                (
                    "restart the whole tensor-parallel group (one rank cannot rejoin alone)",
                    "重启整个张量并行组（单个 rank 无法自己重新加入）",
                ),
                (
                    "NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) on the next start to see the failing link",
                    "下次启动时设置 NCCL_DEBUG=INFO（以及 NCCL_DEBUG_SUBSYS=INIT,NET），定位故障链路",
                ),
                (
                    "check each GPU: `nvidia-smi -q -d ECC,RETIRED_PAGES`, `nvidia-smi nvlink -e`, XID errors in `dmesg`",
                    "逐卡检查：`nvidia-smi -q -d ECC,RETIRED_PAGES`、`nvidia-smi nvlink -e`、`dmesg` 里的 XID 错误",
                ),
            ]),
            next_checks: texts(lang, &[(
                "find the rank whose log shows an error first: the others only time out waiting for it",
                "找出日志里最先报错的 rank：其他 rank 只是在等它时超时了",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_watchdog_timeout() {
        let log = "INFO 11-29 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%, Prefix cache hit rate: 0.0%\n[rank1]:[E1129 10:10:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n";
        let f = case(&[("vllm.log", log)]).snapshot(RuleId::NcclHang, "fires_on_watchdog_timeout").unwrap();
        assert_eq!(f.evidence[0].line, 2);
    }

    #[test]
    fn quiet_without_nccl_errors() {
        let log = "INFO 11-29 10:00:00 [__init__.py:1] NCCL version 2.21.5\n";
        assert!(case(&[("vllm.log", log)]).snapshot(RuleId::NcclHang, "quiet_without_nccl_errors").is_none());
    }

    crate::rules::snapshots! {
        corpus_throughput_nccl_watchdog_shard_crash: [("throughput-nccl-watchdog-shard-crash.log", fixture!("incidents/tgi/throughput-nccl-watchdog-shard-crash.log"))],
        corpus_throughput_nccl_dead: [("throughput_nccl_dead.log", fixture!("incidents/throughput_nccl_dead.log"))],
    }
}
