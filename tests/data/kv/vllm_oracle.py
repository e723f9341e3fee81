#!/usr/bin/env python3
"""Compute KV-cache capacities with vLLM 0.33.0's own planning functions (no GPU, no torch).

Used to make the `vllm-0.33-*.log` fixtures and the expected figures of the
`matches_vllm_0_33_exactly_given_exact_bytes` test (crates/kv/src/estimate/tests.rs). It
imports, unmodified, from an unpacked vLLM 0.33.0 wheel:

  vllm/v1/kv_cache_interface.py        FullAttentionSpec, SlidingWindowSpec, MLAAttentionSpec
  vllm/v1/core/kv_cache_planning.py    get_global_kv_cache_groups, get_kv_cache_configs,
                                       _estimate_max_model_len_from_groups
  vllm/v1/core/kv_cache_utils.py       generate_scheduler_kv_cache_config, get_kv_cache_capacity

and stubs only what those modules import but do not use for this arithmetic (torch, the
platform, the logger's config). Usage:

  pip download vllm==0.33.0 --no-deps -d /tmp/vllm-wheel
  cd /tmp/vllm-wheel && unzip -q vllm-0.33.0-*.whl 'vllm/v1/*' 'vllm/utils/*' -d x
  python3 tests/data/kv/vllm_oracle.py /tmp/vllm-wheel/x

It prints one JSON object per case: the exact available bytes, what vLLM prints for them
(`format_gib`), num_blocks, bytes per block and the capacity line vLLM 0.33 logs.
"""

import importlib.util
import json
import logging
import sys
import types
from fractions import Fraction
from types import SimpleNamespace as NS
from unittest.mock import MagicMock

GIB = 1 << 30


