//! Rule `cold-start`: the first requests after a (re)start pay for loading and compiling.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ColdStart,
        class: Class::TtftHigh,
        title: "Cold start: the first requests hit an instance that is not warm",
        detects: "The earliest requests in a request log are far slower than the rest, or the engine log shows weights loading / CUDA graphs capturing alongside traffic, or metrics over a window show the process starting in it (`process_start_time_seconds`, `up`) with a TTFT tail.",
        why: "A new or restarted instance loads weights, captures CUDA graphs and fills caches; requests routed to it before that is done see seconds of TTFT, which looks like an incident in the p99.",
        example: "The first 5 requests after `Model loading took 14.99 GiB and 32.1 s` have TTFT 6–9 s; the rest 250 ms.",
        fix: "Warm up each instance with synthetic requests before it takes traffic (readiness probe after a warm-up generation), keep a minimum of warm replicas, roll out gradually.",
        zh: RuleText {
            title: "冷启动：最早的请求打到了还没预热的实例",
            detects: "请求日志里最早的一批请求比其余请求慢得多，或者引擎日志显示有流量时还在加载权重 / 捕获 CUDA graph，或者一段时间窗的指标显示进程在窗内启动（`process_start_time_seconds`、`up`）且 TTFT 有长尾。",
            why: "新启动或重启的实例要加载权重、捕获 CUDA graph、填充缓存；在这之前被路由过来的请求 TTFT 会达到数秒，在 p99 上看就像一次故障。",
            example: "`Model loading took 14.99 GiB and 32.1 s` 之后的前 5 个请求 TTFT 为 6–9 s，其余请求 250 ms。",
            fix: "实例接流量前先用合成请求预热（readiness 探针等预热生成完成再通过），保持最少数量的热副本，灰度发布。",
        },
    },
    check,
};

/// The first scrape is before `process_start_time_seconds` (the engine (re)started in the
/// window) and vLLM's TTFT histogram over the window has p99 ≥ 3× p50 and ≥ half the TTFT
/// target (p99 at its bucket's lower bound, p50 at its upper). `up` at 0 in the first scrape —
/// Prometheus found no `/metrics` while the engine loaded — makes it surer.
fn from_metrics(f: &Facts, lang: Lang) -> Option<Judged> {
    use triage_base::stats::{BucketQuantile, histogram_quantile};
    let m = &f.metrics;
    let (first, last) = m.window()?;
    let window_start_s = first.timestamp_ms? as f64 / 1000.0;
    let (started_s, pst) = last.max("process_start_time_seconds")?;
    // A minute of slack: the exporter's start time can precede its first sample.
    if started_s < window_start_s - 60.0 {
        return None;
    }
    let (ttft, _) = m.window_histogram("vllm:time_to_first_token_seconds")?;
    let upper = |q: BucketQuantile| match q {
        BucketQuantile::BelowFirstBucket { upper } | BucketQuantile::Within { upper, .. } => Some(upper),
        _ => None,
    };
    let lower = |q: BucketQuantile| match q {
        BucketQuantile::Within { lower, .. } | BucketQuantile::AboveLastBucket { lower } => Some(lower),
        _ => None,
    };
    let t50 = upper(histogram_quantile(0.5, &ttft).0)?;
    let t99 = lower(histogram_quantile(0.99, &ttft).0)?;
    if t99 < 3.0 * t50 || t99 * 1000.0 < 0.5 * f.slo.ttft_ms {
        return None;
    }
    let mut evidence = vec![last.evidence(pst)];
    let down = first.series.iter().find(|s| s.name == "up" && s.value == 0.0);
    if let Some(up) = down {
        evidence.push(first.evidence(up));
    }
    let after = started_s - window_start_s;
    let why = lang.pick(
        format!(
            "the engine process started {after:.0} s into the window (process_start_time_seconds){}, and TTFT p99 over the window is ≥ {t99} s against p50 ≤ {t50} s",
            if down.is_some() { ", Prometheus found it down (up 0) at first" } else { "" }
        ),
        format!(
            "引擎进程在时间窗开始后 {after:.0} s 才启动（process_start_time_seconds）{}，时间窗内 TTFT p99 ≥ {t99} s，p50 ≤ {t50} s",
            if down.is_some() { "，起初 Prometheus 抓取不到它（up 为 0）" } else { "" }
        ),
    );
    Some((if down.is_some() { 0.8 } else { 0.7 }, why, evidence))
}

