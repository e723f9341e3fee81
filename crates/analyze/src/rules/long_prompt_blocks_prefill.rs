//! Rule `long-prompt-blocks-prefill`: a few very long prompts stall everyone's first token.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};
use triage_base::stats::{BucketQuantile, histogram_quantile};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::LongPromptBlocksPrefill,
        class: Class::TtftHigh,
        title: "Long prompts block the prefill window",
        detects: "Prompt lengths with a heavy tail (p99 far above the mean) together with a TTFT tail, in per-request logs or in vLLM's `/metrics` histograms over a window (two scrapes, or `triage analyze --prometheus`).",
        why: "Prefill is compute-bound and, without chunking, not preemptible: one 8k-token prompt occupies the step and every request that arrived with it waits. The mean barely moves; p99 TTFT explodes.",
        example: "Mean prompt 600 tokens, p99 9,000; p50 TTFT 280 ms, p99 TTFT 3.1 s; the slowest requests are the long prompts and their neighbours.",
        fix: "Enable chunked prefill (`--enable-chunked-prefill --max-num-batched-tokens 8192`), cap the input length, or send long prompts to their own pool (prefill/decode disaggregation).",
        zh: RuleText {
            title: "长 prompt 堵住了 prefill 窗口",
            detects: "请求日志中，或一段时间窗内 vLLM `/metrics` 的直方图中（两次抓取，或 `triage analyze --prometheus`），prompt 长度长尾明显（p99 远高于均值），同时 TTFT 也有长尾。",
            why: "prefill 是计算密集型的，不开 chunked prefill 时也不可抢占：一个 8k token 的 prompt 会占满整个调度步，同时到达的请求全都得等它。均值几乎不动，p99 TTFT 却会暴涨。",
            example: "prompt 均值 600 token、p99 9,000；TTFT p50 280 ms、p99 3.1 s；最慢的请求正是这些长 prompt 和与它们同批的请求。",
            fix: "开启 chunked prefill（`--enable-chunked-prefill --max-num-batched-tokens 8192`），限制输入长度，或把长 prompt 分流到单独的实例池（PD 分离：prefill 与 decode 分开部署）。",
        },
    },
    check,
};

/// Chunk the prefill: what to change when long prompts hold up a vLLM engine, whether a log or
/// the metrics showed it.
const CHUNK: (&str, &str) = (
    "vLLM: --enable-chunked-prefill --max-num-batched-tokens 8192 (smaller budgets favour TTFT of short requests, larger favour throughput)",
    "vLLM：--enable-chunked-prefill --max-num-batched-tokens 8192（预算越小越照顾短请求的 TTFT，越大越偏向吞吐）",
);
/// Keep the long prompts out.
const CAP: (&str, &str) = (
    "cap the input length at the gateway (reject or truncate prompts above the agreed limit)",
    "在网关限制输入长度（超过约定上限的 prompt 直接拒绝或截断）",
);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    from_request_log(f, lang).or_else(|| from_slot_timings(f, lang)).or_else(|| from_metrics(f, lang))
}

/// A histogram of the window: the bucket deltas between the first and the last scrape, or the
/// one scrape's buckets (since the server started).
fn window_histogram(f: &Facts, base: &str) -> Option<Vec<(f64, f64)>> {
    f.metrics.window_histogram(base).map(|(b, _)| b)
}

/// The bounds of the bucket a quantile fell in: (lower, upper). Unknown sides are 0 and ∞.
fn bounds(q: BucketQuantile) -> Option<(f64, f64)> {
    match q {
        BucketQuantile::BelowFirstBucket { upper } => Some((0.0, upper)),
        BucketQuantile::Within { lower, upper, .. } => Some((lower, upper)),
        BucketQuantile::AboveLastBucket { lower } => Some((lower, f64::INFINITY)),
        BucketQuantile::Empty | BucketQuantile::NoFiniteBucket => None,
    }
}

