//! Rules `replica-ttft-skewed` and `replica-itl-skewed`: one replica of a model is far slower
//! than its peers serving the same model. Read from scrapes that carry an `instance` (or `pod`)
//! label — a Prometheus `/federate` paste — and, by `triage analyze --prometheus`, from each
//! replica's series over the window ([`judge`], called by the replay). The peer comparison is
//! the one the GPU rules use ([`triage_gpu::peers::peers_of`]: the median of the others).

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::{Facts, Slo};
use crate::report::{Class, EvidenceLine, Finding};
use std::collections::BTreeMap;
use triage_base::stats::{BucketQuantile, histogram_quantile};

const FIX: (&str, &str) = (
    "Take the replica out of rotation and compare it with a peer: its GPUs' clocks and errors (`nvidia-smi -q -d PERFORMANCE,ECC`), its flags and version (a different `--max-num-seqs`, quantisation or image), its share of the traffic (a router or sticky sessions sending it more), its node (a noisy neighbour on the same host).",
    "把该副本移出流量并与同伴对比：GPU 时钟和错误（`nvidia-smi -q -d PERFORMANCE,ECC`）、启动参数和版本（不同的 `--max-num-seqs`、量化或镜像）、分到的流量（路由或会话粘性给了它更多）、所在节点（同机的吵闹邻居）。",
);

pub(crate) const TTFT: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ReplicaTtftSkewed,
        class: Class::TtftHigh,
        title: "One replica's TTFT is far above its peers' on the same model",
        detects: "Three or more replicas of one model (`instance` or `pod`; the model from `model_name`, `model`, `gen_ai_request_model` or `model_group`), each with 20 or more requests in its TTFT histogram (any engine's name for it) over the window: one replica's median is at least twice the median of its peers' (its bucket's lower bound against their buckets' upper bounds) and its p99 is above the TTFT target.",
        why: "Replicas of one model behind one router see the same kind of traffic; when one is twice as slow to the first token as the others, the cause is that replica — its GPU, its configuration, its node or its share of the traffic — and every request routed to it pays. The fleet's average hides it.",
        example: "TTFT p50 2.5–5 s on `10.0.0.7:8000` against ≤ 0.5 s on its three peers serving `llama-3.1-8b`.",
        fix: FIX.0,
        zh: RuleText {
            title: "某个副本的 TTFT 远高于同模型的其他副本",
            detects: "同一模型有三个以上副本（按 `instance` 或 `pod` 区分；模型取自 `model_name`、`model`、`gen_ai_request_model` 或 `model_group`），每个副本的 TTFT 直方图（任一引擎的名字）在窗口内有 20 个以上请求：其中一个的中位数至少是其他副本中位数的两倍（用它所在桶的下界对比其他副本所在桶的上界），且它的 p99 超过 TTFT 目标。",
            why: "同一路由后面、同一模型的副本承接的是同类流量；如果某一个出首 token 的时间是其他副本的两倍，原因就在这个副本——它的 GPU、配置、所在节点或分到的流量——路由到它的每个请求都要多等。整个集群的平均值会把它掩盖掉。",
            example: "`10.0.0.7:8000` 的 TTFT p50 为 2.5–5 s，而服务 `llama-3.1-8b` 的另外三个副本都 ≤ 0.5 s。",
            fix: FIX.1,
        },
    },
    check: check_ttft,
};

pub(crate) const ITL: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ReplicaItlSkewed,
        class: Class::TbtTail,
        title: "One replica's time between tokens is far above its peers' on the same model",
        detects: "Three or more replicas of one model (as for `replica-ttft-skewed`), each with 500 or more gaps in its inter-token histogram (else its per-request time per output token, 20 or more requests) over the window: one replica's median is at least twice the median of its peers' and its p99 is above the ITL target.",
        why: "Decode speed depends on the GPU, the batch and the configuration, not on which replica a request lands on; a replica decoding at half the speed of its peers on the same model has a cause of its own — a GPU clocking down, a different batch limit or quantisation, more traffic than the others — and every stream it serves stutters.",
        example: "Inter-token p50 0.2–0.3 s on one pod against ≤ 0.05 s on its peers.",
        fix: FIX.0,
        zh: RuleText {
            title: "某个副本的 token 间隔远高于同模型的其他副本",
            detects: "同一模型有三个以上副本（同 `replica-ttft-skewed`），每个副本在窗口内的 token 间隔直方图有 500 个以上间隔（没有时用每请求的每输出 token 时间，20 个以上请求）：其中一个的中位数至少是其他副本中位数的两倍，且它的 p99 超过 ITL 目标。",
            why: "decode 速度取决于 GPU、批次和配置，而不是请求落在哪个副本；同一模型下某个副本的 decode 速度只有其他副本的一半，一定有它自己的原因——GPU 降频、不同的批大小上限或量化、分到的流量更多——它服务的每个流都会卡顿。",
            example: "某个 pod 的 token 间隔 p50 为 0.2–0.3 s，其他副本都 ≤ 0.05 s。",
            fix: FIX.1,
        },
    },
    check: check_itl,
};

