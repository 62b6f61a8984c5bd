#!/usr/bin/python3
"""`make reproduce`'s report: every seed figure that this tree's suites can
redraw, beside the paper's own numbers and the simulator's prediction.

    tools/report/report.py [--results build/results] [--out build/report]
                           [--sim build/bin/nicoff-sim | --sim ''] [--papers FILE]

Reads <results>/<suite>.json (barrier, p2p, atomic, bcast, strided; mpi
and armci for the goals only) and
writes <out>/index.html (static, relative links) and, per figure,
seedNNN-figK.png and .csv (and seed003-table1.csv); goals.csv and the
report's first section state each of the issues' speed goals as met, not
met or not measured (goals.py).  A figure whose records
are absent is listed as "not measured" with the reason, never drawn empty.
Exit status 1 when no results file exists at all.
"""
import argparse
import csv
import html
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import barrier_report  # noqa: E402  (tools/: seed 003's LogP formulas, the simulator runner)
import benchfile  # noqa: E402
import goals  # noqa: E402  (beside this file: the issues' speed goals)

SUITES = ("barrier", "p2p", "atomic", "bcast", "strided")
# Suites with no seed figure whose records the goals read (goals.py).
GOAL_SUITES = ("mpi", "armci")
ALGS = barrier_report.ALGS
# Seed 000 sec. 8.3, Quadrics/Elan3: the per-trigger time of its model.
PAPER_TTRIG_US = goals.SEED000_QUADRICS[1]
SIM_NODES = (8, 16, 32, 64, 128, 256, 512, 1024)
# The simulator's default fabric (firmware-sim/sim/main.c): Quadrics-like.
QUADRICS_L_NS, QUADRICS_O_NS = 1000, 250
KIB, MIB = 1024, 1024 * 1024
# Simulated broadcasts as seed 002 sec. 6 times them: 20 to warm up, then
# 1,000 back to back, enough to run out of channels and synchronise.
BCAST_RUN = ("--iters", "1000", "--warmup", "20")


class NotMeasured(Exception):
    """A figure this run cannot draw; the message says why."""


# ------------------------------------------------------------------ records --

# The results files of a suite, when more than <suite>.json: `make reproduce`
# runs the barrier suite's one-process sweep over 1,024 cards in a boot of its
# own (VM_PARAMS=nics=1024), into barrier-cards.json.  Later files win.
FILES = {"barrier": ("barrier", "barrier-cards")}


class Results:
    """The records of every suite; meta: each file's metadata; used: the files
    whose records pick() has returned since it was last emptied; sim: the
    simulator (the goals' too)."""

    def __init__(self, directory):
        self.meta, self.recs, self.origin, self.used, self.sim = {}, {}, {}, set(), None
        for s in SUITES + GOAL_SUITES:
            for name in FILES.get(s, (s,)):
                path = os.path.join(directory, name + ".json")
                if os.path.exists(path):
                    self.meta[name], recs = benchfile.load(path)
                    self.recs.setdefault(s, []).extend(recs)
                    self.origin.update((id(r), name) for r in recs)

    def need(self, suite):
        if suite not in self.recs:
            raise NotMeasured(f"no {suite}.json: run `make bench SUITE={suite}`")
        return self.recs[suite]

    def pick(self, suite, **want):
        """Records of suite whose fields equal every given one (case_ for case)."""
        want = {("case" if k == "case_" else k): v for k, v in want.items()}
        out = [r for r in self.recs.get(suite, [])
               if all(r.get(k) == v for k, v in want.items())
               and isinstance(r.get("value"), (int, float))]
        self.used.update(self.origin[id(r)] for r in out)
        return out

    def meta_lines(self):
        """One line of metadata per file used (all files when none was)."""
        return [f"{name}.json: {meta_line(self.meta[name])}"
                for name in sorted(self.used or self.meta)]

    def value(self, suite, **want):
        rs = self.pick(suite, **want)
        return rs[-1]["value"] if rs else None

    def xy(self, suite, axis, **want):
        """Sorted (x, value) of the records, x their field axis; later runs win."""
        pts = {r[axis]: r["value"] for r in self.pick(suite, **want) if r.get(axis) is not None}
        return sorted(pts.items())


# ------------------------------------------------------------------ figures --

class Series:
    """One line or set of bars: ys at xs, optional error range [lo, hi]."""

    def __init__(self, label, xs, ys, lo=None, hi=None, style="-o"):
        self.label, self.xs, self.ys, self.lo, self.hi, self.style = label, xs, ys, lo, hi, style


class Panel:
    def __init__(self, title, xlabel, ylabel, series, xlog=False, ylog=False,
                 categories=None, note=""):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.series = [s for s in series if s.xs]
        self.xlog, self.ylog, self.categories, self.note = xlog, ylog, categories, note


class Figure:
    def __init__(self, fid, title, panels, ours=None, errors=(), notes=()):
        self.fid, self.title = fid, title
        self.panels = [p for p in panels if p.series]
        if not self.panels:
            raise NotMeasured("the records hold none of its points")
        # ours: (what, value) of the ratio computed as the paper does.
        self.ours, self.errors, self.notes = ours, list(errors), list(notes)


def unzip(pts):
    """([x...], [y...]) of [(x, y)...], also when there are none."""
    return [x for x, _ in pts], [y for _, y in pts]


