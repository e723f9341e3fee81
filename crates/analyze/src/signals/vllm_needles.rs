//! The strings the vLLM parser (`parsers/vllm.rs`) dispatches on, one bit each. The alarm
//! watch's one scan of every line finds them (`Cx::vllm_needles`): the parser reads no line
//! twice. They live here, beside the scan, so that the scan does not depend on the parser.
//! Overlapping matches are all reported (`TimeoutError` sets `Timeout` and `Error` too); no
//! branch depends on a needle being absent where another contains it. No digits: lines equal but
//! for their digits are read alike.

pub const AVG_PROMPT: u64 = 1 << 0;
pub const AVG_GEN: u64 = 1 << 1;
pub const KV_USAGE: u64 = 1 << 2;
pub const RUNNING: u64 = 1 << 3;
pub const PREEMPTED: u64 = 1 << 4;
pub const NO_BLOCKS: u64 = 1 << 5;
pub const KV_LARGER: u64 = 1 << 6;
pub const FREE_LESS: u64 = 1 << 7;
pub const MAX_SEQ: u64 = 1 << 8;
pub const AVAILABLE_KV: u64 = 1 << 9;
pub const KV_SIZE: u64 = 1 << 10;
pub const MAX_CONC: u64 = 1 << 11;
pub const GPU_BLOCKS: u64 = 1 << 12;
pub const WEIGHTS_TAKE: u64 = 1 << 13;
pub const MODEL_LOADING: u64 = 1 << 14;
pub const REST_FOR_KV: u64 = 1 << 15;
pub const CAPTURING: u64 = 1 << 16;
pub const CAPTURE_DONE: u64 = 1 << 17;
pub const STARTING: u64 = 1 << 18;
pub const LOADING_WEIGHTS: u64 = 1 << 19;
pub const ENGINE_DEAD_ERR: u64 = 1 << 20;
pub const LOOP_DIED: u64 = 1 << 21;
pub const CORE_ENCOUNTERED: u64 = 1 << 22;
pub const CORE_PROC: u64 = 1 << 23;
pub const DIED: u64 = 1 << 24;
pub const ENGINE_IS_DEAD: u64 = 1 << 25;
pub const WATCHDOG: u64 = 1 << 26;
pub const NCCL_ERROR: u64 = 1 << 27;
pub const NCCL_INTERNAL: u64 = 1 << 28;
pub const NCCL_SYSTEM: u64 = 1 << 29;
pub const PG_NCCL: u64 = 1 << 30;
pub const LOWER_TIMEOUT: u64 = 1 << 31;
pub const ABORTED: u64 = 1 << 32;
pub const CHUNKED: u64 = 1 << 33;
pub const HTTP: u64 = 1 << 34;
pub const NON_DEFAULT: u64 = 1 << 35;
pub const WITH_CONFIG: u64 = 1 << 36;
pub const NAMESPACE: u64 = 1 << 37;
pub const ENGINE_ARGS: u64 = 1 << 38;
pub const TIMEOUT_ERROR: u64 = 1 << 39;
pub const TIMED_OUT: u64 = 1 << 40;
pub const TIMEOUT: u64 = 1 << 41;
pub const ERROR_UPPER: u64 = 1 << 42;
pub const ERROR_WORD: u64 = 1 << 43;
pub const ADDED: u64 = 1 << 44;
pub const CUDA_OOM: u64 = 1 << 45;

/// The text of each bit, in bit order: what the scan searches for.
pub(crate) const NEEDLE_TEXT: [&str; 46] = [
    "Avg prompt throughput",
    "Avg generation throughput",
    "GPU KV cache usage:",
    "Running:",
    "preempted by PreemptionMode",
    "No available memory for the cache blocks",
    "larger than the available KV cache memory",
    "is less than desired GPU memory utilization",
    "larger than the maximum number of tokens that can be stored in KV cache",
    "Available KV cache memory",
    "GPU KV cache size",
    "Maximum concurrency for",
    "# GPU blocks",
    "model weights take",
    "Model loading took",
    "the rest of the memory reserved for KV Cache",
    "Capturing CUDA graph",
    "Graph capturing finished",
    "Starting vLLM API server",
    "Loading weights took",
    "EngineDeadError",
    "Engine loop has died",
    "EngineCore encountered",
    "Engine core proc",
    "died",
    "Background loop has errored already",
    "Watchdog caught collective operation timeout",
    "NCCL error",
    "ncclInternalError",
    "ncclSystemError",
    "ProcessGroupNCCL",
    "timeout",
    "Aborted request",
    "Chunked prefill is enabled",
    " HTTP/",
    "non-default args",
    "with config:",
    "Namespace(",
    "engine_args",
    "TimeoutError",
    "timed out",
    "Timeout",
    "ERROR",
    "Error",
    "Added request",
    "CUDA out of memory",
];
