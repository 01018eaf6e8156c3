#!/usr/bin/env python3
"""The scoreboard (bench/scoreboard/README.md): every spec in bench/scoreboard/, `ollie optimize
--time T`, then one interleaved timing in one process against the naive kernel and the peers
installed (bench/compare's), and a summary: each kernel's share of its floor, its ratio to the
best peer, the median share and how often ollie is ahead. A benchmark, not a test.

Usage: bench/scoreboard/run.py [--time SECONDS] [--work DIR] [--reuse] [--results FILE] [NAME ...]
"""
import argparse
import datetime
import glob
import importlib.machinery
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
compare = importlib.machinery.SourceFileLoader("compare", os.path.join(ROOT, "bench", "compare")).load_module()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="kernels to run (file names without .py); default all")
    p.add_argument("--time", type=float, default=60.0, help="ollie optimize's budget per kernel, seconds (default 60)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--block", type=int, default=3)
    p.add_argument("--work", help="where the searches' output directories go (default: a temporary directory)")
    p.add_argument("--reuse", action="store_true", help="time the kernels already in --work instead of searching again")
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "SCOREBOARD.md"))
    a = p.parse_args()
    specs = sorted(glob.glob(os.path.join(HERE, "*.py")))
    specs = [s for s in specs if os.path.basename(s) != "run.py" and (not a.names or os.path.basename(s)[:-3] in a.names)]
    compare.run("cargo", "build", "--release", "-q", "-p", "ollie")
    m = compare.machine()
    work = a.work or tempfile.mkdtemp(prefix="ollie-scoreboard-")
    os.makedirs(work, exist_ok=True)
    rows = []
    for spec in specs:
        stem = os.path.basename(spec)[:-3]
        res = compare.search_and_bench(spec, work, a.time, a.reuse, a.rounds, a.block)
        report = res["report"]
        best = report["best"]
        ollie = res["rows"]["ollie"]
        peer = res["best_peer"]
        rows.append({
            "name": stem,
            "floor": ollie["floor"],
            "ollie_ms": ollie["median"] * 1e3,
            "peer": peer,
            "peer_ms": res["rows"][peer]["median"] * 1e3 if peer else None,
            "ratio": res["rows"][peer]["median"] / ollie["median"] if peer else None,
            "evals": report["evaluations"],
            "naive_kept": best["naive_is_best"],
            "why_naive": report.get("why_naive"),
            "proposer": best["proposer"],
            "skipped": res["skipped"],
        })
        print(line(rows[-1]), file=sys.stderr, flush=True)
        # Written after every kernel: a run cut short leaves the table of those it finished.
        write(a, m, rows, len(specs))
    print(open(a.results).read())


def write(a, m, rows, planned):
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = [
        "# The scoreboard",
        "",
        f"{date}; {m['cpu']} ({m['isa']}), last-level cache {m['llc']}; 2 threads; ceilings measured by `ollie machine`: "
        f"{m['bandwidth']} GB/s, {m['peak']} GFLOP/s. `ollie optimize --time {a.time:.0f}s` per kernel, then {a.rounds} rounds of "
        f"one untimed and {a.block} timed calls per contender on rotating inputs larger than the cache (bench/compare's timing). "
        "Ratio: the best peer's median over ollie's (above 1: ollie ahead). Command: `bench/scoreboard/run.py"
        + (f" --time {a.time:.0f}" if a.time != 60 else "") + "`"
        + (f"; {len(rows)} of the {planned} kernels so far." if len(rows) < planned else "."),
        "",
        "| kernel | floor share | ollie ms | best peer | peer ms | ratio | evals | result from |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    text += [line(r) for r in rows]
    shares = [r["floor"] for r in rows]
    ahead = [r for r in rows if r["ratio"] is not None and r["ratio"] > 1.0]
    with_peer = [r for r in rows if r["ratio"] is not None]
    text += [
        "",
        f"{len(rows)} kernels: median share of the floor {100 * statistics.median(shares):.0f}%; ollie ahead of the best peer on "
        f"{len(ahead)} of {len(with_peer)} ({100 * len(ahead) / max(len(with_peer), 1):.0f}%); the naive kernel kept on "
        f"{sum(r['naive_kept'] for r in rows)}; below half the floor: {', '.join(r['name'] for r in rows if r['floor'] < 0.5) or 'none'}.",
    ]
    kept = [r for r in rows if r["naive_kept"]]
    if kept:
        text += ["", "Why the naive kernel was kept (each report's \"What was tried\" says more):", ""]
        text += [f"- {r['name']}: {r.get('why_naive') or 'the report does not say'}" for r in kept]
    skipped = {(k, v) for r in rows for k, v in r["skipped"].items()}
    if skipped:
        text += ["", "Peers not run: " + "; ".join(sorted(f"{k}: {v}" for k, v in skipped))]
    with open(a.results, "w") as f:
        f.write("\n".join(text) + "\n")


def line(r):
    ratio = f"{r['ratio']:.2f}×" if r["ratio"] is not None else "–"
    peer = f"{r['peer_ms']:.3f}" if r["peer_ms"] is not None else "–"
    source = "naive kept" if r["naive_kept"] else r["proposer"]
    return f"| {r['name']} | {100 * r['floor']:.0f}% | {r['ollie_ms']:.3f} | {r['peer'] or '–'} | {peer} | {ratio} | {r['evals']} | {source} |"


if __name__ == "__main__":
    main()
