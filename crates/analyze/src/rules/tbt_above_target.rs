//! Rule `tbt-above-target`: a pasted figure of the time between tokens (ITL, TPOT, a decode
//! time per token, a single stream's decode rate) is above the ITL target — the symptom sets the
//! class even when nothing in the paste names the cause.

use super::RuleId;
use super::ttft_above_target::{Over, histogram_over};
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::table::Row;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::TbtAboveTarget,
        class: Class::TbtTail,
        title: "A pasted time-between-tokens figure is above the ITL target",
        detects: "Any table or `key: value` figure of inter-token latency or TPOT (mean, median, one request's value, or a p90–p99 tail), a decode time per token (`82.9ms/T`, `eval time = 15896.38 ms / 64 runs`, `Generation:763.6s` for 80 tokens) or one stream's decode rate (`eval rate`, llama-bench `tg128`, read as 1000 / rate ms per token) above the ITL target (200 ms by default; `--slo-itl-ms`), and the server's `vllm:inter_token_latency_seconds` histogram in a `/metrics` scrape with its p50 or p99 above it. Aggregate throughput (every request's tokens summed) is never read as a per-token time.",
        why: "The gap between tokens is what a reader of a streamed answer feels as stutter, and what turns a long answer into minutes. A figure above the target settles the class — decode is slow — before its cause is known: a batch stretched by long sequences, prefills interleaved with decode, layers on the CPU, a slow GPU.",
        example: "`| Mean ITL (ms) | 236.7 |`; `Generation:763.6s` for `Generating (80 / 80 tokens)` (9.5 s a token).",
        fix: "Find what slows each step: prefills sharing the step (chunked prefill with a smaller budget, or separate prefill instances), long sequences in the batch, layers offloaded to the CPU (`ngl` / `--n-gpu-layers` below the model's layer count), one GPU clocking down (`nvidia-smi -q -d PERFORMANCE`).",
        zh: RuleText {
            title: "粘贴的 token 间隔数字超过了 ITL 目标",
            detects: "表格或 `key: value` 行里的 token 间隔（ITL）或 TPOT（均值、中位数、单个请求的值，或 p90–p99 长尾）、每 token 的 decode 时间（`82.9ms/T`、`eval time = 15896.38 ms / 64 runs`、80 个 token 用了 `Generation:763.6s`），或单个流的 decode 速度（`eval rate`、llama-bench 的 `tg128`，按 1000 / 速度 折算成每 token 毫秒）超过 ITL 目标（默认 200 ms；`--slo-itl-ms` 可改），以及 `/metrics` 抓取里服务端 `vllm:inter_token_latency_seconds` 直方图的 p50 或 p99 超过它。汇总吞吐（所有请求的 token 之和）不会被当作每 token 时间。",
            why: "token 之间的间隔就是流式回答读者感到的卡顿，也会把长回答拖成几分钟。数字超过目标就能定类——decode 慢——即使原因还不清楚：批次被长序列拉长、prefill 和 decode 混在同一步、模型层在 CPU 上、某块 GPU 降频。",
            example: "`| Mean ITL (ms) | 236.7 |`；`Generating (80 / 80 tokens)` 用了 `Generation:763.6s`（每 token 9.5 s）。",
            fix: "找出每一步慢在哪里：prefill 挤进了 decode 步（开启 chunked prefill 并调小预算，或把 prefill 拆到单独实例）、批次里有长序列、模型层被放到了 CPU 上（`ngl` / `--n-gpu-layers` 小于模型层数）、某块 GPU 降频（`nvidia-smi -q -d PERFORMANCE`）。",
        },
    },
    check,
};

