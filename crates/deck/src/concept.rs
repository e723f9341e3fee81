//! Concept cards: four per rule (from its docs), two per definition, and the hand-written ones
//! — the article's interview questions, how the tools' names differ, the formulas and the
//! pitfalls — answered in our own words.

use triage_analyze::report::Class;
use triage_analyze::rules::{self, RuleDoc, RuleId};
use triage_base::defs;
use triage_base::lang::Lang;
use triage_cards::{Card, CardKind, Tag, card};

/// (id, tags, front en, back en, front zh, back zh).
type Written = (&'static str, &'static [Tag], &'static str, &'static str, &'static str, &'static str);

use Tag::{ClientConfig, Engines, Gpu, Kv, Metrics, Oom, Tbt, Throughput, Ttft};

/// The article's interview questions (ids `interview:…`).
const INTERVIEW: &[Written] = &[
    (
        "ttft-high",
        &[Ttft],
        "TTFT jumped from 300 ms to 3 s. What do you check, in order?",
        "1) Queue: is queue time most of TTFT (waiting requests, vllm:num_requests_waiting)? Then capacity: rate-limit or scale. 2) Prompt lengths: p99 far above the mean means long prompts block prefill. 3) Chunked prefill on? (--enable-chunked-prefill --max-num-batched-tokens 8192), or prefill/decode disaggregation. 4) Cold start of a new instance. Prefill is compute-bound and not preemptible, so one long prompt stalls its whole window.",
        "TTFT 从 300 ms 涨到 3 s，按什么顺序排查？",
        "1）排队：排队时间是否占 TTFT 大头（等待请求数、vllm:num_requests_waiting）？是则是容量问题：限流或扩容。2）prompt 长度：p99 远高于均值，说明长请求堵住了 prefill。3）是否开启 chunked prefill（--enable-chunked-prefill --max-num-batched-tokens 8192），或做 PD 分离。4）新实例冷启动。prefill 计算密集且不可抢占，一个长 prompt 会拖住同一窗口的所有请求。",
    ),
    (
        "tbt-tail",
        &[Tbt, Gpu],
        "Inter-token gaps have a long tail but GPU utilisation is not low. Likely causes?",
        "Over-long sequences mixed into the batch (max length far above the mean: group requests by length), or one GPU running slow (thermal or power throttling: compare each GPU's SM clock and power, e.g. one at 800 MHz while peers run 1800 MHz). Also KV fragmentation (paged KV, prefix cache) and, with PD disaggregation, decode waiting for KV transfer.",
        "TBT 长尾，但 GPU 利用率不低，可能原因？",
        "批内混入超长序列（最大长度远高于均值：按长度分组调度），或某张卡降频掉速（散热或功耗限制：逐卡对比 SM 时钟和功耗，例如一张 800 MHz、其余 1800 MHz）。另外还有 KV 碎片化（paged KV、prefix cache），以及 PD 分离后 decode 等待 KV 传输。",
    ),
    (
        "oom-enough-memory",
        &[Oom, Kv],
        "OOM, yet the GPU has enough memory in total. Why, and what do you do?",
        "Fragmentation: memory is free in total but not in one block (PyTorch's 'reserved but unallocated' is large). Use paged KV / prefix caching, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and lower max_num_seqs so the reservation fits.",
        "显存总量够却 OOM，为什么？怎么办？",
        "碎片化：总空闲够，但没有连续块（PyTorch 报告的 reserved but unallocated 很大）。用 paged KV / prefix cache 复用，设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True，并下调 max_num_seqs 让预留放得下。",
    ),
    (
        "throughput-zero",
        &[Throughput, Kv],
        "Throughput fell to zero. How do you stop the bleeding?",
        "Tell a request-level deadlock from a KV leak. GPU utilisation 0 with memory full means requests were never released (KV leak). Restart the worker now; then give every request a hard timeout and max_tokens, abort it on timeout so its KV blocks are freed, and watch memory against active requests.",
        "吞吐跌到零，怎么止血？",
        "先区分请求级死锁还是 KV 泄漏。GPU 利用率为 0 但显存满，基本就是请求没释放（KV 泄漏）。先重启 worker；再给每个请求加硬超时和最大生成长度，超时时显式 abort 释放 KV 块，并监控显存占用与活跃请求数的偏离。",
    ),
    (
        "kv-formula",
        &[Kv, Oom],
        "How much KV cache does a 7B model (32 layers, 32 heads, head_dim 128, fp16) need for 64 sequences of 4096 tokens?",
        "bytes = 2 (K and V) × layers × kv_heads × head_dim × dtype_bytes × tokens × batch = 2 × 32 × 32 × 128 × 2 × 4096 × 64 = 137.4 GB. Back out max_num_seqs from it so the reservation fits the GPU. With GQA use the KV heads, not the attention heads.",
        "7B 模型（32 层、32 头、head_dim 128、fp16）64 条 4096 token 序列需要多少 KV cache？",
        "字节数 = 2（K 和 V）× 层数 × kv 头数 × head_dim × 每元素字节 × token 数 × batch = 2 × 32 × 32 × 128 × 2 × 4096 × 64 = 137.4 GB。据此倒推 max_num_seqs，避免预留超过显存。GQA 模型要用 KV 头数而不是注意力头数。",
    ),
    (
        "mean-vs-p99",
        &[Metrics, Ttft],
        "Mean TTFT is 400 ms. Why is that not enough to call the service healthy?",
        "The mean hides the tail: one long prefill barely moves it while p99 reaches seconds and users complain. Alert on p99 (and p99.9) from histograms with buckets fine enough to resolve them.",
        "TTFT 均值 400 ms，为什么还不能说服务健康？",
        "均值会掩盖长尾：一个长 prefill 几乎不影响均值，但 p99 可能到好几秒，用户已经在投诉。告警要看 p99（和 p99.9），并且直方图的桶要足够细。",
    ),
    (
        "timeout-60s",
        &[ClientConfig, Tbt],
        "Why raise the client timeout to 60 s or more while triaging?",
        "A short timeout cuts long requests off on the client: you then see client timeouts instead of the server's TBT tail, and chase the wrong cause.",
        "排查时为什么把客户端超时调到 60 秒以上？",
        "超时太短会在客户端提前掐断长请求：你看到的是客户端超时，而不是服务端的 TBT 长尾，根因就找偏了。",
    ),
    (
        "retries",
        &[ClientConfig, Throughput],
        "Why set max_retries to 1 or 2 while triaging throughput problems?",
        "Retries hide the failure rate: 5 retries make a 100 % first-attempt failure look like success. You want to see the first failure.",
        "排查吞吐问题时为什么把 max_retries 降到 1 或 2？",
        "重试会掩盖失败率：重试 5 次能让 100% 的首次失败看起来像成功。你要看到第一次的失败。",
    ),
    (
        "four-timestamps",
        &[Metrics, Ttft],
        "Which four timestamps should every request log, and what does a missing first_token_time tell you?",
        "enqueue_time, first_token_time, last_token_time, finish_time (with request_id). They split TTFT into queue and prefill and E2E into decode and the rest. A request with no first_token_time never reached prefill: look at the gateway or the queue.",
        "每个请求至少要记哪四个时间戳？first_token_time 缺失说明什么？",
        "enqueue_time、first_token_time、last_token_time、finish_time（加上 request_id）。它们把 TTFT 拆成排队和 prefill，把端到端拆成 decode 和其余部分。没有 first_token_time 的请求根本没进 prefill：问题在网关或排队层。",
    ),
    (
        "abort",
        &[Kv, Throughput],
        "Why must the serving layer abort a request when the client times out?",
        "Otherwise the engine keeps generating and keeps the request's KV blocks: memory leaks request by request until throughput falls to zero or the worker OOMs. Abort explicitly (engine.abort(request_id)).",
        "客户端超时后，服务层为什么必须 abort 请求？",
        "否则引擎会继续生成并占着这个请求的 KV 块：显存一个请求一个请求地泄漏，直到吞吐跌零或 OOM。必须显式 abort（engine.abort(request_id)）。",
    ),
    (
        "base-url",
        &[ClientConfig],
        "Clients report 'model unavailable', the model is fine. What pitfall is the article warning about?",
        "A wrong base URL: a web page or one with tracking parameters (utm_…) returns 404, which clients wrap as 'model unavailable'. Use the bare API base URL.",
        "客户端报\"模型不可用\"，但模型本身没问题。文章提醒的是哪个坑？",
        "base_url 写错：写成官网页面或带了 utm 等跟踪参数会返回 404，客户端把它包装成\"模型不可用\"。要用不带参数的 API 基址。",
    ),
    (
        "prefill-vs-decode",
        &[Ttft, Tbt],
        "Prefill and decode: which one sets TTFT, which one sets TBT, and what bounds each?",
        "Prefill processes the whole prompt in one pass: compute-bound and not preemptible, it sets TTFT. Decode produces one token per step for every running sequence: little compute, bound by reading the KV cache and weights (memory bandwidth) and by the batch, it sets TBT.",
        "prefill 和 decode：哪个决定 TTFT，哪个决定 TBT？各自受什么限制？",
        "prefill 一次处理整个 prompt：计算密集且不可抢占，决定 TTFT。decode 每一步为每条运行中的序列生成一个 token：计算量小，受读取 KV 缓存和权重的显存带宽以及批大小限制，决定 TBT。",
    ),
    (
        "chunked-prefill",
        &[Ttft, Engines],
        "What does chunked prefill change, and which flag bounds the chunk?",
        "It cuts a long prefill into chunks that share each step with the running decodes, so a long prompt no longer holds the GPU alone: the TTFT tail and the decode stalls shrink. --max-num-batched-tokens (e.g. 8192) is the token budget of one step.",
        "chunked prefill 改变了什么？哪个参数决定每块大小？",
        "它把长 prefill 切成小块，与正在进行的 decode 共享每一步，长 prompt 不再独占 GPU：TTFT 长尾和 decode 卡顿都会减小。--max-num-batched-tokens（例如 8192）是每一步的 token 预算。",
    ),
    (
        "pd-disaggregation",
        &[Ttft, Tbt],
        "What is prefill/decode (PD) disaggregation, and what new TBT cause does it bring?",
        "Prefill and decode run on separate instance pools, so long prefills never stall decodes: it fixes the TTFT tail more thoroughly than chunking. The price: decode waits for the KV cache to be transferred from the prefill instance — optimise or localise the transfer.",
        "什么是 PD 分离？它带来了什么新的 TBT 原因？",
        "prefill 和 decode 放在不同的实例池，长 prefill 再也拖不住 decode：比分块更彻底地解决 TTFT 长尾。代价是 decode 要等 KV 缓存从 prefill 实例传过来——需要优化或本地化 KV 传输。",
    ),
    (
        "qps-zero-process-alive",
        &[Throughput, ClientConfig],
        "QPS is 0 but the serving process is alive. Where do you look?",
        "Upstream: no traffic reaches it (a cut upstream, a gateway or load balancer that dropped it, a health check that marked it down and killed it). Compare the gateway's access log with the engine's request count.",
        "QPS 为 0，但服务进程还活着。往哪查？",
        "上游：流量根本没到（上游断流、网关或负载均衡把它摘掉、健康检查误判后杀掉）。对比网关的访问日志和引擎收到的请求数。",
    ),
    (
        "throughput-steps-down",
        &[Throughput, Ttft],
        "Throughput falls in steps rather than to zero. Usual causes?",
        "Scaling jitter or weight loading blocking: replicas come and go, and a new one serves nothing (or slowly) while it loads weights and captures graphs. Warm instances up before they take traffic and roll out gradually (canary).",
        "吞吐阶梯式下跌而不是直接跌零，常见原因？",
        "扩缩容抖动或权重加载阻塞：副本来来去去，新副本在加载权重、捕获图的期间不出活（或很慢）。实例接流量前先预热，并做灰度发布。",
    ),
    (
        "one-slow-gpu",
        &[Gpu, Tbt],
        "How do you find one slow GPU in a tensor-parallel group?",
        "Read every GPU's SM clock, power and utilisation (pynvml, nvidia-smi --query-gpu) under load and compare them: a GPU whose SM clock is far below its peers (e.g. 800 MHz vs 1800 MHz) with a thermal or HW slowdown reason sets the pace of the whole group, since every step waits for the slowest rank.",
        "怎么在张量并行组里找出一张慢卡？",
        "在负载下逐卡读 SM 时钟、功耗和利用率（pynvml、nvidia-smi --query-gpu）并对比：SM 时钟远低于其他卡（例如 800 MHz 对 1800 MHz）、同时有温度或 HW slowdown 原因的那张卡决定了整组的速度，因为每一步都要等最慢的 rank。",
    ),
];

