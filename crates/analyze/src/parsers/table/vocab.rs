//! The vocabulary of the table reader: what a column header or a key names (TTFT, ITL, a
//! prompt length, a decode rate …), in which unit, and how a cell's number is written.
//!
//! Every name here is matched on a lower-cased key whose `_` and `-` became spaces, so
//! `first_token latency`, `First-Token Latency` and `FTL(ave)(s)` meet the same entry.

/// A value's unit, as written after the number or in the header (`(ms)`, `[s]`, `t/s`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unit {
    /// Nothing said.
    None,
    /// A duration; the factor to milliseconds.
    Time(f64),
    /// A duration per token (`ms/T`, `ms per token`); the factor to milliseconds.
    PerToken(f64),
    /// Tokens per second (`tok/s`, `t/s`, `tokens/sec/user`).
    TokRate,
    /// Requests per second or minute (`req/s`); the factor to per second.
    ReqRate(f64),
    /// Words per second.
    WordRate,
    /// A count of tokens (`tokens`, `tok`).
    Tokens,
    /// Memory; the factor to GiB.
    Mem(f64),
    /// A percentage or a ratio (`−88%`): never a figure here.
    Percent,
}

/// The unit named by `s` (already trimmed), else `None`.
pub(crate) fn unit(s: &str) -> Option<Unit> {
    let l = s.trim().trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']')).trim();
    let l = l.to_ascii_lowercase();
    let l = l.as_str();
    Some(match l {
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => Unit::Time(1.0),
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::Time(1e3),
        "us" | "µs" | "μs" | "usec" | "microseconds" => Unit::Time(1e-3),
        "ns" | "nsec" | "nanoseconds" => Unit::Time(1e-6),
        "minutes" => Unit::Time(60e3),
        "ms/t" | "ms/tok" | "ms/token" | "ms per token" | "ms/tokens" => Unit::PerToken(1.0),
        "s/t" | "s/tok" | "s/token" | "s per token" => Unit::PerToken(1e3),
        "t/s" | "tok/s" | "tokens/s" | "token/s" | "tps" | "tokens/sec" | "token/sec" | "tok/sec"
        | "tokens/second" | "tokens per second" | "tokens/sec/user" | "tok/s/user" | "toks/s" => {
            Unit::TokRate
        }
        "req/s" | "reqs/s" | "requests/s" | "req/sec" | "requests/sec" | "rps" | "qps" => Unit::ReqRate(1.0),
        "req/min" | "rpm" => Unit::ReqRate(1.0 / 60.0),
        "words/s" | "word/s" | "words/sec" => Unit::WordRate,
        "tokens" | "token" | "tok" | "toks" | "runs" => Unit::Tokens,
        "gib" | "gb" => Unit::Mem(1.0),
        "mib" | "mb" => Unit::Mem(1.0 / 1024.0),
        "%" | "percent" => Unit::Percent,
        _ => return None,
    })
}

/// A number as people write it in a table cell: `3,098`, `14,073.58`, `1443.02 ± 4.16`, `**32.1**`,
/// `196 ms`, `4.85s`, `~20`, `338.83T/s`. Returns the value and the unit that follows it (the
/// rest of the cell when it is one). Percentages and signed deltas are not figures (`None`).
pub(crate) fn cell_number(cell: &str) -> Option<(f64, Unit)> {
    let c = cell.trim().trim_matches(|ch: char| matches!(ch, '*' | '_' | '`' | '~' | '≈'));
    let c = c.split('±').next()?.trim();
    let c = c.strip_suffix("+/-").unwrap_or(c).trim();
    let (v, rest) = leading(c)?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Some((v, Unit::None));
    }
    match unit(rest) {
        Some(Unit::Percent) => None,
        Some(u) => Some((v, u)),
        None => None,
    }
}

