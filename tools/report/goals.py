"""The issues' speed goals, each stated in the report as met, not met or
not measured, from the same records as the figures.

GOALS is the one table: (issue, goal, check).  A check takes the Results
(and its simulator, res.sim, a report.Sim) and returns (what was measured,
True/False), or raises NotMeasured naming the records it needs.  A goal
over several points is met only when every point meets it; the text names
the worst point.
"""
import math

KIB, MIB = 1024, 1024 * 1024
# Seed 000 sec. 8.3, Quadrics/Elan3: its model's Tinit, Ttrig, Tadj (us).
SEED000_QUADRICS = (2.25, 2.32, -1.00)


class NotMeasured(Exception):
    """The records a goal needs are absent; the message says which."""


def need(v, what):
    if v is None:
        raise NotMeasured(f"no record of {what}")
    return v


def latencies(res, suite, case, method, metric="latency_us", **want):
    """{nodes: value} of the records (later runs win)."""
    return dict(res.xy(suite, "nodes", case_=case, method=method, metric=metric, **want))


def worst(points, better_low=False):
    """The point (key, value) that meets a floor (or ceiling) least."""
    if not points:
        return None
    return (max if better_low else min)(points.items(), key=lambda kv: kv[1])


# ------------------------------------------------------------- barrier (18) --

def barrier_host_over_card(n, floor):
    def check(res):
        best = {}
        for alg in set(r["case"] for r in res.pick("barrier", method="card")):
            c = latencies(res, "barrier", alg, "card").get(n)
            h = latencies(res, "barrier", alg, "host").get(n)
            if c and h:
                best[alg] = h / c
        alg, r = need(max(best.items(), key=lambda kv: kv[1]) if best else None,
                      f"barrier card and host latency at N = {n}")
        return f"{r:.2f}x ({alg}, the best algorithm's host / card)", r >= floor
    return check


def barrier_card_over_shm(n, ceiling):
    def check(res):
        shm = [r["value"] for r in res.pick("barrier", method="shm", metric="latency_us",
                                            nodes=n)]
        cards = [v for alg in set(r["case"] for r in res.pick("barrier", method="card"))
                 for k, v in latencies(res, "barrier", alg, "card").items() if k == n]
        need(shm and cards or None, f"barrier card and shm latency at N = {n}")
        r = min(cards) / min(shm)
        return f"{r:.2f}x (the card's best algorithm / the futex barrier)", r <= ceiling
    return check


def messages(alg, n):
    """Messages one barrier sends over n cards (pairwise and dissemination:
    n per round, ceil(log2 n) rounds)."""
    return n * math.ceil(math.log2(n))


def barrier_per_message_flat(res):
    pts = {}
    for alg in ("dissemination", "pairwise"):
        t = latencies(res, "barrier", alg, "card", metric="latency_us_1proc_median")
        if 64 in t and 1024 in t:
            pts[alg] = (t[1024] / messages(alg, 1024)) / (t[64] / messages(alg, 64))
    alg, r = need(worst(pts, better_low=True) if pts else None,
                  "latency_us_1proc_median at 64 and 1,024 cards (VM_PARAMS=nics=1024)")
    return f"{r:.2f}x ({alg}: per-message latency at 1,024 cards / at 64)", r <= 1.5


def auto_within(frac):
    def check(res):
        auto = latencies(res, "barrier", "auto", "card")
        need(auto or None, "the auto algorithm's card latency")
        ratios = {}
        for n, a in auto.items():
            best = [latencies(res, "barrier", alg, "card").get(n)
                    for alg in set(r["case"] for r in res.pick("barrier", method="card"))
                    if alg != "auto"]
            best = [b for b in best if b]
            if best:
                ratios[n] = a / min(best)
        n, r = need(worst(ratios, better_low=True) if ratios else None,
                    "card latency of the other algorithms at auto's N")
        return f"{r:.2f}x the best algorithm (worst at N = {n}); {auto_picks(res)}", r <= 1 + frac
    return check


def auto_picks(res):
    """How often auto's choice in fresh groups was the best algorithm (within
    10%), at each N: the barrier suite's --auto-repeats records."""
    picks = res.pick("barrier", case_="auto_pick", method="card", metric="picks_best")
    if not picks:
        return "its pick rate over repeated groups not measured (barrier --auto-repeats)"
    at = {r["nodes"]: r for r in picks}
    return "picked the best (within 10%) in " + ", ".join(
        f"{at[n]['value']:g} of {at[n]['runs']} groups at N = {n}" for n in sorted(at))


