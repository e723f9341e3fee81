//! Data types: what one KV element costs (`--kv-cache-dtype`), and what one weight costs.

use crate::KvError;
use serde::Serialize;

/// The model's compute dtype (`torch_dtype` / `dtype` in `config.json`, or `--dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelDtype {
    /// bfloat16, 2 bytes.
    Bf16,
    /// float16, 2 bytes.
    Fp16,
    /// float32, 4 bytes.
    Fp32,
}

impl ModelDtype {
    /// `bfloat16`, `torch.bfloat16`, `bf16`, `float16`, `half`, `float32` …
    pub fn parse(s: &str) -> Option<ModelDtype> {
        let s = s.trim().trim_start_matches("torch.").to_ascii_lowercase();
        match s.as_str() {
            "bfloat16" | "bf16" => Some(ModelDtype::Bf16),
            "float16" | "fp16" | "half" => Some(ModelDtype::Fp16),
            "float32" | "fp32" | "float" => Some(ModelDtype::Fp32),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            ModelDtype::Bf16 | ModelDtype::Fp16 => 2,
            ModelDtype::Fp32 => 4,
        }
    }

    /// `bf16`, `fp16` or `fp32`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelDtype::Bf16 => "bf16",
            ModelDtype::Fp16 => "fp16",
            ModelDtype::Fp32 => "fp32",
        }
    }
}

/// vLLM's `--kv-cache-dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// The model's dtype. vLLM serves a float32 checkpoint in 16 bits unless `--dtype float32`.
    Auto,
    /// bfloat16, 2 bytes.
    Bf16,
    /// float16, 2 bytes.
    Fp16,
    /// float32, 4 bytes.
    Fp32,
    /// fp8 in the platform's default format, 1 byte.
    Fp8,
    /// fp8 E4M3, 1 byte.
    Fp8E4m3,
    /// fp8 E5M2, 1 byte.
    Fp8E5m2,
    /// DeepSeek's FlashMLA fp8 layout: 512 fp8 latent values, 4 fp32 scales and 64 bf16 rope
    /// values = 656 bytes per token per layer.
    Fp8DsMla,
}

impl KvDtype {
    /// The `--kv-cache-dtype` value `s` (`auto`, `bf16`, `fp8_e4m3`, …; `-` and `_` alike); an error names an unknown one.
    pub fn parse(s: &str) -> Result<KvDtype, KvError> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Ok(match norm.as_str() {
            "auto" => KvDtype::Auto,
            "bf16" | "bfloat16" => KvDtype::Bf16,
            "fp16" | "float16" | "half" => KvDtype::Fp16,
            "fp32" | "float32" | "float" => KvDtype::Fp32,
            "fp8" => KvDtype::Fp8,
            "fp8_e4m3" => KvDtype::Fp8E4m3,
            "fp8_e5m2" => KvDtype::Fp8E5m2,
            "fp8_ds_mla" => KvDtype::Fp8DsMla,
            _ => return Err(KvError::UnknownKvDtype(s.trim().to_owned())),
        })
    }

    /// The value as `--kv-cache-dtype` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            KvDtype::Auto => "auto",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp32 => "fp32",
            KvDtype::Fp8 => "fp8",
            KvDtype::Fp8E4m3 => "fp8_e4m3",
            KvDtype::Fp8E5m2 => "fp8_e5m2",
            KvDtype::Fp8DsMla => "fp8_ds_mla",
        }
    }

    /// Bytes of one element. `model` is the serving dtype that `auto` follows; a float32
    /// *config* is served in 16 bits by vLLM, which the caller has already folded into `model`.
    /// `Fp8DsMla` has no per-element size (its layout mixes types): it answers 1, and the
    /// layout computes its 656-byte rows itself.
    pub fn element_bytes(self, model: ModelDtype) -> u64 {
        match self {
            KvDtype::Auto => model.bytes(),
            KvDtype::Bf16 | KvDtype::Fp16 => 2,
            KvDtype::Fp32 => 4,
            KvDtype::Fp8 | KvDtype::Fp8E4m3 | KvDtype::Fp8E5m2 | KvDtype::Fp8DsMla => 1,
        }
    }
}

