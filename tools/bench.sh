#!/usr/bin/env bash
# `make bench SUITE=name`: run `nicoff-bench name` in the VM, bring its
# records back to build/results/name.json, print them as a table and plot
# them where a plot helps.  Extra nicoff-bench options: BENCH_ARGS; module
# parameters: VM_PARAMS; guest CPUs: VM_SMP (default 2); the results' name
# in build/results: BENCH_NAME (default the suite's: name.json, .png, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: bench.sh SUITE}
name=${BENCH_NAME:-$suite}
BUILD=${BUILD:-$PWD/build}
out=$BUILD/results
mkdir -p "$out"
# Without slab debugging (the tests' default): it would slow every allocation
# of the data path and make the figures the debugger's.
vm_args=(--module "$PWD/nicoff.ko" --lib-path "$BUILD/lib" --quiet --slub-debug off
	 --timeout "${BENCH_TIMEOUT:-3000}" --log "$out/$name.vm.log")
[ -n "${VMLINUZ:-}" ] && vm_args+=(--kernel "$VMLINUZ")
[ -n "${VM_PARAMS:-}" ] && vm_args+=(--params "$VM_PARAMS")
[ -n "${VM_SMP:-}" ] && vm_args+=(--smp "$VM_SMP")
for b in "$BUILD"/bin/*; do vm_args+=(--bin "$b"); done
run="nicoff-bench $suite --json /tmp/$suite.json ${BENCH_ARGS:-}"
if [ "$suite" = mpi ]; then
	# MPI programs under MPICH's mpiexec: libnicoff/mpi/bench/mpi-bench.sh.
	vm_args+=(--mpi --file "$PWD/libnicoff/mpi/bench/mpi-bench.sh:/bin/mpi-bench.sh")
	run="sh /bin/mpi-bench.sh /tmp/$suite.json $BUILD/lib/libnicoff-mpi-mpich.so ${BENCH_ARGS:-}"
	# and under Open MPI's mpirun in the same boot, where it was built.
	if [ -x "$BUILD/bin/nicoff-mpi-bench-openmpi" ]; then
		vm_args+=(--openmpi)
		run+=" --openmpi-lib $BUILD/lib/libnicoff-mpi-openmpi.so"
	fi
fi
if [ "$suite" = armci ]; then
	# ARMCI programs under MPICH's mpiexec, each ARMCI built (the bench
	# programs are in build/bin already; the GA program beside the tests):
	# libnicoff/armci/bench/armci-bench.sh.
	vm_args+=(--mpi --file "$PWD/libnicoff/armci/bench/armci-bench.sh:/bin/armci-bench.sh")
	for b in "$BUILD"/armci-tests/ga_matmul-*; do
		if [ -x "$b" ]; then vm_args+=(--bin "$b"); fi
	done
	run="sh /bin/armci-bench.sh /tmp/$suite.json ${BENCH_ARGS:-}"
fi
# What the records were measured on, read in the guest just before the suite
# runs (tools/benchfile.py adds the host's side).
# shellcheck disable=SC2016 # expanded by the guest's shell
facts='echo kernel $(uname -r); echo cpus $(grep -c ^processor /proc/cpuinfo);
	grep MemTotal /proc/meminfo;
	for p in /sys/module/nicoff/parameters/*; do echo param ${p##*/} $(cat $p 2>/dev/null); done'
tools/vm/run.sh "${vm_args[@]}" \
	--cmd "{ $facts; } > /tmp/$suite.facts" --collect "/tmp/$suite.facts:$out/$name.facts" \
	--cmd "$run" \
	--collect "/tmp/$suite.json:$out/$name.json"
/usr/bin/python3 tools/benchfile.py wrap "$out/$name.json" "$out/$name.facts" \
	"suite=$suite" "bench_args=${BENCH_ARGS:-}" "vm_params=${VM_PARAMS:-}"
/usr/bin/python3 tools/results.py "$out/$name.json" --plot "$out/$name.png"