def seed000_model(n, tinit, ttrig, tadj):
    """Seed 000's T = Tinit + (ceil(log2 N) - 1) Ttrig + Tadj."""
    return tinit + (math.ceil(math.log2(n)) - 1) * ttrig + tadj


def sim_scaling(res):
    """The simulated dissemination barrier (a processor per card) at 1,024 nodes
    over 8, L = seed 000's Ttrig, o = 0 (as seed000-fig8 draws it)."""
    ttrig = SEED000_QUADRICS[1]
    t = {n: res.sim.run("barrier", n, ttrig * 1000, 0) for n in (8, 1024)} if res.sim else {}
    if not (t.get(8) and t.get(1024)):
        raise NotMeasured("no simulator (build/bin/nicoff-sim) or it failed")
    r = t[1024] / t[8]
    model = seed000_model(1024, *SEED000_QUADRICS) / seed000_model(8, *SEED000_QUADRICS)
    return (f"{r:.2f}x (simulated dissemination, L = seed 000's Ttrig {ttrig} us, o = 0; "
            f"seed 000's Quadrics model: {model:.2f}x)", r <= 4.0)


# ------------------------------------------------------------- atomic (18) --

def cpu_share(res):
    pts = {r["bytes"]: r["value"] for r in res.pick("atomic", case_="cpu_share", method="card",
                                                   metric="home_cpu_lost_pct")}
    rate, v = need(worst(pts, better_low=True) if pts else None, "cpu_share for the card")
    return f"{v:.2f}% (worst, at {rate} offered ops/s)", v <= 2.0


def mcs_over_host(res):
    card = latencies(res, "atomic", "lock", "card-mcs")
    host = latencies(res, "atomic", "lock", "host-mcs")
    pts = {n: host[n] / card[n] for n in card if n in host and 1 <= n <= 4 and card[n]}
    n, r = need(worst(pts) if pts else None, "lock latency, card-mcs and host-mcs, 1 to 4")
    return f"{r:.2f}x (worst, {n} contenders)", r >= 3.0


# -------------------------------------------------------------- bcast (14) --

def bcast_channels(res):
    pts = {r["channels"]: r["value"] for r in res.pick("bcast", case_="channels", method="card",
                                                       metric="latency_us_1proc_median")}
    need(pts.get(2) and pts.get(16), "8 B broadcasts over 8 cards with 2 and 16 channels")
    r = pts[2] / pts[16]
    return f"{r:.2f}x (2 channels / 16)", r >= 4.0


def bcast_card_over_host(size, floor):
    def check(res):
        c = res.value("bcast", case_="bcast", method="card", metric="latency_us", nodes=8,
                      bytes=size)
        h = res.value("bcast", case_="bcast", method="host", metric="latency_us", nodes=8,
                      bytes=size)
        need(c and h, f"card and host broadcasts of {size} B at 8 processes")
        return f"{h / c:.2f}x (host / card)", h / c >= floor
    return check


def bcast_multicast(res):
    t = res.value("bcast", case_="bcast", method="card-p2p-tree", nodes=8, bytes=8,
                  metric="latency_us_1proc_median")
    m = res.value("bcast", case_="bcast", method="card", nodes=8, bytes=8,
                  metric="latency_us_1proc_median")
    need(t and m, "8 B broadcasts over 8 cards, card and card-p2p-tree")
    return f"{t / m:.2f}x (point-to-point tree / multicast)", t / m >= 2.0


# ---------------------------------------------------------------- p2p (12) --

def p2p_bandwidth(res):
    pts = {}
    for size in (MIB, 4 * MIB):
        mem = res.value("p2p", case_="bandwidth", method="memcpy", metric="mb_per_s", bytes=size)
        for m in ("send_recv", "put", "get"):
            v = res.value("p2p", case_="bandwidth", method=m, metric="mb_per_s", bytes=size)
            if mem and v:
                pts[f"{m} {size // MIB} MiB"] = v / mem
    k, r = need(worst(pts) if pts else None, "bandwidth and memcpy at 1 and 4 MiB")
    return f"{100 * r:.1f}% of memcpy (worst: {k})", r >= 0.5


def p2p_latency(res):
    nop = res.value("p2p", case_="nop", method="batch1", metric="rtt_us")
    half = res.value("p2p", case_="pingpong", method="send_recv", metric="latency_us")
    g = res.value("p2p", case_="logp", method="send_recv", metric="g_us")
    need(nop and half and g, "the NOP round trip, the 8 B half round trip and g")
    return (f"half round trip {half / nop:.1f}x the NOP round trip, g {g / nop:.1f}x",
            half / nop <= 3 and g / nop <= 2)


