#!/usr/bin/env bash
# `make bench-compare SUITE=name BASE=rev`: the same nicoff-bench suite for
# two builds in one VM boot -- this tree's and BASE's (a commit, built apart
# in build/compare/<hash>) -- in alternating rounds (ROUNDS, default 3), so
# that both see the same machine; prints each record per build with its
# ratio to the best (medians over the rounds).  Extra nicoff-bench options:
# BENCH_ARGS; module parameters: VM_PARAMS.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: bench-compare.sh SUITE BASE}
base=${2:?usage: bench-compare.sh SUITE BASE}
rounds=${ROUNDS:-3}
BUILD=${BUILD:-$PWD/build}
out=$BUILD/results
hash=$(git rev-parse --verify "$base^{commit}")
src=$BUILD/compare/$hash
mkdir -p "$out"

# BASE's tree, built once per commit against the same kernel headers.
if [ ! -f "$src/.built" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	git archive "$hash" | tar -x -C "$src"
	make -C "$src" -j"$(nproc)" module user BUILD="$src/build" ${KDIR:+KDIR=$KDIR} >"$src.log" 2>&1 ||
		{ tail -n 30 "$src.log"; echo "bench-compare: building $base failed (log: $src.log)"; exit 1; }
	touch "$src/.built"
fi

vm_args=(--lib-path "$BUILD/lib" --quiet --slub-debug off --timeout "${BENCH_TIMEOUT:-3000}"
	 --log "$out/$suite.compare.vm.log"
	 --file "$PWD/nicoff.ko:/cmp/new/nicoff.ko" --file "$src/nicoff.ko:/cmp/base/nicoff.ko"
	 --deps-of "$PWD/nicoff.ko" --deps-of "$src/nicoff.ko"
	 --file "$src/build/lib:/cmp/base/lib" --file "$src/build/bin:/cmp/base/bin")
[ -n "${VMLINUZ:-}" ] && vm_args+=(--kernel "$VMLINUZ")
for b in "$BUILD"/bin/*; do vm_args+=(--bin "$b"); done
compare=()
for i in $(seq 1 "$rounds"); do
	for b in base new; do
		if [ $b = base ]; then
			run="LD_LIBRARY_PATH=/cmp/base/lib /cmp/base/bin/nicoff-bench"
		else
			run=nicoff-bench
		fi
		vm_args+=(--cmd "insmod /cmp/$b/nicoff.ko ${VM_PARAMS:-} && chmod 666 /dev/nicoff* &&
$run $suite --json /tmp/$b.$i.json ${BENCH_ARGS:-} && rmmod nicoff"
			  --collect "/tmp/$b.$i.json:$out/$suite.$b.$i.json")
		compare+=(--compare "$b=$out/$suite.$b.$i.json")
	done
done
tools/vm/run.sh "${vm_args[@]}"
echo "=== $suite: base = $base ($hash), new = this tree; medians of $rounds rounds"
/usr/bin/python3 tools/results.py "${compare[@]}"