/// The unsigned decimal at the start of `s` (thousands separators allowed when they group by
/// three), and what follows it.
pub(crate) fn leading(s: &str) -> Option<(f64, &str)> {
    let b = s.as_bytes();
    let mut end = 0;
    let mut digits = 0;
    let mut dot = false;
    while end < b.len() {
        let ch = b[end];
        if ch.is_ascii_digit() {
            digits += 1;
        } else if ch == b'.' && !dot && end + 1 < b.len() && b[end + 1].is_ascii_digit() {
            dot = true;
        } else if ch == b','
            && !dot
            && digits > 0
            && b.len() >= end + 4
            && b[end + 1..end + 4].iter().all(u8::is_ascii_digit)
            && b.get(end + 4).is_none_or(|n| !n.is_ascii_digit())
        {
            // `3,098` groups; `1,2` is a list.
        } else {
            break;
        }
        end += 1;
    }
    if digits == 0 {
        return None;
    }
    let text: String = s[..end].chars().filter(|c| *c != ',').collect();
    let v: f64 = text.parse().ok()?;
    v.is_finite().then_some((v, &s[end..]))
}

/// What a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Metric {
    Ttft,
    Itl,
    Tpot,
    E2e,
    /// Prompt processing: a time, a token count or a rate, by unit.
    Prefill,
    /// Generation: a time, a token count, a per-token time or a single stream's rate, by unit.
    Decode,
    InputLen,
    OutputLen,
    Concurrency,
    Batch,
    /// An offered request rate.
    Rate,
    /// Served requests per second.
    ReqThroughput,
    /// Tokens per second summed over every request in flight.
    TokThroughput,
    WordThroughput,
    /// llama-bench's `test` column (`pp512`, `tg128`).
    Test,
    /// llama-bench's `t/s` column.
    TestRate,
    /// A model's size in memory (llama-bench's `size`).
    Size,
    /// Layers offloaded to the GPU (`ngl`).
    Ngl,
}

fn has_word(k: &str, w: &str) -> bool {
    k.split(|c: char| !c.is_ascii_alphanumeric()).any(|x| x == w)
}

/// The metric a key names (lower-cased, `_`/`-` as spaces), before units decide between time,
/// count and rate.
pub(crate) fn metric(k: &str) -> Option<Metric> {
    let has = |w: &str| k.contains(w);
    let word = |w: &str| has_word(k, w);
    if has("second token") || has("first output token") || word("ttfo") || word("ttst") {
        return None;
    }
    if word("duration") || word("elapsed") || has("goodput") || word("std") || word("stddev") {
        return None;
    }
    // Counts of requests and of anything else (`Number of total requests: 362`).
    if word("number")
        || word("count")
        || word("requests")
        || word("reqs")
        || word("success")
        || word("seed")
        || word("messages")
    {
        return None;
    }
    // Longer keys are prose (`Restarting process in 5000ms`).
    if k.split_whitespace().count() > 7 {
        return None;
    }
    if has("per user") {
        return Some(Metric::Decode);
    }
    if word("ttft") || has("first token") || has("time to first") || word("ftl") || has("ftl(") {
        return Some(Metric::Ttft);
    }
    if has("inter token") || has("intertoken") || has("inter chunk") || word("itl") || has("tbt") {
        return Some(Metric::Itl);
    }
    if word("tpot") || has("time per output token") || has("per output token") || has("ms per token") {
        return Some(Metric::Tpot);
    }
    if word("test") {
        return Some(Metric::Test);
    }
    if k == "t/s" || k == "tokens/s" || k == "tok/s" {
        return Some(Metric::TestRate);
    }
    if word("size") && !has("batch") {
        return Some(Metric::Size);
    }
    if word("ngl") || has("gpu layers") {
        return Some(Metric::Ngl);
    }
    if has("token latency") {
        return Some(Metric::Tpot);
    }
    if word("throughput") || has("tok/s") {
        if has("req") || word("rps") || word("rpm") {
            return Some(Metric::ReqThroughput);
        }
        // `Prompt throughput (tokens/second)`: the prefill side.
        if word("prompt") || word("input") {
            return Some(Metric::Prefill);
        }
        return Some(Metric::TokThroughput);
    }
    let words = k.split_whitespace().count();
    if word("e2e")
        || word("e2el")
        || has("end to end")
        || has("request latency")
        || has("response time")
        || word("latency")
        || has("total time")
        || k == "total"
        || k.ends_with(" total") && words <= 3
        || word("wall")
    {
        return Some(Metric::E2e);
    }
    // koboldcpp's `Process:` and `Processing Prompt`: short keys only (`Restarting process in`
    // is prose).
    if has("prompt eval")
        || has("prompt processing")
        || word("prefill")
        || (k.starts_with("process") || k.ends_with("processing")) && words <= 3
    {
        return Some(Metric::Prefill);
    }
    if has("prompt") || word("input") || word("isl") || word("context") || word("ctx") || has("input len") {
        return Some(Metric::InputLen);
    }
    if has("words/s") || word("words") {
        return Some(Metric::WordThroughput);
    }
    if word("rps") || word("rpm") || has("req/s") {
        return Some(Metric::ReqThroughput);
    }
    if has("eval")
        || word("decode")
        || word("generate")
        || word("generation")
        || word("generating")
        || word("tg")
    {
        return Some(Metric::Decode);
    }
    if word("output")
        || word("osl")
        || word("toks")
        || has("completion")
        || has("generated")
        || has("output len")
    {
        return Some(Metric::OutputLen);
    }
    if has("concurren") || word("clients") || word("parallel") || word("users") || word("c") {
        return Some(Metric::Concurrency);
    }
    if word("batch") || word("bs") {
        return Some(Metric::Batch);
    }
    if word("rate") || word("qps") {
        return Some(Metric::Rate);
    }
    None
}

