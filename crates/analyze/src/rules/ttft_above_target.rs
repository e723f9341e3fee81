//! Rule `ttft-above-target`: a pasted figure of TTFT (or of the prefill before it) is above the
//! TTFT target — the symptom sets the class even when nothing in the paste names the cause.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::table::Row;
use crate::report::{Class, EvidenceLine, Finding};
use triage_base::stats::{BucketQuantile, histogram_quantile};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::TtftAboveTarget,
        class: Class::TtftHigh,
        title: "A pasted TTFT figure is above the TTFT target",
        detects: "Any table or `key: value` figure of time to first token (mean, median, one request's value, or a p90–p99 tail) — or a prompt-processing time, which TTFT includes — above the TTFT target (2,000 ms by default; `--slo-ttft-ms`), and the server's own `vllm:time_to_first_token_seconds` histogram in a `/metrics` scrape with its p50 or p99 above it. A long prompt processed at a normal rate (≥ 1,000 tokens/s: 90k tokens in 20 s) is not counted.",
        why: "TTFT is what a user waits before anything appears. When a figure in the paste already crosses the target the class is settled — the first token is late — even before the cause is known: queueing, a slow or repeated prefill, a cold instance.",
        example: "`first_token latency(min, max, ave): 5.57s, 11.93s, 11.12s` for 512-token prompts; `Process:34.76s` for one reply.",
        fix: "Find where the time goes: the engine's waiting queue during the same minutes (queueing behind a full batch → more replicas or a lower concurrency cap), the prompt lengths and the prefill rate (a whole context processed again → prefix caching / context shifting; a slow prefill → chunked prefill, more of the model on the GPU).",
        zh: RuleText {
            title: "粘贴的 TTFT 数字超过了 TTFT 目标",
            detects: "表格或 `key: value` 行里的首 token 时间（均值、中位数、单个请求的值，或 p90–p99 长尾）——或者 TTFT 所包含的 prompt 处理时间——超过 TTFT 目标（默认 2,000 ms；`--slo-ttft-ms` 可改），以及 `/metrics` 抓取里服务端自己的 `vllm:time_to_first_token_seconds` 直方图 p50 或 p99 超过它。以正常速度（≥ 1,000 token/s：90k token 用 20 s）处理的长 prompt 不算。",
            why: "TTFT 是用户看到任何输出之前的等待。粘贴里的数字已经越过目标时，类别就定了——首 token 来得太晚——即使原因还不知道：排队、prefill 太慢或重复、实例没预热。",
            example: "512 token 的 prompt 下 `first_token latency(min, max, ave): 5.57s, 11.93s, 11.12s`；一次回复 `Process:34.76s`。",
            fix: "找出时间花在哪里：同一时间段引擎的等待队列（排在满批次后面 → 加副本或降低并发上限），prompt 长度和 prefill 速度（整段上下文被重新处理 → 前缀缓存 / context shifting；prefill 太慢 → chunked prefill、把更多模型层放到 GPU 上）。",
        },
    },
    check,
};

/// A prompt processed at least this fast (tokens/s) is a long prompt, not a slow prefill.
pub(crate) const NORMAL_PREFILL_TPS: f64 = 1_000.0;

/// The finding's figure: what crossed the target and how sure (this rule's and
/// `tbt-above-target`'s).
pub(crate) struct Over {
    pub(crate) confidence: f64,
    pub(crate) name: String,
    pub(crate) ms: f64,
    pub(crate) evidence: Vec<EvidenceLine>,
    pub(crate) rows: usize,
}

impl Over {
    /// The row whose figure `over` finds worst — surest, then largest — with its line, and how
    /// many rows `over` finds over the target.
    pub(crate) fn worst(rows: &[Row], over: impl Fn(&Row) -> Option<(f64, String, f64)>) -> Option<Over> {
        let mut best: Option<Over> = None;
        let mut n = 0;
        for row in rows {
            let Some((c, name, v)) = over(row) else { continue };
            n += 1;
            if best.as_ref().is_none_or(|b| (c, v) > (b.confidence, b.ms)) {
                let evidence = row.line(&name).cloned().into_iter().collect();
                best = Some(Over { confidence: c, name, ms: v, evidence, rows: 0 });
            }
        }
        best.map(|b| Over { rows: n, ..b })
    }

    /// ` (N rows of the paste are over it)` when more than one row is.
    pub(crate) fn more(&self, lang: Lang) -> String {
        match (self.rows > 1, lang) {
            (true, Lang::En) => format!(" ({} rows of the paste are over it)", self.rows),
            (true, Lang::Zh) => format!("（粘贴中共有 {} 行超过）", self.rows),
            (false, _) => String::new(),
        }
    }
}

