#!/usr/bin/python3
"""`make check`'s test of the report: build it from the recorded fixture
(tools/report/fixture: real records of short runs, no VM) into a fresh
directory, then check that every file of fixture/expected.txt is there and
not empty, that every link and image of index.html resolves, and that
goals.csv states every goal of goals.py with a verdict (and a measured
value wherever the verdict is met or not met).

    tools/report/test_report.py [--sim PATH] [--keep DIR]

Prints one TAP-like line per check ("ok - ..." / "not ok - ...") and exits
1 if any failed.
"""
import argparse
import csv
import html.parser
import os
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixture")


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if (tag, k) in (("a", "href"), ("img", "src"), ("link", "href")) and v:
                self.targets.append(v)


def check(out, failures):
    """The checks of one built report in out; appends what failed to failures."""
    def result(ok, what):
        print(f"{'ok' if ok else 'not ok'} - {what}")
        if not ok:
            failures.append(what)

    with open(os.path.join(FIXTURE, "expected.txt")) as f:
        expected = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    for name in expected:
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
            rows = list(csv.DictReader(f))
    stated = {r["goal"]: r for r in rows}
    missing = [g for _, g, _ in goals.GOALS if g not in stated]
    bad = [r["goal"] for r in rows
           if r["verdict"] not in ("met", "not met", "not measured") or not r["measured"]]
    result(rows and not missing and not bad,
           f"goals.csv: {len(rows)} goals stated, missing {len(missing)}, malformed {len(bad)}")
    judged = sum(r["verdict"] != "not measured" for r in rows)
    result(judged > 0, f"goals.csv: {judged} goals judged from the fixture's records")


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
        check(out, failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
