//! Anatomy cards: what each field of each engine's log line means (ids `anatomy:…`). The lines
//! are in the shapes the analyzer's parsers read (`analyze/parsers/`).

use triage_cards::{Card, CardKind, Tag, card};

use Tag::{Engines, Gpu, Kv, Metrics, Oom, Tbt, Throughput, Ttft};

/// (id, tags, the line, question en, answer en, question zh, answer zh). The front is the
/// question followed by the line, which is the same in both languages.
type Anatomy =
    (&'static str, &'static [Tag], &'static str, &'static str, &'static str, &'static str, &'static str);

const ANATOMY: &[Anatomy] = &[
    (
        "vllm-stats",
        &[Engines, Kv, Ttft],
        "Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96.5%",
        "Read this vLLM line:",
        "64 requests are in the batch, 37 wait in the queue, and the KV cache is nearly full: the batch cannot grow, so the queue (and TTFT) grows. More replicas or GPUs help; raising max_num_seqs does not.",
        "解读这行 vLLM 日志：",
        "批内 64 个请求，37 个在排队，KV cache 几乎满：批无法再变大，排队（和 TTFT）就会增长。加副本或加卡有用，调大 max_num_seqs 没用。",
    ),
    (
        "vllm-preempt",
        &[Engines, Kv, Tbt],
        "… is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space",
        "What does this vLLM warning mean for latency?",
        "The scheduler evicted a running request to free KV blocks; it will recompute its prefill later. Its tokens stop meanwhile and the extra prefill slows everyone: a TBT tail. Lower max_num_seqs, use fp8 KV cache, or add memory.",
        "这条 vLLM 警告对延迟意味着什么？",
        "调度器为了腾出 KV 块把正在运行的请求踢了出去，稍后重算它的 prefill。期间它不出 token，额外的 prefill 还会拖慢所有请求：TBT 长尾。下调 max_num_seqs、用 fp8 KV cache 或增加显存。",
    ),
    (
        "smi-reasons",
        &[Gpu, Tbt],
        "SW Power Cap : Active   (Power Draw 690 W, Current Power Limit 700 W)",
        "nvidia-smi -q shows this on one GPU. Fault?",
        "Not by itself: the GPU is at its power limit and the driver lowers clocks to stay there. It is a fault when one GPU is capped or slowed while its peers are not (compare SM clocks), or when HW Slowdown / thermal reasons are active.",
        "nvidia-smi -q 在一张卡上显示这些。这是故障吗？",
        "单看不是：GPU 达到功耗上限，驱动降低时钟以维持上限。如果只有某张卡被限功率或降频而其他卡没有（对比 SM 时钟），或者出现 HW Slowdown / 温度类原因，才是故障。",
    ),
    (
        "oom-message",
        &[Oom, Kv],
        "Tried to allocate 2.00 GiB … 1.23 GiB is free … 6.50 GiB is reserved by PyTorch but unallocated",
        "What is the likely cause of this PyTorch OOM?",
        "Fragmentation: more is reserved but unallocated than the allocation needs, yet no single block fits. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and reduce peak batch tokens.",
        "这个 PyTorch OOM 最可能的原因？",
        "碎片化：已预留未分配的显存比这次申请还多，但没有一个块放得下。设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True，并降低批内 token 峰值。",
    ),
    (
        "sglang-decode",
        &[Engines, Kv, Ttft],
        "Decode batch, #running-req: 233, #token: 370959, token usage: 0.82, gen throughput (token/s): 4594.01, #queue-req: 317",
        "Read this SGLang line:",
        "233 sequences decode together holding 370,959 KV tokens (82 % of the pool), 317 requests wait: the server is at capacity and queueing drives TTFT.",
        "解读这行 SGLang 日志：",
        "233 条序列一起 decode，占用 370,959 个 KV token（池子的 82%），317 个请求在排队：服务已满负荷，TTFT 由排队决定。",
    ),
    (
        "vllm-v1-fields",
        &[Engines, Throughput, Metrics],
        "Engine 000: Avg prompt throughput: 39810.6 tokens/s, Avg generation throughput: 402.2 tokens/s, Running: 128 reqs, Waiting: 175 reqs, GPU KV cache usage: 64.0%, Prefix cache hit rate: 0.0%",
        "Name each field of this vLLM V1 stats line (printed every 10 s by default).",
        "Engine 000: the engine (data-parallel rank). Avg prompt throughput: prompt tokens prefilled per second over the interval (39810.6). Avg generation throughput: tokens decoded per second (402.2). Running: sequences in the batch (128). Waiting: requests queued, not yet scheduled (175). GPU KV cache usage: share of KV blocks in use (64.0 %). Prefix cache hit rate: share of prompt tokens served from cached blocks (0.0 %). High prefill, low decode and a long queue: a burst of long prompts.",
        "说出这行 vLLM V1 统计日志（默认每 10 s 打印一次）的每个字段。",
        "Engine 000：引擎（数据并行的 rank）。Avg prompt throughput：区间内每秒 prefill 的 prompt token 数（39810.6）。Avg generation throughput：每秒 decode 出的 token 数（402.2）。Running：批内序列数（128）。Waiting：排队、尚未被调度的请求数（175）。GPU KV cache usage：已用 KV 块占比（64.0%）。Prefix cache hit rate：由缓存块提供的 prompt token 占比（0.0%）。prefill 很高、decode 很低、队列很长：一波长 prompt 涌入。",
    ),
    (
        "vllm-v0-fields",
        &[Engines, Kv],
        "Avg prompt throughput: 694.3 tokens/s, Avg generation throughput: 1807.2 tokens/s, Running: 49 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 38.3%, CPU KV cache usage: 0.0%.",
        "This is a vLLM V0 stats line. What do Swapped, Pending and CPU KV cache usage mean, and what are their V1 names?",
        "Pending: requests waiting to be scheduled (V1 calls it Waiting). Swapped: sequences whose KV was moved to CPU memory under pressure (V1 recomputes instead and has no swap). CPU KV cache usage: the share of that CPU swap space in use. Here 49 run and nothing waits at 38.3 % KV: a healthy line.",
        "这是一行 vLLM V0 统计日志。Swapped、Pending 和 CPU KV cache usage 是什么意思？在 V1 里叫什么？",
        "Pending：等待调度的请求（V1 叫 Waiting）。Swapped：显存紧张时 KV 被换到 CPU 内存的序列（V1 改为重算，没有换出）。CPU KV cache usage：这块 CPU 交换空间的使用率。这里 49 个在跑、没有等待、KV 38.3%：健康的一行。",
    ),
    (
        "vllm-startup-capacity",
        &[Engines, Kv],
        "GPU KV cache size: 684,352 tokens, Maximum concurrency for 40,960 tokens per request: 16.71x",
        "Read this vLLM start-up line. What limits the batch?",
        "The KV cache holds 684,352 tokens in all; at the full max_model_len of 40,960 tokens only 16.71 requests fit at once. Above 16 long requests vLLM preempts: keep max_num_seqs near that number for long-context traffic, or add KV memory.",
        "解读这行 vLLM 启动日志。什么限制了批大小？",
        "KV 缓存总共能放 684,352 个 token；按完整的 max_model_len 40,960 个 token 算，同时只能放下 16.71 个请求。长请求超过 16 个时 vLLM 会抢占：长上下文流量下把 max_num_seqs 设在这个数附近，或者增加 KV 显存。",
    ),
    (
        "sglang-prefill",
        &[Engines, Kv, Ttft],
        "Prefill batch. #new-seq: 3, #new-token: 4410, #cached-token: 1536, token usage: 0.58, #running-req: 253, #queue-req: 12",
        "Name the fields of this SGLang prefill line.",
        "#new-seq: requests starting prefill in this batch (3). #new-token: prompt tokens computed now (4410). #cached-token: prompt tokens reused from the radix (prefix) cache (1536). token usage: share of the KV pool in use (0.58). #running-req: requests decoding (253). #queue-req: requests waiting (12).",
        "说出这行 SGLang prefill 日志的各个字段。",
        "#new-seq：本批开始 prefill 的请求数（3）。#new-token：这次要计算的 prompt token 数（4410）。#cached-token：从 radix（前缀）缓存复用的 prompt token 数（1536）。token usage：KV 池使用率（0.58）。#running-req：正在 decode 的请求数（253）。#queue-req：排队的请求数（12）。",
    ),
    (
        "llama-timings",
        &[Engines, Ttft, Tbt],
        "prompt eval time =     120.20 ms /   512 tokens (    0.23 ms per token,  4259.57 tokens per second)\n       eval time =    2911.10 ms /   300 tokens (    9.70 ms per token,   103.05 tokens per second)",
        "llama-server printed these timings for one request. Which line is prefill, which is decode, and what are TTFT and TPOT roughly?",
        "prompt eval is the prefill: 512 prompt tokens in 120.20 ms, so TTFT ≈ 120.20 ms plus queueing. eval is the decode: 300 tokens in 2911.10 ms, 9.70 ms per token ≈ TPOT. Slow eval with fast prompt eval points at decode (offload to CPU, long context).",
        "llama-server 为一个请求打印了这两行耗时。哪行是 prefill，哪行是 decode？TTFT 和 TPOT 大约是多少？",
        "prompt eval 是 prefill：512 个 prompt token 用了 120.20 ms，所以 TTFT ≈ 120.20 ms 加排队时间。eval 是 decode：300 个 token 用了 2911.10 ms，每 token 9.70 ms ≈ TPOT。prompt eval 快而 eval 慢，问题在 decode（CPU 卸载、长上下文）。",
    ),
    (
        "ollama-gin",
        &[Engines, Ttft],
        "[GIN] 2025/09/22 - 14:23:44 | 200 | 3m24.112309918s |       127.0.0.1 | POST    \"/api/generate\"",
        "Read this Ollama access line. What is the duration, and what does it include?",
        "Status 200, and 3m24.112309918s from the request's arrival to the end of the response — the whole request: waiting for the model to load (a cold start or a swap), prefill and every generated token. It says nothing about TTFT on its own; a long one after a model switch is load time.",
        "解读这行 Ollama 访问日志。时长是多少？包含哪些部分？",
        "状态 200，从请求到达到响应结束用了 3m24.112309918s——整个请求：等待模型加载（冷启动或换模型）、prefill 和所有生成的 token。单看它看不出 TTFT；切换模型后出现的长耗时通常是加载时间。",
    ),
    (
        "tgi-span",
        &[Engines, Ttft, Metrics],
        "total_time=\"4.222110401s\" validation_time=\"1.562ms\" queue_time=\"780.951821ms\" inference_time=\"3.439658579s\" time_per_token=\"16.457697ms\"",
        "These are the fields of a TGI request span. Which one tells an overloaded router?",
        "queue_time: 780.951821ms spent waiting for a batch slot before inference. total_time = validation_time + queue_time + inference_time; time_per_token is the decode pace (16.457697ms). When queue_time grows to most of total_time, TGI is over capacity: scale out or lower the request rate.",
        "这些是 TGI 请求 span 的字段。哪个字段说明路由器过载？",
        "queue_time：推理前等待批内空位用了 780.951821ms。total_time = validation_time + queue_time + inference_time；time_per_token 是 decode 节奏（16.457697ms）。queue_time 增长到占 total_time 大部分时，TGI 已超出容量：扩容或降低请求速率。",
    ),
    (
        "trtllm-iter",
        &[Engines, Tbt, Kv],
        "iter = 7712, global_rank = 0, rank = 0, num_scheduled_requests = 17, kv_cache_util = 0.233, host_step_time = 19.114ms, prev_device_step_time = 19.902ms, states = {'num_ctx_requests': 1, 'num_ctx_tokens': 1840, 'num_generation_tokens': 16}",
        "Read this TensorRT-LLM per-iteration line.",
        "Iteration 7712 on rank 0 scheduled 17 requests: 1 in context (prefill) phase with 1840 prompt tokens, 16 generating one token each. kv_cache_util 0.233 is the KV pool in use. The step took 19.902 ms on the device (19.114 ms on the host): that step time is the TBT of the generating requests; a prefill in the same step lengthens it.",
        "解读这行 TensorRT-LLM 每轮迭代日志。",
        "rank 0 的第 7712 轮调度了 17 个请求：1 个处于 context（prefill）阶段、有 1840 个 prompt token，16 个各生成一个 token。kv_cache_util 0.233 是 KV 池使用率。这一步在设备上用了 19.902 ms（主机侧 19.114 ms）：这个步长就是生成中请求的 TBT；同一步里有 prefill 会把它拉长。",
    ),
    (
        "nccl-watchdog",
        &[Throughput, Gpu],
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=23811, OpType=ALLGATHER, NumelIn=65536, NumelOut=262144, Timeout(ms)=600000) ran for 600317 milliseconds before timing out.",
        "What happened here, and is rank 1 the culprit?",
        "An ALLGATHER (collective 23811) waited 600317 ms, past its 600000 ms timeout: one rank never joined, so the whole TP group stopped producing tokens. The rank that reports is often the victim; find the rank that is missing or stuck (an earlier error, a dead GPU, a network fault) — look at every rank's log around the same SeqNum.",
        "这里发生了什么？rank 1 是罪魁祸首吗？",
        "一次 ALLGATHER（第 23811 个集合操作）等了 600317 ms，超过了 600000 ms 的超时：有一个 rank 一直没加入，整个 TP 组都停止产出 token。报告的 rank 往往是受害者；要找缺席或卡住的那个 rank（更早的报错、坏卡、网络故障）——查看每个 rank 在同一 SeqNum 附近的日志。",
    ),
    (
        "xid-79",
        &[Gpu, Throughput],
        "NVRM: Xid (PCI:0000:ab:00): 79, pid=58812, name=python3, GPU has fallen off the bus.",
        "Read this kernel line. What now?",
        "Xid 79: the GPU at PCI 0000:ab:00 stopped answering on the PCIe bus — a hardware or power fault, not a software bug. Every process on it (pid 58812) is dead. Drain the node, reset or replace the GPU, and check power and PCIe errors; restarting the engine on the same GPU will not help.",
        "解读这行内核日志。接下来怎么办？",
        "Xid 79：PCI 0000:ab:00 上的 GPU 在 PCIe 总线上失联——硬件或供电故障，不是软件问题。上面的所有进程（pid 58812）都已死亡。摘除节点、重置或更换 GPU，检查供电和 PCIe 错误；在同一张卡上重启引擎没有用。",
    ),
    (
        "smi-query",
        &[Gpu, Tbt],
        "0, P0, 1440 MHz, 1980 MHz, 690.74 W, 700.00 W, 58, 100 %, 0x0000000000000004, Active, Not Active",
        "A row of nvidia-smi --query-gpu=index,pstate,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown. Read it.",
        "GPU 0 at P0 runs its SM clock at 1440 MHz of 1980 MHz, drawing 690.74 W of its 700.00 W limit, at 58 °C and 100 % busy. The reasons bitmask 0x0000000000000004 is SW power cap (Active); HW slowdown is Not Active. A GPU at its power limit under full load: expected, not a fault — unless its peers run faster.",
        "一行 nvidia-smi --query-gpu=index,pstate,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown 的输出。解读它。",
        "GPU 0 处于 P0，SM 时钟 1440 MHz（最高 1980 MHz），功耗 690.74 W（上限 700.00 W），58 °C，利用率 100%。原因位掩码 0x0000000000000004 是 SW power cap（Active）；HW slowdown 为 Not Active。满载时卡在功耗上限：正常现象，不是故障——除非其他卡跑得更快。",
    ),
    (
        "vllm-histogram",
        &[Metrics, Ttft],
        "vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"llama\"} 812\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"llama\"} 1000",
        "Two lines of vLLM's /metrics. What do they say?",
        "Buckets are cumulative: 812 of the 1000 requests since the server started had a server-side TTFT ≤ 0.5 s, so 188 took longer. The counts only grow: subtract two scrapes to see one interval. p99 lies above 0.5 s; which bucket holds it needs the buckets in between.",
        "vLLM /metrics 里的两行。它们说明了什么？",
        "桶是累计的：服务启动以来 1000 个请求中有 812 个服务端 TTFT ≤ 0.5 s，所以 188 个更慢。计数只增不减：两次抓取相减才是一个区间。p99 在 0.5 s 以上；落在哪个桶需要中间的那些桶。",
    ),
];

/// One card per line format.
pub fn cards() -> Vec<Card> {
    ANATOMY
        .iter()
        .map(|(id, tags, line, qe, ae, qz, az)| {
            card(
                format!("anatomy:{id}"),
                CardKind::Anatomy,
                tags,
                (format!("{qe}\n\n{line}"), format!("{qz}\n\n{line}")),
                ((*ae).to_owned(), (*az).to_owned()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The lines are the shapes the analyzer reads: the stats lines parse into figures.
    #[test]
    fn stats_lines_are_read_by_the_analyzer() {
        let lines = [("vllm.log", super::ANATOMY[5].2), ("vllm-v0.log", super::ANATOMY[6].2)];
        for (name, line) in lines {
            let text = format!("INFO 03-07 17:05:07 [loggers.py:335] {line}\n");
            let r = triage_analyze::analyze(&[(name, &text)]);
            assert!(!r.figures.is_empty(), "{name}: {line}");
        }
        assert!((0.58f64 * 100.0 - 58.0).abs() < 1e-9);
        assert_eq!(1000 - 812, 188);
    }
}
