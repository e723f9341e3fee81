//! Rule `prefix-cache-hit-collapse`: the prefix cache hit a good share of prompt tokens, then
//! lately almost none, and TTFT rose with it.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::prom::Scrape;
use crate::report::{Class, EvidenceLine, Finding};
use triage_base::stats::{BucketQuantile, histogram_quantile};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::PrefixCacheHitCollapse,
        class: Class::TtftHigh,
        title: "The prefix cache stopped hitting, and TTFT rose with it",
        detects: "Two or more `/metrics` scrapes (or `--prometheus`) whose prefix-cache counters — vLLM's `vllm:prefix_cache_hits_total` / `vllm:prefix_cache_queries_total` (`vllm:gpu_prefix_cache_*` before 0.10), SGLang's `sglang:cached_tokens_total` / `sglang:prompt_tokens_total` — show a hit share of at least 30 % before and at most a third of it lately, over at least 20,000 prompt tokens each, while the TTFT histogram's median rose by half or its p99 passed the TTFT target. One scrape (totals since start), or a counter that went down (a restart emptied the cache), is never judged.",
        why: "With shared prefixes (a system prompt, tools, a conversation's history) the cache saves their prefill. When the share of prompt tokens it serves falls to a fraction of what it was, each request prefills what it used to reuse, and TTFT grows. A hit share is only low against its own past: a workload without shared prefixes never hits, so only a fall at comparable traffic says something changed — a prompt template that now starts with a timestamp or a request id, more distinct prefixes than the cache holds (evicted before reuse), a router that stopped sending a conversation back to the replica holding its prefix.",
        example: "`vllm:prefix_cache_hits_total` rising by 62 % of the queried tokens in the hour before, by 4 % in the last ten minutes; TTFT p50 from 0.3 s to 1.8 s.",
        fix: "Find what changed in the prompts (diff a recent prompt's first tokens against an older one's); keep what varies at the end; route a session to the replica that holds its prefix (prefix- or session-aware routing); give the cache more memory if the working set outgrew it.",
        zh: RuleText {
            title: "前缀缓存不再命中，TTFT 随之上升",
            detects: "两次以上 `/metrics` 抓取（或 `--prometheus`）的前缀缓存计数器——vLLM 的 `vllm:prefix_cache_hits_total` / `vllm:prefix_cache_queries_total`（0.10 之前为 `vllm:gpu_prefix_cache_*`）、SGLang 的 `sglang:cached_tokens_total` / `sglang:prompt_tokens_total`——显示之前命中比例至少 30%，最近只剩它的三分之一以下，两段各至少 20,000 个提示 token，同时 TTFT 直方图的中位数上升一半以上或 p99 超过 TTFT 目标。只有一次抓取（自启动以来的累计）或计数器下降（重启清空了缓存）时不做判断。",
            why: "有共享前缀（系统提示、工具定义、对话历史）时，缓存省掉了这部分预填。缓存提供的提示 token 比例降到原来的一小部分时，每个请求都要预填原本可以复用的内容，TTFT 就会上升。命中比例只能和它自己的过去比：没有共享前缀的负载本来就不命中，只有在相近流量下的下降才说明有东西变了——提示模板开头加了时间戳或请求 id、不同前缀多到缓存装不下（复用前就被淘汰）、路由不再把同一会话送回持有其前缀的副本。",
            example: "`vllm:prefix_cache_hits_total` 在之前一小时增加了查询 token 的 62%，最近十分钟只有 4%；TTFT p50 从 0.3 s 升到 1.8 s。",
            fix: "找出提示里变了什么（把最近一个提示的开头和旧的比一比）；把变化的内容放到最后；让同一会话回到持有其前缀的副本（前缀或会话感知的路由）；工作集变大时给缓存更多显存。",
        },
    },
    check,
};

/// Prompt tokens each interval must have looked up: a share of fewer is noise.
const MIN_TOKENS: f64 = 20_000.0;
/// The earlier hit share that makes a fall mean something.
const MIN_BEFORE: f64 = 0.30;
/// Lately at most this share of the earlier hit share.
const FALL: f64 = 1.0 / 3.0;

/// (hits, looked-up tokens) counter names: vLLM's, then SGLang's.
const SOURCES: &[(&str, &str)] = &[
    ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
    ("sglang:cached_tokens_total", "sglang:prompt_tokens_total"),
];

/// The window split in two: (start, middle, end). With three scrapes or more the middle is the
/// one before the last (`--prometheus`: the recent tail's start); with two, the counters at the
/// first scrape are what came before (since the process started).
fn split(f: &Facts) -> Option<(Option<&Scrape>, &Scrape, &Scrape)> {
    let m = &f.metrics;
    let (first, last) = m.window()?;
    Some(match m.before_last() {
        Some(mid) => (Some(first), mid, last),
        None => (None, first, last),
    })
}

