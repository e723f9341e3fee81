//! Built-in model presets: the memory-relevant fields of each model's published `config.json`,
//! read by the same parser as a user's config, plus the published parameter count.
//!
//! Each preset cites the Hugging Face repository whose `config.json` it reproduces (only the
//! fields that size the cache, the weights and the default context) and where its parameter
//! count comes from. They were written from those public files without re-downloading them in
//! the session that added them; a test re-derives each one's bytes per token so a typo shows.
//! For a fine-tune or a revision, pass its own `config.json` with `--config`.

use crate::KvError;
use crate::hf_config::{ConfigOptions, parse_config};
use crate::model::{ModelShape, ParamSource};

/// A model the estimator knows: its Hugging Face `config.json`, embedded, and its parameter count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The id `--model` takes (`llama-3.1-8b`, …).
    pub id: &'static str,
    /// Other names `--model` accepts for it.
    pub aliases: &'static [&'static str],
    /// The Hugging Face repository whose `config.json` the fields come from.
    pub repo: &'static str,
    /// Parameters as published on the model page (exact where the page gives the safetensors
    /// count, else rounded as the card states it). Quoted from memory of those pages: the
    /// weights term of the budget is an estimate in any case, and `--weights-gib` overrides it.
    pub params: u64,
    /// Where `params` comes from (the model page).
    pub params_source: &'static str,
    /// The model's `config.json`, as published.
    pub config: &'static str,
}

impl Preset {
    /// The URL of the `config.json` on Hugging Face.
    pub fn source_url(&self) -> String {
        format!("https://huggingface.co/{}/blob/main/config.json", self.repo)
    }

    /// The preset as a model shape, with its published parameter count.
    pub fn shape(&self) -> Result<ModelShape, KvError> {
        self.shape_in(triage_base::lang::Lang::En)
    }

    /// [`Preset::shape`] with its notes written in `lang`.
    pub fn shape_in(&self, lang: triage_base::lang::Lang) -> Result<ModelShape, KvError> {
        let mut m = parse_config(self.config, &ConfigOptions { lang, ..ConfigOptions::default() })?;
        m.name = self.id.to_owned();
        m.params = Some((self.params, ParamSource::Published(self.params_source.to_owned())));
        let (id, url) = (self.id, self.source_url());
        m.notes.insert(
            0,
            lang.pick(format!("preset {id}: fields of {url}"), format!("预设 {id}：字段取自 {url}")),
        );
        Ok(m)
    }

    /// KV bytes per token on one GPU, served in bf16 with vLLM's defaults otherwise (TP 1,
    /// block 16, the cache in the serving dtype: [`crate::defaults`]): the figure model
    /// listings show.
    pub fn bf16_bytes_per_token(&self, shape: &ModelShape) -> Result<u64, KvError> {
        use crate::defaults;
        use crate::dtype::ModelDtype;
        use crate::layout::{Layout, LayoutOptions};
        let o = LayoutOptions {
            tp: defaults::TP,
            pp: defaults::PP,
            block_size: defaults::BLOCK_SIZE,
            kv_dtype: defaults::KV_DTYPE,
            serving_dtype: ModelDtype::Bf16,
            hybrid: defaults::HYBRID,
            lang: triage_base::lang::Lang::En,
        };
        Ok(Layout::new(shape, &o)?.bytes_per_token_per_rank())
    }
}

macro_rules! llama31 {
    ($fields:literal) => {
        concat!(
            r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":128256,"max_position_embeddings":131072,"torch_dtype":"bfloat16","#,
            r#""rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},"#,
            $fields,
            "}"
        )
    };
}