def size_label(b):
    for unit, n in (("MiB", MIB), ("KiB", KIB)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def draw(fig, path, meta_lines):
    # One panel a row, the legend to its right: wide enough for both; below,
    # the metadata of the records drawn (about 0.1 inch a line).
    n = len(fig.panels)
    footer = "\n".join(textwrap.fill(m, 200) for m in meta_lines)
    foot_in = 0.1 * (footer.count("\n") + 1) + 0.1
    height = 4.4 * n + 0.6 + foot_in
    mpl, axes = plt.subplots(n, 1, figsize=(10, height), squeeze=False)
    for p, ax in zip(fig.panels, axes.flat):
        if p.categories:
            draw_bars(ax, p)
        else:
            for s in p.series:
                yerr = None
                if s.lo is not None:
                    yerr = [[max(0.0, y - lo) for y, lo in zip(s.ys, s.lo)],
                            [max(0.0, hi - y) for y, hi in zip(s.ys, s.hi)]]
                if p.ylog:
                    # A log axis cannot show a value <= 0 (a fit's extrapolation can be).
                    keep = [i for i, y in enumerate(s.ys) if y > 0]
                    xs, ys = [s.xs[i] for i in keep], [s.ys[i] for i in keep]
                    if yerr:
                        yerr = [[e[i] for i in keep] for e in yerr]
                else:
                    xs, ys = s.xs, s.ys
                ax.errorbar(xs, ys, yerr=yerr, fmt=s.style, capsize=3, ms=4, label=s.label)
            if p.xlog:
                ax.set_xscale("log", base=2)
            if p.xlabel.startswith("message size"):
                xs = sorted({x for s in p.series for x in s.xs})
                ax.set_xticks(xs, [size_label(x) for x in xs], rotation=30, ha="right")
            else:
                # Ticks at the measured points: no 3.5 processes.
                xs = sorted({x for s in p.series for x in s.xs})
                ax.set_xticks(xs, [f"{x:g}" for x in xs], rotation=45 if len(xs) > 6 else 0)
                ax.minorticks_off()
        if p.ylog:
            ax.set_yscale("log")
        ax.set_title(p.title + (f"\n({p.note})" if p.note else ""), fontsize=10)
        ax.set_xlabel(p.xlabel)
        ax.set_ylabel(p.ylabel)
        ax.grid(True, which="major", alpha=0.3)
        # Outside the axes: a legend never covers a point.
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    mpl.suptitle(fig.title, fontsize=11)
    mpl.text(0.01, 0.05 / height, footer, fontsize=6, color="0.4", va="bottom")
    mpl.tight_layout(rect=(0, foot_in / height, 1, 0.96))
    # The footer's lines, unwrapped, also as the PNG's text (test_report.py reads them).
    mpl.savefig(path, dpi=110, metadata={"Description": "\n".join(meta_lines)})
    plt.close(mpl)


def draw_bars(ax, p):
    cats = p.categories
    width = 0.8 / max(1, len(p.series))
    for i, s in enumerate(p.series):
        pos = {c: k for k, c in enumerate(cats)}
        xs = [pos[x] + (i - (len(p.series) - 1) / 2) * width for x in s.xs]
        yerr = None
        if s.lo is not None:
            yerr = [[max(0.0, y - lo) for y, lo in zip(s.ys, s.lo)],
                    [max(0.0, hi - y) for y, hi in zip(s.ys, s.hi)]]
        ax.bar(xs, s.ys, width, yerr=yerr, capsize=2, label=s.label)
    ax.set_xticks(range(len(cats)), cats, rotation=20)


def write_rows(path, rows, meta_lines):
    """A CSV of rows (the first its header) after a '# ' line of metadata per
    results file (readers: comment='#')."""
    with open(path, "w", newline="") as f:
        f.writelines(f"# {m}\n" for m in meta_lines)
        csv.writer(f).writerows(rows)


def write_csv(fig, path, meta_lines):
    rows = [("panel", "series", "x", "x_label", "y", "y_low", "y_high", "y_unit")]
    for p in fig.panels:
        for s in p.series:
            for i, (x, y) in enumerate(zip(s.xs, s.ys)):
                rows.append((p.title, s.label, x, p.xlabel, f"{y:.6g}",
                             "" if s.lo is None else f"{s.lo[i]:.6g}",
                             "" if s.hi is None else f"{s.hi[i]:.6g}", p.ylabel))
    write_rows(path, rows, meta_lines)


# ---------------------------------------------------------------- the series --

def latency_series(res, suite, label, axis, case, method, metric="latency_us", **more):
    """Mean latency with bars from the median to the p99, where the records have them."""
    pts = res.xy(suite, axis, case_=case, method=method, metric=metric, **more)
    med = dict(res.xy(suite, axis, case_=case, method=method, metric=metric + "_median", **more))
    p99 = dict(res.xy(suite, axis, case_=case, method=method, metric=metric + "_p99", **more))
    xs = [x for x, _ in pts]
    ys = [y for _, y in pts]
    if xs and all(x in med and x in p99 for x in xs):
        return Series(label, xs, ys, [min(med[x], y) for x, y in pts],
                      [max(p99[x], y) for x, y in pts])
    return Series(label, xs, ys)


BAR_NOTE = "points: mean; bars: median to 99th percentile"


def ratio_at(res, suite, num, den, axis, x, **want):
    a = dict(res.xy(suite, axis, method=num, **want)).get(x)
    b = dict(res.xy(suite, axis, method=den, **want)).get(x)
    return a / b if a and b else None


def common_points(res, suite, axis, methods, **want):
    """The x values at which every one of methods has a point, and each one's {x: value}."""
    by_method = [dict(res.xy(suite, axis, method=m, **want)) for m in methods]
    return sorted(set.intersection(*(set(d) for d in by_method))), by_method


# ---------------------------------------------------------------- simulator --

class Sim:
    def __init__(self, path):
        self.path = path if path and os.access(path, os.X_OK) else None
        self.cache = {}

    def run(self, workload, nodes, l_ns, o_ns, *extra):
        if not self.path:
            return None
        k = (workload, nodes, int(l_ns), int(o_ns), extra)
        if k not in self.cache:
            # A link slower than the retransmission timeout would time out every packet.
            rto = ["--rto-ns", str(int(max(200_000, 20 * l_ns)))]
            self.cache[k] = barrier_report.run_sim(self.path, workload, nodes, l_ns, o_ns,
                                                   rto + list(extra))
        return self.cache[k]

    def series(self, label, workload, nodes, l_ns, o_ns, *extra):
        pts = [(n, self.run(workload, n, l_ns, o_ns, *extra)) for n in nodes]
        pts = [(n, t) for n, t in pts if t is not None]
        return Series(label, [n for n, _ in pts], [t for _, t in pts], style="--")


def model_errors(name, measured, predicted):
    """'(predicted - measured) / measured' at every N where both exist."""
    m, p = dict(measured), dict(predicted)
    return [f"{name} at N = {n}: {100 * (p[n] - m[n]) / m[n]:+.0f}% "
            f"({p[n]:.1f} against {m[n]:.1f} us measured)" for n in sorted(m) if n in p and m[n]]


def logp_params(res):
    """The VM's L, o_s, o_r, g (us) from the p2p suite's logp records, or None."""
    got = [res.value("p2p", case_="logp", method="send_recv", metric=m)
           for m in ("L_us", "o_s_us", "o_r_us", "g_us")]
    return None if None in got else got


# ------------------------------------------------------------ seed 000 figs --

def card_vs_host(res, fid, title, algs):
    res.need("barrier")
    series = []
    for alg in algs:
        for method in ("card", "host"):
            series.append(latency_series(res, "barrier", f"{alg}, {method}", "nodes", alg, method))
    return Panel(title, "processes (N)", "barrier latency (us)", series, note=BAR_NOTE)


def card_over_shm(res, n):
    """A note: card / shm (futex) barrier latency at n processes, issue 18's target, from the
    suite's ratio record (both measured in the same run)."""
    r = res.value("barrier", case_="dissemination", method="card/shm", metric="ratio", nodes=n)
    if r is None:
        return f"no card/shm ratio record (method shm) at N = {n}"
    return f"card dissemination / shared-memory futex barrier at N = {n}: {r:.2f}x (target at most 3x)"


def seed000_fig5(res, sim):
    p = card_vs_host(res, "seed000-fig5", "card-based and host-based barrier, N processes",
                     ("pairwise", "dissemination"))
    # What a user of one machine would pick instead: the futex barrier.
    p.series += [s for s in [latency_series(res, "barrier", "shared memory (futex), shm",
                                            "nodes", "central", "shm")] if s.xs]
    ns = [n for s in p.series for n in s.xs]
    big = max(ns) if ns else None
    r = ratio_at(res, "barrier", "host", "card", "nodes", big, case_="dissemination",
                 metric="latency_us")
    return Figure("seed000-fig5", "Seed 000 Fig. 5: barrier latency, card against host", [p],
                  ours=(f"host / card, dissemination, at N = {big}", r),
                  notes=[card_over_shm(res, big)])


def seed000_fig6(res, sim):
    res.need("barrier")
    series = [Series(alg, *unzip(res.xy("barrier", "nodes", case_=alg, method="host/card",
                                        metric="ratio")))
              for alg in ALGS]
    p = Panel("host latency / card latency (means)", "processes (N)", "host / card (x)", series)
    shm = [Series(alg, *unzip(res.xy("barrier", "nodes", case_=alg, method="card/shm",
                                     metric="ratio")))
           for alg in ALGS]
    q = Panel("card latency / shared-memory futex barrier latency (means)", "processes (N)",
              "card / shm (x)", shm, ylog=True)
    r = ratio_at(res, "barrier", "host", "card", "nodes", 8, case_="dissemination",
                 metric="latency_us")
    return Figure("seed000-fig6", "Seed 000 Fig. 6: the card's factor of improvement", [p, q],
                  ours=("host / card, dissemination, at N = 8", r), notes=[card_over_shm(res, 8)])


def seed000_fig7(res, sim):
    res.need("barrier")
    series = [latency_series(res, "barrier", f"{alg}, card", "nodes", alg, "card",
                             metric="latency_us_1proc") for alg in ("dissemination", "pairwise")]
    for alg in ("dissemination", "pairwise"):
        series.append(Series(f"{alg}, card, median",
                             *unzip(res.xy("barrier", "nodes", case_=alg, method="card",
                                          metric="latency_us_1proc_median")),
                             style=":s"))
    p = Panel("one process driving N cards (no process scheduling)", "cards (N)",
              "barrier latency (us)", series, xlog=True)
    card = res.value("barrier", case_="dissemination", method="card", metric="latency_us", nodes=8)
    tree = res.value("barrier", case_="tree", method="host", metric="latency_us", nodes=8)
    r = tree / card if tree and card else None
    return Figure("seed000-fig7", "Seed 000 Fig. 7: the cards' barrier without the hosts", [p],
                  ours=("host tree barrier / card dissemination, at N = 8 processes", r))


def fit_model(res):
    """Seed 000's model fitted (numpy) to the card dissemination medians of one
    process driving N cards, Tinit = T(2): (points, (Tinit, Ttrig, Tadj, rms)),
    or (points, reason) when Ttrig <= 0 (later steps cheaper than the first:
    noise, not a model)."""
    one = res.xy("barrier", "nodes", case_="dissemination", method="card",
                 metric="latency_us_1proc_median")
    if 2 not in dict(one) or len(one) < 2:
        raise NotMeasured("needs card dissemination latency_us_1proc_median at 2 cards and more")
    xs = np.array([barrier_report.clog(n) - 1 for n, _ in one], dtype=float)
    ys = np.array([t for _, t in one])
    ttrig, icpt = (float(v) for v in np.polyfit(xs, ys, 1))
    if ttrig <= 0:
        return one, (f"the fit gives Ttrig = {ttrig:.1f} us <= 0: the measurements are noise "
                     f"(rerun on a quiet host), no model drawn")
    rms = float(np.sqrt(np.mean((np.polyval([ttrig, icpt], xs) - ys) ** 2)))
    return one, (dict(one)[2], ttrig, icpt - dict(one)[2], rms)


def seed000_fig8(res, sim):
    res.need("barrier")
    one, fit = fit_model(res)
    ns = sorted({n for n, _ in one} | set(SIM_NODES))
    series = [Series("measured, card (median)", [n for n, _ in one], [t for _, t in one])]
    errors, notes, ours = [], [], None
    if isinstance(fit, str):
        notes.append(fit)
    else:
        tinit, ttrig, tadj, rms = fit
        series.append(Series(f"model fitted: {tinit:.1f} + (ceil(log2 N) - 1) x {ttrig:.1f} "
                             f"{'-' if tadj < 0 else '+'} {abs(tadj):.1f} us",
                             ns, [goals.seed000_model(n, *fit[:3]) for n in ns], style="-"))
        s_vm = sim.series(f"simulator, L = fitted Ttrig ({ttrig:.1f} us), o = 0", "barrier",
                          ns, ttrig * 1000, 0)
        series.append(s_vm)
        errors.append(f"fitted model rms {rms:.2f} us over {len(one)} points")
        errors += model_errors("simulator (L = fitted Ttrig)", one, zip(s_vm.xs, s_vm.ys))
        ours = ("fitted model T(1024) / T(8)",
                goals.seed000_model(1024, *fit[:3]) / goals.seed000_model(8, *fit[:3]))
    for name, abc in (("Quadrics model (paper)", goals.SEED000_QUADRICS),
                      ("Myrinet model (paper)", (3.60, 3.50, 3.84))):
        series.append(Series(name, ns, [goals.seed000_model(n, *abc) for n in ns], style=":"))
    series.append(sim.series(f"simulator, L = paper's Ttrig ({PAPER_TTRIG_US} us), o = 0",
                             "barrier", ns, PAPER_TTRIG_US * 1000, 0))
    if not sim.path:
        notes.append("no simulator (build/bin/nicoff-sim): its lines are left out")
    p = Panel("dissemination barrier, one process driving N cards", "cards (N)",
              "barrier latency (us)", series, xlog=True, ylog=True)
    return Figure("seed000-fig8", "Seed 000 Fig. 8: modelling the barrier's scalability", [p],
                  ours=ours, errors=errors, notes=notes)


def fitted_ttrig(res):
    """The fitted Ttrig (us), or None with the reason."""
    try:
        fit = fit_model(res)[1]
    except NotMeasured as e:
        return None, str(e)
    return (None, fit) if isinstance(fit, str) else (fit[1], None)


# ------------------------------------------------------------ seed 001 figs --

ATOMIC_OPS = ("fadd32", "fadd64", "swap32", "swap64", "cas_hit", "cas_miss")
ATOMIC_METHODS = ("card", "host-poll", "host-spin", "host-block")


def seed001_fig4(res, sim):
    res.need("atomic")
    series = []
    for m in ATOMIC_METHODS:
        pts = [(op, res.value("atomic", case_=op, method=m, metric=k))
               for op in ATOMIC_OPS for k in ("latency_us",)]
        pts = [(op, v) for op, v in pts if v is not None]
        med = [res.value("atomic", case_=op, method=m, metric="latency_us_median") for op, _ in pts]
        p99 = [res.value("atomic", case_=op, method=m, metric="latency_us_p99") for op, _ in pts]
        s = Series(m, [op for op, _ in pts], [v for _, v in pts])
        if pts and None not in med and None not in p99:
            s.lo = [min(a, v) for a, (_, v) in zip(med, pts)]
            s.hi = [max(a, v) for a, (_, v) in zip(p99, pts)]
        series.append(s)
    p = Panel("one requester, one operation at a time", "operation", "latency (us)", series,
              ylog=True, categories=list(ATOMIC_OPS),
              note="bars: mean; whiskers: median to 99th percentile")
    card = res.value("atomic", case_="cas_hit", method="card", metric="latency_us")
    hosts = [res.value("atomic", case_="cas_hit", method=m, metric="latency_us")
             for m in ATOMIC_METHODS[1:]]
    hosts = [h for h in hosts if h]
    r = 100 * (min(hosts) - card) / min(hosts) if card and hosts else None
    return Figure("seed001-fig4", "Seed 001 Fig. 4: latency of the atomic operations", [p],
                  ours=("(best host - card) / best host, compare&swap hit, %", r))


def lock_series(res):
    return [Series(m, *unzip(res.xy("atomic", "nodes", case_="lock", method=m,
                                    metric="latency_us")))
            for m in ("card-mcs", "host-mcs", "card-tas")]


def seed001_fig5(res, sim):
    res.need("atomic")
    p = Panel("acquire + release at one contender", "contenders", "lock latency (us)",
              lock_series(res), ylog=True)
    return Figure("seed001-fig5", "Seed 001 Fig. 5: lock latency with contenders", [p])


def seed001_fig6(res, sim):
    res.need("atomic")
    ns, (card, host) = common_points(res, "atomic", "nodes", ("card-mcs", "host-mcs"),
                                     case_="lock", metric="latency_us")
    imp = [100 * (host[n] - card[n]) / host[n] for n in ns]
    p = Panel("(host MCS - card MCS) / host MCS", "contenders", "improvement (%)",
              [Series("card MCS over host MCS", ns, imp)])
    return Figure("seed001-fig6", "Seed 001 Fig. 6: the card lock's improvement", [p],
                  ours=("largest improvement, %", max(imp) if imp else None))


CPU_SHARE_METHODS = ("card", "host-block", "control")


def seed001_fig7(res, sim):
    res.need("atomic")
    rate = "offered lock/unlock rate (pairs per second)"
    share = {m: res.xy("atomic", "bytes", case_="cpu_share", method=m,
                       metric="home_cpu_lost_pct") for m in CPU_SHARE_METHODS}
    lost = Panel("the home CPU's time the counting process lost (schedstat)", rate,
                 "home CPU lost (%)", [Series(m, *unzip(share[m])) for m in CPU_SHARE_METHODS],
                 xlog=True, note="'bytes' of the records holds the offered rate")
    others = Panel("other tasks' run time on the home CPU (schedstat)", rate,
                   "home CPU time of others (%)",
                   [Series(m, *unzip(res.xy("atomic", "bytes", case_="cpu_share", method=m,
                                            metric="home_cpu_others_pct")))
                    for m in CPU_SHARE_METHODS], xlog=True)
    series = [Series(m, *unzip(res.xy("atomic", "bytes", case_="cpu_impact", method=m,
                                      metric="iterations")))
              for m in CPU_SHARE_METHODS + ("idle",)]  # the same colour per method as above
    loop = Panel("counting loop at the lock's home, per 1 ms window", rate,
                 "iterations per 1 ms", series, xlog=True)
    ours, notes = None, []
    card = dict(share["card"])
    if card:
        x = max(card)
        ours = (f"home CPU lost to card lock traffic at the highest offered rate ({x:g}/s), % "
                "(target at most 2)", card[x])
        for m in ("host-block", "control"):
            v = dict(share[m]).get(x)
            if v is not None:
                notes.append(f"{m} at {x:g}/s: {v:.2f}% of the home CPU lost")
    return Figure("seed001-fig7", "Seed 001 Fig. 7: what remote locking costs the home CPU",
                  [lost, others, loop], ours=ours, notes=notes)


def seed001_fig8(res, sim):
    raise NotMeasured("the atomic suite has no bandwidth-under-lock-traffic case "
                      "(the home node's send bandwidth while another node locks)")


# ------------------------------------------------------------ seed 002 figs --

BCAST_METHODS = ("card", "card-nocrc", "card-p2p-tree", "host")


def bcast_sizes(res, methods, lo, hi):
    return [Series(m, *unzip([(b, v) for b, v in res.xy("bcast", "bytes", case_="bcast", method=m,
                                                          metric="latency_us", nodes=8)
                             if lo <= b <= hi]))
            for m in methods]


def seed002_fig5(res, sim):
    res.need("bcast")
    small = Panel("(a) 8 processes, up to 16 KiB", "message size", "broadcast latency (us)",
                  bcast_sizes(res, BCAST_METHODS, 0, 16 * KIB), xlog=True)
    large = Panel("(b) 8 processes, 64 KiB and more", "message size", "broadcast latency (us)",
                  bcast_sizes(res, BCAST_METHODS, 64 * KIB, 1 << 40), xlog=True, ylog=True)
    r8 = ratio_at(res, "bcast", "host", "card", "bytes", 8, case_="bcast", metric="latency_us",
                  nodes=8)
    return Figure("seed002-fig5", "Seed 002 Fig. 5: broadcast latency by message size",
                  [small, large], ours=("host tree / card, 8 B, 8 processes", r8))


def seed002_fig6(res, sim):
    res.need("bcast")
    series = [Series(f"{m}, N processes", *unzip(res.xy("bcast", "nodes", case_="bcast", method=m,
                                                       metric="latency_us", bytes=8)))
              for m in ("card", "host")]
    series += [Series(f"{m}, one process, N cards (median)",
                      *unzip(res.xy("bcast", "nodes", case_="bcast", method=m,
                                   metric="latency_us_1proc_median", bytes=8)),
                      style=":s") for m in ("card", "card-p2p-tree")]
    # The simulator times broadcasts back to back, as the N-process runs (and the
    # paper) do; the one-process runs wait for each broadcast.
    meas = res.xy("bcast", "nodes", case_="bcast", method="card", metric="latency_us", bytes=8)
    lp = logp_params(res)
    errors, notes = [], []
    sim_nodes = sorted({n for n, _ in meas} | set(SIM_NODES))
    if lp:
        l_ns, o_ns = lp[0] * 1000, (lp[1] + lp[2]) / 2 * 1000
        s = sim.series(f"simulator, multicast, VM's L = {lp[0]:.1f} us, o = {o_ns / 1000:.2f} us",
                       "bcast", sim_nodes, l_ns, o_ns, *BCAST_RUN)
        series.append(s)
        errors += model_errors("simulator (VM's LogP) against card, N processes", meas,
                               zip(s.xs, s.ys))
    else:
        notes.append("no p2p logp records: the simulator at the VM's LogP is left out")
    series.append(sim.series("simulator, multicast, Quadrics-like L = 1 us, o = 0.25 us",
                             "bcast", SIM_NODES, QUADRICS_L_NS, QUADRICS_O_NS, *BCAST_RUN))
    series.append(sim.series("simulator, point-to-point tree, Quadrics-like", "bcast-p2p",
                             SIM_NODES, QUADRICS_L_NS, QUADRICS_O_NS, *BCAST_RUN))
    p = Panel("8-byte broadcast", "processes or cards (N)", "broadcast latency (us)", series,
              xlog=True, ylog=True)
    r = ratio_at(res, "bcast", "host", "card", "nodes", 8, case_="bcast", metric="latency_us",
                 bytes=8)
    return Figure("seed002-fig6", "Seed 002 Fig. 6: broadcast scalability", [p],
                  ours=("host tree / card, 8 B, N = 8", r), errors=errors, notes=notes)


def seed002_fig7(res, sim):
    res.need("bcast")
    pts = res.xy("bcast", "channels", case_="channels", method="card", metric="latency_us")
    one = res.xy("bcast", "channels", case_="channels", method="card",
                 metric="latency_us_1proc_median")
    chans = sorted({c for c, _ in pts} | {2, 4, 8, 16, 32})
    s_sim = [(c, sim.run("bcast", 8, QUADRICS_L_NS, QUADRICS_O_NS, "--channels", str(c),
                         *BCAST_RUN))
             for c in chans]
    s_sim = [(c, t) for c, t in s_sim if t is not None]
    series = [Series("card, 8 processes", [c for c, _ in pts], [v for _, v in pts]),
              Series("card, one process, 8 cards (median)", [c for c, _ in one],
                     [v for _, v in one], style=":s"),
              Series("simulator, 8 cards, Quadrics-like", [c for c, _ in s_sim],
                     [t for _, t in s_sim], style="--"),
              Series("paper (text): 2 and 16 channels", [2, 16], [17.1, 4.3], style="*")]
    p = Panel("8-byte broadcast over 8 cards", "broadcast channels", "broadcast latency (us)",
              series, xlog=True, ylog=True)
    d = dict(pts)
    ours = ("2 channels / 16 channels, 8 processes", d[2] / d[16]) if 2 in d and 16 in d else None
    sd = dict(s_sim)
    notes = ([f"simulator: 2 / 16 channels = {sd[2] / sd[16]:.2f}x"]
             if 2 in sd and 16 in sd else [])
    return Figure("seed002-fig7", "Seed 002 Fig. 7: the number of broadcast channels", [p],
                  ours=ours, notes=notes)


def seed002_fig8(res, sim):
    res.need("bcast")
    small = Panel("(a) up to 16 KiB", "message size", "broadcast latency (us)",
                  bcast_sizes(res, ("card", "card-nocrc"), 0, 16 * KIB), xlog=True)
    large = Panel("(b) 64 KiB and more", "message size", "broadcast latency (us)",
                  bcast_sizes(res, ("card", "card-nocrc"), 64 * KIB, 1 << 40), xlog=True,
                  ylog=True)
    c = res.value("bcast", case_="bcast", method="card", metric="latency_us", nodes=8, bytes=8)
    n = res.value("bcast", case_="bcast", method="card-nocrc", metric="latency_us", nodes=8,
                  bytes=8)
    notes = [f"CRC cost at 8 B: {c - n:+.1f} us (paper: about 1 us up to 256 B)"] if c and n else []
    r = ratio_at(res, "bcast", "card", "card-nocrc", "bytes", MIB, case_="bcast",
                 metric="latency_us", nodes=8)
    return Figure("seed002-fig8", "Seed 002 Fig. 8: the cost of reliability (CRC)",
                  [small, large], ours=("with CRC / without, 1 MiB, 8 processes", r), notes=notes)


# ------------------------------------------------------------ seed 003 figs --

def logp_curve(res, alg, ns):
    lp = logp_params(res)
    if not lp:
        return None
    L, os_, or_, g = lp
    return [(n, barrier_report.logp(alg, n, L, os_, or_, g)) for n in ns]


def measured_vs_logp(res, sim, alg, fid, title):
    res.need("barrier")
    host = latency_series(res, "barrier", f"{alg}, host (measured)", "nodes", alg, "host")
    card = latency_series(res, "barrier", f"{alg}, card (measured)", "nodes", alg, "card")
    if not host.xs and not card.xs:
        raise NotMeasured(f"no {alg} records in barrier.json")
    ns = sorted(set(host.xs) | set(card.xs) | set(SIM_NODES))
    curve = logp_curve(res, alg, ns)
    series, errors, notes = [host, card], [], []
    if curve:
        series.append(Series(f"{alg}, LogP prediction (VM's L, o, g)", *unzip(curve), style="--"))
        errors += model_errors("LogP against host", zip(host.xs, host.ys), curve)
    else:
        notes.append("no p2p.json logp records: the LogP prediction is left out")
    ttrig, why = fitted_ttrig(res)
    if ttrig:
        s = sim.series(f"{alg}, simulator (card-run, L = Ttrig {ttrig:.1f} us)",
                       barrier_report.SIM_WORKLOAD[alg], sorted(set(card.xs) | set(SIM_NODES)),
                       ttrig * 1000, 0)
        series.append(s)
        # With o = 0 a card's work per message is free: what the central counter
        # serialises at its root costs nothing there.
        notes.append("simulator: L = the fitted Ttrig of the card dissemination runs, o = 0 "
                     "(per-message card work not charged)")
        errors += model_errors("simulator against card", zip(card.xs, card.ys), zip(s.xs, s.ys))
    else:
        notes.append(f"no simulator line: {why}")
    p = Panel(f"{alg} barrier, N processes", "processes (N)", "barrier latency (us)", series,
              xlog=True, ylog=True, note=BAR_NOTE)
    return Figure(fid, title, [p], errors=errors, notes=notes)


def logp_figure(alg, name, k):
    """Seed 003 Fig. k: one algorithm measured against its LogP prediction."""
    def fig(res, sim):
        return measured_vs_logp(res, sim, alg, f"seed003-fig{k}",
                                f"Seed 003 Fig. {k}: {name}, measured and LogP")
    fig.__name__ = f"seed003_fig{k}"
    return fig


def diagram(alg, k):
    """Seed 003 Fig. k: a drawing of the LogP model, which Fig. k + 1 plots."""
    def fig(res, sim):
        raise NotMeasured(f"the paper's diagram of the {alg} barrier's LogP model, no data: "
                          f"its prediction is drawn in seed003-fig{k + 1}")
    fig.__name__ = f"seed003_fig{k}"
    return fig


def seed003_fig13(res, sim):
    res.need("barrier")
    panels = []
    for method in ("host", "card"):
        series = [Series(alg, *unzip(res.xy("barrier", "nodes", case_=alg, method=method,
                                            metric="latency_us")))
                  for alg in ALGS + (["auto"] if method == "card" else [])]
        panels.append(Panel(f"{method}-based, every algorithm", "processes (N)",
                            "barrier latency (us)", series, ylog=True))
    panels.append(auto_picks(res))
    big = max((n for p in panels for s in p.series for n in s.xs), default=None)
    at = {alg: res.value("barrier", case_=alg, method="host", metric="latency_us", nodes=big)
          for alg in ("central", "dissemination")}
    r = at["central"] / at["dissemination"] if all(at.values()) else None
    return Figure("seed003-fig13", "Seed 003 Fig. 13: every barrier algorithm", panels,
                  ours=(f"host central counter / host dissemination at N = {big}", r))


def auto_picks(res):
    """Auto's choices over repeated fresh groups (barrier --auto-repeats), in % of them."""
    def pct(method, metric):
        return [(n, 100 * r["value"] / r["runs"]) for n, r in sorted(
            {r["nodes"]: r for r in res.pick("barrier", case_="auto_pick", method=method,
                                             metric=metric) if r.get("runs")}.items())]

    best = pct("card", "picks_best")
    series = [Series("picked the best (within 10% of its mean)", *unzip(best))]
    # An algorithm no group chose at an N has no record there: 0%.
    ns = [n for n, _ in best]
    chose = {alg: dict(pct(alg, "picks")) for alg in ALGS}
    series += [Series(f"chose {alg}", ns, [c.get(n, 0) for n in ns], style=":s")
               for alg, c in chose.items() if c]
    return Panel("auto's choice in fresh groups (barrier --auto-repeats)", "processes (N)",
                 "% of the groups", series,
                 note="best: the lowest mean latency of this N's timed card runs")


def seed003_table1(res, sim):
    """Per algorithm at the largest N: measured (host, card), LogP, simulator."""
    res.need("barrier")
    ns = [r["nodes"] for r in res.pick("barrier", metric="latency_us", method="host")]
    if not ns:
        raise NotMeasured("no host-based barrier records")
    big = max(ns)
    rows = [("algorithm", "N", "host_us", "card_us", "logp_us", "logp_error_pct",
             "sim_1024_us_vm_ttrig")]
    lp = logp_params(res)
    ttrig, _ = fitted_ttrig(res)
    for alg in ALGS:
        h = res.value("barrier", case_=alg, method="host", metric="latency_us", nodes=big)
        c = res.value("barrier", case_=alg, method="card", metric="latency_us", nodes=big)
        pred = barrier_report.logp(alg, big, *lp) if lp else None
        err = 100 * (pred - h) / h if pred and h else None
        s = sim.run(barrier_report.SIM_WORKLOAD[alg], 1024, ttrig * 1000, 0) if ttrig else None
        rows.append((alg, big) + tuple("" if v is None else f"{v:.4g}"
                                       for v in (h, c, pred, err, s)))
    h = {r[0]: r[2] for r in rows[1:]}
    ratio = (float(h["central"]) / float(h["dissemination"])
             if h.get("central") and h.get("dissemination") else None)
    return rows, (f"host central counter / host dissemination at N = {big}", ratio)


# ------------------------------------------------------------ seed 004 figs --

def seed004_fig6(res, sim):
    res.need("strided")
    series = [Series(m, *unzip(res.xy("strided", "bytes", case_="square2d", method=m,
                                      metric="mb_per_s")))
              for m in ("nic", "hbna", "naive", "auto", "contig", "memcpy")]
    p = Panel("strided PUT of a square block of doubles", "message size", "bandwidth (MB/s)",
              series, xlog=True, ylog=True, note="memcpy: the VM's own copy of the same block")
    return Figure("seed004-fig6", "Seed 004 Fig. 6: strided PUT bandwidth by size", [p])


def seed004_fig7(res, sim):
    res.need("strided")
    ch, (nic, naive) = common_points(res, "strided", "chunk", ("nic", "naive"),
                                     case_="square2d", metric="mb_per_s")
    p = Panel("(left) the card walking the shape against a PUT per chunk",
              "contiguous chunk (bytes)", "bandwidth (MB/s)",
              [Series("nic", ch, [nic[c] for c in ch]),
               Series("naive", ch, [naive[c] for c in ch])], xlog=True, ylog=True)
    q = Panel("(right) HBNA pipelined against one piece at a time", "message size",
              "bandwidth (MB/s)",
              [Series(m, *unzip(res.xy("strided", "bytes", case_="hbna_pipeline", method=m,
                                       metric="mb_per_s")))
               for m in ("hbna", "copy_transmit_copy")], xlog=True, ylog=True)
    r = nic[ch[0]] / naive[ch[0]] if ch else None
    return Figure("seed004-fig7", "Seed 004 Fig. 7: the card's strided method against naive, "
                  "and HBNA's pipelining", [p, q],
                  ours=(f"nic / naive at the smallest chunk ({ch[0] if ch else '-'} B)", r))


STRIDED_APPS = ("srumma", "halo")
STRIDED_APP_METHODS = ("nic", "hbna", "naive", "auto")


def seed004_fig8(res, sim):
    res.need("strided")

    def bars(metric):
        out = []
        for m in STRIDED_APP_METHODS:
            pts = [(a, res.value("strided", case_=a, method=m, metric=metric))
                   for a in STRIDED_APPS]
            pts = [(a, v) for a, v in pts if v is not None]
            out.append(Series(m, *unzip(pts)))
        return out

    ranks = sorted({r["nodes"] for a in STRIDED_APPS for r in res.pick("strided", case_=a)
                    if r.get("nodes")})
    who = f"{', '.join(map(str, ranks))} processes" if ranks else "several processes"
    p = Panel(f"communication time per process by method ({who})", "kernel",
              "communication time (s)", bars("comm_s"), categories=list(STRIDED_APPS),
              note="srumma: blocked matrix multiply fetching strips with strided gets; "
                   "halo: 3-D face exchange with strided puts and BT-like sweeps")
    q = Panel("CPU time the target processes spent packing and unpacking", "kernel",
              "target CPU time (s, all processes)", bars("target_cpu_s"),
              categories=list(STRIDED_APPS), note="HBNA's hidden cost; the card's methods: 0")
    nic = res.value("strided", case_="halo", method="nic", metric="comm_s")
    hbna = res.value("strided", case_="halo", method="hbna", metric="comm_s")
    return Figure("seed004-fig8", "Seed 004 Fig. 8: application kernels by method", [p, q],
                  ours=("halo communication time, hbna / nic",
                        hbna / nic if nic and hbna else None),
                  notes=["the paper runs NAS BT (Co-Array Fortran) and SRUMMA on a cluster; "
                         "here the same communication patterns run as kernels of the strided "
                         "suite (`--apps`)"])


FIGURES = (seed000_fig5, seed000_fig6, seed000_fig7, seed000_fig8,
           seed001_fig4, seed001_fig5, seed001_fig6, seed001_fig7, seed001_fig8,
           seed002_fig5, seed002_fig6, seed002_fig7, seed002_fig8,
           logp_figure("combining", "combining tree (fan-in 4)", 8), diagram("tournament", 9),
           logp_figure("tournament", "tournament barrier", 10), diagram("dissemination", 11),
           logp_figure("dissemination", "dissemination barrier", 12), seed003_fig13,
           seed004_fig6, seed004_fig7, seed004_fig8)


def figure_id(fn):
    return fn.__name__.replace("_", "-")


# ------------------------------------------------------------------- output --

def meta_line(meta):
    if not meta:
        return "no metadata (records written before tools/benchfile.py)"
    commit = meta.get("commit", "?")
    commit = commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")
    tunables = " ".join(f"{k}={v}" for k, v in sorted(meta.get("tunables", {}).items()))
    return (f"commit {commit}, kernel {meta.get('kernel', '?')}, "
            f"{meta.get('vcpus', '?')} vCPUs, {meta.get('memory_mib', '?')} MiB, "
            f"host {meta.get('host_cpu', '?')} (load {meta.get('host_loadavg', '?')}), "
            f"{meta.get('date', '?')}, "
            f"args '{meta.get('bench_args', '')}', tunables {tunables or '?'}"
            + (f"; {meta['note']}" if meta.get("note") else ""))


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, list):
        return ", ".join(fmt(x) for x in v)
    return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))


