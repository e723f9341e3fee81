//! Rule `client-calls-metrics-port`: the client talks to the port the server opened for its
//! metrics, not for inference.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ClientCallsMetricsPort,
        class: Class::Config,
        title: "The client calls the metrics port",
        detects: "A server's start-up lines announcing its ports — `Started GRPCInferenceService at 0.0.0.0:8001`, `Started HTTPService at 0.0.0.0:8000`, `Started Metrics Service at 0.0.0.0:8002` (Triton), any `… metrics … on host:port` — and a client command or setting in the same paste (`-u localhost:8002`, `--url`, `base_url`, `api_base`, `--endpoint`) whose port is the metrics one.",
        why: "A metrics port answers Prometheus scrapes, not inference: a client pointed there gets protocol errors, empty replies or 404s, and it looks like the server is broken while it serves fine on its other ports.",
        example: "`Started Metrics Service at 0.0.0.0:8002` and `python end_to_end_test.py --protocol grpc -u localhost:8002`, then a gRPC error.",
        fix: "Point the client at the inference port the server announced for its protocol (Triton: HTTP 8000, gRPC 8001 by default); keep the metrics port for Prometheus.",
        zh: RuleText {
            title: "客户端调用了 metrics 端口",
            detects: "服务端启动时宣告自己端口的行——`Started GRPCInferenceService at 0.0.0.0:8001`、`Started HTTPService at 0.0.0.0:8000`、`Started Metrics Service at 0.0.0.0:8002`（Triton），以及任何 `… metrics … on host:port`——同一份粘贴里还有客户端命令或设置（`-u localhost:8002`、`--url`、`base_url`、`api_base`、`--endpoint`），其端口正是 metrics 端口。",
            why: "metrics 端口只回答 Prometheus 抓取，不做推理：指向它的客户端会得到协议错误、空响应或 404，看起来像服务坏了，其实服务在其他端口上工作正常。",
            example: "`Started Metrics Service at 0.0.0.0:8002`，而客户端执行 `python end_to_end_test.py --protocol grpc -u localhost:8002`，随后报 gRPC 错误。",
            fix: "让客户端指向服务端为其协议宣告的推理端口（Triton 默认 HTTP 8000、gRPC 8001）；metrics 端口留给 Prometheus。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let ports = &f.signals.ports;
    let (port, metrics_line) =
        ports.announced.iter().find(|(_, metrics, _)| *metrics).map(|(p, _, e)| (*p, e))?;
    let (_, client_line) = ports.client.iter().find(|(p, _)| *p == port)?;
    let serving: Vec<String> = ports
        .announced
        .iter()
        .filter(|(p, metrics, _)| !*metrics && *p != port)
        .map(|(p, _, _)| p.to_string())
        .collect();
    let others = match (serving.is_empty(), lang) {
        (true, _) => String::new(),
        (false, Lang::En) => format!("; it serves inference on {}", serving.join(", ")),
        (false, Lang::Zh) => format!("；它在 {} 上提供推理", serving.join("、")),
    };
    // A client error in the paste makes it surer: the call did fail.
    let failed = !f.signals.blocks.is_empty();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "The client calls port {port} (line {}), which the server opened for its metrics (line {}){others}.",
                client_line.line, metrics_line.line
            ),
            format!(
                "客户端调用的是端口 {port}（第 {} 行），而服务端把这个端口开给了 metrics（第 {} 行）{others}。",
                client_line.line, metrics_line.line
            ),
        ),
        FindingBody {
            confidence: if failed { 0.75 } else { 0.55 },
            evidence: vec![metrics_line.clone(), client_line.clone()],
            remediation: texts(
                lang,
                &[(
                    "point the client at the inference port the server announced for its protocol (Triton: HTTP 8000, gRPC 8001 by default); the metrics port is for Prometheus",
                    "让客户端指向服务端为其协议宣告的推理端口（Triton 默认 HTTP 8000、gRPC 8001）；metrics 端口是给 Prometheus 的",
                )],
            ),
            next_checks: texts(
                lang,
                &[(
                    "`curl -s host:PORT/v2/health/ready` (Triton) or `/v1/models` on the port you switch to",
                    "对换过去的端口执行 `curl -s host:PORT/v2/health/ready`（Triton）或 `/v1/models`",
                )],
            ),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const SERVER: &str = "I1118 07:23:26.676895 28532 grpc_server.cc:2451] Started GRPCInferenceService at 0.0.0.0:8001\nI1118 07:23:26.677120 28532 http_server.cc:3558] Started HTTPService at 0.0.0.0:8000\nI1118 07:23:26.732376 28532 http_server.cc:187] Started Metrics Service at 0.0.0.0:8002\n";

    #[test]
    fn fires_when_the_client_calls_the_metrics_port() {
        let client = "$ python client.py --protocol grpc -u localhost:8002\nTraceback (most recent call last):\n  File \"client.py\", line 3, in <module>\ntritonclient.utils.InferenceServerException: [StatusCode.UNAVAILABLE] failed to connect to all addresses\n";
        let f = case(&[("server.log", SERVER), ("client.txt", client)])
            .snapshot(RuleId::ClientCallsMetricsPort, "grpc")
            .unwrap();
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_when_the_client_calls_an_inference_port() {
        let client = "$ python client.py --protocol grpc -u localhost:8001\n";
        assert!(
            case(&[("server.log", SERVER), ("client.txt", client)])
                .fired(RuleId::ClientCallsMetricsPort)
                .is_none()
        );
    }
}
