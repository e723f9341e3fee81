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
    meaning: "request sent -> first SSE event carrying any generated token (text, reasoning or tool call); a role-only first chunk is not a token",
    others: "vLLM bench TTFT; aiperf TTFT; vLLM Prometheus time_to_first_token_seconds starts at server arrival, without the network",
    meaning_zh: "请求发出 -> 第一个携带生成 token（文本、推理或工具调用）的 SSE 事件；只有 role 的首个数据块不算 token",
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

/// Time a request waited in the server's queue.
pub const QUEUE: Definition = Definition {
    name: "queue",
    meaning: "enqueue -> scheduled, from server logs",
    others: "vLLM request_queue_time_seconds",
    meaning_zh: "入队 -> 被调度，取自服务端日志",
    others_zh: "vLLM 的 request_queue_time_seconds",
};

/// The client-side figures a probe reports, in report order.
pub const PROBE_FIGURES: &[Definition] = &[TTFT, TTFO, ITL, TPOT, E2E];

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
        for d in super::ALL {
            assert!(crate::lang::has_cjk(d.meaning_zh) && crate::lang::has_cjk(d.others_zh), "{}", d.name);
        }
    }
}