def paper_block(paper, ours):
    if not paper:
        return "<p>No entry in papers.json.</p>"
    out = [f"<p class=cap><b>Paper:</b> {html.escape(paper['caption'])} "
           f"({html.escape(paper['where'])})</p>"]
    if paper["values"]:
        out.append("<table><tr><th>paper's value</th><th>value</th><th>source</th></tr>")
        for v in paper["values"]:
            out.append(f"<tr><td>{html.escape(v['what'])}</td><td>{fmt(v['value'])} "
                       f"{html.escape(v.get('unit', ''))}</td>"
                       f"<td>{html.escape(v['source'])}</td></tr>")
        out.append("</table>")
    pr = paper.get("ratio")
    if pr or ours:
        out.append("<table><tr><th>ratio</th><th>paper</th><th>ours</th></tr>")
        out.append(f"<tr><td>{html.escape(pr['what'] if pr else ours[0])}"
                   f"{'' if not (pr and ours) else '<br><i>ours: ' + html.escape(ours[0]) + '</i>'}"
                   f"</td><td>{fmt(pr['value']) if pr else '- (none stated)'}"
                   f"{'' if not pr else ' (' + html.escape(pr['source']) + ')'}</td>"
                   f"<td>{fmt(ours[1]) if ours else '-'}</td></tr></table>")
    return "\n".join(out)