/// What a way of seeing a cold start found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let (confidence, reasons, evidence) = match slow_first_requests(f, lang) {
        Some(first) => with_startup(f, lang, first),
        // Without a request log: each other sign of a start that requests waited for, in turn.
        None => backlog_after_startup(f, lang)
            .or_else(|| from_metrics(f, lang))
            .or_else(|| models_swapped(f, lang))
            .or_else(|| slow_load(f, lang))
            .or_else(|| reload_while_serving(f, lang))
            .or_else(|| first_request(f, lang))
            .map_or((0.0, Vec::new(), Vec::new()), |(c, why, lines)| (c, vec![why], lines)),
    };
    // The English summary is the reasons alone; the Chinese one is led by "冷启动".
    RULE.doc.finding_from_reasons(lang, ("", "冷启动"), &reasons, FindingBody {
        confidence,
        evidence,
        remediation: texts(lang, &[
            (
                "send a few warm-up generations (short and long prompts) before marking the instance ready",
                "在把实例标记为就绪之前，先发几次预热生成（长短 prompt 都要有）",
            ),
            (
                "make the readiness probe wait for the warm-up, not just for /health",
                "readiness 探针要等预热完成，而不只是 /health 通过",
            ),
            (
                "keep a minimum number of warm replicas; scale out ahead of traffic",
                "保持最少数量的热副本；在流量到来之前提前扩容",
            ),
        ]),
        next_checks: texts(lang, &[(
            "check whether the slow requests line up with deployments or autoscaling events",
            "检查慢请求是否与发布或自动扩缩容事件在时间上对得上",
        )]),
    })
}

/// A request log whose first requests waited far longer than the rest: the 5 earliest
/// requests' median TTFT at least 5× the overall median and at least a second.
fn slow_first_requests(f: &Facts, lang: Lang) -> Option<Judged> {
    let r = &f.requests;
    if r.earliest.len() < 5 || r.ttft_ms.count() < 20 {
        return None;
    }
    let p50 = q(&r.ttft_ms, 0.5)?;
    let mut first: Vec<f64> = r.earliest.iter().take(5).filter_map(|row| row.ttft_ms).collect();
    triage_base::sort::sort_f64(&mut first);
    let &median_first = first.get(first.len() / 2)?;
    let slow = median_first >= 5.0 * p50 && median_first >= 1000.0;
    if !slow {
        return None;
    }
    let why = lang.pick(
        format!(
            "the 5 earliest requests have a median TTFT of {median_first:.0} ms against {p50:.0} ms overall"
        ),
        format!("最早的 5 个请求 TTFT 中位数为 {median_first:.0} ms，而整体为 {p50:.0} ms"),
    );
    let lines = r.earliest.iter().take(2).filter_map(|row| row.evidence.clone()).collect();
    Some((0.7, why, lines))
}

/// A start-up in the log corroborates slow first requests; on its own (every complete log
/// starts with one) it says nothing about latency.
fn with_startup(
    f: &Facts,
    lang: Lang,
    (confidence, why, mut evidence): Judged,
) -> (f64, Vec<String>, Vec<EvidenceLine>) {
    let mut reasons = vec![why];
    let Some(started) = f.vllm.startup_events.first() else { return (confidence, reasons, evidence) };
    reasons.push(
        lang.pick(
            "the engine log shows the instance (re)starting (weights loading, CUDA graph capture) in the same window",
            "引擎日志显示实例在同一时间窗口内（重新）启动（加载权重、捕获 CUDA graph）",
        )
        .to_owned(),
    );
    evidence.push(started.clone());
    (0.85, reasons, evidence)
}

