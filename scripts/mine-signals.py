#!/usr/bin/env python3
"""Propose analyzer signals from the message catalogue.

Reads tests/data/catalogue/*.tsv and the signal table's data (tests/data/catalogue/signals.tsv)
and prints, for every row whose example no signal knows yet, a line of signals.tsv: the longest
literal pieces of the template (between its placeholders) that also occur in the row's example
and in no example of a row that maps elsewhere. On stderr, for each, the row whose `signal`
column should name it. Paste what you keep into signals.tsv, name it in the row, run
`cargo xtask codegen`; `cargo test -p triage-tests --test corpus -- catalogue` checks the result
both ways. Usage: python3 scripts/mine-signals.py [--all]
"""
import glob, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\([a-z_]+\)[-#0 +]*\d*(?:\.\d+)?[sdfrxig]|%[-#0 +]*\d*(?:\.\d+)?[sdfrxig%]|\\n|\.\.\.|…")
GENERIC = {"Traceback (most recent call last):", "Error", "error", "Exception", "failed", "Failed"}


SIGNALS_TSV = os.path.join(ROOT, "tests/data/catalogue/signals.tsv")


def rows():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/catalogue/*.tsv"))):
        if path == SIGNALS_TSV:
            continue
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("#") or not line.strip():
                continue
            c = line.rstrip("\n").split("\t")
            if len(c) >= 7:
                yield dict(at=f"{os.path.basename(path)}:{no}", engine=c[0], level=c[3], template=c[4], example=c[5], maps_to=c[6].strip())


def known_needles():
    """Each signal's needles (the cells between its id and its rules; `@NAME` cells are markers,
    not text), and the ids taken."""
    out, ids = [], set()
    for line in open(SIGNALS_TSV, encoding="utf-8"):
        c = line.rstrip("\n").split("\t")
        if line.startswith("#") or len(c) < 3 or c[0] == "next" or c[0].startswith("@"):
            continue
        ids.add(c[0])
        needles = [n for n in c[1:-1] if not n.startswith("@")]
        if needles:
            out.append(needles)
    return out, ids


def scan_safe(piece):
    """The line scan caches by shape (digits zeroed), so first needles have no digit (a test in
    signals/tests.rs holds this). Also trim a [0-9a-f] word cut at either edge (`the e`, `docs/e`): a
    needle ends on whole words."""
    piece = re.sub(r"^[0-9a-f]+(?![A-Za-z0-9_])", "", piece)
    piece = re.sub(r"(?<![A-Za-z0-9_])[0-9a-f]+$", "", piece)
    return piece.strip(" ")


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].rstrip("-")


def main():
    everything = list(rows())
    known, seen_ids = known_needles()
    for r in everything:
        if r["maps_to"] == "benign" and r["level"] not in ("error", "exception", "exit", "body"):
            continue
        ex = r["example"]
        if "--all" not in sys.argv and any(all(n in ex for n in ns) for ns in known):
            continue
        pieces = [scan_safe(p.strip(" :,;'\"`()")) for p in PLACEHOLDER.split(r["template"])]
        pieces = sorted(
            {p for p in pieces if len(p) >= 8 and p in ex and p not in GENERIC and not re.search(r"\d", p)},
            key=len,
            reverse=True,
        )
        others = [o["example"] for o in everything if o["maps_to"] != r["maps_to"]]
        chosen = None
        for k in (1, 2, 3):
            cand = pieces[:k]
            if cand and (len(cand[0]) >= 16 or k > 1) and not any(all(n in o for n in cand) for o in others):
                chosen = cand
                break
        if not chosen:
            print(f"SKIPPED {r['at']} ({r['maps_to']}): no distinctive literal piece", file=sys.stderr)
            continue
        sid = f"{r['engine']}-{slug(chosen[0])}"
        while sid in seen_ids:
            sid += "-2"
        seen_ids.add(sid)
        print("\t".join([sid, *chosen, r["maps_to"]]))
        print(f"{r['at']}: name {sid} in its signal column", file=sys.stderr)
        known.append(chosen)


main()