/// The statistic a key names: `mean` (`avg`, `ave`, `average`), `median` (`p50`, `50%`),
/// `p90`, `p99`, `p99.9`, `min`, `max`; `value` when none (one request's figure).
pub(crate) fn stat(k: &str) -> &'static str {
    for w in k.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '%')) {
        let w = w.trim_end_matches('.');
        let s = match w {
            "mean" | "avg" | "ave" | "average" => "mean",
            "median" | "mdn" | "p50" | "50%" | "50th" => "median",
            "p90" | "90%" | "90th" => "p90",
            "p95" | "95%" | "95th" => "p95",
            "p99" | "99%" | "99th" => "p99",
            "p99.9" | "p999" | "99.9%" => "p99.9",
            "p75" | "75%" => "p75",
            "p25" | "25%" => "p25",
            "min" | "minimum" => "min",
            "max" | "maximum" => "max",
            _ => continue,
        };
        return s;
    }
    "value"
}

/// A header cell that is only a statistic's name (`avg`, `p99`, `50%(s)`).
pub(crate) fn is_stat_cell(k: &str) -> bool {
    let (name, _) = split_unit(k);
    let n = name.trim().to_ascii_lowercase();
    !n.is_empty()
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '%')
        && stat(&n) != "value"
}

/// `Mean TTFT (ms)` → (`Mean TTFT`, ms); `FTL(ave)(s)` → (`FTL(ave)`, s). The last bracketed
/// group is the unit when it names one.
pub(crate) fn split_unit(k: &str) -> (&str, Unit) {
    let t = k.trim();
    for (open, close) in [('(', ')'), ('[', ']')] {
        if t.ends_with(close)
            && let Some(i) = t.rfind(open)
            && let Some(u) = unit(&t[i + 1..t.len() - 1])
        {
            return (t[..i].trim(), u);
        }
    }
    (t, Unit::None)
}

/// A unit written as a word of the key (`mean_ttft_ms`, `ttft s`): only time units and rates.
pub(crate) fn key_unit(k: &str) -> Unit {
    k.split_whitespace()
        .skip(1)
        .filter_map(unit)
        .find(|u| matches!(u, Unit::Time(_) | Unit::TokRate | Unit::ReqRate(_)))
        .unwrap_or(Unit::None)
}

