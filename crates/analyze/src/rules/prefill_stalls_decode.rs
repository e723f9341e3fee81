//! Rule `prefill-stalls-decode`: long prefills take whole engine steps and the running streams
//! stop while they run (the TBT side of running without chunked prefill).

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::vllm::VllmStat;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::PrefillStallsDecode,
        class: Class::TbtTail,
        title: "Long prefills stall the streams already running",
        detects: "vLLM stats intervals where prompt throughput surges and generation throughput falls below half its usual level while requests are running, twice or more — with chunked prefill off (`enable_chunked_prefill: False`, or a V0 engine without `Chunked prefill is enabled`) the finding is surer.",
        why: "Without chunked prefill a step that prefills a long prompt does nothing else: every running stream waits for it. Each long prompt shows up as a burst of prompt throughput and a hole in generation throughput — a gap of hundreds of milliseconds in every answer being streamed.",
        example: "`Avg prompt throughput: 14210.7 tokens/s, Avg generation throughput: 212.5 tokens/s, Running: 48 reqs` between intervals generating 1,900 tokens/s.",
        fix: "Enable chunked prefill (`--enable-chunked-prefill`, the default in vLLM V1) with a modest `--max-num-batched-tokens` (2048–8192) so each step mixes a slice of prefill with everyone's decode; cap prompt length or route long prompts to their own replicas.",
        zh: RuleText {
            title: "长 prefill 卡住了正在输出的流",
            detects: "vLLM 统计中，有两个以上的时间段 prompt 吞吐激增、生成吞吐跌到平时的一半以下，同时有请求在运行——若 chunked prefill 是关闭的（`enable_chunked_prefill: False`，或 V0 引擎没有打印 `Chunked prefill is enabled`），结论更可信。",
            why: "没有 chunked prefill 时，处理长 prompt 的那一步什么别的都不做：所有正在运行的流都在等它。每个长 prompt 都表现为 prompt 吞吐的一次突增和生成吞吐的一个坑——对每个正在流式输出的回答来说，就是几百毫秒的停顿。",
            example: "`Avg prompt throughput: 14210.7 tokens/s, Avg generation throughput: 212.5 tokens/s, Running: 48 reqs`，而前后时间段的生成吞吐是 1,900 tokens/s。",
            fix: "开启 chunked prefill（`--enable-chunked-prefill`，vLLM V1 默认开启），并设置适中的 `--max-num-batched-tokens`（2048–8192），让每一步把一段 prefill 和所有请求的 decode 混在一起；限制 prompt 长度，或把长 prompt 路由到单独的副本。",
        },
    },
    check,
};

/// An interval is a stall when generation falls below this share of the median while prompt
/// throughput is at least this many times the median.
const DIP: f64 = 0.5;
const SURGE: f64 = 3.0;

/// The middle value of `v`, the upper of the two middle ones for an even count — not
/// [`triage_base::stats::median`], which averages them as numpy does; `None` when empty.
fn upper_median(mut v: Vec<f64>) -> Option<f64> {
    triage_base::sort::sort_f64(&mut v);
    v.get(v.len() / 2).copied()
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    vllm_surges(f, lang).or_else(|| sglang_back_to_back(f, lang))
}

/// Prefill batches at least this long (new tokens) stall the running streams for long.
const LONG_PREFILL_TOKENS: f64 = 8192.0;
/// Back-to-back long prefills that make a finding.
const BACK_TO_BACK: usize = 3;
/// Streams decoding while they run.
const MIN_RUNNING: f64 = 8.0;