/// How the tools' names differ (ids `crosswalk:…`).
const CROSSWALK: &[Written] = &[
    (
        "aiperf-itl",
        &[Metrics, Tbt],
        "aiperf reports 'ITL'. Which figure is that in vLLM bench's terms?",
        "TPOT: per request (last token − first token) / (output tokens − 1). vLLM bench's ITL is every single gap between tokens; aiperf calls that ICL. Same word, different figure: check the definition before comparing two reports.",
        "aiperf 报告的 ITL 相当于 vLLM bench 里的哪个指标？",
        "TPOT：按请求计算（最后一个 token − 第一个 token）/（输出 token 数 − 1）。vLLM bench 的 ITL 是每一个 token 间隔；aiperf 把它叫作 ICL。同一个词，不同的指标：对比两份报告前先看定义。",
    ),
    (
        "server-vs-client-ttft",
        &[Metrics, Ttft],
        "The client's TTFT is 900 ms, vLLM's time_to_first_token_seconds says 200 ms. Who is wrong?",
        "Neither. The server's histogram starts when the request reaches the engine; the client's clock starts when it sends, so the gap is the network, TLS, the gateway and any queue in front of the engine. Look there.",
        "客户端测得 TTFT 900 ms，vLLM 的 time_to_first_token_seconds 却是 200 ms。谁错了？",
        "都没错。服务端直方图从请求到达引擎开始计时；客户端从发出请求开始计时，差值是网络、TLS、网关以及引擎前面的排队。去查这些环节。",
    ),
    (
        "role-only-chunk",
        &[Metrics, Ttft],
        "The first SSE chunk carries only {\"role\":\"assistant\"}. Does it end TTFT?",
        "No: TTFT ends at the first event carrying a generated token (text, reasoning or tool call). Servers often send the role at once, before prefill is done; counting it would report a TTFT that hides the whole prefill.",
        "第一个 SSE 数据块只有 {\"role\":\"assistant\"}。TTFT 到这里结束吗？",
        "不。TTFT 结束于第一个携带生成 token（文本、推理或工具调用）的事件。服务端常常在 prefill 完成前就先发 role；把它算进去，TTFT 就把整个 prefill 藏起来了。",
    ),
    (
        "e2e-socket-close",
        &[Metrics],
        "Why does E2E end at the last token and not when the connection closes?",
        "After the last token a server may still send usage, a finish event and [DONE], and keep the connection open: none of that is generation. Ending at the last token measures what the user waits for and makes E2E − TTFT the decode time.",
        "为什么 E2E 结束于最后一个 token，而不是连接关闭？",
        "最后一个 token 之后，服务端还可能发送 usage、结束事件和 [DONE]，连接也可能保持打开：这些都不是生成。到最后一个 token 为止，量的才是用户等待的时间，E2E − TTFT 才等于 decode 时间。",
    ),
    (
        "ttfo-reasoning",
        &[Metrics, Ttft],
        "For a reasoning model, TTFT is 400 ms but users wait 20 s for an answer. Which figure shows it?",
        "TTFO, time to the first answer (non-reasoning) token: reasoning tokens count for TTFT but not for TTFO. For models that do not reason the two are equal.",
        "推理模型 TTFT 400 ms，用户却要等 20 s 才看到回答。哪个指标能反映？",
        "TTFO，即到第一个回答（非推理）token 的时间：推理 token 计入 TTFT，但不计入 TTFO。对不做推理的模型，两者相等。",
    ),
    (
        "queue-time-metric",
        &[Metrics, Ttft],
        "Which vLLM metric tells queueing apart from prefill inside TTFT?",
        "vllm:request_queue_time_seconds (enqueue → scheduled) next to vllm:request_prefill_time_seconds; the gauge vllm:num_requests_waiting shows the queue itself. When queue time is most of TTFT the service is over capacity.",
        "vLLM 的哪个指标能把 TTFT 里的排队和 prefill 分开？",
        "vllm:request_queue_time_seconds（入队 → 被调度）配合 vllm:request_prefill_time_seconds；gauge vllm:num_requests_waiting 直接显示队列长度。排队时间占 TTFT 大头时，服务已超出容量。",
    ),
    (
        "vllm-itl-renamed",
        &[Metrics, Tbt],
        "vLLM 0.11 exposes vllm:inter_token_latency_seconds and vllm:time_per_output_token_seconds. Add them up for the gaps between tokens?",
        "No: 0.11 observes every gap into both (the second is the deprecated name of the first), so adding them counts each gap twice. Read one, the new name when both are there; the per-request figure is a third histogram, vllm:request_time_per_output_token_seconds.",
        "vLLM 0.11 同时暴露 vllm:inter_token_latency_seconds 和 vllm:time_per_output_token_seconds。token 间隔要把两者加起来吗？",
        "不要：0.11 把每个间隔同时记入两者（后者是前者被弃用的旧名），相加会把每个间隔算两次。只读一个，两者都在时读新名；按请求计算的那个是第三个直方图 vllm:request_time_per_output_token_seconds。",
    ),
    (
        "otel-tpot",
        &[Metrics, Tbt],
        "Is OpenTelemetry's gen_ai.server.time_per_output_token (gen_ai_server_time_per_output_token_seconds in Prometheus) an ITL histogram?",
        "No: one value per request, (request duration − time to first token) / (output tokens after the first) — a TPOT, like vllm:request_time_per_output_token_seconds. A stall of one request shows in its mean, not as one long gap.",
        "OpenTelemetry 的 gen_ai.server.time_per_output_token（Prometheus 里叫 gen_ai_server_time_per_output_token_seconds）是 ITL 直方图吗？",
        "不是：每个请求一个值，（请求时长 − 首 token 时间）/（首 token 之后的输出 token 数）——是 TPOT，和 vllm:request_time_per_output_token_seconds 一样。某个请求中途卡住只会体现在它的平均值里，而不是一个长间隔。",
    ),
    (
        "prefix-hit-names",
        &[Metrics, Ttft],
        "How do you get the prefix-cache hit share from vLLM and from SGLang metrics?",
        "vLLM: rate of vllm:prefix_cache_hits_total over rate of vllm:prefix_cache_queries_total (tokens; vllm:gpu_prefix_cache_* before 0.10). SGLang: sglang:cached_tokens_total over sglang:prompt_tokens_total; its gauge sglang:cache_hit_rate is only the last prefill batch. Judge a share against its own past: a workload without shared prefixes never hits.",
        "怎么从 vLLM 和 SGLang 的指标算出前缀缓存命中比例？",
        "vLLM：vllm:prefix_cache_hits_total 的速率除以 vllm:prefix_cache_queries_total 的速率（单位是 token；0.10 之前是 vllm:gpu_prefix_cache_*）。SGLang：sglang:cached_tokens_total 除以 sglang:prompt_tokens_total；它的 gauge sglang:cache_hit_rate 只是最近一个 prefill 批次。命中比例要和它自己的过去比：没有共享前缀的负载本来就不命中。",
    ),
    (
        "spec-accept-names",
        &[Metrics, Tbt],
        "Which metrics give speculative decoding's tokens per step in vLLM, SGLang and TensorRT-LLM?",
        "vLLM: 1 + vllm:spec_decode_num_accepted_tokens_total / vllm:spec_decode_num_drafts_total (rates over the same window). SGLang: the gauge sglang:spec_accept_length (0 when off). TensorRT-LLM: trtllm_spec_decode_acceptance_length. Near 1 token per step, speculation costs more than it gains.",
        "vLLM、SGLang 和 TensorRT-LLM 里，哪些指标给出投机解码每步产出的 token 数？",
        "vLLM：1 + vllm:spec_decode_num_accepted_tokens_total / vllm:spec_decode_num_drafts_total（同一窗口内的速率）。SGLang：gauge sglang:spec_accept_length（未开启时为 0）。TensorRT-LLM：trtllm_spec_decode_acceptance_length。每步接近 1 个 token 时，投机解码得不偿失。",
    ),
];

