//! Rule `decode-rate-collapses`: the decode rate in a pasted table falls steeply — with the
//! context length, between configurations of one model, or far below what reading the weights
//! once per token allows on a GPU.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::table::Row;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::DecodeRateCollapses,
        class: Class::TbtTail,
        title: "The decode rate in the table collapses",
        detects: "In one pasted table: a decode rate (words/s, output tok/s, one stream's tok/s) that falls at least 4× from the shortest prompt length to the longest; llama-bench `tg` rows of one model (same name and size) whose rates differ at least 2× between configurations (`ngl`, `fa`, backend); or a fully offloaded llama-bench run (`ngl` ≥ 99 on a GPU backend) whose `tg` rate × model size is under 40 GB/s — decode reads every weight once per token, and any GPU reads far faster.",
        why: "Each decoded token reads the whole model and the sequence's KV cache, so the decode rate is set by memory bandwidth: it should barely move with the prompt until the KV cache rivals the weights, and a GPU should turn hundreds of GB/s into tokens. A rate that collapses shows decode doing something else — attention over long contexts, layers split onto the CPU, a broken kernel or build.",
        example: "`| pp512 | 1443.02 ± 4.16 |` but `| tg128 | 5.17 ± 0.03 |` for a 5.07 GiB model at `ngl 99` (≈ 28 GB/s of weights read); `words/s` 5,364 → 273 from prompts of 0–100 to 8,000+ tokens.",
        fix: "Compare with a known-good build or backend and keep the whole model on the GPU (`-ngl 99`); for long contexts use an attention kernel made for them (flash attention, paged KV), a quantised KV cache, or cap the context per request.",
        zh: RuleText {
            title: "表格里的 decode 速度断崖式下降",
            detects: "同一张粘贴表格中：decode 速度（words/s、输出 tok/s、单流 tok/s）从最短 prompt 到最长 prompt 下降至少 4 倍；同一模型（名字和大小相同）的 llama-bench `tg` 行在不同配置（`ngl`、`fa`、后端）之间相差至少 2 倍；或者完全卸载到 GPU（`ngl` ≥ 99、GPU 后端）的 llama-bench 的 `tg` 速度 × 模型大小低于 40 GB/s——decode 每个 token 都要把权重读一遍，任何 GPU 都读得快得多。",
            why: "每解码一个 token 都要读取整个模型和该序列的 KV 缓存，所以 decode 速度由显存带宽决定：在 KV 缓存大到与权重相当之前，它几乎不随 prompt 变化，而 GPU 应该能把每秒数百 GB 的带宽变成 token。速度断崖说明 decode 在做别的事——长上下文的 attention、被拆到 CPU 上的层、有问题的 kernel 或版本。",
            example: "5.07 GiB 的模型在 `ngl 99` 下 `| pp512 | 1443.02 ± 4.16 |` 而 `| tg128 | 5.17 ± 0.03 |`（每秒只读了约 28 GB 权重）；prompt 从 0–100 到 8,000+ token，`words/s` 从 5,364 降到 273。",
            fix: "与已知正常的版本或后端对比，并把整个模型放在 GPU 上（`-ngl 99`）；长上下文使用为其设计的 attention kernel（flash attention、分页 KV）、量化 KV 缓存，或限制单个请求的上下文长度。",
        },
    },
    check,
};

/// Fall of the decode rate with prompt length that makes a finding.
const CONTEXT_FALL: f64 = 4.0;
/// Difference between configurations of one model that makes a finding.
const CONFIG_FALL: f64 = 2.0;
/// Weights read per second (GB/s) below which a fully offloaded GPU decode has collapsed.
const MIN_GPU_GBPS: f64 = 40.0;
const GPU_BACKENDS: &[&str] = &["CUDA", "ROCm", "HIP", "Vulkan", "Metal", "SYCL", "MUSA", "CANN"];

