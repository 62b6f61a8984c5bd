#!/usr/bin/python3
"""`make check`'s test of the report: build it from the recorded fixture
(tools/report/fixture: real records of short runs, no VM) into a fresh
directory, then check that every file of fixture/expected.txt is there and
not empty, that every link and image of index.html resolves, that
goals.csv states every goal of goals.py with a verdict (and a measured
value wherever the verdict is met or not met), judging every goal but those
of fixture/unjudged.txt (and the simulator's without --sim), and that every
CSV and every PNG's footer carry the records' metadata.

    tools/report/test_report.py [--sim PATH] [--keep DIR]

Prints one TAP-like line per check ("ok - ..." / "not ok - ...") and exits
1 if any failed.
"""
import argparse
import csv
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixture")
# What every line of metadata must state (report.meta_line).
META = {"commit": r"commit [0-9a-f]{7}", "kernel": r"kernel \d", "tunables": r"tunables \w+=",
        "vCPUs": r"\d+ vCPUs", "memory": r"\d+ MiB", "host CPU": r"host [^?(]",
        "date": r"\d{4}-\d\d-\d\dT\d\d:\d\d"}


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if (tag, k) in (("a", "href"), ("img", "src"), ("link", "href")) and v:
                self.targets.append(v)


def lines_of(path):
    with open(os.path.join(FIXTURE, path)) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def png_text(path):
    """The PNG's tEXt chunks: {keyword: text}."""
    with open(path, "rb") as f:
        data = f.read()
    out, i = {}, 8
    while i + 8 <= len(data):
        n, kind = int.from_bytes(data[i:i + 4], "big"), data[i + 4:i + 8]
        if kind == b"tEXt":
            k, _, v = data[i + 8:i + 8 + n].partition(b"\0")
            out[k.decode("latin-1")] = v.decode("latin-1")
        i += 12 + n
    return out


def meta_lacks(lines):
    """What of META the lines of metadata (one per results file) do not state."""
    if not lines:
        return ["every field (no metadata)"]
    return sorted({k for line in lines for k, pat in META.items() if not re.search(pat, line)})


def csv_meta(path):
    with open(path) as f:
        return [line[2:] for line in f if line.startswith("# ")]


def check_meta(out, result):
    """Every CSV's '# ' lines and every PNG's footer text state META; a figure
    drawn from two suites names both files."""
    lacking = []
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name.endswith(".csv"):
            lines = csv_meta(path)
        elif name.endswith(".png"):
            lines = png_text(path).get("Description", "").splitlines()
        else:
            continue
        lacking += [f"{name} ({', '.join(meta_lacks(lines))})"] if meta_lacks(lines) else []
    result(not lacking,
           f"metadata in every CSV and PNG footer, lacking: {'; '.join(lacking) or 'none'}")
    both = csv_meta(os.path.join(out, "seed003-fig12.csv"))
    result(any(m.startswith("barrier.json:") for m in both)
           and any(m.startswith("p2p.json:") for m in both),
           "seed003-fig12 (barrier and p2p records) names both files' metadata")