/// Formulas (ids `formula:…`).
const FORMULAS: &[Written] = &[
    (
        "kv-per-token",
        &[Kv],
        "Write the KV bytes per token of a plain-attention model.",
        "2 (K and V) × layers × kv_heads × head_dim × bytes per element. For an 8B Llama (32 layers, 8 KV heads, head_dim 128, bf16): 2 × 32 × 8 × 128 × 2 = 131,072 B per token.",
        "写出普通注意力模型每个 token 的 KV 字节数。",
        "2（K 和 V）× 层数 × kv 头数 × head_dim × 每元素字节。8B Llama（32 层、8 个 KV 头、head_dim 128、bf16）：2 × 32 × 8 × 128 × 2 = 131,072 B 每 token。",
    ),
    (
        "kv-gqa-tp",
        &[Kv, Gpu],
        "With tensor parallelism, how many KV heads does each GPU hold?",
        "max(1, kv_heads / tp): the KV heads are split over the TP ranks, and when tp exceeds kv_heads each head is replicated, so the per-GPU KV bytes stop falling. 8 KV heads at TP 16 still cost 1 head per GPU.",
        "张量并行时每张 GPU 持有几个 KV 头？",
        "max(1, kv_heads / tp)：KV 头被分到各个 TP rank 上；tp 大于 kv_heads 时每个头会被复制，每卡 KV 字节不再下降。8 个 KV 头在 TP 16 下每卡仍要 1 个头。",
    ),
    (
        "kv-mla",
        &[Kv],
        "Why does DeepSeek-V3 need so little KV per token, and how is it computed?",
        "MLA caches one compressed latent per layer instead of K and V per head: kv_lora_rank 512 + rope dim 64 = 576 values per layer, the same on every TP rank (not split). 61 layers × 576 × 2 B = 70,272 B per token per GPU.",
        "为什么 DeepSeek-V3 每 token 的 KV 很小？怎么算？",
        "MLA 每层只缓存一个压缩后的潜向量，而不是每个头的 K 和 V：kv_lora_rank 512 + rope 维度 64 = 每层 576 个值，每个 TP rank 上都一样（不切分）。61 层 × 576 × 2 B = 每卡每 token 70,272 B。",
    ),
    (
        "kv-sliding-window",
        &[Kv],
        "How do sliding-window layers change the KV a long request needs?",
        "A sliding-window layer keeps only the last window tokens (e.g. 4096), so past the window its KV stops growing; only full-attention layers grow with the whole context. That is why Gemma-style models with mostly sliding layers hold long contexts cheaply.",
        "滑动窗口层如何改变长请求需要的 KV？",
        "滑动窗口层只保留最近窗口内的 token（例如 4096），超过窗口后它的 KV 不再增长；只有全注意力层随整个上下文增长。所以大多数层是滑动窗口的 Gemma 类模型能便宜地支持长上下文。",
    ),
    (
        "kv-budget",
        &[Kv, Oom],
        "How does vLLM decide how much memory goes to the KV cache?",
        "total GPU memory × gpu_memory_utilization (default 0.9) − weights − the activation peak found by profiling − non-torch memory (NCCL, cuBLAS). What is left is split into blocks; CUDA graphs are captured outside that budget.",
        "vLLM 如何决定多少显存给 KV 缓存？",
        "GPU 总显存 × gpu_memory_utilization（默认 0.9）− 权重 − profiling 得到的激活峰值 − 非 torch 显存（NCCL、cuBLAS）。剩下的切成块；CUDA graph 在这个预算之外捕获。",
    ),
    (
        "kv-blocks",
        &[Kv],
        "From the KV budget to the number of blocks and tokens: the formula?",
        "num_blocks = floor(available bytes / (block_size × bytes per token per layer × layers)); block_size is 16 tokens by default. Tokens = num_blocks × block_size, and max concurrency at a length L = num_blocks / ceil(L / block_size).",
        "从 KV 预算到块数和 token 数：公式是什么？",
        "num_blocks = floor(可用字节 / (block_size × 每层每 token 字节 × 层数))；block_size 默认 16 个 token。token 数 = num_blocks × block_size，长度 L 下的最大并发 = num_blocks / ceil(L / block_size)。",
    ),
    (
        "max-num-seqs",
        &[Kv, Oom],
        "How do you back out max_num_seqs from the KV estimate?",
        "Sequences that fit = KV tokens / max_model_len (vLLM logs it as 'Maximum concurrency for N tokens per request'). Set max_num_seqs at or below it so that every admitted sequence can grow to full length without preemption.",
        "如何从 KV 估算倒推 max_num_seqs？",
        "能放下的序列数 = KV token 数 / max_model_len（vLLM 启动时打印为 'Maximum concurrency for N tokens per request'）。把 max_num_seqs 设为不超过它，每个被接纳的序列都能长到满长度而不被抢占。",
    ),
    (
        "tpot",
        &[Metrics, Tbt],
        "A request's first token came at 0.5 s, its last at 10.5 s, with 201 output tokens. TPOT?",
        "TPOT = (last token − first token) / (output tokens − 1) = (10.5 − 0.5) / (201 − 1) = 0.05 s = 50 ms per token.",
        "一个请求的首 token 在 0.5 s，末 token 在 10.5 s，共输出 201 个 token。TPOT 是多少？",
        "TPOT =（末 token − 首 token）/（输出 token 数 − 1）=（10.5 − 0.5）/（201 − 1）= 0.05 s = 每 token 50 ms。",
    ),
    (
        "quantile-rank",
        &[Metrics],
        "How does llm-triage compute p99 of exact samples?",
        "numpy's default: rank = q × (n − 1), interpolating linearly between the two closest ranks. With 101 sorted samples, p99 is exactly the sample at rank 99 (0-based).",
        "llm-triage 如何计算精确样本的 p99？",
        "和 numpy 默认相同：rank = q × (n − 1)，在最近的两个秩之间线性插值。101 个排好序的样本，p99 正好是第 99 个（从 0 开始数）。",
    ),
    (
        "histogram-quantile",
        &[Metrics],
        "How is a quantile read from Prometheus histogram buckets?",
        "rank = q × total count; find the bucket whose cumulative count first reaches the rank; interpolate linearly between its lower and upper bound by the rank's position among that bucket's observations. The answer is only as precise as the bucket.",
        "如何从 Prometheus 直方图的桶里读出分位数？",
        "rank = q × 总数；找到累计计数第一次达到 rank 的桶；按 rank 在该桶观测值中的位置，在桶的上下界之间线性插值。答案的精度不会超过桶的宽度。",
    ),
];