/// What is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    /// Time to first token.
    Ttft,
    /// Time between tokens (every gap, else one value per request).
    Itl,
}

/// A replica's median at least this many times its peers' is skewed.
pub(crate) const SKEW: f64 = 2.0;
/// Replicas of one model it takes to have a median of peers that one outlier cannot move.
pub(crate) const MIN_REPLICAS: usize = 3;

impl Measure {
    /// The families read, preferred first, and the observations each replica needs in them.
    pub(crate) fn families(self) -> &'static [(&'static str, f64)] {
        match self {
            Measure::Ttft => &[("vllm:time_to_first_token_seconds", 20.0)],
            Measure::Itl => &[
                ("vllm:inter_token_latency_seconds", 500.0),
                ("vllm:request_time_per_output_token_seconds", 20.0),
            ],
        }
    }

    fn rule(self) -> &'static Rule {
        match self {
            Measure::Ttft => &TTFT,
            Measure::Itl => &ITL,
        }
    }

    fn target_s(self, slo: &Slo) -> f64 {
        match self {
            Measure::Ttft => slo.ttft_ms / 1000.0,
            Measure::Itl => slo.itl_ms / 1000.0,
        }
    }
}

/// One replica's histogram over the window.
#[derive(Clone, Debug)]
pub(crate) struct Replica {
    /// How a reader names it (instance, pod).
    pub who: String,
    /// The model it serves.
    pub model: String,
    /// Bucket counts `(le, count)` over the window.
    pub buckets: Vec<(f64, f64)>,
    /// The histogram name read.
    pub name: &'static str,
    /// The line to cite.
    pub evidence: Option<EvidenceLine>,
}

fn bounds(q: BucketQuantile) -> Option<(f64, f64)> {
    match q {
        BucketQuantile::BelowFirstBucket { upper } => Some((0.0, upper)),
        BucketQuantile::Within { lower, upper, .. } => Some((lower, upper)),
        BucketQuantile::AboveLastBucket { lower } => Some((lower, f64::INFINITY)),
        BucketQuantile::Empty | BucketQuantile::NoFiniteBucket => None,
    }
}

