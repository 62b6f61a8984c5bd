#!/usr/bin/env bash
# tools/armci-tests.sh - the ARMCI test programs and the Global Arrays
# program of libnicoff/armci/tests under MPICH's mpiexec in ONE VM boot
# (tools/vm/run.sh --mpi, nicoff.ko loaded).
#
# Every program runs under `mpiexec -n N` for every N of ARMCI_TESTS_RANKS
# (default "2 3 4 8") in each build present: NAME-armci-mpi (Debian's
# ARMCI-MPI, the control) and NAME-nicoff (libarmci-nicoff); without the
# -nicoff builds their runs are reported as skipped, never as passed.  Then
# the fault pass: the -nicoff builds again at ARMCI_TESTS_FAULT_RANKS
# (default: the same counts) with 1% of the packets dropped and 1% reordered
# (the module's fault_drop_ppm and fault_reorder_ppm, 10000 each); every run
# must pass and the GA program's checksum must equal the fault-free one at
# that rank count, which must equal ARMCI-MPI's.  These passes leave
# NICOFF_ARMCI_STRIDED unset: the library's default strided method, auto.
# Then one run checks that auto's model is measured once per job (rank 0
# alone writes its cache file).  Then the method pass: the -nicoff builds of the programs that move
# strided data (armci_strided, armci_nb, ga_matmul) with
# NICOFF_ARMCI_STRIDED set to each of ARMCI_TESTS_METHODS (default "nic
# naive hbna"; "" for none) at ARMCI_TESTS_METHOD_RANKS (default: the first
# of ARMCI_TESTS_RANKS), the GA checksum again equal to the default's.  Then the bounce
# pass: armci_strided, armci_vector, armci_nb and ga_matmul at the same ranks with
# NICOFF_ARMCI_BOUNCE=0 (every foreign local buffer registered per call) and 4096 (the
# small through the bounce buffer, the rest registered).  Then armci_calls with
# ARMCI_TEST_BAD_LOCAL (puts from an unmapped buffer, gets into a read-only one:
# each call must fail, the job go on), bounce buffer on and off.  After every run the
# module's pinned pages (/sys/class/nicoff/pinned_pages) must be back where
# they were.  Prints one TAP line per run and exits 0 only if every run and
# the VM run passed.
#
# Usage: tools/armci-tests.sh [-- run.sh options...]
# Environment: BUILD (default <top>/build), MODULE (default <top>/nicoff.ko),
# KERNEL (guest kernel), ARMCI_TESTS_RANKS, ARMCI_TESTS_FAULT_RANKS ("" for
# no fault pass), ARMCI_TESTS_METHODS, ARMCI_TESTS_METHOD_RANKS,
# ARMCI_TESTS_SEED (default 1), ARMCI_TESTS_TIMEOUT (seconds for one
# mpiexec, default 300).  In the guest busybox sh runs it as
# `armci-tests.sh --guest DIR` (that part is POSIX sh; the host part, after
# it, bash).
set -euo pipefail

# --- guest -------------------------------------------------------------------

progs="armci_strided armci_vector armci_rmw armci_nb armci_mutex armci_calls ga_matmul"

# Arguments of each program for N ranks: MPICH busy-polls (tools/vm/README.md),
# so the work shrinks as ranks outnumber the 2 vCPUs; every dimension count
# of armci_strided (1 to 7) still runs at every N.
prog_args() {
	prog=$1 n=$2 seed=${ARMCI_TESTS_SEED:-1}
	case $prog in
	armci_strided) if [ "$n" -le 2 ]; then echo "21 $seed"; elif [ "$n" -le 4 ]; then echo "14 $seed"; else echo "7 $seed"; fi ;;
	armci_vector) if [ "$n" -le 2 ]; then echo "12 $seed"; elif [ "$n" -le 4 ]; then echo "6 $seed"; else echo "3 $seed"; fi ;;
	armci_rmw) if [ "$n" -le 2 ]; then echo 200; elif [ "$n" -le 4 ]; then echo 60; else echo 16; fi ;;
	armci_nb) if [ "$n" -le 2 ]; then echo "9 $seed"; elif [ "$n" -le 4 ]; then echo "6 $seed"; else echo "3 $seed"; fi ;;
	armci_mutex) if [ "$n" -le 2 ]; then echo 60; elif [ "$n" -le 4 ]; then echo 24; else echo 8; fi ;;
	armci_calls) if [ "$n" -le 2 ]; then echo "12 $seed"; elif [ "$n" -le 4 ]; then echo "8 $seed"; else echo "4 $seed"; fi ;;
	ga_matmul) echo "64 $seed" ;;
	esac
}

now() { cut -d' ' -f1 /proc/uptime; }
pinned() { cat /sys/class/nicoff/pinned_pages 2>/dev/null || echo -1; }

