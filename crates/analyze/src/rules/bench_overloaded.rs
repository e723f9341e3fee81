//! Rule `bench-overloaded`: a benchmark sent requests faster than the server finished them.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::BenchOverloaded,
        class: Class::TtftHigh,
        title: "The benchmark offered more requests than the server can finish",
        detects: "A benchmark whose configured request rate (`Request rate configured (RPS)`, `Traffic request rate`, `--request-rate`, guidellm's `constant@R`) is at least 1.2× the request throughput it measured.",
        why: "When requests arrive faster than they complete, the difference waits in a queue that grows for the whole run: TTFT climbs from the first minute to the last and its tail measures the run's length, not the server. The throughput figure is the server's capacity at this shape of request.",
        example: "`Request rate configured (RPS): 40.00` with `Request throughput (req/s): 11.21` and a TTFT median of 14 s.",
        fix: "Read the measured throughput as the replica's capacity; benchmark below it (a rate sweep shows where TTFT bends), and size the fleet so peak traffic stays under ~80 % of it.",
        zh: RuleText {
            title: "压测发出的请求多于服务端能完成的",
            detects: "压测中配置的请求速率（`Request rate configured (RPS)`、`Traffic request rate`、`--request-rate`、guidellm 的 `constant@R`）至少是它实测请求吞吐的 1.2 倍。",
            why: "请求到达得比完成得快，差额就在队列里等着，而且整个压测期间队列一直在增长：TTFT 从第一分钟涨到最后一分钟，它的长尾反映的是压测时长，而不是服务本身。实测吞吐就是这种请求形态下服务的容量。",
            example: "`Request rate configured (RPS): 40.00`，而 `Request throughput (req/s): 11.21`，TTFT 中位数 14 s。",
            fix: "把实测吞吐当作单副本的容量；在它以下做压测（做一次速率扫描，看 TTFT 在哪里拐弯），并按峰值流量不超过容量的约 80% 来规划集群规模。",
        },
    },
    check,
};

const FACTOR: f64 = 1.2;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let cli = f.signals.requested_rate.as_ref();
    for b in &f.bench {
        let Some(done) = b.figures.get("request_throughput").copied().filter(|v| *v > 0.0) else { continue };
        let (asked, asked_line) = match (b.requested_rate(), cli) {
            (Some(r), _) => {
                (r, b.lines.get("request_rate").cloned().or_else(|| b.line("request_throughput")))
            }
            (None, Some((r, e))) => (*r, Some(e.clone())),
            (None, None) => continue,
        };
        if !asked.is_finite() || asked < FACTOR * done {
            continue;
        }
        let ttft = b.middle("ttft_ms");
        let wait = match (ttft, lang) {
            (Some((t, name)), Lang::En) => {
                format!(" The TTFT {name} is {:.1} s: time spent in the queue.", t / 1e3)
            }
            (Some((t, name)), Lang::Zh) => format!("TTFT {name} 为 {:.1} s：都花在排队上了。", t / 1e3),
            (None, _) => String::new(),
        };
        let mut evidence: Vec<EvidenceLine> = asked_line.into_iter().collect();
        evidence.extend(b.line("request_throughput"));
        if let Some((_, name)) = ttft {
            evidence.extend(b.lines.get(&format!("ttft_ms.{name}")).cloned());
        }
        evidence.dedup();
        return Some(RULE.doc.finding(
            lang,
            lang.pick(
                format!("The benchmark asked for {asked:.1} requests/s but the server finished {done:.2}/s ({:.1}× fewer): the queue grew for the whole run.{wait}", asked / done),
                format!("压测要求每秒 {asked:.1} 个请求，服务端每秒只完成 {done:.2} 个（少了 {:.1} 倍）：整个压测期间队列一直在增长。{wait}", asked / done),
            ),
            FindingBody {
                confidence: 0.85,
                evidence,
                remediation: texts(lang, &[
                    (
                        "take the measured request throughput as this replica's capacity and benchmark below it (sweep the rate to find where TTFT bends)",
                        "把实测请求吞吐当作这个副本的容量，在它以下压测（扫描请求速率，找到 TTFT 拐弯的位置）",
                    ),
                    (
                        "size the fleet so peak traffic stays below ~80 % of the measured capacity per replica",
                        "按每个副本实测容量的约 80% 来承载峰值流量，规划集群规模",
                    ),
                ]),
                next_checks: texts(lang, &[(
                    "the engine's stats lines during the run: Waiting growing while Running stays at max_num_seqs confirms it",
                    "压测期间引擎的统计行：Running 保持在 max_num_seqs 而 Waiting 持续增长，就能确认",
                )]),
            },
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const RUN: &str = "Traffic request rate: 40.0\n============ Serving Benchmark Result ============\nSuccessful requests:                     2400\nRequest throughput (req/s):              11.21\n---------------Time to First Token----------------\nMean TTFT (ms):                          14230.66\nMedian TTFT (ms):                        14012.35\nP99 TTFT (ms):                           29488.10\n==================================================\n";

    #[test]
    fn fires_when_the_rate_is_above_the_throughput() {
        let f = case(&[("bench.txt", RUN)])
            .snapshot(RuleId::BenchOverloaded, "fires_when_the_rate_is_above_the_throughput")
            .unwrap();
        assert!(f.summary.contains("40.0"), "{}", f.summary);
    }

    #[test]
    fn quiet_below_capacity() {
        let ok = RUN.replace("Traffic request rate: 40.0", "Traffic request rate: 10.0");
        assert!(
            case(&[("bench.txt", &ok)]).snapshot(RuleId::BenchOverloaded, "quiet_below_capacity").is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_ttft_aiperf_request_rate_50: [("ttft-aiperf-request-rate-50.txt", fixture!("incidents/bench/ttft-aiperf-request-rate-50.txt"))],
        corpus_ttft_guidellm_rate_above_throughput: [("ttft-guidellm-rate-above-throughput.txt", fixture!("incidents/bench/ttft-guidellm-rate-above-throughput.txt"))],
    }
}
