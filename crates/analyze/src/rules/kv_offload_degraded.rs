//! Rule `kv-offload-degraded`: the KV-cache offload or transfer tier is failing.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::KvOffloadDegraded,
        class: Class::TtftHigh,
        title: "The KV-cache offload or transfer tier is failing",
        detects: "LMCache's store failing or unhealthy (`LMCache is unhealthy, skipping store operation`, `entering degraded mode`, remote connection failures, CPU or disk tiers out of room) and KV transfers between prefill and decode instances timing out.",
        why: "An offload tier (CPU, disk, a remote cache) and disaggregated prefill exist to avoid recomputing prefixes. When the tier is down the engine keeps serving but recomputes every prefix it would have loaded, and a stalled transfer holds the request: TTFT rises while nothing looks broken.",
        example: "`LMCache WARNING: LMCache is unhealthy, skipping retrieve operation`",
        fix: "Restore the tier (the remote cache server, its network, the disk or CPU memory it uses) and size it for the working set; check the transfer backend's connectivity (NIXL, the KV connector) between prefill and decode nodes.",
        zh: RuleText {
            title: "KV cache 卸载或传输层出故障了",
            detects: "LMCache 存取失败或不健康（`LMCache is unhealthy, skipping store operation`、`entering degraded mode`、远端连接失败、CPU 或磁盘层空间不足），以及 prefill 与 decode 实例之间的 KV 传输超时。",
            why: "卸载层（CPU、磁盘、远端缓存）和 PD 分离都是为了避免重复计算前缀。卸载层挂了，引擎还能继续服务，但原本可以直接加载的前缀都要重新计算；传输卡住则会拖住请求：TTFT 上涨，而表面上什么都没坏。",
            example: "vLLM 日志中的 LMCache 告警：`LMCache WARNING: LMCache is unhealthy, skipping retrieve operation`",
            fix: "恢复卸载层（远端缓存服务、它的网络、它使用的磁盘或 CPU 内存），并按工作集大小给足容量；检查 prefill 和 decode 节点之间传输后端（NIXL、KV connector）的连通性。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.75,
            summary: |n| {
                lang.pick(format!("The KV offload or transfer tier reports {n} failure line(s): prefixes are recomputed (or transfers wait) instead of being loaded."), format!("KV 卸载或传输层报告了 {n} 行故障：前缀没有被加载，而是重新计算（或传输在等待）。"))
            },
            remediation: &[
                (
                    "restore the offload tier (remote cache server, network, disk or CPU memory) and size it for the working set",
                    "恢复卸载层（远端缓存服务、网络、磁盘或 CPU 内存），并按工作集大小给足容量",
                ),
                (
                    "for disaggregated prefill, check the KV transfer path between prefill and decode nodes (NIXL / KV connector, RDMA)",
                    "对于 PD 分离部署，检查 prefill 和 decode 节点之间的 KV 传输路径（NIXL / KV connector、RDMA）",
                ),
            ],
            next_checks: &[(
                "the prefix cache hit rate before and after the first failure line (vLLM stats or /metrics)",
                "第一条故障日志前后的前缀缓存命中率（vLLM 统计行或 /metrics）",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        lmcache_unhealthy: [("vllm.log", "[2025-12-01 10:14:03,518] LMCache WARNING: HealthMonitor: System unhealthy, entering degraded mode (base.py:281:lmcache.v1.health_monitor.base)\n[2025-12-01 10:14:04,102] LMCache WARNING: LMCache is unhealthy, skipping retrieve operation (cache_engine.py:834:lmcache.v1.cache_engine)\n")],
        lmcache_remote_refused: [("vllm.log", "[2025-12-01 10:14:03,518] LMCache WARNING: Failed to initialize/re-establish remote connection: [Errno 111] Connection refused (remote_backend.py:160:lmcache.v1.storage_backend.remote_backend)\n")],
        quiet_when_lmcache_recovers: [("vllm.log", "[2025-12-01 10:14:03,518] LMCache INFO: HealthMonitor: System recovered, restoring normal operations (base.py:277:lmcache.v1.health_monitor.base)\n")],
    }
}