/// Pitfalls (ids `pitfall:…`).
const PITFALLS: &[Written] = &[
    (
        "first-bucket",
        &[Metrics],
        "vLLM's inter-token histogram starts at 10 ms and PromQL says p50 = 5 ms. Believe it?",
        "No. When the rank falls in the first bucket, histogram_quantile interpolates from 0 and invents a value the histogram never measured. All you know is p50 ≤ 10 ms; llm-triage says 'below the first bucket'.",
        "vLLM 的 token 间隔直方图从 10 ms 起，PromQL 算出 p50 = 5 ms。可信吗？",
        "不可信。rank 落在第一个桶时，histogram_quantile 从 0 开始插值，编出一个直方图从未测到的值。你只知道 p50 ≤ 10 ms；llm-triage 会说“低于第一个桶”。",
    ),
    (
        "inf-bucket",
        &[Metrics],
        "PromQL's p99 equals the largest finite bucket bound exactly. What does that mean?",
        "The rank fell in the +Inf bucket: the true p99 is above the largest bound and nothing more is known. PromQL prints the bound as if it were a value; add larger buckets.",
        "PromQL 算出的 p99 恰好等于最大的有限桶边界。这意味着什么？",
        "rank 落在了 +Inf 桶：真实 p99 高于最大边界，除此之外一无所知。PromQL 把边界当作数值打印出来；应该加更大的桶。",
    ),
    (
        "raise-max-num-seqs",
        &[Kv, Ttft],
        "The KV cache is 97 % full and requests queue. Does raising max_num_seqs help?",
        "No: the batch is limited by KV memory, not by the cap. More admitted sequences only cause preemption. Add GPUs or replicas, use an fp8 KV cache, or shorten max_model_len.",
        "KV 缓存 97% 满，请求在排队。调大 max_num_seqs 有用吗？",
        "没用：批大小受 KV 显存限制，而不是受这个上限限制。接纳更多序列只会导致抢占。应该加卡或加副本、用 fp8 KV 缓存，或缩短 max_model_len。",
    ),
    (
        "kv-dtype-auto",
        &[Kv],
        "--kv-cache-dtype auto: how many bytes per KV element?",
        "auto means the model's serving dtype: 2 B for bf16/fp16, 4 B for fp32. fp8 halves it to 1 B (twice the tokens), at some accuracy cost.",
        "--kv-cache-dtype auto 时每个 KV 元素占几个字节？",
        "auto 表示与模型的服务 dtype 相同：bf16/fp16 为 2 B，fp32 为 4 B。fp8 减半为 1 B（token 数翻倍），代价是一些精度。",
    ),
    (
        "cuda-graphs",
        &[Oom, Engines],
        "vLLM started, then OOMed while capturing CUDA graphs. Why wasn't that in its budget?",
        "CUDA graph memory is allocated outside the KV budget that gpu_memory_utilization sets: keep 0.5–2 GiB of headroom (lower the utilisation a little) or capture fewer batch sizes.",
        "vLLM 启动后在捕获 CUDA graph 时 OOM。为什么预算里没算它？",
        "CUDA graph 的显存在 gpu_memory_utilization 设定的 KV 预算之外分配：留出 0.5–2 GiB 余量（把利用率调低一点），或者少捕获几个批大小。",
    ),
    (
        "no-timestamps",
        &[Metrics, ClientConfig],
        "Your request log has only finish_time. What can't you tell?",
        "Whether a slow request waited in the queue or in prefill, and how long decode took: without enqueue_time and first_token_time TTFT cannot be split, and a request that never got a first token looks like any slow one.",
        "请求日志里只有 finish_time。你无法判断什么？",
        "慢请求是在排队还是在 prefill，以及 decode 用了多久：没有 enqueue_time 和 first_token_time 就拆不开 TTFT，一个从未拿到首 token 的请求看起来也和普通慢请求一样。",
    ),
];

