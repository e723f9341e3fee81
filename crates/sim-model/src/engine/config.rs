//! What a run is set up with: the engine and its launch arguments ([`EngineConfig`], sized
//! from the H200's memory as vLLM sizes its cache), the gateway in front of the node
//! ([`GatewayConfig`]) and the whole incident ([`SimConfig`]).

use crate::calibration::StepCost;
use crate::output::client::ClientFile;
use crate::output::gpu::GpuSetup;
use crate::output::vllm_log::StartupInfo;
use crate::workload::Workload;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// Abort the request in the engine and free its KV blocks (vLLM's own server does this).
    Abort,
    /// Forget the request but never free its blocks: the KV leak.
    Leak,
}

/// The engine and its launch arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineConfig {
    pub model: String,
    pub block_size: u32,
    pub num_blocks: u32,
    /// The block count was forced (`--num-gpu-blocks-override`) rather than sized from memory.
    pub blocks_overridden: bool,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
    pub gpu_memory_utilization: f64,
    pub tensor_parallel_size: u32,
    pub cost: StepCost,
    pub kv_bytes_per_token: u64,
    /// `false` is the deadlock bug: a request that needs a block when none is free just waits.
    pub preempt_when_full: bool,
    pub on_disconnect: OnDisconnect,
    /// Prefill materialises the attention scores (`heads × tokens × context × 2` bytes), as
    /// eager attention does; `None` is a fused kernel that never does.
    pub eager_attention_heads: Option<u32>,
    /// The engine can step only from this moment (loading weights, capturing CUDA graphs).
    pub ready_ns: u64,
}

/// The H200 as PyTorch sees it (`torch.cuda.mem_get_info` total: "139.80 GiB").
pub const TORCH_TOTAL_BYTES: u64 = 150_111_256_576;
/// The trace model's weights in bf16 (1.1 B parameters).
pub const WEIGHTS_BYTES: u64 = 2_200_096_768;
/// Memory the process holds outside PyTorch's allocator (vLLM's "non-torch memory").
pub(super) const NON_TORCH_BYTES: u64 = 644_245_094;

impl EngineConfig {
    /// vLLM's defaults for the trace's model on one H200: the cache is what is left of
    /// `gpu_memory_utilization` after weights, activations and non-torch memory.
    pub fn h200(model: &str) -> EngineConfig {
        let mut config = EngineConfig {
            model: model.to_owned(),
            block_size: 16,
            num_blocks: 0,
            blocks_overridden: false,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            max_model_len: 32_768,
            chunked_prefill: true,
            gpu_memory_utilization: 0.9,
            tensor_parallel_size: 1,
            cost: StepCost::H200_TRACE,
            kv_bytes_per_token: crate::calibration::KV_BYTES_PER_TOKEN,
            preempt_when_full: true,
            on_disconnect: OnDisconnect::Abort,
            eager_attention_heads: None,
            ready_ns: 0,
        };
        config.num_blocks = config.blocks_from_memory();
        config
    }

    /// The activation peak vLLM profiles for a step of `max_num_batched_tokens`.
    pub fn activation_bytes(&self) -> u64 {
        u64::from(self.max_num_batched_tokens) * 160 * 1024
    }

    /// Everything the process holds on the GPU (what vLLM budgets: utilisation × total).
    pub fn process_bytes(&self) -> u64 {
        (TORCH_TOTAL_BYTES as f64 * self.gpu_memory_utilization) as u64
    }

    fn blocks_from_memory(&self) -> u32 {
        let kv_bytes =
            self.process_bytes().saturating_sub(WEIGHTS_BYTES + self.activation_bytes() + NON_TORCH_BYTES);
        (kv_bytes / (u64::from(self.block_size) * self.kv_bytes_per_token)) as u32
    }

    /// Recompute the block count from memory after changing the settings it depends on.
    pub fn resize_cache(&mut self) {
        self.num_blocks = self.blocks_from_memory();
        self.blocks_overridden = false;
    }

    /// Force the block count (`--num-gpu-blocks-override`).
    pub fn override_blocks(&mut self, blocks: u32) {
        self.num_blocks = blocks;
        self.blocks_overridden = true;
    }

    pub(super) fn startup_info(&self) -> StartupInfo {
        let mut args: Vec<(String, String)> = Vec::new();
        let py_bool = |value: bool| if value { "True" } else { "False" }.to_owned();
        if self.max_num_seqs != 256 {
            args.push(("max_num_seqs".into(), self.max_num_seqs.to_string()));
        }
        if self.max_model_len != 32_768 {
            args.push(("max_model_len".into(), self.max_model_len.to_string()));
        }
        if !self.chunked_prefill {
            args.push(("enable_chunked_prefill".into(), py_bool(false)));
        }
        if self.max_num_batched_tokens != 8192 {
            args.push(("max_num_batched_tokens".into(), self.max_num_batched_tokens.to_string()));
        }
        if self.tensor_parallel_size != 1 {
            args.push(("tensor_parallel_size".into(), self.tensor_parallel_size.to_string()));
        }
        if self.blocks_overridden {
            args.push(("num_gpu_blocks_override".into(), self.num_blocks.to_string()));
        }
        if self.eager_attention_heads.is_some() {
            args.push(("enforce_eager".into(), py_bool(true)));
        }
        StartupInfo {
            model: self.model.clone(),
            args,
            num_blocks: self.num_blocks,
            block_size: self.block_size,
            kv_bytes_per_token: self.kv_bytes_per_token,
            max_model_len: self.max_model_len,
            blocks_overridden: self.blocks_overridden.then_some(self.num_blocks),
        }
    }
}

/// In front of the node: what answers when the node cannot.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GatewayConfig {
    /// From this moment the gateway sends nothing to the node (it marked it unhealthy): the
    /// node's streams stop, and live requests get `503 no healthy upstream`.
    pub cut_ns: Option<u64>,
    /// The node's serving layer rate-limits requests (a token bucket) and answers 429 when it
    /// is empty.
    pub rate_limit: Option<RateLimit>,
}

/// A token bucket: `burst` requests at once, refilled at `per_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateLimit {
    pub per_s: f64,
    pub burst: u32,
}

/// A whole simulated incident.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimConfig {
    pub seed: u64,
    pub engine: EngineConfig,
    pub gateway: GatewayConfig,
    pub workload: Workload,
    /// GPU telemetry (nvidia-smi CSV and NVML series) is written when set.
    pub gpus: Option<GpuSetup>,
    pub client_file: Option<ClientFile>,
}