/// Every model preset.
pub const PRESETS: &[Preset] = &[
    Preset {
        id: "llama-3.1-8b",
        aliases: &[
            "llama3.1-8b",
            "llama-3-8b",
            "meta-llama/llama-3.1-8b-instruct",
            "meta-llama/llama-3.1-8b",
        ],
        repo: "meta-llama/Llama-3.1-8B-Instruct",
        params: 8_030_261_248,
        params_source: "safetensors metadata of meta-llama/Llama-3.1-8B-Instruct (8.03B)",
        config: llama31!(
            r#""hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false"#
        ),
    },
    Preset {
        id: "llama-3.1-70b",
        aliases: &["llama3.1-70b", "llama-3.3-70b", "llama-3-70b", "meta-llama/llama-3.3-70b-instruct"],
        repo: "meta-llama/Llama-3.1-70B-Instruct",
        params: 70_553_706_496,
        params_source: "safetensors metadata of meta-llama/Llama-3.1-70B-Instruct (70.6B); 3.3-70B has the same shape",
        config: llama31!(
            r#""hidden_size":8192,"intermediate_size":28672,"num_hidden_layers":80,"num_attention_heads":64,"num_key_value_heads":8,"tie_word_embeddings":false"#
        ),
    },
    Preset {
        id: "llama-3.1-405b",
        aliases: &["llama3.1-405b"],
        repo: "meta-llama/Llama-3.1-405B-Instruct",
        params: 405_853_388_800,
        params_source: "Meta's model card (405B; 405.85B in the safetensors metadata)",
        config: llama31!(
            r#""hidden_size":16384,"intermediate_size":53248,"num_hidden_layers":126,"num_attention_heads":128,"num_key_value_heads":8,"tie_word_embeddings":false"#
        ),
    },
    Preset {
        id: "llama-3.2-1b",
        aliases: &["llama3.2-1b"],
        repo: "meta-llama/Llama-3.2-1B-Instruct",
        params: 1_235_814_400,
        params_source: "safetensors metadata of meta-llama/Llama-3.2-1B-Instruct (1.24B)",
        config: llama31!(
            r#""hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,"tie_word_embeddings":true"#
        ),
    },
    Preset {
        id: "llama-3.2-3b",
        aliases: &["llama3.2-3b"],
        repo: "meta-llama/Llama-3.2-3B-Instruct",
        params: 3_212_749_824,
        params_source: "safetensors metadata of meta-llama/Llama-3.2-3B-Instruct (3.21B)",
        config: llama31!(
            r#""hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":28,"num_attention_heads":24,"num_key_value_heads":8,"head_dim":128,"tie_word_embeddings":true"#
        ),
    },
    Preset {
        id: "llama-2-7b",
        aliases: &["llama2-7b", "article-7b", "meta-llama/llama-2-7b-hf"],
        repo: "meta-llama/Llama-2-7b-hf",
        params: 6_738_415_616,
        params_source: "safetensors metadata of meta-llama/Llama-2-7b-hf (6.74B); the article's \"7B\" example shape",
        config: r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32000,"max_position_embeddings":4096,"torch_dtype":"float16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "llama-2-70b",
        aliases: &["llama2-70b"],
        repo: "meta-llama/Llama-2-70b-hf",
        params: 68_976_648_192,
        params_source: "safetensors metadata of meta-llama/Llama-2-70b-hf (69B)",
        config: r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":8192,"intermediate_size":28672,"num_hidden_layers":80,"num_attention_heads":64,"num_key_value_heads":8,"vocab_size":32000,"max_position_embeddings":4096,"torch_dtype":"float16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "mistral-7b-v0.1",
        aliases: &["mistral-7b-instruct-v0.1", "mistralai/mistral-7b-v0.1"],
        repo: "mistralai/Mistral-7B-v0.1",
        params: 7_241_732_096,
        params_source: "safetensors metadata of mistralai/Mistral-7B-v0.1 (7.24B)",
        config: r#"{"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,"max_position_embeddings":32768,"sliding_window":4096,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "mistral-7b-v0.3",
        aliases: &["mistral-7b", "mistral-7b-instruct-v0.3", "mistralai/mistral-7b-instruct-v0.3"],
        repo: "mistralai/Mistral-7B-Instruct-v0.3",
        params: 7_248_023_552,
        params_source: "safetensors metadata of mistralai/Mistral-7B-Instruct-v0.3 (7.25B)",
        config: r#"{"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"vocab_size":32768,"max_position_embeddings":32768,"sliding_window":null,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "mistral-nemo-12b",
        aliases: &["mistral-nemo", "mistralai/mistral-nemo-instruct-2407"],
        repo: "mistralai/Mistral-Nemo-Instruct-2407",
        params: 12_247_782_400,
        params_source: "safetensors metadata of mistralai/Mistral-Nemo-Instruct-2407 (12.2B)",
        config: r#"{"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":5120,"intermediate_size":14336,"num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"vocab_size":131072,"max_position_embeddings":1024000,"sliding_window":null,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "mixtral-8x7b",
        aliases: &["mixtral-8x7b-instruct", "mistralai/mixtral-8x7b-instruct-v0.1"],
        repo: "mistralai/Mixtral-8x7B-Instruct-v0.1",
        params: 46_702_792_704,
        params_source: "safetensors metadata of mistralai/Mixtral-8x7B-Instruct-v0.1 (46.7B)",
        config: r#"{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32000,"max_position_embeddings":32768,"sliding_window":null,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "mixtral-8x22b",
        aliases: &["mixtral-8x22b-instruct", "mistralai/mixtral-8x22b-instruct-v0.1"],
        repo: "mistralai/Mixtral-8x22B-Instruct-v0.1",
        params: 140_630_071_296,
        params_source: "safetensors metadata of mistralai/Mixtral-8x22B-Instruct-v0.1 (141B)",
        config: r#"{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":6144,"intermediate_size":16384,"num_hidden_layers":56,"num_attention_heads":48,"num_key_value_heads":8,"num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32768,"max_position_embeddings":65536,"sliding_window":null,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen2.5-7b",
        aliases: &["qwen2.5-7b-instruct", "qwen/qwen2.5-7b-instruct"],
        repo: "Qwen/Qwen2.5-7B-Instruct",
        params: 7_615_616_512,
        params_source: "Qwen2.5-7B-Instruct model card (7.61B)",
        config: r#"{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,"num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"max_position_embeddings":32768,"sliding_window":131072,"use_sliding_window":false,"max_window_layers":28,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen2.5-14b",
        aliases: &["qwen2.5-14b-instruct", "qwen/qwen2.5-14b-instruct"],
        repo: "Qwen/Qwen2.5-14B-Instruct",
        params: 14_770_033_664,
        params_source: "Qwen2.5-14B-Instruct model card (14.7B)",
        config: r#"{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":5120,"intermediate_size":13824,"num_hidden_layers":48,"num_attention_heads":40,"num_key_value_heads":8,"vocab_size":152064,"max_position_embeddings":32768,"sliding_window":131072,"use_sliding_window":false,"max_window_layers":70,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen2.5-32b",
        aliases: &["qwen2.5-32b-instruct", "qwen/qwen2.5-32b-instruct"],
        repo: "Qwen/Qwen2.5-32B-Instruct",
        params: 32_763_876_352,
        params_source: "Qwen2.5-32B-Instruct model card (32.5B; 32.8B with embeddings)",
        config: r#"{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":5120,"intermediate_size":27648,"num_hidden_layers":64,"num_attention_heads":40,"num_key_value_heads":8,"vocab_size":152064,"max_position_embeddings":32768,"sliding_window":131072,"use_sliding_window":false,"max_window_layers":70,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen2.5-72b",
        aliases: &["qwen2.5-72b-instruct", "qwen/qwen2.5-72b-instruct"],
        repo: "Qwen/Qwen2.5-72B-Instruct",
        params: 72_706_203_648,
        params_source: "Qwen2.5-72B-Instruct model card (72.7B)",
        config: r#"{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":8192,"intermediate_size":29568,"num_hidden_layers":80,"num_attention_heads":64,"num_key_value_heads":8,"vocab_size":152064,"max_position_embeddings":32768,"sliding_window":131072,"use_sliding_window":false,"max_window_layers":70,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen3-8b",
        aliases: &["qwen/qwen3-8b"],
        repo: "Qwen/Qwen3-8B",
        params: 8_190_000_000,
        params_source: "Qwen3-8B model card (8.2B)",
        config: r#"{"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":4096,"intermediate_size":12288,"num_hidden_layers":36,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"max_position_embeddings":40960,"sliding_window":null,"use_sliding_window":false,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen3-32b",
        aliases: &["qwen/qwen3-32b"],
        repo: "Qwen/Qwen3-32B",
        params: 32_800_000_000,
        params_source: "Qwen3-32B model card (32.8B)",
        config: r#"{"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":5120,"intermediate_size":25600,"num_hidden_layers":64,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"max_position_embeddings":40960,"sliding_window":null,"use_sliding_window":false,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen3-30b-a3b",
        aliases: &["qwen/qwen3-30b-a3b"],
        repo: "Qwen/Qwen3-30B-A3B",
        params: 30_500_000_000,
        params_source: "Qwen3-30B-A3B model card (30.5B total, 3.3B active)",
        config: r#"{"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,"num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,"vocab_size":151936,"max_position_embeddings":40960,"sliding_window":null,"use_sliding_window":false,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "qwen3-235b-a22b",
        aliases: &["qwen/qwen3-235b-a22b"],
        repo: "Qwen/Qwen3-235B-A22B",
        params: 235_000_000_000,
        params_source: "Qwen3-235B-A22B model card (235B total, 22B active)",
        config: r#"{"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":4096,"intermediate_size":12288,"moe_intermediate_size":1536,"num_hidden_layers":94,"num_attention_heads":64,"num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,"vocab_size":151936,"max_position_embeddings":40960,"sliding_window":null,"use_sliding_window":false,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "gemma-2-9b",
        aliases: &["gemma-2-9b-it", "google/gemma-2-9b-it"],
        repo: "google/gemma-2-9b-it",
        params: 9_241_705_984,
        params_source: "safetensors metadata of google/gemma-2-9b-it (9.24B)",
        config: r#"{"architectures":["Gemma2ForCausalLM"],"model_type":"gemma2","hidden_size":3584,"intermediate_size":14336,"num_hidden_layers":42,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"vocab_size":256000,"max_position_embeddings":8192,"sliding_window":4096,"torch_dtype":"float32","tie_word_embeddings":true}"#,
    },
    Preset {
        id: "gemma-2-27b",
        aliases: &["gemma-2-27b-it", "google/gemma-2-27b-it"],
        repo: "google/gemma-2-27b-it",
        params: 27_227_128_320,
        params_source: "safetensors metadata of google/gemma-2-27b-it (27.2B)",
        config: r#"{"architectures":["Gemma2ForCausalLM"],"model_type":"gemma2","hidden_size":4608,"intermediate_size":36864,"num_hidden_layers":46,"num_attention_heads":32,"num_key_value_heads":16,"head_dim":128,"vocab_size":256000,"max_position_embeddings":8192,"sliding_window":4096,"torch_dtype":"bfloat16","tie_word_embeddings":true}"#,
    },
    Preset {
        id: "gemma-3-27b",
        aliases: &["gemma-3-27b-it", "google/gemma-3-27b-it"],
        repo: "google/gemma-3-27b-it",
        params: 27_400_000_000,
        params_source: "safetensors metadata of google/gemma-3-27b-it (27.4B with the vision tower)",
        config: r#"{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16","text_config":{"model_type":"gemma3_text","hidden_size":5376,"intermediate_size":21504,"num_hidden_layers":62,"num_attention_heads":32,"num_key_value_heads":16,"head_dim":128,"vocab_size":262208,"max_position_embeddings":131072,"sliding_window":1024,"sliding_window_pattern":6,"rope_scaling":{"factor":8.0,"rope_type":"linear"},"tie_word_embeddings":true}}"#,
    },
    Preset {
        id: "gemma-3-12b",
        aliases: &["gemma-3-12b-it", "google/gemma-3-12b-it"],
        repo: "google/gemma-3-12b-it",
        params: 12_200_000_000,
        params_source: "safetensors metadata of google/gemma-3-12b-it (12.2B with the vision tower)",
        config: r#"{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16","text_config":{"model_type":"gemma3_text","hidden_size":3840,"intermediate_size":15360,"num_hidden_layers":48,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"vocab_size":262208,"max_position_embeddings":131072,"sliding_window":1024,"sliding_window_pattern":6,"rope_scaling":{"factor":8.0,"rope_type":"linear"},"tie_word_embeddings":true}}"#,
    },
    Preset {
        id: "gemma-3-4b",
        aliases: &["gemma-3-4b-it", "google/gemma-3-4b-it"],
        repo: "google/gemma-3-4b-it",
        params: 4_300_000_000,
        params_source: "safetensors metadata of google/gemma-3-4b-it (4.3B with the vision tower)",
        config: r#"{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16","text_config":{"model_type":"gemma3_text","hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"vocab_size":262208,"max_position_embeddings":131072,"sliding_window":1024,"sliding_window_pattern":6,"rope_scaling":{"factor":8.0,"rope_type":"linear"},"tie_word_embeddings":true}}"#,
    },
    Preset {
        id: "gpt-oss-120b",
        aliases: &["openai/gpt-oss-120b"],
        repo: "openai/gpt-oss-120b",
        params: 116_800_000_000,
        params_source: "OpenAI's gpt-oss model card (117B total, 5.1B active; MoE weights in MXFP4)",
        config: r#"{"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":36,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"num_local_experts":128,"num_experts_per_tok":4,"vocab_size":201088,"max_position_embeddings":131072,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"quantization_config":{"quant_method":"mxfp4"},"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "gpt-oss-20b",
        aliases: &["openai/gpt-oss-20b"],
        repo: "openai/gpt-oss-20b",
        params: 20_900_000_000,
        params_source: "OpenAI's gpt-oss model card (21B total, 3.6B active; MoE weights in MXFP4)",
        config: r#"{"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss","hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":24,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"num_local_experts":32,"num_experts_per_tok":4,"vocab_size":201088,"max_position_embeddings":131072,"sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"quantization_config":{"quant_method":"mxfp4"},"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "deepseek-v3",
        aliases: &[
            "deepseek-r1",
            "deepseek-v3-0324",
            "deepseek-r1-0528",
            "deepseek-ai/deepseek-v3",
            "deepseek-ai/deepseek-r1",
        ],
        repo: "deepseek-ai/DeepSeek-V3",
        params: 671_000_000_000,
        params_source: "DeepSeek-V3 technical report (671B total, 37B active; 685B on the hub with the MTP module); R1 has the same shape",
        config: r#"{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","hidden_size":7168,"intermediate_size":18432,"moe_intermediate_size":2048,"num_hidden_layers":61,"num_attention_heads":128,"num_key_value_heads":128,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"n_routed_experts":256,"n_shared_experts":1,"num_experts_per_tok":8,"first_k_dense_replace":3,"num_nextn_predict_layers":1,"vocab_size":129280,"max_position_embeddings":163840,"rope_scaling":{"beta_fast":32,"beta_slow":1,"factor":40,"mscale":1.0,"mscale_all_dim":1.0,"original_max_position_embeddings":4096,"type":"yarn"},"quantization_config":{"activation_scheme":"dynamic","fmt":"e4m3","quant_method":"fp8","weight_block_size":[128,128]},"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "deepseek-v2-lite",
        aliases: &["deepseek-v2-lite-chat", "deepseek-ai/deepseek-v2-lite-chat"],
        repo: "deepseek-ai/DeepSeek-V2-Lite-Chat",
        params: 15_700_000_000,
        params_source: "DeepSeek-V2 paper and model card (15.7B total, 2.4B active)",
        config: r#"{"architectures":["DeepseekV2ForCausalLM"],"model_type":"deepseek_v2","hidden_size":2048,"intermediate_size":10944,"moe_intermediate_size":1408,"num_hidden_layers":27,"num_attention_heads":16,"num_key_value_heads":16,"q_lora_rank":null,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"n_routed_experts":64,"n_shared_experts":2,"num_experts_per_tok":6,"first_k_dense_replace":1,"vocab_size":102400,"max_position_embeddings":163840,"rope_scaling":{"beta_fast":32,"beta_slow":1,"factor":40,"mscale":0.707,"mscale_all_dim":0.707,"original_max_position_embeddings":4096,"type":"yarn"},"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "phi-3-mini-4k",
        aliases: &["phi-3-mini", "microsoft/phi-3-mini-4k-instruct"],
        repo: "microsoft/Phi-3-mini-4k-instruct",
        params: 3_821_079_552,
        params_source: "safetensors metadata of microsoft/Phi-3-mini-4k-instruct (3.82B)",
        config: r#"{"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32064,"max_position_embeddings":4096,"sliding_window":2047,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "phi-4",
        aliases: &["microsoft/phi-4"],
        repo: "microsoft/phi-4",
        params: 14_659_507_200,
        params_source: "safetensors metadata of microsoft/phi-4 (14.7B)",
        config: r#"{"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":5120,"intermediate_size":17920,"num_hidden_layers":40,"num_attention_heads":40,"num_key_value_heads":10,"vocab_size":100352,"max_position_embeddings":16384,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
    Preset {
        id: "glm-4-9b",
        aliases: &["glm-4-9b-chat", "thudm/glm-4-9b-chat"],
        repo: "THUDM/glm-4-9b-chat",
        params: 9_400_000_000,
        params_source: "THUDM/glm-4-9b-chat model card (9.4B)",
        config: r#"{"architectures":["ChatGLMModel"],"model_type":"chatglm","hidden_size":4096,"ffn_hidden_size":13696,"num_layers":40,"num_attention_heads":32,"multi_query_attention":true,"multi_query_group_num":2,"kv_channels":128,"padded_vocab_size":151552,"seq_length":131072,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#,
    },
];

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace('_', "-")
}