/// A key as [`metric`] wants it: lower case, `_` and `-` as spaces, markdown marks dropped.
pub(crate) fn normal(k: &str) -> String {
    k.chars()
        .filter(|c| !matches!(c, '*' | '`'))
        .map(|c| if matches!(c, '_' | '-') { ' ' } else { c.to_ascii_lowercase() })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// llama-bench's test name: `pp512` / `pp 512` → (prefill, 512), `tg128` → (decode, 128).
/// Combined tests (`pp512+tg128`) and depth variants (`pp512 @ d1024`) are not single phases.
pub(crate) fn bench_test(cell: &str) -> Option<(bool, f64)> {
    let c = cell.trim();
    if c.contains('+') || c.contains('@') {
        return None;
    }
    let (prefill, rest) = match c.strip_prefix("pp") {
        Some(r) => (true, r),
        None => (false, c.strip_prefix("tg")?),
    };
    let n: f64 = rest.trim().parse().ok()?;
    Some((prefill, n))
}

/// The figure's name for a value of `metric` with `stat` in `unit`, and its value in the
/// figure's unit (ms, tokens, per second …). `None` when the unit does not fit the metric.
pub(crate) fn figure(metric: Metric, stat: &str, unit: Unit, v: f64) -> Option<(String, f64)> {
    let latency = |base: &str, default_s_below: f64| -> Option<(String, f64)> {
        let ms = match unit {
            Unit::Time(f) | Unit::PerToken(f) => v * f,
            // Unit-less: seconds when small (`Response time: 29.57`), else milliseconds.
            Unit::None if v < default_s_below => v * 1e3,
            Unit::None => v,
            _ => return None,
        };
        Some((format!("{base}.{stat}"), ms))
    };
    Some(match metric {
        Metric::Ttft => latency("ttft_ms", 300.0)?,
        Metric::E2e => latency("e2e_ms", 300.0)?,
        Metric::Itl => latency("itl_ms", 1.0)?,
        Metric::Tpot => match unit {
            // `token latency: 11.12s` is a request's whole generation (lmdeploy), not a gap.
            Unit::Time(f) if v * f >= 1_000.0 => (format!("e2e_ms.{stat}"), v * f),
            _ => latency("tpot_ms", 1.0)?,
        },
        Metric::Prefill | Metric::Decode => {
            let p = if metric == Metric::Prefill { "prefill" } else { "decode" };
            match unit {
                Unit::Time(f) => (format!("{p}_ms"), v * f),
                Unit::PerToken(f) => (format!("{p}_ms_per_token"), v * f),
                Unit::TokRate => (format!("{p}_tps"), v),
                Unit::Tokens => (format!("{p}_tokens"), v),
                _ => return None,
            }
        }
        Metric::InputLen => match unit {
            Unit::None | Unit::Tokens => ("input_len".to_owned(), v),
            Unit::TokRate => ("prefill_tps".to_owned(), v),
            _ => return None,
        },
        Metric::OutputLen => match unit {
            Unit::None | Unit::Tokens => ("output_len".to_owned(), v),
            Unit::TokRate => ("output_tps".to_owned(), v),
            _ => return None,
        },
        Metric::Concurrency => ("concurrency".to_owned(), v),
        Metric::Batch => ("batch".to_owned(), v),
        Metric::Rate => match unit {
            Unit::ReqRate(f) => ("rate".to_owned(), v * f),
            Unit::None => ("rate".to_owned(), v),
            _ => return None,
        },
        Metric::ReqThroughput => match unit {
            Unit::ReqRate(f) => ("req_per_s".to_owned(), v * f),
            Unit::None => ("req_per_s".to_owned(), v),
            _ => return None,
        },
        Metric::TokThroughput => match unit {
            Unit::TokRate | Unit::None => ("output_tps".to_owned(), v),
            Unit::ReqRate(f) => ("req_per_s".to_owned(), v * f),
            _ => return None,
        },
        Metric::WordThroughput => ("words_per_s".to_owned(), v),
        Metric::Size => match unit {
            Unit::Mem(f) => ("model_gib".to_owned(), v * f),
            _ => return None,
        },
        Metric::Ngl => ("ngl".to_owned(), v),
        Metric::Test | Metric::TestRate => return None,
    })
}
