//! Rule `ttft-grows-with-load`: across the rows of one pasted table, TTFT grows by an order of
//! magnitude while the time per token stays flat, or latency grows with concurrency while the
//! served request rate does not: requests queue.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::table::Row;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::TtftGrowsWithLoad,
        class: Class::TtftHigh,
        title: "Across the table's runs, TTFT grows while decoding stays flat: requests queue",
        detects: "Rows of one pasted table (or one harness's result blocks) where the typical TTFT grows at least 10× from the fastest row to the slowest and past half the TTFT target, while TPOT / ITL in the same rows stays within 1.5×; or where concurrency grows k× (k ≥ 2), the served requests per second stay within 1.25× and the typical request latency grows at least k/2×.",
        why: "Decode that stays flat shows the GPU is as fast as ever; a first token that arrives ten or a hundred times later shows requests waiting to be admitted — for a batch slot, for KV-cache blocks, behind one another. Latency proportional to concurrency at a flat request rate is the same queue seen from the client: the requests are served one at a time.",
        example: "`Mean TTFT` 196 ms → 3,098 → 49,929 → 144,074 ms as the output length doubles, `Mean TPOT` 18.2 → 18.0 ms.",
        fix: "Admit less than the server can hold (a concurrency cap at the gateway, a request rate below the measured throughput), or give it more room: more replicas, more KV cache (`--gpu-memory-utilization`, a shorter `--max-model-len`), a larger batch (`--max-num-seqs`, lmdeploy's `max_batch_size`), batching turned on.",
        zh: RuleText {
            title: "表格各行之间 TTFT 越来越大而 decode 不变：请求在排队",
            detects: "同一张粘贴表格（或同一压测工具的多个结果块）的各行中，典型 TTFT 从最快到最慢增长至少 10 倍且超过 TTFT 目标的一半，而同样这些行的 TPOT / ITL 变化不超过 1.5 倍；或者并发增长 k 倍（k ≥ 2），每秒完成的请求数变化不超过 1.25 倍，典型请求延迟增长至少 k/2 倍。",
            why: "decode 不变说明 GPU 一样快；首 token 晚了十倍百倍，说明请求在等待被接纳——等批次空位、等 KV 缓存块、一个接一个排队。请求速率不变而延迟与并发成正比，是从客户端看到的同一个队列：请求被逐个处理。",
            example: "输出长度每次翻倍时 `Mean TTFT` 从 196 ms → 3,098 → 49,929 → 144,074 ms，而 `Mean TPOT` 18.2 → 18.0 ms。",
            fix: "接纳的请求少于服务器能容纳的量（在网关限制并发，请求速率低于实测吞吐），或者给它更多空间：加副本、加 KV 缓存（`--gpu-memory-utilization`、更短的 `--max-model-len`）、更大的批（`--max-num-seqs`、lmdeploy 的 `max_batch_size`），打开批处理。",
        },
    },
    check,
};

/// TTFT growth across rows that makes a finding.
const TTFT_GROWTH: f64 = 10.0;
/// Per-token time may vary this much and still be "flat".
const FLAT: f64 = 1.5;

fn spread(rows: &[&Row], get: impl Fn(&Row) -> Option<f64>) -> Option<(f64, usize, usize)> {
    let vals: Vec<(usize, f64)> =
        rows.iter().enumerate().filter_map(|(i, r)| get(r).map(|v| (i, v))).collect();
    let (lo_i, lo) = vals.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let (hi_i, hi) = vals.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (vals.len() >= 2 && lo > 0.0).then_some((hi / lo, lo_i, hi_i))
}

/// The row's typical TTFT, unless a long prompt at a normal prefill rate explains it.
fn ttft_of(r: &Row) -> Option<f64> {
    r.typical("ttft_ms")
        .map(|(v, _)| v)
        .filter(|v| !super::ttft_above_target::long_prompt_at_normal_rate(r, *v))
}

fn tpot_of(r: &Row) -> Option<f64> {
    r.typical("tpot_ms").or(r.typical("itl_ms")).map(|(v, _)| v).or(r.decode_ms_per_token().map(|(v, _)| v))
}

