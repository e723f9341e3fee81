//! The definitions every printed figure refers to. Tools disagree on names; we print ours.
//!
//! One table, read by the CLI reports, the site and the flashcards, so a figure's meaning is
//! stated the same way everywhere.

/// One measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The name llm-triage prints.
    pub name: &'static str,
    /// What is measured, from when to when.
    pub meaning: &'static str,
    /// What other tools call the same (or the nearest) figure.
    pub others: &'static str,
    /// [`Definition::meaning`] in Chinese.
    pub meaning_zh: &'static str,
    /// [`Definition::others`] in Chinese.
    pub others_zh: &'static str,
}

impl Definition {
    /// What is measured, in `lang`.
    pub fn meaning_in(&self, lang: crate::lang::Lang) -> &'static str {
        lang.pick(self.meaning, self.meaning_zh)
    }

    /// What other tools call it, in `lang`.
    pub fn others_in(&self, lang: crate::lang::Lang) -> &'static str {
        lang.pick(self.others, self.others_zh)
    }
}

/// Time to first token.
pub const TTFT: Definition = Definition {
    name: "TTFT",
    meaning: "request sent -> first SSE event carrying any generated token (text, reasoning or tool call); a role-only first chunk is not a token. Sent: the request's last byte written where the record has send_ms (the kernel-stamped transport), else handed to the HTTP client",
    others: "vLLM bench TTFT; aiperf TTFT; vLLM Prometheus time_to_first_token_seconds starts at server arrival, without the network",
    meaning_zh: "请求发出 -> 第一个携带生成 token（文本、推理或工具调用）的 SSE 事件；只有 role 的首个数据块不算 token。发出：记录带 send_ms 时（内核时间戳传输）为请求最后一个字节写出，否则为交给 HTTP 客户端",
    others_zh: "vLLM bench 的 TTFT；aiperf 的 TTFT；vLLM Prometheus 的 time_to_first_token_seconds 从请求到达服务端开始计时，不含网络",
};

/// Time to first output (answer) token.
pub const TTFO: Definition = Definition {
    name: "TTFO",
    meaning: "request sent -> first answer (non-reasoning) token",
    others: "aiperf TTFO; equals TTFT for models that do not reason",
    meaning_zh: "请求发出 -> 第一个回答（非推理）token",
    others_zh: "aiperf 的 TTFO；对不做推理的模型等于 TTFT",
};

/// Inter-token latency.
pub const ITL: Definition = Definition {
    name: "ITL",
    meaning: "gap between successive token-carrying events, every gap of every request",
    others: "vLLM bench ITL; aiperf ICL; vLLM Prometheus inter_token_latency_seconds is the server-side per-step analogue",
    meaning_zh: "相邻两个携带 token 的事件之间的间隔，统计每个请求的每一个间隔",
    others_zh: "vLLM bench 的 ITL；aiperf 的 ICL；vLLM Prometheus 的 inter_token_latency_seconds 是服务端按步统计的对应指标",
};

/// Time per output token.
pub const TPOT: Definition = Definition {
    name: "TPOT",
    meaning: "per request (last token - first token) / (output tokens - 1)",
    others: "vLLM bench TPOT; aiperf ITL; guidellm ITL",
    meaning_zh: "按请求计算：（最后一个 token − 第一个 token）/（输出 token 数 − 1）",
    others_zh: "vLLM bench 的 TPOT；aiperf 的 ITL；guidellm 的 ITL",
};

/// End-to-end latency.
pub const E2E: Definition = Definition {
    name: "E2E",
    meaning: "request sent -> last token (not socket close)",
    others: "vLLM bench E2EL; vLLM Prometheus e2e_request_latency_seconds (server side)",
    meaning_zh: "请求发出 -> 最后一个 token（不是连接关闭）",
    others_zh: "vLLM bench 的 E2EL；vLLM Prometheus 的 e2e_request_latency_seconds（服务端）",
};

