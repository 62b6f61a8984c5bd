#!/usr/bin/python3
"""A results file of nicoff-bench, and the metadata `make bench` adds to it.

nicoff-bench writes a JSON array of records.  tools/bench.sh turns it into
{"metadata": {...}, "records": [...]}, the records unchanged, so that every
figure made from the file can say how it was made:

    benchfile.py wrap RESULTS.json GUEST_FACTS [KEY=VALUE ...]

GUEST_FACTS holds the lines the guest printed before the suite ran
("kernel VERSION", "cpus N", "MemTotal: N kB", "param NAME VALUE"); the
host adds the git commit of this tree, its CPU model, its load average and
the date, and each KEY=VALUE (the suite's options, the VM's parameters).
load() reads both forms, so files written before the metadata existed still
work.
"""
import datetime
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    """(metadata, records) of a results file; metadata is {} for a bare array."""
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        return data.get("metadata") or {}, data["records"]
    if isinstance(data, list):
        return {}, data
    raise ValueError(f"{path}: neither a list of records nor {{metadata, records}}")


def git_commit():
    def git(*args):
        return subprocess.run(["git", "-C", TOP, *args], capture_output=True, text=True,
                              check=False).stdout.strip()
    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    # A build with uncommitted changes is not that commit.
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def host_cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def guest_facts(path):
    """The guest's kernel, CPUs, memory and module tunables from its printout."""
    out = {"tunables": {}}
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) >= 2 and words[0] == "kernel":
                out["kernel"] = words[1]
            elif len(words) == 2 and words[0] == "cpus":
                out["vcpus"] = int(words[1])
            elif len(words) == 3 and words[0] == "MemTotal:":
                out["memory_mib"] = int(words[1]) // 1024
            elif len(words) >= 2 and words[0] == "param":
                out["tunables"][words[1]] = " ".join(words[2:])
    return out


def wrap(path, facts, extra):
    meta, records = load(path)
    meta.update(guest_facts(facts))
    # The host is shared: its load when the run ended says how far to trust the figures.
    meta.update(commit=git_commit(), host_cpu=host_cpu(),
                host_loadavg=" ".join(f"{x:.2f}" for x in os.getloadavg()),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    for kv in extra:
        k, sep, v = kv.partition("=")
        if not sep:
            sys.exit(f"benchfile: want KEY=VALUE, not {kv}")
        meta[k] = v
    save(path, meta, records)


def save(path, meta, records):
    with open(path, "w") as f:
        f.write('{"metadata": ' + json.dumps(meta, sort_keys=True) + ',\n "records": [')
        # One record a line, as nicoff-bench writes them: diffs stay readable.
        f.write(",".join("\n  " + json.dumps(r) for r in records))
        f.write("\n]}\n")


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "wrap":
        sys.exit("usage: benchfile.py wrap RESULTS.json GUEST_FACTS [KEY=VALUE ...]")
    wrap(sys.argv[2], sys.argv[3], sys.argv[4:])


if __name__ == "__main__":
    main()
