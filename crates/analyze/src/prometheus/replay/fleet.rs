//! The fleet view: each replica, gateway and GPU of the window ranked by the symptom the
//! verdict names (TTFT or inter-token tail, queue, KV usage, generation rate; a GPU's SM clock
//! against its peers'), from the same series the replay read.

use super::*;
use crate::names::names_for;

/// The time between tokens a replica is ranked by: every gap, else one value per request.
pub(super) fn itl_names() -> Vec<&'static str> {
    let mut v = names_for("vllm:inter_token_latency_seconds");
    v.extend(names_for("vllm:request_time_per_output_token_seconds"));
    v
}

/// Summed cumulative buckets `(le, count)` of a histogram among `members`, at the window's
/// first point and last point (resets corrected).
/// Bucket bounds are divided by `per_s` (1e6: the gateway's µs buckets read in seconds); a name
/// is matched without an Envoy prefix.
fn buckets(m: &Matrix, members: &[usize], bases: &[&str], per_s: f64) -> Option<(Buckets, Buckets)> {
    for base in bases {
        let name = format!("{base}_bucket");
        let mut first: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        let mut last: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for &i in members {
            let s = &m.series[i];
            if s.name() != name && gateway_name(s.name()) != Some(name.as_str()) {
                continue;
            }
            let Some(le) = s.label("le").and_then(crate::parsers::prom::parse_value).map(|le| le / per_s)
            else {
                continue;
            };
            let Some((a, _, z)) = ends(s, f64::NEG_INFINITY, f64::NEG_INFINITY) else { continue };
            first.entry(le.to_bits()).or_insert((le, 0.0)).1 += a.1;
            last.entry(le.to_bits()).or_insert((le, 0.0)).1 += z.1;
        }
        if !last.is_empty() {
            let sort = |x: BTreeMap<u64, (f64, f64)>| {
                let mut v: Vec<(f64, f64)> = x.into_values().collect();
                triage_base::sort::sort_by(&mut v, |a, b| a.0.total_cmp(&b.0));
                v
            };
            return Some((sort(first), sort(last)));
        }
    }
    None
}

/// p99 over the window: (bucket-honest text, an upper bound in seconds for sorting).
fn p99(m: &Matrix, members: &[usize], bases: &[&str], per_s: f64) -> (Option<String>, Option<f64>) {
    let Some((a, z)) = buckets(m, members, bases, per_s) else { return (None, None) };
    let Ok(d) = triage_base::stats::delta(&a, &z) else { return (None, None) };
    let (q, _) = histogram_quantile(0.99, &d);
    let sort_key = match q {
        BucketQuantile::Empty | BucketQuantile::NoFiniteBucket => None,
        BucketQuantile::BelowFirstBucket { upper } => Some(upper),
        BucketQuantile::Within { value, .. } => Some(value),
        BucketQuantile::AboveLastBucket { lower } => Some(lower * 2.0),
    };
    match q {
        BucketQuantile::Empty => (None, None),
        q => (Some(q.to_string()), sort_key),
    }
}

fn gauge_max(m: &Matrix, members: &[usize], names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        members
            .iter()
            .map(|&i| &m.series[i])
            .filter(|s| s.name() == *n)
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    })
}

fn counter_rate(m: &Matrix, members: &[usize], names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let mut sum = None;
        let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
        for &i in members {
            let s = &m.series[i];
            if s.name() != *n && gateway_name(s.name()) != Some(*n) {
                continue;
            }
            let (a, _, z) = ends(s, f64::NEG_INFINITY, f64::NEG_INFINITY)?;
            *sum.get_or_insert(0.0) += z.1 - a.1;
            t0 = t0.min(a.0);
            t1 = t1.max(z.0);
        }
        let secs = t1 - t0;
        sum.filter(|_| secs > 0.0).map(|d: f64| d / secs)
    })
}