/// vLLM's `/metrics` over a window: `vllm:request_prompt_tokens` with p99 ≥ 4× its mean and
/// ≥ 2,000 tokens, and `vllm:time_to_first_token_seconds` with p99 ≥ 3× p50. Each quantile is
/// taken at the side of its bucket that argues against the finding (the prompt p99 and TTFT p99
/// at their bucket's lower bound, the TTFT p50 at its upper bound). Histograms cannot tie the
/// slow requests to the long ones, so the confidence stays below a request log's.
fn from_metrics(f: &Facts, lang: Lang) -> Option<Finding> {
    let prompts = window_histogram(f, "vllm:request_prompt_tokens")?;
    let ttft = window_histogram(f, "vllm:time_to_first_token_seconds")?;
    let (count, sum) = match f.metrics.window() {
        Some(_) => (
            f.metrics.delta("vllm:request_prompt_tokens_count")?,
            f.metrics.delta("vllm:request_prompt_tokens_sum")?,
        ),
        None => {
            let s = f.metrics.latest()?;
            (s.sum("vllm:request_prompt_tokens_count")?.0, s.sum("vllm:request_prompt_tokens_sum")?.0)
        }
    };
    if count < 10.0 || sum <= 0.0 {
        return None;
    }
    let mean = sum / count;
    let (p99, _) = bounds(histogram_quantile(0.99, &prompts).0)?;
    let (_, t50) = bounds(histogram_quantile(0.5, &ttft).0)?;
    let (t99, _) = bounds(histogram_quantile(0.99, &ttft).0)?;
    if p99 < 4.0 * mean || p99 < 2000.0 || t99 < 3.0 * t50 || t99 * 1000.0 < 0.5 * f.slo.ttft_ms {
        return None;
    }
    let last = f.metrics.latest()?;
    let bucket = |name: &str, le: f64| {
        last.series
            .iter()
            .find(|s| s.name == name && s.label("le").and_then(crate::parsers::prom::parse_value) == Some(le))
    };
    let mut evidence = Vec::new();
    for (name, le) in
        [("vllm:request_prompt_tokens_bucket", p99), ("vllm:time_to_first_token_seconds_bucket", t99)]
    {
        if let Some(s) = bucket(name, le) {
            evidence.push(last.evidence(s));
        }
    }
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "vLLM's histograms over the window: prompt length p99 ≥ {p99:.0} tokens against a mean of {mean:.0}, and TTFT p99 ≥ {t99} s against p50 ≤ {t50} s — a few long prompts hold the prefill step while short requests wait."
            ),
            format!(
                "时间窗内 vLLM 的直方图：prompt 长度 p99 ≥ {p99:.0} token，均值 {mean:.0}；TTFT p99 ≥ {t99} s，p50 ≤ {t50} s——少数长 prompt 占住了 prefill 步，短请求只能等。"
            ),
        ),
        FindingBody {
            confidence: 0.6,
            evidence,
            remediation: texts(lang, &[CHUNK, CAP]),
            next_checks: texts(lang, &[
                (
                    "read the request log (enqueue and first-token times with prompt lengths) to tie the slow requests to the long prompts",
                    "查看请求日志（入队时间、首 token 时间和 prompt 长度），确认慢请求正是长 prompt 及其同批请求",
                ),
                (
                    "check whether chunked prefill is on (vLLM logs `non-default args` at start-up)",
                    "确认 chunked prefill 是否开启（vLLM 启动时会打印 `non-default args`）",
                ),
            ]),
        },
    ))
}