/// SGLang: long `Prefill batch`es one after another with no `Decode batch` between, while many
/// requests are running: every running stream waits through all of them.
fn sglang_back_to_back(f: &Facts, lang: Lang) -> Option<Finding> {
    let mut best: &[crate::parsers::sglang::SglangBatch] = &[];
    let batches = &f.sglang.batches;
    let mut start = 0;
    for i in 0..=batches.len() {
        let long = batches.get(i).is_some_and(|b| {
            b.prefill
                && b.new_token.is_some_and(|t| t >= LONG_PREFILL_TOKENS)
                && b.running.is_some_and(|r| r >= MIN_RUNNING)
        });
        if !long {
            if i - start > best.len() {
                best = &batches[start..i];
            }
            start = i + 1;
        }
    }
    if best.len() < BACK_TO_BACK {
        return None;
    }
    let n = best.len();
    let tokens: f64 = best.iter().filter_map(|b| b.new_token).sum();
    let running = best.iter().filter_map(|b| b.running).fold(f64::INFINITY, f64::min);
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("{n} prefill batches ({tokens:.0} new tokens in all) ran back to back with no decode batch between, while at least {running:.0} requests were running: every running stream waited through all of them."),
            format!("{n} 个 prefill 批次（共 {tokens:.0} 个新 token）接连执行，中间没有一个 decode 批次，而同时至少有 {running:.0} 个请求在运行：每条正在输出的流都要等它们全部做完。"),
        ),
        FindingBody {
            confidence: 0.75,
            evidence: best.iter().take(3).map(|b| b.evidence.clone()).collect(),
            remediation: texts(lang, &[
                (
                    "cap each prefill step: SGLang `--chunked-prefill-size 4096` (or 8192), and `--enable-mixed-chunk` so decode runs in the same steps",
                    "限制每一步的 prefill：SGLang `--chunked-prefill-size 4096`（或 8192），并开启 `--enable-mixed-chunk`，让 decode 在同一步里继续",
                ),
                (
                    "cap prompt length, or route long prompts to replicas of their own (prefill/decode disaggregation)",
                    "限制 prompt 长度，或把长 prompt 路由到单独的副本（prefill/decode 分离）",
                ),
            ]),
            next_checks: texts(lang, &[(
                "the server's arguments (`ServerArgs(… chunked_prefill_size=…)`) and the Decode batch lines around these prefills: their gen throughput drops",
                "服务端参数（`ServerArgs(… chunked_prefill_size=…)`）以及这些 prefill 前后的 Decode batch 行：它们的生成吞吐会下降",
            )]),
        },
    ))
}

