#!/usr/bin/python3
"""Report of the barrier suite: card vs host, auto vs best, seed 000's model,
seed 003's LogP predictions, the simulator's predictions.

    tools/barrier_report.py [build/results/barrier.json ...] [--p2p build/results/p2p.json]
                            [--sim build/bin/nicoff-sim] [--sim-nodes 4096,1048576]
                            [--json OUT]

- Card-based against host-based latency per algorithm and N, with the
  ratio host/card (mean and median), and auto against the best algorithm.
- Seed 000's model T = Tinit + (ceil(log2 N) - 1) * Ttrig + Tadj fitted to
  the card dissemination figures of one process driving N cards
  (latency_us_1proc; Tinit = T(2), Ttrig and Tadj by least squares), and
  its extrapolation to 1,024, 4,096 and 1,048,576 nodes.
- Seed 003's LogP predictions (section 4) of every algorithm with the L, o
  (o_s, o_r) and g that the p2p suite measured (logp/send_recv records),
  next to the host-based measurements.  For pairwise exchange and the
  gather-broadcast tree, which seed 003 does not analyse, the same
  accounting: pairwise (floor(log2 P) + 2 [P not a power of two]) * ts;
  tree ceil(log_d P) * (2 (os + L + or) + (d - 1) (fr + fs)).
- The simulator (nicoff-sim, workloads barrier-*) at --sim-nodes, its link
  latency L set to the fitted Ttrig (one trigger per step) and o = 0, so
  that it extrapolates this machine's card figures with the firmware's real
  protocol.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import benchfile

ALGS = ["pairwise", "dissemination", "tree", "central", "combining", "tournament"]
SIM_WORKLOAD = {"dissemination": "barrier", "pairwise": "barrier-pairwise",
                "tree": "barrier-tree", "central": "barrier-central",
                "combining": "barrier-combining", "tournament": "barrier-tournament",
                "auto": "barrier-auto"}
TREE_DEGREE = 4
COMBINING_FANIN = 4


def clog(n, base=2):
    """ceil(log_base n) for integers, exactly."""
    k, p = 0, 1
    while p < n:
        p *= base
        k += 1
    return k


def logp(alg, P, L, os_, or_, g):
    """Seed 003's running-time predictions (microseconds)."""
    if P < 2:
        return 0.0
    fr, fs = max(or_, g), max(os_, g)
    ts = tr = max(g, os_ + L + or_)
    lg = clog(P)
    tbc = os_ + (lg - 1) * tr + L + or_  # binomial broadcast to P - 1 nodes
    if alg == "central":
        return 2 * (os_ + L + or_) + (P - 2) * fr + (P - 2) * fs
    if alg in ("combining", "tournament"):
        n = COMBINING_FANIN if alg == "combining" else 2
        if alg == "tournament":
            return tr * lg + tbc
        return (os_ + L + fr * (n - 2) + or_) * clog(P, n) + tbc
    if alg == "dissemination":
        return max(tr, ts) * lg
    if alg == "pairwise":
        m = 1 << (P.bit_length() - 1)
        return ts * (int(math.log2(m)) + (0 if m == P else 2))
    if alg == "tree":
        d = TREE_DEGREE
        return clog(P, d) * (2 * (os_ + L + or_) + (d - 1) * (fr + fs))
    return float("nan")


def load(path):
    return benchfile.load(path)[1]


def index(records):
    out = {}
    for r in records:
        out[(r["case"], r["method"], r["nodes"], r["metric"])] = r["value"]
    return out


def table(rows, header):
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("  ".join(str(h).ljust(n) for h, n in zip(header, w)))
    for r in rows:
        print("  ".join(str(x).ljust(n) for x, n in zip(r, w)))
    print()


