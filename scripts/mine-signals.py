#!/usr/bin/env python3
"""Propose analyzer signals (crates/analyze/src/signal_table.rs) from the message catalogue.

Reads tests/data/catalogue/*.tsv and prints, for every row whose template no signal of the
table knows yet, a `Signal` entry: the longest literal pieces of the template (between its
placeholders) that also occur in the row's example and in no example of a row that maps
elsewhere. Paste what you keep into the table; `cargo test -p triage-tests --test corpus --
catalogue` checks the result both ways. Usage: python3 scripts/mine-signals.py [--all]
"""
import glob, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\([a-z_]+\)[-#0 +]*\d*(?:\.\d+)?[sdfrxig]|%[-#0 +]*\d*(?:\.\d+)?[sdfrxig%]|\\n|\.\.\.|…")
GENERIC = {"Traceback (most recent call last):", "Error", "error", "Exception", "failed", "Failed"}


def rows():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/catalogue/*.tsv"))):
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("#") or not line.strip():
                continue
            c = line.rstrip("\n").split("\t")
            if len(c) >= 7:
                yield dict(at=f"{os.path.basename(path)}:{no}", engine=c[0], level=c[3], template=c[4], example=c[5], maps_to=c[6].strip())


def known_needles():
    table = open(os.path.join(ROOT, "crates/analyze/src/signal_table.rs"), encoding="utf-8").read()
    out = []
    for m in re.finditer(r"needles: &\[([^\]]*)\]|s\(\"[^\"]+\", &\[([^\]]*)\]", table):
        body = m.group(1) or m.group(2)
        out.append([bytes(x, "utf-8").decode("unicode_escape") for x in re.findall(r'"((?:[^"\\]|\\.)*)"', body)])
    return [ns for ns in out if ns]


def scan_safe(piece):
    """The line scan caches by shape (digits zeroed), so first needles have no digit (a test in
    signals.rs holds this). Also trim a [0-9a-f] word cut at either edge (`the e`, `docs/e`): a
    needle ends on whole words."""
    piece = re.sub(r"^[0-9a-f]+(?![A-Za-z0-9_])", "", piece)
    piece = re.sub(r"(?<![A-Za-z0-9_])[0-9a-f]+$", "", piece)
    return piece.strip(" ")


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].rstrip("-")


def main():
    everything = list(rows())
    known = known_needles()
    seen_ids = set()
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
            print(f"// SKIPPED {r['at']} ({r['maps_to']}): no distinctive literal piece", file=sys.stderr)
            continue
        rule = {"benign": "BENIGN", "unclaimed-error": "UNCLAIMED"}.get(r["maps_to"], '"%s"' % r["maps_to"])
        sid = f"{r['engine']}-{slug(chosen[0])}"
        while sid in seen_ids:
            sid += "-2"
        seen_ids.add(sid)
        needles = ", ".join('"%s"' % n.replace("\\", "\\\\").replace('"', '\\"') for n in chosen)
        print(f'    s("{sid}", &[{needles}], &[{rule}]), // {r["at"]}')
        known.append(chosen)


main()
