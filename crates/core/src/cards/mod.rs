//! Interview flashcards: the deck (from the rules' docs, the definitions table, the article's
//! interview questions and the anatomy of real log lines) and an FSRS scheduler.
//!
//! Cards are generated from the same sources the analyzer uses, so a card never teaches
//! something the tool does not do. Scheduling is FSRS-4.5 with its published default weights;
//! time is an argument (days as `f64`, any origin), like everywhere in core.

use crate::analyze::rules;
use crate::defs;
use serde::{Deserialize, Serialize};

/// A language of the deck (the core's one language type, re-exported here).
pub use crate::lang::Lang;

/// Where a card comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardKind {
    Interview,
    Definition,
    Rule,
    LogAnatomy,
}

/// One card, in both languages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// Stable id (progress is stored under it).
    pub id: String,
    pub kind: CardKind,
    pub front_en: String,
    pub back_en: String,
    pub front_zh: String,
    pub back_zh: String,
}

impl Card {
    pub fn front(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.front_en,
            Lang::Zh => &self.front_zh,
        }
    }

    pub fn back(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.back_en,
            Lang::Zh => &self.back_zh,
        }
    }
}

/// (id, front en, back en, front zh, back zh) — the article's interview questions, answered in
/// our own words.
const INTERVIEW: &[(&str, &str, &str, &str, &str)] = &[
    (
        "ttft-high",
        "TTFT jumped from 300 ms to 3 s. What do you check, in order?",
        "1) Queue: is queue time most of TTFT (waiting requests, vllm:num_requests_waiting)? Then capacity: rate-limit or scale. 2) Prompt lengths: p99 far above the mean means long prompts block prefill. 3) Chunked prefill on? (--enable-chunked-prefill --max-num-batched-tokens 8192), or prefill/decode disaggregation. 4) Cold start of a new instance. Prefill is compute-bound and not preemptible, so one long prompt stalls its whole window.",
        "TTFT 从 300 ms 涨到 3 s，按什么顺序排查？",
        "1）排队：排队时间是否占 TTFT 大头（等待请求数、vllm:num_requests_waiting）？是则是容量问题：限流或扩容。2）prompt 长度：p99 远高于均值，说明长请求堵住了 prefill。3）是否开启 chunked prefill（--enable-chunked-prefill --max-num-batched-tokens 8192），或做 PD 分离。4）新实例冷启动。prefill 计算密集且不可抢占，一个长 prompt 会拖住同一窗口的所有请求。",
    ),
    (
        "tbt-tail",
        "Inter-token gaps have a long tail but GPU utilisation is not low. Likely causes?",
        "Over-long sequences mixed into the batch (max length far above the mean: group requests by length), or one GPU running slow (thermal or power throttling: compare each GPU's SM clock and power, e.g. one at 800 MHz while peers run 1800 MHz). Also KV fragmentation (paged KV, prefix cache) and, with PD disaggregation, decode waiting for KV transfer.",
        "TBT 长尾，但 GPU 利用率不低，可能原因？",
        "批内混入超长序列（最大长度远高于均值：按长度分组调度），或某张卡降频掉速（散热或功耗限制：逐卡对比 SM 时钟和功耗，例如一张 800 MHz、其余 1800 MHz）。另外还有 KV 碎片化（paged KV、prefix cache），以及 PD 分离后 decode 等待 KV 传输。",
    ),
    (
        "oom-enough-memory",
        "OOM, yet the GPU has enough memory in total. Why, and what do you do?",
        "Fragmentation: memory is free in total but not in one block (PyTorch's 'reserved but unallocated' is large). Use paged KV / prefix caching, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and lower max_num_seqs so the reservation fits.",
        "显存总量够却 OOM，为什么？怎么办？",
        "碎片化：总空闲够，但没有连续块（PyTorch 报告的 reserved but unallocated 很大）。用 paged KV / prefix cache 复用，设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True，并下调 max_num_seqs 让预留放得下。",
    ),
    (
        "throughput-zero",
        "Throughput fell to zero. How do you stop the bleeding?",
        "Tell a request-level deadlock from a KV leak. GPU utilisation 0 with memory full means requests were never released (KV leak). Restart the worker now; then give every request a hard timeout and max_tokens, abort it on timeout so its KV blocks are freed, and watch memory against active requests.",
        "吞吐跌到零，怎么止血？",
        "先区分请求级死锁还是 KV 泄漏。GPU 利用率为 0 但显存满，基本就是请求没释放（KV 泄漏）。先重启 worker；再给每个请求加硬超时和最大生成长度，超时时显式 abort 释放 KV 块，并监控显存占用与活跃请求数的偏离。",
    ),
    (
        "kv-formula",
        "How much KV cache does a 7B model (32 layers, 32 heads, head_dim 128, fp16) need for 64 sequences of 4096 tokens?",
        "bytes = 2 (K and V) × layers × kv_heads × head_dim × dtype_bytes × tokens × batch = 2 × 32 × 32 × 128 × 2 × 4096 × 64 = 137.4 GB. Back out max_num_seqs from it so the reservation fits the GPU. With GQA use the KV heads, not the attention heads.",
        "7B 模型（32 层、32 头、head_dim 128、fp16）64 条 4096 token 序列需要多少 KV cache？",
        "字节数 = 2（K 和 V）× 层数 × kv 头数 × head_dim × 每元素字节 × token 数 × batch = 2 × 32 × 32 × 128 × 2 × 4096 × 64 = 137.4 GB。据此倒推 max_num_seqs，避免预留超过显存。GQA 模型要用 KV 头数而不是注意力头数。",
    ),
    (
        "mean-vs-p99",
        "Mean TTFT is 400 ms. Why is that not enough to call the service healthy?",
        "The mean hides the tail: one long prefill barely moves it while p99 reaches seconds and users complain. Alert on p99 (and p99.9) from histograms with buckets fine enough to resolve them.",
        "TTFT 均值 400 ms，为什么还不能说服务健康？",
        "均值会掩盖长尾：一个长 prefill 几乎不影响均值，但 p99 可能到好几秒，用户已经在投诉。告警要看 p99（和 p99.9），并且直方图的桶要足够细。",
    ),
    (
        "timeout-60s",
        "Why raise the client timeout to 60 s or more while triaging?",
        "A short timeout cuts long requests off on the client: you then see client timeouts instead of the server's TBT tail, and chase the wrong cause.",
        "排查时为什么把客户端超时调到 60 秒以上？",
        "超时太短会在客户端提前掐断长请求：你看到的是客户端超时，而不是服务端的 TBT 长尾，根因就找偏了。",
    ),
    (
        "retries",
        "Why set max_retries to 1 or 2 while triaging throughput problems?",
        "Retries hide the failure rate: five retries make a 100 % first-attempt failure look like success. You want to see the first failure.",
        "排查吞吐问题时为什么把 max_retries 降到 1 或 2？",
        "重试会掩盖失败率：重试 5 次能让第一次全失败看起来像成功。你要看到第一次的失败。",
    ),
    (
        "four-timestamps",
        "Which four timestamps should every request log, and what does a missing first_token_time tell you?",
        "enqueue_time, first_token_time, last_token_time, finish_time (with request_id). They split TTFT into queue and prefill and E2E into decode and the rest. A request with no first_token_time never reached prefill: look at the gateway or the queue.",
        "每个请求至少要记哪四个时间戳？first_token_time 缺失说明什么？",
        "enqueue_time、first_token_time、last_token_time、finish_time（加上 request_id）。它们把 TTFT 拆成排队和 prefill，把端到端拆成 decode 和其余部分。没有 first_token_time 的请求根本没进 prefill：问题在网关或排队层。",
    ),
    (
        "abort",
        "Why must the serving layer abort a request when the client times out?",
        "Otherwise the engine keeps generating and keeps the request's KV blocks: memory leaks request by request until throughput falls to zero or the worker OOMs. Abort explicitly (engine.abort(request_id)).",
        "客户端超时后，服务层为什么必须 abort 请求？",
        "否则引擎会继续生成并占着这个请求的 KV 块：显存一个请求一个请求地泄漏，直到吞吐跌零或 OOM。必须显式 abort（engine.abort(request_id)）。",
    ),
    (
        "base-url",
        "Clients report 'model unavailable', the model is fine. What pitfall is the article warning about?",
        "A wrong base URL: a web page or one with tracking parameters (utm_…) returns 404, which clients wrap as 'model unavailable'. Use the bare API base URL.",
        "客户端报\"模型不可用\"，但模型本身没问题。文章提醒的是哪个坑？",
        "base_url 写错：写成官网页面或带了 utm 等跟踪参数会返回 404，客户端把它包装成\"模型不可用\"。要用不带参数的 API 基址。",
    ),
];