def check(out, failures, sim):
    """The checks of one built report in out; appends what failed to failures."""
    def result(ok, what):
        print(f"{'ok' if ok else 'not ok'} - {what}")
        if not ok:
            failures.append(what)

    for name in lines_of("expected.txt"):
        path = os.path.join(out, name)
        result(os.path.isfile(path) and os.path.getsize(path) > 0, f"report has {name}")
    index = os.path.join(out, "index.html")
    if not os.path.isfile(index):
        result(False, "report has index.html")
        return
    parser = Links()
    with open(index) as f:
        parser.feed(f.read())
    dead = []
    for t in parser.targets:
        u = urllib.parse.urlparse(t)
        # Opened from the file system: only relative links to files beside it.
        if u.scheme or u.netloc or t.startswith("/"):
            dead.append(t + " (not relative)")
        elif u.path and not os.path.isfile(os.path.join(out, urllib.parse.unquote(u.path))):
            dead.append(t)
    result(parser.targets and not dead,
           f"index.html: {len(parser.targets)} links, unresolved: {', '.join(dead) or 'none'}")
    sys.path.insert(0, HERE)
    import goals  # noqa: E402  (the table the report states)
    path = os.path.join(out, "goals.csv")
    rows = []
    if os.path.isfile(path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    stated = {r["goal"]: r for r in rows}
    missing = [g for _, g, _ in goals.GOALS if g not in stated]
    bad = [r["goal"] for r in rows
           if r["verdict"] not in ("met", "not met", "not measured") or not r["measured"]]
    result(rows and not missing and not bad,
           f"goals.csv: {len(rows)} goals stated, missing {len(missing)}, malformed {len(bad)}")
    # The fixture has no records for these; the simulator's needs --sim.
    unjudged = set(lines_of("unjudged.txt")) | (set() if sim else {goals.SIM_GOAL})
    wrong = [g for g, r in stated.items() if (r["verdict"] == "not measured") != (g in unjudged)]
    result(rows and not wrong,
           f"goals.csv: every goal judged but the {len(unjudged)} without records here "
           f"(fixture/unjudged.txt{'' if sim else ', the simulator'}); "
           f"wrong: {'; '.join(wrong) or 'none'}")
    check_meta(out, result)
    # auto's pick rate (barrier --auto-repeats): in its goal and drawn in seed003-fig13.
    auto = [r["measured"] for g, r in stated.items() if g.startswith("Barrier auto")]
    with open(os.path.join(out, "seed003-fig13.csv")) as f:
        drawn = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                 if r["series"].startswith("picked the best")]
    result(auto and "picked the best" in auto[0] and drawn,
           f"auto's pick rate: in its goal ({auto[0] if auto else 'no goal'}), "
           f"{len(drawn)} points in seed003-fig13")


def check_paired(failures):
    """Issue 13's goals read the suite's ratio_paired records where they exist:
    here the methods' medians say 'not met' and the paired ratios 'met'."""
    sys.path.insert(0, HERE)
    import goals  # noqa: E402
    import report  # noqa: E402

    def rec(case, method, metric, value, chunk=64, size=512):
        return {"suite": "strided", "case": case, "method": method, "nodes": 2, "bytes": size,
                "chunk": chunk, "metric": metric, "value": value, "unit": "x", "runs": 5}
    records = [rec("square2d", "nic", "mb_per_s", 40.0), rec("square2d", "naive", "mb_per_s", 10.0),
               rec("square2d", "hbna", "mb_per_s", 10.0), rec("square2d", "auto", "mb_per_s", 30.0),
               rec("square2d", "nic/naive", "ratio_paired", 5.2),
               rec("square2d", "best/auto", "ratio_paired", 1.02),
               rec("hbna_pipeline", "hbna", "mb_per_s", 100.0, size=1 << 25),
               rec("hbna_pipeline", "copy_transmit_copy", "mb_per_s", 100.0, size=1 << 25),
               rec("hbna_pipeline", "hbna/copy_transmit_copy", "ratio_paired", 1.6,
                   size=1 << 25)]
    with tempfile.TemporaryDirectory(prefix="nicoff-paired.") as tmp:
        with open(os.path.join(tmp, "strided.json"), "w") as f:
            json.dump({"metadata": {}, "records": records}, f)
        res = report.Results(tmp)
        got = [goals.strided_nic_over("naive", 5.0, lambda c: c == 64)(res),
               goals.strided_auto(res), goals.hbna_pipeline(res)]
        medians = [r for r in records if r["metric"] == "mb_per_s"]
        with open(os.path.join(tmp, "strided.json"), "w") as f:
            json.dump({"metadata": {}, "records": medians}, f)
        res = report.Results(tmp)
        old = [goals.strided_nic_over("naive", 5.0, lambda c: c == 64)(res),
               goals.strided_auto(res), goals.hbna_pipeline(res)]
    ok = all(v and "paired" in m for m, v in got) and not any(v for _, v in old)
    print(f"{'ok' if ok else 'not ok'} - strided goals from ratio_paired: {got}; "
          f"from the medians alone: {old}")
    if not ok:
        failures.append("strided paired goals")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="", help="nicoff-sim for the predictions (default: none)")
    ap.add_argument("--keep", help="build the report in DIR and leave it there")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nicoff-report.") as tmp:
        out = a.keep or tmp
        run = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "report.py"),
                              "--results", FIXTURE, "--out", out, "--sim", a.sim],
                             capture_output=True, text=True, check=False)
        failures = []
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            print(f"not ok - report.py exited {run.returncode}")
            failures.append("report.py")
        else:
            print("ok - report.py builds the report from the fixture")
        check(out, failures, a.sim)
    check_paired(failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