/// llama-server fills a slot's whole prompt before that slot generates, and a server with few
/// slots (`-np`) makes every other request wait behind it: one prefill that takes longer than
/// 2.5× the TTFT target is the finding, stronger with requests deferred meanwhile.
fn from_slot_timings(f: &Facts, lang: Lang) -> Option<Finding> {
    let p = f.llama.prefills.iter().max_by(|a, b| a.seconds.total_cmp(&b.seconds))?;
    if p.seconds * 1000.0 < 2.5 * f.slo.ttft_ms || p.tokens < 2000.0 {
        return None;
    }
    let (s, tokens) = (p.seconds, p.tokens);
    let rate = tokens / s;
    let deferred = f.llama.deferred.as_ref().filter(|d| d.value > 0.0);
    let mut evidence = vec![p.evidence.clone()];
    let behind = match deferred {
        Some(d) => {
            evidence.push(d.evidence.clone());
            lang.pick(
                format!(", while {:.0} request(s) were deferred behind it", d.value),
                format!("，同时有 {:.0} 个请求排在它后面被推迟", d.value),
            )
        }
        None => String::new(),
    };
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("One prompt of {tokens:.0} tokens took {s:.1} s to prefill ({rate:.0} tokens/s){behind}: no token of it, or of a request waiting for its slot, comes sooner."),
            format!("一个 {tokens:.0} token 的 prompt 预填耗时 {s:.1} s（{rate:.0} tokens/s）{behind}：它和等这个 slot 的请求在此之前都拿不到第一个 token。"),
        ),
        FindingBody {
            confidence: if deferred.is_some() { 0.85 } else { 0.7 },
            evidence,
            remediation: texts(lang, &[
                (
                    "give llama-server more slots (`-np`) with enough context each (`-c` is shared between them), or more replicas",
                    "给 llama-server 更多 slot（`-np`），并保证每个都有足够上下文（`-c` 由各 slot 分摊），或者增加副本",
                ),
                (
                    "cap the prompt length at the gateway, or route long-context requests to their own server",
                    "在网关限制 prompt 长度，或者把长上下文请求路由到单独的服务",
                ),
                (
                    "prefill faster: a larger `-ub`/`-b` on a GPU with headroom, flash attention (`-fa`)",
                    "加快预填：显存有余量时调大 `-ub`/`-b`，开启 flash attention（`-fa`）",
                ),
            ]),
            next_checks: texts(lang, &[(
                "compare `prompt eval time` per task with the TTFT clients see, and watch `llamacpp:requests_deferred`",
                "对比每个 task 的 `prompt eval time` 和客户端看到的 TTFT，并观察 `llamacpp:requests_deferred`",
            )]),
        },
    ))
}

