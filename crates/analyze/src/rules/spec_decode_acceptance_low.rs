//! Rule `spec-decode-acceptance-low`: speculative decoding is on and its drafts are almost
//! never accepted — each step yields about one token, as without it, and pays for the drafts.
//! Advice, not a fault: it never decides the verdict.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::SpecDecodeAcceptanceLow,
        class: Class::TbtTail,
        title: "Speculative decoding is on, but its drafts are almost never accepted",
        detects: "Tokens per speculative step at or below 1.2 (fewer than one accepted draft token in five steps): vLLM's `1 + vllm:spec_decode_num_accepted_tokens_total / vllm:spec_decode_num_drafts_total` over the window (or since start with one scrape) across at least 1,000 steps; SGLang's `sglang:spec_accept_length` or TensorRT-LLM's `trtllm_spec_decode_acceptance_length` above 0 (0 means off) and at most 1.2 in every scrape that has it.",
        why: "A speculative step proposes k draft tokens and verifies them in one pass of the target model; it pays off only when enough are accepted. Near one token per step, every step still costs the draft model's passes and the verification of k extra positions — decode is slower than with speculation off. Drafts stop matching when the traffic is not what the draft model or the n-gram lookup was chosen for (another language, code instead of chat, high temperature sampling).",
        example: "`vllm:spec_decode_num_accepted_tokens_total` grew by 1,900 over 20,000 drafts: 1.1 tokens per step.",
        fix: "Turn speculative decoding off for this traffic, or pick a draft that matches it (an EAGLE head trained for the model, fewer speculative tokens `num_speculative_tokens`, n-gram only where outputs repeat the prompt).",
        zh: RuleText {
            title: "开启了投机解码，但草稿几乎从不被接受",
            detects: "每个投机步产出的 token 数不超过 1.2（五步里接受不到一个草稿 token）：vLLM 在窗口内（只有一次抓取时为自启动以来）至少 1,000 步的 `1 + vllm:spec_decode_num_accepted_tokens_total / vllm:spec_decode_num_drafts_total`；SGLang 的 `sglang:spec_accept_length` 或 TensorRT-LLM 的 `trtllm_spec_decode_acceptance_length` 大于 0（0 表示未开启）且在每次抓取里都不超过 1.2。",
            why: "投机解码每一步先提出 k 个草稿 token，再用目标模型一次前向验证；只有被接受的足够多才划算。每步接近一个 token 时，每一步仍要付出草稿模型的前向和 k 个额外位置的验证——decode 比关掉投机还慢。流量和草稿模型或 n-gram 查找所针对的不一样时（换了语言、对话变成代码、高温采样），草稿就对不上了。",
            example: "`vllm:spec_decode_num_accepted_tokens_total` 在 20,000 个草稿步里只增加了 1,900：每步 1.1 个 token。",
            fix: "对这类流量关闭投机解码，或换一个匹配的草稿（为该模型训练的 EAGLE 头、更少的投机 token 数 `num_speculative_tokens`，只在输出会重复提示时用 n-gram）。",
        },
    },
    check,
};

/// Tokens per step at or below this: speculation gains less than it costs.
const MAX_TOKENS_PER_STEP: f64 = 1.2;
/// Draft steps it takes to judge vLLM's ratio.
const MIN_DRAFTS: f64 = 1_000.0;

/// vLLM: (tokens per step, steps, accepted/draft-token share, evidence).
fn vllm(f: &Facts) -> Option<(f64, f64, Option<f64>, Vec<EvidenceLine>)> {
    let m = &f.metrics;
    let (drafts, accepted, draft_tokens) = (
        "vllm:spec_decode_num_drafts_total",
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:spec_decode_num_draft_tokens_total",
    );
    let last = m.latest()?;
    // Over the window when the counters only grew; since start with one scrape.
    let value = |n: &str| -> Option<f64> {
        match m.window() {
            Some(_) => m.delta(n).filter(|d| *d >= 0.0),
            None => last.sum(n).map(|x| x.0),
        }
    };
    let (d, a) = (value(drafts)?, value(accepted)?);
    if d < MIN_DRAFTS {
        return None;
    }
    let share = value(draft_tokens).filter(|t| *t > 0.0).map(|t| a / t);
    let evidence =
        [drafts, accepted].iter().filter_map(|n| last.sum(n).map(|(_, s)| last.evidence(s))).collect();
    Some((1.0 + a / d, d, share, evidence))
}