def p2p_drop(res):
    pts = {}
    for r in res.pick("p2p", case_="bandwidth_drop", metric="mb_per_s"):
        base = res.value("p2p", case_="bandwidth", method=r["method"], metric="mb_per_s",
                         bytes=r["bytes"])
        if base:
            pts[f"{r['method']} {r['bytes']} B"] = r["value"] / base
    k, v = need(worst(pts) if pts else None, "bandwidth with and without 0.1% drop")
    return f"{100 * v:.0f}% of the fault-free figure (worst: {k})", v >= 0.5


# ------------------------------------------------------------ strided (13) --

def strided_points(res, method):
    return {(r["bytes"], r.get("chunk")): r["value"]
            for r in res.pick("strided", case_="square2d", method=method, metric="mb_per_s")}


def strided_paired(res, case, method):
    """The suite's ratio_paired records: the median of ratios taken within
    one repeat (a host stall falls on both methods), by (bytes, chunk)."""
    return {(r["bytes"], r.get("chunk")): r["value"]
            for r in res.pick("strided", case_=case, method=method, metric="ratio_paired")}


def strided_nic_over(other, floor, chunks):
    def check(res):
        pts = strided_paired(res, "square2d", f"nic/{other}")
        how = "paired"
        if not pts:  # records of a suite without ratio_paired: the medians' ratio
            nic, o = strided_points(res, "nic"), strided_points(res, other)
            pts = {k: nic[k] / o[k] for k in nic if k in o and o[k]}
            how = "medians"
        pts = {k: v for k, v in pts.items() if chunks(k[1] or 0)}
        k, r = need(worst(pts) if pts else None, f"square2d nic and {other} at those chunks")
        return f"{r:.2f}x {other} ({how}; worst: {k[0]} B in chunks of {k[1]} B)", r >= floor
    return check


def strided_auto(res):
    pts = strided_paired(res, "square2d", "best/auto")
    how = "paired"
    if not pts:
        how = "medians"
        for k, a in strided_points(res, "auto").items():
            best = [strided_points(res, m).get(k) for m in ("nic", "hbna", "naive")]
            best = [b for b in best if b]
            if best and a:
                pts[k] = max(best) / a
    k, r = need(worst(pts, better_low=True) if pts else None, "square2d auto and the others")
    return f"the best method is {r:.2f}x auto ({how}; worst: chunks of {k[1]} B)", r <= 1.05


def hbna_pipeline(res):
    paired = {b: v for (b, _), v in
              strided_paired(res, "hbna_pipeline", "hbna/copy_transmit_copy").items()}
    if paired:
        big = max(paired)
        return f"{paired[big]:.2f}x at {big} B (paired)", paired[big] >= 1.5
    p = dict(res.xy("strided", "bytes", case_="hbna_pipeline", method="hbna",
                    metric="mb_per_s"))
    c = dict(res.xy("strided", "bytes", case_="hbna_pipeline", method="copy_transmit_copy",
                    metric="mb_per_s"))
    sizes = [b for b in p if b in c and c[b]]
    big = need(max(sizes) if sizes else None, "hbna_pipeline, both methods")
    r = p[big] / c[big]
    return f"{r:.2f}x at {big} B (medians)", r >= 1.5


# ------------------------------------------------------- mpi (15), armci (16) --

def mpi_barriers(res, method):
    return latencies(res, "mpi", "barrier", method)


def better_mpich(res):
    a, b = mpi_barriers(res, "mpich"), mpi_barriers(res, "mpich-tuned")
    return {n: min(v for v in (a.get(n), b.get(n)) if v) for n in set(a) | set(b)}


def mpi_card_at_8(res):
    mp, card = better_mpich(res), mpi_barriers(res, "nicoff-pmpi")
    need(mp.get(8) and card.get(8), "mpi barrier, MPICH and nicoff-pmpi at 8 ranks")
    r = mp[8] / card[8]
    return f"{r:.1f}x (better MPICH / nicoff-pmpi)", r >= 2.0


def mpi_never_slower(res):
    mp, card = better_mpich(res), mpi_barriers(res, "nicoff-pmpi")
    pts = {n: card[n] / mp[n] for n in card if mp.get(n)}
    n, r = need(worst(pts, better_low=True) if pts else None, "mpi barrier, MPICH and nicoff-pmpi")
    return f"{r:.2f}x the better MPICH (worst, {n} ranks)", r <= 1.2