/// The row's worst decode-side figure above `slo`: (confidence, name, ms per token).
fn row_over(row: &Row, slo: f64, ttft_slo: f64) -> Option<(f64, String, f64)> {
    let typical = ["itl_ms", "tpot_ms"]
        .iter()
        .find_map(|m| row.typical(m).filter(|(v, _)| *v > slo))
        .map(|(v, n)| (0.75, n, v));
    let per_token = row.decode_ms_per_token().filter(|(v, _)| *v > slo).map(|(v, n)| (0.75, n.to_owned(), v));
    let tail = ["itl_ms", "tpot_ms"]
        .iter()
        .find_map(|m| row.tail(m).filter(|(v, _)| *v > slo))
        .map(|(v, n)| (0.6, n, v));
    let (mut c, name, v) = typical.or(per_token).or(tail)?;
    // Both phases over their targets: the one that took longer is the incident.
    let first = row.get("prefill_ms").or(row.typical("ttft_ms").map(|(v, _)| v));
    if let (Some(p), Some(d)) = (first, row.get("decode_ms"))
        && p > d
        && p > ttft_slo
    {
        c -= 0.2;
    }
    Some((c, name, v))
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let slo = f.slo.itl_ms;
    let best = Over::worst(&f.tables.rows, |row| row_over(row, slo, f.slo.ttft_ms));
    let target = lang.pick(
        format!("the ITL target of {slo:.0} ms (200 ms unless `--slo-itl-ms` sets it)"),
        format!("ITL 目标 {slo:.0} ms（默认 200 ms，可用 `--slo-itl-ms` 修改）"),
    );
    // Every gap first; without them, the per-request time per output token (OpenTelemetry's
    // `gen_ai_server_time_per_output_token_seconds` is one).
    let names = ["vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds"];
    let (confidence, summary, evidence) = match (best, histogram_over(f, &names, slo / 1000.0)) {
        (Some(b), _) => {
            let more = b.more(lang);
            let Over { confidence: c, name, ms: v, evidence, .. } = b;
            let how = match name.as_str() {
                "decode_tps" | "tg_tps" => lang.pick(", 1000 / the decode rate", "，1000 / decode 速度"),
                "decode_ms" => lang.pick(", the generation time over its tokens", "，生成时间除以 token 数"),
                _ => "",
            };
            let s = lang.pick(
                format!("The paste shows {v:.0} ms per token (`{name}`{how}), above {target}{more}: decoding is slow. Nothing here says why yet."),
                format!("粘贴内容显示每 token {v:.0} ms（`{name}`{how}），超过了{target}{more}：decode 很慢。这里还看不出原因。"),
            );
            (c, s, evidence)
        }
        (None, Some((c, q, v, line, name))) => {
            let s = lang.pick(
                format!("The server's inter-token histogram (`{name}`) puts its {q} at {v} s, above {target}: decode steps stall."),
                format!("服务端 token 间隔直方图（`{name}`）的 {q} 为 {v} s，超过了{target}：decode 步在停顿。"),
            );
            (c, s, vec![line])
        }
        (None, None) => {
            let (c, q, v, evidence) =
                super::ttft_above_target::request_log_over(f, &f.requests.tpot_ms, slo)?;
            let n = f.requests.tpot_ms.count();
            let s = lang.pick(
                format!("The request log's time per output token {q} over {n} requests is {v:.0} ms, above {target}: decoding is slow. Nothing here says why yet."),
                format!("请求日志中 {n} 个请求的每输出 token 时间 {q} 为 {v:.0} ms，超过了{target}：decode 很慢。这里还看不出原因。"),
            );
            (c, s, evidence)
        }
    };
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "if prefills share the decode steps, enable chunked prefill with a smaller --max-num-batched-tokens (or give prefill its own instances)",
                    "如果 prefill 挤进了 decode 步，开启 chunked prefill 并调小 --max-num-batched-tokens（或让 prefill 用单独的实例）",
                ),
                (
                    "if layers run on the CPU, put the whole model on the GPU (more -ngl / --n-gpu-layers, a smaller quantisation)",
                    "如果有模型层在 CPU 上运行，把整个模型放到 GPU 上（调大 -ngl / --n-gpu-layers，或换更小的量化）",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the engine's log of the same minutes (batch sizes, prefill lines next to decode lines) and how many layers are offloaded",
                    "贴出同一时间段的引擎日志（批大小、decode 行旁边的 prefill 行）以及有多少层被卸载到 GPU",
                ),
                (
                    "paste nvidia-smi -q -d PERFORMANCE,CLOCK from the run: a GPU that clocks down slows every step",
                    "贴出压测期间的 nvidia-smi -q -d PERFORMANCE,CLOCK：降频的 GPU 会拖慢每一步",
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

    const RULE: RuleId = RuleId::TbtAboveTarget;

    /// A request log whose tokens come 400 ms apart: the symptom, without a cause.
    #[test]
    fn fires_on_a_request_log_over_the_target() {
        let slow: String = (0..12)
            .map(|i| format!("{{\"request_id\":\"r{i}\",\"enqueue_time\":{t},\"first_token_time\":{t}.2,\"last_token_time\":{lt}.2,\"finish_time\":{lt}.2,\"output_tokens\":51}}\n", t = 100 + i * 30, lt = 120 + i * 30))
            .collect();
        let f = case(&[("requests.jsonl", &slow)]).snapshot(RULE, "request_log").unwrap();
        assert!(f.summary.contains("400 ms"), "{}", f.summary);
    }

    #[test]
    fn fires_on_a_transposed_markdown_table() {
        let f = case(&[("pr.md", fixture!("tables/itl_by_config.md"))])
            .snapshot(RULE, "transposed_markdown")
            .unwrap();
        assert!(f.summary.contains("itl_ms.median"), "{}", f.summary);
    }

    #[test]
    fn fires_on_a_single_scrape() {
        let f = case(&[("metrics.prom", fixture!("tables/itl_histogram_tail.prom"))])
            .snapshot(RULE, "single_scrape")
            .unwrap();
        assert!(f.summary.contains("--slo-itl-ms"), "{}", f.summary);
    }

    #[test]
    fn fires_when_decode_dominates() {
        case(&[("kobold.txt", fixture!("tables/decode_dominates.txt"))])
            .snapshot(RULE, "decode_dominates")
            .unwrap();
    }

    #[test]
    fn quiet_on_healthy_llama_bench() {
        assert!(
            case(&[("bench.md", fixture!("tables/llama_bench_healthy.md"))])
                .snapshot(RULE, "quiet_llama_bench")
                .is_none()
        );
    }
}