faults() {
	for p in fault_drop_ppm fault_reorder_ppm; do
		echo "$1" >"/sys/module/nicoff/parameters/$p" || return 1
	done
}

# run_one LABEL N PROG FILE: one mpiexec; sets status ("" when it passed)
# and sum (the GA program's checksum, if it printed one).
run_one() {
	label=$1 n=$2 prog=$3 bin=$4
	pre=$(pinned)
	t0=$(now)
	rc=0
	# shellcheck disable=SC2046 # the arguments are words
	timeout "$tmo" mpiexec -n "$n" "$bin" $(prog_args "$prog" "$n") >/tmp/armci.out 2>&1 || rc=$?
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	sed 's/^/# /' /tmp/armci.out | grep -v '^# *$' | tail -n 8
	# busybox's timeout ends with the child's SIGTERM status, coreutils' with 124.
	case $rc in
	0) status="" ;;
	124 | 143) status="timed out after $tmo s" ;;
	*) status="mpiexec exited $rc" ;;
	esac
	if [ "$rc" -eq 0 ] && ! grep -q ': ok: \|^ga_matmul: .* checksum ' /tmp/armci.out; then
		status="no success line from rank 0"
	fi
	sum=$(sed -n 's/^ga_matmul: .* checksum \([^ ]*\) .*/\1/p' /tmp/armci.out)
	# The module releases a dead process's pages as it reaps it: up to 5 s.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ "$(pinned)" = "$pre" ] && break
		sleep 0.5
	done
	[ "$(pinned)" = "$pre" ] || status="${status:+$status; }pinned pages $pre before, $(pinned) after"
	out="$label -n $n (exit $rc, $secs s)"
}

report() {
	t=$((t + 1))
	if [ -z "$status" ]; then
		echo "ok $t - $out"
	else
		echo "not ok $t - $out: $status"
		fails=$((fails + 1))
	fi
}

# nicoff_pass LABEL RANKS PROGS HOW BASE: the -nicoff builds of PROGS at
# each of RANKS; the GA program's checksum must equal the one of the first
# pass at that rank count (HOW and BASE name the two in a failure).
nicoff_pass() {
	# Names of their own: POSIX sh has no local variables, and run_one sets label.
	pass_label=$1 pass_ranks=$2 pass_progs=$3 how=$4 base=$5
	for n in $pass_ranks; do
		for prog in $pass_progs; do
			bin=$dir/$prog-nicoff
			if [ ! -x "$bin" ]; then
				t=$((t + 1))
				echo "ok $t - $pass_label nicoff $prog -n $n # SKIP $prog-nicoff not built"
				continue
			fi
			run_one "$pass_label nicoff $prog" "$n" "$prog" "$bin"
			if [ "$prog" = ga_matmul ] && [ -z "$status" ]; then
				want=$(eval "echo \${sum_nicoff_$n:-}")
				[ "$sum" = "$want" ] || status="checksum $sum $how, ${want:-none} $base"
			fi
			report
		done
	done
}

