#!/bin/sh
# The `armci` benchmark, run in the VM guest by `make bench SUITE=armci`
# (tools/bench.sh): for each ARMCI built (method armci-mpi: Debian's
# ARMCI-MPI on MPICH, the control; method nicoff: libarmci-nicoff),
#   nicoff-armci-bench-METHOD  PutS and GetS latency and bandwidth of square
#                              patches of doubles, 2 ranks
#   ga_matmul-METHOD           the GA program's time (its own "seconds": from
#                              the arrays' creation to its last check), the
#                              fastest of --ga-runs runs, as case=ga
# libarmci-nicoff runs once per strided method of --strided (default auto,
# the library's default; NICOFF_ARMCI_STRIDED): method nicoff with auto,
# nicoff-nic, nicoff-naive, nicoff-hbna with the others.  A method whose programs are not in /bin is
# left out (said on stderr).  Writes the records as one JSON list to OUT.
# POSIX sh (busybox).
#
# Usage: armci-bench.sh OUT [--sides S,S,...] [--seconds S] [--iters N]
#        [--ga-n N] [--ga-ranks N] [--ga-runs N] [--strided M,M,...]
set -u
out=${1:?usage: armci-bench.sh OUT [options]}
shift
sides=1,2,4,8,16,32,64,128,256,512,1024
secs=2
iters=1000
ga_n=256
ga_ranks=2
ga_runs=3
strided=auto
while [ $# -gt 0 ]; do
	case $1 in
	--sides) sides=$2 ;;
	--seconds) secs=$2 ;;
	--iters) iters=$2 ;;
	--ga-n) ga_n=$2 ;;
	--ga-ranks) ga_ranks=$2 ;;
	--ga-runs) ga_runs=$2 ;;
	--strided) strided=$2 ;;
	*) echo "armci-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done

lines=/tmp/armci-bench.jsonl
: >"$lines"
fails=0
# The runs: ARMCI build and record method; the nicoff build once per --strided.
runs=armci-mpi:armci-mpi
for sm in $(echo "$strided" | tr ',' ' '); do
	case $sm in
	auto) runs="$runs nicoff:nicoff" ;;
	nic | naive | hbna) runs="$runs nicoff:nicoff-$sm" ;;
	*) echo "armci-bench.sh: --strided: unknown method $sm" >&2; exit 2 ;;
	esac
done
for run in $runs; do
	b=${run%%:*} m=${run#*:}
	sm=${m#nicoff-}
	[ "$m" = "$sm" ] && sm=auto
	if [ ! -x "/bin/nicoff-armci-bench-$b" ]; then
		echo "armci-bench.sh: no nicoff-armci-bench-$b: method $m left out" >&2
		continue
	fi
	# The ranks take the method from the environment mpiexec hands them.
	export NICOFF_ARMCI_STRIDED="$sm"
	if ! timeout 1200 mpiexec -n 2 "nicoff-armci-bench-$b" --method "$m" --sides "$sides" \
		--seconds "$secs" --iters "$iters" --out "$lines"; then
		echo "armci-bench.sh: nicoff-armci-bench-$b ($m) failed" >&2
		fails=$((fails + 1))
	fi
	[ -x "/bin/ga_matmul-$b" ] || continue
	best=""
	i=0
	while [ "$i" -lt "$ga_runs" ]; do
		i=$((i + 1))
		if ! timeout 1200 mpiexec -n "$ga_ranks" "ga_matmul-$b" "$ga_n" >/tmp/ga.out 2>&1; then
			cat /tmp/ga.out >&2
			echo "armci-bench.sh: ga_matmul-$b ($m) failed" >&2
			fails=$((fails + 1))
			continue
		fi
		cat /tmp/ga.out
		s=$(sed -n 's/^ga_matmul: .* seconds \([0-9.]*\)$/\1/p' /tmp/ga.out)
		[ -n "$s" ] || continue
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$s
		fi
	done
	[ -n "$best" ] || continue
	printf '{"suite":"armci","case":"ga","method":"%s","nodes":%d,"side":%d,"bytes":null,"metric":"seconds","value":%s,"unit":"s","runs":%d}\n' \
		"$m" "$ga_ranks" "$ga_n" "$best" "$ga_runs" >>"$lines"
done

{ echo "["; sed '$!s/$/,/' "$lines"; echo "]"; } >"$out"
[ "$fails" -eq 0 ]