pub(super) fn rank_gpus(m: &Matrix, gpus: &[Gpu<'_>]) -> Vec<GpuRank> {
    let med = |g: &Gpu<'_>, name: &str| -> Option<f64> {
        let &i = g.fields.get(name)?;
        median(&mut m.series[i].points.iter().map(|p| p.1).filter(|v| v.is_finite()).collect::<Vec<_>>())
    };
    // Keyed by position (u32: a node has far fewer GPUs).
    let clocks: Vec<(u32, f64)> = gpus
        .iter()
        .enumerate()
        .filter_map(|(k, g)| Some((k as u32, med(g, "DCGM_FI_DEV_SM_CLOCK")?)))
        .collect();
    clocks
        .iter()
        .map(|&(k, clock)| {
            let (peer, _) = triage_gpu::peers::peers_of(&clocks, k);
            let k = k as usize;
            GpuRank {
                subject: gpus[k].subject.clone(),
                sm_clock_mhz: clock,
                peer_median_mhz: peer,
                peers: peer.map(|_| "node".to_owned()),
                ratio: peer.filter(|p| *p > 0.0).map(|p| (clock / p * 1000.0).round() / 1000.0),
                temp_c: med(&gpus[k], "DCGM_FI_DEV_GPU_TEMP"),
                util_pct: med(&gpus[k], "DCGM_FI_DEV_GPU_UTIL"),
            }
        })
        .collect()
}

pub(super) fn fleet(
    m: &Matrix,
    parts: &[Part],
    groups: &[Group],
    origin: &[(usize, bool)],
    verdict: Verdict,
    mut gpus: Vec<GpuRank>,
) -> Fleet {
    let whole = |role: &'static str| {
        origin
            .iter()
            .enumerate()
            .filter(move |(_, (pi, tail))| !tail && parts[*pi].role == role)
            .map(|(gi, (pi, _))| (gi, *pi))
    };
    let mut replicas: Vec<ReplicaRank> = whole("replica")
        .map(|(gi, pi)| {
            let members = &parts[pi].members;
            let (ttft_p99, ttft_p99_s) = p99(m, members, &names_for("vllm:time_to_first_token_seconds"), 1.0);
            let (itl_p99, itl_p99_s) = p99(m, members, &itl_names(), 1.0);
            ReplicaRank {
                subject: groups[gi].subject.clone(),
                input: groups[gi].input.clone(),
                verdict: groups[gi].verdict,
                ttft_p99,
                ttft_p99_s,
                itl_p99,
                itl_p99_s,
                waiting_max: gauge_max(m, members, &names_for("vllm:num_requests_waiting")),
                kv_usage_max: gauge_max(m, members, &names_for("vllm:kv_cache_usage_perc")),
                generation_tokens_per_s: counter_rate(m, members, &names_for("vllm:generation_tokens_total"))
                    .map(|r| (r * 100.0).round() / 100.0),
            }
        })
        .collect();
    let desc = |x: Option<f64>| std::cmp::Reverse(x.map(|v| (v * 1e6) as i64).unwrap_or(i64::MIN));
    // The symptom's own measure when some replica has it; else the TTFT tail, else the queue.
    let has = |f: fn(&ReplicaRank) -> Option<f64>| replicas.iter().any(|r| f(r).is_some());
    let ranked_by = match verdict {
        Verdict::TbtTail if has(|r| r.itl_p99_s) => "itl_p99",
        Verdict::ThroughputZero if has(|r| r.generation_tokens_per_s) => "generation_rate",
        Verdict::Oom if has(|r| r.kv_usage_max) => "kv_usage",
        _ if has(|r| r.ttft_p99_s) => "ttft_p99",
        _ => "waiting",
    };
    match ranked_by {
        "itl_p99" => triage_base::sort::sort_by_key(&mut replicas, |r| desc(r.itl_p99_s)),
        "generation_rate" => triage_base::sort::sort_by_key(&mut replicas, |r| {
            r.generation_tokens_per_s.map_or(i64::MAX, |v| (v * 1e6) as i64)
        }),
        "kv_usage" => triage_base::sort::sort_by_key(&mut replicas, |r| desc(r.kv_usage_max)),
        "ttft_p99" => {
            triage_base::sort::sort_by_key(&mut replicas, |r| (desc(r.ttft_p99_s), desc(r.waiting_max)))
        }
        _ => triage_base::sort::sort_by_key(&mut replicas, |r| desc(r.waiting_max)),
    }
    let mut gateways: Vec<GatewayRank> = whole("gateway")
        .map(|(gi, pi)| (&parts[pi], &groups[gi]))
        .map(|(p, g)| {
            let (ttft_p99, ttft_p99_s) = p99(m, &p.members, &["llm_stream_time_to_first_token_us"], 1e6);
            let (itl_p99, itl_p99_s) = p99(m, &p.members, &["llm_stream_inter_token_latency_us"], 1e6);
            let per_s = |n: &str| counter_rate(m, &p.members, &[n]).map(|r| (r * 1000.0).round() / 1000.0);
            GatewayRank {
                subject: g.subject.clone(),
                input: g.input.clone(),
                ttft_p99,
                ttft_p99_s,
                itl_p99,
                itl_p99_s,
                requests_per_s: per_s("llm_stream_requests_total"),
                errors_per_s: per_s("llm_stream_errors_total"),
            }
        })
        .collect();
    triage_base::sort::sort_by_key(&mut gateways, |g| (desc(g.ttft_p99_s), desc(g.errors_per_s)));
    // A node with one GPU has no peers of its own: compare it with the fleet's GPUs of its model
    // (not tensor-parallel peers, so no rule judges it; the ranking still shows an outlier).
    let all: Vec<(Option<String>, f64)> =
        gpus.iter().map(|g| (g.subject.model_name.clone(), g.sm_clock_mhz)).collect();
    for (k, g) in gpus.iter_mut().enumerate() {
        if g.peer_median_mhz.is_some() {
            continue;
        }
        let mut peers: Vec<f64> = all
            .iter()
            .enumerate()
            .filter(|(j, (model, _))| *j != k && *model == g.subject.model_name)
            .map(|(_, (_, c))| *c)
            .collect();
        if let Some(p) = median(&mut peers) {
            g.peer_median_mhz = Some(p);
            g.peers = Some("fleet".to_owned());
            g.ratio = (p > 0.0).then(|| (g.sm_clock_mhz / p * 1000.0).round() / 1000.0);
        }
    }
    triage_base::sort::sort_by(&mut gpus, |a, b| {
        a.ratio
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.ratio.unwrap_or(f64::INFINITY))
            .then(a.subject.cmp(&b.subject))
    });
    Fleet { ranked_by: ranked_by.to_owned(), replicas, gpus, gateways }
}