/// The most skewed replica of `replicas` (of any model; each compared with its own model's
/// peers that have `min` observations), with its finding.
pub(crate) fn judge(
    measure: Measure,
    replicas: &[Replica],
    min: f64,
    slo: &Slo,
    lang: Lang,
) -> Option<(usize, Finding)> {
    let mut by_model: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in replicas.iter().enumerate() {
        if r.buckets.last().is_some_and(|b| b.1 >= min) {
            by_model.entry(r.model.as_str()).or_default().push(i);
        }
    }
    let mut worst: Option<(f64, usize, f64, usize)> = None;
    for members in by_model.values().filter(|m| m.len() >= MIN_REPLICAS) {
        let p50: Vec<(u32, (f64, f64))> = members
            .iter()
            .filter_map(|&i| Some((i as u32, bounds(histogram_quantile(0.5, &replicas[i].buckets).0)?)))
            .collect();
        let uppers: Vec<(u32, f64)> = p50.iter().map(|&(i, (_, hi))| (i, hi)).collect();
        for &(i, (lo, _)) in &p50 {
            let (Some(peers), n) = triage_gpu::peers::peers_of(&uppers, i) else { continue };
            let p99 = bounds(histogram_quantile(0.99, &replicas[i as usize].buckets).0).map(|b| b.0);
            if n + 1 < MIN_REPLICAS
                || !peers.is_finite()
                || peers <= 0.0
                || lo < SKEW * peers
                || !p99.is_some_and(|v| v > measure.target_s(slo))
            {
                continue;
            }
            let ratio = lo / peers;
            if worst.is_none_or(|w| ratio > w.0) {
                worst = Some((ratio, i as usize, peers, n));
            }
        }
    }
    let (_, i, peers, n) = worst?;
    let r = &replicas[i];
    let (p50, _) = histogram_quantile(0.5, &r.buckets);
    let (p99, _) = histogram_quantile(0.99, &r.buckets);
    let (who, model, name) = (&r.who, &r.model, r.name);
    let what = match measure {
        Measure::Ttft => lang.pick("TTFT", "TTFT"),
        Measure::Itl => lang.pick("time between tokens", "token 间隔"),
    };
    let summary = lang.pick(
        format!("`{who}` serves `{model}` with a {what} median of {p50} s (p99 {p99} s, `{name}`), at least {SKEW:.0}× the ≤ {peers} s median of its {n} peers on the same model: the cause is on that replica, and the requests routed to it pay for it."),
        format!("`{who}` 服务 `{model}` 的{what}中位数为 {p50} s（p99 {p99} s，`{name}`），至少是同模型其他 {n} 个副本中位数（≤ {peers} s）的 {SKEW:.0} 倍：原因在这个副本上，路由到它的请求都要承担。"),
    );
    let finding = measure.rule().doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: 0.65,
            evidence: r.evidence.iter().cloned().collect(),
            remediation: texts(lang, &[
                (
                    "drain the replica (or lower its routing weight) until it matches its peers",
                    "把这个副本摘掉（或调低它的路由权重），直到它和同伴一致",
                ),
                (
                    "compare it with a peer: GPU clocks and errors, flags and version, node, share of the traffic",
                    "和一个同伴对比：GPU 时钟与错误、启动参数与版本、所在节点、分到的流量",
                ),
            ]),
            next_checks: texts(lang, &[(
                "look at its GPUs beside its peers' (the fleet table's GPU ranking, or nvidia-smi on its node)",
                "把它的 GPU 和同伴的放在一起看（fleet 表的 GPU 排名，或它所在节点的 nvidia-smi）",
            )]),
        },
    );
    Some((i, finding))
}

/// The model a sample is labelled with.
pub(crate) fn model_label(labels: &[(String, String)]) -> Option<&str> {
    ["model_name", "model", "gen_ai_request_model", "model_group"]
        .iter()
        .find_map(|k| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()))
}

/// The model a Prometheus series is labelled with.
pub(crate) fn model_label_of(s: &triage_prometheus::answer::RangeSeries) -> Option<&str> {
    ["model_name", "model", "gen_ai_request_model", "model_group"].iter().find_map(|k| s.label(k))
}

/// Each instance's histogram in a scrape that labels them (a `/federate` paste).
fn replicas(f: &Facts, base: &'static str) -> Option<Vec<Replica>> {
    let m = &f.metrics;
    let last = m.latest()?;
    let name = match m.window() {
        Some(_) => m.resolve_window(base)?,
        None => last.resolve(base)?,
    };
    // The family's name as written in the table (`'static`).
    let name: &'static str = crate::names::names_for(base).into_iter().find(|n| *n == name)?;
    let bucket = format!("{name}_bucket");
    let count = format!("{name}_count");
    type Key = (String, String);
    let per = |s: &crate::parsers::prom::Scrape| -> BTreeMap<Key, BTreeMap<u64, (f64, f64)>> {
        let mut out: BTreeMap<Key, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
        for x in s.series.iter().filter(|x| x.name == bucket) {
            let (Some(who), Some(model), Some(le)) = (
                x.label("instance").or_else(|| x.label("pod")),
                model_label(&x.labels),
                x.label("le").and_then(crate::parsers::prom::parse_value),
            ) else {
                continue;
            };
            let e = out.entry((who.to_owned(), model.to_owned())).or_default();
            e.entry(le.to_bits()).or_insert((le, 0.0)).1 += x.value;
        }
        out
    };
    let sorted = |b: &BTreeMap<u64, (f64, f64)>| {
        let mut v: Vec<(f64, f64)> = b.values().copied().collect();
        triage_base::sort::sort_by(&mut v, |a, b| a.0.total_cmp(&b.0));
        v
    };
    let end = per(last);
    if end.len() < MIN_REPLICAS {
        return None;
    }
    let start = m.window().map(|(first, _)| per(first));
    let out = end
        .iter()
        .filter_map(|((who, model), b)| {
            let later = sorted(b);
            let buckets = match &start {
                Some(start) => {
                    triage_base::stats::delta(&sorted(start.get(&(who.clone(), model.clone()))?), &later)
                        .ok()?
                }
                None => later,
            };
            let evidence = last
                .series
                .iter()
                .find(|x| {
                    x.name == count && x.label("instance").or_else(|| x.label("pod")) == Some(who.as_str())
                })
                .map(|x| last.evidence(x));
            Some(Replica { who: who.clone(), model: model.clone(), buckets, name, evidence })
        })
        .collect();
    Some(out)
}