/// Tags of a rule: its class's, plus the topics its id names.
pub fn rule_tags(doc: &RuleDoc) -> Vec<Tag> {
    let mut tags = match doc.class {
        Class::TtftHigh => vec![Ttft],
        Class::TbtTail => vec![Tbt],
        Class::Oom => vec![Oom],
        Class::ThroughputZero => vec![Throughput],
        Class::Config => vec![ClientConfig],
        Class::Inconclusive => vec![Engines],
    };
    let (id, name) = (doc.id, doc.id.as_str());
    if name.contains("kv") || name.contains("prefix-cache") || id == RuleId::AllocatorFragmentation {
        tags.push(Kv);
    }
    if name.contains("gpu")
        || matches!(id, RuleId::ColocatedProcess | RuleId::NcclHang | RuleId::CpuOffloadSplit)
    {
        tags.push(Gpu);
    }
    if name.starts_with("bench-") || matches!(id, RuleId::MeanNotP99 | RuleId::MissingTimestamps) {
        tags.push(Metrics);
    }
    if matches!(
        id,
        RuleId::EngineDead
            | RuleId::EngineStartFailed
            | RuleId::WorkerDied
            | RuleId::SchedulerStall
            | RuleId::ChunkedPrefillOff
            | RuleId::PrefillStallsDecode
            | RuleId::UbatchTooSmall
            | RuleId::MaxSeqLenReducedByKv
            | RuleId::RequestExceedsBuildLimits
            | RuleId::WarmupOom
            | RuleId::ColdStart
    ) {
        tags.push(Engines);
    }
    tags
}

