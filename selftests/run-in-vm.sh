#!/usr/bin/env bash
# selftests/run-in-vm.sh - run the nicoff kernel selftests in ONE VM boot.
#
# Boots the VM of tools/vm/run.sh with nicoff.ko loaded, runs every selftest
# binary of SELFTEST_NAMES in selftests/tests.mk (one guest command each,
# --keep-going, build them first with `make selftests`), lets the guest unload the
# module and check its kernel log, then prints a summary of the TAP lines.
# The tests of SELFTEST_NAMES_NODEBUG (what they measure, kernel memory and
# card-thread latency, slab debugging would distort) run in a second boot
# without slub_debug.  Exits 0 only if every test passed and both VM runs
# passed (module unloaded, clean kernel log).
#
# Usage: selftests/run-in-vm.sh [--only NAME]... [--repeat N] [--timeout S]
#                               [-- run.sh options...]
#   --only NAME   run only this binary (nicoff_ring_test or ring); repeatable
#   --repeat N    run the whole list N times in the same boot (default 1)
#   --timeout S   VM timeout in seconds (default 900)
#   after --      passed to tools/vm/run.sh (e.g. --params "nics=4", --smp 2)
# Environment: BUILD (default <top>/build), MODULE (default <top>/nicoff.ko),
# KERNEL (guest kernel, default: tools/vm/run.sh's choice); NICOFF_FUZZ_SEED,
# NICOFF_FUZZ_SECS and NICOFF_FUZZ_WORKERS are passed on to the guest's
# tests (nicoff_fuzz_test).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$top/build}
module=${MODULE:-$top/nicoff.ko}
# A list of selftests/tests.mk (NAME := a b \ c ...), one word a line.
build_list() {
	awk -v n="$1" '$1 == n && $2 == ":=" { on = 1; sub(/^[^=]*:=/, "") }
		on { more = sub(/\\$/, ""); print; if (!more) exit }' "$top/selftests/tests.mk" |
		tr -s ' \t' '\n' | sed '/^$/d'
}
# The test list is SELFTEST_NAMES of selftests/tests.mk, in its order.
mapfile -t names < <(build_list SELFTEST_NAMES)
((${#names[@]})) || { echo "run-in-vm.sh: no SELFTEST_NAMES in selftests/tests.mk" >&2; exit 2; }
# SELFTEST_NAMES_1K run last, after the module is reloaded with nics=1024
# (and then reloaded as it was, without the parameters of --params).
mapfile -t names1k < <(build_list SELFTEST_NAMES_1K)
# SELFTEST_NAMES_NODEBUG run in a second boot, without slub_debug.
mapfile -t names_nd < <(build_list SELFTEST_NAMES_NODEBUG)
only=()
repeat=1
timeout=900
extra=()

while (($#)); do
	case $1 in
	--only) only+=("$2"); shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-in-vm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "run-in-vm.sh: bad --repeat" >&2; exit 2; }

if ((${#only[@]})); then
	sel=()
	sel1k=()
	selnd=()
	for o in "${only[@]}"; do
		o=${o#nicoff_}
		o=nicoff_${o%_test}_test
		if [[ " ${names1k[*]} " == *" $o "* ]]; then
			sel1k+=("$o")
		elif [[ " ${names_nd[*]} " == *" $o "* ]]; then
			selnd+=("$o")
		elif [[ " ${names[*]} " == *" $o "* ]]; then
			sel+=("$o")
		else
			echo "run-in-vm.sh: no test $o" >&2; exit 2
		fi
	done
	names=("${sel[@]}")
	names1k=("${sel1k[@]}")
	names_nd=("${selnd[@]}")
fi

[[ -f $module ]] || { echo "run-in-vm.sh: $module missing: make module" >&2; exit 2; }
args=(--module "$module" --keep-going --timeout "$timeout")
# `make check VMLINUZ=...` passes the kernel as VMLINUZ.
KERNEL=${KERNEL:-${VMLINUZ:-}}
if [[ -n ${KERNEL:-} ]]; then
	args+=(--kernel "$KERNEL")
fi
for n in "${names[@]}" "${names1k[@]}" "${names_nd[@]}"; do
	b=$build/selftests/$n
	[[ -x $b ]] || { echo "run-in-vm.sh: $b missing: make selftests" >&2; exit 2; }
	args+=(--bin "$b")
done
# nicoff_ctl_test runs the tool as a user does, from the guest's /bin.
if [[ " ${names[*]} " == *" nicoff_ctl_test "* ]]; then
	[[ -x $build/bin/nicoffctl ]] || { echo "run-in-vm.sh: $build/bin/nicoffctl missing: make" >&2; exit 2; }
	args+=(--bin "$build/bin/nicoffctl")
fi
# Each binary runs through a small guest wrapper (copied in with --file, so
# the console never echoes the kernel-log patterns the harness looks for):
# a hard time limit on top of the harness's per-test ones, poll_usecs put
# back whatever the test did to it, and once the kernel has oopsed the
# remaining binaries are not run (every test would only wait for its
# timeout).
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/nicoff-selftests.XXXXXX")
trap 'rm -rf "$tmpdir"' EXIT
wrap=$tmpdir/nicoff-selftest
cat >"$wrap" <<'WRAP'
#!/bin/sh
# nicoff-selftest NAME: run one selftest binary in the guest.
n=$1
oops='B''UG:|Oo''ps|general pro''tection|Kernel pa''nic'
if dmesg | grep -qE "$oops"; then
	echo "=== selftest $n: not run, the kernel has oopsed"
	exit 1
fi
p=/sys/module/nicoff/parameters/poll_usecs
o=$(cat $p)
timeout -s KILL 600 "$n"
rc=$?
echo "$o" >$p
echo "=== selftest $n: exit $rc"
exit $rc
WRAP
chmod 755 "$wrap"
args+=(--file "$wrap:/bin/nicoff-selftest")
# The fuzz test's knobs, from the host's environment (numbers only).
envs=""
for v in NICOFF_FUZZ_SEED NICOFF_FUZZ_SECS NICOFF_FUZZ_WORKERS; do
	[[ -n ${!v:-} ]] || continue
	[[ ${!v} =~ ^(0[xX])?[0-9a-fA-F]+$ ]] || { echo "run-in-vm.sh: $v: not a number" >&2; exit 2; }
	envs+="$v=${!v} "
done
# The guest commands running the tests named "$@", --repeat times.
test_cmds() {
	local r n
	for ((r = 1; r <= repeat; r++)); do
		for n in "$@"; do
			printf '%s\0' --cmd "${envs}nicoff-selftest $n"
		done
	done
}
mapfile -d '' -t cmds < <(test_cmds "${names[@]}")
ko=/$(basename "$module")
for n in "${names1k[@]}"; do
	cmds+=(--cmd "rmmod nicoff && insmod $ko nics=1024 && nicoff-selftest $n; rc=\$?; \
rmmod nicoff; insmod $ko; exit \$rc")
done
mapfile -d '' -t cmds_nd < <(test_cmds "${names_nd[@]}")

# The console log, for the summary: run.sh's --log if given, else ours; the
# second boot's goes beside it (.nodebug).
log=$tmpdir/console.log
rest=()
for ((i = 0; i < ${#extra[@]}; i++)); do
	case ${extra[i]} in
	--log=*) log=${extra[i]#--log=} ;;
	--log) log=${extra[i + 1]:-$log}; i=$((i + 1)) ;;
	*) rest+=("${extra[i]}") ;;
	esac
done
log_nd=$log.nodebug
rm -f "$log_nd"

start=$SECONDS
vm_rc=0
if ((${#cmds[@]})); then
	"$top/tools/vm/run.sh" "${args[@]}" "${cmds[@]}" --log "$log" "${rest[@]}" || vm_rc=$?
else
	: >"$log"
fi
if ((${#cmds_nd[@]})); then
	"$top/tools/vm/run.sh" "${args[@]}" "${cmds_nd[@]}" --slub-debug off --log "$log_nd" \
		"${rest[@]}" || vm_rc=$?
fi
elapsed=$((SECONDS - start))

# Summary from the console logs (TAP of the kselftest harness).
clean=$(cat "$log" "$log_nd" 2>/dev/null | tr -d '\r' || true)
pass=$(grep -acE '^ok [0-9]+ ' <<<"$clean" || true)
skip=$(grep -acE '^ok [0-9]+ .*# SKIP' <<<"$clean" || true)
fail=$(grep -acE '^not ok [0-9]+ ' <<<"$clean" || true)
echo "=== selftests: $pass ok ($skip skipped), $fail not ok, VM run ${elapsed} s"
grep -aE '^not ok [0-9]+ |^=== selftest .*: (exit [1-9]|not run)' <<<"$clean" | sed 's/^/  /' || true
# Every binary must have reported, and passed.
ran=$(grep -acE '^=== selftest .*: exit 0$' <<<"$clean" || true)
if ((fail || ran != (${#names[@]} + ${#names_nd[@]}) * repeat + ${#names1k[@]})); then
	vm_rc=1
fi
if ((vm_rc)); then
	echo "=== selftests: FAIL"
	exit 1
fi
echo "=== selftests: PASS"