/// The prompt was processed at a normal rate: TTFT `ms` is explained by its length.
pub(crate) fn long_prompt_at_normal_rate(row: &Row, ms: f64) -> bool {
    let Some(tokens) = row.prompt_tokens() else { return false };
    let rate = tokens / (ms / 1000.0).max(1e-9);
    rate >= NORMAL_PREFILL_TPS || row.get("prefill_tps").is_some_and(|r| r >= NORMAL_PREFILL_TPS)
}

/// The row's worst TTFT-side figure above `slo`: (confidence, name, ms).
fn row_over(row: &Row, slo: f64, itl_slo: f64) -> Option<(f64, String, f64)> {
    let typical = row.typical("ttft_ms").filter(|(v, _)| *v > slo).map(|(v, n)| (0.75, n, v));
    let prefill = row.get("prefill_ms").filter(|v| *v > slo).map(|v| (0.75, "prefill_ms".to_owned(), v));
    let tail = row.tail("ttft_ms").filter(|(v, _)| *v > slo).map(|(v, n)| (0.6, n, v));
    let (mut c, name, v) = typical.or(prefill).or(tail)?;
    if long_prompt_at_normal_rate(row, v) {
        return None;
    }
    // Both phases over their targets: the one that took longer is the incident.
    let prefill_ms = row.get("prefill_ms").or(row.typical("ttft_ms").map(|(v, _)| v)).unwrap_or(v);
    if let (Some(d), Some((per, _))) = (row.get("decode_ms"), row.decode_ms_per_token())
        && d > prefill_ms
        && per > itl_slo
    {
        c -= 0.2;
    }
    Some((c, name, v))
}

/// The quantile's value as the finding may use it: the lower bound of its bucket, the side
/// that argues against the finding.
pub(crate) fn lower_bound(q: BucketQuantile) -> Option<f64> {
    match q {
        BucketQuantile::Within { lower, .. } | BucketQuantile::AboveLastBucket { lower } => Some(lower),
        _ => None,
    }
}

/// A server-side latency histogram in `/metrics` (over the window of two scrapes, else since
/// the start) whose p50 (confidence 0.7) or else p99 (0.6) is above `slo_s` at its bucket's
/// lower bound: (confidence, quantile name, the quantile, the evidence line).
pub(crate) fn histogram_over<'n>(
    f: &Facts,
    names: &[&'n str],
    slo_s: f64,
) -> Option<(f64, &'static str, BucketQuantile, EvidenceLine, &'n str)> {
    let m = &f.metrics;
    for name in names {
        let Some((buckets, name)) = m.window_histogram(name) else { continue };
        let scrape = m.latest()?;
        let count = format!("{name}_count");
        let line = scrape
            .series
            .iter()
            .find(|s| s.name == count)
            .or_else(|| scrape.series.iter().find(|s| s.name.starts_with(name)))
            .map(|s| scrape.evidence(s))?;
        for (q, c, label) in [(0.5, 0.7, "p50"), (0.99, 0.6, "p99")] {
            let (v, _) = histogram_quantile(q, &buckets);
            if lower_bound(v).is_some_and(|x| x > slo_s) {
                return Some((c, label, v, line, name));
            }
        }
    }
    None
}

