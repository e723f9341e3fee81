#!/usr/bin/env python3
"""Builds the constructed NVML fixtures of this folder from the real H200 series.

h200x8_one_slow.jsonl: every tick of h200_series.jsonl repeated for eight GPUs (HGX-style UUIDs).
During the matmul phase GPU 5 reads 800 MHz, 86 C, reasons 0x8 (HW slowdown) and its peers
1800 MHz; every other field is the real reading. Run it from this folder; output is deterministic.
"""
import json

PHASES = json.load(open("h200_phases.json"))["marks"]
start = next(m["t"] for m in PHASES if m["phase"] == "matmul_load")
end = next(m["t"] for m in PHASES if m["phase"] == "memory_full_no_compute")

lines = open("h200_series.jsonl").read().splitlines()
meta = json.loads(lines[0])
meta["meta"]["gpus"] = [
    {"index": i, "name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-00000000000%d" % i}
    for i in range(8)
]
out = [json.dumps(meta)]
for line in lines[1:]:
    row = json.loads(line)
    for i in range(8):
        r = dict(row)
        r["gpu"] = i
        r["t"] = round(row["t"] + i * 0.0001, 6)
        if start <= row["t"] < end and row["util_gpu_pct"] > 30:
            if i == 5:
                r.update(sm_clock_mhz=800, graphics_clock_mhz=800, temp_c=86, clock_event_reasons=0x8)
            else:
                r.update(sm_clock_mhz=1800, graphics_clock_mhz=1800)
        out.append(json.dumps(r))
open("h200x8_one_slow.jsonl", "w").write("\n".join(out) + "\n")
