//! Rule `nccl-hang`: a collective operation timed out; the tensor-parallel group is stuck.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "nccl-hang",
        class: Class::ThroughputZero,
        title: "NCCL collective timeout: the GPU group is stuck",
        detects: "`Watchdog caught collective operation timeout`, `NCCL error`, `ncclInternalError` / `ncclSystemError` in the engine log.",
        why: "With tensor or pipeline parallelism every step needs all ranks; if one rank dies, hangs or loses its link, the others wait in an all-reduce until the watchdog fires. Throughput is zero until the whole group restarts.",
        example: "`[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.`",
        fix: "Restart the whole group; find the rank that failed first (its own log, XID errors in `dmesg`, `nvidia-smi nvlink -e`), run with `NCCL_DEBUG=INFO` to see the failing link.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let lines = &f.vllm.nccl;
    if lines.is_empty() {
        return None;
    }
    Some(RULE.doc.finding(
        0.85,
        format!("The engine log reports {} NCCL failure line(s): a rank of the parallel group stopped answering.", lines.len()),
        lines.iter().take(3).cloned().collect(),
        &[
            "restart the whole tensor-parallel group (one rank cannot rejoin alone)",
            "NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) on the next start to see the failing link",
            "check each GPU: `nvidia-smi -q -d ECC,RETIRED_PAGES`, `nvidia-smi nvlink -e`, XID errors in `dmesg`",
        ],
        &["find the rank whose log shows an error first: the others only time out waiting for it"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_watchdog_timeout() {
        let log = "INFO 11-29 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%, Prefix cache hit rate: 0.0%\n[rank1]:[E1129 10:10:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n";
        let f = fired(&[("vllm.log", log)], "nccl-hang").unwrap();
        assert_eq!(f.evidence[0].line, 2);
    }

    #[test]
    fn quiet_without_nccl_errors() {
        let log = "INFO 11-29 10:00:00 [__init__.py:1] NCCL version 2.21.5\n";
        assert!(fired(&[("vllm.log", log)], "nccl-hang").is_none());
    }
}