/// `b − a` of one counter name summed over labels (`a` absent: `b` itself); `None` when it went
/// down.
fn grew(a: Option<&Scrape>, b: &Scrape, name: &str) -> Option<f64> {
    let end = b.sum(name)?.0;
    let start = match a {
        Some(a) => a.sum(name)?.0,
        None => 0.0,
    };
    (end >= start).then_some(end - start)
}

/// The TTFT histogram over `a..b` (since start without `a`), under the name both hold.
fn ttft(a: Option<&Scrape>, b: &Scrape, name: &str) -> Option<Vec<(f64, f64)>> {
    let later = b.histogram_as(name);
    let d = match a {
        Some(a) => triage_base::stats::delta(&a.histogram_as(name), &later).ok()?,
        None => later,
    };
    (d.last().is_some_and(|x| x.1 > 0.0)).then_some(d)
}

fn upper(q: BucketQuantile) -> Option<f64> {
    match q {
        BucketQuantile::BelowFirstBucket { upper } | BucketQuantile::Within { upper, .. } => Some(upper),
        _ => None,
    }
}

fn lower(q: BucketQuantile) -> Option<f64> {
    match q {
        BucketQuantile::Within { lower, .. } | BucketQuantile::AboveLastBucket { lower } => Some(lower),
        _ => None,
    }
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let (start, mid, end) = split(f)?;
    let ((hits, queries), (h0, q0, h1, q1)) = SOURCES.iter().find_map(|&(h, q)| {
        let (h, q) = (f.metrics.resolve_window(h)?, f.metrics.resolve_window(q)?);
        Some((
            (h, q),
            (grew(start, mid, h)?, grew(start, mid, q)?, grew(Some(mid), end, h)?, grew(Some(mid), end, q)?),
        ))
    })?;
    if q0 < MIN_TOKENS || q1 < MIN_TOKENS {
        return None;
    }
    let (before, lately) = (h0 / q0, h1 / q1);
    if before < MIN_BEFORE || lately > before * FALL {
        return None;
    }
    // The symptom in the same intervals: without it the fall is not (yet) the incident.
    let name = f.metrics.resolve_window("vllm:time_to_first_token_seconds")?;
    let (t0, t1) = (ttft(start, mid, name)?, ttft(Some(mid), end, name)?);
    let (p50_before, p50_lately) = (histogram_quantile(0.5, &t0).0, histogram_quantile(0.5, &t1).0);
    let p99_lately = histogram_quantile(0.99, &t1).0;
    let rose = matches!((upper(p50_before), lower(p50_lately)), (Some(a), Some(b)) if b >= 1.5 * a);
    let over = lower(p99_lately).is_some_and(|v| v * 1000.0 > f.slo.ttft_ms);
    if !rose && !over {
        return None;
    }
    let evidence: Vec<EvidenceLine> = [(mid, hits), (mid, queries), (end, hits), (end, queries)]
        .iter()
        .filter_map(|(s, n)| s.sum(n).map(|(_, series)| s.evidence(series)))
        .collect();
    let (b, l) = (before * 100.0, lately * 100.0);
    let earlier = if start.is_some() {
        lang.pick("before the recent interval", "最近这段之前")
    } else {
        lang.pick("since the server started", "自服务启动以来")
    };
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("The prefix cache served {b:.0} % of {q0:.0} looked-up prompt tokens {earlier}, and {l:.1} % of {q1:.0} lately (`{hits}` / `{queries}`); TTFT p50 went from {p50_before} s to {p50_lately} s (p99 {p99_lately} s): requests now prefill what they used to reuse."),
            format!("前缀缓存{earlier}命中了 {q0:.0} 个被查询提示 token 的 {b:.0}%，最近只命中 {q1:.0} 个中的 {l:.1}%（`{hits}` / `{queries}`）；TTFT p50 从 {p50_before} s 变为 {p50_lately} s（p99 {p99_lately} s）：请求现在要预填原本可以复用的内容。"),
        ),
        FindingBody {
            confidence: 0.7,
            evidence,
            remediation: texts(lang, &[
                (
                    "find what changed at the start of the prompts (a timestamp, a request id, a reordered system prompt) and move what varies to the end",
                    "找出提示开头变了什么（时间戳、请求 id、系统提示顺序），把变化的内容移到最后",
                ),
                (
                    "route a conversation back to the replica that holds its prefix (prefix- or session-aware routing)",
                    "让同一对话回到持有其前缀的副本（前缀或会话感知的路由）",
                ),
            ]),
            next_checks: texts(lang, &[(
                "compare the first few hundred tokens of a recent prompt with an older one of the same kind",
                "把同类请求中一个最近的提示和一个较早的提示的前几百个 token 比一比",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const RULE: RuleId = RuleId::PrefixCacheHitCollapse;

    /// vLLM counters at three instants (what `--prometheus` writes: the window's start, the
    /// recent tail's start, its end), with the TTFT histogram's buckets.
    fn vllm(points: [(u64, u64, [u64; 4]); 3], old_names: bool) -> String {
        let (q, h) = if old_names {
            ("vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total")
        } else {
            ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total")
        };
        let l = r#"engine="0",model_name="m""#;
        let mut s = String::new();
        for (k, (queries, hits, ttft)) in points.iter().enumerate() {
            let ts = 1_764_460_800_000u64 + k as u64 * 600_000;
            s.push_str(&format!("{q}{{{l}}} {queries} {ts}\n{h}{{{l}}} {hits} {ts}\n"));
            let mut cum = 0;
            for (le, n) in ["0.25", "0.5", "1.0", "2.5"].iter().zip(ttft) {
                cum += n;
                s.push_str(&format!(
                    "vllm:time_to_first_token_seconds_bucket{{{l},le=\"{le}\"}} {cum} {ts}\n"
                ));
            }
            s.push_str(&format!("vllm:time_to_first_token_seconds_bucket{{{l},le=\"+Inf\"}} {cum} {ts}\n"));
            s.push_str(&format!("vllm:time_to_first_token_seconds_count{{{l}}} {cum} {ts}\n"));
        }
        s
    }

    #[test]
    fn fires_when_hits_fall_and_ttft_rises() {
        // 60 % of 500k tokens hit before; 4 % of 100k lately; TTFT p50 from ≤ 0.25 s to 1–2.5 s.
        let text = vllm(
            [
                (1_000_000, 500_000, [900, 100, 0, 0]),
                (1_500_000, 800_000, [1800, 200, 0, 0]),
                (1_600_000, 804_000, [1810, 210, 30, 150]),
            ],
            false,
        );
        let f = case(&[("metrics.prom", &text)]).snapshot(RULE, "vllm_window").unwrap();
        assert!(f.summary.contains("60 %") && f.summary.contains("4.0 %"), "{}", f.summary);
        // The names before vLLM 0.10 read the same.
        assert!(case(&[("metrics.prom", &vllm_old(&text))]).fired(RULE).is_some());
    }

    fn vllm_old(text: &str) -> String {
        text.replace("vllm:prefix_cache", "vllm:gpu_prefix_cache")
    }

    #[test]
    fn quiet_when_ttft_did_not_move_on_restarts_and_on_thin_traffic() {
        let flat = vllm(
            [
                (1_000_000, 500_000, [900, 100, 0, 0]),
                (1_500_000, 800_000, [1800, 200, 0, 0]),
                (1_600_000, 804_000, [1890, 210, 0, 0]),
            ],
            false,
        );
        assert!(case(&[("metrics.prom", &flat)]).snapshot(RULE, "quiet_ttft_flat").is_none());
        // A restart: the counters went down; the emptied cache is not judged.
        let restart = vllm(
            [
                (1_000_000, 500_000, [900, 100, 0, 0]),
                (1_500_000, 800_000, [1800, 200, 0, 0]),
                (100_000, 4_000, [10, 10, 30, 150]),
            ],
            true,
        );
        assert!(case(&[("metrics.prom", &restart)]).fired(RULE).is_none());
        // 5,000 tokens lately: too few to judge a share.
        let thin = vllm(
            [
                (1_000_000, 500_000, [900, 100, 0, 0]),
                (1_500_000, 800_000, [1800, 200, 0, 0]),
                (1_505_000, 800_100, [1800, 200, 30, 150]),
            ],
            false,
        );
        assert!(case(&[("metrics.prom", &thin)]).fired(RULE).is_none());
        // Never hit much: a workload without shared prefixes.
        let never = vllm(
            [
                (1_000_000, 50_000, [900, 100, 0, 0]),
                (1_500_000, 60_000, [1800, 200, 0, 0]),
                (1_600_000, 60_100, [1810, 210, 30, 150]),
            ],
            false,
        );
        assert!(case(&[("metrics.prom", &never)]).fired(RULE).is_none());
    }

    #[test]
    fn quiet_on_one_scrape_and_the_per_engine_scrapes() {
        use triage_base::fixture;
        let one = vllm([(1_000_000, 40_000, [900, 100, 30, 150]), (0, 0, [0; 4]), (0, 0, [0; 4])], false);
        let one: String = one.lines().take(8).map(|l| format!("{l}\n")).collect();
        assert!(case(&[("metrics.prom", &one)]).fired(RULE).is_none());
        for text in
            [fixture!("scrapes/vllm-0.11-ttft-slow.prom"), fixture!("scrapes/sglang-0.5-decode-slow.prom")]
        {
            assert!(case(&[("metrics.prom", text)]).fired(RULE).is_none());
        }
    }
}
