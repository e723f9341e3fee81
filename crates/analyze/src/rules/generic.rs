//! The generic rules: one per failure [`Family`] of `families.rs`, the layer under the engine
//! rules. One file for all of them, unlike the other rules: they share everything but their
//! family's words and text, and they decide together (see [`settle`]).
//!
//! Each fires when its family's words were read, at a confidence below every exact rule's, and
//! says that it read words, not a message it knows. [`settle`] (called by `Analyzer::finish`)
//! drops them all when an exact rule named a cause — exact templates win — and otherwise lets
//! the family seen first in the paste lead: the first error is the cause, what follows is its
//! consequence.

use super::RuleId;
use super::{Both, FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::families::Family;
use crate::report::{Class, Finding};

/// Confidence of the family that came first; the others get [`FOLLOWER`]. Below every exact
/// rule's that names the same kind of failure; as high as the least sure of them, so an outage
/// read from words still outranks slowness (`Analyzer::finish` ranks outages first).
const LEADER: f64 = 0.5;
/// Confidence of a family seen after the first.
const FOLLOWER: f64 = 0.3;

struct Words {
    family: Family,
    /// What the words say happened, for the summary: (en, zh).
    said: Both,
    remediation: &'static [Both],
    next_checks: &'static [Both],
}

const PASTE_BEFORE: Both = (
    "paste the 50 lines before the first of these lines and the engine's version: the exact message there names the cause",
    "粘贴这些行中第一行之前的 50 行以及引擎版本：那里的确切信息会指出原因",
);

macro_rules! generic_rule {
    ($name:ident, $words:ident, $id:expr, $class:expr, $title:literal, $detects:literal, $why:literal, $example:literal, $fix:literal,
     zh: $zt:literal, $zd:literal, $zw:literal, $ze:literal, $zf:literal) => {
        pub(crate) const $name: Rule = Rule {
            doc: RuleDoc {
                id: $id,
                class: $class,
                title: $title,
                detects: $detects,
                why: $why,
                example: $example,
                fix: $fix,
                zh: RuleText { title: $zt, detects: $zd, why: $zw, example: $ze, fix: $zf },
            },
            check: |f, lang| check(f, lang, &$name.doc, &$words),
        };
    };
}

const MEMORY: Words = Words {
    family: Family::Memory,
    said: ("an allocator ran out of memory", "有分配器报告内存耗尽"),
    remediation: &[
        (
            "make the model fit: a smaller quantisation or model, fewer layers on the GPU, a shorter context (fewer tokens reserved for the KV cache), more GPUs for tensor parallelism",
            "让模型装得下：更小的量化或模型、放到 GPU 上的层数更少、更短的上下文（为 KV cache 预留更少的 token）、用更多 GPU 做张量并行",
        ),
        (
            "free the device first: another process or a model still loaded may hold the memory",
            "先腾出显存：可能还有别的进程或仍在加载的模型占着显存",
        ),
    ],
    next_checks: &[
        PASTE_BEFORE,
        (
            "`nvidia-smi` (or the vendor's tool) at that moment: who holds the memory",
            "同一时刻的 `nvidia-smi`（或厂商工具）：看显存被谁占着",
        ),
    ],
};
generic_rule!(
    GENERIC_OOM, MEMORY, RuleId::GenericOom, Class::Oom,
    "Memory ran out (read from the words)",
    "Words any allocator uses when it runs out — `out of memory`, `OutOfDeviceMemory`, `failed to allocate`, `Not enough memory`, `cudaErrorMemoryAllocation`, `std::bad_alloc`, `OOMKilled` — in a line no exact rule knows (Vulkan, TVM, TensorRT, ggml back-ends, a CUDA failure wrapped in another error). Not in a line that only suggests (`try lowering …`).",
    "An OOM is an outage whatever prints it; knowing the class first sends the reader to memory (weights, KV reservation, other processes) instead of the network or the scheduler.",
    "`ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory` while a model loads.",
    "Make the model fit (quantisation, context, layers on the GPU, tensor parallelism) or free the device; paste the lines before the error to find which.",
    zh: "内存耗尽（从措辞判断）",
    "任何分配器在耗尽内存时的措辞——`out of memory`、`OutOfDeviceMemory`、`failed to allocate`、`Not enough memory`、`cudaErrorMemoryAllocation`、`std::bad_alloc`、`OOMKilled`——出现在没有确切规则认识的行里（Vulkan、TVM、TensorRT、ggml 后端、包在别的错误里的 CUDA 失败）。只是建议的行（`try lowering …`）不算。",
    "不管是谁打印的，OOM 都是停服；先知道类别，读者就会去查内存（权重、KV 预留、其他进程），而不是网络或调度器。",
    "加载模型时出现 `ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory`。",
    "让模型装得下（量化、上下文、GPU 上的层数、张量并行）或腾出显存；贴出错误之前的日志以确定是哪一种。"
);

const COLLECTIVE: Words = Words {
    family: Family::Collective,
    said: (
        "a distributed collective never finished (a watchdog or NCCL timed out)",
        "一次分布式集合通信没有完成（watchdog 或 NCCL 超时）",
    ),
    remediation: &[
        (
            "restart the whole group: a rank stuck in a collective does not come back",
            "重启整个进程组：卡在集合通信里的 rank 不会自己恢复",
        ),
        (
            "find the rank that did not arrive: a dead or slow worker, a GPU fault, a network or P2P path that fails (NCCL_DEBUG=INFO)",
            "找到没有到达的那个 rank：挂掉或很慢的 worker、GPU 故障、失败的网络或 P2P 路径（NCCL_DEBUG=INFO）",
        ),
    ],
    next_checks: &[
        PASTE_BEFORE,
        (
            "every rank's log from the same minute, with NCCL_DEBUG=INFO",
            "同一分钟内每个 rank 的日志，打开 NCCL_DEBUG=INFO",
        ),
    ],
};
generic_rule!(
    GENERIC_COLLECTIVE, COLLECTIVE, RuleId::GenericCollectiveTimeout, Class::ThroughputZero,
    "A collective never finished (read from the words)",
    "Words of a distributed collective that timed out or failed — `Watchdog caught collective operation timeout`, `NCCL error`, `ncclSystemError`, `DistBackendError`, a heartbeat monitor — in lines no exact rule knows.",
    "Tensor-parallel ranks wait for each other at every layer: one collective that never finishes stops every token of every request.",
    "`[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE …) ran for 600059 milliseconds`.",
    "Restart the whole group and find the rank that never arrived (its log, NCCL_DEBUG=INFO, the GPU's and the network's health).",
    zh: "集合通信没有完成（从措辞判断）",
    "分布式集合通信超时或失败的措辞——`Watchdog caught collective operation timeout`、`NCCL error`、`ncclSystemError`、`DistBackendError`、heartbeat monitor——出现在没有确切规则认识的行里。",
    "张量并行的各个 rank 每一层都要互相等待：一次永远完成不了的集合通信会让所有请求的每一个 token 都停下。",
    "张量并行的第一次 ALLREDUCE 卡住：`[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE …) ran for 600059 milliseconds`。",
    "重启整个进程组，并找到没有到达的那个 rank（它的日志、NCCL_DEBUG=INFO、GPU 和网络的健康状况）。"
);

const GPU_FAULT: Words = Words {
    family: Family::GpuFault,
    said: (
        "a GPU kernel failed (illegal memory access, launch failure or a CUDA error)",
        "一个 GPU kernel 失败了（非法内存访问、启动失败或 CUDA 错误）",
    ),
    remediation: &[
        (
            "restart the engine: a CUDA context that faulted cannot be used again",
            "重启引擎：出错的 CUDA 上下文不能再用",
        ),
        (
            "if it repeats: try the engine's eager mode or another attention back-end, and a newer or older release (it is usually a kernel bug); check `dmesg` for Xid errors",
            "如果反复出现：试试引擎的 eager 模式或换一个 attention 后端，以及更新或更旧的版本（通常是 kernel 的 bug）；查看 `dmesg` 里有没有 Xid 错误",
        ),
    ],
    next_checks: &[
        PASTE_BEFORE,
        (
            "`dmesg -T | grep -i xid` on the node: a hardware fault shows there",
            "在节点上运行 `dmesg -T | grep -i xid`：硬件故障会出现在那里",
        ),
    ],
};
generic_rule!(
    GENERIC_GPU_FAULT, GPU_FAULT, RuleId::GenericGpuFault, Class::ThroughputZero,
    "A GPU kernel failed (read from the words)",
    "Words of a GPU kernel fault in any runtime — `illegal memory access`, `unspecified launch failure`, `device-side assert`, `misaligned address`, `CUDA error`, `CUDA_ERROR_…` — in lines no exact rule knows.",
    "A faulted CUDA context is dead: the process that owns it serves nothing more until it restarts.",
    "`CUDA error: an illegal memory access was encountered` in ggml's `ggml_cuda_op_mul_mat`.",
    "Restart; if it repeats, change the kernel path (eager mode, another attention back-end, another release) and check the node for Xid errors.",
    zh: "GPU kernel 失败（从措辞判断）",
    "任何运行时里 GPU kernel 故障的措辞——`illegal memory access`、`unspecified launch failure`、`device-side assert`、`misaligned address`、`CUDA error`、`CUDA_ERROR_…`——出现在没有确切规则认识的行里。",
    "出错的 CUDA 上下文已经不可用：拥有它的进程在重启之前什么也服务不了。",
    "ggml 的 `ggml_cuda_op_mul_mat` 里出现 `CUDA error: an illegal memory access was encountered`。",
    "重启；如果反复出现，换一条 kernel 路径（eager 模式、别的 attention 后端、别的版本），并检查节点上的 Xid 错误。"
);

const CRASH: Words = Words {
    family: Family::Crash,
    said: (
        "a process died (a fatal signal, an abort or an abnormal exit)",
        "有进程死掉了（致命信号、abort 或异常退出）",
    ),
    remediation: &[
        (
            "find why it died in the lines before: an assertion, an unsupported instruction set (SIGILL: a build for another CPU), a driver or back-end mismatch",
            "在之前的日志里找它死掉的原因：断言失败、不支持的指令集（SIGILL：为别的 CPU 编译的版本）、驱动或后端不匹配",
        ),
        (
            "until then, nothing is served: restart it and keep the whole log of the failed run",
            "在那之前服务是停的：重启它，并保留失败那次运行的完整日志",
        ),
    ],
    next_checks: &[
        PASTE_BEFORE,
        (
            "the exit code or signal and the engine's version and build (CPU flags, CUDA/ROCm/Vulkan back-end)",
            "退出码或信号，以及引擎版本和构建（CPU 指令集、CUDA/ROCm/Vulkan 后端）",
        ),
    ],
};
generic_rule!(
    GENERIC_CRASH, CRASH, RuleId::GenericCrash, Class::ThroughputZero,
    "A process died (read from the words)",
    "Words of a process that died in any format — a fatal signal (`SIGILL`, `SIGSEGV`, `Segmentation fault`, `core dumped`), an abort (`ggml_abort`, `GGML_ASSERT`, `Abort was called`, `terminate called after`), an abnormal exit (`exit status`, `exited with code`, a container's `ExitCode`, `runner process has terminated`) — in lines no exact rule knows.",
    "A dead server or runner answers nothing: every request fails or waits until it is restarted, and the cause is in the lines before its death.",
    "`SIGILL: illegal instruction` inside a model loader, then `curl: (52) Empty reply from server`.",
    "Read the lines before the death for its cause; restart it and keep the failed run's whole log.",
    zh: "进程死掉了（从措辞判断）",
    "任何格式里进程死亡的措辞——致命信号（`SIGILL`、`SIGSEGV`、`Segmentation fault`、`core dumped`）、abort（`ggml_abort`、`GGML_ASSERT`、`Abort was called`、`terminate called after`）、异常退出（`exit status`、`exited with code`、容器的 `ExitCode`、`runner process has terminated`）——出现在没有确切规则认识的行里。",
    "死掉的服务或 runner 什么也不会回答：重启之前每个请求都会失败或一直等，原因在它死掉之前的日志里。",
    "模型加载器里出现 `SIGILL: illegal instruction`，随后是 `curl: (52) Empty reply from server`。",
    "在死亡之前的日志里找原因；重启它，并保留失败那次运行的完整日志。"
);

const RESPAWN: Words = Words {
    family: Family::Respawn,
    said: (
        "a supervisor keeps restarting a process that keeps dying",
        "有监管进程在反复重启一个不断死掉的进程",
    ),
    remediation: &[(
        "stop the loop and start the process by hand once, in the foreground, to see the error it dies of",
        "停掉重启循环，手动在前台启动一次这个进程，看它死于什么错误",
    )],
    next_checks: &[
        PASTE_BEFORE,
        (
            "the process's own output (its stderr, `journalctl -u …`, `kubectl logs --previous`)",
            "该进程自己的输出（stderr、`journalctl -u …`、`kubectl logs --previous`）",
        ),
    ],
};
generic_rule!(
    GENERIC_RESPAWN, RESPAWN, RuleId::GenericCrashLoop, Class::ThroughputZero,
    "A process in a restart loop (read from the words)",
    "A supervisor's words for restarting a process again — `Restarting process … (Attempt 3/5)`, `restart counter is at`, `Back-off restarting`, `CrashLoopBackOff` — in lines no exact rule knows.",
    "A server that is restarted again and again is never up long enough to serve; the restarts hide the error that kills it.",
    "`Process exited with code null` then `Restarting process in 5000ms (Attempt 3/5)`, again and again.",
    "Start the process once by hand, in the foreground, and read what it dies of.",
    zh: "进程陷入重启循环（从措辞判断）",
    "监管进程重启某个进程的措辞——`Restarting process … (Attempt 3/5)`、`restart counter is at`、`Back-off restarting`、`CrashLoopBackOff`——出现在没有确切规则认识的行里。",
    "被一遍遍重启的服务从来没有活得足够久去处理请求；重启掩盖了杀死它的那个错误。",
    "`Process exited with code null`，然后 `Restarting process in 5000ms (Attempt 3/5)`，一遍又一遍。",
    "手动在前台启动一次该进程，看它死于什么。"
);

const UNREACHABLE: Words = Words {
    family: Family::Unreachable,
    said: ("the server (or a part of it) could not be reached", "服务端（或它的某个部分）无法连接"),
    remediation: &[
        (
            "check that the process behind the address is up and listening on that port (it may have died: its own log says why)",
            "确认该地址背后的进程还在运行、并在那个端口上监听（它可能已经死了：它自己的日志会写原因）",
        ),
        (
            "from a container, `localhost` is the container itself: use the host's or the service's address",
            "在容器里，`localhost` 是容器自己：请用宿主机或服务的地址",
        ),
    ],
    next_checks: &[
        ("the server's own log from the same seconds", "同一时间段服务端自己的日志"),
        (
            "`curl -v` to the same address from the same host or container",
            "在同一台主机或同一个容器里对同一地址执行 `curl -v`",
        ),
    ],
};
generic_rule!(
    GENERIC_UNREACHABLE, UNREACHABLE, RuleId::GenericUnreachable, Class::ThroughputZero,
    "The server cannot be reached (read from the words)",
    "Words of a connection that failed in any client or proxy — `Connection refused`, `error trying to connect`, `Empty reply from server`, `Connection reset by peer`, `no healthy upstream`, `Bad Gateway`, an access line answering 502 or 504 — in lines no exact rule knows.",
    "Requests that cannot reach a server are not served: to the user the service is down, whatever the server's own state.",
    "A router's `Server error: error trying to connect: Connection refused (os error 111)` on every prefill.",
    "Check that the process behind the address is up and listening; from a container, `localhost` is not the host.",
    zh: "服务端无法连接（从措辞判断）",
    "任何客户端或代理里连接失败的措辞——`Connection refused`、`error trying to connect`、`Empty reply from server`、`Connection reset by peer`、`no healthy upstream`、`Bad Gateway`、返回 502 或 504 的访问日志——出现在没有确切规则认识的行里。",
    "连不上服务端的请求就不会被处理：对用户来说服务就是挂了，不管服务端自己是什么状态。",
    "路由器在每次 prefill 时都报 `Server error: error trying to connect: Connection refused (os error 111)`。",
    "确认地址背后的进程还在运行并在监听；在容器里，`localhost` 不是宿主机。"
);

const AUTH: Words = Words {
    family: Family::Auth,
    said: (
        "the credential was rejected (401/403, an invalid API key)",
        "凭据被拒绝（401/403、无效的 API key）",
    ),
    remediation: &[
        (
            "send the key the server expects, in the header it reads (`Authorization: Bearer …` for OpenAI-style servers, `x-api-key` for Anthropic's)",
            "发送服务端期望的 key，放在它读取的请求头里（OpenAI 风格的服务用 `Authorization: Bearer …`，Anthropic 用 `x-api-key`）",
        ),
        (
            "or, for a server that should be open, find where it picked a key up (an environment variable such as VLLM_API_KEY or a `--api-key` flag)",
            "或者，对于本该不需要 key 的服务，找出它从哪里拿到了 key（例如 VLLM_API_KEY 之类的环境变量或 `--api-key` 参数）",
        ),
    ],
    next_checks: &[(
        "the server's start-up arguments and environment, and the client's headers (keys redacted)",
        "服务端的启动参数和环境变量，以及客户端的请求头（隐去 key）",
    )],
};
generic_rule!(
    GENERIC_AUTH, AUTH, RuleId::GenericAuthRejected, Class::Config,
    "The credential was rejected (read from the words)",
    "A 401 or 403 in any access line, SDK error (`Error code: 401`) or gateway body, or words of a rejected key (`authentication_error`, `invalid x-api-key`, `Incorrect API key`, `Unauthorized`), in lines no exact rule knows.",
    "Every request fails the same way until the key or the server's setting changes: nothing is wrong with the model or the GPU.",
    "`anthropic.AuthenticationError: Error code: 401 - {… 'authentication_error', 'message': 'invalid x-api-key'}`.",
    "Send the key the server expects in the header it reads, or remove the key the server should not require.",
    zh: "凭据被拒绝（从措辞判断）",
    "任何访问日志、SDK 错误（`Error code: 401`）或网关响应体里的 401 或 403，或者 key 被拒绝的措辞（`authentication_error`、`invalid x-api-key`、`Incorrect API key`、`Unauthorized`），出现在没有确切规则认识的行里。",
    "在 key 或服务端设置改变之前，每个请求都会以同样的方式失败：模型和 GPU 都没有问题。",
    "SDK 报错：`anthropic.AuthenticationError: Error code: 401 - {… 'authentication_error', 'message': 'invalid x-api-key'}`。",
    "在服务端读取的请求头里发送它期望的 key，或者去掉服务端本不该要求的 key。"
);

const NOT_FOUND: Words = Words {
    family: Family::NotFound,
    said: (
        "the path or the model asked for is not served (404, model not found)",
        "请求的路径或模型不存在（404、找不到模型）",
    ),
    remediation: &[(
        "use the path the server serves (OpenAI-style: the base URL ends in `/v1`, the client appends `/chat/completions`) and a model id it lists (`GET /v1/models`)",
        "使用服务端提供的路径（OpenAI 风格：base URL 以 `/v1` 结尾，客户端再拼上 `/chat/completions`），以及它列出的模型 id（`GET /v1/models`）",
    )],
    next_checks: &[(
        "`curl -s BASE_URL/models` from the client's host: the ids and the path that work",
        "在客户端所在主机上执行 `curl -s BASE_URL/models`：能用的 id 和路径",
    )],
};
generic_rule!(
    GENERIC_NOT_FOUND, NOT_FOUND, RuleId::GenericNotFound, Class::Config,
    "Path or model not served (read from the words)",
    "A 404 in any access line, SDK error or body (`404 page not found`, `Error code: 404`, `NotFoundError`), or words of an unknown model (`model not found`, `Invalid model name`, `does not exist`), in lines no exact rule knows.",
    "The server is up and answers — to a path or model it does not have: a client setting, not an outage.",
    "`GET /generate HTTP/1.1\" 404 Not Found` against an OpenAI-compatible server that serves `/v1/completions`.",
    "Point the client at the path the server serves and at a model id from `GET /v1/models`.",
    zh: "路径或模型不存在（从措辞判断）",
    "任何访问日志、SDK 错误或响应体里的 404（`404 page not found`、`Error code: 404`、`NotFoundError`），或者未知模型的措辞（`model not found`、`Invalid model name`、`does not exist`），出现在没有确切规则认识的行里。",
    "服务端在运行也在回答——只是请求了它没有的路径或模型：这是客户端配置问题，不是停服。",
    "对只提供 `/v1/completions` 的 OpenAI 兼容服务请求 `GET /generate HTTP/1.1\" 404 Not Found`。",
    "让客户端指向服务端提供的路径，并使用 `GET /v1/models` 里的模型 id。"
);

const PROVIDER: Words = Words {
    family: Family::Provider,
    said: (
        "the gateway cannot tell which provider serves the model",
        "网关无法判断由哪个提供方来服务这个模型",
    ),
    remediation: &[(
        "name the model with its provider prefix as the gateway expects (LiteLLM: `ollama/llama2`, `openai/…`, `hosted_vllm/…`), or set the provider explicitly",
        "按网关的要求给模型名加上提供方前缀（LiteLLM：`ollama/llama2`、`openai/…`、`hosted_vllm/…`），或显式设置提供方",
    )],
    next_checks: &[(
        "the gateway's model list and the model string the client sends",
        "网关的模型列表，以及客户端发送的模型字符串",
    )],
};
generic_rule!(
    GENERIC_PROVIDER, PROVIDER, RuleId::GenericProviderMissing, Class::Config,
    "No provider for the model (read from the words)",
    "A gateway's words for a model it cannot route — `LLM Provider NOT provided`, `Unknown provider` — in lines no exact rule knows.",
    "Every call fails before it leaves the gateway: the model string lacks the part that picks the back-end.",
    "`litellm.exceptions.BadRequestError: LLM Provider NOT provided. … You passed model=llama2`.",
    "Give the model its provider prefix (`ollama/llama2`) or set the provider explicitly.",
    zh: "模型没有提供方（从措辞判断）",
    "网关无法路由某个模型时的措辞——`LLM Provider NOT provided`、`Unknown provider`——出现在没有确切规则认识的行里。",
    "每次调用在离开网关之前就失败了：模型字符串缺少选择后端的那一部分。",
    "网关报错：`litellm.exceptions.BadRequestError: LLM Provider NOT provided. … You passed model=llama2`。",
    "给模型加上提供方前缀（`ollama/llama2`）或显式设置提供方。"
);

const CONTEXT: Words = Words {
    family: Family::ContextTooLong,
    said: ("a request does not fit the context window", "有请求超出了上下文窗口"),
    remediation: &[(
        "cap what the client sends (prompt plus max tokens) below the server's context, or start the server with a longer context if memory allows",
        "把客户端发送的内容（prompt 加上 max tokens）限制在服务端上下文以内，或在显存允许时以更长的上下文启动服务端",
    )],
    next_checks: &[(
        "the server's context setting (`--max-model-len`, `-c`/`n_ctx`, `--max-total-tokens`) and the client's max tokens",
        "服务端的上下文设置（`--max-model-len`、`-c`/`n_ctx`、`--max-total-tokens`）以及客户端的 max tokens",
    )],
};
generic_rule!(
    GENERIC_CONTEXT, CONTEXT, RuleId::GenericContextTooLong, Class::Config,
    "Request longer than the context (read from the words)",
    "Words of a request that does not fit — `exceed context window`, `maximum context length`, `context_length_exceeded`, `prompt is too long`, `must be <=` — in lines no exact rule knows.",
    "The server refuses such requests every time: a setting on one side or the other, not a fault of the engine.",
    "`Exception: Requested tokens (2285) exceed context window of 2048`.",
    "Cap prompt plus max tokens below the server's context, or raise the context if memory allows.",
    zh: "请求超出上下文（从措辞判断）",
    "请求放不下时的措辞——`exceed context window`、`maximum context length`、`context_length_exceeded`、`prompt is too long`、`must be <=`——出现在没有确切规则认识的行里。",
    "服务端每次都会拒绝这样的请求：是某一端的设置问题，不是引擎的故障。",
    "服务端报错：`Exception: Requested tokens (2285) exceed context window of 2048`。",
    "把 prompt 加 max tokens 限制在服务端上下文以内，或在显存允许时调大上下文。"
);

/// Every generic rule with the words it reads, in the order of [`RULES`](super::RULES).
const ALL: &[(&Rule, &Words)] = &[
    (&GENERIC_OOM, &MEMORY),
    (&GENERIC_COLLECTIVE, &COLLECTIVE),
    (&GENERIC_GPU_FAULT, &GPU_FAULT),
    (&GENERIC_CRASH, &CRASH),
    (&GENERIC_RESPAWN, &RESPAWN),
    (&GENERIC_UNREACHABLE, &UNREACHABLE),
    (&GENERIC_AUTH, &AUTH),
    (&GENERIC_NOT_FOUND, &NOT_FOUND),
    (&GENERIC_PROVIDER, &PROVIDER),
    (&GENERIC_CONTEXT, &CONTEXT),
];

/// Is this one of the generic rules?
pub fn is_generic(rule: &str) -> bool {
    family_of(rule).is_some()
}

/// The family a generic rule reads.
pub(crate) fn family_of(rule: &str) -> Option<Family> {
    ALL.iter().find(|(r, _)| r.doc.id.is(rule)).map(|(_, w)| w.family)
}

fn check(f: &Facts, lang: Lang, doc: &RuleDoc, words: &Words) -> Option<Finding> {
    let hits = f.signals.families.get(&words.family)?;
    let first = hits.lines.first()?;
    let summary = lang.pick(
        format!(
            "Line {} says {}: read from the words of {} line(s), not from a message this tool knows, so the cause is not named yet.",
            first.line,
            words.said.0,
            hits.count
        ),
        format!(
            "第 {} 行表明{}：这是从 {} 行的措辞判断的，不是本工具认识的确切信息，所以原因还没有确定。",
            first.line, words.said.1, hits.count
        ),
    );
    Some(doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: LEADER,
            evidence: hits.lines.clone(),
            remediation: texts(lang, words.remediation),
            next_checks: texts(lang, words.next_checks),
        },
    ))
}