fn vllm_surges(f: &Facts, lang: Lang) -> Option<Finding> {
    let v = &f.vllm;
    let busy: Vec<&VllmStat> = v.stats.iter().filter(|s| s.running.unwrap_or(0.0) > 0.0).collect();
    if busy.len() < 4 {
        return None;
    }
    let gen_median = upper_median(busy.iter().filter_map(|s| s.gen_tps).collect())?;
    let prompt_median = upper_median(busy.iter().filter_map(|s| s.prompt_tps).collect())?;
    if gen_median <= 0.0 {
        return None;
    }
    let stalls: Vec<&&VllmStat> = busy
        .iter()
        .filter(|s| {
            s.gen_tps.is_some_and(|g| g < DIP * gen_median)
                && s.prompt_tps.is_some_and(|p| p >= SURGE * prompt_median.max(1.0))
        })
        .collect();
    if stalls.len() < 2 {
        return None;
    }
    let off = v.arg_bool("enable_chunked_prefill") == Some(false);
    let confidence = if off { 0.75 } else { 0.55 };
    let worst = stalls.iter().min_by(|a, b| a.gen_tps.unwrap_or(0.0).total_cmp(&b.gen_tps.unwrap_or(0.0)))?;
    let (g, p) = (worst.gen_tps.unwrap_or(0.0), worst.prompt_tps.unwrap_or(0.0));
    let n = stalls.len();
    let setting =
        if off { lang.pick(" Chunked prefill is off.", "chunked prefill 是关闭的。") } else { "" };
    let mut evidence = vec![worst.evidence.clone()];
    if let Some(a) = v.arg("enable_chunked_prefill").filter(|_| off) {
        evidence.insert(0, a.evidence.clone());
    }
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("In {n} stats intervals a prefill surge (up to {p:.0} prompt tokens/s) cut generation to {g:.0} tokens/s against a usual {gen_median:.0}: running streams waited for long prefills.{setting}"),
            format!("有 {n} 个统计时间段出现 prefill 突增（prompt 吞吐最高 {p:.0} tokens/s），生成吞吐跌到 {g:.0} tokens/s，而平时是 {gen_median:.0}：正在输出的流在等长 prefill。{setting}"),
        ),
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "enable chunked prefill (--enable-chunked-prefill) with --max-num-batched-tokens 2048–8192",
                    "开启 chunked prefill（--enable-chunked-prefill），并把 --max-num-batched-tokens 设为 2048–8192",
                ),
                (
                    "cap prompt length at the gateway, or route long prompts to their own replicas",
                    "在网关限制 prompt 长度，或把长 prompt 路由到单独的副本",
                ),
            ]),
            next_checks: texts(lang, &[(
                "the ITL p99 of a benchmark or request log from the same minutes: the stalls show as gaps of a prefill's length",
                "同一时间段压测或请求日志里的 ITL p99：停顿表现为与一次 prefill 时长相当的 token 间隔",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn line(i: usize, prompt: f64, generation: f64) -> String {
        format!(
            "INFO 11-29 10:00:{i:02} metrics.py:467] Avg prompt throughput: {prompt:.1} tokens/s, Avg generation throughput: {generation:.1} tokens/s, Running: 48 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 41.0%, CPU KV cache usage: 0.0%.\n"
        )
    }

    #[test]
    fn fires_on_prefill_surges_that_cut_generation() {
        let mut log = String::from(
            "INFO 11-29 09:59:00 arg_utils.py:1] non-default args: {'enable_chunked_prefill': False}\n",
        );
        for (i, (p, g)) in [
            (800.0, 1900.0),
            (14210.0, 212.0),
            (700.0, 1880.0),
            (900.0, 1920.0),
            (13100.0, 240.0),
            (650.0, 1890.0),
        ]
        .iter()
        .enumerate()
        {
            log += &line(i * 5, *p, *g);
        }
        let f = case(&[("vllm.log", &log)])
            .snapshot(RuleId::PrefillStallsDecode, "fires_on_prefill_surges_that_cut_generation")
            .unwrap();
        assert!(f.confidence >= 0.75, "{f:?}");
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_on_steady_generation() {
        let log: String = (0..6).map(|i| line(i * 5, 900.0, 1900.0 - i as f64 * 10.0)).collect();
        assert!(
            case(&[("vllm.log", &log)])
                .snapshot(RuleId::PrefillStallsDecode, "quiet_on_steady_generation")
                .is_none()
        );
    }

    #[test]
    fn sglang_prefills_back_to_back() {
        let prefill = |new: u32, running: u32| {
            format!(
                "[2025-07-01 10:00:00 TP0] Prefill batch. #new-seq: 2, #new-token: {new}, #cached-token: 0, token usage: 0.20, #running-req: {running}, #queue-req: 3\n"
            )
        };
        let decode = "[2025-07-01 10:00:01 TP0] Decode batch. #running-req: 40, #token: 90000, token usage: 0.30, gen throughput (token/s): 900.00, #queue-req: 3\n";
        let stalled =
            [prefill(16384, 40), prefill(16000, 42), prefill(12000, 44), decode.to_owned()].concat();
        let f = case(&[("sglang.log", &stalled)])
            .snapshot(RuleId::PrefillStallsDecode, "sglang_back_to_back")
            .unwrap();
        assert_eq!(f.evidence.len(), 3);
        // Interleaved with decode, or short, or with nothing running: no stall.
        let interleaved = [
            prefill(16384, 40),
            decode.to_owned(),
            prefill(16000, 42),
            decode.to_owned(),
            prefill(12000, 44),
        ]
        .concat();
        assert!(case(&[("sglang.log", &interleaved)]).fired(RuleId::PrefillStallsDecode).is_none());
        let short = [prefill(2048, 40), prefill(2048, 42), prefill(2048, 44)].concat();
        assert!(case(&[("sglang.log", &short)]).fired(RuleId::PrefillStallsDecode).is_none());
        let idle = [prefill(16384, 1), prefill(16000, 2), prefill(12000, 3)].concat();
        assert!(case(&[("sglang.log", &idle)]).fired(RuleId::PrefillStallsDecode).is_none());
    }

    crate::rules::snapshots! {
        corpus_tbt_prefill_stalls_decode_docker: [("tbt-prefill-stalls-decode-docker.log", fixture!("incidents/vllm/tbt-prefill-stalls-decode-docker.log"))],
        corpus_tbt_prefill_stalls_decode_v066: [("tbt-prefill-stalls-decode-v066.log", fixture!("incidents/vllm/tbt-prefill-stalls-decode-v066.log"))],
    }
}