/// The replicas far slower than their peers on the same model ([`crate::rules::replica_skewed`]),
/// each histogram over the window, each finding citing the replica's `_count` line; with a
/// report of them, for the verdict across groups.
pub(super) fn skewed(
    m: &Matrix,
    parts: &[Part],
    analysed: &Analysed,
    cfg: &Config<'_>,
) -> (Vec<Tagged>, Option<Report>) {
    use crate::rules::replica_skewed::{Measure, Replica, judge};
    let whole: Vec<(usize, usize)> = analysed
        .origin
        .iter()
        .enumerate()
        .filter(|(_, (pi, tail))| !tail && parts[*pi].role == "replica")
        .map(|(gi, (pi, _))| (gi, *pi))
        .collect();
    let mut out = Vec::new();
    for measure in [Measure::Ttft, Measure::Itl] {
        for &(base, min) in measure.families() {
            let names = names_for(base);
            let replicas: Vec<(usize, Replica)> = whole
                .iter()
                .filter_map(|&(gi, pi)| {
                    let g = &analysed.groups[gi];
                    let model = g.subject.model_name.clone()?;
                    let members = &parts[pi].members;
                    let name = names.iter().copied().find(|n| {
                        let b = format!("{n}_bucket");
                        members.iter().any(|&i| m.series[i].name() == b)
                    })?;
                    let (a, z) = buckets(m, members, &[name], 1.0)?;
                    let d = triage_base::stats::delta(&a, &z).ok()?;
                    let count = format!("{name}_count");
                    let evidence = analysed.built.iter().find(|(n, _)| *n == g.input).and_then(|(n, b)| {
                        let text_line = |no: usize| b.text.lines().nth(no - 1).unwrap_or("").to_owned();
                        b.lines.iter().rev().find(|(_, (i, _, _))| m.series[*i].name() == count).map(
                            |(&no, _)| crate::report::EvidenceLine {
                                input: n.as_str().into(),
                                line: no,
                                text: text_line(no),
                            },
                        )
                    });
                    let who = g.subject.instance.clone().or(g.subject.pod.clone()).unwrap_or_default();
                    Some((gi, Replica { who, model, buckets: d, name, evidence }))
                })
                .collect();
            let rs: Vec<Replica> = replicas.iter().map(|(_, r)| r.clone()).collect();
            if let Some((k, mut finding)) = judge(measure, &rs, min, &cfg.slo, cfg.lang) {
                let gi = replicas[k].0;
                finding.subject = Some(analysed.groups[gi].subject.clone());
                out.push(Tagged { finding, group: gi });
                break;
            }
        }
    }
    let report = out.first().map(|first| Report {
        schema: crate::report::SCHEMA.to_owned(),
        verdict: Verdict::from(first.finding.class),
        findings: out.iter().map(|t| t.finding.clone()).collect(),
        inputs: Vec::new(),
        figures: BTreeMap::new(),
        series: BTreeMap::new(),
        prometheus: None,
    });
    (out, report)
}