/// Decide among the findings: when a rule that knows an exact message named the cause of a
/// failure (`names`: an OOM, nothing served, a client setting), the generic findings go — exact
/// templates win; a slowness an exact rule explains does not explain an error's words. Otherwise the family seen first in the paste
/// keeps [`LEADER`] confidence and the others drop to [`FOLLOWER`], so it leads the report.
pub(crate) fn settle(f: &Facts, findings: &mut Vec<Finding>, names: impl Fn(&Finding) -> bool) {
    let failure = |x: &Finding| matches!(x.class, Class::Oom | Class::ThroughputZero | Class::Config);
    if findings.iter().any(|x| !is_generic(&x.rule) && failure(x) && names(x)) {
        findings.retain(|x| !is_generic(&x.rule));
        return;
    }
    // Words an exact finding already cites (SGLang's `Decode out of memory happened` is a KV
    // retraction the preemption rule explains) are that finding's.
    let cited: Vec<(std::sync::Arc<str>, usize)> = findings
        .iter()
        .filter(|x| !is_generic(&x.rule))
        .flat_map(|x| x.evidence.iter().map(|e| (e.input.clone(), e.line)))
        .collect();
    findings.retain(|x| {
        !is_generic(&x.rule)
            || !x.evidence.iter().all(|e| cited.iter().any(|(i, l)| *i == e.input && *l == e.line))
    });
    let first =
        |x: &Finding| family_of(&x.rule).and_then(|fam| f.signals.families.get(&fam)).map(|h| h.first);
    let leader = findings.iter().filter_map(first).min();
    for x in findings.iter_mut() {
        if let Some(order) = first(x)
            && Some(order) != leader
        {
            x.confidence = FOLLOWER;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::Verdict;
    use crate::rules::RuleId;
    use crate::rules::case;

    #[test]
    fn an_allocator_nobody_catalogued() {
        let log = "ggml_vulkan: Device memory allocation of size 1059303232 failed.\nggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\nalloc_tensor_range: failed to allocate Vulkan0 buffer of size 1059303232\n";
        let f = case(&[("lmstudio.log", log)]).snapshot(RuleId::GenericOom, "vulkan").unwrap();
        assert_eq!(f.evidence[0].line, 1);
    }

    #[test]
    fn a_hint_is_not_the_failure() {
        // The crash came first; the memory hint printed after it names nothing that happened.
        let log = "2025-01-01 10:00:00 ERROR scheduler: Scheduler hit an exception: SIGSEGV in worker\nPossible solutions: 1. try lowering --mem-fraction-static, out of memory is common\n";
        let r = case(&[("paste", log)]).en;
        assert!(r.findings.iter().all(|f| f.rule != RuleId::GenericOom), "{:?}", r.findings);
        assert_eq!(r.verdict, Verdict::ThroughputZero, "{:?}", r.findings);
    }

    #[test]
    fn the_first_family_leads() {
        let log = "curl: (52) Empty reply from server\nSIGILL: illegal instruction\n";
        let r = case(&[("paste", log)]).en;
        assert_eq!(r.findings[0].rule, RuleId::GenericUnreachable, "{:?}", r.findings);
        let log = "SIGILL: illegal instruction\ncurl: (52) Empty reply from server\n";
        let r = case(&[("paste", log)]).en;
        assert_eq!(r.findings[0].rule, RuleId::GenericCrash, "{:?}", r.findings);
    }

    #[test]
    fn statuses_from_any_client() {
        let sdk = "anthropic.AuthenticationError: Error code: 401 - {'type': 'error', 'error': {'type': 'authentication_error', 'message': 'invalid x-api-key'}}\n";
        case(&[("app.log", sdk)]).snapshot(RuleId::GenericAuthRejected, "sdk").unwrap();
        let app = "✦ INFO: Local LLM Server is running with status code: 200\n✦ ERROR: Request failed: 404 page not found\n";
        case(&[("app.log", app)]).snapshot(RuleId::GenericNotFound, "app_log").unwrap();
        // An access line's 404 is read by the exact rule when it knows the route; the generic
        // one when it does not (a health check and two unknown paths).
        let access = "INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\nINFO:     127.0.0.1:2 - \"GET / HTTP/1.1\" 404 Not Found\nINFO:     127.0.0.1:3 - \"POST /generate HTTP/1.1\" 404 Not Found\n";
        assert_eq!(case(&[("server.log", access)]).en.verdict, Verdict::Config);
        // What browsers ask of every server is no client setting.
        let favicon = "INFO:     127.0.0.1:59820 - \"GET /favicon.ico HTTP/1.1\" 404 Not Found\n";
        assert!(case(&[("server.log", favicon)]).snapshot(RuleId::GenericNotFound, "favicon").is_none());
    }

    #[test]
    fn exact_templates_win() {
        let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.\n";
        let r = case(&[("oom.txt", log)]).en;
        assert!(r.findings.iter().all(|f| !super::is_generic(&f.rule)), "{:?}", r.findings);
        assert_eq!(r.verdict, Verdict::Oom);
    }
}
