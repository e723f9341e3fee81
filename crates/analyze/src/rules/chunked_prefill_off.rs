//! Rule `chunked-prefill-off`: the engine runs without chunked prefill.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ChunkedPrefillOff,
        class: Class::TtftHigh,
        title: "Chunked prefill is off",
        detects: "vLLM's logged engine arguments show `enable_chunked_prefill: False` (or `chunked_prefill_enabled=False`).",
        why: "Without chunking, a long prefill monopolises a whole engine step: decodes stall and queued requests wait for it to finish. Chunking splits prefill into budgeted pieces interleaved with decode.",
        example: "`non-default args: {'enable_chunked_prefill': False, 'max_model_len': 131072}` on a server that sees 30k-token prompts.",
        fix: "Start the engine with `--enable-chunked-prefill --max-num-batched-tokens 8192` (V1 enables it by default; find what turned it off).",
        zh: RuleText {
            title: "chunked prefill 没有开启",
            detects: "vLLM 打印的引擎参数中出现 `enable_chunked_prefill: False`（或 `chunked_prefill_enabled=False`）。",
            why: "不分块时，一个长 prefill 会独占整个引擎调度步：decode 停顿，排队的请求也要等它算完。chunked prefill 把 prefill 按 token 预算切成小块，与 decode 交织执行。",
            example: "一台会收到 30k token prompt 的服务，启动日志却是 `non-default args: {'enable_chunked_prefill': False, 'max_model_len': 131072}`。",
            fix: "用 `--enable-chunked-prefill --max-num-batched-tokens 8192` 启动引擎（V1 默认开启，要查清是什么把它关掉了）。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let v = &f.vllm;
    if v.arg_bool("enable_chunked_prefill") != Some(false) {
        return None;
    }
    let arg = v.arg("enable_chunked_prefill")?;
    let r = &f.requests;
    let long_prompts = q(&r.prompt_tokens, 0.99).is_some_and(|p| p >= 2000.0);
    let ttft_tail = matches!((q(&r.ttft_ms, 0.5), q(&r.ttft_ms, 0.99)), (Some(a), Some(b)) if b >= 3.0 * a);
    let max_len = v.arg_f64("max_model_len");
    let confidence = 0.5 + if long_prompts { 0.15 } else { 0.0 } + if ttft_tail { 0.15 } else { 0.0 };
    let mut context = Vec::new();
    if let Some(len) = max_len {
        context.push(lang.pick(format!("max_model_len is {len:.0}"), format!("max_model_len 为 {len:.0}")));
    }
    if long_prompts {
        context.push(
            lang.pick(
                "the request log has prompts of 2,000+ tokens at p99",
                "请求日志中 p99 的 prompt 长度在 2,000 token 以上",
            )
            .to_owned(),
        );
    }
    if ttft_tail {
        context.push(lang.pick("TTFT p99 is more than 3× p50", "TTFT p99 超过 p50 的 3 倍").to_owned());
    }
    let summary = match lang {
        Lang::En => format!(
            "The engine was started with chunked prefill disabled{}.",
            if context.is_empty() { String::new() } else { format!(" ({})", context.join("; ")) }
        ),
        Lang::Zh => format!(
            "引擎启动时关闭了 chunked prefill{}。",
            if context.is_empty() { String::new() } else { format!("（{}）", context.join("；")) }
        ),
    };
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence: vec![arg.evidence.clone()],
            remediation: texts(lang, &[
                ("--enable-chunked-prefill --max-num-batched-tokens 8192", "--enable-chunked-prefill --max-num-batched-tokens 8192"),
                (
                    "--scheduler-policy fcfs (the default) keeps arrival order while chunks interleave",
                    "--scheduler-policy fcfs（默认值）在分块交织执行时仍保持到达顺序",
                ),
            ]),
            next_checks: texts(lang, &[(
                "after enabling, compare TTFT p99 and decode ITL p99 before and after: chunking trades a little decode speed for much shorter first-token tails",
                "开启后对比前后的 TTFT p99 和 decode ITL p99：分块用一点 decode 速度换来短得多的首 token 长尾",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_logged_argument() {
        let log = "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'm', 'enable_chunked_prefill': False, 'max_model_len': 32768}\n";
        let f = case(&[("vllm.log", log)])
            .snapshot(RuleId::ChunkedPrefillOff, "fires_on_logged_argument")
            .unwrap();
        assert!(f.summary.contains("32768"));
        assert_eq!(f.evidence[0].line, 1);
    }

    #[test]
    fn quiet_when_enabled() {
        let log = "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'm', 'enable_chunked_prefill': True}\n";
        assert!(
            case(&[("vllm.log", log)]).snapshot(RuleId::ChunkedPrefillOff, "quiet_when_enabled").is_none()
        );
    }
}
