#!/bin/sh
# The `mpi` benchmark, run in the VM guest by `make bench SUITE=mpi`
# (tools/bench.sh): nicoff-mpi-bench's barrier and broadcast latency at each
# rank count, four ways in one boot:
#   mpich          MPICH's own collectives, as installed
#   mpich-tuned    MPICH in the best of a few settings for more ranks than
#                  CPUs (each tried, the fastest kept; its settings in the
#                  record's "config")
#   nicoff-pmpi    the same program with libnicoff-mpi preloaded
#   nicoff-native  nicoff's own C API, timed in the same processes as
#                  nicoff-pmpi in alternating blocks (nicoff-mpi-bench
#                  --paired): apart, two runs differ by the scheduling of
#                  the moment by more than the layer costs.  Even paired,
#                  one launch's placement moves the pair's ratio by up to
#                  20% either way, so the pair runs --paired-runs times
#                  (default 3) and the run whose nicoff-pmpi/nicoff-native
#                  ratio is the median (the lower of the two middle ones
#                  for an even count) is recorded, each size apart, with
#                  "paired_runs" in its records
# and with --openmpi-lib (run.sh --openmpi, nicoff-mpi-bench-openmpi) two more:
#   openmpi              Open MPI's own collectives under mpirun, in the
#                        faster of its default and mpi_yield_when_idle=1
#                        (the record's "config" says which)
#   openmpi-nicoff-pmpi  the same with libnicoff-mpi-openmpi.so preloaded,
#                        in the setting the openmpi method kept
# Writes the records as one JSON list to OUT.  POSIX sh (busybox).
#
# Usage: mpi-bench.sh OUT LIB [--ranks 2,3,4,8[,64]] [--seconds S] [--sizes B,B,...]
#        [--iters N] [--paired-runs R] [--openmpi-lib OMPI_LIB]
set -u
out=${1:?usage: mpi-bench.sh OUT LIB [options]}
lib=${2:?usage: mpi-bench.sh OUT LIB [options]}
shift 2
ranks="2 3 4 8"
secs=3
sizes=8,1024,16384,65536,1048576
iters=2000
pruns=3
olib=""
while [ $# -gt 0 ]; do
	case $1 in
	--ranks) ranks=$(echo "$2" | tr , " ") ;;
	--seconds) secs=$2 ;;
	--sizes) sizes=$2 ;;
	--iters) iters=$2 ;;
	--paired-runs) pruns=$2 ;;
	--openmpi-lib) olib=$2 ;;
	*) echo "mpi-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ -f "$lib" ] || { echo "mpi-bench.sh: $lib: no such file" >&2; exit 2; }
[ -z "$olib" ] || [ -f "$olib" ] || { echo "mpi-bench.sh: $olib: no such file" >&2; exit 2; }
case $pruns in
'' | *[!0-9]* | 0) echo "mpi-bench.sh: --paired-runs must be a positive integer" >&2; exit 2 ;;
esac

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

# Open MPI oversubscribed waits the same way unless told to yield the CPU
# in its progress loop; -x LD_PRELOAD reaches the ranks only, not orted.
ompi_yield="--mca mpi_yield_when_idle 1"

# run FILE CASE N METHOD CONFIG [launcher options...] -- [nicoff-mpi-bench options...]
# appends the records to FILE; the launcher is MPICH's mpiexec, or Open
# MPI's mpirun for the openmpi methods.
run() {
	file=$1 c=$2 n=$3 m=$4 cfg=$5
	shift 5
	launch=mpiexec prog=nicoff-mpi-bench
	case $m in
	openmpi*) launch=mpirun.openmpi prog=nicoff-mpi-bench-openmpi ;;
	esac
	pre=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		pre="$pre $1"
		shift
	done
	[ $# -gt 0 ] && shift
	# shellcheck disable=SC2086 # the options are words
	if ! timeout 600 $launch -n "$n" $pre $prog --case "$c" --method "$m" \
		--config "$cfg" --iters "$iters" --warmup 10 --seconds "$secs" --sizes "$sizes" \
		--out "$file" "$@"; then
		echo "mpi-bench.sh: $c $m -n $n failed" >&2
		fails=$((fails + 1))
	fi
}