STYLE = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
font-size:90%;text-align:left}img{max-width:100%}.nm{color:#a00}.cap{font-size:95%}
section{border-top:1px solid #888;margin-top:2em}.met td:last-child{color:#070}
.not-met td:last-child{color:#a00}.not-measured td:last-child{color:#777}"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="build/results")
    ap.add_argument("--out", default="build/report")
    ap.add_argument("--sim", default="build/bin/nicoff-sim",
                    help="nicoff-sim for the predictions ('' for none)")
    ap.add_argument("--papers", default=os.path.join(HERE, "papers.json"))
    a = ap.parse_args()
    res = Results(a.results)
    if not res.recs:
        sys.exit(f"report: no results in {a.results} (suites: {', '.join(SUITES)})")
    with open(a.papers) as f:
        papers = json.load(f)
    os.makedirs(a.out, exist_ok=True)
    sim = res.sim = Sim(a.sim)
    body = []
    for fn in FIGURES:
        fid = figure_id(fn)
        res.used = set()
        try:
            fig = fn(res, sim)
        except NotMeasured as e:
            body.append(f"<section id={fid}><h2>{fid}: not measured</h2>"
                        f"<p class=nm>Not measured: {html.escape(str(e))}</p>"
                        f"{paper_block(papers.get(fid), None)}</section>")
            print(f"{fid}: not measured: {e}")
            continue
        meta = res.meta_lines()
        draw(fig, os.path.join(a.out, fid + ".png"), meta)
        write_csv(fig, os.path.join(a.out, fid + ".csv"), meta)
        extra = "".join(f"<li>{html.escape(x)}</li>" for x in fig.errors + fig.notes)
        body.append(f"<section id={fid}><h2>{html.escape(fig.title)}</h2>"
                    f"<p><a href=\"{fid}.png\"><img src=\"{fid}.png\" alt=\"{fid}\"></a></p>"
                    f"<p>Data: <a href=\"{fid}.csv\">{fid}.csv</a>. Records: "
                    f"{html.escape('; '.join(meta))}</p>"
                    f"{'<ul>' + extra + '</ul>' if extra else ''}"
                    f"{paper_block(papers.get(fid), fig.ours)}</section>")
        print(f"{fid}: {fid}.png")
    try:
        res.used = set()
        rows, ours = seed003_table1(res, sim)
        write_rows(os.path.join(a.out, "seed003-table1.csv"), rows, res.meta_lines())
        t = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                    for r in rows)
        body.append(f"<section id=seed003-table1><h2>Seed 003 Table 1: each algorithm at the "
                    f"largest N, measured against its LogP prediction</h2><table>{t}</table>"
                    f"<p>Data: <a href=\"seed003-table1.csv\">seed003-table1.csv</a></p>"
                    f"{paper_block(papers.get('seed003-table1'), ours)}</section>")
        print("seed003-table1: seed003-table1.csv")
    except NotMeasured as e:
        body.append(f"<section id=seed003-table1><h2>seed003-table1: not measured</h2>"
                    f"<p class=nm>Not measured: {html.escape(str(e))}</p></section>")
    res.used = set()
    goal_rows = goals.evaluate(res)
    write_rows(os.path.join(a.out, "goals.csv"), [("issue", "goal", "measured", "verdict")]
               + goal_rows, res.meta_lines())
    for issue, goal, text, verdict in goal_rows:
        print(f"goal (issue {issue}): {verdict}: {goal}: {text}")
    goal_table = "".join(
        f"<tr class=\"{verdict.replace(' ', '-')}\"><td>{issue}</td><td>{html.escape(goal)}</td>"
        f"<td>{html.escape(text)}</td><td>{verdict}</td></tr>"
        for issue, goal, text, verdict in goal_rows)
    body.insert(0, f"<section id=goals><h2>The issues' goals, from these records</h2>"
                   f"<table><tr><th>issue</th><th>goal</th><th>measured</th><th>verdict</th></tr>"
                   f"{goal_table}</table><p>Data: <a href=\"goals.csv\">goals.csv</a></p>"
                   f"</section>")
    meta_rows = "".join(f"<tr><td>{s}.json</td><td>{html.escape(meta_line(res.meta[s]))}</td>"
                        f"</tr>" for s in res.meta)
    with open(os.path.join(a.out, "index.html"), "w") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset=utf-8><title>nicoff: the seed "
                f"figures</title><style>{STYLE}</style></head><body>"
                f"<h1>nicoff: the seed papers' figures, measured in this VM</h1>"
                f"<p>Made by tools/report/report.py from {html.escape(a.results)}. Each figure: "
                f"this run's measurement, the simulator's prediction where it has one, and the "
                f"paper's own numbers (tools/report/papers.json).</p>"
                f"<table><tr><th>records</th><th>made with</th></tr>"
                f"{meta_rows}</table>{''.join(body)}</body></html>\n")
    print(f"report: {os.path.join(a.out, 'index.html')}")


if __name__ == "__main__":
    main()