fn check(f: &Facts, lang: Lang, measure: Measure) -> Option<Finding> {
    measure.families().iter().find_map(|&(base, min)| {
        let rs = replicas(f, base)?;
        judge(measure, &rs, min, &f.slo, lang).map(|(_, finding)| finding)
    })
}

fn check_ttft(f: &Facts, lang: Lang) -> Option<Finding> {
    check(f, lang, Measure::Ttft)
}

fn check_itl(f: &Facts, lang: Lang) -> Option<Finding> {
    check(f, lang, Measure::Itl)
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    /// A `/federate` paste: each replica's TTFT histogram (vLLM's buckets 0.25 … 10 s) at two
    /// instants, `counts[r]` the window's requests per bucket.
    fn federated(name: &str, counts: &[[u64; 5]]) -> String {
        let les = ["0.25", "0.5", "1.0", "2.5", "5.0"];
        let mut s = String::new();
        for k in 0..2u64 {
            for (r, c) in counts.iter().enumerate() {
                let l = format!(r#"instance="10.0.0.{r}:8000",job="vllm",model_name="llama-3.1-8b""#);
                let mut cum = 0;
                for (le, n) in les.iter().zip(c) {
                    cum += 100 + k * n;
                    s.push_str(&format!(
                        "{name}_bucket{{{l},le=\"{le}\"}} {cum} {}\n",
                        1_764_460_800_000 + k * 600_000
                    ));
                }
                s.push_str(&format!(
                    "{name}_bucket{{{l},le=\"+Inf\"}} {cum} {}\n",
                    1_764_460_800_000 + k * 600_000
                ));
                s.push_str(&format!("{name}_count{{{l}}} {cum} {}\n", 1_764_460_800_000 + k * 600_000));
            }
        }
        s
    }

    #[test]
    fn fires_on_one_slow_replica_among_its_peers() {
        let healthy = [40, 10, 0, 0, 0];
        let slow = [0, 0, 5, 20, 25];
        let text = federated("vllm:time_to_first_token_seconds", &[healthy, healthy, slow, healthy]);
        let f = case(&[("federate.prom", &text)]).snapshot(RuleId::ReplicaTtftSkewed, "federate").unwrap();
        assert!(f.summary.contains("10.0.0.2:8000"), "{}", f.summary);
        // The same from SGLang's and Dynamo's names.
        for name in ["sglang:time_to_first_token_seconds", "dynamo_frontend_time_to_first_token_seconds"] {
            let text = federated(name, &[healthy, healthy, slow, healthy]).replace("model_name=", "model=");
            assert!(case(&[("federate.prom", &text)]).fired(RuleId::ReplicaTtftSkewed).is_some(), "{name}");
        }
    }

    #[test]
    fn quiet_on_even_replicas_two_replicas_a_slow_fleet_and_few_requests() {
        let healthy = [40, 10, 0, 0, 0];
        let slow = [0, 0, 5, 20, 25];
        let even = federated("vllm:time_to_first_token_seconds", &[healthy, healthy, healthy]);
        assert!(
            case(&[("federate.prom", &even)]).snapshot(RuleId::ReplicaTtftSkewed, "quiet_even").is_none()
        );
        // Two replicas: no median of peers that one outlier cannot move.
        let two = federated("vllm:time_to_first_token_seconds", &[healthy, slow]);
        assert!(case(&[("federate.prom", &two)]).fired(RuleId::ReplicaTtftSkewed).is_none());
        // Everyone slow alike: not one replica's fault.
        let all = federated("vllm:time_to_first_token_seconds", &[slow, slow, slow]);
        assert!(case(&[("federate.prom", &all)]).fired(RuleId::ReplicaTtftSkewed).is_none());
        // Ten requests on the slow one.
        let few =
            federated("vllm:time_to_first_token_seconds", &[healthy, healthy, [0, 0, 2, 4, 4], healthy]);
        assert!(case(&[("federate.prom", &few)]).fired(RuleId::ReplicaTtftSkewed).is_none());
        // Twice as slow but well within the target (p99 under 2 s).
        let mild =
            federated("vllm:time_to_first_token_seconds", &[healthy, healthy, [0, 0, 45, 5, 0], healthy]);
        assert!(case(&[("federate.prom", &mild)]).fired(RuleId::ReplicaTtftSkewed).is_none());
    }
}
