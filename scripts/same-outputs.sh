#!/usr/bin/env bash
# Compare what two `triage` binaries print, for a refactor that must not change behaviour:
# `triage analyze` over every file in tests/data (JSON, Markdown and text; English and Chinese),
# a few files analysed together, and `triage kv` over every model preset × GPU preset × KV dtype ×
# tensor-parallel size (JSON and text), plus the presets' own listings. Exit codes count
# too. Build the "before" binary in its own worktree and target folder, e.g.
#
#   git worktree add --detach /tmp/before <commit> && (cd /tmp/before && cargo build -p triage-cli)
#   scripts/same-outputs.sh /tmp/before/target/debug/triage target/debug/triage
#
# Prints each difference and a count; exits 1 when anything differs. QUICK=1 compares JSON in
# English only (a third of the time).
set -euo pipefail
before=$1 after=$2
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=0 diffs=0

same() { # same NAME ARGS... — run both binaries with ARGS, compare stdout, stderr and exit status
    local name=$1
    shift
    local a="$out/a" b="$out/b"
    set +e
    "$before" "$@" >"$a.out" 2>"$a.err" </dev/null
    echo "exit $?" >>"$a.out"
    "$after" "$@" >"$b.out" 2>"$b.err" </dev/null
    echo "exit $?" >>"$b.out"
    set -e
    runs=$((runs + 1))
    if ! cmp -s "$a.out" "$b.out" || ! cmp -s "$a.err" "$b.err"; then
        diffs=$((diffs + 1))
        echo "DIFFERS: $name"
        diff <(cat "$a.out" "$a.err") <(cat "$b.out" "$b.err") | head -20 || true
    fi
}

cd "$root"
while IFS= read -r -d '' f; do
    langs="en zh" formats="json markdown text"
    [ -n "${QUICK:-}" ] && langs=en formats=json
    for lang in $langs; do
        for format in $formats; do
            same "analyze $f ($format, $lang)" analyze --format "$format" --lang "$lang" "$f"
        done
    done
done < <(find tests/data -type f -size -4M -not -name '*.md' -print0 | sort -z)

# Several inputs analysed together: a log, a scrape and nvidia-smi of one incident.
mapfile -t logs < <(find tests/data -type f \( -name '*.log' -o -name '*.prom' -o -name '*smi*.txt' \) -size -1M | sort | head -24)
for ((i = 0; i + 2 < ${#logs[@]}; i += 3)); do
    same "analyze ${logs[*]:i:3}" analyze --format json "${logs[@]:i:3}"
done

same "kv --list-models" kv --list-models --format json
same "kv --list-gpus" kv --list-gpus --format json
models=$("$after" kv --list-models --format json | grep -oE '^    "id": "[^"]+"' | cut -d'"' -f4)
gpus=$("$after" kv --list-gpus --format json | grep -oE '^    "id": "[^"]+"' | cut -d'"' -f4)
for m in $models; do
    for g in $gpus; do
        for dtype in auto fp8; do
            for tp in 1 8; do
                same "kv $m $g $dtype tp$tp" kv --model "$m" --gpu "$g" --kv-dtype "$dtype" --tp "$tp" --format json
                same "kv $m $g $dtype tp$tp (text)" kv --model "$m" --gpu "$g" --kv-dtype "$dtype" --tp "$tp"
            done
        done
    done
done

echo "$runs runs compared, $diffs differ"
[ "$diffs" -eq 0 ]