/// SGLang or TensorRT-LLM: (the highest reading, the scrapes read, evidence), when every scrape
/// that has the gauge reads speculation on.
fn gauge(f: &Facts) -> Option<(f64, usize, Vec<EvidenceLine>)> {
    let m = &f.metrics;
    let key = "sglang:spec_accept_length";
    let scrapes: Vec<_> = [m.window().map(|w| w.0), m.before_last(), m.latest()].into_iter().flatten().fold(
        Vec::new(),
        |mut v, s| {
            if !v.iter().any(|x: &&crate::parsers::prom::Scrape| std::ptr::eq(*x, s)) {
                v.push(s);
            }
            v
        },
    );
    let readings: Vec<_> =
        scrapes.iter().filter_map(|s| s.max(key).map(|(v, series)| (v, s.evidence(series)))).collect();
    if readings.is_empty() || readings.iter().any(|(v, _)| v.is_nan() || *v <= 0.0) {
        return None;
    }
    let top = readings.iter().map(|(v, _)| *v).fold(0.0, f64::max);
    let n = readings.len();
    Some((top, n, readings.into_iter().map(|(_, e)| e).rev().take(2).collect()))
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let (confidence, summary, evidence) = if let Some((per_step, steps, share, evidence)) = vllm(f) {
        if per_step > MAX_TOKENS_PER_STEP {
            return None;
        }
        let share = share.map_or(String::new(), |s| {
            lang.pick(
                format!(", {:.1} % of draft tokens accepted", s * 100.0),
                format!("，草稿 token 接受率 {:.1}%", s * 100.0),
            )
        });
        let s = lang.pick(
            format!("vLLM's speculative decoding made {per_step:.2} tokens per step over {steps:.0} steps{share}: the drafts are almost never accepted, and every step still pays for them."),
            format!("vLLM 的投机解码在 {steps:.0} 步里每步产出 {per_step:.2} 个 token{share}：草稿几乎从不被接受，而每一步仍在为它们付出代价。"),
        );
        (0.6, s, evidence)
    } else {
        let (top, n, evidence) = gauge(f)?;
        if top > MAX_TOKENS_PER_STEP {
            return None;
        }
        let s = lang.pick(
            format!("The engine's acceptance length is at most {top:.2} tokens per step in {n} scrape(s): speculative decoding is on, but its drafts are almost never accepted, and every step still pays for them."),
            format!("引擎的接受长度在 {n} 次抓取中最高只有每步 {top:.2} 个 token：投机解码已开启，但草稿几乎从不被接受，而每一步仍在为它们付出代价。"),
        );
        // One reading is one logging interval; agreeing readings are surer.
        (if n >= 2 { 0.6 } else { 0.45 }, s, evidence)
    };
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "compare decode speed with speculative decoding off for the same traffic; keep it off if it is not faster",
                    "对同样的流量比较关闭投机解码时的 decode 速度；不更快就关掉",
                ),
                (
                    "use a draft that matches the traffic (an EAGLE head trained for the model), or fewer speculative tokens",
                    "换一个与流量匹配的草稿（为该模型训练的 EAGLE 头），或减少投机 token 数",
                ),
            ]),
            next_checks: texts(lang, &[(
                "look at the per-position acceptance (`vllm:spec_decode_num_accepted_tokens_per_pos_total`): if even the first position is rarely accepted, the draft does not fit the traffic",
                "看按位置的接受数（`vllm:spec_decode_num_accepted_tokens_per_pos_total`）：如果连第一个位置都很少被接受，说明草稿不适合这类流量",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const RULE: RuleId = RuleId::SpecDecodeAcceptanceLow;

    fn vllm(drafts: [u64; 2], accepted: [u64; 2]) -> String {
        let l = r#"engine="0",model_name="m""#;
        (0..2)
            .map(|k| {
                format!(
                    "vllm:spec_decode_num_drafts_total{{{l}}} {}\nvllm:spec_decode_num_draft_tokens_total{{{l}}} {}\nvllm:spec_decode_num_accepted_tokens_total{{{l}}} {}\n",
                    drafts[k],
                    drafts[k] * 3,
                    accepted[k]
                )
            })
            .collect()
    }

    fn sglang(lengths: &[f64]) -> String {
        lengths
            .iter()
            .map(|v| format!("sglang:spec_accept_length{{engine_type=\"unified\",model_name=\"m\",tp_rank=\"0\"}} {v}\nsglang:num_running_reqs{{engine_type=\"unified\",model_name=\"m\",tp_rank=\"0\"}} 8\n"))
            .collect()
    }

    #[test]
    fn fires_on_vllm_counters_near_one_token_per_step() {
        let f = case(&[("metrics.prom", &vllm([10_000, 30_000], [5_000, 7_000]))])
            .snapshot(RULE, "vllm_window")
            .unwrap();
        assert!(f.summary.contains("1.10 tokens per step"), "{}", f.summary);
    }

    #[test]
    fn fires_on_sglang_accept_length_in_every_scrape() {
        let f = case(&[("metrics.prom", &sglang(&[1.08, 1.05]))]).snapshot(RULE, "sglang_gauge").unwrap();
        assert_eq!(f.confidence, 0.6);
        let trt = "trtllm_spec_decode_acceptance_length{engine_type=\"trtllm\",model_name=\"m\"} 1.02\n";
        assert_eq!(case(&[("metrics.prom", trt)]).fired(RULE).map(|f| f.confidence), Some(0.45));
    }

    #[test]
    fn quiet_when_drafts_pay_off_when_off_and_on_few_steps() {
        // 2.4 tokens per step.
        assert!(
            case(&[("metrics.prom", &vllm([10_000, 30_000], [5_000, 33_000]))])
                .snapshot(RULE, "quiet_accepted")
                .is_none()
        );
        // Off: SGLang writes 0; one interval of 1.6 among the readings.
        assert!(case(&[("metrics.prom", &sglang(&[0.0, 0.0]))]).fired(RULE).is_none());
        assert!(case(&[("metrics.prom", &sglang(&[1.6, 1.05]))]).fired(RULE).is_none());
        // 500 steps in the window.
        assert!(case(&[("metrics.prom", &vllm([10_000, 10_500], [5_000, 5_020]))]).fired(RULE).is_none());
        // A restart between the scrapes: not judged.
        assert!(case(&[("metrics.prom", &vllm([30_000, 2_000], [7_000, 100]))]).fired(RULE).is_none());
        for text in [
            triage_base::fixture!("scrapes/sglang-0.4-decode-slow.prom"),
            triage_base::fixture!("scrapes/vllm-0.11-decode-slow.prom"),
        ] {
            assert!(case(&[("metrics.prom", text)]).fired(RULE).is_none());
        }
    }
}