/// (id, front en, back en, front zh, back zh) — what real log lines say.
const ANATOMY: &[(&str, &str, &str, &str, &str)] = &[
    (
        "vllm-stats",
        "Read this vLLM line: `Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96.5%`",
        "64 requests are in the batch, 37 wait in the queue, and the KV cache is nearly full: the batch cannot grow, so the queue (and TTFT) grows. More replicas or GPUs help; raising max_num_seqs does not.",
        "解读这行 vLLM 日志：`Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96.5%`",
        "批内 64 个请求，37 个在排队，KV cache 几乎满：批无法再变大，排队（和 TTFT）就会增长。加副本或加卡有用，调大 max_num_seqs 没用。",
    ),
    (
        "vllm-preempt",
        "What does `… is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space` mean for latency?",
        "The scheduler evicted a running request to free KV blocks; it will recompute its prefill later. Its tokens stop meanwhile and the extra prefill slows everyone: a TBT tail. Lower max_num_seqs, use fp8 KV cache, or add memory.",
        "`… is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space` 对延迟意味着什么？",
        "调度器为了腾出 KV 块把正在运行的请求踢了出去，稍后重算它的 prefill。期间它不出 token，额外的 prefill 还会拖慢所有请求：TBT 长尾。下调 max_num_seqs、用 fp8 KV cache 或增加显存。",
    ),
    (
        "smi-reasons",
        "nvidia-smi -q shows `SW Power Cap : Active` on a GPU at 690 W of 700 W. Fault?",
        "Not by itself: the GPU is at its power limit and the driver lowers clocks to stay there. It is a fault when one GPU is capped or slowed while its peers are not (compare SM clocks), or when HW Slowdown / thermal reasons are active.",
        "nvidia-smi -q 显示 `SW Power Cap : Active`，功耗 690 W（上限 700 W）。这是故障吗？",
        "单看不是：GPU 达到功耗上限，驱动降低时钟以维持上限。如果只有某张卡被限功率或降频而其他卡没有（对比 SM 时钟），或者出现 HW Slowdown / 温度类原因，才是故障。",
    ),
    (
        "oom-message",
        "`Tried to allocate 2.00 GiB … 1.23 GiB is free … 6.50 GiB is reserved by PyTorch but unallocated`. What is the likely cause?",
        "Fragmentation: more is reserved but unallocated than the allocation needs, yet no single block fits. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and reduce peak batch tokens.",
        "`Tried to allocate 2.00 GiB … 1.23 GiB is free … 6.50 GiB is reserved by PyTorch but unallocated` 最可能的原因？",
        "碎片化：已预留未分配的显存比这次申请还多，但没有一个块放得下。设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True，并降低批内 token 峰值。",
    ),
    (
        "sglang-decode",
        "Read this SGLang line: `Decode batch, #running-req: 233, #token: 370959, token usage: 0.82, gen throughput (token/s): 4594.01, #queue-req: 317`",
        "233 sequences decode together holding 370,959 KV tokens (82 % of the pool), 317 requests wait: the server is at capacity and queueing drives TTFT.",
        "解读这行 SGLang 日志：`Decode batch, #running-req: 233, #token: 370959, token usage: 0.82, gen throughput (token/s): 4594.01, #queue-req: 317`",
        "233 条序列一起 decode，占用 370,959 个 KV token（池子的 82%），317 个请求在排队：服务已满负荷，TTFT 由排队决定。",
    ),
];

