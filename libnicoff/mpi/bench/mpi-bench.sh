#!/bin/sh
# The `mpi` benchmark, run in the VM guest by `make bench SUITE=mpi`
# (tools/bench.sh): nicoff-mpi-bench's barrier and broadcast latency at each
# rank count, four ways in one boot:
#   mpich          MPICH's own collectives, as installed
#   mpich-tuned    MPICH in the best of a few settings for more ranks than
#                  CPUs (each tried, the fastest kept; its settings in the
#                  record's "config")
#   nicoff-pmpi    the same program with libnicoff-mpi preloaded
#   nicoff-native  nicoff's own C API (nicoff-mpi-bench --native)
# Writes the records as one JSON list to OUT.  POSIX sh (busybox).
#
# Usage: mpi-bench.sh OUT LIB [--ranks 2,3,4,8] [--seconds S] [--sizes B,B,...]
#        [--iters N]
set -u
out=${1:?usage: mpi-bench.sh OUT LIB [options]}
lib=${2:?usage: mpi-bench.sh OUT LIB [options]}
shift 2
ranks="2 3 4 8"
secs=3
sizes=8,1024,16384,65536,1048576
iters=2000
while [ $# -gt 0 ]; do
	case $1 in
	--ranks) ranks=$(echo "$2" | tr , " ") ;;
	--seconds) secs=$2 ;;
	--sizes) sizes=$2 ;;
	--iters) iters=$2 ;;
	*) echo "mpi-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ -f "$lib" ] || { echo "mpi-bench.sh: $lib: no such file" >&2; exit 2; }

lines=/tmp/mpi-bench.jsonl
: >"$lines"
fails=0

# MPICH 4.0.2's ch4 spins while it waits and never yields the CPU (see
# tools/vm/README.md), which costs a scheduler tick per step once ranks
# outnumber CPUs.  These are the settings that bear on it: the yield
# control, progress of this communicator only, and a barrier of fewer
# steps.
tuned_1="-genv MPIR_CVAR_POLLS_BEFORE_YIELD 1 -genv MPIR_CVAR_CH4_GLOBAL_PROGRESS 0"
tuned_2="$tuned_1 -genv MPIR_CVAR_BARRIER_INTRA_ALGORITHM dissemination"

# run FILE CASE N METHOD CONFIG [mpiexec options...] -- [nicoff-mpi-bench options...]
# appends the records to FILE.
run() {
	file=$1 c=$2 n=$3 m=$4 cfg=$5
	shift 5
	pre=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		pre="$pre $1"
		shift
	done
	[ $# -gt 0 ] && shift
	# shellcheck disable=SC2086 # the options are words
	if ! timeout 600 mpiexec -n "$n" $pre nicoff-mpi-bench --case "$c" --method "$m" \
		--config "$cfg" --iters "$iters" --warmup 10 --seconds "$secs" --sizes "$sizes" \
		--out "$file" "$@"; then
		echo "mpi-bench.sh: $c $m -n $n failed" >&2
		fails=$((fails + 1))
	fi
}

# The sum of the latencies in a records file (one record per line).
total() { sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }

for n in $ranks; do
	for c in barrier bcast; do
		run "$lines" "$c" "$n" mpich default --
		# mpich-tuned: each setting, the faster kept.
		: >/tmp/tuned1
		run /tmp/tuned1 "$c" "$n" mpich-tuned "$tuned_1" $tuned_1 --
		if [ "$c" = barrier ]; then
			: >/tmp/tuned2
			run /tmp/tuned2 "$c" "$n" mpich-tuned "$tuned_2" $tuned_2 --
			if [ -s /tmp/tuned2 ] && awk -v a="$(total /tmp/tuned1)" -v b="$(total /tmp/tuned2)" \
				'BEGIN { exit !(b < a) }'; then
				cp /tmp/tuned2 /tmp/tuned1
			fi
		fi
		cat /tmp/tuned1 >>"$lines"
		run "$lines" "$c" "$n" nicoff-pmpi default -genv LD_PRELOAD "$lib" --
		run "$lines" "$c" "$n" nicoff-native default -- --native
	done
done

{ echo "["; sed '$!s/$/,/' "$lines"; echo "]"; } >"$out"
[ "$fails" -eq 0 ]