fn from_request_log(f: &Facts, lang: Lang) -> Option<Finding> {
    let r = &f.requests;
    let (mean, p99) = (r.prompt_tokens.mean()?, q(&r.prompt_tokens, 0.99)?);
    let (t50, t99) = (q(&r.ttft_ms, 0.5)?, q(&r.ttft_ms, 0.99)?);
    if r.prompt_tokens.count() < 10 || mean <= 0.0 || p99 < 4.0 * mean || p99 < 2000.0 || t99 < 3.0 * t50 {
        return None;
    }
    // Are the slowest requests the long ones?
    let long = r.prompt_tokens.quantile(0.9).unwrap_or(p99);
    let slow_and_long = r.slowest.iter().filter(|row| row.prompt_tokens.is_some_and(|p| p >= long)).count();
    let mut confidence = 0.6;
    if slow_and_long > 0 {
        confidence += 0.25;
    }
    let mut evidence: Vec<_> = r
        .slowest
        .iter()
        .filter(|row| row.prompt_tokens.is_some_and(|p| p >= long))
        .filter_map(|row| row.evidence.clone())
        .take(3)
        .collect();
    if evidence.is_empty() {
        evidence = r.slowest.iter().filter_map(|row| row.evidence.clone()).take(2).collect();
    }
    let (ratio, slowest) = (p99 / mean, r.slowest.len());
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "Prompt length p99 is {p99:.0} tokens against a mean of {mean:.0} ({ratio:.1}×), and TTFT p99 is {t99:.0} ms against p50 {t50:.0} ms; {slow_and_long} of the {slowest} slowest requests carry prompts in the top 10 % (≥ {long:.0} tokens)."
            ),
            format!(
                "prompt 长度 p99 为 {p99:.0} token，均值 {mean:.0}（{ratio:.1}×）；TTFT p99 为 {t99:.0} ms，p50 为 {t50:.0} ms；最慢的 {slowest} 个请求中有 {slow_and_long} 个的 prompt 位于最长的 10%（≥ {long:.0} token）。"
            ),
        ),
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                CHUNK,
                CAP,
                (
                    "route long-context traffic to a separate pool, or disaggregate prefill and decode",
                    "把长上下文流量路由到单独的实例池，或做 PD 分离（prefill 与 decode 分开部署）",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "plot TTFT against prompt length per request: a rising band confirms it",
                    "按请求画出 TTFT 与 prompt 长度的散点图：呈上升带状即可确认",
                ),
                (
                    "check whether chunked prefill is on (vLLM logs `non-default args` at start-up)",
                    "确认 chunked prefill 是否开启（vLLM 启动时会打印 `non-default args`）",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn log(long_every: usize) -> String {
        (0..200)
            .map(|i| {
                let long = long_every > 0 && i % long_every == 0;
                let prompt = if long { 12_000 } else { 400 };
                let ttft = if long { 2.5 } else if long_every > 0 && i % long_every == 1 { 2.0 } else { 0.2 };
                format!("{{\"request_id\":\"r{i}\",\"enqueue_time\":{i},\"first_token_time\":{},\"prompt_tokens\":{prompt}}}\n", i as f64 + ttft)
            })
            .collect()
    }

    #[test]
    fn fires_when_long_prompts_are_the_slow_ones() {
        let f = case(&[("req.jsonl", &log(20))])
            .snapshot(RuleId::LongPromptBlocksPrefill, "fires_when_long_prompts_are_the_slow_ones")
            .unwrap();
        assert!(f.confidence >= 0.8, "{f:?}");
        assert!(f.evidence[0].text.contains("12000"));
    }

    #[test]
    fn quiet_without_long_prompts() {
        assert!(
            case(&[("req.jsonl", &log(0))])
                .snapshot(RuleId::LongPromptBlocksPrefill, "quiet_without_long_prompts")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_ttft_long_prompt_prefill_single_slot: [("ttft-long-prompt-prefill-single-slot.log", fixture!("incidents/llama-server/ttft-long-prompt-prefill-single-slot.log"))],
        corpus_ttft_long_prompts: [("ttft_long_prompts.jsonl", fixture!("incidents/ttft_long_prompts.jsonl"))],
    }

    /// Two scrapes of vLLM's histograms: a prompt-length tail and a TTFT tail over the window.
    #[test]
    fn fires_on_metrics_histograms_over_a_window() {
        let scrape = |n: f64, long: f64, slow: f64| {
            format!(
                "vllm:request_prompt_tokens_bucket{{le=\"1000.0\"}} {a}\nvllm:request_prompt_tokens_bucket{{le=\"20000.0\"}} {a}\nvllm:request_prompt_tokens_bucket{{le=\"50000.0\"}} {b}\nvllm:request_prompt_tokens_bucket{{le=\"+Inf\"}} {b}\nvllm:request_prompt_tokens_count {b}\nvllm:request_prompt_tokens_sum {s}\nvllm:time_to_first_token_seconds_bucket{{le=\"0.25\"}} {c}\nvllm:time_to_first_token_seconds_bucket{{le=\"1.0\"}} {c}\nvllm:time_to_first_token_seconds_bucket{{le=\"2.5\"}} {b}\nvllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {b}\n",
                a = n,
                b = n + long,
                s = n * 400.0 + long * 30_000.0,
                c = n + long - slow,
            )
        };
        let both = format!("{}{}", scrape(0.0, 0.0, 0.0), scrape(950.0, 50.0, 40.0));
        let f = case(&[("metrics", &both)])
            .snapshot(super::RULE.doc.id, "metrics_histograms_over_a_window")
            .unwrap();
        assert_eq!(f.evidence.len(), 2, "{:?}", f.evidence);
        assert!(f.evidence[0].text.contains("le=\"20000.0\""), "{:?}", f.evidence);
        // Short prompts only, or no TTFT tail: quiet.
        let short = format!("{}{}", scrape(0.0, 0.0, 0.0), scrape(1000.0, 0.0, 0.0));
        assert!(
            case(&[("metrics", &short)]).snapshot(super::RULE.doc.id, "quiet_short_prompts_window").is_none()
        );
        let fast = format!("{}{}", scrape(0.0, 0.0, 0.0), scrape(950.0, 50.0, 0.0));
        assert!(
            case(&[("metrics", &fast)]).snapshot(super::RULE.doc.id, "quiet_no_ttft_tail_window").is_none()
        );
    }
}