/// Chinese front for definition cards (the back is the table's text in both languages).
fn definition_zh(name: &str) -> &'static str {
    match name {
        "TTFT" => "首 token 延迟（TTFT）",
        "TTFO" => "首个回答 token 延迟（TTFO）",
        "ITL" => "token 间隔（ITL）",
        "TPOT" => "每输出 token 时间（TPOT）",
        "E2E" => "端到端延迟（E2E）",
        _ => "排队时间（queue）",
    }
}

/// The whole deck, in a stable order.
pub fn deck() -> Vec<Card> {
    let mut cards = Vec::new();
    for (id, fe, be, fz, bz) in INTERVIEW {
        cards.push(Card {
            id: format!("interview:{id}"),
            kind: CardKind::Interview,
            front_en: (*fe).to_owned(),
            back_en: (*be).to_owned(),
            front_zh: (*fz).to_owned(),
            back_zh: (*bz).to_owned(),
        });
    }
    for d in defs::ALL {
        cards.push(Card {
            id: format!("definition:{}", d.name.to_ascii_lowercase()),
            kind: CardKind::Definition,
            front_en: format!("Define {} exactly: from when to when? What do other tools call it?", d.name),
            back_en: format!("{}. Others: {}.", d.meaning, d.others),
            front_zh: format!("准确定义{}：从何时到何时？其他工具怎么称呼它？", definition_zh(d.name)),
            back_zh: format!("{}。其他工具：{}。", d.meaning_zh, d.others_zh),
        });
    }
    for r in rules::docs() {
        let zh = r.text(Lang::Zh);
        cards.push(Card {
            id: format!("rule:{}", r.id),
            kind: CardKind::Rule,
            front_en: format!("{} (`{}`): how do you recognise it, and what do you change?", r.title, r.id),
            back_en: format!("{} — {}", r.detects, r.fix),
            front_zh: format!("{}（`{}`）：如何识别？该改什么？", zh.title, r.id),
            back_zh: format!("{} —— {}", zh.detects, zh.fix),
        });
    }
    for (id, fe, be, fz, bz) in ANATOMY {
        cards.push(Card {
            id: format!("anatomy:{id}"),
            kind: CardKind::LogAnatomy,
            front_en: (*fe).to_owned(),
            back_en: (*be).to_owned(),
            front_zh: (*fz).to_owned(),
            back_zh: (*bz).to_owned(),
        });
    }
    cards
}