def f(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def fit(points):
    """Seed 000's model; points: {N: T}.  Returns (Tinit, Ttrig, Tadj, rms)."""
    if 2 not in points or len(points) < 2:
        return None
    xy = [(clog(n) - 1, t) for n, t in points.items() if n >= 2]
    m = len(xy)
    sx = sum(x for x, _ in xy)
    sy = sum(y for _, y in xy)
    sxx = sum(x * x for x, _ in xy)
    sxy = sum(x * y for x, y in xy)
    den = m * sxx - sx * sx
    if den == 0:
        return None
    slope = (m * sxy - sx * sy) / den
    icpt = (sy - slope * sx) / m
    rms = math.sqrt(sum((icpt + slope * x - y) ** 2 for x, y in xy) / m)
    tinit = points[2]
    return tinit, slope, icpt - tinit, rms


def run_sim(sim, workload, nodes, l_ns, o_ns=0, extra=()):
    """The workload's mean latency_us in nicoff-sim (L and o in ns), or None."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.json")
        iters = 12 if nodes <= 65536 else 5
        cmd = [sim, "--nodes", str(nodes), "--workload", workload, "--iters", str(iters),
               "--warmup", "2", "--L", str(int(l_ns)), "--o", str(int(o_ns)), "--quiet",
               "--json", out, *extra]
        try:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"  nicoff-sim {workload} {nodes}: {e}", file=sys.stderr)
            return None
        for r in load(out):
            if r["metric"] == "latency_us":
                return r["value"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("barrier", nargs="*", default=["build/results/barrier.json"],
                    help="records of the barrier suite (several runs: later ones win)")
    ap.add_argument("--p2p", default="build/results/p2p.json")
    ap.add_argument("--sim", default="build/bin/nicoff-sim")
    ap.add_argument("--sim-nodes", default="4096,1048576")
    ap.add_argument("--sim-algs", default="dissemination")
    ap.add_argument("--json", help="write the derived figures as bench records")
    a = ap.parse_args()

    recs = []
    for path in a.barrier:
        recs += load(path)
    ix = index(recs)
    derived = []

    def rec(case, method, nodes, metric, value, unit):
        derived.append({"suite": "barrier-report", "case": case, "method": method,
                        "nodes": nodes, "bytes": None, "metric": metric, "value": value,
                        "unit": unit, "runs": None})

    ns = sorted({r["nodes"] for r in recs if r["metric"] == "latency_us" and r["nodes"]})
    print("== card vs host (multi-process): mean latency in us, ratio host/card (mean, median)")
    rows = []
    for alg in ALGS + ["auto"]:
        for n in ns:
            c = ix.get((alg, "card", n, "latency_us"))
            h = ix.get((alg, "host", n, "latency_us"))
            if c is None and h is None:
                continue
            cm = ix.get((alg, "card", n, "latency_us_median"))
            hm = ix.get((alg, "host", n, "latency_us_median"))
            ratio = h / c if c and h else None
            ratio_m = hm / cm if cm and hm else None
            rows.append((alg, n, f(c), f(h), f(ratio, 2), f(ratio_m, 2)))
    table(rows, ("algorithm", "N", "card_us", "host_us", "host/card", "median h/c"))

    print("== auto against the best algorithm (card, multi-process)")
    rows = []
    for n in ns:
        au = ix.get(("auto", "card", n, "latency_us"))
        best = [(ix.get((x, "card", n, "latency_us")), x) for x in ALGS]
        best = [b for b in best if b[0] is not None]
        if au is None or not best:
            continue
        b = min(best)
        chosen = ix.get(("auto", "card", n, "chosen"))
        name = ALGS[int(chosen) - 1] if chosen else "?"
        rows.append((n, name, f(au), b[1], f(b[0]), f(au / b[0], 2)))
    table(rows, ("N", "auto chose", "auto_us", "best", "best_us", "auto/best"))

    print("== auto against the best algorithm (card, one process driving N cards, medians)")
    rows = []
    for n in sorted({r["nodes"] for r in recs if r["metric"] == "latency_us_1proc_median"}):
        au = ix.get(("auto", "card", n, "latency_us_1proc_median"))
        best = [(ix.get((x, "card", n, "latency_us_1proc_median")), x) for x in ALGS]
        best = [b for b in best if b[0] is not None]
        if au is None or len(best) < 2:
            continue
        b = min(best)
        chosen = ix.get(("auto", "card", n, "chosen_1proc"))
        name = ALGS[int(chosen) - 1] if chosen else "?"
        rows.append((n, name, f(au), b[1], f(b[0]), f(au / b[0], 2), len(best)))
        rec("auto", "card", n, "vs_best_1proc", au / b[0], "x")
    table(rows, ("cards", "auto chose", "auto_us", "best", "best_us", "auto/best", "compared"))

    one = {}
    seen = set()
    for r in recs:
        if r["metric"] == "latency_us_1proc_median" and r["case"] == "dissemination":
            one[r["nodes"]] = r["value"]
    print("== one process driving N cards (latency_us_1proc)")
    rows = []
    for r in recs:
        if r["metric"] == "latency_us_1proc" and (r["case"], r["nodes"]) not in seen:
            seen.add((r["case"], r["nodes"]))
            rows.append((r["case"], r["nodes"], f(ix[(r["case"], "card", r["nodes"],
                                                       "latency_us_1proc")]),
                         f(ix.get((r["case"], "card", r["nodes"], "latency_us_1proc_median")))))
    table(rows, ("algorithm", "cards", "mean_us", "median_us"))
    if 8 in one and one:
        big = max(one)
        print(f"   dissemination {big} cards / 8 cards (medians): {one[big] / one[8]:.2f}x\n")
        rec("dissemination", "card", big, "ratio_vs_8_cards", one[big] / one[8], "x")

    model = fit(one)
    if model:
        tinit, ttrig, tadj, rms = model
        print("== seed 000's model fitted to card dissemination (one process, medians)")
        print(f"   T = {tinit:.2f} + (ceil(log2 N) - 1) * {ttrig:.2f} + {tadj:.2f} us"
              f"   (rms {rms:.2f} us over {len(one)} points)")
        for n in (1024, 4096, 1048576):
            t = tinit + (clog(n) - 1) * ttrig + tadj
            print(f"   N = {n:>8}: {t:9.1f} us")
            rec("dissemination", "model", n, "latency_us", t, "us")
        for k, v in (("t_init_us", tinit), ("t_trig_us", ttrig), ("t_adj_us", tadj),
                     ("rms_us", rms)):
            rec("dissemination", "model", None, k, v, "us")
        print()

    if os.path.exists(a.p2p):
        p2p = index(load(a.p2p))
        get = lambda m: p2p.get(("logp", "send_recv", 2, m))
        L, os_, or_, g = get("L_us"), get("o_s_us"), get("o_r_us"), get("g_us")
        if None not in (L, os_, or_, g):
            print(f"== seed 003's LogP predictions, L = {L:.2f}, o_s = {os_:.2f}, "
                  f"o_r = {or_:.2f}, g = {g:.2f} us (p2p suite)")
            rows = []
            for alg in ALGS:
                for n in ns:
                    pred = logp(alg, n, L, os_, or_, g)
                    h = ix.get((alg, "host", n, "latency_us"))
                    c = ix.get((alg, "card", n, "latency_us"))
                    rows.append((alg, n, f(pred), f(h), f(h / pred if h and pred else None, 2),
                                 f(c)))
                    rec(alg, "logp", n, "latency_us", pred, "us")
            table(rows, ("algorithm", "N", "logp_us", "host_us", "host/logp", "card_us"))
        else:
            print(f"== no LogP records (logp/send_recv) in {a.p2p}\n")
    else:
        print(f"== no {a.p2p}: run `make bench SUITE=p2p` for the LogP predictions\n")

    if model and os.access(a.sim, os.X_OK) and a.sim_nodes:
        l_ns = max(1.0, model[1] * 1000)
        print(f"== simulator (nicoff-sim, the firmware on a LogGP fabric, L = Ttrig = "
              f"{l_ns / 1000:.2f} us, o = 0)")
        rows = []
        for alg in a.sim_algs.split(","):
            for n in [int(x) for x in a.sim_nodes.split(",")]:
                t = run_sim(a.sim, SIM_WORKLOAD[alg], n, l_ns)
                mod = model[0] + (clog(n) - 1) * model[1] + model[2]
                rows.append((alg, n, f(t), f(mod)))
                if t is not None:
                    rec(alg, "sim", n, "latency_us", t, "us")
        table(rows, ("algorithm", "N", "sim_us", "model_us"))

    if a.json:
        with open(a.json, "w") as fh:
            json.dump(derived, fh, indent=1)


if __name__ == "__main__":
    main()
