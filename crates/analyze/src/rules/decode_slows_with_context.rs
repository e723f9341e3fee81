//! Rule `decode-slows-with-context`: each decode step gets slower as the contexts grow.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::DecodeSlowsWithContext,
        class: Class::TbtTail,
        title: "Decoding slows down as the contexts grow",
        detects: "Over a run of decode stats with about the same number of running requests, the tokens in the KV cache (SGLang `#token`, vLLM KV usage) at least double while generation throughput per running request falls by 40 % or more.",
        why: "Every decode step reads the whole KV cache of every running sequence. With the batch size fixed, the work per step grows with the context length, so each step takes longer and the gap between tokens stretches for every user in the batch — long conversations or long generations make everyone slower.",
        example: "`#running-req: 64, #token: 41000, … gen throughput (token/s): 2950.00` ten minutes later `#running-req: 64, #token: 373800, … gen throughput (token/s): 1096.65`.",
        fix: "Cap context and output lengths (`max_model_len`, `max_tokens`), keep very long requests on their own replicas, use an attention backend and KV dtype that read less (FP8 KV cache), or lower the batch size for long-context traffic.",
        zh: RuleText {
            title: "上下文越长，解码越慢",
            detects: "在一段运行请求数大致不变的解码统计中，KV 缓存里的 token 数（SGLang 的 `#token`、vLLM 的 KV 使用率）至少翻倍，而每个运行请求的生成吞吐下降 40% 以上。",
            why: "每个解码步都要读取所有运行序列的全部 KV 缓存。批大小不变时，每步的工作量随上下文长度增长，于是每步更慢，批里每个用户的 token 间隔都被拉长——长对话或长生成会拖慢所有人。",
            example: "`#running-req: 64, #token: 41000, … gen throughput (token/s): 2950.00`，十分钟后 `#running-req: 64, #token: 373800, … gen throughput (token/s): 1096.65`。",
            fix: "限制上下文和输出长度（`max_model_len`、`max_tokens`），把超长请求放到单独的副本上，使用读取量更小的注意力后端和 KV 类型（FP8 KV 缓存），或者对长上下文流量降低批大小。",
        },
    },
    check,
};

/// One decode sample: running requests, context (tokens or KV %), generation tokens/s.
struct Point<'a> {
    running: f64,
    context: f64,
    speed: f64,
    evidence: &'a EvidenceLine,
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let sglang: Vec<Point> = f
        .sglang
        .batches
        .iter()
        .filter(|b| !b.prefill)
        .filter_map(|b| {
            Some(Point { running: b.running?, context: b.tokens?, speed: b.gen_tps?, evidence: &b.evidence })
        })
        .collect();
    let vllm: Vec<Point> = f
        .vllm
        .stats
        .iter()
        .filter(|s| s.prompt_tps.unwrap_or(0.0) == 0.0)
        .filter_map(|s| {
            Some(Point {
                running: s.running?,
                context: s.kv_usage_pct?,
                speed: s.gen_tps?,
                evidence: &s.evidence,
            })
        })
        .collect();
    // llama.cpp: one generation's rate as it grows (`n_gen = …, tg_3s = …`), the busiest task.
    let mut tasks: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for d in &f.llama.decode {
        *tasks.entry(d.task.as_str()).or_insert(0) += 1;
    }
    let task = tasks.iter().max_by_key(|(_, n)| **n).map(|(t, _)| *t);
    let llama: Vec<Point> = f
        .llama
        .decode
        .iter()
        .filter(|d| Some(d.task.as_str()) == task && d.n_gen > 0.0)
        .map(|d| Point { running: 1.0, context: d.n_gen, speed: d.tokens_per_s, evidence: &d.evidence })
        .collect();
    let Some((points, what)) = [(sglang, "#token"), (vllm, "KV usage"), (llama, "n_gen")]
        .into_iter()
        .find(|(p, _)| slowing(p).is_some())
    else {
        return trt_step_time(f, lang);
    };
    let (first, last) = slowing(&points)?;
    let ctx = last.context / first.context;
    let per = |p: &Point| p.speed / p.running;
    let drop = 1.0 - per(last) / per(first);
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("With {:.0} requests running throughout, {what} grew {ctx:.1}× ({:.0} → {:.0}) while generation per request fell {:.0} % ({:.1} → {:.1} tokens/s): every decode step reads more KV cache.", first.running, first.context, last.context, drop * 100.0, per(first), per(last)),
            format!("运行请求数一直在 {:.0} 左右，{what} 增长了 {ctx:.1} 倍（{:.0} → {:.0}），而每个请求的生成速度下降了 {:.0}%（{:.1} → {:.1} tokens/s）：每个解码步要读取更多的 KV 缓存。", first.running, first.context, last.context, drop * 100.0, per(first), per(last)),
        ),
        FindingBody {
            confidence: 0.7,
            evidence: vec![first.evidence.clone(), last.evidence.clone()],
            remediation: texts(lang, &[
                (
                    "cap context and output lengths for this traffic (max_model_len, max_tokens)",
                    "为这类流量限制上下文和输出长度（max_model_len、max_tokens）",
                ),
                (
                    "route long-context requests to their own replicas, or lower the batch size there (max_num_seqs / --max-running-requests)",
                    "把长上下文请求路由到单独的副本，或在那里降低批大小（max_num_seqs / --max-running-requests）",
                ),
                (
                    "read less per step: an FP8 KV cache (--kv-cache-dtype fp8) halves the bytes each step reads",
                    "减少每步的读取量：FP8 KV 缓存（--kv-cache-dtype fp8）把每步读取的字节数减半",
                ),
            ]),
            next_checks: texts(lang, &[(
                "the request log's output lengths and ITL by context length: the gap should grow with the tokens already in the context",
                "按上下文长度看请求日志里的输出长度和 ITL：token 间隔应当随上下文中已有的 token 数增长",
            )]),
        },
    ))
}