fn written(prefix: &str, table: &[Written], out: &mut Vec<Card>) {
    for (id, tags, fe, be, fz, bz) in table {
        out.push(card(
            format!("{prefix}:{id}"),
            CardKind::Concept,
            tags,
            ((*fe).to_owned(), (*fz).to_owned()),
            ((*be).to_owned(), (*bz).to_owned()),
        ));
    }
}

/// Chinese name of a definition (the English name is the table's).
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

/// The four cards of one rule: what it means, why, what to change, what to check next.
fn rule_cards(doc: &RuleDoc, out: &mut Vec<Card>) {
    let (en, zh) = (doc.text(Lang::En), doc.text(Lang::Zh));
    let (id, class) = (doc.id, doc.class.as_str());
    let tags = rule_tags(doc);
    let mut push = |part: &str, front: (String, String), back: (String, String)| {
        out.push(card(format!("rule:{id}{part}"), CardKind::Concept, &tags, front, back));
    };
    push(
        "",
        (
            format!("{} (`{id}`): what does it mean, and how is it recognised?", en.title),
            format!("{}（`{id}`）：是什么意思？如何识别？", zh.title),
        ),
        (format!("{class}. {}", en.detects), format!("{class}。{}", zh.detects)),
    );
    push(
        ":why",
        (
            format!("{} (`{id}`): why does it happen?", en.title),
            format!("{}（`{id}`）：为什么会发生？", zh.title),
        ),
        (en.why.to_owned(), zh.why.to_owned()),
    );
    push(
        ":fix",
        (
            format!("{} (`{id}`): what do you change?", en.title),
            format!("{}（`{id}`）：该改什么？", zh.title),
        ),
        (en.fix.to_owned(), zh.fix.to_owned()),
    );
    push(
        ":check",
        (
            format!(
                "You suspect {} (`{id}`). What do you check next — what does the proof look like?",
                en.title
            ),
            format!("怀疑是{}（`{id}`）。下一步查什么？证据长什么样？", zh.title),
        ),
        (en.example.to_owned(), zh.example.to_owned()),
    );
}

