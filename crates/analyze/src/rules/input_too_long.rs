//! Rule `input-too-long`: one request asks for a large share of the GPU in a single allocation.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::oom::{OomFacts, fmt_gib};
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::InputTooLong,
        class: Class::Oom,
        title: "A single over-long request exhausts memory",
        detects: "An OOM whose failed allocation (`Tried to allocate`) is at least a quarter of the GPU's total capacity — or more than the GPU holds at all.",
        why: "Activation and attention buffers grow with the length of one request. A request long enough needs more memory in one piece than the GPU can free, whatever the batch size or cache setting, and retrying it crashes the worker again.",
        example: "`Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 139.19 GiB is free` (a real H200 capture): the GPU is empty and the one request is still too big.",
        fix: "Cap input length: `--max-model-len` on the server (longer prompts then get a 400 instead of crashing the engine) and a prompt-token limit at the gateway; reject or truncate over-long inputs; route real long-context traffic to a pool with more GPUs.",
        zh: RuleText {
            title: "单个超长请求耗尽了显存",
            detects: "一次显存溢出中，申请失败的那块（`Tried to allocate`）至少是 GPU 总容量的四分之一——甚至比整张卡还大。",
            why: "激活和 attention 缓冲区随单个请求的长度增长。请求长到一定程度，它一次要申请的连续显存就超过 GPU 能腾出来的量，与批大小和缓存设置无关；重试这个请求会让 worker 再次崩溃。",
            example: "`Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 139.19 GiB is free`（一次真实的 H200 记录）：卡几乎是空的，这一个请求还是太大。",
            fix: "限制输入长度：服务端设 `--max-model-len`（更长的 prompt 会得到 400，而不是把引擎打崩），网关设 prompt token 上限；拒绝或截断超长输入；真正的长上下文流量路由到 GPU 更多的实例池。",
        },
    },
    check,
};

/// A failed allocation of at least this share of the GPU is one request's, not the batch's.
const LARGE_SHARE: f64 = 0.25;