/// Find a preset by id or alias (case-insensitive; `Qwen/Qwen3-8B` style repo names work).
pub fn preset(name: &str) -> Result<&'static Preset, KvError> {
    let n = norm(name);
    PRESETS
        .iter()
        .find(|p| p.id == n || p.aliases.contains(&n.as_str()) || norm(p.repo) == n)
        .ok_or_else(|| KvError::UnknownModel(name.trim().to_owned()))
}

/// The preset for a model name as a server logs it (`model='meta-llama/Llama-3.1-8B-Instruct'`,
/// or a local path such as `/models/Llama-3.1-8B-Instruct`): the full name first, then its last
/// path segment against preset ids, aliases and repository names. For `triage analyze`, which
/// sees the name in a startup log but no config.
pub fn preset_for_served_model(name: &str) -> Option<&'static Preset> {
    if let Ok(p) = preset(name) {
        return Some(p);
    }
    let last = norm(name.trim().trim_end_matches('/').rsplit('/').next().unwrap_or(""));
    if last.is_empty() {
        return None;
    }
    PRESETS.iter().find(|p| {
        p.id == last
            || p.aliases.iter().any(|a| a.rsplit('/').next() == Some(last.as_str()))
            || norm(p.repo.rsplit('/').next().unwrap_or("")) == last
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bpt(id: &str) -> u64 {
        let p = preset(id).unwrap();
        p.bf16_bytes_per_token(&p.shape().unwrap()).unwrap()
    }

    #[test]
    fn every_preset_parses_and_is_unique() {
        assert!(PRESETS.len() >= 20, "{}", PRESETS.len());
        let mut names = Vec::new();
        for p in PRESETS {
            let m = p.shape().unwrap_or_else(|e| panic!("{}: {e}", p.id));
            assert!(m.max_model_len.is_some(), "{} has a context length", p.id);
            assert!(m.params.is_some());
            names.push(p.id.to_owned());
            names.extend(p.aliases.iter().map(|a| (*a).to_owned()));
        }
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(n, names.len(), "ids and aliases are unique");
    }

    #[test]
    fn bytes_per_token_of_well_known_models() {
        // 2 · layers · kv_heads · head_dim · 2 bytes, or the MLA latent.
        assert_eq!(bpt("llama-3.1-8b"), 2 * 32 * 8 * 128 * 2);
        assert_eq!(bpt("llama-3.1-70b"), 2 * 80 * 8 * 128 * 2);
        assert_eq!(bpt("llama-2-7b"), 2 * 32 * 32 * 128 * 2);
        assert_eq!(bpt("qwen2.5-7b"), 2 * 28 * 4 * 128 * 2);
        assert_eq!(bpt("qwen3-235b-a22b"), 2 * 94 * 4 * 128 * 2);
        assert_eq!(bpt("mistral-nemo-12b"), 2 * 40 * 8 * 128 * 2);
        assert_eq!(bpt("gemma-3-27b"), 2 * 62 * 16 * 128 * 2);
        assert_eq!(bpt("gpt-oss-120b"), 2 * 36 * 8 * 64 * 2);
        assert_eq!(bpt("deepseek-v3"), 61 * (512 + 64) * 2);
        assert_eq!(bpt("glm-4-9b"), 2 * 40 * 2 * 128 * 2);
        assert_eq!(bpt("phi-3-mini-4k"), 2 * 32 * 32 * 96 * 2);
    }

    #[test]
    fn lookups() {
        assert_eq!(preset("DeepSeek-R1").unwrap().id, "deepseek-v3");
        assert_eq!(preset("Qwen/Qwen3-8B").unwrap().id, "qwen3-8b");
        assert_eq!(preset("meta-llama/Llama-3.1-8B-Instruct").unwrap().id, "llama-3.1-8b");
        assert!(preset("gpt-5").unwrap_err().to_string().contains("--list-models"));
        let id = |n: &str| preset_for_served_model(n).map(|p| p.id);
        assert_eq!(id("/models/Llama-3.1-8B-Instruct/"), Some("llama-3.1-8b"));
        assert_eq!(id("/data/DeepSeek-R1"), Some("deepseek-v3"));
        assert_eq!(id("gemma-3-27b-it"), Some("gemma-3-27b"));
        assert_eq!(id("/models/my-finetune"), None);
        assert_eq!(id(""), None);
    }
}