/// Stats only: the first stats lines after the start-up show a queue that then drains —
/// the requests that arrived while the engine was loading, compiling and capturing.
fn backlog_after_startup(f: &Facts, lang: Lang) -> Option<Judged> {
    if let Some(started) =
        f.vllm.startup_events.iter().filter_map(|e| crate::parsers::vllm::stamp(&e.text)).reduce(f64::max)
        && let Some(first) = f.vllm.stats.iter().find(|s| s.t.is_some_and(|t| t >= started))
        && first.t.is_some_and(|t| t - started <= 120.0)
        && let Some(backlog) = first.waiting.filter(|w| *w > 0.0)
        && let Some(last) =
            f.vllm.stats.iter().rev().find(|s| s.t.is_some_and(|t| t > first.t.unwrap_or(0.0)))
        && last.waiting.is_some_and(|w| w <= backlog / 2.0)
    {
        let (then, now) = (backlog, last.waiting.unwrap_or(0.0));
        let why = lang.pick(
            format!("the first stats line after the start-up shows {then:.0} requests waiting, which drain to {now:.0}: they arrived while the engine was loading, compiling and capturing graphs"),
            format!("启动后的第一条统计行有 {then:.0} 个请求在排队，随后降到 {now:.0}：它们是在引擎加载权重、编译和捕获 CUDA graph 时到达的"),
        );
        let lines = vec![
            f.vllm.startup_events[f.vllm.startup_events.len() - 1].clone(),
            first.evidence.clone(),
            last.evidence.clone(),
        ];
        return Some((0.8, why, lines));
    }
    None
}

/// llama-server / Ollama: models swapped in and out, so each request waits for a load.
fn models_swapped(f: &Facts, lang: Lang) -> Option<Judged> {
    let l = &f.llama;
    if l.eviction_count < 2 || l.loads.len() < 2 {
        return None;
    }
    let mean = l.loads.iter().map(|s| s.seconds).sum::<f64>() / l.loads.len() as f64;
    let (n, loads) = (l.eviction_count, l.loads.len());
    let why = lang.pick(
        format!("models are swapped: {n} eviction(s) to make space and {loads} load(s) of about {mean:.0} s each, so requests wait for a model to load"),
        format!("模型在来回换入换出：为腾出显存驱逐了 {n} 次、加载了 {loads} 次，每次约 {mean:.0} s，请求要等模型加载"),
    );
    let mut lines: Vec<EvidenceLine> = l.evictions.iter().take(1).cloned().collect();
    lines.extend(l.loads.iter().take(2).map(|s| s.evidence.clone()));
    Some((0.8, why, lines))
}

/// llama-server / Ollama: one slow load (5 s or more) that a request waited for (Gin's latency,
/// `ollama run --verbose`'s load duration).
fn slow_load(f: &Facts, lang: Lang) -> Option<Judged> {
    let l = &f.llama;
    let load = l.loads.iter().filter(|s| s.seconds >= 5.0).max_by(|a, b| a.seconds.total_cmp(&b.seconds))?;
    // A request whose latency is mostly the load (surer), or that waited for it and went on
    // generating (less sure: a slow generation after it adds to it).
    let waited = |hi: f64| {
        l.gin_latency
            .iter()
            .filter(|(_, s, _)| (0.8 * load.seconds..=hi).contains(s) && *s * 1e3 >= f.slo.ttft_ms)
            .map(|(_, s, e)| (*s, e))
            .next()
    };
    let (sure, waited) = match waited(2.0 * load.seconds) {
        Some(w) => (0.8, Some(w)),
        None => (0.6, waited(f64::INFINITY)),
    };
    if !((waited.is_some() || load.in_request) && (load.seconds >= 10.0 || waited.is_some())) {
        return None;
    }
    let confidence = if waited.is_some() { sure } else { 0.8 };
    let s = load.seconds;
    let why = match waited {
        Some((w, _)) if w > 2.0 * s => lang.pick(
            format!("the model took {s:.1} s to load before a request that took {w:.1} s in all: its first token waited for the load"),
            format!("模型加载用了 {s:.1} s，之后有请求总共用了 {w:.1} s：它的第一个 token 要等模型加载完"),
        ),
        Some((w, _)) => lang.pick(
            format!("the model took {s:.1} s to load and a request waited {w:.1} s for it"),
            format!("模型加载用了 {s:.1} s，有请求为此等了 {w:.1} s"),
        ),
        None => lang.pick(
            format!("the request spent {s:.1} s loading the model before its first token"),
            format!("这个请求在第一个 token 之前花了 {s:.1} s 加载模型"),
        ),
    };
    let mut lines = vec![load.evidence.clone()];
    lines.extend(waited.map(|(_, e)| e.clone()));
    Some((confidence, why, lines))
}

