//! Rule `gpu-hw-error`: a GPU hardware error.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::GpuHwError,
        class: Class::ThroughputZero,
        title: "A GPU hardware error",
        detects: "CUDA errors that name the hardware: `uncorrectable ECC error encountered`, `uncorrectable NVLink error`, a GPU that `has fallen off the bus`, XID events.",
        why: "A GPU with an uncorrectable memory or link error cannot continue: the process using it dies, its tensor-parallel peers hang, and the GPU often needs a reset or a node drain before it works again. No setting of the engine fixes it.",
        example: "`RuntimeError: CUDA error: uncorrectable ECC error encountered`",
        fix: "Drain the node, reset the GPU (or reboot), and check `nvidia-smi -q -d ECC` / `dmesg | grep -i xid`; replace the GPU if errors recur (retired pages, row remapping failures).",
        zh: RuleText {
            title: "GPU 硬件故障",
            detects: "指向硬件的 CUDA 错误：`uncorrectable ECC error encountered`、`uncorrectable NVLink error`、GPU `has fallen off the bus`、XID 事件。",
            why: "出现不可纠正的显存或链路错误的 GPU 无法继续工作：用它的进程会挂掉，张量并行的其他 rank 会卡住，这块 GPU 往往要重置或把节点下线之后才能恢复。引擎的任何参数都修不好它。",
            example: "PyTorch 报错：`RuntimeError: CUDA error: uncorrectable ECC error encountered`",
            fix: "把节点下线，重置 GPU（或重启机器），检查 `nvidia-smi -q -d ECC` / `dmesg | grep -i xid`；如果错误反复出现（页退役、行重映射失败），更换这块 GPU。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.9,
            summary: |n| {
                lang.pick(format!("The GPU reported a hardware error ({n} line(s)): the process on it cannot continue and its peers wait."), format!("GPU 报告了硬件错误（{n} 行）：它上面的进程无法继续，其他 rank 都在等。"))
            },
            remediation: &[
                (
                    "drain the node and reset the GPU (nvidia-smi -r, or reboot) before serving from it again",
                    "把节点下线并重置 GPU（nvidia-smi -r 或重启），之后再恢复服务",
                ),
                (
                    "replace the GPU if ECC errors recur or pages keep being retired",
                    "如果 ECC 错误反复出现或不断有页被退役，更换这块 GPU",
                ),
            ],
            next_checks: &[(
                "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` and `dmesg -T | grep -i xid` on that node",
                "在该节点上执行 `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` 和 `dmesg -T | grep -i xid`",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        xid79_fallen_off_the_bus: [("dmesg", fixture!("incidents/gpu/zero-xid79-fallen-off-bus.txt"))],
        quiet_on_an_idle_smi_table: [("smi", fixture!("incidents/gpu/healthy-smi-idle-table-real.txt"))],
    }
}