/// FSRS-4.5 scheduling.
pub mod fsrs {
    use serde::{Deserialize, Serialize};

    /// The published default weights of FSRS-4.5.
    pub const W: [f64; 17] = [
        0.4872, 1.4003, 3.7145, 13.8206, 5.1618, 1.2298, 0.8975, 0.031, 1.6474, 0.1367, 1.0461, 2.1072,
        0.0793, 0.3246, 1.587, 0.2272, 2.8755,
    ];
    const DECAY: f64 = -0.5;
    /// (0.9^(1/DECAY) − 1): makes R = 0.9 when t = S.
    const FACTOR: f64 = 19.0 / 81.0;

    /// The four answers.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Rating {
        Again = 1,
        Hard = 2,
        Good = 3,
        Easy = 4,
    }

    /// What the scheduler remembers about one card. Times are days (any origin).
    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Memory {
        pub stability: f64,
        pub difficulty: f64,
        pub last_review: f64,
        pub due: f64,
        pub reviews: u32,
        pub lapses: u32,
    }

    /// Probability of recall after `elapsed` days at stability `s`.
    pub fn retrievability(elapsed: f64, s: f64) -> f64 {
        (1.0 + FACTOR * elapsed.max(0.0) / s.max(0.01)).powf(DECAY)
    }

    /// Days until recall probability falls to `retention`.
    pub fn interval(s: f64, retention: f64) -> f64 {
        (s / FACTOR * (retention.powf(1.0 / DECAY) - 1.0)).max(0.0)
    }

    fn init_difficulty(g: f64) -> f64 {
        (W[4] - (g - 3.0) * W[5]).clamp(1.0, 10.0)
    }

    /// Schedule the next review after answering `rating` at `now` (days), aiming at
    /// `retention` (0.9 is FSRS's default). Again and the first review of a new card come back
    /// within the session (10 minutes).
    pub fn review(prev: Option<Memory>, rating: Rating, now: f64, retention: f64) -> Memory {
        let g = rating as u8 as f64;
        let (stability, difficulty, reviews, lapses) = match prev {
            None => (W[rating as usize - 1], init_difficulty(g), 1, u32::from(rating == Rating::Again)),
            Some(m) => {
                let r = retrievability(now - m.last_review, m.stability);
                let d = m.difficulty - W[6] * (g - 3.0);
                let d = (W[7] * init_difficulty(4.0) + (1.0 - W[7]) * d).clamp(1.0, 10.0);
                let s = if rating == Rating::Again {
                    W[11]
                        * m.difficulty.powf(-W[12])
                        * ((m.stability + 1.0).powf(W[13]) - 1.0)
                        * (W[14] * (1.0 - r)).exp()
                } else {
                    let hard = if rating == Rating::Hard { W[15] } else { 1.0 };
                    let easy = if rating == Rating::Easy { W[16] } else { 1.0 };
                    m.stability
                        * (1.0
                            + W[8].exp()
                                * (11.0 - m.difficulty)
                                * m.stability.powf(-W[9])
                                * ((W[10] * (1.0 - r)).exp() - 1.0)
                                * hard
                                * easy)
                };
                (s.max(0.01), d, m.reviews + 1, m.lapses + u32::from(rating == Rating::Again))
            }
        };
        let due = if rating == Rating::Again {
            now + 10.0 / 1440.0
        } else {
            now + interval(stability, retention).max(1.0)
        };
        Memory { stability, difficulty, last_review: now, due, reviews, lapses }
    }
}