/// A request log's per-request figure (`sketch`, ms) whose p50 or p99 is above `slo_ms`, over
/// at least five requests: (confidence, quantile name, value, the slowest request's line).
pub(crate) fn request_log_over(
    f: &Facts,
    sketch: &triage_base::stats::QuantileSketch,
    slo_ms: f64,
) -> Option<(f64, &'static str, f64, Vec<EvidenceLine>)> {
    if sketch.count() < 5 {
        return None;
    }
    let evidence: Vec<EvidenceLine> =
        f.requests.slowest.iter().filter_map(|r| r.evidence.clone()).take(1).collect();
    for (q, c, label) in [(0.5, 0.7, "p50"), (0.99, 0.6, "p99")] {
        if let Some(v) = sketch.quantile(q).filter(|v| *v > slo_ms) {
            return Some((c, label, v, evidence));
        }
    }
    None
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let slo = f.slo.ttft_ms;
    let best = Over::worst(&f.tables.rows, |row| row_over(row, slo, f.slo.itl_ms));
    let target = lang.pick(
        format!("the TTFT target of {slo:.0} ms (2,000 ms unless `--slo-ttft-ms` sets it)"),
        format!("TTFT 目标 {slo:.0} ms（默认 2,000 ms，可用 `--slo-ttft-ms` 修改）"),
    );
    let summary = match (best, histogram_over(f, &["vllm:time_to_first_token_seconds"], slo / 1000.0)) {
        (Some(b), _) => {
            let more = b.more(lang);
            let what = if b.name == "prefill_ms" {
                lang.pick("a prompt-processing time", "prompt 处理时间")
            } else {
                lang.pick("a TTFT", "TTFT")
            };
            let s = lang.pick(
                format!("The paste shows {what} of {:.0} ms (`{}`), above {target}{more}: the first token comes late. Nothing here says why yet.", b.ms, b.name),
                format!("粘贴内容显示{what}为 {:.0} ms（`{}`），超过了{target}{more}：首 token 来得太晚。这里还看不出原因。", b.ms, b.name),
            );
            (b.confidence, s, b.evidence)
        }
        (None, Some((c, q, v, line, name))) => {
            let s = lang.pick(
                format!("The server's TTFT histogram (`{name}`) puts its {q} at {v} s, above {target}: requests wait seconds before their first token."),
                format!("服务端 TTFT 直方图（`{name}`）的 {q} 为 {v} s，超过了{target}：请求要等好几秒才拿到首 token。"),
            );
            (c, s, vec![line])
        }
        (None, None) => {
            let (c, q, v, evidence) = request_log_over(f, &f.requests.ttft_ms, slo)?;
            let n = f.requests.ttft_ms.count();
            let s = lang.pick(
                format!("The request log's TTFT {q} over {n} requests is {v:.0} ms, above {target}: the first token comes late. Nothing here says why yet."),
                format!("请求日志中 {n} 个请求的 TTFT {q} 为 {v:.0} ms，超过了{target}：首 token 来得太晚。这里还看不出原因。"),
            );
            (c, s, evidence)
        }
    };
    let (confidence, summary, evidence) = summary;
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "if requests wait in the engine's queue, the load is above what the replicas serve: add replicas or cap concurrency at the gateway",
                    "如果请求在引擎队列里等待，说明负载超过了副本的能力：加副本，或在网关限制并发",
                ),
                (
                    "if the prefill itself is slow or repeated, reuse the prompt (prefix caching, context shifting), chunk long prefills and keep the whole model on the GPU",
                    "如果是 prefill 本身慢或被重复执行，复用 prompt（前缀缓存、context shifting），对长 prefill 分块，并把整个模型放在 GPU 上",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the engine's log from the same minutes: its stats lines (Running / Waiting, KV usage) show queueing",
                    "贴出同一时间段的引擎日志：统计行（Running / Waiting、KV 使用率）能看出是否在排队",
                ),
                (
                    "paste the prompt lengths (tokens) next to these figures: TTFT proportional to the prompt at a normal prefill rate is not a fault",
                    "把这些数字对应的 prompt 长度（token 数）也贴出来：与 prompt 长度成正比、prefill 速度正常的 TTFT 不是故障",
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

    const RULE: RuleId = RuleId::TtftAboveTarget;

    /// A request log whose TTFT is 4 s for every request: the symptom, without a cause.
    #[test]
    fn fires_on_a_request_log_over_the_target() {
        let slow: String = (0..12)
            .map(|i| format!("{{\"request_id\":\"r{i}\",\"enqueue_time\":{t},\"first_token_time\":{ft},\"last_token_time\":{lt},\"finish_time\":{lt},\"output_tokens\":50}}\n", t = 100 + i * 10, ft = 104 + i * 10, lt = 106 + i * 10))
            .collect();
        let f = case(&[("requests.jsonl", &slow)]).snapshot(RULE, "request_log").unwrap();
        assert!(f.summary.contains("4000 ms"), "{}", f.summary);
        let r = case(&[("requests.jsonl", &slow)]).en;
        assert_ne!(r.verdict, crate::report::Verdict::Healthy);
        // The same log with 300 ms to first token: nothing over the target.
        let quick: String = (0..12)
            .map(|i| format!("{{\"request_id\":\"r{i}\",\"enqueue_time\":{t},\"first_token_time\":{t}.3,\"last_token_time\":{lt},\"finish_time\":{lt},\"output_tokens\":50}}\n", t = 100 + i * 10, lt = 102 + i * 10))
            .collect();
        assert!(case(&[("requests.jsonl", &quick)]).snapshot(RULE, "request_log_quick").is_none());
    }

    #[test]
    fn fires_on_a_key_value_block() {
        let f = case(&[("run.txt", fixture!("tables/lmdeploy_style_block.txt"))])
            .snapshot(RULE, "key_value_block")
            .unwrap();
        assert!(f.summary.contains("`ttft_ms.mean`"), "{}", f.summary);
    }

    #[test]
    fn fires_on_a_single_scrape() {
        let f = case(&[("metrics.prom", fixture!("tables/ttft_histogram_slow.prom"))])
            .snapshot(RULE, "single_scrape")
            .unwrap();
        assert!(f.summary.contains("--slo-ttft-ms"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_long_prompts_at_a_normal_rate() {
        assert!(
            case(&[("bench.txt", fixture!("tables/long_prompts_normal_rate.txt"))])
                .snapshot(RULE, "quiet_long_prompts")
                .is_none()
        );
    }

    #[test]
    fn quiet_when_decode_dominates_is_lower() {
        // Prefill and decode both slow, decode far longer: this finding ranks below TBT's.
        let r = case(&[("kobold.txt", fixture!("tables/decode_dominates.txt"))]).en;
        assert_eq!(r.verdict, crate::report::Verdict::TbtTail, "{:?}", r.findings);
    }
}