def _load_vllm(src):
    class Dtype:
        def __init__(self, name, size):
            self.name, self.size = name, size

    torch = types.ModuleType("torch")
    torch.dtype, torch.Tensor = Dtype, object
    torch.bfloat16, torch.float8_e4m3fn = Dtype("bf16", 2), Dtype("fp8", 1)
    sys.modules["torch"] = torch

    def stub(name, **attrs):
        m = types.ModuleType(name)
        m.__path__ = []
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    def load(name, path):
        spec = importlib.util.spec_from_file_location(name, f"{src}/{path}")
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        spec.loader.exec_module(m)
        return m

    class MultipleOf:
        def __init__(self, base):
            self.base = base

    for name in ["vllm", "vllm.utils", "vllm.v1", "vllm.v1.attention", "vllm.v1.attention.backends",
                 "vllm.v1.core", "vllm.multimodal", "vllm.v1.hisparse"]:
        stub(name)
    stub("vllm.logger", init_logger=logging.getLogger)
    stub("vllm.utils.math_utils", cdiv=lambda a, b: -(a // -b), round_up=lambda x, y: -(x // -y) * y)
    stub("vllm.utils.torch_utils", get_dtype_size=lambda d: d.size)
    stub("vllm.utils.mem_utils", format_gib=lambda b: f"{round(b / GIB, 2)}")
    stub("vllm.utils.hashing", xxhash=None, xxhash_cbor=None)
    stub("vllm.utils.import_utils", resolve_obj_by_qualname=None)
    stub("vllm.v1.attention.backends.registry", MambaAttentionBackendEnum=MagicMock())
    stub("vllm.v1.attention.backend", MultipleOf=MultipleOf)
    stub("vllm.config", SpeculativeConfig=object, VllmConfig=object)
    sys.modules["vllm"].envs = stub("vllm.envs", VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=False)
    stub("vllm.multimodal.utils", get_mm_features_in_window=None)
    stub("vllm.v1.request", Request=object)
    stub("vllm.v1.utils", tensor_data=None)
    stub("vllm.v1.hisparse.layout", get_hisparse_host_pool_bytes=None, get_hisparse_kv_cache_config=None,
         get_hisparse_kv_cache_groups=lambda cfg, spec: None)
    load("vllm.v1.kv_cache_layout", "vllm/v1/kv_cache_layout.py")
    reg = load("vllm.v1.kv_cache_spec_registry", "vllm/v1/kv_cache_spec_registry.py")
    ki = load("vllm.v1.kv_cache_interface", "vllm/v1/kv_cache_interface.py")
    kb = load("vllm.v1.core.kv_cache_config_builder", "vllm/v1/core/kv_cache_config_builder.py")
    ku = load("vllm.v1.core.kv_cache_utils", "vllm/v1/core/kv_cache_utils.py")
    kp = load("vllm.v1.core.kv_cache_planning", "vllm/v1/core/kv_cache_planning.py")
    # What register_all_kvcache_specs (v1/core/single_type_kv_cache_manager.py) registers for
    # these three specs; the manager classes play no part in sizing.
    R = reg.KVCacheSpecRegistry
    R.register(ki.FullAttentionSpec, object, ki.FullAttentionSpec)
    R.register(ki.SlidingWindowSpec, object, ki.SlidingWindowSpec)
    R.register(ki.MLAAttentionSpec, object, ki.FullAttentionSpec)
    kb.get_kv_cache_config_builder = lambda cfg: kp.DefaultKVCacheConfigBuilder()
    return torch, ki, ku, kp, sys.modules["vllm.v1.kv_cache_layout"].KVCacheLayout


def config(layout_cls, max_model_len, mnbt=8192, batches=2, hybrid=True, layout="LBNHC"):
    """The VllmConfig fields the planning functions read (batches = max_concurrent_batches)."""
    lay = layout_cls[layout]
    return NS(
        model_config=NS(max_model_len=max_model_len, original_max_model_len=max_model_len,
                        supports_kv_cache_grouping=False),
        parallel_config=NS(decode_context_parallel_size=1, tensor_parallel_size=1),
        scheduler_config=NS(disable_hybrid_kv_cache_manager=not hybrid, max_num_batched_tokens=mnbt),
        cache_config=NS(num_gpu_blocks_override=None, get_resolved_kv_cache_layout=lambda: lay,
                        prefix_cache_retention_interval=None),
        attention_config=NS(hisparse_config=None),
        max_in_flight_tokens=batches * mnbt,
        num_prefill_lookahead_tokens=0,
        speculative_config=None,
        device_config=NS(device_type="cuda"),
    )


def specs(torch, ki, windows, block_size, kv_heads, head, dtype_bytes=2, mla=False, state_bytes=None):
    """One spec per layer on one GPU (kv_heads already divided by TP); window 0 = full attention."""
    dt = torch.bfloat16 if dtype_bytes == 2 else torch.float8_e4m3fn
    out = {}
    for i, w in enumerate(windows):
        name = f"model.layers.{i}.self_attn.attn"
        if mla:  # as MLAAttention.get_kv_cache_spec builds it: one latent head, whole on every rank
            out[name] = ki.MLAAttentionSpec(block_size=block_size, num_kv_heads=1, max_tp_shards=1,
                                            head_size=head, dtype=dt, state_content_bytes=state_bytes)
        elif w == 0:
            out[name] = ki.FullAttentionSpec(block_size=block_size, num_kv_heads=kv_heads, head_size=head, dtype=dt)
        else:
            out[name] = ki.SlidingWindowSpec(block_size=block_size, num_kv_heads=kv_heads, head_size=head,
                                             dtype=dt, sliding_window=w)
    return out


def capacity(mods, case):
    torch, ki, ku, kp, layout_cls = mods
    cfg = config(layout_cls, case["max_model_len"], case.get("mnbt", 8192), case.get("batches", 2),
                 case.get("hybrid", True))
    sp = specs(torch, ki, case["windows"], case["block_size"], case.get("kv_heads", 1), case["head"],
               case.get("dtype_bytes", 2), case.get("mla", False), case.get("state_bytes"))
    available = int(Fraction(case["gib"]) * GIB)
    groups = kp.get_global_kv_cache_groups(cfg, [sp])
    configs = kp.get_kv_cache_configs(cfg, [sp], [available], groups)
    sched = ku.generate_scheduler_kv_cache_config(configs)
    tokens, conc = ku.get_kv_cache_capacity(cfg, sched)
    builder = kp.DefaultKVCacheConfigBuilder()
    per_block = kp._pool_bytes_per_block_from_builder(builder, cfg, groups)
    cfg.model_config.max_model_len = 10**7  # the longest that fits, unbounded by max_model_len
    fit = kp._estimate_max_model_len_from_groups(builder, cfg, groups, available - per_block)
    return {
        "name": case["name"], "available_bytes": available, "printed_gib": f"{round(available / GIB, 2)}",
        "num_blocks": configs[0].num_blocks, "groups": len(configs[0].kv_cache_groups),
        "bytes_per_block": per_block, "tokens": tokens, "max_len_fitting": fit,
        "line": "GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx"
                % (f"{tokens:,}", f"{case['max_model_len']:,}", conc),
    }


GEMMA3_27B = [1024 if (i + 1) % 6 else 0 for i in range(62)]  # 5 sliding : 1 full
GPT_OSS_120B = [128 if i % 2 == 0 else 0 for i in range(36)]  # alternating, sliding first
GPT_OSS_20B = [128 if i % 2 == 0 else 0 for i in range(24)]
CASES = [
    dict(name="llama-3.1-8b", windows=[0] * 32, block_size=16, kv_heads=8, head=128, max_model_len=32768, gib="54.62"),
    dict(name="llama-3.1-8b 131072", windows=[0] * 32, block_size=16, kv_heads=8, head=128, max_model_len=131072, gib="61.87"),
    dict(name="llama-2-7b len 4095", windows=[0] * 32, block_size=16, kv_heads=32, head=128, max_model_len=4095, gib="21.37"),
    dict(name="llama-2-7b len 4095 b", windows=[0] * 32, block_size=16, kv_heads=32, head=128, max_model_len=4095, gib="21.369140625"),
    dict(name="deepseek-v3 tp8 bf16", windows=[0] * 61, block_size=64, head=576, max_model_len=163840, gib="57.43", mla=True),
    dict(name="deepseek-v3 tp8 fp8", windows=[0] * 61, block_size=64, head=576, max_model_len=163840, gib="57.43", mla=True, dtype_bytes=1),
    dict(name="deepseek-v3 tp8 fp8_ds_mla", windows=[0] * 61, block_size=64, head=576, max_model_len=163840, gib="57.43", mla=True, dtype_bytes=1, state_bytes=656),
    dict(name="gemma-3-27b", windows=GEMMA3_27B, block_size=16, kv_heads=16, head=128, max_model_len=131072, gib="45.73"),
    dict(name="gemma-3-27b 32k", windows=GEMMA3_27B, block_size=16, kv_heads=16, head=128, max_model_len=32768, gib="20"),
    dict(name="gemma-3-27b 32k one batch", windows=GEMMA3_27B, block_size=16, kv_heads=16, head=128, max_model_len=32768, gib="20", batches=1),
    dict(name="gemma-3-27b 32k no hybrid", windows=GEMMA3_27B, block_size=16, kv_heads=16, head=128, max_model_len=32768, gib="20", hybrid=False),
    dict(name="gpt-oss-120b", windows=GPT_OSS_120B, block_size=16, kv_heads=8, head=64, max_model_len=131072, gib="70.59"),
    dict(name="gpt-oss-20b", windows=GPT_OSS_20B, block_size=16, kv_heads=8, head=64, max_model_len=131072, gib="10"),
    dict(name="mistral-7b-v0.1", windows=[4096] * 32, block_size=16, kv_heads=8, head=128, max_model_len=32768, gib="10"),
]

if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    mods = _load_vllm(sys.argv[1] if len(sys.argv) > 1 else "/tmp/vllm-wheel/x")
    for c in CASES:
        print(json.dumps(capacity(mods, c)))