/// Ollama loading a model while it is already serving (a reload when clients switch, a model
/// evicted and loaded again), and requests that took seconds: they waited for the load.
fn reload_while_serving(f: &Facts, lang: Lang) -> Option<Judged> {
    let l = &f.llama;
    if let Some((start, served)) = l.load_starts.iter().find(|(_, served)| *served > 0)
        && let Some((_, s, slow)) = l
            .gin_latency
            .iter()
            .filter(|(status, s, _)| *status < 400 && *s * 1e3 >= f.slo.ttft_ms)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        let why = lang.pick(
            format!("the model is loaded again after {served} request(s) were already served, and a request took {s:.1} s: requests wait for the load before their first token"),
            format!("在已经处理了 {served} 个请求之后，模型又被重新加载，有请求用了 {s:.1} s：请求在第一个 token 之前要等模型加载"),
        );
        return Some((0.6, why, vec![start.clone(), slow.clone()]));
    }
    None
}

/// A client's own timings, request by request: the first took ten times the rest (and more
/// than the TTFT target): it paid for the warm-up (CUDA graphs, compilation, caches).
fn first_request(f: &Facts, lang: Lang) -> Option<Judged> {
    let (first, rest, lines) = first_request_outlier(f)?;
    let why = lang.pick(
        format!("the first request took {:.1} s and the ones after it {:.1} s (median): the first paid for the engine's warm-up", first / 1e3, rest / 1e3),
        format!("第一个请求用了 {:.1} s，之后的请求只要 {:.1} s（中位数）：第一个请求承担了引擎的预热", first / 1e3, rest / 1e3),
    );
    Some((0.6, why, lines))
}