/// Inter-token latency per token, for events that carry several tokens.
pub const ITL_PER_TOKEN: Definition = Definition {
    name: "ITL/tok",
    meaning: "each gap between successive token-carrying events divided by the tokens the later event carried, one value per gap; tokens per event from the server's cumulative usage on every event (exact), else its usage total spread evenly over the events (an estimate, exact only when every event carries as many), else one per event (chunk_token_source)",
    others: "genai-perf divides each gap by the tokens of the chunk; vLLM bench ITL records one sample per chunk (our ITL); equals ITL when every event carries one token",
    meaning_zh: "相邻两个携带 token 的事件之间的间隔除以后一个事件携带的 token 数，每个间隔一个值；每个事件的 token 数取自服务端在每个事件上给出的累计 usage（精确），否则把 usage 总数平均分到各事件（估计值，只有每个事件 token 数相同时才精确），否则按每个事件一个 token 计（chunk_token_source）",
    others_zh: "genai-perf 用块内 token 数去除每个间隔；vLLM bench 的 ITL 每个块记一个样本（即本工具的 ITL）；每个事件只带一个 token 时与 ITL 相同",
};

/// How late the client started a request of an open-loop run.
pub const DISPATCH_LAG: Definition = Definition {
    name: "dispatch lag",
    meaning: "scheduled start -> request dispatched, open loop (--rate): the client's own delay — its timer (~1 ms), a busy client, or a request waiting for a free --concurrency slot",
    others: "what coordinated omission hides: closed-loop tools start a request only when the client is ready",
    meaning_zh: "计划开始 -> 请求派发（开环，--rate）：客户端自身的延迟——定时器（约 1 ms）、繁忙的客户端，或等待空闲 --concurrency 名额的请求",
    others_zh: "协调遗漏（coordinated omission）所隐藏的部分：闭环工具只在客户端就绪时才发请求",
};

/// TTFT counted from the scheduled start.
pub const TTFT_FROM_SCHEDULE: Definition = Definition {
    name: "TTFT from schedule",
    meaning: "scheduled start -> first token-carrying event (TTFT + dispatch lag): what a user arriving on schedule waits, whether or not the client kept up",
    others: "the coordinated-omission-corrected TTFT (Gil Tene's wrk2 measures latency from the intended start); TTFT counts from the actual send",
    meaning_zh: "计划开始 -> 第一个携带 token 的事件（TTFT + 发送延迟）：按计划到达的用户要等多久，无论客户端是否跟上",
    others_zh: "经协调遗漏校正的 TTFT（Gil Tene 的 wrk2 从预定开始时间计延迟）；TTFT 从实际发送计时",
};

/// E2E counted from the scheduled start.
pub const E2E_FROM_SCHEDULE: Definition = Definition {
    name: "E2E from schedule",
    meaning: "scheduled start -> last token (E2E + dispatch lag)",
    others: "the coordinated-omission-corrected E2E; E2E counts from the actual send",
    meaning_zh: "计划开始 -> 最后一个 token（E2E + 发送延迟）",
    others_zh: "经协调遗漏校正的 E2E；E2E 从实际发送计时",
};

/// Time a request waited in the server's queue.
pub const QUEUE: Definition = Definition {
    name: "queue",
    meaning: "enqueue -> scheduled, from server logs",
    others: "vLLM request_queue_time_seconds",
    meaning_zh: "入队 -> 被调度，取自服务端日志",
    others_zh: "vLLM 的 request_queue_time_seconds",
};

/// The client-side figures a probe reports, in report order.
pub const PROBE_FIGURES: &[Definition] = &[TTFT, TTFO, ITL, ITL_PER_TOKEN, TPOT, E2E];

/// The figures an open-loop probe (`--rate`) reports besides [`PROBE_FIGURES`].
pub const PROBE_OPEN_LOOP_FIGURES: &[Definition] = &[DISPATCH_LAG, TTFT_FROM_SCHEDULE, E2E_FROM_SCHEDULE];

/// Every definition.
pub const ALL: &[Definition] = &[TTFT, TTFO, ITL, TPOT, E2E, QUEUE];

/// How quantiles of exact samples are computed (stated in every report that prints them).
pub const QUANTILE_METHOD: &str =
    "quantiles interpolate linearly between closest ranks (numpy's default): rank = q x (n - 1)";

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = super::ALL.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), super::ALL.len());
        for d in super::ALL.iter().chain(super::PROBE_FIGURES).chain(super::PROBE_OPEN_LOOP_FIGURES) {
            assert!(crate::lang::has_cjk(d.meaning_zh) && crate::lang::has_cjk(d.others_zh), "{}", d.name);
        }
    }
}
