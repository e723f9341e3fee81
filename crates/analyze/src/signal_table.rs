//! The known messages (see `signals.rs`). Each entry's needles are literal pieces of a template
//! the engine's own source prints (`tests/data/catalogue/`); the catalogue test checks both
//! ways. `scripts/mine-signals.py` proposes entries for catalogued templates no entry knows yet.
//! Size: one data table (~410 signals, one entry per message the engines print, grouped by
//! meaning); splitting it would scatter what a reader scans as one list.

use super::signals::{BENIGN, CAPACITY_SIGNAL, Signal, UNCLAIMED};
use crate::rules::RuleId;

const fn s(id: &'static str, needles: &'static [&'static str], rules: &'static [RuleId]) -> Signal {
    Signal { id, needles, rules, next: None }
}

const OOM_RULES: &[RuleId] =
    &[RuleId::InputTooLong, RuleId::ActivationPeak, RuleId::AllocatorFragmentation, RuleId::ColocatedProcess];
const KV_START: &[RuleId] = &[RuleId::KvReservationTooLarge];

/// The known messages. Grouped by what they mean; the catalogue test checks each against the
/// templates mined from the engines' source.
pub static SIGNALS: &[Signal] = &[
    // Start-up memory: the KV cache does not fit.
    s("vllm-no-cache-blocks", &["No available memory for the cache blocks"], KV_START),
    s(
        "vllm-kv-larger-than-available",
        &["KV cache is needed, which is larger than the available KV cache memory"],
        KV_START,
    ),
    s(
        "vllm-max-seq-len-over-kv",
        &["larger than the maximum number of tokens that can be stored in KV cache"],
        KV_START,
    ),
    s(
        "vllm-free-less-than-desired",
        &["is less than desired GPU memory utilization"],
        &[RuleId::ColocatedProcess, RuleId::KvReservationTooLarge],
    ),
    s("capacity-not-positive", &[CAPACITY_SIGNAL], &[RuleId::KvReservationTooLarge, RuleId::WarmupOom]),
    // V0 executors (0.8.5, 0.10.1.1): `# cuda blocks: 0, # CPU blocks: N` (`%s` the device name,
    // the figure the template's `%d`; `# GPU blocks: 0` is a capacity figure already).
    s("vllm-no-cuda-blocks", &[", # CPU blocks: ", "# cuda blocks: 0, "], KV_START), // vllm.tsv:29
    s(
        "vllm-failed-to-load-model-not-enough-gpu-memory",
        &["Failed to load model - not enough GPU memory."],
        &[RuleId::WarmupOom],
    ), // vllm.tsv:37
    // SGLang and TGI start-up memory.
    s(
        "sglang-not-enough-memory",
        &["Not enough memory. Please try to increase --mem-fraction-static"],
        &[RuleId::WarmupOom],
    ),
    s("sglang-mem-fraction-low", &["increase --mem-fraction-static"], &[RuleId::WarmupOom]),
    s("tgi-not-enough-memory-prefill", &["Not enough memory to handle"], &[RuleId::WarmupOom]),
    s(
        "tgi-warmup-failed",
        &["Method Warmup encountered an error"],
        &[RuleId::WarmupOom, RuleId::EngineStartFailed],
    ),
    s("tgi-backend-not-enough-memory", &["NotEnoughMemory("], &[RuleId::WarmupOom]),
    s("sglang-cuda-graph-capture-failed", &["Capture cuda graph failed"], &[RuleId::WarmupOom]),
    // Run-time OOM: the OOM rules read the numbers; any of them claims the message.
    s("torch-cuda-oom", &["CUDA out of memory"], OOM_RULES),
    s("torch-oom-error", &["OutOfMemoryError"], OOM_RULES),
    s("cuda-error-oom", &["CUDA error: out of memory"], OOM_RULES),
    // The engine never came up / died.
    s("vllm-engine-init-failed", &["Engine core initialization failed"], &[RuleId::EngineStartFailed]),
    // A worker's start-up step failed (`Error executing method {method!r}` with a loading or
    // device-setup method): the engine never serves. Other methods are run-time (vllm.tsv:79-82).
    s(
        "vllm-worker-load-model-failed",
        &["Error executing method 'load_model'"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "vllm-worker-load-model-failed-v05",
        &["Error executing method load_model"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "vllm-worker-init-device-failed",
        &["Error executing method 'init_device'"],
        &[RuleId::EngineStartFailed],
    ),
    s("vllm-engine-failed-to-start", &["EngineCore failed to start"], &[RuleId::EngineStartFailed]),
    s("vllm-engine-core-dead", &["EngineDeadError"], &[RuleId::EngineDead]),
    s("vllm-engine-core-issue", &["EngineCore encountered"], &[RuleId::EngineDead]),
    s("tgi-shard-cannot-start", &["Shard", "failed to start"], &[RuleId::EngineStartFailed]),
    s("tgi-webserver-crashed", &["Webserver Crashed"], &[RuleId::EngineStartFailed]),
    // TGI's router exits with `Error: Backend(Connection(Connection("…")))` (Debug of its error).
    s("tgi-backend-connection", &["Connection(Connection("], &[RuleId::EngineStartFailed]), // tgi.tsv:10
    s(
        "tgi-max-batch-prefill-below-max-input",
        &["`max_batch_prefill_tokens` must be >= `max_input_tokens`"],
        &[RuleId::EngineStartFailed],
    ), // tgi.tsv:46
    s(
        "vllm-p2p-batch-test-failed",
        &["Error happened when batch testing peer-to-peer access from "],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:106
    s(
        "ray-actor-creation-task-error",
        &["The actor died because of an error raised in its creation task"],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:3
    s(
        "nccl-invalid-usage",
        &["invalid usage (run with NCCL_DEBUG=WARN for details)"],
        &[RuleId::EngineStartFailed],
    ), // torch.tsv:52
    // What an engine that died answers (vLLM's EngineDeadError.CLIENT_MESSAGE; TGI's /health).
    s(
        "vllm-engine-dead-client-message",
        &[
            "The server had an error while processing your request.",
            "request.\",\"type\":\"InternalServerError\"",
        ],
        &[RuleId::EngineDead],
    ), // vllm.tsv:86
    s("tgi-healthcheck-unhealthy", &["\"error_type\":\"healthcheck\""], &[RuleId::EngineDead]), // tgi.tsv:57
    // Distributed hangs.
    s("nccl-watchdog-timeout", &["Watchdog caught collective operation timeout"], &[RuleId::NcclHang]),
    s("nccl-ops-failed", &["Some NCCL operations have failed or timed out"], &[RuleId::NcclHang]),
    s("nccl-watchdog-stuck", &["watchdog got stuck"], &[RuleId::NcclHang]),
    s("nccl-error", &["NCCL error"], &[RuleId::NcclHang]),
    s("nccl-internal", &["ncclInternalError"], &[RuleId::NcclHang]),
    s("nccl-system", &["ncclSystemError"], &[RuleId::NcclHang]),
    s("nccl-unhandled-cuda", &["ncclUnhandledCudaError"], &[RuleId::NcclHang]),
    s("nccl-remote", &["ncclRemoteError"], &[RuleId::NcclHang]),
    s("nccl-timeout-at-work", &["Timeout at NCCL work"], &[RuleId::NcclHang]),
    // A worker stopped taking the engine's broadcasts: it hangs (0.6-0.10 log it at DEBUG).
    s(
        "vllm-shm-broadcast-stuck",
        &["No available shared memory broadcast block found in"],
        &[RuleId::NcclHang],
    ),
    // Worker deaths.
    s("ray-actor-died", &["The actor died unexpectedly"], &[RuleId::WorkerDied]),
    s("ray-actor-died-error", &["ActorDiedError"], &[RuleId::WorkerDied]),
    s("ray-actor-error", &["RayActorError"], &[RuleId::WorkerDied]),
    s("ray-worker-died", &["A worker died or was killed"], &[RuleId::WorkerDied]),
    s("ray-node-low-memory", &["node running low on memory"], &[RuleId::WorkerDied]),
    s("tgi-shard-crashed", &[" crashed", "Shard "], &[RuleId::WorkerDied]), // tgi.tsv:26
    s("process-sigkill", &["exitcode  : -", "exitcode  : -9"], &[RuleId::WorkerDied]),
    // Kubernetes: the container was killed for its memory limit, or keeps crashing at start-up.
    // The driver lost the GPU or found an uncorrectable memory error.
    s("gpu-fallen-off-the-bus", &["GPU has fallen off the bus"], &[RuleId::GpuHwError]),
    s("gpu-double-bit-error", &["uncorrectable double bit error"], &[RuleId::GpuHwError]),
    s("nvidia-smi-no-device-handle", &["Unable to determine the device handle"], &[RuleId::GpuHwError]),
    s("tgi-model-overloaded", &["Model is overloaded"], &[RuleId::QueueingExceedsCapacity]),
    s("tgi-no-permits-available", &["no permits available"], &[RuleId::QueueingExceedsCapacity]), // tgi.tsv:16
    s("k8s-oom-killed", &["OOMKilled"], &[RuleId::WorkerDied]),
    s("k8s-exit-137", &["Exit Code:", "137"], &[RuleId::WorkerDied]),
    s("k8s-crash-loop", &["CrashLoopBackOff"], &[RuleId::EngineStartFailed]),
    s("k8s-back-off-restarting", &["Back-off restarting failed container"], &[RuleId::EngineStartFailed]),
    s("k8s-readiness-probe-failed", &["Readiness probe failed"], &[RuleId::ColdStart]),
    s(
        "process-killed-signal-9",
        &["died with <Signals.SIGKILL: ", "died with <Signals.SIGKILL: 9>"],
        &[RuleId::WorkerDied],
    ),
    // The client at fault.
    s("model-does-not-exist", &["The model", "does not exist"], &[RuleId::ModelNotFound]),
    s("model-not-found-code", &["model_not_found"], &[RuleId::ModelNotFound]),
    s(
        "anthropic-model-not-found",
        &["not_found_error", "Error code: 404", "model: "],
        &[RuleId::ModelNotFound],
    ), // clients.tsv:35
    // `vllm bench serve` lists failed requests as `Error N: <reason>`: all 404 means the model
    // name (or the path) does not exist on the server.
    s("bench-error-not-found", &["Error ", ": Not Found"], &[RuleId::ModelNotFound, RuleId::BaseUrlWrong]),
    s(
        "sdk-retrying",
        &["Retrying request to"],
        &[RuleId::ClientRetriesFailing, RuleId::RetriesMaskFailures, RuleId::TimeoutTooShort],
    ),
    s("sdk-connection-error", &["APIConnectionError"], &[RuleId::ClientRetriesFailing]),
    s("httpx-connect-error", &["httpx.ConnectError"], &[RuleId::ClientRetriesFailing]),
    s("sdk-connection-error-message", &["Connection error."], &[RuleId::ClientRetriesFailing]),
    s("sdk-not-found-html", &["NotFoundError", "<!DOCTYPE html"], &[RuleId::BaseUrlWrong]),
    s("sdk-timeout", &["APITimeoutError"], &[RuleId::TimeoutTooShort]),
    s("litellm-timeout", &["litellm.Timeout"], &[RuleId::TimeoutTooShort]),
    s("httpx-read-timeout", &["httpx.ReadTimeout"], &[RuleId::TimeoutTooShort]),
    s(
        "curl-timeout",
        &[") Operation timed out", "curl: (28) Operation timed out"],
        &[RuleId::TimeoutTooShort],
    ),
    s(
        "curl-could-not-connect",
        &[") Failed to connect", "curl: (7) Failed to connect"],
        &[RuleId::ClientRetriesFailing],
    ),
    // LiteLLM's router: retries spent, deployments cooling down after failed calls.
    s(
        "litellm-retried-times",
        &["LiteLLM Retried: ", ", LiteLLM Max Retries: "],
        &[RuleId::RetriesMaskFailures],
    ), // clients.tsv:44
    s(
        "litellm-deployments-in-cooldown",
        &["All deployments for selected model are in cooldown"],
        &[RuleId::ClientRetriesFailing],
    ), // clients.tsv:46
    s(
        "litellm-no-deployment-available",
        &["get_available_deployment for model: ", ", No deployment available"],
        &[RuleId::ClientRetriesFailing],
    ), // clients.tsv:47
    s("vllm-request-aborted", &[" aborted.", "Request "], &[RuleId::TimeoutTooShort]), // clients.tsv:62
    s("lmcache-health-check-failed", &["Health check failed: ", "LMCache "], &[RuleId::KvOffloadDegraded]), // lmcache.tsv:10
    // SGLang: the KV pool's figures in its out-of-memory errors; the watchdog's batch dump.
    s("sglang-available-tokens", &["(available_size=", " + evictable_size="], &[RuleId::KvPoolExhausted]), // sglang.tsv:15
    s(
        "sglang-watchdog-batch-dump",
        &["self.cur_batch.batch_size()=", "self.tree_cache.evictable_size()="],
        &[RuleId::SchedulerStall],
    ), // sglang.tsv:43
    // Known errors that name no cause by themselves: say what to paste next.
    Signal {
        id: "cuda-illegal-memory-access",
        needles: &["an illegal memory access was encountered"],
        rules: &[UNCLAIMED],
        next: Some((
            "a kernel read or wrote outside its memory (an engine or kernel bug, a bad quantised checkpoint, rarely failing HBM): rerun with CUDA_LAUNCH_BLOCKING=1 and paste the whole traceback, the engine and torch versions, the model and its quantisation, and `nvidia-smi -q -d ECC` / `dmesg | grep -i xid`",
            "某个 kernel 越界读写了显存（引擎或 kernel 的 bug、量化权重有问题，极少数是 HBM 故障）：用 CUDA_LAUNCH_BLOCKING=1 重跑，贴出完整 traceback、引擎和 torch 版本、模型及其量化方式，以及 `nvidia-smi -q -d ECC` / `dmesg | grep -i xid` 的输出",
        )),
    },
    Signal {
        id: "cuda-device-side-assert",
        needles: &["device-side assert triggered"],
        rules: &[UNCLAIMED],
        next: Some((
            "a kernel assertion failed (often a token id outside the vocabulary, or an index out of range): rerun with CUDA_LAUNCH_BLOCKING=1 and paste the lines above the assert, the request that triggered it and the tokenizer / model versions",
            "某个 kernel 的断言失败（常见原因是 token id 超出词表，或索引越界）：用 CUDA_LAUNCH_BLOCKING=1 重跑，贴出断言上方的日志、触发它的请求以及 tokenizer / 模型版本",
        )),
    },
    s("aiperf-error-summary", &["NVIDIA AIPerf | Error Summary"], &[UNCLAIMED]), // bench.tsv:69
    s("tgi-incomplete-generation", &["\"error_type\":\"incomplete_generation\""], &[UNCLAIMED]), // tgi.tsv:21
    s("c10-exception-raised-from", &["Exception raised from ", " (most recent call first):"], &[UNCLAIMED]), // torch.tsv:67
    // Alarms that are not faults.
    s("asyncio-cancelled", &["CancelledError"], &[BENIGN]),
    s("keyboard-interrupt", &["KeyboardInterrupt"], &[BENIGN]),
    // Mined from tests/data/catalogue by scripts/mine-signals.py, then reviewed (generic needles
    // dropped or narrowed). The trailing comment names the catalogue row.
    s("vllm-request-rate-configured-rps", &["Request rate configured (RPS"], &[RuleId::BenchOverloaded]), // bench.tsv:11
    s("vllm-request-throughput-req-s", &["Request throughput (req/s"], &[RuleId::BenchOverloaded]), // bench.tsv:15
    s(
        "vllm-all-requests-failed-this-is-likely-due-t",
        &["All requests failed. This is likely due to a mis"],
        &[UNCLAIMED],
    ), // bench.tsv:30
    s(
        "vllm-failed-requests-during-benchmark-run-det",
        &[
            "Failed requests during benchmark run detected (",
            "Failed requests during benchmark run detected (",
        ],
        &[UNCLAIMED],
    ), // bench.tsv:31
    s("vllm-traffic-request-rate", &["Traffic request rate"], &[RuleId::BenchOverloaded]), // bench.tsv:34
    s("sglang-p99-ttft-ms", &[" TTFT (ms", "P99 TTFT (ms"], &[RuleId::BenchTtftTail]),     // bench.tsv:43
    s("sglang-p99-itl-ms", &[" ITL (ms", "P99 ITL (ms"], &[RuleId::BenchItlTail]),         // bench.tsv:45
    s("sglang-max-itl-ms", &["Max ITL (ms"], &[RuleId::BenchItlTail]),                     // bench.tsv:46
    s("openai-python-retrying-request-in", &["Retrying request in"], &[RuleId::ClientRetriesFailing]), // clients.tsv:9
    s("openai-python-retries-left", &["retries left"], &[RuleId::ClientRetriesFailing]), // clients.tsv:10
    s("openai-python-1-retry-left", &[" retry left", "1 retry left"], &[RuleId::ClientRetriesFailing]), // clients.tsv:11
    s("openai-python-encountered-exception", &["Encountered Exception"], &[RuleId::ClientRetriesFailing]), // clients.tsv:12
    s("openai-python-encountered-exception-2", &["Encountered exception"], &[RuleId::ClientRetriesFailing]), // clients.tsv:13
    s(
        "openai-python-raising-connection-error",
        &["Raising connection error"],
        &[RuleId::ClientRetriesFailing],
    ), // clients.tsv:14
    s(
        "openai-python-encountered-httpx-timeoutexception",
        &["Encountered httpx.TimeoutException"],
        &[RuleId::TimeoutTooShort],
    ), // clients.tsv:15
    s(
        "openai-python-encountered-a-timeout-exception",
        &["Encountered a timeout exception"],
        &[RuleId::TimeoutTooShort],
    ), // clients.tsv:16
    s("openai-python-raising-timeout-error", &["Raising timeout error"], &[RuleId::TimeoutTooShort]), // clients.tsv:17
    s(
        "openai-python-retrying-due-to-status-code",
        &["Retrying due to status code"],
        &[RuleId::RetriesMaskFailures],
    ), // clients.tsv:18
    s(
        "openai-python-an-error-occurred-during-streaming",
        &["An error occurred during streaming"],
        &[UNCLAIMED],
    ), // clients.tsv:28
    s(
        "openai-python-data-returned-by-api-invalid-for-expecte",
        &["Data returned by API invalid for expected schema"],
        &[RuleId::BaseUrlWrong],
    ), // clients.tsv:29
    s(
        "anthropic-python-encountered-httpx2-timeoutexception",
        &["Encountered httpx", "Encountered httpx2.TimeoutException"],
        &[RuleId::TimeoutTooShort],
    ), // clients.tsv:31
    s(
        "anthropic-python-streaming-is-required-for-operations-tha",
        &[
            " minutes. See https://platform.claude.com/docs/",
            "Streaming is required for operations that may ta",
        ],
        &[UNCLAIMED],
    ), // clients.tsv:36
    s(
        "h11-peer-closed-connection-without-sending-c",
        &["peer closed connection without sending complete "],
        &[UNCLAIMED],
    ), // clients.tsv:39
    s(
        "httpcore-server-disconnected-without-sending-a-re",
        &["Server disconnected without sending a response."],
        &[UNCLAIMED],
    ), // clients.tsv:40
    s(
        "litellm-falling-back-to-model-group",
        &["Falling back to model_group ="],
        &[RuleId::RetriesMaskFailures],
    ), // clients.tsv:50
    s(
        "litellm-successful-fallback-b-w-models",
        &["Successful fallback b/w models."],
        &[RuleId::RetriesMaskFailures],
    ), // clients.tsv:51
    s("vllm-aborted-request", &["Aborted request"], &[RuleId::TimeoutTooShort]), // clients.tsv:60
    s(
        "lmcache-lmcache-is-unhealthy-skipping-store-oper",
        &["LMCache is unhealthy, skipping store operation"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:6
    s(
        "lmcache-lmcache-is-unhealthy-skipping-retrieve-o",
        &["LMCache is unhealthy, skipping retrieve operatio"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:7
    s(
        "lmcache-healthmonitor-system-unhealthy-entering",
        &["HealthMonitor: System unhealthy, entering degrad"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:8
    s(
        "lmcache-failed-to-initialize-re-establish-remote",
        &["Failed to initialize/re-establish remote connect"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:11
    s(
        "lmcache-connection-will-not-be-re-established-ye",
        &["Connection will not be re-established yet since "],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:12
    s(
        "lmcache-remote-connection-failed-in-contains",
        &["Remote connection failed in contains"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:13
    s(
        "lmcache-no-eviction-candidates-found-in-local-cp",
        &["No eviction candidates found in local cpu backen"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:15
    s(
        "lmcache-no-eviction-candidates-found-disk-space",
        &["No eviction candidates found. Disk space under p"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:16
    s(
        "lmcache-failed-to-allocate-memory-block-of-size",
        &["Failed to allocate memory block of size"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:17
    s(
        "lmcache-failed-to-allocate-huge-pages-pool-has",
        &["Failed to allocate huge pages. Pool has"],
        &[RuleId::EngineStartFailed],
    ), // lmcache.tsv:18
    s("lmcache-failed-to-create-backend", &["Failed to create backend"], &[RuleId::KvOffloadDegraded]), // lmcache.tsv:19
    s(
        "lmcache-cache-query-timed-out-after-5s-for-recei",
        &["Cache query timed out after ", "Cache query timed out after 5s for receiver"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:20
    s(
        "lmcache-nixl-write-failed-in-worker-thread",
        &["NIXL write failed in worker thread"],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:21
    s(
        "lmcache-s-marking-server-as-unhealthy",
        &["s. Marking server as unhealthy."],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:22
    s(
        "lmcache-lmcache-server-is-unhealthy-entering-deg",
        &["LMCache server is unhealthy — entering degraded "],
        &[RuleId::KvOffloadDegraded],
    ), // lmcache.tsv:23
    s("nvidia-smi-hw-slowdown", &["HW Slowdown"], &[RuleId::SlowGpu]), // nvidia-smi.tsv:13
    s("nvidia-smi-hw-thermal-slowdown", &["HW Thermal Slowdown"], &[RuleId::SlowGpu]), // nvidia-smi.tsv:14
    s("nvidia-smi-hw-power-brake-slowdown", &["HW Power Brake Slowdown"], &[RuleId::SlowGpu]), // nvidia-smi.tsv:15
    s("nvidia-smi-sw-thermal-slowdown", &["SW Thermal Slowdown"], &[RuleId::SlowGpu]), // nvidia-smi.tsv:17
    s("nvidia-smi-hw-power-braking", &["HW Power Braking"], &[RuleId::SlowGpu]),       // nvidia-smi.tsv:22
    s(
        "ray-the-task-may-or-maynot-have-been-execute",
        &[". The task may or maynot have been executed on t"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:5
    s(
        "ray-the-worker-died-unexpectedly-while-execu",
        &["The worker died unexpectedly while executing thi"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:6
    s(
        "ray-the-task-s-local-raylet-died-check-rayle",
        &["The task's local raylet died. Check raylet.out"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:7
    s(
        "ray-there-are-some-potential-root-causes-1-t",
        &[
            ") The worker is crashed unexpectedly due to SIGS",
            ". There are some potential root causes. (1) The ",
        ],
        &[RuleId::WorkerDied],
    ), // ray.tsv:9
    s(
        "ray-the-actor-is-dead-because-its-worker-pro",
        &["The actor is dead because its worker process has"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:10
    s(
        "ray-the-actor-died-because-its-node-has-died",
        &["The actor died because its node has died. Node I"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:11
    s(
        "ray-the-actor-is-dead-because-it-was-killed",
        &["The actor is dead because it was killed by `ray."],
        &[BENIGN],
    ), // ray.tsv:12
    s(
        "ray-which-exceeds-the-memory-usage-threshold",
        &["which exceeds the memory usage threshold of"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:14
    s(
        "ray-over-the-last-time-period-to-see-more-in",
        &["over the last time period. To see more informati"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:15
    s(
        "ray-refer-to-the-documentation-on-how-to-add",
        &["Refer to the documentation on how to address the"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:16
    s(
        "ray-memory-usage-above-threshold-but-no-work",
        &["Memory usage above threshold but no workers are "],
        &[RuleId::WorkerDied],
    ), // ray.tsv:17
    s("ray-the-node-with-node-id", &["The node with node id", "has been marked dead"], &[RuleId::WorkerDied]), // ray.tsv:18
    s(
        "ray-unintentional-worker-failures-have-been",
        &[". Unintentional worker failures have been report"],
        &[RuleId::WorkerDied],
    ), // ray.tsv:19
    s("ray-health-check-for", &["Health check for", "failed"], &[RuleId::EngineDead]), // ray.tsv:21
    s(
        "ray-didn-t-receive-health-check-response-for",
        &["Didn't receive health check response for replica"],
        &[RuleId::EngineDead],
    ), // ray.tsv:22
    s(
        "ray-times-in-a-row-marking-it-unhealthy",
        &["times in a row, marking it unhealthy."],
        &[RuleId::EngineDead],
    ), // ray.tsv:23
    s(
        "ray-crashed-marking-it-unhealthy-immediately",
        &["crashed, marking it unhealthy immediately."],
        &[RuleId::WorkerDied],
    ), // ray.tsv:24
    s("ray-failed-health-check-stopping-it", &["failed health check, stopping it."], &[RuleId::EngineDead]), // ray.tsv:25
    s(
        "ray-a-replica-s-health-check-failed-this-dep",
        &["A replica's health check failed. This deployment"],
        &[RuleId::EngineDead],
    ), // ray.tsv:26
    s("ray-the-deployments", &["The deployments", "are UNHEALTHY."], &[RuleId::EngineDead]), // ray.tsv:27
    s(
        "ray-times-in-a-row-this-may-be-due-to-a-prob",
        &["times in a row. This may be due to a problem wit"],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:29
    s(
        "ray-a-replica-failed-to-start-with-exception",
        &["A replica failed to start with exception."],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:30
    s(
        "ray-replicas-that-have-taken-more-than",
        &["replicas that have taken more than", "s to be scheduled."],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:31
    s(
        "ray-replicas-that-have-taken-more-than-2",
        &["replicas that have taken more than", "s to initialize."],
        &[RuleId::ColdStart],
    ), // ray.tsv:32
    s(
        "ray-request-dropped-due-to-backpressure-num",
        &["Request dropped due to backpressure (num_queued_"],
        &[RuleId::QueueingExceedsCapacity],
    ), // ray.tsv:34
    s(
        "ray-this-is-likely-due-to-all-cluster-resour",
        &[". This is likely due to all cluster resources"],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:35
    s(
        "ray-add-suitable-node-types-to-this-cluster",
        &[". Add suitable node types to this cluster to res"],
        &[RuleId::EngineStartFailed],
    ), // ray.tsv:36
    s("sglang-prefill-batch-new-seq", &["Prefill batch. #new-seq"], &[RuleId::QueueingExceedsCapacity]), // sglang.tsv:2
    s("sglang-input-throughput-token-s", &["input throughput (token/s"], &[RuleId::QueueingExceedsCapacity]), // sglang.tsv:5
    s("sglang-decode-batch-running-req", &["Decode batch. #running-req"], &[RuleId::DecodeSlowsWithContext]), // sglang.tsv:6
    s("sglang-gen-throughput-token-s", &["gen throughput (token/s"], &[RuleId::DecodeSlowsWithContext]), // sglang.tsv:8
    s(
        "sglang-decode-out-of-memory-happened-retracted",
        &["Decode out of memory happened. #retracted_reqs"],
        &[RuleId::KvPressurePreemption],
    ), // sglang.tsv:10
    s(
        "sglang-kv-cache-pool-is-full-retract-requests-r",
        &["KV cache pool is full. Retract requests. #retrac"],
        &[RuleId::KvPressurePreemption],
    ), // sglang.tsv:11
    s(
        "sglang-decode-out-of-memory-try-to-lower-your-b",
        &["Decode out of memory. Try to lower your batch si"],
        &[RuleId::KvPoolExhausted],
    ), // sglang.tsv:13
    s(
        "sglang-prefill-out-of-memory-try-to-lower-your",
        &["Prefill out of memory. Try to lower your batch s"],
        &[RuleId::KvPoolExhausted],
    ), // sglang.tsv:14
    s(
        "sglang-alloc-req-slots-runs-out-of-memory-pleas",
        &["alloc_req_slots runs out of memory. Please set"],
        &[RuleId::KvPoolExhausted],
    ), // sglang.tsv:16
    s(
        "sglang-out-of-memory-please-set-a-smaller-numbe",
        &["Out of memory. Please set a smaller number for `"],
        &[RuleId::KvPoolExhausted],
    ), // sglang.tsv:17
    s(
        "sglang-out-of-memory-even-after-retracting-all",
        &["Out of memory even after retracting all other re"],
        &[RuleId::InputTooLong],
    ), // sglang.tsv:18
    s(
        "sglang-is-larger-than-the-profiled-value",
        &["is larger than the profiled value"],
        &[RuleId::WarmupOom],
    ), // sglang.tsv:21
    s(
        "sglang-request-length-is-longer-than-the-kv-cac",
        &["Request length is longer than the KV cache pool "],
        &[RuleId::WarmupOom],
    ), // sglang.tsv:22
    s("sglang-load-weight-begin-avail-mem", &["Load weight begin. avail mem="], &[RuleId::ColdStart]), // sglang.tsv:23
    s("sglang-load-weight-end-type", &["Load weight end. type="], &[RuleId::ColdStart]), // sglang.tsv:24
    s("sglang-load-weight-end-elapsed", &["Load weight end. elapsed="], &[RuleId::ColdStart]), // sglang.tsv:26
    s(
        "sglang-capture-cuda-graph-begin-this-can-take-u",
        &["Capture cuda graph begin. This can take up to se"],
        &[RuleId::ColdStart],
    ), // sglang.tsv:31
    s(
        "sglang-capture-cuda-graph-end-time-elapsed",
        &["Capture cuda graph end. Time elapsed"],
        &[RuleId::ColdStart],
    ), // sglang.tsv:33
    s("sglang-num-tokens-per-req", &["num_tokens_per_req="], &[RuleId::ColdStart]), // sglang.tsv:34
    s("sglang-gb-avail-mem", &["GB, avail mem=", "s, mem usage="], &[RuleId::ColdStart]), // sglang.tsv:35
    s("sglang-watchdog-timeout", &["Watchdog timeout"], &[RuleId::SchedulerStall]), // sglang.tsv:41
    s("sglang-watchdog-timeout-2", &["watchdog timeout"], &[RuleId::SchedulerStall]), // sglang.tsv:42
    s("sglang-scheduler-hit-an-exception", &["Scheduler hit an exception"], &[RuleId::EngineDead]), // sglang.tsv:44
    s(
        "sglang-received-sigquit-from-a-child-process-it",
        &["Received sigquit from a child process. It usuall"],
        &[RuleId::EngineDead],
    ), // sglang.tsv:45
    s(
        "sglang-it-usually-means-one-child-failed",
        &[". It usually means one child failed."],
        &[RuleId::EngineDead],
    ), // sglang.tsv:46
    s(
        "sglang-scheduler-is-dead-please-check-if-there",
        &["scheduler is dead. Please check if there are rel"],
        &[RuleId::EngineStartFailed],
    ), // sglang.tsv:47
    s(
        "sglang-initialization-failed-please-see-the-err",
        &["Initialization failed. Please see the error mess"],
        &[RuleId::EngineStartFailed],
    ), // sglang.tsv:48
    s(
        "sglang-initialization-failed-warmup-error",
        &["Initialization failed. warmup error"],
        &[RuleId::EngineStartFailed],
    ), // sglang.tsv:49
    s(
        "sglang-health-check-failed-server-couldn-t-get",
        &["Health check failed. Server couldn't get a respo"],
        &[RuleId::SchedulerStall],
    ), // sglang.tsv:50
    s("sglang-triggering-sigquit-for-cleanup", &[". Triggering SIGQUIT for cleanup"], &[RuleId::WorkerDied]), // sglang.tsv:51
    s(
        "sglang-scheduler-or-dataparallelcontroller",
        &["Scheduler or DataParallelController"],
        &[RuleId::WorkerDied],
    ), // sglang.tsv:52
    s(
        "sglang-the-memory-capacity-is-unbalanced-some-g",
        &["The memory capacity is unbalanced. Some GPUs may"],
        &[RuleId::ColocatedProcess],
    ), // sglang.tsv:54
    s(
        "sglang-could-finish-the-model-loading-but-there",
        &["could finish the model loading, but there are ot"],
        &[RuleId::EngineStartFailed],
    ), // sglang.tsv:55
    s(
        "sglang-tokens-is-longer-than-the-model-s-contex",
        &["tokens) is longer than the model's context lengt"],
        &[RuleId::ContextLengthExceeded],
    ), // sglang.tsv:56
    s(
        "sglang-tokens-for-the-completion-please-reduce",
        &["tokens for the completion. Please reduce the num"],
        &[RuleId::ContextLengthExceeded],
    ), // sglang.tsv:57
    s(
        "sglang-the-request-queue-is-full",
        &["The request queue is full."],
        &[RuleId::QueueingExceedsCapacity],
    ), // sglang.tsv:59
    s(
        "sglang-request-is-disconnected-from-the-client",
        &[
            "Request is disconnected from the client side (ty",
            "Request is disconnected from the client side (ty",
        ],
        &[RuleId::TimeoutTooShort],
    ), // sglang.tsv:60
    s("sglang-abort-request", &["Abort request"], &[RuleId::TimeoutTooShort]), // sglang.tsv:61
    s(
        "sglang-token-to-kv-pool-allocator-memory-leak-d",
        &["token_to_kv_pool_allocator memory leak detected!"],
        &[RuleId::KvLeak],
    ), // sglang.tsv:62
    s("sglang-kv-cache-pool-leak-detected", &["KV cache pool leak detected!"], &[RuleId::KvLeak]), // sglang.tsv:63
    s("sglang-memory-leak-detected", &["memory leak detected!"], &[RuleId::KvLeak]), // sglang.tsv:64
    s("sglang-sglang-num-queue-reqs", &["sglang:num_queue_reqs"], &[RuleId::QueueingExceedsCapacity]), // sglang.tsv:83
    s("sglang-sglang-token-usage", &["sglang:token_usage"], &[RuleId::KvPressurePreemption]), // sglang.tsv:84
    s(
        "sglang-sglang-time-per-output-token-seconds-buc",
        &["sglang:time_per_output_token_seconds_bucket"],
        &[RuleId::BenchItlTail],
    ), // sglang.tsv:85
    s(
        "sglang-sglang-inter-token-latency-seconds-bucke",
        &["sglang:inter_token_latency_seconds_bucket"],
        &[RuleId::BenchItlTail],
    ), // sglang.tsv:86
    s("sglang-sglang-num-retracted-reqs", &["sglang:num_retracted_reqs"], &[RuleId::KvPressurePreemption]), // sglang.tsv:87
    s("tgi-warming-up-model", &["Warming up model"], &[RuleId::ColdStart]), // tgi.tsv:2
    s(
        "tgi-could-not-connect-to-text-generation-ser",
        &["Could not connect to Text Generation server"],
        &[RuleId::EngineStartFailed],
    ), // tgi.tsv:13
    s(
        "tgi-error-input-validation-error",
        &["{\"error\":\"Input validation error"],
        &[RuleId::ContextLengthExceeded],
    ), // tgi.tsv:17
    s(
        "tgi-inputs-tokens-max-new-tokens-must-be",
        &["inputs` tokens + `max_new_tokens` must be <="],
        &[RuleId::ContextLengthExceeded],
    ), // tgi.tsv:18
    s("tgi-inputs-must-have-less-than", &["inputs` must have less than"], &[RuleId::ContextLengthExceeded]), // tgi.tsv:19
    s("tgi-max-new-tokens-must-be", &["max_new_tokens` must be <="], &[RuleId::ContextLengthExceeded]), // tgi.tsv:20
    s(
        "tgi-text-generation-router-server-router-src",
        &["}: text_generation_router::server: router/src/se"],
        &[RuleId::QueueingExceedsCapacity],
    ), // tgi.tsv:22
    s(
        "tgi-shard-complete-standard-error-output",
        &["Shard complete standard error output"],
        &[RuleId::EngineStartFailed],
    ), // tgi.tsv:24
    s(
        "tgi-shard-process-was-signaled-to-shutdown-w",
        &["Shard process was signaled to shutdown with sign"],
        &[RuleId::WorkerDied],
    ), // tgi.tsv:25
    s(
        "tgi-shard-status-channel-disconnected",
        &["Shard status channel disconnected"],
        &[RuleId::EngineStartFailed],
    ), // tgi.tsv:28
    s("tgi-waiting-for-shard-to-be-ready", &["Waiting for shard to be ready"], &[RuleId::ColdStart]), // tgi.tsv:29
    s("tgi-shard-ready-in", &["Shard ready in"], &[RuleId::ColdStart]), // tgi.tsv:30
    s("tgi-error-shardcannotstart", &["Error: ShardCannotStart"], &[RuleId::EngineStartFailed]), // tgi.tsv:34
    s("tgi-error-webserverfailed", &["Error: WebserverFailed"], &[RuleId::EngineStartFailed]), // tgi.tsv:35
    s("tgi-error-shardfailed", &["Error: ShardFailed"], &[RuleId::WorkerDied]), // tgi.tsv:36
    s("tgi-error-downloaderror", &["Error: DownloadError"], &[RuleId::EngineStartFailed]), // tgi.tsv:37
    s("tgi-download-encountered-an-error", &["Download encountered an error"], &[RuleId::EngineStartFailed]), // tgi.tsv:38
    s("tgi-decode-cuda-graph-warmup-failed", &["Decode cuda graph warmup failed"], &[RuleId::WarmupOom]), // tgi.tsv:40
    s("tgi-cuda-graphs-are-enabled-for-sizes", &["Cuda Graphs are enabled for sizes"], &[RuleId::ColdStart]), // tgi.tsv:42
    s("tgi-error-when-initializing-model", &["Error when initializing model"], &[RuleId::EngineStartFailed]), // tgi.tsv:43
    s("tgi-must-be-max-total-tokens", &["must be < `max_total_tokens"], &[RuleId::EngineStartFailed]), // tgi.tsv:47
    s(
        "tgi-text-generation-server-not-found-in-path",
        &["text-generation-server not found in PATH"],
        &[RuleId::EngineStartFailed],
    ), // tgi.tsv:48
    s("tgi-tgi-request-queue-duration", &["tgi_request_queue_duration"], &[RuleId::QueueingExceedsCapacity]), // tgi.tsv:50
    s("tgi-tgi-request-failure", &["tgi_request_failure"], &[RuleId::QueueingExceedsCapacity]), // tgi.tsv:54
    s("tgi-entry-response-channel-error", &["Entry response channel error."], &[RuleId::TimeoutTooShort]), // tgi.tsv:55
    s(
        "tgi-failed-to-send-event-receiver-dropped",
        &["Failed to send event. Receiver dropped."],
        &[RuleId::TimeoutTooShort],
    ), // tgi.tsv:56
    s(
        "torch-tensors-allocated-with-expandable-segmen",
        &["Tensors allocated with expandable_segments:True "],
        &[UNCLAIMED],
    ), // torch.tsv:14
    s(
        "torch-cuda-error-uncorrectable-ecc-error-encou",
        &["CUDA error: uncorrectable ECC error encountered"],
        &[RuleId::GpuHwError],
    ), // torch.tsv:18
    s(
        "torch-cuda-error-uncorrectable-nvlink-error-de",
        &["CUDA error: uncorrectable NVLink error detected "],
        &[RuleId::GpuHwError],
    ), // torch.tsv:19
    s(
        "torch-cuda-error-unspecified-launch-failure",
        &["CUDA error: unspecified launch failure"],
        &[UNCLAIMED],
    ), // torch.tsv:20
    s("torch-cuda-error-misaligned-address", &["CUDA error: misaligned address"], &[UNCLAIMED]), // torch.tsv:21
    s(
        "torch-cuda-kernel-errors-might-be-asynchronous",
        &["CUDA kernel errors might be asynchronously repor"],
        &[UNCLAIMED],
    ), // torch.tsv:22
    s(
        "torch-caught-collective-operation-timeout-work",
        &["] Caught collective operation timeout: WorkNCCL(SeqNum="],
        &[RuleId::NcclHang],
    ), // torch.tsv:25
    s(
        "torch-to-avoid-data-inconsistency-we-are-takin",
        &["To avoid data inconsistency, we are taking the"],
        &[RuleId::NcclHang],
    ), // torch.tsv:27
    s(
        "torch-exception-either-an-error-or-timeout-det",
        &["] Exception (either an error or timeout) detected by watchdog at work"],
        &[RuleId::NcclHang],
    ), // torch.tsv:28
    s(
        "torch-heartbeat-monitor-timed-out-process-will",
        &["Heartbeat monitor timed out! Process will be ter"],
        &[RuleId::NcclHang],
    ), // torch.tsv:33
    s(
        "torch-processgroupnccl-s-watchdog-detected-a-c",
        &["ProcessGroupNCCL's watchdog detected a collectiv"],
        &[RuleId::NcclHang],
    ), // torch.tsv:34
    s(
        "torch-this-is-most-likely-caused-by-incorrect",
        &["This is most likely caused by incorrect usages o"],
        &[RuleId::NcclHang],
    ), // torch.tsv:35
    s(
        "torch-timed-out-in-blocking-wait-torch-nccl-bl",
        &[
            "timed out in blocking wait (TORCH_NCCL_BLOCKING_",
            "timed out in blocking wait (TORCH_NCCL_BLOCKING_",
        ],
        &[RuleId::NcclHang],
    ), // torch.tsv:36
    s(
        "torch-nccl-timeout-in-communicator-initializat",
        &["NCCL timeout in communicator initialization."],
        &[RuleId::NcclHang],
    ), // torch.tsv:38
    s(
        "torch-ncclinvalidusage-this-usually-reflects-i",
        &["ncclInvalidUsage: This usually reflects invalid "],
        &[RuleId::EngineStartFailed],
    ), // torch.tsv:44
    s("torch-seconds-waiting-for-clients", &["seconds waiting for clients."], &[RuleId::EngineStartFailed]), // torch.tsv:46
    s(
        "torch-the-client-socket-has-timed-out-after",
        &["The client socket has timed out after"],
        &[RuleId::EngineStartFailed],
    ), // torch.tsv:47
    s("nccl-socketstartconnect-connect-to", &["socketStartConnect: Connect to"], &[RuleId::NcclHang]), // torch.tsv:53
    s(
        "nccl-socketprogress-connection-closed-by-remo",
        &["socketProgress: Connection closed by remote peer"],
        &[RuleId::NcclHang],
    ), // torch.tsv:54
    s("nccl-net-ib-got-completion-from-peer", &["NET/IB : Got completion from peer"], &[RuleId::NcclHang]), // torch.tsv:55
    s("torch-failed-exitcode", &["failed (exitcode"], &[UNCLAIMED]), // torch.tsv:58 (exit code 1: the error is in the worker's log)
    s("torch-failed-exitcode-signal", &["failed (exitcode: -"], &[RuleId::WorkerDied]), // torch.tsv:58 (negative: killed by a signal)
    s("torch-received-by-pid", &["received by PID"], &[RuleId::WorkerDied]),            // torch.tsv:59
    s("torch-root-cause-first-observed-failure", &["Root Cause (first observed failure"], &[UNCLAIMED]), // torch.tsv:62
    s(
        "torch-to-enable-traceback-see-https-pytorch-or",
        &["To enable traceback see: https://pytorch.org/doc"],
        &[UNCLAIMED],
    ), // torch.tsv:63
    s(
        "torch-death-signal-shutting-down-workers",
        &["death signal, shutting down workers"],
        &[RuleId::WorkerDied],
    ), // torch.tsv:65
    s(
        "torch-attempts-left-will-restart-worker-group",
        &["attempts left; will restart worker group"],
        &[RuleId::WorkerDied],
    ), // torch.tsv:66
    s(
        "vllm-this-happens-when-the-gpu-memory-was-not",
        &[". This happens when the GPU memory was not prope"],
        &[RuleId::ColocatedProcess],
    ), // vllm.tsv:20
    s(
        "vllm-gib-this-happens-when-other-processes-sh",
        &["GiB. This happens when other processes sharing t"],
        &[RuleId::ColocatedProcess],
    ), // vllm.tsv:21
    s(
        "vllm-gib-on-startup-is-less-than-the-engine-s",
        &["GiB) on startup is less than the engine's budget"],
        &[RuleId::ColocatedProcess],
    ), // vllm.tsv:24
    s("vllm-model-loading-took", &["Model loading took"], &[RuleId::ColdStart]), // vllm.tsv:40
    s("vllm-loading-weights-took", &["Loading weights took"], &[RuleId::ColdStart]), // vllm.tsv:42
    s(
        "vllm-graph-capturing-finished-in",
        &["Graph capturing finished in", "secs, took"],
        &[RuleId::ColdStart],
    ), // vllm.tsv:46
    s("vllm-torch-compile-takes", &["torch.compile takes"], &[RuleId::ColdStart]), // vllm.tsv:47
    s("vllm-torch-compile-took", &["torch.compile took"], &[RuleId::ColdStart]), // vllm.tsv:48
    s(
        "vllm-compiling-a-graph-for-general-shape-take",
        &["Compiling a graph for general shape takes"],
        &[RuleId::ColdStart],
    ), // vllm.tsv:50
    s(
        "vllm-compiling-a-graph-for-dynamic-shape-take",
        &["Compiling a graph for dynamic shape takes"],
        &[RuleId::ColdStart],
    ), // vllm.tsv:51
    s(
        "vllm-compiling-a-graph-for-compile-range",
        &["Compiling a graph for compile range"],
        &[RuleId::ColdStart],
    ), // vllm.tsv:52
    s(
        "vllm-init-engine-profile-create-kv-cache-warm",
        &["init engine (profile, create kv cache, warmup mo"],
        &[RuleId::ColdStart],
    ), // vllm.tsv:56
    s(
        "vllm-mode-because-there-is-not-enough-kv-cach",
        &["mode because there is not enough KV cache space."],
        &[RuleId::KvPressurePreemption],
    ), // vllm.tsv:66
    s(
        "vllm-because-there-s-not-enough-kv-cache-bloc",
        &["because there's not enough kv cache blocks to ru"],
        &[RuleId::KvPressurePreemption],
    ), // vllm.tsv:67
    s(
        "vllm-tokens-is-too-long-and-exceeds-limit-of",
        &["tokens) is too long and exceeds limit of"],
        &[RuleId::InputTooLong],
    ), // vllm.tsv:68
    s(
        "vllm-tokens-is-too-long-and-exceeds-the-capac",
        &["tokens) is too long and exceeds the capacity of "],
        &[RuleId::InputTooLong],
    ), // vllm.tsv:69
    s(
        "vllm-is-too-long-and-exceeds-the-capacity-of",
        &["is too long and exceeds the capacity of block_ma"],
        &[RuleId::InputTooLong],
    ), // vllm.tsv:70
    s(
        "vllm-aborted-due-to-the-lack-of-cpu-swap-spac",
        &["Aborted due to the lack of CPU swap space. Pleas"],
        &[RuleId::KvPressurePreemption],
    ), // vllm.tsv:71
    s(
        "vllm-engine-iteration-timed-out-this-should-n",
        &["Engine iteration timed out. This should never ha"],
        &[RuleId::NcclHang],
    ), // vllm.tsv:72
    s("vllm-engine-background-task-failed", &["Engine background task failed"], &[RuleId::EngineDead]), // vllm.tsv:73
    s(
        "vllm-asyncllmengine-has-failed-terminating-se",
        &["AsyncLLMEngine has failed, terminating server pr"],
        &[RuleId::EngineDead],
    ), // vllm.tsv:77
    s(
        "vllm-mqllmengine-is-already-dead-terminating",
        &["MQLLMEngine is already dead, terminating server "],
        &[RuleId::EngineDead],
    ), // vllm.tsv:78
    s(
        "vllm-this-might-cause-deadlock-in-distributed",
        &[". This might cause deadlock in distributed execu"],
        &[UNCLAIMED],
    ), // vllm.tsv:79
    s("vllm-asyncllm-output-handler-failed", &["AsyncLLM output_handler failed."], &[RuleId::EngineDead]), // vllm.tsv:87
    s(
        "vllm-died-unexpectedly-shutting-down-client",
        &["died unexpectedly, shutting down client."],
        &[RuleId::WorkerDied],
    ), // vllm.tsv:88
    s(
        "vllm-shutdown-mpclient-engine-core-exited-une",
        &["[shutdown] MPClient: engine core exited unexpectedly; starting cleanup"],
        &[RuleId::WorkerDied],
    ), // vllm.tsv:89
    s("vllm-engine-core-process", &["Engine core process", "died unexpectedly"], &[RuleId::WorkerDied]), // vllm.tsv:90
    s(
        "vllm-died-unexpectedly-shutting-down-executor",
        &["died unexpectedly, shutting down executor."],
        &[RuleId::WorkerDied],
    ), // vllm.tsv:91
    s("vllm-died-unexpectedly-exit-code", &["died unexpectedly (exit code"], &[RuleId::WorkerDied]), // vllm.tsv:92
    s("vllm-workerproc-failed-to-start", &["WorkerProc failed to start."], &[RuleId::EngineStartFailed]), // vllm.tsv:94
    s("vllm-workerproc-hit-an-exception", &["WorkerProc hit an exception."], &[UNCLAIMED]), // vllm.tsv:95
    s("vllm-rpc-call-to", &["RPC call to", "timed out."], &[RuleId::NcclHang]),             // vllm.tsv:97
    s(
        "vllm-dumping-input-data-for-v1-llm-engine-v",
        &["Dumping input data for V", "Dumping input data for V1 LLM engine (v"],
        &[RuleId::EngineDead],
    ), // vllm.tsv:98
    s(
        "vllm-dumping-scheduler-output-for-model-execu",
        &["Dumping scheduler output for model execution"],
        &[RuleId::EngineDead],
    ), // vllm.tsv:99
    s(
        "vllm-did-not-receive-response-from-front-end",
        &["Did not receive response from front-end process "],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:100
    s(
        "vllm-input-socket-thread-died-during-startup",
        &["Input socket thread died during startup"],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:101
    s("vllm-executor-failed", &["Executor failed."], &[RuleId::EngineDead]),                // vllm.tsv:102
    s(
        "vllm-it-is-expected-if-you-are-not-running-on",
        &[". It is expected if you are not running on NVIDI"],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:108
    s(
        "vllm-seconds-this-typically-happens-when-some",
        &["seconds. This typically happens when some proces"],
        &[RuleId::NcclHang],
    ), // vllm.tsv:109
    s("vllm-e-g-shm-size-or-ipc-host", &[" --shm-size or --ipc=host)."], &[RuleId::EngineStartFailed]), // vllm.tsv:110
    s(
        "vllm-check-ray-status-to-see-if-you-have-enou",
        &[". Check `ray status` to see if you have enough r"],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:111
    s(
        "vllm-check-ray-status-and-ray-list-nodes-to-s",
        &[". Check `ray status` and `ray list nodes` to see"],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:112
    s(
        "vllm-seconds-see-ray-status-and-ray-list-node",
        &["seconds. See `ray status` and `ray list nodes` t"],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:113
    s(
        "vllm-you-can-use-float16-instead-by-explicitl",
        &[
            " instead by explicitly setting the `dtype` flag ",
            ". You can use float16 instead by explicitly sett",
        ],
        &[RuleId::EngineStartFailed],
    ), // vllm.tsv:115
    s(
        "vllm-in-the-completion-please-reduce-the-leng",
        &["in the completion). Please reduce the length of "],
        &[RuleId::ContextLengthExceeded],
    ), // vllm.tsv:126
    s(
        "vllm-input-tokens-please-reduce-the-length-of",
        &["input tokens. Please reduce the length of the in"],
        &[RuleId::ContextLengthExceeded],
    ), // vllm.tsv:127
    s(
        "vllm-input-tokens-which-exceeds-this-limit-ev",
        &["input tokens, which exceeds this limit even with"],
        &[RuleId::ContextLengthExceeded],
    ), // vllm.tsv:128
    s("vllm-error-in-preprocessing-prompt-inputs", &["Error in preprocessing prompt inputs"], &[UNCLAIMED]), // vllm.tsv:153
    s(
        "vllm-error-in-chat-completion-stream-generato",
        &["Error in chat completion stream generator."],
        &[UNCLAIMED],
    ), // vllm.tsv:154
    // llama.cpp's llama-server (llama-server.tsv; commit 0c1e570 in llama-cpp-python 0.3.36).
    s("llama-cpp-failed-to-open-gguf", &["failed to open GGUF file"], &[RuleId::EngineStartFailed]),
    s("llama-cpp-error-loading-model", &["error loading model: "], &[RuleId::EngineStartFailed]),
    s("llama-cpp-failed-to-load-model", &["failed to load model"], &[RuleId::EngineStartFailed]),
    s(
        "llama-cpp-failed-to-init-context",
        &["failed to initialize the context"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "llama-cpp-failed-to-create-context",
        &["failed to create context with model"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "llama-cpp-failed-to-create-context-2",
        &["failed to create_context with model"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "llama-cpp-exiting-model-loading",
        &["exiting due to model loading error"],
        &[RuleId::EngineStartFailed],
    ),
    s("llama-cpp-exiting-http", &["exiting due to HTTP server error"], &[RuleId::EngineStartFailed]),
    s("llama-cpp-cannot-bind", &["couldn't bind HTTP server socket"], &[RuleId::EngineStartFailed]),
    s("llama-cpp-loading-tensors", &["loading model tensors, this can take a while"], &[RuleId::ColdStart]),
    // `offloaded N/M layers to GPU`: the rule reads N and M.
    s("llama-cpp-offloaded-layers", &["layers to GPU", "offloaded "], &[RuleId::CpuOffloadSplit]),
    s(
        "llama-cpp-unable-to-allocate-buffer",
        &["unable to allocate ", " buffer"],
        &[RuleId::WeightsExceedGpu, RuleId::EngineStartFailed],
    ),
    s("llama-cpp-fit-params", &["failed to fit params to free device memory"], &[RuleId::WeightsExceedGpu]),
    s("llama-cpp-cudamalloc-failed", &["cudaMalloc failed"], OOM_RULES),
    // The graph allocator's (compute) buffer; `alloc_tensor_range` (weights) is not it.
    s("llama-cpp-alloc-device-buffer", &["failed to allocate CUDA", "gallocr"], &[RuleId::ActivationPeak]),
    s("llama-cpp-alloc-host-buffer", &["failed to allocate buffer of size"], &[RuleId::HostRamExhausted]),
    s(
        "llama-cpp-fit-system-memory",
        &["was unable to fit model into system memory"],
        &[RuleId::HostRamExhausted],
    ),
    s("llama-cpp-alloc-kv", &["failed to allocate buffer for kv cache"], KV_START),
    s("llama-cpp-alloc-compute", &["failed to allocate compute "], &[RuleId::ActivationPeak]),
    s(
        "llama-cpp-no-memory-slot",
        &["failed to find a memory slot for batch of size"],
        &[RuleId::KvPoolExhausted],
    ),
    s(
        "llama-cpp-no-free-kv-space",
        &["failed to find free space in the KV cache"],
        &[RuleId::KvPoolExhausted],
    ),
    s("llama-cpp-context-size-exceeded", &["Context size has been exceeded."], &[RuleId::KvPoolExhausted]),
    s("llama-cpp-compute-error", &["Compute error.", " n_batch = "], &[UNCLAIMED]),
    s("llama-cpp-graph-compute-failed", &["failed to compute graph, compute status"], &[UNCLAIMED]),
    s("llama-cpp-cuda-error-site", &["current device: ", ", in function "], &[UNCLAIMED]),
    s("llama-cpp-invalid-api-key", &["unauthorized: Invalid API Key"], &[RuleId::ApiKeyRejected]),
    // Figures the rules judge in context (prefill progress, decode speed).
    s("llama-cpp-prompt-progress", &["| prompt processing, n_tokens ="], &[RuleId::LongPromptBlocksPrefill]),
    s("llama-cpp-decode-speed", &["| n_gen ="], &[RuleId::DecodeSlowsWithContext]),
    s("llama-cpp-context-shift", &["slot context shift, n_keep ="], &[RuleId::ContextLengthExceeded]),
    s("llama-cpp-context-shift-disabled", &["context shift is disabled"], &[RuleId::ContextLengthExceeded]),
    s(
        "llama-cpp-full-reprefill",
        &["forcing full prompt re-processing due to lack of cache data"],
        &[RuleId::PrefixCacheMissReprefill],
    ),
    s(
        "llama-cpp-exceeds-context",
        &["tokens) exceeds the available context size"],
        &[RuleId::ContextLengthExceeded],
    ),
    s(
        "llama-cpp-larger-than-context",
        &["tokens) is larger than the max context size"],
        &[RuleId::ContextLengthExceeded],
    ),
    s(
        "llama-cpp-ubatch-too-small",
        &["tokens) is too large to process. increase the physical batch size"],
        &[RuleId::UbatchTooSmall],
    ),
    s("llama-cpp-cancel-task", &["cancel task, id_task = "], &[RuleId::TimeoutTooShort]),
    s("llama-cpp-requests-deferred", &["llamacpp:requests_deferred"], &[RuleId::QueueingExceedsCapacity]),
    // Ollama (ollama.tsv; v0.12.0 and v0.33.0-rc2).
    s("ollama-cpu-inference", &["inference compute", "library=cpu"], &[RuleId::GpuNotDetected]),
    s("ollama-driver-too-old", &["NVIDIA driver too old"], &[RuleId::GpuNotDetected]),
    // `layers.offload` below `layers.model`: the rule compares them.
    s("ollama-offload-estimate", &["msg=offload ", "layers.offload="], &[RuleId::CpuOffloadSplit]),
    s("ollama-weights-on-cpu", &["model weights", "device=CPU"], &[RuleId::CpuOffloadSplit]),
    s("ollama-ps-split", &["% CPU/GPU"], &[RuleId::CpuOffloadSplit]),
    // `ollama ps`: `100% CPU` (the rule reads the share; the needles have no digits).
    s("ollama-ps-all-cpu", &["% CPU ", " GB "], &[RuleId::GpuNotDetected]),
    s("ollama-layout-not-allocated", &["memory layout cannot be allocated"], &[RuleId::WarmupOom]),
    s(
        "ollama-layout-num-gpu",
        &["memory layout cannot be allocated with num_gpu"],
        &[RuleId::WeightsExceedGpu],
    ),
    s("ollama-system-memory", &["model requires more system memory"], &[RuleId::HostRamExhausted]),
    s("ollama-evicting", &["evicting a model to make space"], &[RuleId::ColdStart]),
    s("ollama-predicted-evicting", &["predicted to exceed available memory, evicting"], &[RuleId::ColdStart]),
    s("ollama-runner-started", &["llama runner started in"], &[RuleId::ColdStart]),
    s("ollama-server-started", &["llama-server started in"], &[RuleId::ColdStart]),
    s("ollama-load-duration", &["load duration:"], &[RuleId::ColdStart]),
    s("ollama-runner-terminated", &["llama runner terminated"], &[RuleId::WorkerDied]),
    s("ollama-server-terminated", &["llama-server terminated"], &[RuleId::WorkerDied]),
    s("ollama-runner-stopped", &["model runner has unexpectedly stopped"], &[RuleId::WorkerDied]),
    s(
        "ollama-runner-process-terminated",
        &["llama runner process has terminated"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "ollama-server-process-terminated",
        &["llama-server process has terminated"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "ollama-runner-start-timeout",
        &["timed out waiting for llama runner to start"],
        &[RuleId::EngineStartFailed],
    ),
    s(
        "ollama-server-start-timeout",
        &["timed out waiting for llama-server to start"],
        &[RuleId::EngineStartFailed],
    ),
    s("ollama-load-failed", &["msg=\"Load failed\""], &[RuleId::EngineStartFailed]),
    // The client hung up while the model was loading; the load is aborted after it.
    s(
        "ollama-client-closed-while-loading",
        &["client connection closed before ", " finished loading, aborting load"],
        &[RuleId::TimeoutTooShort],
    ), // ollama.tsv
    s("ollama-error-loading", &["error loading llama server"], &[RuleId::EngineStartFailed]),
    s(
        "ollama-incompatible",
        &["this model may be incompatible with your version of Ollama"],
        &[RuleId::EngineStartFailed],
    ),
    s("ollama-startup-oom", &["reported out-of-memory during startup"], KV_START),
    s("ollama-reducing-context", &["reducing automatic context and retrying once"], KV_START),
    s("ollama-evicting-all", &["evicting all other models and retrying once"], &[RuleId::ColocatedProcess]),
    s("ollama-runtime-oom", &["runtime OOM detected"], &[RuleId::ActivationPeak]),
    s("ollama-server-busy", &["maximum pending requests exceeded"], &[RuleId::QueueingExceedsCapacity]),
    s("ollama-model-not-pulled", &["not found, try pulling it first"], &[RuleId::ModelNotFound]),
    s("ollama-truncating-prompt", &["truncating input prompt"], &[RuleId::ContextLengthExceeded]),
    s("ollama-prompt-removed", &["entire prompt removed by truncation"], &[RuleId::ContextLengthExceeded]),
    s(
        "ollama-client-closed",
        &["aborting completion request due to client closing the connection"],
        &[RuleId::TimeoutTooShort],
    ),
    s("ollama-error-running-model", &["an error was encountered while running the model"], &[UNCLAIMED]),
    // TensorRT-LLM (tensorrt-llm.tsv; templates from NVIDIA/TensorRT-LLM, shared/engines).
    s(
        "trtllm-executor-insufficient-memory",
        &["Executor creation failed due to insufficient GPU memory"],
        &[RuleId::WarmupOom],
    ),
    s(
        "trtllm-executor-might-be-memory",
        &["Executor creation failed with an error which might indicate insufficient GPU memory"],
        &[RuleId::WarmupOom],
    ),
    s("trtllm-executor-nccl", &["Executor creation failed with NCCL error"], &[RuleId::NcclHang]),
    s(
        "trtllm-component-not-created",
        &["The following component could not be created"],
        &[RuleId::WarmupOom],
    ),
    s("trtllm-suggest-fraction-short", &["reduce free_gpu_memory_fraction"], KV_START),
    s("trtllm-suggest-shard", &["shard the model weights across GPUs"], &[RuleId::WeightsExceedGpu]),
    s("trtllm-suggest-max-num-tokens", &["reduce max_num_tokens"], &[RuleId::ActivationPeak]),
    s(
        "trtllm-attention-window-reduced",
        &["exceeds upper bound", "for available blocks. Reducing to"],
        &[RuleId::MaxSeqLenReducedByKv],
    ),
    s("trtllm-adjusted-max-seq-len", &["Adjusted max_seq_len to"], &[RuleId::MaxSeqLenReducedByKv]),
    s(
        "trtllm-window-too-large",
        &["maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache"],
        &[RuleId::MaxSeqLenReducedByKv],
    ),
    s("trtllm-max-input-reduced", &["maxInputLen is reduced to"], &[RuleId::MaxSeqLenReducedByKv]),
    s("trtllm-invalid-free-fraction", &["Invalid freeMemFraction"], &[RuleId::EngineStartFailed]),
    s("trtllm-max-tokens-in-paged-kv", &["must be large enough to process at least"], KV_START),
    s("trtllm-disabling-chunked", &["Disabling chunked context for"], &[RuleId::ChunkedPrefillOff]),
    s("trtllm-graph-warmup", &["Run generation only CUDA graph warmup for batch size"], &[RuleId::ColdStart]),
    s("trtllm-forward-error", &["Encountered an error in forward function"], &[UNCLAIMED]),
    s("trtllm-hang-detected", &["Hang detected after"], &[RuleId::SchedulerStall]),
    s("trtllm-worker-died-init", &["Executor worker died during initialization"], &[RuleId::WorkerDied]),
    s("trtllm-worker-init-error", &["Executor worker initialization error"], &[RuleId::EngineStartFailed]),
    s("trtllm-worker-returned-error", &["Executor worker returned error"], &[RuleId::EngineStartFailed]),
    s("trtllm-assertion-failed", &["[TensorRT-LLM][ERROR] Assertion failed"], &[UNCLAIMED]),
    s("trtllm-cuda-runtime-error", &["[TensorRT-LLM][ERROR] CUDA runtime error in"], &[UNCLAIMED]),
    // The C++ executor's allocation at start-up that fails is its KV-cache pool (the largest).
    s("trtllm-cudamalloc-oom", &["CUDA runtime error in ::cudaMalloc", ": out of memory"], KV_START),
    // T79: a fatal executor error; the server shuts itself down after it.
    s("trtllm-cpp-executor-error", &["CppExecutorError"], &[RuleId::EngineDead]),
    s(
        "trtllm-exceeds-max-num-tokens",
        &["should not exceed max_num_tokens"],
        &[RuleId::ContextLengthExceeded],
    ),
    s("trtllm-exceeds-max-seq-len", &["should not exceed max_seq_len"], &[RuleId::ContextLengthExceeded]),
    s("trtllm-beam-width", &["should not exceed max_beam_width"], &[RuleId::RequestExceedsBuildLimits]),
    s("trtllm-default-max-tokens", &["`default_max_tokens`"], &[RuleId::ContextLengthExceeded]),
    s("trtllm-prompt-over-max-seq-len", &["is greater than `max_seq_len`"], &[RuleId::ContextLengthExceeded]),
    s("trtllm-client-disconnected", &["is disconnected, abort"], &[RuleId::TimeoutTooShort]),
    s("trtllm-health-check-failed", &["Health generate check failed"], &[RuleId::EngineDead]),
    s("trtllm-harmony-error", &["Error in harmony chat completion"], &[UNCLAIMED]),
    s("trtllm-bench-failed-requests", &["!FAILED REQUESTS!"], &[UNCLAIMED]),
    s("trtllm-bench-total-failed", &["Total failed requests:"], &[UNCLAIMED]),
    s("trtllm-bench-metrics-fetch", &["Error fetching performance metrics"], &[RuleId::EngineDead]),
];
