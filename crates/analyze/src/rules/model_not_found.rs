//! Rule `model-not-found`: requests name a model the server does not serve.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ModelNotFound,
        class: Class::Config,
        title: "The client asks for a model the server does not serve",
        detects: "404 answers saying `The model … does not exist` (vLLM, OpenAI), `model_not_found` error codes, and the SDKs' `NotFoundError` around them.",
        why: "OpenAI-compatible servers serve models under the name they were started with (`--served-model-name`, else the path given to `--model`). A client that sends another name gets a 404 on every request: throughput is zero, yet the engine is idle and healthy.",
        example: "A 404 body from vLLM: `{\"object\":\"error\",\"message\":\"The model 'llama-3-8b' does not exist.\",\"type\":\"NotFoundError\",\"code\":404}`",
        fix: "Send the name `GET /v1/models` lists, or start the server with `--served-model-name` set to the name clients use (it takes several names).",
        zh: RuleText {
            title: "客户端请求的模型在服务端不存在",
            detects: "404 响应里写着 `The model … does not exist`（vLLM、OpenAI）、`model_not_found` 错误码，以及 SDK 围绕它抛出的 `NotFoundError`。",
            why: "OpenAI 兼容服务只用启动时的名字提供模型（`--served-model-name`，没有设置时就是 `--model` 给的路径）。客户端发送别的名字，每个请求都会收到 404：吞吐为零，而引擎空闲、运行正常。",
            example: "vLLM 返回的 404 响应体：`{\"object\":\"error\",\"message\":\"The model 'llama-3-8b' does not exist.\",\"type\":\"NotFoundError\",\"code\":404}`",
            fix: "发送 `GET /v1/models` 列出的名字，或者用 `--served-model-name` 启动服务，设成客户端使用的名字（可以设置多个）。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.9,
            summary: |n| {
                lang.pick(
                    format!("{n} answer(s) say the requested model does not exist: the client's model name does not match what the server serves."),
                    format!("有 {n} 个响应说请求的模型不存在：客户端用的模型名和服务端提供的不一致。"),
                )
            },
            remediation: &[
                (
                    "set the client's model to a name from `curl $BASE/v1/models`",
                    "把客户端的 model 改成 `curl $BASE/v1/models` 列出的名字",
                ),
                (
                    "or start the server with `--served-model-name NAME` (vLLM, SGLang) matching the clients",
                    "或者启动服务时用 `--served-model-name NAME`（vLLM、SGLang），与客户端一致",
                ),
            ],
            next_checks: &[(
                "compare the model name in the failing request with the `id` fields of `GET /v1/models` (case, organisation prefix, version suffix)",
                "对比失败请求中的模型名与 `GET /v1/models` 返回的 `id` 字段（大小写、组织前缀、版本后缀）",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_a_404_body() {
        let body = r#"{"object":"error","message":"The model `llama-3-8b` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
        assert!(case(&[("curl.txt", body)]).snapshot(RuleId::ModelNotFound, "fires_on_a_404_body").is_some());
    }

    #[test]
    fn other_things_that_do_not_exist_are_not_models() {
        assert!(
            case(&[("x.log", "ERROR path /data/x does not exist\n")])
                .snapshot(RuleId::ModelNotFound, "other_things_that_do_not_exist_are_not_models")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_config_vllm_bench_all_404: [("config-vllm-bench-all-404.txt", fixture!("incidents/bench/config-vllm-bench-all-404.txt"))],
        corpus_config_curl_404_model: [("config-curl-404-model.txt", fixture!("incidents/clients/config-curl-404-model.txt"))],
    }
}
