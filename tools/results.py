#!/usr/bin/python3
"""Print nicoff-bench records as a table, with method ratios, and plot them.

Records: {"suite","case","method","nodes","bytes","metric","value","unit","runs"}.
Where several methods measured the same (case, nodes, bytes, metric), each
gets its ratio to the best of them (lowest for times, highest for rates).
A plot is drawn when a metric varies over nodes or bytes.

With --compare LABEL=FILE (repeatable, a label may be given several files,
one per round), the records of each label become methods "method@LABEL"
valued at the median of that label's rounds, so that the table shows each
build's ratio to the best (tools/bench-compare.sh).
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile

import benchfile

HIGHER_IS_BETTER = ("ops_per_s", "mb_per_s", "iterations")


def key(r):
    return (r["case"] or "", r["metric"], r["nodes"] or 0, r["bytes"] or 0)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"
    return str(v)


def table(records):
    groups = collections.defaultdict(list)
    for r in records:
        groups[key(r)].append(r)
    rows = [("case", "method", "nodes", "bytes", "metric", "value", "unit", "runs", "ratio")]
    for k in sorted(groups):
        g = groups[k]
        vals = [r["value"] for r in g if isinstance(r["value"], (int, float))]
        best = None
        if len(g) > 1 and vals:
            best = max(vals) if k[1] in HIGHER_IS_BETTER else min(vals)
        for r in g:
            ratio = ""
            # A rate of 0 (a starved run) has no ratio to the best.
            if best not in (None, 0) and isinstance(r["value"], (int, float)) and r["value"]:
                ratio = f"{(best / r['value'] if k[1] in HIGHER_IS_BETTER else r['value'] / best):.2f}x"
            rows.append((r["case"], r["method"], r["nodes"], r["bytes"], r["metric"],
                         r["value"], r["unit"], r["runs"], ratio))
    widths = [max(len(fmt(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(fmt(c).ljust(w) for c, w in zip(row, widths)).rstrip())


def plot(records, png):
    """One panel per metric that varies over nodes or bytes; a line per case/method."""
    series = collections.defaultdict(list)
    xaxis = {}
    for r in records:
        for axis in ("nodes", "bytes"):
            xs = {q[axis] for q in records if q["metric"] == r["metric"] and q[axis] is not None}
            if len(xs) > 1:
                xaxis[r["metric"]] = axis
                break
    for r in records:
        axis = xaxis.get(r["metric"])
        if axis and r[axis] is not None and isinstance(r["value"], (int, float)):
            series[(r["metric"], f"{r['case']}/{r['method']}")].append((r[axis], r["value"]))
    if not series:
        return False
    metrics = sorted({m for m, _ in series})
    tmp = tempfile.mkdtemp(prefix="nicoff-plot.")
    # noenhanced: the underscores of names are no subscripts.
    script = [f"set terminal png noenhanced size 900,{380 * len(metrics)}",
              f"set output '{png}'", f"set multiplot layout {len(metrics)},1",
              "set key outside right", "set grid", "set logscale x 2"]
    for m in metrics:
        unit = next((r["unit"] for r in records if r["metric"] == m), "")
        script += [f"set title '{m}'", f"set xlabel '{xaxis[m]}'", f"set ylabel '{unit}'"]
        # Sizes as 8, 4ki, 1Mi rather than long numbers running into each other.
        script.append("set format x '%.0b%B'" if xaxis[m] == "bytes" else "set format x '% h'")
        # Values over more than two decades (8 B to 4 MiB messages against a
        # memcpy) need a log scale to show the small ones at all.
        ys = [y for (metric, _), pts in series.items() if metric == m for _, y in pts]
        wide = ys and min(ys) > 0 and max(ys) / min(ys) > 100
        script.append("set logscale y 10" if wide else "unset logscale y")
        parts = []
        for (metric, name), pts in sorted(series.items()):
            if metric != m:
                continue
            path = os.path.join(tmp, f"{len(os.listdir(tmp))}.dat")
            with open(path, "w") as f:
                for x, y in sorted(pts):
                    f.write(f"{x} {y}\n")
            parts.append(f"'{path}' using 1:2 with linespoints title '{name}'")
        script.append("plot " + ", ".join(parts))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    return True


def load(path):
    try:
        _, records = benchfile.load(path)
    except ValueError as e:
        sys.exit(str(e))
    if not records:
        sys.exit(f"{path}: no records")
    return records


def labelled(specs):
    """Records of every LABEL=FILE, one per (label, key, method), at the median of the rounds."""
    rounds = collections.defaultdict(list)
    first = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label:
            sys.exit(f"--compare wants LABEL=FILE: {spec}")
        for r in load(path):
            k = (label, key(r), r["method"])
            first.setdefault(k, r)
            if isinstance(r["value"], (int, float)):
                rounds[k].append(r["value"])
    out = []
    for k, r in first.items():
        r = dict(r, method=f"{r['method']}@{k[0]}")
        if rounds[k]:
            r["value"] = statistics.median(rounds[k])
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="?")
    ap.add_argument("--plot", help="PNG to draw when a metric varies over nodes or bytes")
    ap.add_argument("--compare", action="append", metavar="LABEL=FILE",
                    help="records of one build (repeatable; several files of a label are rounds)")
    a = ap.parse_args()
    if bool(a.json) == bool(a.compare):
        ap.error("give one JSON file or --compare LABEL=FILE ...")
    records = load(a.json) if a.json else labelled(a.compare)
    table(records)
    if a.plot and plot(records, a.plot):
        print(f"plot: {a.plot}")


if __name__ == "__main__":
    main()