/// How the weights are stored, for the weights-size estimate (parameters × bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightDtype {
    /// bfloat16, 2 bytes per parameter.
    Bf16,
    /// float16, 2 bytes per parameter.
    Fp16,
    /// float32, 4 bytes per parameter.
    Fp32,
    /// fp8, 1 byte per parameter.
    Fp8,
    /// 8-bit integer, 1 byte per parameter.
    Int8,
    /// 4-bit integer (AWQ, GPTQ) with per-group scales: about 4.25 bits per weight.
    Int4,
    /// OpenAI's MXFP4 (gpt-oss experts): 4-bit values with one 8-bit scale per 32 = 4.25 bits.
    Mxfp4,
}

impl WeightDtype {
    /// The dtype named by `s` (`bf16`, `fp8`, `int4`/`awq`/`gptq`, `mxfp4`, …); an error names an unknown one.
    pub fn parse(s: &str) -> Result<WeightDtype, KvError> {
        let norm = s.trim().trim_start_matches("torch.").to_ascii_lowercase().replace('-', "_");
        Ok(match norm.as_str() {
            "bf16" | "bfloat16" => WeightDtype::Bf16,
            "fp16" | "float16" | "half" => WeightDtype::Fp16,
            "fp32" | "float32" | "float" => WeightDtype::Fp32,
            "fp8" | "fp8_e4m3" | "float8_e4m3fn" => WeightDtype::Fp8,
            "int8" | "w8a8" => WeightDtype::Int8,
            "int4" | "awq" | "gptq" | "w4a16" => WeightDtype::Int4,
            "mxfp4" => WeightDtype::Mxfp4,
            _ => return Err(KvError::UnknownDtype(s.trim().to_owned())),
        })
    }

    /// Weights stored in the model's compute dtype.
    pub fn from_model(d: ModelDtype) -> WeightDtype {
        match d {
            ModelDtype::Bf16 => WeightDtype::Bf16,
            ModelDtype::Fp16 => WeightDtype::Fp16,
            ModelDtype::Fp32 => WeightDtype::Fp32,
        }
    }

    /// Thousandths of a byte per parameter (integer, so that weights sizes are exact).
    pub fn millibytes(self) -> u64 {
        match self {
            WeightDtype::Bf16 | WeightDtype::Fp16 => 2_000,
            WeightDtype::Fp32 => 4_000,
            WeightDtype::Fp8 | WeightDtype::Int8 => 1_000,
            WeightDtype::Int4 | WeightDtype::Mxfp4 => 531,
        }
    }

    /// The short name (`bf16`, `int4`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            WeightDtype::Bf16 => "bf16",
            WeightDtype::Fp16 => "fp16",
            WeightDtype::Fp32 => "fp32",
            WeightDtype::Fp8 => "fp8",
            WeightDtype::Int8 => "int8",
            WeightDtype::Int4 => "int4",
            WeightDtype::Mxfp4 => "mxfp4",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_dtypes() {
        assert_eq!(KvDtype::parse("auto").unwrap().element_bytes(ModelDtype::Bf16), 2);
        assert_eq!(KvDtype::parse("FP8-E4M3").unwrap(), KvDtype::Fp8E4m3);
        assert_eq!(KvDtype::parse("fp8").unwrap().element_bytes(ModelDtype::Bf16), 1);
        assert_eq!(KvDtype::parse("bfloat16").unwrap(), KvDtype::Bf16);
        assert!(KvDtype::parse("int3").unwrap_err().to_string().contains("fp8_ds_mla"));
    }

    #[test]
    fn model_and_weight_dtypes() {
        assert_eq!(ModelDtype::parse("torch.bfloat16"), Some(ModelDtype::Bf16));
        assert_eq!(ModelDtype::parse("float32").map(ModelDtype::bytes), Some(4));
        assert_eq!(ModelDtype::parse("q4"), None);
        assert_eq!(WeightDtype::parse("awq").unwrap().millibytes(), 531);
        assert_eq!(WeightDtype::parse("fp8").unwrap().millibytes(), 1_000);
        assert!(WeightDtype::parse("int3").is_err());
    }
}
