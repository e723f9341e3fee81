//! Rule `request-exceeds-build-limits`: requests ask for more than the engine was built for.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::RequestExceedsBuildLimits,
        class: Class::Config,
        title: "Requests ask for more than the engine was built for",
        detects: "TensorRT-LLM's `sampling_params's beam_width (N) should not exceed max_beam_width (M)`.",
        why: "A TensorRT engine is compiled with fixed limits (beam width, batch size, sequence lengths). A request beyond them is refused, however idle the server is.",
        example: "`ValueError: sampling_params's beam_width (4) should not exceed max_beam_width (1)`",
        fix: "Ask for what the engine was built for (beam width 1), or rebuild the engine with the larger limit (`trtllm-build --max_beam_width`).",
        zh: RuleText {
            title: "请求超出了引擎构建时的上限",
            detects: "TensorRT-LLM 的 `sampling_params's beam_width (N) should not exceed max_beam_width (M)`。",
            why: "TensorRT 引擎编译时就定下了上限（beam 宽度、批大小、序列长度）。超出的请求会被拒绝，不管服务多空闲。",
            example: "日志里的一行：`ValueError: sampling_params's beam_width (4) should not exceed max_beam_width (1)`",
            fix: "按引擎构建时的上限请求（beam 宽度 1），或者用更大的上限重新构建引擎（`trtllm-build --max_beam_width`）。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.85,
            summary: |n| {
                lang.pick(
                    format!("{n} request(s) were refused for asking more than the engine was built for."),
                    format!("有 {n} 个请求因为超出引擎构建时的上限被拒绝。"),
                )
            },
            remediation: &[
                (
                    "send requests within the built limits (beam width, lengths)",
                    "按构建时的上限发送请求（beam 宽度、长度）",
                ),
                (
                    "or rebuild the engine with larger limits (`trtllm-build --max_beam_width`)",
                    "或者用更大的上限重新构建引擎（`trtllm-build --max_beam_width`）",
                ),
            ],
            next_checks: &[(
                "read the engine's build config (`config.json` next to the engine) for its limits",
                "查看引擎的构建配置（引擎旁边的 `config.json`）里的上限",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        beam_width_above_the_build: [("trtllm.log", "ValueError: sampling_params's beam_width (4) should not exceed max_beam_width (1)\n")],
        quiet_on_the_build_settings: [("trtllm.log", "[03/04/2025-10:00:01] [TRT-LLM] [I] max_beam_width=1\n")],
    }
}