/// Every concept card, in a stable order.
pub fn cards() -> Vec<Card> {
    let mut out = Vec::new();
    written("interview", INTERVIEW, &mut out);
    for d in defs::ALL {
        let key = d.name.to_ascii_lowercase();
        let zh = definition_zh(d.name);
        out.push(card(
            format!("definition:{key}"),
            CardKind::Concept,
            &[Metrics],
            (
                format!("Define {} exactly: from when to when?", d.name),
                format!("准确定义{zh}：从何时到何时？"),
            ),
            (d.meaning.to_owned(), d.meaning_zh.to_owned()),
        ));
        out.push(card(
            format!("definition:{key}:tools"),
            CardKind::Concept,
            &[Metrics],
            (
                format!("{}: what do other tools call it, and how do they differ?", d.name),
                format!("{zh}：其他工具怎么称呼它？有何不同？"),
            ),
            (d.others.to_owned(), d.others_zh.to_owned()),
        ));
    }
    written("crosswalk", CROSSWALK, &mut out);
    written("formula", FORMULAS, &mut out);
    written("pitfall", PITFALLS, &mut out);
    out.extend(every_rule());
    out
}

/// The four cards of every rule, in [`rules::docs`] order (the end of [`cards`]).
pub fn every_rule() -> Vec<Card> {
    let mut out = Vec::new();
    for r in rules::docs() {
        rule_cards(r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_four_cards_with_its_docs() {
        let cards = cards();
        for r in rules::docs() {
            let why = cards.iter().find(|c| c.id == format!("rule:{}:why", r.id)).unwrap();
            assert_eq!(why.back_en, r.why);
            assert_eq!(why.back_zh, r.zh.why);
            assert!(why.front_zh.contains(r.zh.title));
            let fix = cards.iter().find(|c| c.id == format!("rule:{}:fix", r.id)).unwrap();
            assert_eq!(fix.back_en, r.fix);
            assert!(!rule_tags(r).is_empty());
        }
    }

    #[test]
    fn the_formulas_add_up() {
        assert_eq!(2u64 * 32 * 32 * 128 * 2 * 4096 * 64, 137_438_953_472);
        assert_eq!(2 * 32 * 8 * 128 * 2, 131_072);
        assert_eq!(61 * 576 * 2, 70_272);
        assert!(((10.5f64 - 0.5) / (201.0 - 1.0) - 0.05).abs() < 1e-12);
    }
}
