#!/usr/bin/env bash
# Scale runs of nicoff-sim: each workload at each node count, one record
# file in the bench format (build/results/sim.json), printed as a table.
#   firmware-sim/sim/scale.sh [nicoff-sim options...]
#   NODES="4096 65536 1048576" WORKLOADS="ring dissemination" ITERS=10
# A million nodes need about 2.4 GiB (ring) and 16 GiB (dissemination).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-$PWD/build}
sim=$BUILD/bin/nicoff-sim
out=${OUT:-$BUILD/results/sim.json}
nodes=${NODES:-"4096 65536 1048576"}
workloads=${WORKLOADS:-"ring dissemination"}
iters=${ITERS:-10}
[ -x "$sim" ] || { echo "no $sim: run make first" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in $workloads; do
	for n in $nodes; do
		echo "== $w on $n nodes" >&2
		"$sim" --nodes "$n" --workload "$w" --iters "$iters" --quiet \
			--json "$tmp/$w-$n.json" "$@"
	done
done
python3 - "$out" "$tmp"/*.json <<'EOF'
import json
import sys

records = []
for path in sys.argv[2:]:
    with open(path) as f:
        records += json.load(f)
with open(sys.argv[1], "w") as f:
    json.dump(records, f, indent=1)
EOF
python3 tools/results.py "$out"
