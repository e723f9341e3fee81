#!/bin/sh
# GPU check for triage-runner: run on a machine with an NVIDIA GPU. Usage:
#   scripts/gpu-check.sh BUNDLE OUT
# BUNDLE holds triage-runner and plugins/gpu-rules.wasm (`cargo xtask gpu-check --prepare`
# builds it on any x86-64 Linux with glibc >= 2.34); OUT receives the captures (default
# tests/data/gpu-check). Takes about 25 s. `cargo xtask gpu-check` does both steps in one.
set -u
BUNDLE=${1:?usage: gpu-check.sh BUNDLE [OUT]}
OUT=${2:-tests/data/gpu-check}
mkdir -p "$OUT"
R="$BUNDLE/triage-runner"
P="$BUNDLE/plugins"

capture() {
    name=$1; shift
    {
        echo "\$ triage-runner $*"
        "$R" "$@" >"$OUT/.stdout" 2>"$OUT/.stderr"
        echo "exit: $?"
        echo "--- stdout"; cat "$OUT/.stdout"
        echo "--- stderr"; cat "$OUT/.stderr"
    } >"$OUT/$name"
    rm -f "$OUT/.stdout" "$OUT/.stderr"
    cat "$OUT/$name"
}

{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; } >"$OUT/nvidia-smi.txt" 2>&1
capture once.txt run --once --plugins "$P"
rm -f "$OUT/findings.jsonl"
capture sample-20s.txt run --plugins "$P" --interval-ms 100 --duration-s 20 --no-listen \
    --record "$OUT/series.jsonl" --findings-log "$OUT/findings.jsonl" --stats
capture replay.txt replay "$OUT/series.jsonl" --plugins "$P" --format text
echo "gpu-check: captures in $OUT"