/// TensorRT-LLM: the same batch in every iteration and no new arrivals (the total of fetched
/// requests does not move), while the device's step time grows by 1.67× or more (generation per
/// request falls by 40 % or more): the requests' contexts grew.
fn trt_step_time(f: &Facts, lang: Lang) -> Option<Finding> {
    let its: Vec<_> =
        f.llama.trt_iterations.iter().filter(|i| i.scheduled > 0.0 && i.device_ms.is_some()).collect();
    if its.len() < 4 {
        return None;
    }
    let (first, last) = (its[0], its[its.len() - 1]);
    let (a, b) = (first.device_ms?, last.device_ms?);
    let same_batch = (last.scheduled - first.scheduled).abs() <= 0.15 * first.scheduled;
    let no_arrivals = first.total_requests == last.total_requests;
    if !(same_batch && no_arrivals && a > 0.0 && b >= a / 0.6) {
        return None;
    }
    let n = first.scheduled;
    let drop = (1.0 - a / b) * 100.0;
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("With the same {n:.0} requests in every step and no new arrivals, the device step time grew from {a:.1} to {b:.1} ms ({drop:.0} % fewer tokens per second each): every decode step reads more KV cache as their contexts grow."),
            format!("每一步都是同样的 {n:.0} 个请求、没有新请求到达，设备单步耗时却从 {a:.1} ms 增长到 {b:.1} ms（每个请求每秒少生成 {drop:.0}%）：上下文变长，每个解码步要读取更多 KV 缓存。"),
        ),
        FindingBody {
            confidence: 0.7,
            evidence: vec![first.evidence.clone(), last.evidence.clone()],
            remediation: texts(lang, &[
                (
                    "cap context and output lengths for this traffic (max_seq_len, max_tokens)",
                    "为这类流量限制上下文和输出长度（max_seq_len、max_tokens）",
                ),
                (
                    "route long generations to their own replicas, or lower the batch size there",
                    "把长生成路由到单独的副本，或在那里降低批大小",
                ),
            ]),
            next_checks: texts(lang, &[(
                "plot prev_device_step_time against the iteration: a steady climb with a steady batch confirms it",
                "按迭代画出 prev_device_step_time：批大小不变而耗时稳定上升即可确认",
            )]),
        },
    ))
}

/// The first and last points of the series if, with the batch about the same size (±15 %), the
/// context at least doubled and generation per running request fell by 40 % or more.
fn slowing<'a, 'b>(points: &'b [Point<'a>]) -> Option<(&'b Point<'a>, &'b Point<'a>)> {
    if points.len() < 4 {
        return None;
    }
    let (first, last) = (points.first()?, points.last()?);
    let steady = points.iter().all(|p| p.running > 0.0 && (p.running / first.running - 1.0).abs() <= 0.15);
    let per = |p: &Point| p.speed / p.running;
    let grew = first.context > 0.0 && last.context >= 2.0 * first.context;
    let fell = per(first) > 0.0 && per(last) <= 0.6 * per(first);
    (steady && grew && fell).then_some((first, last))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn log(tokens_and_tps: &[(u32, f64)]) -> String {
        tokens_and_tps
            .iter()
            .enumerate()
            .map(|(i, (t, g))| format!("[2025-06-14 10:0{i}:00 TP0] Decode batch. #running-req: 64, #token: {t}, token usage: 0.10, gen throughput (token/s): {g:.2}, #queue-req: 0\n"))
            .collect()
    }

    #[test]
    fn fires_when_tokens_grow_and_speed_falls() {
        let l = log(&[(41000, 2950.0), (92200, 2341.0), (194600, 1657.0), (373800, 1096.0)]);
        let f = case(&[("sglang.log", &l)])
            .snapshot(RuleId::DecodeSlowsWithContext, "fires_when_tokens_grow_and_speed_falls")
            .unwrap();
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_when_speed_holds() {
        let l = log(&[(41000, 2950.0), (92200, 2900.0), (194600, 2850.0), (373800, 2800.0)]);
        assert!(
            case(&[("sglang.log", &l)])
                .snapshot(RuleId::DecodeSlowsWithContext, "quiet_when_speed_holds")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_tbt_decode_slows_long_generation: [("tbt-decode-slows-long-generation.log", fixture!("incidents/llama-server/tbt-decode-slows-long-generation.log"))],
        corpus_tbt_046_decode_slows_with_context: [("tbt-046-decode-slows-with-context.log", fixture!("incidents/sglang/tbt-046-decode-slows-with-context.log"))],
    }
}