guest() {
	dir=$1 tmo=${ARMCI_TESTS_TIMEOUT:-300} t=0 fails=0
	ranks=${ARMCI_TESTS_RANKS:-2 3 4 8}
	fault_ranks=${ARMCI_TESTS_FAULT_RANKS-$ranks}
	echo "TAP version 13"
	for build in armci-mpi nicoff; do
		for n in $ranks; do
			for prog in $progs; do
				bin=$dir/$prog-$build
				if [ ! -x "$bin" ]; then
					t=$((t + 1))
					echo "ok $t - $build $prog -n $n # SKIP $prog-$build not built"
					continue
				fi
				echo "# $build: mpiexec -n $n $prog $(prog_args "$prog" "$n")"
				run_one "$build $prog" "$n" "$prog" "$bin"
				if [ "$prog" = ga_matmul ] && [ -z "$status" ]; then
					eval "sum_${build%-mpi}_$n=\$sum"
					if [ "$build" = nicoff ]; then
						want=$(eval "echo \${sum_armci_$n:-}")
						[ -z "$want" ] || [ "$sum" = "$want" ] ||
							status="checksum $sum, ARMCI-MPI's $want"
					fi
				fi
				report
			done
		done
	done
	if [ -n "$fault_ranks" ]; then
		echo "# fault pass: fault_drop_ppm=10000 fault_reorder_ppm=10000"
		faults 10000 || { echo "not ok - cannot set the fault tunables"; fails=$((fails + 1)); }
		nicoff_pass faults "$fault_ranks" "$progs" "under faults" without
		faults 0 || true
	fi
	# auto's model is one per job: only rank 0 (card 0) measures and caches
	# it; rank 1 (card 1, nics >= 2) takes rank 0's and writes no file.
	if [ -x "$dir/armci_rmw-nicoff" ]; then
		cache=/tmp/armci-model.$$
		rm -rf "$cache"
		# mpiexec hands its environment to the ranks.
		export XDG_CACHE_HOME="$cache" NICOFF_STRIDED_CALIBRATE=1
		run_one "auto model once per job" 2 armci_rmw "$dir/armci_rmw-nicoff"
		unset XDG_CACHE_HOME NICOFF_STRIDED_CALIBRATE
		if [ -z "$status" ]; then
			if [ ! -s "$cache/nicoff/strided-card0" ]; then
				status="rank 0 left no model in $cache/nicoff/strided-card0"
			elif [ -e "$cache/nicoff/strided-card1" ]; then
				status="rank 1 measured too ($cache/nicoff/strided-card1)"
			fi
		fi
		rm -rf "$cache"
		report
	fi
	methods=${ARMCI_TESTS_METHODS-nic naive hbna}
	method_ranks=${ARMCI_TESTS_METHOD_RANKS:-${ranks%% *}}
	for m in $methods; do
		echo "# method pass: NICOFF_ARMCI_STRIDED=$m"
		# mpiexec hands its environment to the ranks.
		export NICOFF_ARMCI_STRIDED="$m"
		nicoff_pass "$m" "$method_ranks" "armci_strided armci_nb ga_matmul" "with $m" "with the default (auto)"
		unset NICOFF_ARMCI_STRIDED
	done
	# Local buffers outside the library's memory: with no bounce buffer all
	# are registered per call; with a 4 KiB one the small go through it and
	# the rest fall back to registration, in the same request streams.
	for b in 0 4096; do
		echo "# bounce pass: NICOFF_ARMCI_BOUNCE=$b"
		export NICOFF_ARMCI_BOUNCE="$b"
		nicoff_pass "bounce=$b" "$method_ranks" "armci_strided armci_vector armci_nb ga_matmul" \
			"with NICOFF_ARMCI_BOUNCE=$b" "with the default"
		unset NICOFF_ARMCI_BOUNCE
	done
	# Local buffers the process cannot read or write: an error from the call
	# (through the bounce buffer, and registered), and the job goes on.
	if [ -x "$dir/armci_calls-nicoff" ]; then
		for b in 1048576 0; do
			export ARMCI_TEST_BAD_LOCAL=1 NICOFF_ARMCI_BOUNCE="$b"
			run_one "bad local buffers, bounce=$b" 2 armci_calls "$dir/armci_calls-nicoff"
			unset ARMCI_TEST_BAD_LOCAL NICOFF_ARMCI_BOUNCE
			report
		done
	fi
	echo "1..$t"
	echo "# armci-tests: $fails failed"
	[ "$fails" -eq 0 ]
}

case ${1:-} in
--guest) shift; guest "$@"; exit ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
-- | "") ;;
*) echo "armci-tests.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac

# --- host --------------------------------------------------------------------

[ "${1:-}" != -- ] || shift
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$top/build}
module=${MODULE:-$top/nicoff.ko}
[[ -f $module ]] || { echo "armci-tests.sh: $module missing: make module" >&2; exit 2; }
dir=$build/armci-tests
args=(--mpi --module "$module" --timeout "${ARMCI_TESTS_VM_TIMEOUT:-3000}")
[[ -n ${KERNEL:-} ]] && args+=(--kernel "$KERNEL")
found=0
for p in $progs; do
	for b in armci-mpi nicoff; do
		[[ -x $dir/$p-$b ]] || continue
		args+=(--bin "$dir/$p-$b")
		found=$((found + 1))
	done
done
((found)) || { echo "armci-tests.sh: nothing built in $dir: make armci-tests-build" >&2; exit 2; }
# libarmci-nicoff and libnicoff, for the -nicoff builds.
[[ -d $build/lib ]] && args+=(--lib-path "$build/lib")
args+=(--file "$top/tools/armci-tests.sh:/bin/armci-tests.sh")
envs=""
for v in ARMCI_TESTS_RANKS ARMCI_TESTS_FAULT_RANKS ARMCI_TESTS_METHOD_RANKS ARMCI_TESTS_SEED \
	ARMCI_TESTS_TIMEOUT; do
	[[ -n ${!v+set} ]] || continue
	[[ ${!v} =~ ^[0-9\ ]*$ ]] || { echo "armci-tests.sh: $v: numbers only" >&2; exit 2; }
	envs+="$v='${!v}' "
done
if [[ -n ${ARMCI_TESTS_METHODS+set} ]]; then
	[[ $ARMCI_TESTS_METHODS =~ ^[a-z\ ]*$ ]] ||
		{ echo "armci-tests.sh: ARMCI_TESTS_METHODS: method names only" >&2; exit 2; }
	envs+="ARMCI_TESTS_METHODS='$ARMCI_TESTS_METHODS' "
fi
exec "$top/tools/vm/run.sh" "${args[@]}" "$@" \
	--cmd "${envs}sh /bin/armci-tests.sh --guest /bin"
