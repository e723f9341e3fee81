//! What the estimate could not answer, and what would answer it (`triage.kv/v1`'s `missing`).
//!
//! A `config.json` may lack fields that only some figures need: without a context length
//! (`max_position_embeddings` …) there is no default `max_model_len`; without `vocab_size` or
//! `intermediate_size` the weights and the activation peak cannot be estimated, so the KV
//! memory a GPU budget leaves is unknown. The estimate still answers everything else (bytes per
//! token, per layer, per rank, blocks per request …); each quantity it cannot compute is one
//! [`Missing`] entry naming the report fields left `null` because of it and the flags or
//! config fields that would settle it.

use serde::Serialize;
use triage_base::lang::Lang;

/// One unknown quantity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// What is unknown, by its place in the report: `max_model_len` (`settings.max_model_len`),
    /// `concurrency_len`, `budget.weights_bytes`, `budget.activation_bytes`,
    /// `available_kv_bytes`.
    pub figure: &'static str,
    /// Each entry alone settles it: a flag (`--max-model-len`), or the config fields to add
    /// (`config.vocab_size`; several joined by ` + ` are needed together).
    pub settle_with: Vec<String>,
    /// Other `missing` figures that, once every one of them is known, settle this one too: one
    /// more way, besides `settle_with` (the KV memory of a GPU budget follows from its weights
    /// and activation terms together).
    pub follows_from: Vec<&'static str>,
    /// The report's fields that are `null` because this is unknown (JSON paths: `tokens`,
    /// `settings.max_model_len`, `need.fits`, `reconcile` …).
    pub fields: Vec<&'static str>,
    /// Why it is unknown, in the report's language.
    pub why: String,
}

/// `config.a + config.b` for the fields a figure lacks (empty when none is named).
pub fn config_fields(fields: &[&str]) -> Option<String> {
    (!fields.is_empty()).then(|| fields.iter().map(|f| format!("config.{f}")).collect::<Vec<_>>().join(" + "))
}

fn listed(fields: &[&str]) -> String {
    fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
}

/// No `--max-model-len` and no context length in the config.
pub fn max_model_len(lang: Lang, fields: Vec<&'static str>) -> Missing {
    Missing {
        figure: "max_model_len",
        settle_with: vec!["--max-model-len".to_owned(), "config.max_position_embeddings".to_owned()],
        follows_from: Vec::new(),
        fields,
        why: lang
            .pick(
                "the model's context length is unknown (config.json has no `max_position_embeddings`, nor \
                 n_positions, max_seq_len, seq_length …) and --max-model-len was not given, so vLLM's default \
                 max_model_len cannot be derived",
                "模型的上下文长度未知（config.json 中没有 `max_position_embeddings`，也没有 n_positions、\
                 max_seq_len、seq_length 等），也没有给 --max-model-len，推不出 vLLM 默认的 max_model_len",
            )
            .to_owned(),
    }
}

/// No `--at-len`, and `max_model_len` (its default) is unknown.
pub fn concurrency_len(lang: Lang, fields: Vec<&'static str>) -> Missing {
    Missing {
        figure: "concurrency_len",
        settle_with: vec![
            "--at-len".to_owned(),
            "--max-model-len".to_owned(),
            "config.max_position_embeddings".to_owned(),
        ],
        follows_from: Vec::new(),
        fields,
        why: lang
            .pick(
                "concurrency is measured at --at-len, else at max_model_len, which is unknown",
                "并发按 --at-len 计算，未给时按 max_model_len 计算，而 max_model_len 未知",
            )
            .to_owned(),
    }
}

