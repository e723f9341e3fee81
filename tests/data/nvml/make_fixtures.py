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

# ../smi/query_loop_8gpu_one_slow.csv: the same eight GPUs as `nvidia-smi --query-gpu=… --format=csv
# -l` writes them, every fourth tick (about 2.5 Hz), timestamps in the CSV's own form.
import datetime

HEADER = ("timestamp, index, uuid, pstate, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], "
          "power.limit [W], utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
          "temperature.gpu, clocks_event_reasons.active")
rows = [json.loads(l) for l in out[1:]]
ticks = [rows[i:i + 8] for i in range(0, len(rows), 8)]
csv = [HEADER]
for tick in ticks[::4]:
    stamp = datetime.datetime.fromtimestamp(tick[0]["t"], datetime.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    for r in tick:
        csv.append("%s, %d, %s, P%d, %d MHz, %d MHz, %.2f W, %.2f W, %d %%, %d MiB, %d MiB, %d, 0x%016x" % (
            stamp, r["gpu"], meta["meta"]["gpus"][r["gpu"]]["uuid"], r["pstate"], r["sm_clock_mhz"],
            r["max_sm_clock_mhz"], r["power_mw"] / 1e3, r["power_limit_mw"] / 1e3, r["util_gpu_pct"],
            r["mem_used_bytes"] // 1048576, r["mem_total_bytes"] // 1048576, r["temp_c"],
            r["clock_event_reasons"]))
open("../smi/query_loop_8gpu_one_slow.csv", "w").write("\n".join(csv) + "\n")