/// An allocation this large (GiB) is more than any GPU has.
const ABSURD_GIB: f64 = 1024.0;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // A request for more than any GPU holds (`Tried to allocate more than 1EB memory`: a size
    // computed from an overflowed length) needs no capacity to judge.
    if let Some(o) = f
        .ooms
        .iter()
        .find(|o| o.tried_gib.is_some_and(|t| t >= ABSURD_GIB) && o.total_or_smi(&f.gpus).is_none())
    {
        return Some(RULE.doc.finding(
            lang,
            lang.pick(
                "The failed allocation asks for more memory than any GPU holds (1 TiB or more): a size computed from an over-long or malformed request, not a shortage to tune away.".to_owned(),
                "失败的分配请求的显存比任何 GPU 都多（1 TiB 以上）：这是由超长或畸形请求算出来的大小，不是靠调参能解决的显存不足。".to_owned(),
            ),
            FindingBody {
                confidence: 0.85,
                evidence: o.evidence.iter().take(1).cloned().collect(),
                remediation: texts(lang, &[
                    (
                        "find the request in flight and reject such inputs at the gateway (a token limit) and the server (--max-model-len)",
                        "找出当时在处理的请求，在网关（token 上限）和服务端（--max-model-len）拒绝这类输入",
                    ),
                    (
                        "restart the worker if it died; a client retrying the same request will crash it again",
                        "如果 worker 挂了就重启；客户端重试同一个请求会再次把它打挂",
                    ),
                ]),
                next_checks: texts(lang, &[(
                    "the prompt length and max_tokens of the request that was running (request log or client log)",
                    "当时在运行的那个请求的 prompt 长度和 max_tokens（请求日志或客户端日志）",
                )]),
            },
        ));
    }
    let (o, tried, total) = f
        .ooms
        .iter()
        .filter_map(|o| Some((o, o.tried_gib?, o.total_or_smi(&f.gpus)?)))
        .filter(|(_, tried, total)| *total > 0.0 && tried / total >= LARGE_SHARE)
        .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))?;
    let share = tried / total;
    let gpu = o.gpu_name();
    let (cap, pct) = (fmt_gib(total), share * 100.0);
    let (confidence, scale) = if tried > total {
        (
            0.9,
            lang.pick(
                format!("more than all of {gpu}'s {cap} — no cache or batch setting can make it fit"),
                format!("比 {gpu} 的全部 {cap} 还多——无论怎么调缓存或批大小都放不下"),
            ),
        )
    } else {
        let scale =
            lang.pick(format!("{pct:.0} % of {gpu}'s {cap}"), format!("占 {gpu} 总量 {cap} 的 {pct:.0}%"));
        (if share >= 0.5 { 0.8 } else { 0.65 }, scale)
    };
    let empty = match OomFacts::share(o.free_gib, Some(total)) {
        Some(free) if free >= 0.9 => {
            let free = fmt_gib(free * total);
            lang.pick(
                format!(" The GPU was almost empty ({free} free), so nothing else is to blame."),
                format!("当时 GPU 几乎是空的（空闲 {free}），所以不是别的东西占了显存。"),
            )
        }
        _ => String::new(),
    };
    let tried = fmt_gib(tried);
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "The failed allocation asks for {tried} in one piece, {scale}: the buffers of one over-long request.{empty}"
            ),
            format!("申请失败的那块要一次性分配 {tried}，{scale}：这是单个超长请求的缓冲区。{empty}"),
        ),
        FindingBody {
            confidence,
            evidence: o.evidence.iter().take(2).cloned().collect(),
            remediation: texts(lang, &[
                (
                    "set --max-model-len to what the GPU can hold, so the server rejects longer prompts with a 400 instead of crashing",
                    "把 --max-model-len 设为 GPU 放得下的长度，让服务端对更长的 prompt 返回 400，而不是崩溃",
                ),
                (
                    "enforce a prompt-token limit at the gateway; reject or truncate over-long inputs",
                    "在网关强制 prompt token 上限；拒绝或截断超长输入",
                ),
                (
                    "serve legitimate long-context traffic from a separate pool with more GPUs (--tensor-parallel-size) and chunked prefill",
                    "正常的长上下文流量交给单独的实例池，用更多 GPU（--tensor-parallel-size）并开启 chunked prefill",
                ),
                (
                    "restart the worker if it died; a client retrying the same request will crash it again",
                    "worker 挂了就重启；客户端重试同一个请求会再次把它打崩",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "find the request in flight at the OOM: the longest prompt_tokens in the request log",
                    "找出 OOM 时正在处理的请求：请求日志里 prompt_tokens 最大的那个",
                ),
                (
                    "compare the gateway's input limit with the server's --max-model-len",
                    "对比网关的输入长度上限与服务端的 --max-model-len",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const H200: &str = fixture!("oom/h200_200gib.txt");

    #[test]
    fn fires_first_on_the_real_h200_oom() {
        let report = case(&[("oom.txt", H200)]).en;
        assert_eq!(report.findings[0].rule, RuleId::InputTooLong, "{:?}", report.findings);
        let f = case(&[("oom.txt", H200)]).snapshot(RuleId::InputTooLong, "h200_200gib").unwrap();
        assert!(f.summary.contains("200.00 GiB") && f.summary.contains("139.80 GiB"), "{}", f.summary);
        assert!(f.summary.contains("139.19 GiB free"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 5);
        assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    }

    #[test]
    fn fires_on_a_large_share_with_the_total_from_nvidia_smi() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB. GPU 0 has a total capac\n";
        let smi = "index, memory.used [MiB], memory.total [MiB]\n0, 10000 MiB, 81559 MiB\n";
        let f = case(&[("oom", oom), ("smi", smi)])
            .snapshot(RuleId::InputTooLong, "total_from_nvidia_smi")
            .unwrap();
        assert!(f.summary.contains("38 % of GPU 0's 79.65 GiB"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_a_small_allocation() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.\n";
        assert!(case(&[("oom", oom)]).snapshot(RuleId::InputTooLong, "quiet_small_allocation").is_none());
        assert!(
            case(&[("oom", "RuntimeError: CUDA error: out of memory\n")])
                .snapshot(RuleId::InputTooLong, "quiet_on_a_small_allocation")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_oom_input_too_long_1eb: [("oom-input-too-long-1eb.txt", fixture!("incidents/torch/oom-input-too-long-1eb.txt"))],
        corpus_oom_input_too_long_ray_worker: [("oom-input-too-long-ray-worker.log", fixture!("incidents/torch/oom-input-too-long-ray-worker.log"))],
    }
}