fn axis(rows: &[&Row], lo: usize, hi: usize) -> Option<(&'static str, f64, f64)> {
    ["concurrency", "rate", "batch", "output_len", "input_len"]
        .into_iter()
        .find_map(|k| Some((k, rows[lo].get(k)?, rows[hi].get(k)?)).filter(|(_, a, b)| a != b))
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let half = f.slo.ttft_ms / 2.0;
    let mut best: Option<(f64, String, Vec<EvidenceLine>)> = None;
    for table in f.tables.tables() {
        if table.len() < 2 {
            continue;
        }
        // TTFT ×10 while decode stays flat.
        if let Some((g, lo, hi)) = spread(&table, ttft_of)
            && g >= TTFT_GROWTH
            && ttft_of(table[hi]).is_some_and(|v| v > half)
        {
            let decode = spread(&table, tpot_of);
            if decode.is_none_or(|(d, _, _)| d <= FLAT) {
                let (a, b) = (ttft_of(table[lo])?, ttft_of(table[hi])?);
                let flat = match (decode, lang) {
                    (Some((d, _, _)), Lang::En) => format!(" while the time per token varies only {d:.2}×"),
                    (Some((d, _, _)), Lang::Zh) => format!("，而每 token 时间只变化了 {d:.2} 倍"),
                    (None, _) => String::new(),
                };
                let along = match (axis(&table, lo, hi), lang) {
                    (Some((k, x, y)), Lang::En) => format!(" ({k} {x} → {y})"),
                    (Some((k, x, y)), Lang::Zh) => format!("（{k} {x} → {y}）"),
                    (None, _) => String::new(),
                };
                let s = lang.pick(
                    format!("Across the rows of one table TTFT grows {g:.0}× — {a:.0} ms to {b:.0} ms{along}{flat}: the GPU decodes as fast as ever, requests wait to be admitted."),
                    format!("同一张表的各行之间 TTFT 增长了 {g:.0} 倍——从 {a:.0} ms 到 {b:.0} ms{along}{flat}：GPU 解码一样快，请求在等待被接纳。"),
                );
                let mut ev: Vec<EvidenceLine> = Vec::new();
                for r in [table[lo], table[hi]] {
                    if let Some(l) = r.typical("ttft_ms").and_then(|(_, n)| r.line(&n).cloned())
                        && !ev.contains(&l)
                    {
                        ev.push(l);
                    }
                }
                let c = if decode.is_some() { 0.8 } else { 0.7 };
                if best.as_ref().is_none_or(|(bc, _, _)| c > *bc) {
                    best = Some((c, s, ev));
                }
            }
        }
        // Latency ∝ concurrency at a flat served rate: one request at a time.
        let with: Vec<&Row> = table
            .iter()
            .copied()
            .filter(|r| r.get("concurrency").is_some() && r.get("req_per_s").is_some())
            .collect();
        if let Some((k, lo, hi)) = spread(&with, |r| r.get("concurrency"))
            && k >= 2.0
        {
            let lat = |r: &Row| r.typical("ttft_ms").or(r.typical("e2e_ms"));
            let (r0, r1) = (with[lo].get("req_per_s")?, with[hi].get("req_per_s")?);
            if let (Some((l0, n0)), Some((l1, n1))) = (lat(with[lo]), lat(with[hi]))
                && r0 > 0.0
                && r1 / r0 <= 1.25
                && l1 / l0.max(1e-9) >= k / 2.0
            {
                let s = lang.pick(
                    format!("Concurrency went up {k:.0}× but the served rate stayed at {r0:.2} → {r1:.2} req/s and the latency grew {:.1}× ({l0:.0} → {l1:.0} ms, `{n1}`): requests are served one after another and queue behind each other.", l1 / l0),
                    format!("并发提高了 {k:.0} 倍，但每秒完成的请求数仍是 {r0:.2} → {r1:.2}，延迟增长了 {:.1} 倍（{l0:.0} → {l1:.0} ms，`{n1}`）：请求被逐个处理，彼此排队。", l1 / l0),
                );
                let mut ev: Vec<EvidenceLine> = Vec::new();
                for (r, n) in [(with[lo], &n0), (with[hi], &n1)] {
                    for l in [r.line("concurrency"), r.line(n)].into_iter().flatten() {
                        if !ev.contains(l) {
                            ev.push(l.clone());
                        }
                    }
                }
                if best.as_ref().is_none_or(|(bc, _, _)| 0.7 > *bc) {
                    best = Some((0.7, s, ev));
                }
            }
        }
    }
    let (confidence, summary, evidence) = best?;
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "keep the offered load below what was measured to be served: cap concurrency or the request rate at the gateway",
                    "让施加的负载低于实测能服务的量：在网关限制并发或请求速率",
                ),
                (
                    "give the server room to admit more: more replicas, more KV cache, a larger max batch (and batching switched on)",
                    "给服务器更多接纳空间：加副本、加 KV 缓存、调大最大批（并确认批处理已开启）",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the engine's log during the slow rows: a growing Waiting / #queue-req count confirms the queue",
                    "贴出慢的那几行对应时段的引擎日志：Waiting / #queue-req 持续增长就证实了排队",
                ),
                (
                    "paste the engine's settings (max_num_seqs / max_batch_size, KV cache size): the queue forms where they are reached",
                    "贴出引擎的设置（max_num_seqs / max_batch_size、KV 缓存大小）：达到这些上限的地方就开始排队",
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

    const RULE: RuleId = RuleId::TtftGrowsWithLoad;

    #[test]
    fn fires_when_ttft_grows_and_tpot_is_flat() {
        case(&[("sweep.md", fixture!("tables/ttft_sweep_flat_tpot.md"))])
            .snapshot(RULE, "ttft_sweep")
            .unwrap();
    }

    #[test]
    fn fires_when_latency_follows_concurrency() {
        case(&[("harness.log", fixture!("tables/no_batching_blocks.log"))])
            .snapshot(RULE, "no_batching")
            .unwrap();
    }

    #[test]
    fn quiet_when_tpot_grows_too() {
        assert!(
            case(&[("sweep.txt", fixture!("tables/sweep_everything_grows.txt"))])
                .snapshot(RULE, "quiet_everything_grows")
                .is_none()
        );
    }
}