fn rate(r: &Row) -> Option<(f64, &'static str)> {
    r.first(&["decode_tps", "tg_tps", "words_per_s", "output_tps"])
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let mut best: Option<(f64, String, Vec<EvidenceLine>)> = None;
    let mut keep = |c: f64, s: String, ev: Vec<EvidenceLine>| {
        if best.as_ref().is_none_or(|(bc, _, _)| c > *bc) {
            best = Some((c, s, ev));
        }
    };
    for table in f.tables.tables() {
        // With the prompt length.
        let mut by_len: Vec<(&Row, f64, f64, &'static str)> =
            table.iter().filter_map(|r| Some((*r, r.get("input_len")?, rate(r)?.0, rate(r)?.1))).collect();
        triage_base::sort::sort_by(&mut by_len, |a, b| a.1.total_cmp(&b.1));
        if by_len.len() >= 3 {
            let (first, last) = (by_len[0], by_len[by_len.len() - 1]);
            let peak = by_len.iter().map(|x| x.2).fold(0.0, f64::max);
            if first.3 == last.3 && last.2 > 0.0 && peak / last.2 >= CONTEXT_FALL && first.1 < last.1 {
                let s = lang.pick(
                    format!("The decode rate (`{}`) falls {:.0}× with the prompt length: {peak:.0} at the short prompts, {:.0} at {:.0} tokens — each step slows as the context grows.", last.3, peak / last.2, last.2, last.1),
                    format!("decode 速度（`{}`）随 prompt 长度下降了 {:.0} 倍：短 prompt 时 {peak:.0}，{:.0} token 时只有 {:.0}——上下文越长，每一步越慢。", last.3, peak / last.2, last.1, last.2),
                );
                let ev = [first.0, last.0].iter().filter_map(|r| r.line(last.3).cloned()).collect::<Vec<_>>();
                let mut ev2: Vec<EvidenceLine> =
                    by_len.first().and_then(|x| x.0.line("input_len").cloned()).into_iter().collect();
                for e in ev {
                    if !ev2.contains(&e) {
                        ev2.push(e);
                    }
                }
                keep(0.7, s, ev2);
            }
        }
        // llama-bench: tg between configurations of one model, and against the GPU's bandwidth.
        let tg: Vec<&Row> = table.iter().copied().filter(|r| r.get("tg_tps").is_some()).collect();
        for (i, a) in tg.iter().enumerate() {
            let model = |r: &Row| r.subject.split(" | ").next().map(str::to_owned);
            for b in &tg[i + 1..] {
                let (ra, rb) = (a.get("tg_tps")?, b.get("tg_tps")?);
                if model(a) != model(b)
                    || a.get("model_gib") != b.get("model_gib")
                    || a.get("tg_n") != b.get("tg_n")
                {
                    continue;
                }
                let (fast, slow, rf, rs) = if ra >= rb { (a, b, ra, rb) } else { (b, a, rb, ra) };
                if rs > 0.0 && rf / rs >= CONFIG_FALL {
                    let s = lang.pick(
                        format!("Decode of one model differs {:.1}× between configurations: tg {rf:.2} t/s for `{}` but {rs:.2} t/s for `{}` — the slower setup costs {:.0} ms a token.", rf / rs, fast.subject, slow.subject, 1000.0 / rs),
                        format!("同一模型的 decode 在不同配置间相差 {:.1} 倍：`{}` 的 tg 为 {rf:.2} t/s，而 `{}` 只有 {rs:.2} t/s——慢的配置每 token 要 {:.0} ms。", rf / rs, fast.subject, slow.subject, 1000.0 / rs),
                    );
                    let ev =
                        [fast.line("tg_tps"), slow.line("tg_tps")].into_iter().flatten().cloned().collect();
                    keep(0.75, s, ev);
                }
            }
            let gpu = GPU_BACKENDS.iter().any(|g| a.subject.split(" | ").any(|c| c.eq_ignore_ascii_case(g)));
            let full = a.get("ngl").is_some_and(|n| n >= 99.0);
            if let (true, true, Some(gib), Some(r)) = (gpu, full, a.get("model_gib"), a.get("tg_tps")) {
                let gbps = r * gib * 1.073_741_824;
                if gbps < MIN_GPU_GBPS {
                    let pp = tg_partner(&table, a);
                    let pp_text = match (pp, lang) {
                        (Some(p), Lang::En) => format!(" while prefill runs at {p:.0} t/s"),
                        (Some(p), Lang::Zh) => format!("，而 prefill 有 {p:.0} t/s"),
                        (None, _) => String::new(),
                    };
                    let s = lang.pick(
                        format!("Fully offloaded, the model ({gib:.2} GiB) decodes at only {r:.2} t/s{pp_text}: about {gbps:.0} GB/s of weights read, far below any GPU's memory bandwidth — decode has collapsed on `{}`.", a.subject),
                        format!("完全卸载到 GPU 时，模型（{gib:.2} GiB）decode 只有 {r:.2} t/s{pp_text}：每秒只读了约 {gbps:.0} GB 权重，远低于任何 GPU 的显存带宽——`{}` 上的 decode 已经崩了。", a.subject),
                    );
                    let mut ev: Vec<EvidenceLine> = a.line("tg_tps").cloned().into_iter().collect();
                    if let Some(p) =
                        table.iter().find(|r| r.get("pp_tps").is_some() && r.subject == a.subject)
                    {
                        ev.extend(p.line("pp_tps").cloned());
                    }
                    keep(0.75, s, ev);
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
                    "keep the whole model on the GPU (-ngl 99) and compare with a known-good build or backend",
                    "把整个模型放在 GPU 上（-ngl 99），并与已知正常的版本或后端对比",
                ),
                (
                    "for long contexts, use an attention kernel made for them (flash attention, paged KV) or cap the context per request",
                    "长上下文使用为其设计的 attention kernel（flash attention、分页 KV），或限制单个请求的上下文长度",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the same benchmark with another build or backend (and the GPU it ran on): a rate that comes back names the regression",
                    "贴出同一压测在另一个版本或后端上的结果（以及所用 GPU）：速度恢复了，就能定位到回归",
                ),
                (
                    "paste the load log (layers offloaded, KV cache type, flash attention on or off)",
                    "贴出加载日志（卸载了多少层、KV 缓存类型、flash attention 是否开启）",
                ),
            ]),
        },
    ))
}

/// The prefill rate of the row that shares `tg`'s configuration.
fn tg_partner(table: &[&Row], tg: &Row) -> Option<f64> {
    table.iter().find(|r| r.subject == tg.subject).and_then(|r| r.get("pp_tps"))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const RULE: RuleId = RuleId::DecodeRateCollapses;

    #[test]
    fn fires_on_tg_far_below_bandwidth() {
        case(&[("bench.md", fixture!("tables/llama_bench_tg_collapse.md"))])
            .snapshot(RULE, "tg_collapse")
            .unwrap();
    }

    #[test]
    fn fires_on_rate_falling_with_context() {
        case(&[("sheet.txt", fixture!("tables/rate_by_prompt_length.txt"))])
            .snapshot(RULE, "rate_by_context")
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