#[cfg(test)]
mod tests {
    use super::fsrs::{Rating, interval, retrievability, review};
    use super::*;

    #[test]
    fn deck_covers_every_rule_and_definition_with_unique_ids() {
        let d = deck();
        for r in rules::docs() {
            assert!(d.iter().any(|c| c.id == format!("rule:{}", r.id)), "{}", r.id);
        }
        for def in defs::ALL {
            assert!(d.iter().any(|c| c.kind == CardKind::Definition && c.front_en.contains(def.name)));
        }
        let mut ids: Vec<&str> = d.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), d.len());
        assert!(d.iter().all(|c| !c.front_zh.is_empty() && !c.back_zh.is_empty()));
        // Rule and definition cards are in Chinese on the Chinese side, not English copies.
        for c in d.iter().filter(|c| matches!(c.kind, CardKind::Rule | CardKind::Definition)) {
            assert!(crate::lang::has_cjk(&c.back_zh) && c.back_zh != c.back_en, "{}", c.id);
        }
        let kv = d.iter().find(|c| c.id == "interview:kv-formula").unwrap();
        assert!(kv.back_en.contains("137.4 GB"));
        // The card's arithmetic is the article's.
        assert_eq!(2u64 * 32 * 32 * 128 * 2 * 4096 * 64, 137_438_953_472);
    }

    #[test]
    fn fsrs_behaves() {
        // At t = S recall probability is the target 90 %.
        assert!((retrievability(10.0, 10.0) - 0.9).abs() < 1e-9);
        assert!((interval(10.0, 0.9) - 10.0).abs() < 1e-9);
        let good = review(None, Rating::Good, 0.0, 0.9);
        assert!((good.stability - 3.7145).abs() < 1e-9);
        assert!((good.due - 3.7145).abs() < 1e-6);
        let again = review(None, Rating::Again, 0.0, 0.9);
        assert!(again.due < 0.01);
        // Answering Good on time grows the interval; Easy grows it more; Again shrinks stability.
        let g2 = review(Some(good), Rating::Good, good.due, 0.9);
        let e2 = review(Some(good), Rating::Easy, good.due, 0.9);
        let a2 = review(Some(good), Rating::Again, good.due, 0.9);
        assert!(
            g2.stability > good.stability && e2.stability > g2.stability && a2.stability < good.stability
        );
        assert_eq!((a2.reviews, a2.lapses), (2, 1));
        assert!(g2.difficulty >= 1.0 && g2.difficulty <= 10.0);
    }
}