/// Requests timed one by one in a pasted table or `key: value` lines (`Response time: 29.57`,
/// one figure per request, in input order): the first's time, the median of the rest and the two
/// lines, when the first is at least ten times the rest and above the TTFT target.
fn first_request_outlier(f: &Facts) -> Option<(f64, f64, Vec<EvidenceLine>)> {
    let per_request: Vec<(f64, &EvidenceLine)> = f
        .tables
        .rows
        .iter()
        .filter_map(|r| {
            let (name, v, i) =
                r.values.iter().find(|(k, _, _)| k.starts_with("e2e_ms") || k.starts_with("ttft_ms"))?;
            // One request's figure, not a statistic over many.
            let stat = name.split_once('.').map_or("", |(_, s)| s);
            (stat.is_empty() || stat == "value").then_some(())?;
            Some((*v, r.lines.get(*i as usize)?))
        })
        .take(64)
        .collect();
    let (&(first, first_line), rest) = per_request.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let mut times: Vec<f64> = rest.iter().map(|(v, _)| *v).collect();
    let median = triage_base::stats::median(&mut times)?;
    (median > 0.0 && first >= 10.0 * median && first >= f.slo.ttft_ms)
        .then(|| (first, median, vec![first_line.clone(), rest[0].1.clone()]))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_a_first_request_ten_times_the_rest() {
        let timings = "first call\nResponse time: 24.1\nsecond call\nResponse time: 0.91\nthird call\nResponse time: 0.87\n";
        let f =
            case(&[("client.txt", timings)]).snapshot(RuleId::ColdStart, "first_request_outlier").unwrap();
        assert_eq!((f.evidence[0].line, f.evidence[1].line), (2, 4));
        // Requests alike, or a first one slower but below the TTFT target: no warm-up to blame.
        let alike = "Response time: 2.4\nResponse time: 2.1\nResponse time: 2.2\n";
        assert!(case(&[("client.txt", alike)]).fired(RuleId::ColdStart).is_none());
        let quick = "Response time: 1.5\nResponse time: 0.1\nResponse time: 0.1\n";
        assert!(case(&[("client.txt", quick)]).fired(RuleId::ColdStart).is_none());
    }

    #[test]
    fn fires_on_slow_first_requests() {
        let log: String = (0..40)
            .map(|i| {
                format!(
                    "{{\"enqueue_time\":{i},\"first_token_time\":{}}}\n",
                    i as f64 + if i < 5 { 7.5 } else { 0.25 }
                )
            })
            .collect();
        let f =
            case(&[("req.jsonl", &log)]).snapshot(RuleId::ColdStart, "fires_on_slow_first_requests").unwrap();
        assert!(f.summary.contains("7500 ms"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_steady_traffic() {
        let log: String =
            (0..40).map(|i| format!("{{\"enqueue_time\":{i},\"first_token_time\":{}.25}}\n", i)).collect();
        assert!(
            case(&[("req.jsonl", &log)]).snapshot(RuleId::ColdStart, "quiet_on_steady_traffic").is_none()
        );
    }

    #[test]
    fn a_start_up_in_the_log_alone_is_not_a_cold_start() {
        let log = "INFO 11-29 10:00:00 [gpu_model_runner.py:1] Model loading took 14.99 GiB and 32.1 seconds\nINFO 11-29 10:01:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 150.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n";
        assert!(
            case(&[("vllm.log", log)])
                .snapshot(RuleId::ColdStart, "a_start_up_in_the_log_alone_is_not_a_cold_start")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_ttft_cold_start_first_request_load: [("ttft-cold-start-first-request-load.log", fixture!("incidents/ollama/ttft-cold-start-first-request-load.log"))],
        corpus_ttft_model_swapping_evictions: [("ttft-model-swapping-evictions.log", fixture!("incidents/ollama/ttft-model-swapping-evictions.log"))],
    }

    /// Two timestamped scrapes: the engine started in the window (down at first) and the TTFT
    /// tail is long; an engine started days ago with the same tail is not a cold start.
    #[test]
    fn fires_on_a_start_in_the_window_from_metrics() {
        let scrapes = |started: f64| {
            format!(
                "# TYPE up gauge\nup 0 1796394257000\nvllm:time_to_first_token_seconds_bucket{{le=\"0.25\"}} 0 1796394257000\nvllm:time_to_first_token_seconds_bucket{{le=\"40.0\"}} 0 1796394257000\nvllm:time_to_first_token_seconds_bucket{{le=\"80.0\"}} 0 1796394257000\nvllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} 0 1796394257000\nprocess_start_time_seconds {started} 1796394257000\nup 1 1796394497000\nvllm:time_to_first_token_seconds_bucket{{le=\"0.25\"}} 600 1796394497000\nvllm:time_to_first_token_seconds_bucket{{le=\"40.0\"}} 610 1796394497000\nvllm:time_to_first_token_seconds_bucket{{le=\"80.0\"}} 700 1796394497000\nvllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} 700 1796394497000\nprocess_start_time_seconds {started} 1796394497000\n"
            )
        };
        let f = case(&[("metrics", &scrapes(1_796_394_257.0))])
            .snapshot(RuleId::ColdStart, "start_in_the_window_from_metrics")
            .unwrap();
        assert_eq!(f.evidence.len(), 2, "{:?}", f.evidence);
        assert!(f.evidence[0].text.starts_with("process_start_time_seconds"), "{:?}", f.evidence);
        let days_ago = scrapes(1_796_135_057.0);
        let quiet = case(&[("metrics", &days_ago)]).snapshot(RuleId::ColdStart, "quiet_started_days_ago");
        assert!(quiet.is_none());
    }
}