/// The weights term of a GPU budget: no parameter count.
pub fn weights(lang: Lang, needs: &[&'static str], fields: Vec<&'static str>) -> Missing {
    let mut settle_with = vec!["--weights-gib".to_owned(), "--params-b".to_owned()];
    settle_with.extend(config_fields(needs));
    let why = if needs.is_empty() {
        lang.pick(
            "the weights cannot be estimated: the parameter count is out of range".to_owned(),
            "无法估算权重：参数量超出范围".to_owned(),
        )
    } else {
        let f = listed(needs);
        lang.pick(
            format!("the weights cannot be estimated: config.json has no {f} to count the parameters"),
            format!("无法估算权重：config.json 中没有 {f}，无法统计参数量"),
        )
    };
    Missing { figure: "budget.weights_bytes", settle_with, follows_from: Vec::new(), fields, why }
}

/// The activation term of a GPU budget: no MLP or vocabulary size.
pub fn activation(lang: Lang, needs: &[&'static str], fields: Vec<&'static str>) -> Missing {
    let mut settle_with = vec!["--activation-gib".to_owned()];
    settle_with.extend(config_fields(needs));
    let f = listed(needs);
    Missing {
        figure: "budget.activation_bytes",
        settle_with,
        follows_from: Vec::new(),
        fields,
        why: lang.pick(
            format!(
                "the activation peak cannot be estimated: config.json has no {f} (vLLM logs the peak as \
                 \"PyTorch activation peak memory takes …\")"
            ),
            format!("无法估算激活峰值：config.json 中没有 {f}（vLLM 日志中的 \"PyTorch activation peak memory takes …\" 即此值）"),
        ),
    }
}

/// The KV memory of a GPU budget, when one of its terms is unknown.
pub fn available(lang: Lang, follows_from: Vec<&'static str>, fields: Vec<&'static str>) -> Missing {
    Missing {
        figure: "available_kv_bytes",
        settle_with: vec!["--available-kv-gib".to_owned()],
        follows_from,
        fields,
        why: lang
            .pick(
                "the KV memory per GPU is GPU memory × gpu_memory_utilization − weights − activation peak − \
                 non-torch memory, and a term is unknown",
                "每张 GPU 的 KV 显存 = GPU 显存 × gpu_memory_utilization − 权重 − 激活峰值 − 非 torch 显存，\
                 其中有一项未知",
            )
            .to_owned(),
    }
}

/// One line per entry for a person: the figure, why, and what settles it.
pub fn describe_in(m: &Missing, lang: Lang) -> String {
    let mut ways = m.settle_with.clone();
    if !m.follows_from.is_empty() {
        let all = m.follows_from.join(lang.pick(" and ", " 和 "));
        ways.push(lang.pick(format!("knowing {all}"), format!("先确定 {all}")));
    }
    let ways = match ways.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => {
            format!("{} {} {last}", rest.join(lang.pick(", ", "、")), lang.pick("or", "或"))
        }
    };
    let (fig, why) = (m.figure, &m.why);
    lang.pick(
        format!("{fig}: {why} — settle with {ways}"),
        format!("{fig}：{why}——以下任一方式可确定：{ways}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use triage_base::lang::has_cjk;

    #[test]
    fn every_entry_reads_in_both_languages_with_the_same_names() {
        let needs = ["vocab_size", "intermediate_size"];
        let all = |lang| {
            vec![
                max_model_len(lang, vec!["tokens"]),
                concurrency_len(lang, vec!["max_concurrency"]),
                weights(lang, &needs, vec!["budget.weights_bytes"]),
                weights(lang, &[], vec!["budget.weights_bytes"]),
                activation(lang, &needs[..1], vec!["budget.activation_bytes"]),
                available(lang, vec!["budget.weights_bytes", "budget.activation_bytes"], vec!["blocks"]),
            ]
        };
        for (en, zh) in all(Lang::En).into_iter().zip(all(Lang::Zh)) {
            assert_eq!((en.figure, &en.settle_with, &en.fields), (zh.figure, &zh.settle_with, &zh.fields));
            let (e, z) = (describe_in(&en, Lang::En), describe_in(&zh, Lang::Zh));
            assert!(!has_cjk(&e) && has_cjk(&z), "{e}\n{z}");
            let words = |s: &str| {
                let mut v: Vec<String> = s
                    .split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
                    .filter(|w| w.starts_with("--") || w.starts_with("config.") || w.contains('_'))
                    .map(str::to_owned)
                    .collect();
                v.sort();
                v.dedup();
                v
            };
            assert_eq!(words(&e), words(&z), "\n{e}\n{z}");
        }
        let w = weights(Lang::En, &needs, Vec::new());
        assert_eq!(
            w.settle_with,
            ["--weights-gib", "--params-b", "config.vocab_size + config.intermediate_size"]
        );
        let a = available(Lang::En, vec!["budget.weights_bytes", "budget.activation_bytes"], Vec::new());
        let d = describe_in(&a, Lang::En);
        assert!(
            d.ends_with("--available-kv-gib or knowing budget.weights_bytes and budget.activation_bytes"),
            "{d}"
        );
        assert!(
            describe_in(&w, Lang::En)
                .ends_with("--weights-gib, --params-b or config.vocab_size + config.intermediate_size")
        );
    }
}