# paired CASE N: the nicoff-pmpi/nicoff-native pair, $pruns runs; appends
# to $lines, for each size, the two records of the run whose ratio is the
# median, with "paired_runs".
paired() {
	k=0 files=""
	while [ "$k" -lt "$pruns" ]; do
		: >"/tmp/paired.$k"
		run "/tmp/paired.$k" "$1" "$2" nicoff-pmpi default -genv LD_PRELOAD "$lib" -- \
			--paired nicoff-native
		files="$files /tmp/paired.$k"
		k=$((k + 1))
	done
	# shellcheck disable=SC2086 # the file names are words
	awk -v runs="$pruns" '
	function field(name,   m) {
		if (!match($0, "\"" name "\":[^,}]*"))
			return ""
		m = substr($0, RSTART, RLENGTH)
		sub(/^[^:]*:/, "", m)
		return m
	}
	FNR == 1 { run++ }
	{
		b = field("bytes"); m = field("method")
		if (!(b in seen)) { seen[b] = 1; order[++nb] = b }
		line[b, m, run] = $0
		val[b, m, run] = field("value") + 0
	}
	END {
		for (i = 1; i <= nb; i++) {
			b = order[i]; n = 0
			for (r = 1; r <= run; r++)
				if (((b, "\"nicoff-pmpi\"", r) in val) && ((b, "\"nicoff-native\"", r) in val) &&
				    val[b, "\"nicoff-native\"", r] > 0) {
					ratio[++n] = val[b, "\"nicoff-pmpi\"", r] / val[b, "\"nicoff-native\"", r]
					who[n] = r
				}
			if (!n)
				continue
			for (x = 1; x <= n; x++)	# a few runs: insertion sort
				for (y = x; y > 1 && ratio[y] < ratio[y - 1]; y--) {
					t = ratio[y]; ratio[y] = ratio[y - 1]; ratio[y - 1] = t
					t = who[y]; who[y] = who[y - 1]; who[y - 1] = t
				}
			r = who[int((n + 1) / 2)]
			for (j = 0; j < 2; j++) {
				l = line[b, j ? "\"nicoff-native\"" : "\"nicoff-pmpi\"", r]
				sub(/}$/, ",\"paired_runs\":" runs "}", l)
				print l
			}
		}
	}' $files >>"$lines"
}

# The sum of the latencies in a records file (one record per line).
total() { sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }
# Whether the records in file $2 took less time in all than those in $1.
faster() { [ -s "$2" ] && awk -v a="$(total "$1")" -v b="$(total "$2")" 'BEGIN { exit !(b < a) }'; }

for n in $ranks; do
	for c in barrier bcast; do
		# Above 8 ranks (64 runs in the VM's 1 GiB) the barrier alone, and
		# MPICH only: oversubscribed 32-fold, one MPICH barrier takes
		# seconds, and a broadcast suite would take an hour.
		[ "$c" = bcast ] && [ "$n" -gt 8 ] && continue
		run "$lines" "$c" "$n" mpich default --
		# mpich-tuned: each setting, the faster kept.
		: >/tmp/tuned1
		run /tmp/tuned1 "$c" "$n" mpich-tuned "$tuned_1" $tuned_1 --
		if [ "$c" = barrier ]; then
			: >/tmp/tuned2
			run /tmp/tuned2 "$c" "$n" mpich-tuned "$tuned_2" $tuned_2 --
			faster /tmp/tuned1 /tmp/tuned2 && cp /tmp/tuned2 /tmp/tuned1
		fi
		cat /tmp/tuned1 >>"$lines"
		paired "$c" "$n"
		[ -n "$olib" ] && [ "$n" -le 8 ] || continue
		: >/tmp/ompi1
		: >/tmp/ompi2
		run /tmp/ompi1 "$c" "$n" openmpi default --
		run /tmp/ompi2 "$c" "$n" openmpi "$ompi_yield" $ompi_yield --
		ocfg=default oopts=""
		if faster /tmp/ompi1 /tmp/ompi2; then
			cp /tmp/ompi2 /tmp/ompi1
			ocfg=$ompi_yield oopts=$ompi_yield
		fi
		cat /tmp/ompi1 >>"$lines"
		run "$lines" "$c" "$n" openmpi-nicoff-pmpi "$ocfg" $oopts -x "LD_PRELOAD=$olib" --
	done
done

{ echo "["; sed '$!s/$/,/' "$lines"; echo "]"; } >"$out"
[ "$fails" -eq 0 ]