def mpi_pmpi_over_native(res):
    card, native = mpi_barriers(res, "nicoff-pmpi"), mpi_barriers(res, "nicoff-native")
    mp = better_mpich(res)
    # Where the selection gave the barrier to MPI, nicoff-pmpi is MPI's: no layer to judge.
    pts = {n: card[n] / native[n] for n in card
           if native.get(n) and not (mp.get(n) and card[n] < native[n] / 2)}
    n, r = need(worst(pts, better_low=True) if pts else None,
                "mpi barrier, nicoff-pmpi and nicoff-native where the card ran both")
    return f"{r:.3f}x native (worst, {n} ranks)", r <= 1.10


def armci_puts(res):
    pts = {}
    for r in res.pick("armci", case_="puts", method="nicoff", metric="mb_per_s"):
        base = res.value("armci", case_="puts", method="armci-mpi", metric="mb_per_s",
                         side=r.get("side"))
        if base and (r.get("side") or 0) >= 64:
            pts[r["side"]] = r["value"] / base
    side, v = need(worst(pts) if pts else None, "armci puts, nicoff and armci-mpi, sides >= 64")
    return f"{v:.2f}x ARMCI-MPI (worst, {side}x{side} doubles)", v >= 2.0


SIM_GOAL = "Simulator (a processor per card): barrier latency at most 4x from 8 to 1,024 nodes"

GOALS = (
    ("18", "Barrier, card against host at 8 processes: at least 3.38x (the seeds' best)",
     barrier_host_over_card(8, 3.38)),
    ("18", "Barrier, card against host at 64 processes: at least 5x",
     barrier_host_over_card(64, 5.0)),
    ("18", "Barrier, card / shared-memory futex barrier at 8 processes: at most 3x",
     barrier_card_over_shm(8, 3.0)),
    ("18", "1,024 cards: latency per barrier message at most 1.5x the 64-card figure",
     barrier_per_message_flat),
    ("18", "Barrier auto within 10% of the best algorithm at every N", auto_within(0.10)),
    ("18", SIM_GOAL, sim_scaling),
    ("18", "Remote lock traffic: the card takes at most 2% of the home CPU", cpu_share),
    ("18", "MCS lock on the card at least 3x the host-based lock, 1 to 4 contenders",
     mcs_over_host),
    ("14", "Broadcast, 16 channels at least 4x faster than 2 (8 B, 8 cards)", bcast_channels),
    ("14", "Broadcast, card at least 3x the host-based tree at 8 processes, 8 B",
     bcast_card_over_host(8, 3.0)),
    ("14", "Broadcast, card at least 2x the host-based tree at 8 processes, 1 MiB",
     bcast_card_over_host(MIB, 2.0)),
    ("14", "Broadcast, multicast at least 2x the cards' point-to-point tree (8 cards)",
     bcast_multicast),
    ("12", "SEND/RECV, PUT, GET at 1 and 4 MiB: at least 50% of memcpy", p2p_bandwidth),
    ("12", "8 B half round trip at most 3x the NOP round trip, g at most 2x", p2p_latency),
    ("12", "With 0.1% drop, bandwidth at least half the fault-free figure", p2p_drop),
    ("13", "Strided NIC-based at least 80% of a contiguous put, chunks of 16 KiB and more",
     strided_nic_over("contig", 0.8, lambda c: c >= 16 * KIB)),
    ("13", "Strided NIC-based at least 5x naive, chunks of 8 doubles",
     strided_nic_over("naive", 5.0, lambda c: c == 64)),
    ("13", "Strided auto within 5% of the best method at every point", strided_auto),
    ("13", "HBNA pipelined at least 1.5x copy-transmit-copy, large transfers", hbna_pipeline),
    ("15", "MPI_Barrier through the card at 8 ranks at least 2x the better MPICH", mpi_card_at_8),
    ("15", "MPI_Barrier never more than 1.2x slower than the better MPICH", mpi_never_slower),
    ("15", "The PMPI layer at most 10% over the native API", mpi_pmpi_over_native),
    ("16", "ARMCI PutS at least 2x ARMCI-MPI's bandwidth, patches of 64x64 doubles and larger",
     armci_puts),
)


def evaluate(res):
    """[(issue, goal, measured text, verdict)]: verdict 'met', 'not met' or
    'not measured'."""
    rows = []
    for issue, goal, check in GOALS:
        try:
            text, ok = check(res)
            rows.append((issue, goal, text, "met" if ok else "not met"))
        except NotMeasured as e:
            rows.append((issue, goal, str(e), "not measured"))
    return rows
