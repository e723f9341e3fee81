//! Rule `cpu-offload-split`: part of the model runs on the CPU, so every token waits for it.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};
use crate::text::number_after;

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::CpuOffloadSplit,
        class: Class::TbtTail,
        title: "Part of the model runs on the CPU",
        detects: "llama.cpp's `offloaded N/M layers to GPU` with N below M, Ollama's offload estimate with `layers.offload` below `layers.model`, and `ollama ps` showing a `CPU/GPU` split.",
        why: "llama.cpp-based servers (llama-server, Ollama) put as many layers on the GPU as fit and run the rest on the CPU. Each token passes through every layer, so the CPU layers set the pace: a 40 % CPU share can make decoding several times slower, with no error anywhere.",
        example: "`load_tensors: offloaded 27/81 layers to GPU`; `ollama ps` shows `52%/48% CPU/GPU`.",
        fix: "Fit the whole model on the GPU: a smaller quantisation or model, a shorter context (the KV cache competes with the layers), more GPUs, or fewer models loaded at once.",
        zh: RuleText {
            title: "模型有一部分跑在 CPU 上",
            detects: "llama.cpp 的 `offloaded N/M layers to GPU` 且 N 小于 M、Ollama 的 offload 估算里 `layers.offload` 小于 `layers.model`，以及 `ollama ps` 显示 `CPU/GPU` 分摊。",
            why: "基于 llama.cpp 的服务（llama-server、Ollama）把放得下的层放到 GPU 上，其余的在 CPU 上跑。每个 token 都要经过所有层，所以 CPU 上的层决定了速度：CPU 占 40 % 就可能让解码慢好几倍，而且哪里都不报错。",
            example: "`load_tensors: offloaded 27/81 layers to GPU`；`ollama ps` 显示 `52%/48% CPU/GPU`。",
            fix: "让整个模型都放进 GPU：更小的量化或模型、更短的上下文（KV 缓存和层抢显存）、更多 GPU，或者同时加载更少的模型。",
        },
    },
    check,
};

/// The layers on the GPU and in the model, as one line states them.
fn split(line: &str) -> Option<(f64, f64)> {
    if let Some(i) = line.find("offloaded ") {
        let rest = &line[i + "offloaded ".len()..];
        let (on, total) = rest.split_once('/')?;
        let total = total.split(|c: char| !c.is_ascii_digit()).next()?;
        return Some((on.trim().parse().ok()?, total.parse().ok()?));
    }
    if line.contains("layers.offload=") {
        return Some((number_after(line, "layers.offload=")?, number_after(line, "layers.model=")?));
    }
    // `ollama ps`: `52%/48% CPU/GPU` (CPU share first).
    if let Some(i) = line.find("% CPU/GPU") {
        let head = &line[..i];
        let gpu: f64 = head.rsplit(['/', ' ']).next()?.parse().ok()?;
        return Some((gpu, 100.0));
    }
    None
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let split_lines: Vec<(EvidenceLine, f64, f64)> = f
        .signals
        .lines_for(RULE.doc.id, 16)
        .into_iter()
        .filter_map(|e| {
            let (on, total) = split(&e.text)?;
            (total > 0.0 && on < total).then_some((e, on, total))
        })
        .collect();
    let (_, on, total) = split_lines.iter().min_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))?;
    let cpu_pct = (100.0 * (total - on) / total).round();
    let evidence = split_lines.iter().map(|(e, ..)| e.clone()).take(4).collect();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("Only {on} of {total} layers (or shares) are on the GPU: about {cpu_pct} % of the model runs on the CPU, which sets the pace of every token."),
            format!("只有 {on}/{total} 的层（或份额）在 GPU 上：约 {cpu_pct} % 的模型跑在 CPU 上，决定了每个 token 的速度。"),
        ),
        FindingBody {
            confidence: 0.85,
            evidence,
            remediation: texts(
                lang,
                &[
                    (
                        "fit the whole model on the GPU: a smaller quantisation or model, or a shorter context (`num_ctx`, `-c`)",
                        "让整个模型放进 GPU：更小的量化或模型，或者更短的上下文（`num_ctx`、`-c`）",
                    ),
                    (
                        "unload other models (Ollama keeps several loaded: `OLLAMA_MAX_LOADED_MODELS=1`) or add a GPU",
                        "卸载其他模型（Ollama 会同时加载多个：`OLLAMA_MAX_LOADED_MODELS=1`），或者增加 GPU",
                    ),
                ],
            ),
            next_checks: texts(
                lang,
                &[(
                    "compare the eval rate (tokens/s) of `ollama run --verbose` or the slot timings with and without the split",
                    "对比有分摊和没有分摊时 `ollama run --verbose` 或 slot 计时里的 eval rate（tokens/s）",
                )],
            ),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use super::split;
    use crate::rules::RuleId;

    #[test]
    fn reads_the_split() {
        assert_eq!(split("load_tensors: offloaded 27/81 layers to GPU"), Some((27.0, 81.0)));
        assert_eq!(
            split(
                "msg=offload library=cuda layers.requested=-1 layers.model=81 layers.offload=27 layers.split=\"\""
            ),
            Some((27.0, 81.0))
        );
        assert_eq!(
            split("llama3.3:70b    a6eb4748fd29    49 GB    52%/48% CPU/GPU    4096"),
            Some((48.0, 100.0))
        );
    }

    #[test]
    fn fires_on_a_partial_offload_only() {
        let f = case(&[("ollama.log", "load_tensors: offloaded 27/81 layers to GPU\n")])
            .snapshot(RuleId::CpuOffloadSplit, "fires_on_a_partial_offload_only")
            .expect("27 of 81 layers");
        assert!(f.summary.contains("27 of 81"), "{}", f.summary);
        assert!(
            case(&[("ollama.log", "load_tensors: offloaded 81/81 layers to GPU\n")])
                .snapshot(RuleId::CpuOffloadSplit, "quiet_on_a_full_offload")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_tbt_partial_offload_slow_eval: [("tbt-partial-offload-slow-eval.log", fixture!("incidents/llama-server/tbt-partial-offload-slow-eval.log"))],
        corpus_tbt_head_llama_server_partial_offload: [("tbt-head-llama-server-partial-offload.log", fixture!("incidents/ollama/tbt-head-llama-server-partial-offload.log"))],
    }
}
