#!/usr/bin/env bash
# selftests/run-in-vm.sh - run the nicoff kernel selftests in ONE VM boot.
#
# Installs the kselftest tree (`make -C selftests install`: the kernel's
# run_kselftest.sh, the tests, their settings file) into $BUILD/kselftest,
# boots the VM of tools/vm/run.sh with nicoff.ko loaded and that tree in
# /kselftest, runs every test of SELFTEST_NAMES in selftests/tests.mk through
# run_kselftest.sh (one guest command each, --keep-going), lets the guest
# unload the module and check its kernel log, then prints a summary of the
# TAP lines.  The tests of SELFTEST_NAMES_NODEBUG (what they measure, kernel
# memory and card-thread latency, slab debugging would distort) run in a
# second boot without slub_debug.  Exits 0 only if every test passed and
# both VM runs passed (module unloaded, clean kernel log).
#
# Usage: selftests/run-in-vm.sh [--only NAME]... [--repeat N] [--timeout S]
#                               [-- run.sh options...]
#   --only NAME   run only this test (nicoff_ring_test or ring); repeatable
#   --repeat N    run the whole list N times in the same boot (default 1)
#   --timeout S   VM timeout in seconds (default 1800)
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
# A bound against a hung guest, not a speed check: the first boot runs every
# test, the 1,024-card barriers last, and took over 900 s under TCG on a
# quiet 2-core host on 2026-11-29 (6.12: 675 s before the strided tests).
timeout=1800
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
# The installed kselftest tree, as `make -C selftests run_tests` uses it.
ksft=$build/kselftest
make -s -C "$top/selftests" BUILD="$build" install INSTALL_PATH="$ksft" >/dev/null ||
	{ echo "run-in-vm.sh: make -C selftests install failed" >&2; exit 2; }
args+=(--file "$ksft:/kselftest")
# The runner's per-test timeout needs coreutils' timeout (busybox's has no
# --foreground) at the path runner.sh looks for it.
args+=(--file /usr/bin/timeout:/usr/bin/timeout)
# --bin copies the shared libraries ldd lists for each test (--file copies
# only the files); the copy in /bin is not run.
for n in "${names[@]}" "${names1k[@]}" "${names_nd[@]}"; do
	args+=(--bin "$ksft/nicoff/$n")
done
# nicoff_ctl_test runs the tool as a user does, from the guest's /bin.
if [[ " ${names[*]} " == *" nicoff_ctl_test "* ]]; then
	[[ -x $build/bin/nicoffctl ]] || { echo "run-in-vm.sh: $build/bin/nicoffctl missing: make" >&2; exit 2; }
	args+=(--bin "$build/bin/nicoffctl")
fi
# Each test runs through a small guest wrapper (copied in with --file, so
# the console never echoes the kernel-log patterns the harness looks for):
# run_kselftest.sh -t nicoff:NAME, poll_usecs put back whatever the test did
# to it, and once the kernel has oopsed the remaining tests are not run
# (every test would only wait for its timeout).  run_kselftest.sh exits 0
# whatever the tests did: the verdict is its TAP, read below.
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/nicoff-selftests.XXXXXX")
trap 'rm -rf "$tmpdir"' EXIT
wrap=$tmpdir/nicoff-selftest
cat >"$wrap" <<'WRAP'
#!/bin/sh
# nicoff-selftest NAME: run one selftest in the guest with the kselftest runner.
n=$1
oops='B''UG:|Oo''ps|general pro''tection|Kernel pa''nic'
if dmesg | grep -qE "$oops"; then
	echo "=== selftest $n: not run, the kernel has oopsed"
	exit 1
fi
p=/sys/module/nicoff/parameters/poll_usecs
o=$(cat $p)
/kselftest/run_kselftest.sh -t "nicoff:$n"
echo "$o" >$p
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
# The runner's timeout (settings: 900 s) is per test binary, but the 1k
# test has two cases with a TEST_F_TIMEOUT(900) each: it runs last, so the
# guest's settings file can give it both limits and a minute to set up.
for n in "${names1k[@]}"; do
	cmds+=(--cmd "sed -i 's/^timeout=.*/timeout=1860/' /kselftest/nicoff/settings && \
rmmod nicoff && insmod $ko nics=1024 && nicoff-selftest $n; rc=\$?; \
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

# Summary from the console logs.  run_kselftest.sh prints one TAP line per
# test binary ("ok N selftests: nicoff: NAME", "not ok ... # exit=RC" or
# "# TIMEOUT S seconds") and nests each binary's own TAP, one line per
# TEST() case, under "# ".
clean=$(cat "$log" "$log_nd" 2>/dev/null | tr -d '\r' || true)
pass=$(grep -acE '^# ok [0-9]+ ' <<<"$clean" || true)
skip=$(grep -acE '^# ok [0-9]+ .*# SKIP' <<<"$clean" || true)
# A binary that crashed or timed out has no failed case of its own: count it.
fail=$(grep -acE '^(# )?not ok [0-9]+ ' <<<"$clean" || true)
echo "=== selftests: $pass ok ($skip skipped), $fail not ok, VM run ${elapsed} s"
grep -aE '^(# )?not ok [0-9]+ |^=== selftest .*: not run' <<<"$clean" | sed 's/^/  /' || true
# Every binary must have reported, and passed (a skipped binary did not run).
ran=$(grep -aE '^ok [0-9]+ selftests: nicoff: ' <<<"$clean" | grep -acv '# SKIP' || true)
if ((fail || ran != (${#names[@]} + ${#names_nd[@]}) * repeat + ${#names1k[@]})); then
	vm_rc=1
fi
if ((vm_rc)); then
	echo "=== selftests: FAIL"
	exit 1
fi
echo "=== selftests: PASS"
